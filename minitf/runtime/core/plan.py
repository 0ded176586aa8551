"""Execution plans: what a session builds once per (fetches, feeds, targets).

A `Plan` is the graph work of a step done once: the ops the fetches and
targets need, in a topological order, every tensor given an integer *slot*,
every op bound to its kernel (`PlanStep`). Running a step then only walks
the plan — no name lookups and no graph traversal per run. That is what
makes a Python executor fast, and it is also the data that the renderer and
the stepper show.

A step runs its plan as *units* (`Unit`), each one move of the step's
execution (`minitf.runtime.core.execution.StepExecution`): every op a unit of its
own (`Plan.op_units`), or, free-running, the few large units that the
speed-ups make (`Plan.units`, `minitf.runtime.speedups`).

`minitf.runtime.core.pipeline` builds plans; this module is what they are made of.
"""

from __future__ import annotations

import functools
import operator
from collections import deque
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import get_kernel_def
from minitf.framework.ops import Operation, Tensor
from minitf.ops.control_flow.control_flow_kernels import DEAD
from minitf.runtime.core.frames import FrameInfo


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
            (`minitf.runtime.core.step_stats.folded_stats`). The folded ops
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
    walks: Any = None
    segments: Any = None
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
        return tuple(Unit.of_step(s) for s in self.steps)

    @functools.cached_property
    def has_loops(self) -> bool:
        """True if the plan has a ``tf.while_loop`` (an ``Enter``): it runs in frames."""
        return any(s.op.type in ("Enter", "RefEnter") for s in self.steps)

    @functools.cached_property
    def frame_info(self) -> FrameInfo:
        """What the plan's ``tf.while_loop`` s are (`FrameInfo`), for a plan with loops."""
        return FrameInfo(self.steps, self.initial_slots)

    @functools.cached_property
    def op_start(self) -> tuple:
        """``(units, pending counts, ready units)`` of a step that runs op by op."""
        return _start_state(self.op_units)

    @functools.cached_property
    def unit_start(self) -> tuple:
        """``(units, pending counts, ready units)`` of a step that runs in `units`."""
        return _start_state(self.units)

    @functools.cached_property
    def initial_slots(self) -> list:
        """The value slots before a run's feeds: None, and the folded constants.

        A run copies it (`minitf.runtime.core.execution.initial_values`).
        """
        slots: list = [None] * self.num_slots
        for slot, value in self.constants:
            slots[slot] = value
        return slots


def _start_state(units: tuple) -> tuple:
    pending = [u.num_predecessors for u in units]
    return units, pending, tuple(i for i, count in enumerate(pending) if not count)


