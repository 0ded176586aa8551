"""The stepper's scheduler: a step makes no move until a controller grants one.

A task (or a local session) that a stepper drives runs every step with a
`HeldScheduler`: each op is a move of its own, the step's driver parks
until the controller grants it a move, and every move is logged, so that
going back replays the same moves in the same order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from minitf.framework import errors
from minitf.runtime.core.scheduler import DELIVER, RUN, FifoScheduler, Move, Scheduler


class HeldScheduler(Scheduler):
    """Makes no move until one is granted: the scheduler a stepper puts on every task.

    While held, a step's driver parks in `next_move` until a controller
    `grant` s it a move; completions that arrive meanwhile are collected (they
    become deliverable) and the driver parks again. `settle` waits until every
    running step is parked with nothing new, so a controller reads a state that
    holds still. Released (`hold(False)`), it is the free-running order.

    A held step waits for its moves, not for its run's deadline: a lesson may
    pause as long as it likes. Every op of every step goes through it.

    Args:
        held: Start held (the default) or free-running.
        task: The task's name, which a breakpoint pattern may name.
    """

    observes_ops = True

    def __init__(self, held: bool = True, task: str = ""):
        self._cond = threading.Condition()
        self._held = held
        self.task = task
        self._breakpoints: list[str] = []
        self._executions: dict[int, object] = {}  # by step id, in the order they started
        self._grants: dict[int, Move] = {}
        self._parked: set[int] = set()
        self._in_flight: set[int] = set()
        self.log: list[tuple[int, int, str]] = []
        """Every move made, in order: ``(step id, RUN or DELIVER, op name)``."""

    @property
    def held(self) -> bool:
        """True while moves wait for `grant`."""
        return self._held

    def hold(self, held: bool = True) -> None:
        """Holds (True) or releases (False) every step on this task.

        Args:
            held: True to hold, False to release.
        """
        with self._cond:
            self._held = held
            self._cond.notify_all()

    def set_breakpoints(self, patterns: list[str]) -> None:
        """Released steps stop (and this task is held) before an op matching any pattern.

        A pattern matches an op whose name contains it, whose type equals it,
        or whose task it names (``worker:1``, ``/job:worker/task:1``).

        Args:
            patterns: The patterns (see `matches`).
        """
        with self._cond:
            self._breakpoints = list(patterns)

    def executions(self) -> dict:
        """The running steps' executions by step id (a snapshot)."""
        with self._cond:
            return dict(self._executions)

    def grant(self, step_id: int, move: Move) -> None:
        """Lets step ``step_id`` make ``move`` (it is made by the step's own thread).

        Args:
            step_id: The step.
            move: ``(RUN or DELIVER, plan step index)``.

        Raises:
            ValueError: if no such step runs here, or the move is not possible now.
        """
        with self._cond:
            execution = self._executions.get(step_id)
            if execution is None:
                raise ValueError(f"no step {step_id} is running here")
            candidates = execution.arrived if move[0] == DELIVER else execution.ready
            if move[1] not in candidates:
                verb = "deliver" if move[0] == DELIVER else "run"
                raise ValueError(
                    f"cannot {verb} {execution.steps[move[1]].op.name} in step {step_id} now"
                )
            self._grants[step_id] = move
            self._parked.discard(step_id)
            self._cond.notify_all()

    def settle(self, timeout: float) -> bool:
        """Waits until every running step is parked with no move pending; False on timeout.

        Args:
            timeout: Seconds to wait.
        """
        with self._cond:
            return self._cond.wait_for(self._settled, timeout)

    def wait_for_step(self, timeout: float) -> bool:
        """Waits until a step is running here and settled (False on timeout).

        Args:
            timeout: Seconds to wait.
        """
        with self._cond:
            return self._cond.wait_for(lambda: self._executions and self._settled(), timeout)

    def _settled(self) -> bool:
        return all(s in self._parked for s in self._executions) and not self._grants

    def started(self, execution) -> None:
        """Registers ``execution`` so that moves can be granted to it.

        Args:
            execution: The step's `minitf.runtime.core.execution.StepExecution`.
        """
        with self._cond:
            self._executions[execution.ctx.step_id] = execution
            execution.on_arrival = self._wake
            execution.ctx.defer_attempts = True
            self._cond.notify_all()
        # A cancelled step (a closed session, an error on another task) must not
        # stay parked: wake it so that it fails.
        execution.ctx.cancellation.register(self._wake)

    def finished(self, execution) -> None:
        """Forgets ``execution`` and its pending grant.

        Args:
            execution: The step's `minitf.runtime.core.execution.StepExecution`.
        """
        step_id = execution.ctx.step_id
        with self._cond:
            self._executions.pop(step_id, None)
            self._grants.pop(step_id, None)
            self._parked.discard(step_id)
            self._in_flight.discard(step_id)
            self._cond.notify_all()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def next_move(self, execution) -> Move | None:
        """The granted move (parking until there is one), or the free-running one when released.

        Args:
            execution: The `StepExecution` asking.

        Raises:
            CancelledError: if the step is cancelled while it is held.
        """
        step_id = execution.ctx.step_id
        with self._cond:
            self._in_flight.discard(step_id)
            while True:
                if execution.ctx.cancellation.is_cancelled:
                    raise errors.CancelledError(
                        None, None, "The step was cancelled while the stepper held it"
                    )
                if execution.has_news:
                    execution.collect()
                if not self._held:
                    if self._in_flight:
                        # Free-running, one move at a time on this task: the log's
                        # order is then the order the moves happened in, which a
                        # replay (`back`, a recording) must follow.
                        self._cond.wait()
                        continue
                    move = FifoScheduler.next_move(self, execution)
                    if move is not None and move[0] == RUN and self._breaks(execution, move[1]):
                        self._held = True  # stop before it: the controller decides
                        continue
                    if move is None:
                        self._parked.add(step_id)
                        self._cond.notify_all()
                        return None  # the driver waits for a completion itself
                else:
                    move = self._grants.pop(step_id, None)
                if move is not None:
                    self._parked.discard(step_id)
                    self._in_flight.add(step_id)
                    self.log.append((step_id, move[0], execution.steps[move[1]].op.name))
                    self._cond.notify_all()
                    return move
                if step_id not in self._parked:
                    self._parked.add(step_id)
                    self._cond.notify_all()
                self._cond.wait()

    def _breaks(self, execution, index: int) -> bool:
        op = execution.steps[index].op
        return any(matches(p, op.name, op.type, self.task) for p in self._breakpoints)


