"""The conditional accumulator resources and the kernels of their ops.

An accumulator collects gradients that are *fresh* — computed at a local step
no older than its own global step — and hands out their mean (or sum). State:
a counter of accepted gradients, the accumulator's global step, and the
running sum (TF's ``ConditionalAccumulatorBase``,
``tensorflow/core/kernels/conditional_accumulator_base.cc``).

``take_grad`` waits as an attempt (`minitf.ops.blocking`) until at least
``num_required`` gradients were accepted; ``apply_grad`` goes through the
resource's ``mutate`` so that a waiting take is served as soon as it can be.
The sum is kept in a buffer the accumulator owns and updated in place.
"""

from __future__ import annotations

import logging
from collections import deque

import numpy as np

from minitf.framework import dtypes, errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.blocking import NO_PROGRESS, Attempt, BlockingResource, private_resource_name

logger = logging.getLogger("minitf")

TAKE = 0
MAX_STALENESS = "_max_staleness"
"""An accumulator op's internal attr: the staleness bound (`_AccumulatorBase.is_fresh`)."""
CANCELS_IN_FLIGHT = "_cancels_in_flight"
"""An accumulator op's internal attr: a take cancels in-flight work (simulated clusters)."""
HISTORY_LENGTH = 100_000
"""How many pushes and takes an accumulator remembers (`_AccumulatorBase.history`)."""


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


class _AccumulatorBase(BlockingResource):
    """What dense and sparse accumulators share: the counter, the step, the takes."""

    def __init__(self, name: str, dtype: dtypes.DType, shape, reduction_type: str):
        super().__init__(directions=1)
        self.name = name
        self.dtype = dtype
        self.shape = shape  # a list with None for unknown dims, or None for unknown rank
        self.reduction_type = reduction_type
        self.counter = 0
        self.global_step = 0
        # What happened, in order, for whoever wants to know who contributed to
        # which update (minitf.cluster.sync_record): ("push", client task,
        # local step, accumulator step, accepted), ("take", new step, gradients
        # averaged), ("set_step", step). `events` counts every entry ever made.
        self.history: deque = deque(maxlen=HISTORY_LENGTH)
        self.events = 0
        # minitf's synchronisation policies (minitf.cluster.policies) set these
        # through the op's internal attrs; TF's accumulator is the default:
        # stale gradients dropped, nothing cancelled.
        self.max_staleness = 0  # how many steps old a gradient may be; -1: any age
        self.cancels_in_flight = False  # a take cancels the work still computing (simulated)

    def record(self, event: tuple) -> None:
        """Appends to `history` (lock held)."""
        self.history.append(event)
        self.events += 1

    def check_compatible(self, dtype, shape, reduction_type) -> None:
        """Raises TF's error if a second creator asks for another accumulator under this name."""
        if dtype != self.dtype or shape != self.shape or reduction_type != self.reduction_type:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Shared accumulator '{self.name}' has dtype {self.dtype.name} and shape "
                f"{self.shape} but dtype {dtype.name} and shape {shape} were requested",
            )

    def is_fresh(self, local_step: int) -> bool:
        """TF's staleness rule: a gradient counts iff ``local_step >= global_step``.

        With a staleness bound ``s`` (a policy's), iff ``local_step >= global_step - s``;
        with ``-1``, always.
        """
        bound = self.max_staleness
        return bound < 0 or local_step >= self.global_step - bound

    def set_global_step(self, step: int) -> None:
        """Sets the global step (lock held); going down only logs a warning, as in TF."""
        if step < self.global_step:
            logger.warning(
                "Attempt to set current_global_step_ to smaller value: accumulator %s, "
                "current_global_step_ %d, new_global_step %d",
                self.name,
                self.global_step,
                step,
            )
        self.global_step = step
        self.record(("set_step", step))

    def state_locked(self) -> dict:
        """What a trace shows of an accumulator: its gradients so far and its step."""
        return {"kind": "accumulator", "name": self.name, "count": self.counter,
                "global_step": self.global_step}  # fmt: skip

    def run_take(self, attempt: Attempt):
        """Completes a take once enough gradients are in (lock held)."""
        if self.counter < attempt.state:
            return NO_PROGRESS
        result = self.aggregate()
        self.record(("take", self.global_step + 1, self.counter))
        self.counter = 0
        self.global_step += 1
        return attempt.complete(result)

    def aggregate(self):
        raise NotImplementedError


