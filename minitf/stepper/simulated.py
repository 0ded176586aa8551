"""Stepping a script on a simulated cluster: `SimulatedStepper`.

The script runs as it runs under ``minitf launch``, but on a
`minitf.cluster.SimulatedCluster` in this process: every task a `Worker`,
every session's steps through the same master, every move made by the
simulation's loop in virtual-time order. The stepper holds that loop before
each move (`minitf.runtime.distributed.simulation.Simulation.gate`), so
`next` makes exactly the move the free run would make next, and a run is
the same move for move every time.

`back` is a re-simulation: the script runs again on a new simulated cluster
with the same seed, which makes the same moves, and is held again where the
stepper was the given number of moves ago. Nothing is started but threads,
so going back takes a fraction of a second.

`next` and `until` take no task: the order of a simulated cluster's moves is
its virtual time, and a move chosen out of that order would be a run the
simulation never makes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import TextIO

from minitf.cluster.simulated import SimulatedCluster
from minitf.framework import errors
from minitf.platform import app
from minitf.runtime.core.held_scheduler import matches
from minitf.runtime.distributed.simulation import Abandoned
from minitf.runtime.distributed.stepping import Stepping
from minitf.stepper.controller import Stepper, _global_step, closest


class ScriptError(RuntimeError):
    """The stepped script raised: the message is its traceback, without minitf's frames."""


class _Run:
    """The script on a new simulated cluster, in a thread, its loop held before each move.

    Args:
        script: The script's path.
        tasks: ``{"ps": 1, "worker": 2}``.
        args: The script's own arguments.
        seed: The simulated cluster's seed.
        breaks: Patterns: run free until an op matching one is about to move.
        skip: Make this many moves free first, then hold (a re-simulation).
        output: Where the script's output goes (default: stdout).
    """

    def __init__(
        self, script: str, tasks: dict[str, int], args: Sequence[str], seed: int,
        breaks: Sequence[str], skip: int, output: TextIO | None,
    ):  # fmt: skip
        self.cluster = SimulatedCluster(tasks, seed=seed)
        self.simulation = self.cluster.simulation
        self.simulation.gate = self._gate
        self.made = 0  # moves made so far
        self.pending: dict | None = None  # the move held, about to be made
        self.ended = False
        self.error: BaseException | None = None
        self._breaks = list(breaks)
        self._skip = skip
        self._granted = self._released = self._abandoned = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(
            target=self._main, args=(script, list(args), output), name="minitf step: simulation",
            daemon=True,
        )  # fmt: skip
        self._thread.start()

    def _main(self, script: str, args: list[str], output: TextIO | None) -> None:
        try:
            self.cluster.run(script, args, output=output)
        except Abandoned:
            pass
        except BaseException as exc:  # noqa: BLE001 - the script's error, shown by `wait`
            self.error = exc
        finally:
            with self._cond:
                self.ended = True
                self.pending = None
                self._cond.notify_all()

    def _gate(self, move: dict) -> None:
        """Before every move (on the simulation's loop): hold it until it is granted."""
        with self._cond:
            if self._holds(move):
                self.pending = move
                self._cond.notify_all()
                while not (self._granted or self._released or self._abandoned):
                    self._cond.wait()
                self.pending = None
                self._granted = False
                if self._abandoned:
                    raise Abandoned
            self.made += 1

    def _holds(self, move: dict) -> bool:
        if self._released or self.made < self._skip:
            return False
        if self._breaks:
            if not any(matches(p, move["op"], move["type"], move["task"]) for p in self._breaks):
                return False
            self._breaks = []  # held from the first breakpoint on
        return True

    def settle(self, timeout: float | None = None) -> dict | None:
        """Waits until a move is held (returns it) or the run has ended (None).

        Raises:
            DeadlineExceededError: if neither happens within ``timeout`` seconds.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self.pending is not None or self.ended, timeout):
                raise errors.DeadlineExceededError(
                    None, None, f"the simulated run reached no move in {timeout:.0f} s"
                )
            return self.pending

    def grant(self, timeout: float = 120.0) -> None:
        """Lets the held move be made, and waits until the next is held or the run ends.

        Raises:
            DeadlineExceededError: if neither happens within ``timeout`` seconds
                (a client that never waits for a step again).
        """
        with self._cond:
            self._granted = True
            self._cond.notify_all()
            self._cond.wait_for(lambda: not self._granted or self.ended, timeout)
        self.settle(timeout)

    def release(self) -> None:
        """Lets the run go on free to its end."""
        with self._cond:
            self._released = True
            self._cond.notify_all()

    def abandon(self) -> None:
        """Gives the run up: its loop and its scripts' threads end."""
        with self._cond:
            self._abandoned = True
            self._cond.notify_all()
        if self.pending is None and not self.ended:
            self.simulation.abandon()  # it has not reached a move yet
        self._thread.join(30.0)

    def wait(self, timeout: float | None = None) -> int:
        """Waits for the run to end; returns 0, or 1 if a script failed."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the simulated run did not end in {timeout} s")
        if self.error is not None:
            print(f"the script failed: {self.error}", file=sys.stderr)
        return 0 if self.error is None else 1


class _TaskView:
    """One simulated task as a stepper reads it: its running steps, held still."""

    held = True

    def __init__(self, run: _Run, task: str):
        self._run = run
        self._task = task

    def executions(self) -> dict:
        return self._run.simulation.executions(self._task)

    def grant(self, *args) -> None:
        raise errors.FailedPreconditionError(
            None, None, "a simulated task's moves are the simulation's: use the stepper's next"
        )


class _SimulatedTask:
    """A stepper's link to one task of the current simulated run (`Stepping` on a `_TaskView`)."""

    def __init__(self, stepper: SimulatedStepper, name: str):
        self.name = name
        self._stepper = stepper

    def call(self, method: str, *args, timeout: float = 30.0):
        run = self._stepper._run
        worker = run.simulation.worker(self.name)
        graphs = worker.stepping.graphs  # what clients registered on the simulated task
        stepping = Stepping(self.name, _TaskView(run, self.name), worker.resource_mgr, graphs)
        return getattr(stepping, method)(*args)

    def close(self) -> None:
        pass


