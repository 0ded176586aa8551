"""Segments: a step with ops that wait, as straight walks between their completions.

A speed-up: the step runs as a few large moves instead of one per op
(`minitf.runtime.core.plan.Unit`), with the same results (``MINITF_FAST=0`` runs
every op as a move of its own).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from minitf.framework.ops import Operation
from minitf.runtime.core.plan import KernelInfo, PlanStep, Unit
from minitf.runtime.speedups.walks import Walks, walks_of


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
                    walks_of(walked, straight, kernels, fetch_slots, groups[m]),
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
