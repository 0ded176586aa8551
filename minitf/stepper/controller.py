"""The stepper's controller: one op at a time, on every task, whoever started the step.

Every task of a stepped cluster runs with a `minitf.runtime.scheduler.HeldScheduler`:
its steps make no move until the controller grants one. The controller asks
each task for its state (`minitf.runtime.worker.Stepping`) — held steps
with their ready, waiting and arrived ops, queues, accumulators, variables —
picks a move and grants it, then waits until every task holds still again.

Moves (the same in the terminal, in a notebook and in the browser):

* `Stepper.next` — one move anywhere, or on one task;
* `Stepper.until` — moves until an op matching a pattern is about to run;
* `Stepper.until_blocked` — moves on one task until nothing there can move;
* `Stepper.step` — moves until the global step reaches a number;
* `Stepper.continue_` — release every task.

The order of candidates is fixed: tasks in cluster order, on each task its
steps in the order they started, in each step completions to deliver (in
arrival order) before ops to run (in the order they became ready).
"""

from __future__ import annotations

import html
import time

from minitf.framework import errors
from minitf.runtime.master import Channel
from minitf.runtime.scheduler import DELIVER, RUN, matches
from minitf.runtime.server import connect_with_retry

MOVE_NAMES = {RUN: "run", DELIVER: "deliver"}


class _RemoteTask:
    """A task of a cluster, reached over the authenticated wire."""

    def __init__(self, task: str, address: str):
        self.name = task
        self._channel = Channel(connect_with_retry(address, task), task)

    def call(self, method: str, *args, timeout: float = 30.0):
        return self._channel.request(lambda c: (f"stepper_{method}", c, *args), timeout)

    def close(self) -> None:
        self._channel.close()


class _LocalTask:
    """A task in this process: a `minitf.runtime.worker.Stepping`."""

    def __init__(self, stepping):
        self.name = stepping.task_name
        self._stepping = stepping

    def call(self, method: str, *args, timeout: float = 30.0):
        return getattr(self._stepping, method)(*args)

    def close(self) -> None:
        pass


