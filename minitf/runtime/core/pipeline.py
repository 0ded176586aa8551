"""The step pipeline: from a graph and a run signature to the plans that run it.

`order_step` is the first stage of every step: it **prunes** the graph to
what the fetches and targets need (data and control edges; a fed tensor
cuts its edge) and **orders** it topologically. The master places and
partitions those ops (`minitf.runtime.distributed.partition`); `build_plan`
then turns one partition (or a local step) into a `Plan`:

* **fold constants** and **skip what nobody reads**, as TF's graph
  optimizer does (`minitf.runtime.core.graph_optimizer`);
* **allocate slots** and bind kernels (`minitf.runtime.core.plan`);
* and, for a step nobody watches op by op, cut it into the large units the
  speed-ups run (`minitf.runtime.speedups`).
"""

from __future__ import annotations

from collections.abc import Callable

from minitf.framework.ops import Operation, Tensor
from minitf.runtime.core import graph_optimizer
from minitf.runtime.core.plan import (
    KernelInfo,
    Plan,
    PlanStep,
    predecessors,
    prune,
    reads_variable,
    straight_entry,
    topological_order,
)
from minitf.runtime.speedups.units import units_of


def order_step(fetches: list[Tensor], targets: list[Operation], feeds: list[Tensor]) -> list:
    """The ops a run signature needs, producers first: pruned, then topologically ordered.

    The first stage of every step: a local session plans these ops, a master
    places and partitions them, and each task plans the partition it
    receives as it comes (`build_plan` with ``order``), without ordering again.

    Args:
        fetches: Tensors whose values the run returns.
        targets: Ops the run executes for their side effects.
        feeds: Tensors whose values the caller provides.
    """
    return topological_order(prune(fetches, targets, feeds), set(feeds))


def build_plan(
    fetches: list[Tensor],
    targets: list[Operation],
    feeds: list[Tensor],
    kernel_for: Callable[[Operation], KernelInfo],
    fold_constants: bool = True,
    recv_dead: bool = True,
    skip_unread: bool = True,
    order: list[Operation] | None = None,
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
            step reads (`minitf.runtime.core.graph_optimizer.unread_ops`).
        order: The step's ops as `order_step` gives them (default: `order_step`'s).
    """
    feed_set = set(feeds)
    order = order_step(fetches, targets, feeds) if order is None else list(order)
    kernels = {op: kernel_for(op) for op in order}
    # A _Recv may bring a dead value from a tf.cond on another task.
    has_control_flow = any(
        op.type in ("Switch", "RefSwitch") or (recv_dead and op.type == "_Recv") for op in order
    )
    known: dict[Tensor, object] = {}
    folded: list[Operation] = []
    if fold_constants:
        known, folded = graph_optimizer.fold_constants(order, kernels, feed_set, has_control_flow)
    folded_set = set(folded)
    order = [op for op in order if op not in folded_set]
    unread = (
        graph_optimizer.unread_ops(order, kernels, fetches, targets, feed_set)
        if skip_unread
        else set()
    )
    frontier = graph_optimizer.folded_frontier(
        folded, known, fetches, [op for op in order if op not in unread]
    )
    slots: dict[Tensor, int] = {}
    for t in list(feeds) + list(known):
        slots.setdefault(t, len(slots))
    for op in order:
        for t in op.outputs:
            if t not in feed_set:
                slots[t] = len(slots)
    scratch = len(slots)
    index = {op: i for i, op in enumerate(order)}  # also the set of planned ops
    cut = feed_set | set(known)
    successors: list[list[int]] = [[] for _ in order]
    num_preds = [0] * len(order)
    for i, op in enumerate(order):
        for pred in predecessors(op, index, cut):
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
                compute=graph_optimizer.not_computed(op) if op in unread else info.compute,
                in_slots=tuple(slots[t] for t in op.inputs),
                out_slots=tuple(outs),
                is_async=info.is_async,
                successors=tuple(successors[i]),
                num_predecessors=num_preds[i],
                isolated=not (info.stateful or info.is_async)
                and op.type not in ("Switch", "RefSwitch", "Merge")
                and not any(reads_variable(t) for t in op.inputs),
                unread=op in unread,
            )
        )
    walked = [s for s in steps if s.op.type != "NoOp" and not s.unread]
    straight = tuple(straight_entry(s) for s in walked)
    fetch_slots = tuple(slots[t] for t in fetches)
    has_async = any(s.is_async for s in steps)
    # The speed-ups: the few large units a free-running step runs, with buffers.
    walks, segments, units = units_of(
        steps, walked, straight, kernels, fetch_slots, has_async, has_control_flow
    )
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