class ConditionalAccumulator(_AccumulatorBase):
    """The dense accumulator resource."""

    def __init__(self, name, dtype, shape, reduction_type):
        super().__init__(name, dtype, shape, reduction_type)
        self._sum: np.ndarray | None = None

    def apply(self, local_step: int, grad: np.ndarray) -> None:
        """Adds a fresh gradient (lock held); drops a stale one silently."""
        if not self.is_fresh(local_step):
            return
        # The graph fixes the gradient's dtype to the accumulator's (TF checks it when
        # the op is built); a kernel upstream that gave float64 must not fail the add.
        grad = np.asarray(grad, dtype=self.dtype.as_numpy_dtype)
        if self.counter > 0:
            if grad.shape != self._sum.shape:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Shape mismatch: expected {_shape_str(self._sum.shape)}, got "
                    f"{_shape_str(grad.shape)}",
                )
            np.add(self._sum, grad, out=self._sum)
        else:
            if self.shape is not None and not _fits(grad.shape, self.shape):
                expected = "[" + ",".join("?" if d is None else str(d) for d in self.shape) + "]"
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch: expected {expected}, got {_shape_str(grad.shape)}"
                )
            self._sum = np.array(grad, dtype=self.dtype.as_numpy_dtype, copy=True)
        self.counter += 1

    def aggregate(self) -> np.ndarray:
        total, self._sum = self._sum, None
        if self.reduction_type == "MEAN":
            np.divide(total, total.dtype.type(self.counter), out=total, casting="unsafe")
        return total


