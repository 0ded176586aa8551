"""The step pipeline: from a graph and a run signature to the plans that run it.

`build_plan` turns one partition of a step (or a local step) into a `Plan`:

* **prune** the graph to what the fetches and targets need (data and control
  edges; a fed tensor cuts its edge) and **order** it topologically;
* **fold constants**: ``Const`` ops and pure ops whose inputs are all
  constant are computed now, as TF's Grappler does;
* **skip what nobody reads** (`unread_ops`): a pure op reached only through
  control edges is not computed, as TF's dependency optimizer turns it into
  a ``NoOp``;
* **allocate slots** and bind kernels (`minitf.runtime.core.plan`);
* and, for a step nobody watches op by op, cut it into the large units the
  speed-ups run (`minitf.runtime.speedups`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minitf.framework import dtypes
from minitf.framework.op_registry import get_kernel_def
from minitf.framework.ops import Operation, Tensor
from minitf.runtime.core.plan import (
    SHAPE_READERS,
    KernelInfo,
    Plan,
    PlanStep,
    Unit,
    predecessors,
    prune,
    reads_variable,
    straight_entry,
    topological_order,
)
from minitf.runtime.speedups.segments import Segments
from minitf.runtime.speedups.walks import walks_of

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
        for pred in predecessors(op, set(index), cut):
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
    straight = tuple(straight_entry(s) for s in walked)
    fetch_slots = tuple(slots[t] for t in fetches)
    has_async = any(s.is_async for s in steps)
    walks = segments = units = None
    if not (has_async or has_control_flow):
        walks = walks_of(walked, straight, kernels, fetch_slots)
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
