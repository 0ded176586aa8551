"""Schedulers: who decides the order of everything a step does.

A step's execution (`minitf.runtime.core.execution.StepExecution`) can make two
kinds of move:

* **run** a ready op — one whose inputs and control inputs are all done;
* **deliver** a completion — an op that waited (a dequeue, a ``take_grad``,
  a ``_Recv``) has finished on the resource, and its outputs are handed to
  the step, which may make its consumers ready.

A `Scheduler` chooses the next move every time, so the order of every
observable event of a step is chosen in one place — and can be recorded and
replayed. The driver (`minitf.runtime.core.executor.Executor`) asks
``next_move(execution)`` until the step is done; when the scheduler returns
None nothing can move now, and the driver waits for a completion to arrive.
`FifoScheduler` is the free-running order; a stepper's scheduler waits for
a teacher's keystroke instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minitf.runtime.core.execution import StepExecution

RUN = 0
"""A move that runs the ready op ``index``."""
DELIVER = 1
"""A move that delivers the arrived completion of op ``index``."""

Move = tuple[int, int]
"""``(RUN or DELIVER, plan step index)``."""


class Scheduler:
    """Chooses the next move of a step's execution."""

    observes_ops = False
    """True if every op must be a move of its own (no straight-line walk)."""

    runs_steps = False
    """True if the scheduler makes every move of the steps its tasks start, on a loop of
    its own (a simulated cluster's, on virtual time): it then has a task loop's ``start(run)``
    and ``take_up(run)``, and ends each run by its ``settle`` or ``fail``."""

    def started(self, execution: StepExecution) -> None:
        """Called once before the first move of ``execution``.

        Args:
            execution: The step's `minitf.runtime.core.execution.StepExecution`.
        """

    def finished(self, execution: StepExecution) -> None:
        """Called once when ``execution`` is done (or failed).

        Args:
            execution: The step's `minitf.runtime.core.execution.StepExecution`.
        """

    def next_move(self, execution: StepExecution) -> Move | None:
        """The next move, or None if nothing can move now (the driver then waits).

        Args:
            execution: The `StepExecution`; its ``ready`` and ``arrived``
                deques hold the candidates, in the order they became so.
        """
        raise NotImplementedError


class FifoScheduler(Scheduler):
    """The free-running order: completions as they arrived, then ready ops as they became ready."""

    def next_move(self, execution: StepExecution) -> Move | None:
        if execution.arrived:
            return (DELIVER, execution.arrived[0])
        if execution.ready:
            return (RUN, execution.ready[0])
        return None
