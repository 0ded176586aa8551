"""The units of a free-running step: a few large moves instead of one per op.

A speed-up (`minitf.runtime.core.plan.Unit`): ``MINITF_FAST=0``, a stepper
or a tracer runs every op as a move of its own instead.
"""

from __future__ import annotations

from minitf.runtime.core.plan import Unit
from minitf.runtime.speedups.segments import Segments
from minitf.runtime.speedups.walks import walks_of


def units_of(steps, walked, straight, kernels, fetch_slots, has_async, has_control_flow) -> tuple:
    """The walks, segments and units a free-running step of these steps runs.

    Args:
        steps: The plan's steps.
        walked: The steps a straight walk runs (no ``NoOp``, no unread op).
        straight: Their straight-walk entries.
        kernels: Each op's kernel.
        fetch_slots: The fetched slots (a fetched value is never fused away).
        has_async: Whether an op may wait.
        has_control_flow: Whether the step has a ``tf.cond`` (then every op is
            a unit of its own, and there are none of these).

    Returns:
        ``(walks, segments, units)``: a plan that never waits is one unit,
        its straight walk with its `Walks`; one with ops that wait is its
        `Segments` and its waiting ops; with ``tf.cond``, all None.
    """
    if has_control_flow:
        return None, None, None
    if not has_async:
        walks = walks_of(walked, straight, kernels, fetch_slots)
        everything = tuple(s.op for s in steps)
        return (
            walks,
            None,
            (Unit(everything[0] if everything else None, everything, straight, walks),),
        )
    segments = Segments.of(steps, walked, straight, kernels, fetch_slots)
    return None, segments, segments.units(steps)
