"""Execution plans: what a session builds once per (fetches, feeds, targets).

Building a plan is the graph work of a step: prune the graph to what the
fetches and targets need, order the remaining ops topologically, give every
tensor an integer *slot*, and bind every op to its kernel. Running a step then
only walks the plan — no name lookups and no graph traversal per run. That is
what makes a Python executor fast, and it is also the data that the renderer
and the stepper show.

A plan also prepares what the executor's straight-line walk runs once a plan
is run again and again (`Walks`): the same ops, but

* kernels that write into arrays they keep from one step to the next
  (``with_buffers``, `minitf.ops.math.math_kernels.reusable`) — TF's allocator
  reusing the memory of dead tensors, so a steady training step allocates
  almost nothing;
* chains such as ``MatMul`` → ``BiasAdd``/``Add`` → ``Relu`` and ``MatMul`` →
  ``ReluGrad`` run as one fused kernel (`minitf.ops.nn.nn_kernels.fused_matmul`)
  when nothing else reads the values in between, as TF's remapper fuses them.

Only the kernels change: the graph, the plan's `Plan.steps`, traced steps and
the stepper (which run the dataflow loop) still see every op.

A plan with ops that may wait (and no ``tf.cond``) is also cut into
`Segments`: straight walks, each with its own `Walks`, that the executor runs
between the completions of its waiting ops.

One rewrite changes what an op does, as TF's graph optimizer does before a
step runs: a pure op whose outputs nothing in the step reads, which the step
reaches only through control edges, is not computed (`unread_ops`). TF's
dependency optimizer turns such an op into a ``NoOp``; it still orders the
ops that depend on it. The common case is the input gradient of a model's
first ``MatMul``, which ``minimize``'s default ``GATE_OP`` gating reaches
through a control edge only.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from minitf.framework import dtypes, errors
from minitf.framework.op_registry import get_kernel_def
from minitf.framework.ops import Operation, Tensor
from minitf.ops.control_flow.control_flow_kernels import DEAD
from minitf.ops.nn.nn_kernels import EPILOGUES, fused_matmul


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
        unread: True if nothing in the step reads the op's outputs, so its
            kernel does not run (`unread_ops`): like a ``NoOp``, it only
            orders the ops that have a control edge from it.
    """

    op: Operation
    compute: Callable
    in_slots: tuple[int, ...]
    out_slots: tuple[int, ...]
    is_async: bool
    successors: tuple[int, ...]
    num_predecessors: int
    isolated: bool = False
    unread: bool = False


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
        folded_frontier: The folded ops whose values the step uses — fetched,
            or read by an op that runs — each with the bytes of its outputs.
            Grappler replaces such an op by a ``Const`` of the same name,
            which TF's step then runs; a traced step lists them so
            (`minitf.runtime.step_stats.folded_stats`). The folded ops
            only they read vanish from TF's step, and from minitf's.
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
        walks: The walks with buffers and fused chains of a plan the executor
            may walk straight (`Walks`), or None (also when no kernel of the
            plan keeps buffers and nothing fuses).
        segments: For a plan with ops that may wait and no ``tf.cond``, the
            walk cut into `Segments`; else None.
        units: The plan as a few large moves (`Unit`), for a step that
            nobody watches op by op: one straight walk for a plan that never
            waits, its `Segments` and waiting ops for one that does; None for
            a plan with ``tf.cond`` (every op is then a move of its own).
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
    folded_frontier: tuple[tuple[Operation, int], ...] = ()
    walks: Walks | None = None
    segments: Segments | None = None
    units: tuple[Unit, ...] | None = None

    @property
    def ops(self) -> list[Operation]:
        """The planned ops, in execution order."""
        return [s.op for s in self.steps]

    @functools.cached_property
    def op_units(self) -> tuple[Unit, ...]:
        """The plan with every op a move of its own: unit ``i`` runs ``steps[i]``.

        What a stepper, a tracer and a plan with ``tf.cond`` run; with the
        speed-ups off (`minitf.runtime.speedups`), what every step runs.
        """
        return tuple(Unit.of_step(i, s) for i, s in enumerate(self.steps))

    @functools.cached_property
    def initial_slots(self) -> list:
        """The value slots before a run's feeds: None, and the folded constants.

        A run copies it (`minitf.runtime.execution.initial_values`).
        """
        slots: list = [None] * self.num_slots
        for slot, value in self.constants:
            slots[slot] = value
        return slots


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
        buffered: If the kernel can write into buffers it keeps between steps:
            makes a new compute function like ``compute`` with buffers of its
            own (one per walk, see `Walks`); else None.
    """

    compute: Callable
    is_async: bool
    stateful: bool
    buffered: Callable[[], Callable] | None = None


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
    factory = None if kernel_def.is_async else getattr(compute, "with_buffers", None)
    if deref:
        compute = _dereferencing(compute, deref, kernel_def.is_async)
    if factory is not None and deref:
        buffered = factory
        factory = lambda: _dereferencing(buffered(), deref, False)  # noqa: E731
    return KernelInfo(compute, kernel_def.is_async, kernel_def.stateful, factory)


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
    if positions == (1, 2):

        def read_second_and_third(ctx, a, b, c, *rest):  # matmul(x, w) + b, fused
            return compute(ctx, a, dereference(b), dereference(c), *rest)

        return read_second_and_third

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


_NEVER_FOLDED = frozenset({"Switch", "Merge"})
"""Ops TF's constant folding leaves to the run: a folded Switch would hide the
``tf.cond`` from it. A placeholder with a default that the run does not feed
folds, as in TF: Grappler keeps it, and the graph optimizer TF's session runs
after Grappler folds it (``common_runtime/constant_folding.cc``); a run that
feeds it has a plan of its own."""


def _try_fold(op: Operation, info: KernelInfo, known: dict[Tensor, object]) -> list | None:
    """Returns the op's output values if it can be computed now, else None."""
    if info.stateful or info.is_async or op.control_inputs or op.type in _NEVER_FOLDED:
        return None
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


