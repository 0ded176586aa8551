"""The conditional accumulator resources and the kernels of their ops.

An accumulator collects gradients that are *fresh* — computed at a local step
no older than its own global step — and hands out their mean (or sum). State:
a counter of accepted gradients, the accumulator's global step, and the
running sum (TF's ``ConditionalAccumulatorBase``,
``tensorflow/core/kernels/conditional_accumulator_base.cc``).

``take_grad`` waits as an attempt (`minitf.ops.data_flow.blocking`) until at least
``num_required`` gradients were accepted; an ``apply_grad`` lets waiting
attempts move once it is done, so that a waiting take is served as soon as it
can be.

The dense accumulator adds gradients *outside* its lock, so that workers'
``apply_grad`` runs add in parallel (numpy releases the GIL while it adds
large arrays). An apply has three parts:

1. under the lock, exactly TF's bookkeeping: the staleness check, the shape
   checks, ``counter += 1``, and a *partial sum* to add into — one nobody is
   adding to, a new one while there are fewer than `MAX_PARTIAL_SUMS`, or else
   the least busy one (its own lock then makes the apply wait its turn);
2. without the accumulator's lock: the add (``np.add(partial, grad,
   out=partial)``, or a copy for the partial's first gradient);
3. under the lock: the add is done; a waiting take may now finish.

A take that finds enough gradients takes them at once, as in TF (the global
step goes up, the counter goes back to 0, later gradients start a new sum),
but it only completes when the adds of the gradients it counted have
finished: it never sees half a gradient. It then adds the partial sums
together, outside the lock. A lone producer only ever uses one partial sum,
so its sum is the sequential one, bit for bit; with several partial sums the
order of the float additions differs from a sequential sum, so the rounding
can differ — as in TF, whose order of adds depends on which thread gets the
lock first. The sparse accumulator (`minitf.ops.data_flow.sparse_conditional_accumulator_kernels`)
adds its rows under the lock.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

import numpy as np

from minitf.framework import dtypes, errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data_flow.blocking import (
    NO_PROGRESS,
    PROGRESS,
    Attempt,
    BlockingResource,
    RunResult,
    private_resource_name,
)
from minitf.ops.resource_kernels import resource_kernel

logger = logging.getLogger("minitf")

TAKE = 0
MAX_STALENESS = "_max_staleness"
"""An accumulator op's internal attr: the staleness bound (`AccumulatorBase.is_fresh`)."""
CANCELS_IN_FLIGHT = "_cancels_in_flight"
"""An accumulator op's internal attr: a take cancels in-flight work (simulated clusters)."""
HISTORY_LENGTH = 100_000
"""How many pushes and takes an accumulator remembers (`AccumulatorBase.history`)."""


MAX_PARTIAL_SUMS = 4
"""How many partial sums a dense accumulator keeps at most.

Enough that several producers (up to 4) each add into their own, even on a
machine with fewer cores: an apply that finds every partial sum busy sleeps
on one's lock, and waking it up and giving it back the interpreter lock
costs more than the extra add the take then does. (A cap of one per core
was slower on 2 cores: 4 producers, `benchmarks/dataflow.py`.)
"""


def shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


class AccumulatorBase(BlockingResource):
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
        self.dropped = 0  # stale gradients dropped, ever (a stepper shows the drops)
        # minitf's synchronisation policies (minitf.cluster.policies) set these
        # through the op's internal attrs; TF's accumulator is the default:
        # stale gradients dropped, nothing cancelled.
        self.max_staleness = 0  # how many steps old a gradient may be; -1: any age
        self.cancels_in_flight = False  # a take cancels the work still computing (simulated)

    def record(self, event: tuple) -> None:
        """Appends to `history` (lock held); counts a push that was not accepted as dropped."""
        self.history.append(event)
        self.events += 1
        if event[0] == "push" and not event[4]:
            self.dropped += 1

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

    def take_ready(self, attempt: Attempt) -> bool:
        """Whether the take ``attempt`` would complete now (lock held)."""
        return self.counter >= attempt.state

    def run_take(self, attempt: Attempt) -> RunResult:
        """Completes a take once enough gradients are in (lock held)."""
        if self.counter < attempt.state:
            return NO_PROGRESS
        result = self.aggregate()
        self._advance()
        return attempt.complete(result)

    def _advance(self) -> None:
        """What every take does (lock held): a new global step, a new count."""
        self.record(("take", self.global_step + 1, self.counter))
        self.counter = 0
        self.global_step += 1

    def aggregate(self):
        """The taken value (lock held); resets the sum."""
        raise NotImplementedError


class _PartialSum:
    """One running sum of some of the gradients of a step; one apply adds at a time."""

    __slots__ = ("lock", "total", "users")

    def __init__(self):
        self.lock = threading.Lock()
        self.total: np.ndarray | None = None  # None until its first gradient is copied in
        self.users = 0  # applies that chose it and have not finished (accumulator lock)