class SparseConditionalAccumulator(_AccumulatorBase):
    """The sparse accumulator resource: rows by index, with a contributor count per row."""

    def __init__(self, name, dtype, shape, reduction_type):
        super().__init__(name, dtype, shape, reduction_type)
        self._rows: dict[int, np.ndarray] = {}
        self._counts: dict[int, int] = {}
        self._row_shape: tuple | None = None

    def apply(self, local_step, indices, values, grad_shape, has_known_shape) -> None:
        """Adds a fresh sparse gradient (lock held); drops a stale one silently."""
        if not self.is_fresh(local_step):
            return
        self._validate(indices, values, grad_shape, has_known_shape)
        for index, row in zip(indices.tolist(), values):
            if index in self._rows:
                np.add(self._rows[index], row, out=self._rows[index])
                self._counts[index] += 1
            else:
                self._rows[index] = np.array(row, dtype=self.dtype.as_numpy_dtype, copy=True)
                self._counts[index] = 1
        if self.counter == 0:
            self._row_shape = tuple(values.shape[1:])
        self.counter += 1

    def _validate(self, indices, values, grad_shape, has_known_shape) -> None:
        def fail(message):
            raise errors.InvalidArgumentError(None, None, message)

        if indices.ndim != 1:
            fail(f"Input indices should be vector but received shape: {_shape_str(indices.shape)}")
        if values.ndim < 1:
            fail("Values cannot be 0-dimensional.")
        if values.shape[0] != indices.shape[0]:
            fail(f"Expected {indices.shape[0]} non-empty input values, got {values.shape[0]}")
        declared = self.shape
        if has_known_shape and declared is not None:
            if len(grad_shape) < len(declared):
                fail(f"Shape mismatch: expected shape rank at least {len(declared)}, got "
                     f"{len(grad_shape)}")  # fmt: skip
            for i, d in enumerate(declared):
                if d is not None and d != grad_shape[i]:
                    fail(f"Shape mismatch: expected shape dim {i} to be {d}, got {grad_shape[i]}")
        if declared and declared[0] is not None:
            for i, index in enumerate(indices.tolist()):
                if index >= declared[0]:
                    fail(f"Shape mismatch: index of slice {i} exceeded limits of shape; index is "
                         f"{index} exceeded {declared[0]}")  # fmt: skip
        if self.counter == 0:
            if declared is not None:
                if values.ndim < len(declared):
                    fail(f"Shape mismatch: expected values rank at least {len(declared)}, got "
                         f"{values.ndim}")  # fmt: skip
                for i in range(1, len(declared)):
                    if declared[i] is not None and declared[i] != values.shape[i]:
                        fail(f"Shape mismatch: expected values dim {i} to be {declared[i]}, got "
                             f"{values.shape[i]}")  # fmt: skip
        else:
            if values.ndim != len(self._row_shape) + 1:
                fail(f"Shape mismatch: expected values rank {len(self._row_shape) + 1}, got "
                     f"{values.ndim}")  # fmt: skip
            for i, d in enumerate(self._row_shape, start=1):
                if values.shape[i] != d:
                    fail(f"Shape mismatch: expected values dim {i} to be {d}, got "
                         f"{values.shape[i]}")  # fmt: skip

    def aggregate(self):
        order = sorted(self._rows)
        np_type = self.dtype.as_numpy_dtype
        if order:
            values = np.stack([self._rows[i] for i in order]).astype(np_type, copy=False)
        else:
            values = np.zeros((0,) + (self._row_shape or ()), dtype=np_type)
        if self.reduction_type == "MEAN" and order:
            counts = np.array([self._counts[i] for i in order], dtype=np_type)
            values = values / counts.reshape((-1,) + (1,) * (values.ndim - 1))
        indices = np.array(order, dtype=np.int64)
        dim0 = -1
        if self.shape is not None and len(self.shape) >= 1:
            dim0 = -1 if self.shape[0] is None else self.shape[0]
        shape = np.array([dim0] + list(values.shape[1:]), dtype=np.int64)
        self._rows, self._counts = {}, {}
        return indices, values.astype(np_type, copy=False), shape


def _fits(shape: tuple, declared: list) -> bool:
    return len(shape) == len(declared) and all(d is None or d == s for d, s in zip(declared, shape))


def _declared(op) -> list | None:
    shape = op.get_attr("shape")
    return None if shape.ndims is None else shape.as_list()


def _resource_builder(resource_cls):
    def builder(op):
        dtype = op.get_attr("dtype")
        shape = _declared(op)
        reduction = op.get_attr("reduction_type")
        container = op.get_attr("container")
        name = op.get_attr("shared_name") or private_resource_name(op)
        attrs = set(op._attr_names())
        max_staleness = op.get_attr(MAX_STALENESS) if MAX_STALENESS in attrs else 0
        cancels = op.get_attr(CANCELS_IN_FLIGHT) if CANCELS_IN_FLIGHT in attrs else False
        checked: set[int] = set()

        def create():
            acc = resource_cls(name, dtype, shape, reduction)
            acc.max_staleness, acc.cancels_in_flight = int(max_staleness), bool(cancels)
            return acc

        def compute(ctx):
            acc = ctx.resource_mgr.lookup_or_create(container, name, create)
            if id(acc) not in checked:
                acc.check_compatible(dtype, shape, reduction)
                checked.add(id(acc))
            return acc

        return compute

    return builder


register_kernel("ResourceConditionalAccumulator", stateful=True)(
    _resource_builder(ConditionalAccumulator)
)
register_kernel("SparseConditionalAccumulator", stateful=True)(
    _resource_builder(SparseConditionalAccumulator)
)