class Stepper:
    """Steps a cluster (or a local session) one move at a time.

    Build it with `for_cluster` or `for_session`.

    Args:
        tasks: The tasks' links, in cluster order.
        settle_timeout: Seconds to wait for the tasks to hold still after a move.

    Attributes:
        events: Every move made, in order: ``{"task", "step_id", "move", "op", "type"}``.
    """

    def __init__(self, tasks: list, settle_timeout: float = 10.0, graph=None):
        self._tasks = {t.name: t for t in tasks}
        self.settle_timeout = settle_timeout
        self.events: list[dict] = []
        self.graph = graph

    @classmethod
    def for_cluster(cls, cluster_spec, graph=None) -> Stepper:
        """A stepper on every task of ``cluster_spec`` (started by ``minitf step``).

        Args:
            cluster_spec: The cluster's `ClusterSpec`.
            graph: The graph to draw in `picture` (a client's graph), if any.
        """
        tasks = [
            _RemoteTask(f"/job:{job}/replica:0/task:{i}", cluster_spec.task_address(job, i))
            for job in cluster_spec.jobs
            for i in cluster_spec.task_indices(job)
        ]
        return cls(tasks, graph=graph)

    @classmethod
    def for_session(cls, session) -> Stepper:
        """A stepper on a local ``tf.Session(scheduler=HeldScheduler())``."""
        return cls([_LocalTask(session.stepping)], graph=session.graph)

    def close(self) -> None:
        """Closes the connections (the tasks stay as they are)."""
        for task in self._tasks.values():
            task.close()

    # -- looking ----------------------------------------------------------------------------

    def state(self) -> dict:
        """Every task's held steps and resources, the global step and the moves so far.

        Returns:
            ``{"tasks": [task state], "global_step": int or None, "moves": int,
            "candidates": [candidate]}``; a task state is
            `minitf.runtime.worker.Stepping.state`, a candidate
            ``{"task", "step_id", "move", "index", "op", "type"}``.
        """
        tasks = [task.call("state") for task in self._tasks.values()]
        return {
            "tasks": tasks,
            "global_step": _global_step(tasks),
            "moves": len(self.events),
            "candidates": _candidates(tasks),
        }

    def highlight(self, state: dict | None = None) -> dict[str, str]:
        """``{op name: "done" | "running" | "blocked"}`` for a picture of the held steps.

        "done": ops run by the moves so far; "running": ops about to move
        (ready to run, or with a completion to deliver); "blocked": ops waiting.
        """
        state = state or self.state()
        marks = {e["op"]: "done" for e in self.events if e["move"] == "run"}
        for task in state["tasks"]:
            for step in task["steps"]:
                for op in step["ready"] + step["arrived"]:
                    marks[op["name"]] = "running"
                for op in step["waiting"]:
                    marks[op["name"]] = "blocked"
        return marks

    def picture(self, view: str = "whole", **kwargs):
        """The graph with the held steps highlighted; Jupyter shows it inline.

        Args:
            view: As `minitf.viz.draw`: ``"whole"``, ``"partitioned"`` or a task.
            **kwargs: More arguments for `minitf.viz.draw` (``collapse=``, ...).

        Raises:
            ValueError: if the stepper has no graph (give ``for_cluster`` one).
        """
        from minitf.viz import pictures  # an observer: only the picture needs it

        if self.graph is None:
            raise ValueError("this stepper has no graph to draw: pass graph= to for_cluster")
        return pictures.draw(self.graph, view=view, highlight=self.highlight(), **kwargs)

    def _repr_html_(self) -> str:
        from minitf.stepper.terminal import describe_state

        return f"<pre>{html.escape(describe_state(self.state()))}</pre>"

    # -- moving -----------------------------------------------------------------------------

    def next(self, task: str | None = None, wait: float = 10.0) -> dict | None:
        """Makes one move (on ``task`` if given); returns its event, or None if none came.

        Waits up to ``wait`` seconds for a move to become possible (a client
        starting its next step, a tensor arriving).

        Raises:
            ValueError: for a task pattern that names no task.
        """
        wanted = self._task_name(task) if task is not None else None
        candidate = self._first_candidate(wanted, wait)
        if candidate is None:
            return None
        return self._make(candidate)

    def until(self, pattern: str, max_moves: int = 100_000, wait: float = 10.0) -> list[dict]:
        """Moves until an op matching ``pattern`` is about to run (it does not run).

        A pattern matches part of an op's name, its type, or its task
        (``worker:1``). Returns the events of the moves made.
        """
        made = []
        for _ in range(max_moves):
            candidate = self._first_candidate(None, wait)
            if candidate is None:
                break
            if candidate["move"] == "run" and matches(
                pattern, candidate["op"], candidate["type"], candidate["task"]
            ):
                break
            made.append(self._make(candidate))
        return made

    def until_blocked(self, task: str, max_moves: int = 100_000) -> list[dict]:
        """Moves on ``task`` until nothing there can move: every step there waits."""
        name = self._task_name(task)
        made = []
        for _ in range(max_moves):
            candidate = self._first_candidate(name, wait=0.2)
            if candidate is None:
                break
            made.append(self._make(candidate))
        return made

    def step(self, global_step: int, max_moves: int = 1_000_000, wait: float = 10.0) -> list:
        """Moves until the global step is at least ``global_step``."""
        made = []
        for _ in range(max_moves):
            state = self.state()
            if state["global_step"] is not None and state["global_step"] >= global_step:
                break
            candidate = self._first_candidate(None, wait)
            if candidate is None:
                break
            made.append(self._make(candidate))
        return made

    def continue_(self) -> None:
        """Releases every task and clears its breakpoints: steps run free from now on."""
        for task in self._tasks.values():
            task.call("hold", False, [])

    def hold(self) -> None:
        """Holds every task again (steps stop before their next move)."""
        for task in self._tasks.values():
            task.call("hold", True)

    # -- inside -----------------------------------------------------------------------------

    def _task_name(self, pattern: str) -> str:
        for name in self._tasks:
            if matches(pattern, "", "", name) or pattern == name:
                return name
        raise ValueError(f"no task {pattern!r}; the tasks are {', '.join(self._tasks)}")

    def _settle(self) -> None:
        for task in self._tasks.values():
            task.call("settle", self.settle_timeout, timeout=self.settle_timeout + 5)

    def _first_candidate(self, task: str | None, wait: float) -> dict | None:
        deadline = time.monotonic() + wait
        while True:
            self._settle()
            states = [t.call("state") for name, t in self._tasks.items() if task in (None, name)]
            found = _candidates(states)
            if found:
                return found[0]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)  # a client may be about to start its next step

    def _make(self, candidate: dict) -> dict:
        kind = RUN if candidate["move"] == "run" else DELIVER
        task = self._tasks[candidate["task"]]
        try:
            task.call("grant", candidate["step_id"], kind, candidate["index"], self.settle_timeout)
        except (errors.OpError, ValueError) as exc:
            raise errors.FailedPreconditionError(
                None, None, f"the move {candidate} could not be made: {exc}"
            ) from exc
        self._settle()
        event = {k: candidate[k] for k in ("task", "step_id", "move", "op", "type")}
        self.events.append(event)
        return event


def _candidates(task_states: list[dict]) -> list[dict]:
    found = []
    for state in task_states:
        for step in state["steps"]:
            for move, ops in (("deliver", step["arrived"]), ("run", step["ready"])):
                for op in ops:
                    found.append(
                        {
                            "task": state["task"],
                            "step_id": step["step_id"],
                            "move": move,
                            "index": op["index"],
                            "op": op["name"],
                            "type": op["type"],
                        }
                    )
    return found


def _global_step(task_states: list[dict]) -> int | None:
    for state in task_states:
        for resource in state["resources"]:
            if resource.get("kind") == "variable" and resource["name"] == "global_step":
                value = resource.get("value")
                return None if value is None else int(value)
    return None