@dataclass(frozen=True)
class Unit:
    """What one move of a step runs: a straight walk of ops, or one op that may wait.

    A step's execution (`minitf.runtime.core.execution.StepExecution`) runs its
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
    walks: Any = None
    step: PlanStep | None = None
    successors: tuple[int, ...] = ()
    num_predecessors: int = 0

    @property
    def is_async(self) -> bool:
        """True if the unit is one op that may wait."""
        return self.step is not None and self.step.is_async

    @staticmethod
    def of_step(step: PlanStep) -> Unit:
        """The unit that runs the plan's step ``step`` alone (a ``NoOp`` runs nothing).

        Args:
            step: The step.
        """
        entries = () if step.is_async or step.op.type == "NoOp" else (straight_entry(step),)
        return Unit(
            step.op, (step.op,), entries, None, step, step.successors, step.num_predecessors
        )


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
        # The private fields: the public properties copy lists (planning is hot).
        stack.extend(t._op for t in op._inputs if t not in fed)
        stack.extend(c for c in op._control_inputs if not _fed_placeholder(c, fed))
    return _creation_order(needed)


def _fed_placeholder(op: Operation, fed: set[Tensor]) -> bool:
    """A placeholder whose value is fed: TF moves its control edges to the feed.

    (``subgraph.cc``'s ``FeedInputs``): an op that waits on it waits for
    nothing, since the fed value is there when the step starts.
    """
    return op._type in ("Placeholder", "PlaceholderV2") and op._outputs[0] in fed


_CREATION_ID = operator.attrgetter("_id")


def _creation_order(ops: Iterable[Operation]) -> list[Operation]:
    return sorted(ops, key=_CREATION_ID)


def topological_order(ops: list[Operation], feeds: set[Tensor]) -> list[Operation]:
    """Kahn's algorithm over data and control edges among ``ops``.

    Ties are broken by creation order, so the order is deterministic.

    Args:
        ops: The ops to order.
        feeds: Fed tensors: their edges are cut.

    Raises:
        InvalidArgumentError: if the ops contain a cycle.
    """
    indegree = dict.fromkeys(ops, 0)  # also the set of ops to order
    consumers: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for pred in predecessors(op, indegree, feeds):
            if pred._type == "NextIteration":
                continue  # a loop's back edge: the cycle a frame runs, not an order
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


def predecessors(
    op: Operation, in_set: Container[Operation], feeds: Container[Tensor]
) -> set[Operation]:
    """The ops of ``in_set`` that ``op`` waits for: producers of its unfed inputs, control inputs.

    A set, in no order: the orders built from it go op by op, each op counting
    its predecessors and adding itself to their successors, so they do not
    depend on the order in which it sees them.

    Args:
        op: The op.
        in_set: The ops of the step.
        feeds: The fed tensors (their edges are cut).
    """
    preds = {t._op for t in op._inputs if t not in feeds and t._op in in_set}
    preds.update(c for c in op._control_inputs if c in in_set)
    return preds


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
    while not t._dtype._is_ref_dtype:  # the fields: planning asks this of every input
        op = t._op
        if op._type != "Identity":
            return False
        t = op._inputs[0]
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
    op_type = op.type
    kernel_def = get_kernel_def(op_type)
    if kernel_def is None:
        raise errors.InvalidArgumentError(
            op.node_def,
            op,
            f"No OpKernel was registered to support Op '{op_type}' used by node {op.name}.",
        )
    compute = kernel_def.builder(op)
    inputs = op.inputs
    if op_type == "Identity" and reads_variable(inputs[0]):
        return KernelInfo(_forward_variable, False, kernel_def.stateful)
    # Merge reads only the input that is not dead (its kernel does): a dead
    # input must not be read.
    deref = (
        ()
        if op_type == "Merge"
        else tuple(
            i for i, t in enumerate(inputs) if i not in kernel_def.ref_inputs and reads_variable(t)
        )
    )
    factory = None if kernel_def.is_async else getattr(compute, "with_buffers", None)
    if deref:
        compute = dereferencing(compute, deref, kernel_def.is_async)
    if factory is not None and deref:
        buffered = factory
        factory = lambda: dereferencing(buffered(), deref, False)  # noqa: E731
    return KernelInfo(compute, kernel_def.is_async, kernel_def.stateful, factory)


def _forward_variable(ctx, variable):
    """``Identity`` of a variable: checks it has a value (TF's executor does) and forwards it."""
    # A variable's ``value`` is None until assigned (``is_initialized``, a property, is a call).
    if not isinstance(variable, np.ndarray) and variable.value is None:
        variable.read()  # raises FailedPreconditionError naming the variable
    return variable


def dereferencing(compute, deref: tuple[int, ...], is_async: bool):
    """Wraps a kernel so that inputs reading a variable arrive as its value now.

    The wrappers of one or two such inputs test for an array themselves
    (`dereference`, inlined) and take a variable's ``value`` as it is, calling
    its ``read`` only for the error of a variable without one: two calls less
    per input and step.
    """
    positions = tuple(i + 1 if is_async else i for i in deref)
    if positions == (0,):

        def read_first(ctx, a, *rest):
            if not isinstance(a, np.ndarray) and a is not DEAD:
                value = a.value  # None until assigned
                a = a.read() if value is None else value
            return compute(ctx, a, *rest)

        return read_first
    if positions == (1,):

        def read_second(ctx, a, b, *rest):  # matmul(x, w): the hot case
            if not isinstance(b, np.ndarray) and b is not DEAD:
                value = b.value  # None until assigned
                b = b.read() if value is None else value
            return compute(ctx, a, b, *rest)

        return read_second
    if positions == (1, 2):

        def read_second_and_third(ctx, a, b, c, *rest):  # matmul(x, w) + b, fused
            if not isinstance(b, np.ndarray) and b is not DEAD:
                value = b.value  # None until assigned
                b = b.read() if value is None else value
            if not isinstance(c, np.ndarray) and c is not DEAD:
                value = c.value  # None until assigned
                c = c.read() if value is None else value
            return compute(ctx, a, b, c, *rest)

        return read_second_and_third

    def compute_with_values(ctx, *args):
        args = list(args)
        for i in positions:
            args[i] = dereference(args[i])
        return compute(ctx, *args)

    return compute_with_values


def straight_entry(step: PlanStep, compute: Callable | None = None) -> tuple:
    outs = step.out_slots
    out = outs[0] if len(outs) == 1 else (-1 if outs else -2)
    return (compute or step.compute, step.in_slots, len(step.in_slots), out, outs, step.op)


SHAPE_READERS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
"""Op types that read nothing of their inputs but the shape (a fused chain hands
them its result, which has the shape of every value in the chain)."""
