"""Execution plans: what a session builds once per (fetches, feeds, targets).

Building a plan is the graph work of a step: prune the graph to what the
fetches and targets need, order the remaining ops topologically, give every
tensor an integer *slot*, and bind every op to its kernel. Running a step then
only walks the plan — no name lookups and no graph traversal per run. That is
what makes a Python executor fast, and it is also the data that the renderer
and the stepper show.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import get_kernel_def
from minitf.framework.ops import Operation, Tensor
from minitf.ops.control_flow_kernels import DEAD


@dataclass(frozen=True)
class PlanStep:
    """One op of a plan.

    Attributes:
        op: The graph `Operation`.
        compute: The kernel's compute function.
        in_slots: For each input, the slot holding its value.
        out_slots: For each output, the slot to write.
        is_async: True if the kernel may block (``compute(ctx, done, *inputs)``).
        successors: Indices (into the plan's steps) of the ops waiting on this one.
        num_predecessors: How many steps must finish before this one is ready.
        isolated: True if running the op touches nothing but its own inputs
            and outputs: a stateless, non-blocking kernel that is not a
            ``Switch`` or ``Merge`` and reads no variable (`reads_variable`).
            When it runs, among other ops, does not change any value.
    """

    op: Operation
    compute: Callable
    in_slots: tuple[int, ...]
    out_slots: tuple[int, ...]
    is_async: bool
    successors: tuple[int, ...]
    num_predecessors: int
    isolated: bool = False


@dataclass(frozen=True)
class Plan:
    """A pruned, ordered, slot-allocated graph for one run signature.

    Attributes:
        steps: The ops to run, in a topological order.
        num_slots: How many value slots a run needs.
        feed_slots: The slot of each fed tensor, in the order of ``feeds``.
        fetch_slots: The slot of each fetched tensor, in the order of ``fetches``.
        fetch_reads: For each fetch, whether it reads a variable
            (`reads_variable`): the run returns the variable's value at the
            end of the step.
        constants: ``(slot, value)`` pairs computed when the plan was built:
            ``Const`` ops and pure ops whose inputs are all constant (constant
            folding). They are not in ``steps``.
        folded_ops: The ops whose outputs are in ``constants``.
        has_async: True if any kernel may block; the executor then runs the
            dataflow loop instead of the straight-line walk.
        has_control_flow: True if the plan has a ``Switch`` (``tf.cond``) or a
            ``_Recv`` (which may bring a dead value): the dataflow loop then
            tracks dead values.
        straight: The steps as flat tuples for the straight-line walk:
            ``(compute, in_slots, num_inputs, out_slot, out_slots, op)`` where
            ``out_slot`` is the single output's slot, -1 for several outputs
            (``out_slots``) and -2 for none. ``NoOp`` steps are left out: in
            a walk in topological order they have nothing left to do (their
            control edges only order the dataflow loop).
    """

    steps: tuple[PlanStep, ...]
    num_slots: int
    feed_slots: tuple[int, ...]
    fetch_slots: tuple[int, ...]
    fetch_reads: tuple[bool, ...]
    constants: tuple[tuple[int, object], ...]
    folded_ops: tuple[Operation, ...]
    has_async: bool
    straight: tuple[tuple, ...]
    has_control_flow: bool = False

    @property
    def ops(self) -> list[Operation]:
        """The planned ops, in execution order."""
        return [s.op for s in self.steps]


def prune(fetches: list[Tensor], targets: list[Operation], feeds: list[Tensor]) -> list[Operation]:
    """Returns the ops needed to compute ``fetches`` and run ``targets``.

    Walks data and control edges backwards; a fed tensor cuts its edge (its
    producer is only needed if something else needs it).

    Args:
        fetches: The tensors to compute.
        targets: The ops to run.
        feeds: The fed tensors.
    """
    fed = set(feeds)
    needed: set[Operation] = set()
    stack = [t.op for t in fetches if t not in fed] + list(targets)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(t.op for t in op.inputs if t not in fed)
        stack.extend(op.control_inputs)
    return [op for op in _creation_order(needed)]


def _creation_order(ops: set[Operation]) -> list[Operation]:
    return sorted(ops, key=lambda op: op._id)


def topological_order(ops: list[Operation], feeds: set[Tensor]) -> list[Operation]:
    """Kahn's algorithm over data and control edges among ``ops``.

    Ties are broken by creation order, so the order is deterministic.

    Args:
        ops: The ops to order.
        feeds: Fed tensors: their edges are cut.

    Raises:
        InvalidArgumentError: if the ops contain a cycle.
    """
    in_set = set(ops)
    indegree = {op: 0 for op in ops}
    consumers: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for pred in _predecessors(op, in_set, feeds):
            indegree[op] += 1
            consumers[pred].append(op)
    ready = deque(op for op in ops if indegree[op] == 0)
    order = []
    while ready:
        op = ready.popleft()
        order.append(op)
        for succ in consumers[op]:
            indegree[succ] -= 1
            if indegree[succ] == 0:
                ready.append(succ)
    if len(order) != len(ops):
        stuck = sorted(op.name for op in ops if indegree[op] > 0)
        raise errors.InvalidArgumentError(
            None, None, f"Graph has a cycle among ops: {', '.join(stuck[:10])}"
        )
    return order


def _predecessors(op: Operation, in_set: set[Operation], feeds: set[Tensor]) -> list[Operation]:
    preds = {t.op for t in op.inputs if t not in feeds and t.op in in_set}
    preds.update(c for c in op.control_inputs if c in in_set)
    return sorted(preds, key=lambda p: p._id)


@dataclass(frozen=True)
class KernelInfo:
    """What the plan needs to know of an op's kernel.

    Args:
        compute: The kernel's function: ``compute(ctx, *inputs)``, or ``compute(ctx, done,
            *inputs)`` for an asynchronous one.
        is_async: Whether the kernel may wait (it calls ``done`` when finished).
        stateful: Whether the kernel has effects beyond its outputs (it is never folded).
    """

    compute: Callable
    is_async: bool
    stateful: bool


def reads_variable(t: Tensor) -> bool:
    """True if ``t``'s value at run time is a variable itself, not a copy of its value.

    That is a ``*_ref`` tensor, or an ``Identity`` of one (``Variable.read``,
    ``tf.identity(v)``): TF1's Identity forwards the variable's buffer, and
    updates write into that buffer, so whoever consumes ``t`` sees the value
    the variable has when the *consumer* runs. ``fill([n], global_step)``
    placed after an update sees the new step because of this; a read with no
    control dependency on an assign races with it, exactly as in TF1.

    Args:
        t: A tensor.
    """
    while not t.dtype._is_ref_dtype:
        if t.op.type != "Identity":
            return False
        t = t.op.inputs[0]
    return True


def dereference(value):
    """The value of a variable now; any other value (a fed array, a dead one) unchanged.

    Args:
        value: A slot's value: a variable, an array, or `DEAD`.
    """
    return value if isinstance(value, np.ndarray) or value is DEAD else value.read()


def bind_kernel(op: Operation) -> KernelInfo:
    """Builds ``op``'s kernel (once per op and session, like TF's ``OpSegment``).

    Inputs that read a variable (`reads_variable`) reach the kernel as the
    variable's value when the kernel runs, except for the inputs the kernel
    declares as references (``Assign``'s ``ref``, an optimizer's ``var``),
    which receive the variable, and the input of an ``Identity``, which
    forwards it.

    Args:
        op: The op.

    Raises:
        InvalidArgumentError: if no kernel is registered for the op type.
    """
    kernel_def = get_kernel_def(op.type)
    if kernel_def is None:
        raise errors.InvalidArgumentError(
            op.node_def,
            op,
            f"No OpKernel was registered to support Op '{op.type}' used by node {op.name}.",
        )
    compute = kernel_def.builder(op)
    if op.type == "Identity" and reads_variable(op.inputs[0]):
        return KernelInfo(_forward_variable, False, kernel_def.stateful)
    # Merge reads only the input that is not dead (its kernel does): a dead
    # input must not be read.
    deref = (
        ()
        if op.type == "Merge"
        else tuple(
            i
            for i, t in enumerate(op.inputs)
            if i not in kernel_def.ref_inputs and reads_variable(t)
        )
    )
    if deref:
        compute = _dereferencing(compute, deref, kernel_def.is_async)
    return KernelInfo(compute, kernel_def.is_async, kernel_def.stateful)


def _forward_variable(ctx, variable):
    """``Identity`` of a variable: checks it has a value (TF's executor does) and forwards it."""
    if not isinstance(variable, np.ndarray) and not variable.is_initialized:
        variable.read()  # raises FailedPreconditionError naming the variable
    return variable


def _dereferencing(compute, deref: tuple[int, ...], is_async: bool):
    """Wraps a kernel so that inputs reading a variable arrive as its value now."""
    positions = tuple(i + 1 if is_async else i for i in deref)
    if positions == (0,):

        def read_first(ctx, a, *rest):
            return compute(ctx, dereference(a), *rest)

        return read_first
    if positions == (1,):

        def read_second(ctx, a, b, *rest):  # matmul(x, w): the hot case
            return compute(ctx, a, dereference(b), *rest)

        return read_second

    def compute_with_values(ctx, *args):
        args = list(args)
        for i in positions:
            args[i] = dereference(args[i])
        return compute(ctx, *args)

    return compute_with_values


# Like TF's constant folding limit: larger results are computed at run time.
MAX_FOLDED_BYTES = 10 << 20


class _FoldingContext:
    """The context of kernels run at plan time (pure kernels ignore it)."""

    resource_mgr = None
    step_id = 0


def _try_fold(op: Operation, info: KernelInfo, known: dict[Tensor, object]) -> list | None:
    """Returns the op's output values if it can be computed now, else None."""
    if info.stateful or info.is_async or op.control_inputs or op.type in ("Switch", "Merge"):
        return None  # a folded Switch would hide the tf.cond from the run
    if op.type != "Const" and (not op.inputs or any(t not in known for t in op.inputs)):
        return None
    try:
        result = info.compute(_FoldingContext(), *[known[t] for t in op.inputs])
    except Exception:  # noqa: BLE001 - the run reports the error, with its step
        return None
    values = [result] if len(op.outputs) == 1 else list(result or [])
    if len(values) != len(op.outputs):
        return None
    for value in values:
        if isinstance(value, np.ndarray):
            if value.nbytes > MAX_FOLDED_BYTES:
                return None
            value.flags.writeable = False
    return values


def build_plan(
    fetches: list[Tensor],
    targets: list[Operation],
    feeds: list[Tensor],
    kernel_for: Callable[[Operation], KernelInfo],
    fold_constants: bool = True,
    recv_dead: bool = True,
) -> Plan:
    """Builds the `Plan` for one run signature.

    Args:
        fetches: Tensors whose values the run returns.
        targets: Ops the run executes for their side effects.
        feeds: Tensors whose values the caller provides.
        kernel_for: ``kernel_for(op) -> KernelInfo``.
        fold_constants: Compute constant subgraphs once, now.
        recv_dead: Whether a ``_Recv`` may bring a dead value (the step has a
            ``tf.cond`` on another task); False when no task of the step has one.
    """
    feed_set = set(feeds)
    order = topological_order(prune(fetches, targets, feeds), feed_set)
    kernels = {op: kernel_for(op) for op in order}
    known: dict[Tensor, object] = {}
    folded: list[Operation] = []
    if fold_constants:
        for op in order:
            if any(t in feed_set for t in op.outputs):
                continue
            values = _try_fold(op, kernels[op], known)
            if values is not None:
                known.update(zip(op.outputs, values))
                folded.append(op)
    folded_set = set(folded)
    order = [op for op in order if op not in folded_set]
    slots: dict[Tensor, int] = {}
    for t in list(feeds) + list(known):
        slots.setdefault(t, len(slots))
    for op in order:
        for t in op.outputs:
            if t not in feed_set:
                slots[t] = len(slots)
    scratch = len(slots)
    index = {op: i for i, op in enumerate(order)}
    cut = feed_set | set(known)
    successors: list[list[int]] = [[] for _ in order]
    num_preds = [0] * len(order)
    for i, op in enumerate(order):
        for pred in _predecessors(op, set(index), cut):
            successors[index[pred]].append(i)
            num_preds[i] += 1
    steps = []
    for i, op in enumerate(order):
        outs = []
        for t in op.outputs:
            # A fed output of an op that still runs goes to a scratch slot: the
            # consumers read the fed value.
            if t in feed_set:
                outs.append(scratch)
                scratch += 1
            else:
                outs.append(slots[t])
        info = kernels[op]
        steps.append(
            PlanStep(
                op=op,
                compute=info.compute,
                in_slots=tuple(slots[t] for t in op.inputs),
                out_slots=tuple(outs),
                is_async=info.is_async,
                successors=tuple(successors[i]),
                num_predecessors=num_preds[i],
                isolated=not (info.stateful or info.is_async)
                and op.type not in ("Switch", "Merge")
                and not any(reads_variable(t) for t in op.inputs),
            )
        )
    return Plan(
        steps=tuple(steps),
        num_slots=scratch,
        feed_slots=tuple(slots[t] for t in feeds),
        fetch_slots=tuple(slots[t] for t in fetches),
        fetch_reads=tuple(reads_variable(t) for t in fetches),
        constants=tuple((slots[t], v) for t, v in known.items()),
        folded_ops=tuple(folded),
        has_async=any(s.is_async for s in steps),
        straight=tuple(_straight_entry(s) for s in steps if s.op.type != "NoOp"),
        # A _Recv may bring a dead value from a tf.cond on another task.
        has_control_flow=any(
            s.op.type == "Switch" or (recv_dead and s.op.type == "_Recv") for s in steps
        ),
    )


def _straight_entry(step: PlanStep) -> tuple:
    outs = step.out_slots
    out = outs[0] if len(outs) == 1 else (-1 if outs else -2)
    return (step.compute, step.in_slots, len(step.in_slots), out, outs, step.op)