class _Sum:
    """The gradients accepted since the last take, as partial sums.

    Attributes:
        shape: The shape of its gradients (the first one's).
        dtype: Their numpy dtype.
        partials: The partial sums, in the order they were made.
        in_flight: Gradients counted but still being added (accumulator lock).
        count: How many gradients it holds, once taken.
        mean: Whether the take divides by ``count``.
    """

    __slots__ = ("shape", "dtype", "partials", "in_flight", "count", "mean")

    def __init__(self, shape: tuple, dtype: np.dtype):
        self.shape = shape
        self.dtype = dtype
        self.partials: list[_PartialSum] = []
        self.in_flight = 0
        self.count = 0
        self.mean = False

    def choose_partial(self, limit: int) -> _PartialSum:
        """The partial sum an apply adds into (accumulator lock held).

        The first idle one, so that one producer at a time always uses the
        first; else a new one while fewer than ``limit``; else the least busy.
        """
        chosen = None
        for partial in self.partials:
            if partial.users == 0:
                chosen = partial
                break
            if chosen is None or partial.users < chosen.users:
                chosen = partial
        if (chosen is None or chosen.users) and len(self.partials) < limit:
            chosen = _PartialSum()
            self.partials.append(chosen)
        chosen.users += 1
        return chosen

    def value(self) -> np.ndarray:
        """The taken gradient: the partial sums added in order (no lock; nobody adds anymore)."""
        totals = [p.total for p in self.partials if p.total is not None]  # None: its add failed
        if not totals:
            return np.zeros(self.shape, self.dtype)
        total = totals[0]
        for other in totals[1:]:
            np.add(total, other, out=total)
        if self.mean and self.count:
            np.divide(total, total.dtype.type(self.count), out=total, casting="unsafe")
        self.partials = []
        return total


class ConditionalAccumulator(AccumulatorBase):
    """The dense accumulator resource.

    An apply is `start_apply` (the bookkeeping, under the lock), `add` (without
    the lock) and `finish_apply`; see the module's docstring for why, and for
    how this changes the rounding of a sum of gradients applied concurrently.

    Args:
        name: The resource's name (its shared name, or a private one).
        dtype: The gradients' dtype.
        shape: The declared shape: a list with None for unknown dims, or None.
        reduction_type: ``"MEAN"`` or ``"SUM"``.
    """

    def __init__(self, name: str, dtype: dtypes.DType, shape, reduction_type: str):
        super().__init__(name, dtype, shape, reduction_type)
        self._np_dtype = np.dtype(dtype.as_numpy_dtype)
        self._sum: _Sum | None = None  # None when nothing was accepted since the last take
        self.max_partial_sums = MAX_PARTIAL_SUMS

    def start_apply(self, local_step: int, shape: tuple) -> tuple[_Sum, _PartialSum] | None:
        """Accepts a gradient of ``shape`` (lock held): checks, counts, chooses where it goes.

        Args:
            local_step: The step the gradient was computed at.
            shape: The gradient's shape.

        Returns:
            None for a stale gradient (dropped silently, as in TF); else what
            `add` and `finish_apply` take. The gradient already counts.

        Raises:
            InvalidArgumentError: if the shape differs from the first gradient's
                since the last take, or does not fit the declared shape.
        """
        if not self.is_fresh(local_step):
            return None
        total = self._sum
        if total is None:
            if self.shape is not None and not _fits(shape, self.shape):
                expected = "[" + ",".join("?" if d is None else str(d) for d in self.shape) + "]"
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch: expected {expected}, got {shape_str(shape)}"
                )
            total = self._sum = _Sum(shape, self._np_dtype)
        elif shape != total.shape:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Shape mismatch: expected {shape_str(total.shape)}, got {shape_str(shape)}",
            )
        total.in_flight += 1
        self.counter += 1
        return total, total.choose_partial(self.max_partial_sums)

    def convert(self, grad) -> tuple[np.ndarray, bool]:
        """The gradient as an array of the accumulator's dtype, and whether it may be kept.

        The graph fixes the gradient's dtype to the accumulator's (TF checks it
        when the op is built); a kernel upstream that gave float64 must not
        fail the add.

        Args:
            grad: The gradient the apply received.

        Returns:
            ``(value, owned)``: ``owned`` is True when the conversion made a new
            array, which nobody else holds.
        """
        if type(grad) is np.ndarray and grad.dtype is self._np_dtype:
            return grad, False  # the common case: what a session feeds or a kernel gives
        value = np.asarray(grad, dtype=self._np_dtype)
        return value, value is not grad and value.base is None

    def add(self, held: tuple[_Sum, _PartialSum], value: np.ndarray, owned: bool) -> None:
        """Adds a gradient accepted by `start_apply` into its partial sum (no accumulator lock).

        A partial sum's first gradient is copied, unless ``owned``: the caller's
        array is never kept.

        Args:
            held: What `start_apply` returned.
            value: The gradient, from `convert`.
            owned: Whether ``value`` may be kept as it is.
        """
        partial = held[1]
        with partial.lock:
            if partial.total is None:
                partial.total = value if owned else value.copy()
            else:
                np.add(partial.total, value, out=partial.total)

    def finish_apply(self, held: tuple[_Sum, _PartialSum], added: bool = True) -> None:
        """Ends an apply (lock held); call `flush_locked` next.

        Args:
            held: What `start_apply` returned.
            added: False if `add` failed (out of memory): the gradient stops counting.
        """
        total, partial = held
        total.in_flight -= 1
        partial.users -= 1
        if not added:
            if total is self._sum:
                self.counter -= 1
            else:
                total.count -= 1

    def take_ready(self, attempt: Attempt) -> bool:
        """Whether the take ``attempt`` would complete now (lock held)."""
        taken = attempt.state
        if isinstance(taken, _Sum):
            return taken.in_flight == 0
        return self.counter >= taken

    def run_take(self, attempt: Attempt) -> RunResult:
        """Takes the gradients once enough are in; completes once they are added (lock held).

        The take happens as soon as ``counter >= num_required``, as in TF; its
        result (a `_Sum`, added up by the take kernel outside the lock) is
        delivered once the adds it counted are done.
        """
        taken = attempt.state
        if isinstance(taken, _Sum):
            return NO_PROGRESS if taken.in_flight else attempt.complete(taken)
        if self.counter < taken:
            return NO_PROGRESS
        taken, self._sum = self._sum, None
        taken.count, taken.mean = self.counter, self.reduction_type == "MEAN"
        self._advance()
        if taken.in_flight:
            attempt.state = taken
            return PROGRESS
        return attempt.complete(taken)