def matches(pattern: str, op_name: str, op_type: str, task: str) -> bool:
    """Whether a stepper pattern names this op: part of its name, its type, or its task.

    ``worker:1`` and ``/job:worker/task:1`` both name ``/job:worker/replica:0/task:1``.

    Args:
        pattern: The pattern.
        op_name: The op's name.
        op_type: The op's type.
        task: The op's task (``/job:worker/replica:0/task:1``), or empty.
    """
    if pattern == op_type or pattern in op_name:
        return True
    job, _, index = pattern.strip("/").replace("job:", "").partition(":")
    index = index.replace("task:", "").replace("/", "")
    return bool(task) and task == f"/job:{job}/replica:0/task:{index}"


class _HeldSessions:
    """The local sessions a stepper in this process steps (`hold_local_sessions`)."""

    def __init__(self, breakpoints: list[str]):
        self.breakpoints = breakpoints
        self.sessions: list = []


_held: _HeldSessions | None = None
_held_lock = threading.Lock()


def hold_local_sessions(breakpoints: Iterable[str] = ()) -> list:
    """Every local session made from now on holds its steps for a stepper in this process.

    ``minitf step SCRIPT`` without a cluster runs the script in its own
    process this way: the script's sessions are made as usual and each
    waits for the stepper's moves (running free until one of
    ``breakpoints`` when there are some). A session given a ``scheduler=``
    keeps it.

    Args:
        breakpoints: Op-name patterns (see `HeldScheduler.set_breakpoints`);
            with some, the sessions run free until an op matches one.

    Returns:
        The list the sessions are appended to, in the order they are made.
    """
    global _held
    with _held_lock:
        _held = _HeldSessions([b for b in breakpoints if b])
        return _held.sessions


def release_local_sessions() -> None:
    """Sessions made from now on run free again (`hold_local_sessions` undone)."""
    global _held
    with _held_lock:
        _held = None


def for_local_session(session, local_task: str) -> tuple[HeldScheduler, str] | None:
    """A new local session's held scheduler and task name while `hold_local_sessions` is on.

    Args:
        session: The new session (collected for the stepper).
        local_task: The name of a local session's task.

    Returns:
        ``(scheduler, the session's task name)``, or None when sessions run free.
    """
    with _held_lock:
        if _held is None:
            return None
        name = local_task
        if _held.sessions:  # the second session of a script is a task of its own
            name = f"{local_task} #{len(_held.sessions) + 1}"
        scheduler = HeldScheduler(held=not _held.breakpoints, task=name)
        scheduler.set_breakpoints(_held.breakpoints)
        _held.sessions.append(session)
    return scheduler, name
