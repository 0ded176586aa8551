"""A step with ``tf.while_loop`` s: the one `StepExecution`, its moves run in frames.

It is the same step object with the same two moves — run a ready op,
deliver an arrived completion — chosen by the same `Scheduler`; what
differs is where an op's values live. Every move names an op *and* the
iteration of the frame it runs in (`minitf.runtime.core.frames.Frames`):
the op reads its inputs from that iteration's value slots, and when it
finishes its outputs go where its type sends them — the same iteration,
a child frame (``Enter``), the next iteration (``NextIteration``) or the
parent frame (``Exit``). Every op is a move of its own, as with ``tf.cond``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from minitf.ops.control_flow.control_flow_kernels import DEAD
from minitf.runtime.core.execution import StepExecution, _walk, start_waiting, store_outputs
from minitf.runtime.core.frames import Frames, TaggedPending, TaggedSteps
from minitf.runtime.core.plan import Plan, Unit
from minitf.runtime.core.step_stats import OpEvent
from minitf.runtime.core.watch import waits_of


class LoopStepExecution(StepExecution):
    """The state of one partition of one step with loops; its moves run op by op, in frames.

    Args:
        plan: The partition's `Plan` (``plan.has_loops``).
        ctx: The step's `minitf.runtime.core.step_context.StepContext`.
        feed_values: The fed values, in the order of ``plan.feed_slots``.
        by_op: Ignored: every op is a move of its own.

    Attributes:
        frames: The step's frames and iterations; ``ready``, ``waiting`` and
            ``arrived`` hold moves ``tag * len(plan.steps) + step`` that name
            an iteration too (`Frames.locate`); ``steps[k]`` and ``units[k]``
            are the step of move ``k``.
    """

    __slots__ = ("frames",)

    def __init__(self, plan: Plan, ctx: Any, feed_values: list[Any], by_op: bool = True):
        super().__init__(plan, ctx, feed_values, True)
        self.ready = deque()
        self.frames = Frames(plan.frame_info, plan.steps, self.vals, self.ready)
        self.steps = TaggedSteps(plan.steps)
        self.units = TaggedSteps(plan.op_units)
        self.pending = TaggedPending(self.frames)
        self._dead_preds = None  # each iteration counts its own (`Frames`)

    def fetches(self) -> list[Any]:
        """The fetched values (a variable fetched is read now).

        Raises:
            InternalError: if a loop's frame never ended (its ops wait for each other).
        """
        self.frames.check_ended()
        return super().fetches()

    def waits_for(self, i: int) -> dict:
        """What the waiting move ``i`` waits for, in its iteration (`StepExecution.waits_for`)."""
        iteration = self.frames.locate(i)[0]
        return waits_of(self.units[i].step, iteration.vals, self.frames.where(i), iteration.key)

    def where(self, k: int) -> tuple[tuple[str, int], ...]:
        """The frames and iterations of move ``k``, outermost first (`Frames.where`).

        Args:
            k: A move of the step (ready, waiting or arrived).
        """
        return self.frames.where(k)

    def run_op(self, k: int) -> None:
        """Runs the ready move ``k``: its op, in its iteration's value slots.

        Args:
            k: A ready move.

        Raises:
            OpError: the TF error of the kernel, naming its op.
        """
        self.ready.remove(k)
        iteration, i = self.frames.locate(k)
        self.ctx.frame_iter = iteration.key  # a _Send or _Recv keys its tensor with it
        unit = self.plan.op_units[i]
        step, vals = unit.step, iteration.vals
        if self.frames.is_dead(iteration, i):
            if step.op.type == "_Send":
                step.compute(self.ctx, DEAD)  # the peer's _Recv must learn it
            outs = step.out_slots
            store_outputs(step, vals, DEAD if len(outs) == 1 else [DEAD] * len(outs))
            self.done_ops += 1
            self.frames.finished(iteration, i, True)
            return
        traced = self._thread is not None
        start = self.ctx.clock.now_ns() if traced else 0
        where = self.frames.where(k) if traced else ()  # its iteration may end with it
        if step.is_async:
            self.waiting.add(k)
            start_waiting(step, self.ctx, self._completion(k), vals)
            if traced:
                self._starts[k] = (start, self.ctx.clock.now_ns())
            return
        _walk(unit.entries, vals, self.ctx)
        self.done_ops += 1
        self.frames.finished(iteration, i, False)
        if traced:
            end = self.ctx.clock.now_ns()
            event = OpEvent.of(step, start, end, vals, self.ctx, self._thread)
            event.frames = where
            self.ctx.trace.append(event)

    def deliver(self, k: int) -> None:
        """Hands the arrived completion of move ``k`` to its iteration (`StepExecution.deliver`).

        Args:
            k: A move whose completion has arrived.

        Raises:
            OpError: if the op finished with an error.
        """
        root = self.vals
        iteration = self.frames.locate(k)[0]
        self.vals = iteration.vals  # the op's outputs go to its iteration
        self.ctx.frame_iter = iteration.key  # its trace event takes that iteration's notes
        try:
            super().deliver(k)
        finally:
            self.vals = root

    def _finish(self, k: int, unit: Unit) -> None:
        """A delivered op is done: its outputs go where its type sends them."""
        iteration, i = self.frames.locate(k)
        outs = unit.step.out_slots
        self.done_ops += 1
        self.frames.finished(iteration, i, bool(outs) and iteration.vals[outs[0]] is DEAD)