def _materialized_shape(op: Operation, info: KernelInfo, feeds: set[Tensor]) -> list | None:
    """The outputs of a ``Shape``, ``ShapeN``, ``Size`` or ``Rank`` whose inputs have static shapes.

    TF's constant folding does the same before a step runs
    (``ConstantFolding::MaterializeShapes`` in Grappler): the value depends
    only on shapes the graph already knows, so the op becomes a constant, and
    an op read only through it (the loss a ``reduce_mean`` gradient takes the
    shape of) may then go unread (`unread_ops`). Fed inputs, variables and
    handles are left to the run: their value's shape is only known then.
    The op's own kernel computes the value, from a stand-in of that shape.
    """
    if op.type not in SHAPE_READERS:
        return None
    stand_ins = {}
    for t in op.inputs:
        shape = t.get_shape()
        if (
            t in feeds
            or not shape.is_fully_defined()
            or reads_variable(t)
            or t.dtype.base_dtype in (dtypes.resource, dtypes.variant)
        ):
            return None
        stand_ins[t] = np.broadcast_to(np.zeros((), np.bool_), shape.as_list())
    return _try_fold(op, info, stand_ins)


def build_plan(
    fetches: list[Tensor],
    targets: list[Operation],
    feeds: list[Tensor],
    kernel_for: Callable[[Operation], KernelInfo],
    fold_constants: bool = True,
    recv_dead: bool = True,
    skip_unread: bool = True,
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
        skip_unread: Do not compute the pure ops whose outputs nothing in the
            step reads (`unread_ops`).
    """
    feed_set = set(feeds)
    order = topological_order(prune(fetches, targets, feeds), feed_set)
    kernels = {op: kernel_for(op) for op in order}
    # A _Recv may bring a dead value from a tf.cond on another task.
    has_control_flow = any(
        op.type == "Switch" or (recv_dead and op.type == "_Recv") for op in order
    )
    known: dict[Tensor, object] = {}
    folded: list[Operation] = []
    if fold_constants:
        for op in order:
            if any(t in feed_set for t in op.outputs):
                continue
            values = _try_fold(op, kernels[op], known)
            if values is None and not has_control_flow:
                values = _materialized_shape(op, kernels[op], feed_set)
            if values is not None:
                known.update(zip(op.outputs, values))
                folded.append(op)
    folded_set = set(folded)
    order = [op for op in order if op not in folded_set]
    unread = unread_ops(order, kernels, fetches, targets, feed_set) if skip_unread else set()
    frontier = _folded_frontier(folded, known, fetches, [op for op in order if op not in unread])
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
                compute=_not_computed(op) if op in unread else info.compute,
                in_slots=tuple(slots[t] for t in op.inputs),
                out_slots=tuple(outs),
                is_async=info.is_async,
                successors=tuple(successors[i]),
                num_predecessors=num_preds[i],
                isolated=not (info.stateful or info.is_async)
                and op.type not in ("Switch", "Merge")
                and not any(reads_variable(t) for t in op.inputs),
                unread=op in unread,
            )
        )
    walked = [s for s in steps if s.op.type != "NoOp" and not s.unread]
    straight = tuple(_straight_entry(s) for s in walked)
    fetch_slots = tuple(slots[t] for t in fetches)
    has_async = any(s.is_async for s in steps)
    walks = segments = units = None
    if not (has_async or has_control_flow):
        walks = _walks(walked, straight, kernels, fetch_slots)
        everything = tuple(s.op for s in steps)
        units = (Unit(everything[0] if everything else None, everything, straight, walks),)
    elif not has_control_flow:
        segments = Segments.of(steps, walked, straight, kernels, fetch_slots)
        units = segments.units(steps)
    return Plan(
        steps=tuple(steps),
        num_slots=scratch,
        feed_slots=tuple(slots[t] for t in feeds),
        fetch_slots=fetch_slots,
        fetch_reads=tuple(reads_variable(t) for t in fetches),
        constants=tuple((slots[t], v) for t, v in known.items()),
        folded_ops=tuple(folded),
        folded_frontier=frontier,
        has_async=has_async,
        straight=straight,
        has_control_flow=has_control_flow,
        walks=walks,
        segments=segments,
        units=units,
    )


def _folded_frontier(folded: list, known: dict, fetches: list, computed: list) -> tuple:
    """The folded ops whose values are fetched or read by a computed op, with their bytes."""
    used = set(fetches)
    for op in computed:
        used.update(op.inputs)
    return tuple(
        (op, sum(getattr(known[t], "nbytes", 0) for t in op.outputs))
        for op in folded
        if any(t in used for t in op.outputs)
    )


NEVER_SKIPPED = frozenset(
    {
        "Placeholder",
        "PlaceholderV2",
        "PlaceholderWithDefault",
        "Switch",
        "Merge",
        "Assert",
        "CheckNumerics",
        "Print",
        "PrintV2",
        "_Send",
        "_Recv",
    }
)
"""Op types that always run when the step reaches them, as TF's dependency
optimizer keeps them: a placeholder must stay feedable (and say when it is not
fed), control flow and checks have effects of their own."""


def unread_ops(
    order: list[Operation],
    kernels: dict[Operation, KernelInfo],
    fetches: list[Tensor],
    targets: list[Operation],
    feeds: set[Tensor],
) -> set[Operation]:
    """The ops of a step that need not be computed: nothing reads their outputs.

    TF's dependency optimizer (Grappler, run before every new step signature)
    turns an op into a ``NoOp`` when the pruned graph only reaches it through
    control edges and it is free of side effects. Its outputs have no reader,
    so computing them changes nothing anyone can see, and the ops with a
    control edge from it still wait for its inputs. The rule, op by op from
    the last:

    * no op of the step that is computed reads one of its outputs (a fed
      output is not read from the op), and it is neither fetched nor a target;
    * its kernel is pure (not ``stateful``, not asynchronous), it takes no
      variable by reference, it has outputs, and it is not one of
      `NEVER_SKIPPED` nor a queue op;
    * it is not the ``Identity`` of a variable (TF keeps those: it checks the
      variable has a value).

    Args:
        order: The step's ops in a topological order.
        kernels: Each op's kernel.
        fetches: The fetched tensors.
        targets: The target ops.
        feeds: The fed tensors.
    """
    kept = {t.op for t in fetches} | set(targets)
    in_step = set(order)
    readers = dict.fromkeys(order, 0)
    for op in order:
        for t in op.inputs:
            if t.op in in_step and t not in feeds:
                readers[t.op] += 1
    unread: set[Operation] = set()
    for op in reversed(order):
        if readers[op] or op in kept or not _may_skip(op, kernels[op]):
            continue
        unread.add(op)
        for t in op.inputs:
            if t.op in in_step and t not in feeds:
                readers[t.op] -= 1
    return unread


def _may_skip(op: Operation, info: KernelInfo) -> bool:
    """Whether ``op`` is free of side effects (TF's ``IsFreeOfSideEffect``)."""
    if info.stateful or info.is_async or not op.outputs or op.type in NEVER_SKIPPED:
        return False
    if "Queue" in op.type:
        return False
    kernel_def = get_kernel_def(op.type)
    if kernel_def is not None and kernel_def.ref_inputs:
        return False
    return not (op.type == "Identity" and reads_variable(op.inputs[0]))


def _not_computed(op: Operation) -> Callable:
    """The compute of an op in `unread_ops`: no outputs, and a note in a traced step."""
    outputs = len(op.outputs)
    name = op.name

    def compute(ctx, *args):
        ctx.note(name, "not_computed", "nothing in the step reads its outputs")
        return None if outputs == 1 else [None] * outputs

    return compute


@dataclass(frozen=True)
class Segments:
    """A step without ``tf.cond``, as straight walks between the completions of its waiting ops.

    Each op that may wait (a ``_Recv``, a dequeue, a ``take_grad``) has a
    bit. Every other op belongs to the segment of the waiting ops it depends
    on, through data or control edges (a mask of their bits). A segment can
    run once all its waiting ops have completed, and then runs straight, in
    the plan's order: what it needs from other segments comes from segments
    whose masks are subsets of its own, which are earlier in `order`. A
    waiting op starts once the segments its own inputs come from have run.
    The executor runs what can run, starts what can start, and waits for the
    next completion: no op waits for one it does not need, so the step
    cannot wait where the dataflow loop would not.

    Each segment has its `Walks` too: from its second run, its kernels write
    into buffers they keep and its ``MatMul`` chains run fused, as a plan
    that never waits does.

    Attributes:
        waits: ``(step index, bit, mask)`` of each op that may wait: the op
            starts once every segment within ``mask`` has run.
        order: ``(mask, straight entries, walks)`` of each segment, subsets first.
        ops: Every op of each segment, in plan order, with the ``NoOp`` s and
            unread ops its walk leaves out (a segment may have only those).
    """

    waits: tuple[tuple[int, int, int], ...]
    order: tuple[tuple[int, tuple, Walks], ...]
    ops: tuple[tuple[Operation, ...], ...] = ()

    @staticmethod
    def of(
        steps: list[PlanStep],
        walked: list[PlanStep],
        straight: tuple,
        kernels: dict[Operation, KernelInfo],
        fetch_slots: tuple[int, ...],
    ) -> Segments:
        """The segments of a plan's steps.

        Args:
            steps: The plan's steps, in its topological order.
            walked: The steps a walk runs (`Plan.straight`'s), in that order.
            straight: Their straight-walk entries.
            kernels: Each op's kernel.
            fetch_slots: The fetched slots (a fetched value is never fused away).
        """
        waits = []
        masks = [0] * len(steps)
        for i, step in enumerate(steps):
            done = masks[i]
            if step.is_async:
                bit = 1 << len(waits)
                waits.append((i, bit, masks[i]))
                done |= bit
            for j in step.successors:
                masks[j] |= done
        _sink(steps, masks, set(fetch_slots))
        groups: dict[int, list[int]] = {}  # mask -> positions in ``walked``
        members: dict[int, list[Operation]] = {}  # mask -> every op of the segment
        first: dict[int, int] = {}
        walked_at = {step.op: position for position, step in enumerate(walked)}
        for i, step in enumerate(steps):
            if step.is_async:
                continue
            mask = masks[i]
            first.setdefault(mask, i)
            members.setdefault(mask, []).append(step.op)
            groups.setdefault(mask, [])
            if step.op in walked_at:
                groups[mask].append(walked_at[step.op])
        order = sorted(groups, key=lambda m: (m.bit_count(), first[m]))
        return Segments(
            tuple(waits),
            tuple(
                (
                    m,
                    tuple(straight[p] for p in groups[m]),
                    _walks(walked, straight, kernels, fetch_slots, groups[m]),
                )
                for m in order
            ),
            tuple(tuple(members[m]) for m in order),
        )

    def units(self, steps: list[PlanStep]) -> tuple[Unit, ...]:
        """The segments, then the waiting ops, as `Unit` s with the edges between them.

        A segment runs after every waiting op of its mask has completed and
        after the segments of the masks inside its own (they compute what it
        reads); a waiting op starts after the waiting ops and segments of its
        mask.

        Args:
            steps: The plan's steps.
        """
        segments, waits = self.order, self.waits
        count = len(segments)
        preds: list[list[int]] = []
        for mask, _, _ in segments:
            before = [j for j, (m, _, _) in enumerate(segments) if m != mask and m & ~mask == 0]
            before += [count + w for w, (_, bit, _) in enumerate(waits) if bit & mask]
            preds.append(before)
        for _, _, mask in waits:
            before = [j for j, (m, _, _) in enumerate(segments) if m & ~mask == 0]
            before += [count + w for w, (_, bit, _) in enumerate(waits) if bit & mask]
            preds.append(before)
        successors: list[list[int]] = [[] for _ in preds]
        for unit, before in enumerate(preds):
            for j in before:
                successors[j].append(unit)
        units = [
            Unit(ops[0], ops, entries, walks)
            for (_, entries, walks), ops in zip(segments, self.ops)
        ]
        units += [Unit(steps[i].op, (steps[i].op,), (), None, steps[i]) for i, _, _ in waits]
        return tuple(
            dataclasses.replace(u, successors=tuple(succ), num_predecessors=len(before))
            for u, succ, before in zip(units, successors, preds)
        )


@dataclass(frozen=True)
class Unit:
    """What one move of a step runs: a straight walk of ops, or one op that may wait.

    A step's execution (`minitf.runtime.execution.StepExecution`) runs its
    plan as units. Watched op by op (a stepper, a tracer), every op is a unit
    (`Plan.op_units`); free-running, a plan is a few large units
    (`Plan.units`): its straight walks (with their buffers and fused chains)
    and its waiting ops.

    Attributes:
        op: The op that names the unit (its first), or None for an empty walk.
        ops: Every op the unit runs, in order (``NoOp`` s of a walk left out).
        entries: The straight-walk entries of a synchronous unit
            (`Plan.straight`'s form); empty for a waiting op.
        walks: The walks with buffers of ``entries`` (`Walks`), or None.
        step: The `PlanStep` of a waiting op, or of the one op of an op unit.
        successors: The units that wait for this one.
        num_predecessors: How many units must finish before this one is ready.
    """

    op: Operation | None
    ops: tuple[Operation, ...]
    entries: tuple
    walks: Walks | None = None
    step: PlanStep | None = None
    successors: tuple[int, ...] = ()
    num_predecessors: int = 0

    @property
    def is_async(self) -> bool:
        """True if the unit is one op that may wait."""
        return self.step is not None and self.step.is_async

    @staticmethod
    def of_step(index: int, step: PlanStep) -> Unit:
        """The unit that runs the plan's step ``step`` alone (a ``NoOp`` runs nothing).

        Args:
            index: The step's index in the plan (unused: units and steps share it).
            step: The step.
        """
        entries = () if step.is_async or step.op.type == "NoOp" else (_straight_entry(step),)
        return Unit(
            step.op, (step.op,), entries, None, step, step.successors, step.num_predecessors
        )


def _sink(steps: list[PlanStep], masks: list[int], fetched: set[int]) -> None:
    """Moves pure ops to the latest segment where their values are still in time.

    An `isolated` op whose outputs only its readers use (no control edge
    from it, not fetched) can run in the segment that all its readers share
    (the AND of their masks) instead of the first one it could: it changes
    nothing else, and its readers still find its values. Sinking from the
    last op back keeps a ``MatMul`` with the bias add and ``Relu`` after it,
    which wait for one more tensor, in one segment, where they run fused.
    """
    for i in range(len(steps) - 1, -1, -1):
        step = steps[i]
        if not step.isolated or not step.successors or fetched.intersection(step.out_slots):
            continue
        outs = set(step.out_slots)
        if any(outs.isdisjoint(steps[j].in_slots) for j in step.successors):
            continue  # a control edge: the op must not move past what it orders
        shared = -1
        for j in step.successors:
            shared &= masks[j]
        masks[i] = shared


def _straight_entry(step: PlanStep, compute: Callable | None = None) -> tuple:
    outs = step.out_slots
    out = outs[0] if len(outs) == 1 else (-1 if outs else -2)
    return (compute or step.compute, step.in_slots, len(step.in_slots), out, outs, step.op)


SHAPE_READERS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
"""Op types that read nothing of their inputs but the shape (a fused chain hands
them its result, which has the shape of every value in the chain)."""

MAX_IDLE_WALKS = 4
"""How many walks (each with its buffers) a plan keeps for the steps to come."""

MIN_BUFFERED_ELEMENTS = 1024
"""Outputs known to be smaller than this are not worth a buffer: numpy allocates
small arrays from a cache of its own, faster than a kernel can check that a
buffer is free."""


def _worth_buffers(op: Operation) -> bool:
    """Whether ``op``'s outputs may be large enough for its kernel to keep buffers.

    Not for scalars (a kernel returns them as numpy scalars, which cost less
    than any array) nor for outputs whose static shape says they are small.
    """
    for t in op.outputs:
        shape = t.get_shape()
        if shape.ndims == 0:
            return False
        if shape.is_fully_defined() and shape.num_elements() < MIN_BUFFERED_ELEMENTS:
            return False
    return True


@dataclass(frozen=True)
class FusedChain:
    """Ops that the straight walk runs as one kernel (`minitf.ops.nn.nn_kernels.fused_matmul`).

    A ``MatMul``, then ops each of which is the only one to read the previous
    one's value (ops that read only its shape aside, `SHAPE_READERS`):
    ``BiasAdd`` or ``Add``/``AddV2`` of a vector, ``Relu``, ``ReluGrad`` (the
    value as the incoming gradient), and ``Identity`` on the way. The kernel
    runs where the ``MatMul`` is in the walk. That is earlier than the other
    ops' places, which changes nothing anyone can see: they are pure, and one
    that reads a variable (a bias) joins only if no stateful op, which might
    change the variable, runs between the ``MatMul`` and it.

    Attributes:
        ops: The chain's ops, the ``MatMul`` first.
        epilogue: What the kernel does after the product (``Identity`` ops
            left out), in order.
        in_slots: The kernel's inputs: the ``MatMul``'s two, then the extra
            input of each epilogue step but ``Relu``.
        out_slots: The slots it writes: the last op's output, then each
            earlier value in the chain that a shape reader reads.
        derefs: Which inputs read a variable (`reads_variable`).
    """

    ops: tuple[Operation, ...]
    epilogue: tuple[str, ...]
    in_slots: tuple[int, ...]
    out_slots: tuple[int, ...]
    derefs: tuple[int, ...]

    def entry(self) -> tuple:
        """A new straight-walk entry for the chain, with buffers of its own."""
        matmul = self.ops[0]
        copies = len(self.out_slots)
        compute = fused_matmul(
            matmul.get_attr("transpose_a"),
            matmul.get_attr("transpose_b"),
            matmul.get_attr("T").as_numpy_dtype,
            self.epilogue,
            copies,
        )()
        if self.derefs:
            compute = _dereferencing(compute, self.derefs, False)
        out = self.out_slots[0] if copies == 1 else -1
        return (compute, self.in_slots, len(self.in_slots), out, self.out_slots, matmul)


class Walks:
    """The walks with buffers of one plan: one for each step that runs it at a time.

    A walk is `Plan.straight` with every kernel that can write into buffers
    it keeps (`KernelInfo.buffered`) made with buffers of its own, and each
    `FusedChain` in place of its ops. A step takes a walk (`take`) and gives
    it back when done (`give`): two steps running the plan at once never
    share a buffer, and a buffer is reused only when nothing holds its last
    value (`minitf.ops.math.math_kernels.reusable`). A plan run only once, like an
    initializer, keeps no buffers: its first `take` returns None and the
    executor walks `Plan.straight`.

    Args:
        build: Makes a new walk.
        chains: The fused chains.
        unfused_rest: For the first op of each chain, the rest of the step op by op.

    Attributes:
        chains: The fused chains.
        unfused_rest: For the first op of each chain, the entries of
            `Plan.straight` from that op on, without the ops of the chains
            before it: where a step goes on, op by op, when the chain's kernel
            declines its inputs (`minitf.ops.nn.nn_kernels.FusionDeclined`).
    """

    def __init__(self, build: Callable[[], tuple], chains: tuple, unfused_rest: dict):
        self._build = build
        self._idle: list[tuple] = []
        self._taken = 0
        self.chains = chains
        self.unfused_rest = unfused_rest

    def take(self) -> tuple | None:
        """A walk to run a step with, or None the first time (walk `Plan.straight`)."""
        try:
            return self._idle.pop()
        except IndexError:
            pass
        self._taken += 1
        return None if self._taken == 1 else self._build()

    def give(self, walk: tuple) -> None:
        """Takes back a walk that `take` gave, once its step is over.

        Args:
            walk: The walk.
        """
        if len(self._idle) < MAX_IDLE_WALKS:
            self._idle.append(walk)


def _walks(
    walked: list[PlanStep],
    straight: tuple,
    kernels: dict[Operation, KernelInfo],
    fetch_slots: tuple[int, ...],
    members: list[int] | None = None,
) -> Walks | None:
    """The `Walks` of ``walked`` (all the plan's walked steps), or of those at ``members`` only.

    A segment's walks (`Segments`) fuse chains within the segment; who reads
    a value is still counted over the whole plan. None when no kernel would
    get buffers and nothing fuses: every walk would be ``straight`` itself,
    and a step walks it without taking one.
    """
    chains = _fused_chains(walked, fetch_slots, kernels, None if members is None else set(members))
    if members is not None:
        walked = [walked[m] for m in members]
        straight = tuple(straight[m] for m in members)
    first_of = {chain.ops[0]: chain for chain in chains}
    fused = {op for chain in chains for op in chain.ops}
    # For each entry of a walk: how to make it.
    makers: list[Callable[[], tuple]] = []
    any_buffered = False
    for step, entry in zip(walked, straight):
        buffered = kernels[step.op].buffered if _worth_buffers(step.op) else None
        if step.op in first_of:
            makers.append(first_of[step.op].entry)
        elif step.op in fused:
            continue
        elif buffered is not None:
            any_buffered = True
            makers.append(lambda step=step, buffered=buffered: _straight_entry(step, buffered()))
        else:
            makers.append(lambda entry=entry: entry)
    if not (chains or any_buffered):
        return None

    def build() -> tuple:
        return tuple(make() for make in makers)

    # Where a chain whose kernel declines its inputs goes on: every later entry
    # of Plan.straight, but the ops of the chains that ran before it.
    index = {step.op: i for i, step in enumerate(walked)}
    rests = {}
    for chain in chains:
        start = index[chain.ops[0]]
        done = {op for earlier in chains if index[earlier.ops[0]] < start for op in earlier.ops}
        rests[chain.ops[0]] = tuple(e for e in straight[start:] if e[5] not in done)
    return Walks(build, tuple(chains), rests)


def _fused_chains(
    walked: list[PlanStep],
    fetch_slots: tuple[int, ...],
    kernels: dict[Operation, KernelInfo],
    allowed: set[int] | None = None,
) -> list[FusedChain]:
    """The chains of ``walked`` (the steps in walk order) that can run as one kernel.

    With ``allowed``, only chains whose ops are all at those positions.
    """
    readers: dict[int, list[tuple[int, int]]] = {}
    written_at: dict[int, int] = {}
    for pos, step in enumerate(walked):
        for i, slot in enumerate(step.in_slots):
            readers.setdefault(slot, []).append((pos, i))
        for slot in step.out_slots:
            written_at[slot] = pos
    fetched = set(fetch_slots)
    taken: set[int] = set()
    chains = []
    for start, first in enumerate(walked):
        if first.op.type != "MatMul" or not first.op.outputs[0].dtype.is_floating:
            continue
        if allowed is not None and start not in allowed:
            continue
        members, epilogue, extras, also_written = [start], [], [], []
        slot = first.out_slots[0]
        while slot not in fetched:
            all_readers = readers.get(slot, [])
            value_readers = [r for r in all_readers if walked[r[0]].op.type not in SHAPE_READERS]
            if len(value_readers) != 1:
                break
            pos, index = value_readers[0]
            step = walked[pos]
            kind = _epilogue_kind(step.op, index)
            if kind is None or pos in taken or len(step.out_slots) != 1:
                break
            if allowed is not None and pos not in allowed:
                break  # in another segment: it runs at another time
            extra = step.in_slots[1] if kind in ("BiasAdd", "ReluGrad") else None
            if extra is not None and written_at.get(extra, -1) > start:
                break  # not computed yet where the chain runs
            if not step.isolated and any(
                kernels[walked[r].op].stateful for r in range(start + 1, pos) if r not in members
            ):
                break  # it reads a variable that an op in between may change
            members.append(pos)
            if kind != "Identity":
                epilogue.append(kind)
            if extra is not None:
                extras.append((extra, step.op.inputs[1]))
            if len(all_readers) > 1:
                also_written.append(slot)
            slot = step.out_slots[0]
        if not epilogue:
            continue
        taken.update(members)
        inputs = list(first.op.inputs) + [tensor for _, tensor in extras]
        chains.append(
            FusedChain(
                ops=tuple(walked[m].op for m in members),
                epilogue=tuple(epilogue),
                in_slots=first.in_slots + tuple(extra_slot for extra_slot, _ in extras),
                out_slots=(slot, *also_written),
                derefs=tuple(i for i, t in enumerate(inputs) if reads_variable(t)),
            )
        )
    return chains


def _epilogue_kind(op: Operation, index: int) -> str | None:
    """What ``op`` does to a chain's value that is its input ``index``.

    Returns:
        One of `minitf.ops.nn.nn_kernels.EPILOGUES` (an ``Add`` of a vector is a
        ``BiasAdd``), ``"Identity"``, or None if ``op`` cannot join a chain.
    """
    kind = op.type
    if kind in ("Add", "AddV2") and op.inputs[1].get_shape().ndims == 1:
        kind = "BiasAdd"
    if kind == "Identity" or kind == "Relu":
        return kind
    if kind in EPILOGUES and index == 0:
        return kind
    return None