def _fits(shape: tuple, declared: list) -> bool:
    return len(shape) == len(declared) and all(d is None or d == s for d, s in zip(declared, shape))


def _declared(op) -> list | None:
    shape = op.get_attr("shape")
    return None if shape.ndims is None else shape.as_list()


def resource_builder(resource_cls):
    def builder(op):
        dtype = op.get_attr("dtype")
        shape = _declared(op)
        reduction = op.get_attr("reduction_type")
        container = op.get_attr("container")
        name = op.get_attr("shared_name") or private_resource_name(op)
        attrs = set(op._attr_names())
        max_staleness = op.get_attr(MAX_STALENESS) if MAX_STALENESS in attrs else 0
        cancels = op.get_attr(CANCELS_IN_FLIGHT) if CANCELS_IN_FLIGHT in attrs else False

        def create():
            acc = resource_cls(name, dtype, shape, reduction)
            acc.max_staleness, acc.cancels_in_flight = int(max_staleness), bool(cancels)
            return acc

        return resource_kernel(
            container, name, create, lambda acc: acc.check_compatible(dtype, shape, reduction)
        )

    return builder


register_kernel("ResourceConditionalAccumulator", stateful=True)(
    resource_builder(ConditionalAccumulator)
)


def scalar_step(op, local_step) -> int:
    shape = getattr(local_step, "shape", None)  # a numpy scalar or array; np.ndim is slower
    if (np.shape(local_step) if shape is None else shape) != ():
        raise errors.InvalidArgumentError(
            op.node_def, op, f"Argument local_step must be scalar, but had bad shape "
            f"{shape_str(np.shape(local_step))}"
        )  # fmt: skip
    return int(local_step)


def apply_gradient(op, ctx, acc, step: int, apply) -> None:
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
        step = scalar_step(op, local_step)
        value, owned = acc.convert(gradient)
        traced = ctx.trace is not None
        with acc.lock:
            at = acc.global_step
            held = acc.start_apply(step, value.shape)
            acc.record(("push", ctx.client, step, at, held is not None))
            if traced:  # the count right after the push, before a waiting take moves
                noted = {**acc.state_locked(), "local_step": step, "stale": held is None}
        if traced:
            ctx.note(op.name, "accumulated", noted)
        if held is None:
            return
        added = False
        try:
            acc.add(held, value, owned)
            added = True
        finally:
            with acc.lock:
                acc.finish_apply(held, added)
                finished = acc.flush_locked()
            if finished:  # a take it let finish
                acc.finish(finished)

    return compute


def _added_up(done):
    """``done`` for a take: a dense take's partial sums are added up first, without the lock."""

    def deliver(result):
        done(result.value() if isinstance(result, _Sum) else result)

    return deliver


def take_builder(op):
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
            TAKE, ctx, _added_up(done), acc.run_take, "TakeGrad operation was cancelled", n,
            ready=acc.take_ready,
        )  # fmt: skip

    return compute


register_kernel("ResourceAccumulatorTakeGradient", is_async=True, stateful=True)(take_builder)


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