class SimulatedStepper(Stepper):
    """Steps a script on a simulated cluster, one move at a time, in virtual-time order.

    Every command of `Stepper` works as it does on real processes, with two
    differences: `next` and `until` make the simulation's moves in the order
    it makes them (no task can be chosen), and `back` re-simulates.

    Args:
        script: The TF1 script every task runs (as ``minitf launch`` runs it).
        tasks: ``{"ps": 1, "worker": 2}``.
        args: The script's own arguments.
        breaks: Patterns: the run goes free until an op matching one is about to move.
        seed: The simulated cluster's seed (its workers' delays, if any).
        output: Where the script's output goes (default: stdout).
        break_timeout: Seconds to wait for the first held move.

    Raises:
        FileNotFoundError: if there is no such script.
        DeadlineExceededError: if the run reaches no move within ``break_timeout``.
    """

    def __init__(
        self,
        script: str,
        tasks: dict[str, int],
        args: Sequence[str] = (),
        breaks: Sequence[str] = (),
        seed: int = 0,
        output: TextIO | None = None,
        break_timeout: float = 120.0,
    ):
        super().__init__([])
        with open(script, encoding="utf-8"):
            pass  # FileNotFoundError now, not in the run's thread
        self._simulated = (script, {j: n for j, n in tasks.items() if n}, list(args), seed, output)
        self._run = _Run(*self._simulated[:4], breaks, 0, output)
        self._tasks = {name: _SimulatedTask(self, name) for name in self._run.simulation.tasks()}
        self._settle_run(break_timeout)
        self._base = self._run.made  # moves made free before the stepper took over
        if self._run.ended:
            self._ended_at_start(script, breaks)

    def _ended_at_start(self, script: str, breaks: Sequence[str]) -> None:
        """The run ended before the stepper could hold it: say why, in words."""
        error = self._run.error
        if error is not None:
            task = self._run.cluster.failed_task
            raise ScriptError(app.script_traceback(error, script, task).rstrip())
        if breaks:
            known = {tuple(op) for t in self._tasks.values() for op in t.call("known_ops")}
            hint = closest(breaks[0], known)
            raise ValueError(f"no op matched --break {' '.join(breaks)} before the run ended{hint}")

    @property
    def time(self) -> float:
        """The simulated cluster's virtual time (seconds)."""
        return self._run.simulation.clock.now()

    def state(self, limit: int = 16) -> dict:
        """Every task's running steps and resources, the global step, the moves so far.

        As `Stepper.state`, plus ``"time"`` (virtual seconds); ``candidates``
        holds the one move the simulation makes next (none once the run has ended).

        Args:
            limit: Queue elements shown per queue; larger variables show only their shape.
        """
        tasks = []
        for name, task in self._tasks.items():
            if self._run.ended:
                tasks.append({"task": name, "held": False, "ended": True, "steps": [],
                              "resources": task.call("state", limit)["resources"]})  # fmt: skip
            else:
                tasks.append(task.call("state", limit))
        pending = self._run.pending
        return {
            "tasks": tasks,
            "global_step": _global_step(tasks),
            "moves": len(self.events),
            "candidates": [] if pending is None else [self._candidate(pending)],
            "time": self.time,
        }

    def back(self, moves: int = 1) -> list[dict]:
        """Undoes the last ``moves`` moves by simulating the run again up to there.

        Args:
            moves: How many moves to undo.

        Raises:
            ValueError: if fewer than ``moves`` moves were made.
        """
        if not 1 <= moves <= len(self.events):
            raise ValueError(f"cannot go back {moves} move(s): {len(self.events)} made so far")
        keep = len(self.events) - moves
        self._run.abandon()
        script, tasks, args, seed, output = self._simulated
        self._run = _Run(script, tasks, args, seed, (), self._base + keep, output)
        self._settle_run(120.0)
        self.events = self.events[:keep]
        if self.on_move is not None:
            self.on_move(None)
        return self.events

    def schedule(self, moves: int | None = None) -> dict[str, list]:
        """Each task's moves so far, as real tasks would make them (`SimulatedCluster.schedule`).

        Args:
            moves: Ignored: the schedule is the whole run's so far.
        """
        return self._run.simulation.schedule()

    def recording(self) -> tuple[dict[str, list], list[str]]:
        """Each task's moves so far and the task of every move in order (`Stepper.follow`).

        Returns:
            ``(schedule, order)``: what real tasks replay to make this run's
            moves in its order.
        """
        return self._run.simulation.schedule_and_order()

    def continue_(self) -> None:
        """Lets the run go on free to its end."""
        self._run.release()

    def hold(self) -> None:
        """Nothing to do: a simulated run is held whenever the stepper is not moving it."""

    def wait(self, timeout: float | None = None) -> int:
        """Waits for the run to end (after `continue_`); returns 0, or 1 if a script failed.

        Args:
            timeout: Seconds to wait, or None for no limit.
        """
        return self._run.wait(timeout)

    def script_ended(self) -> bool:
        """Whether the simulated run has ended."""
        return self._run.ended

    def exit_code(self) -> int | None:
        """The run's exit code once it has ended, else None."""
        if not self._run.ended:
            return None
        return 0 if self._run.error is None else 1

    def close(self) -> None:
        """Gives a run still held up (its scripts' threads end)."""
        if not self._run.ended and not self._run._released:
            self._run.abandon()

    def wait_for_break(self, timeout: float = 120.0) -> None:
        """Waits until the run holds a move (or has ended).

        Args:
            timeout: Seconds to wait.
        """
        self._settle_run(timeout)

    # -- inside -----------------------------------------------------------------------------

    def _settle_run(self, timeout: float) -> None:
        try:
            self._run.settle(timeout)
        except errors.DeadlineExceededError:
            self._run.abandon()
            raise

    def _settle(self) -> None:
        self._run.settle(self.settle_timeout + 110.0)

    def _log_lengths(self) -> dict[str, int]:
        return {}

    def _first_candidate(self, task: str | None, wait: float) -> dict | None:
        if task is not None:
            raise ValueError(
                "a simulated cluster makes its moves in virtual-time order: `next` makes the "
                "next one, `until PATTERN` runs to an op"
            )
        pending = self._run.settle(max(wait, 120.0))
        return None if pending is None else self._candidate(pending)

    def _candidate(self, move: dict) -> dict:
        """The simulation's next move as a stepper's candidate, with its loop frames."""
        execution = self._run.simulation.executions(move["task"]).get(move["step_id"])
        frames = [] if execution is None else [list(f) for f in execution.where(move["index"])]
        return {**_candidate(move), "frames": frames}

    def _make(self, candidate: dict) -> dict:
        self._run.grant()
        keys = ("task", "step_id", "move", "op", "type", "offer", "time", "frames")
        event = {k: candidate[k] for k in keys}
        self.events.append(event)
        if self.on_move is not None:
            self.on_move(event)
        return event


def _candidate(move: dict) -> dict:
    # A simulated take_grad or dequeue runs inside the move that lets it: never an offer.
    keys = ("task", "step_id", "move", "index", "op", "type", "time")
    return {**{k: move[k] for k in keys}, "offer": False}