def _scalar_step(op, local_step) -> int:
    if np.ndim(local_step) != 0:
        raise errors.InvalidArgumentError(
            op.node_def, op, f"Argument local_step must be scalar, but had bad shape "
            f"{_shape_str(np.shape(local_step))}"
        )  # fmt: skip
    return int(local_step)


def _apply(op, ctx, acc, step: int, apply) -> None:
    """Runs ``apply()`` on the accumulator and records the push; a trace notes if it counted."""

    traced = ctx.trace is not None

    def apply_and_record():
        fresh, at = acc.is_fresh(step), acc.global_step
        apply()
        acc.record(("push", ctx.client, step, at, fresh))
        if traced:  # the count right after the push, before a waiting take moves
            return {**acc.state_locked(), "local_step": step, "stale": not fresh}
        return None

    noted = acc.mutate(apply_and_record)
    if traced:
        ctx.note(op.name, "accumulated", noted)


@register_kernel("ResourceAccumulatorApplyGradient", stateful=True)
def _apply_kernel(op):
    def compute(ctx, acc, local_step, gradient):
        step = _scalar_step(op, local_step)
        _apply(op, ctx, acc, step, lambda: acc.apply(step, gradient))

    return compute


@register_kernel("SparseAccumulatorApplyGradient", ref_inputs=(0,), stateful=True)
def _sparse_apply_kernel(op):
    has_known_shape = op.get_attr("has_known_shape")

    def compute(ctx, acc, local_step, indices, values, shape):
        step = _scalar_step(op, local_step)
        indices, values = np.asarray(indices), np.asarray(values)
        shape = np.asarray(shape).tolist()
        _apply(op, ctx, acc, step, lambda: acc.apply(step, indices, values, shape,
                                                     has_known_shape))  # fmt: skip

    return compute


def _take_builder(op):
    def compute(ctx, done, acc, num_required):
        n = int(num_required)
        if n <= 0:
            raise errors.InvalidArgumentError(
                op.node_def, op, f"Argument num_required must be positive, but was {n}"
            )
        if ctx.trace is not None:
            with acc.lock:
                ctx.note(op.name, "waited_on", {**acc.state_locked(), "required": n})
        acc.try_attempt(
            TAKE,
            ctx,
            done,
            acc.run_take,
            "TakeGrad operation was cancelled",
            n,
            ready=lambda attempt: acc.counter >= attempt.state,
        )

    return compute


register_kernel("ResourceAccumulatorTakeGradient", is_async=True, stateful=True)(_take_builder)
register_kernel("SparseAccumulatorTakeGradient", ref_inputs=(0,), is_async=True, stateful=True)(
    _take_builder
)


def _num_accumulated(op):
    def compute(ctx, acc):
        with acc.lock:
            return np.int32(acc.counter)

    return compute


def _set_global_step(op):
    def compute(ctx, acc, new_global_step):
        step = int(new_global_step)
        acc.mutate(lambda: acc.set_global_step(step))

    return compute


# The sparse accumulator is an older, reference-typed op (its handle is a
# ``string_ref``), so its ops take the handle as a reference input.
for _prefix, _refs in (("Resource", ()), ("", (0,))):
    register_kernel(f"{_prefix}AccumulatorNumAccumulated", ref_inputs=_refs, stateful=True)(
        _num_accumulated
    )
    register_kernel(f"{_prefix}AccumulatorSetGlobalStep", ref_inputs=_refs, stateful=True)(
        _set_global_step
    )

for _op_type in (
    "ResourceConditionalAccumulator",
    "SparseConditionalAccumulator",
    "ResourceAccumulatorApplyGradient",
    "SparseAccumulatorApplyGradient",
    "ResourceAccumulatorTakeGradient",
    "SparseAccumulatorTakeGradient",
    "ResourceAccumulatorNumAccumulated",
    "AccumulatorNumAccumulated",
    "ResourceAccumulatorSetGlobalStep",
    "AccumulatorSetGlobalStep",
):
    NotDifferentiable(_op_type)
