"""The stepper's controller: one op at a time, on every task, whoever started the step.

Every task of a stepped cluster runs with a `minitf.runtime.core.held_scheduler.HeldScheduler`:
its steps make no move until the controller grants one. The controller asks
each task for its state (`minitf.runtime.distributed.worker.Stepping`) — held steps
with their ready, waiting and arrived ops, queues, accumulators, variables —
picks a move and grants it, then waits until every task holds still again.

Moves (the same in the terminal, in a notebook and in the browser):

* `Stepper.next` — one move anywhere, or on one task;
* `Stepper.until` — moves until an op matching a pattern is about to move;
* `Stepper.until_iteration` — moves until an iteration of a loop starts;
* `Stepper.until_blocked` — moves on one task until nothing there can move;
* `Stepper.step` — moves until the global step reaches a number;
* `Stepper.continue_` — release every task;
* `Stepper.back` — undo moves: the cluster is started again and every task's
  recorded moves are replayed, so it reaches the same state (a stepper that
  started its cluster with `Stepper.launch`).

The order of candidates is fixed: tasks in cluster order, on each task its
steps in the order of their ids (the same in every run of a script), in
each step completions to deliver (in arrival order) before ops to run (in
the order they became ready).
"""

from __future__ import annotations

import difflib
import html
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from minitf.cluster.task_env import BREAK_ENV, STEPPER_ENV
from minitf.framework import errors
from minitf.runtime.core.held_scheduler import matches
from minitf.runtime.core.scheduler import DELIVER, RUN
from minitf.runtime.core.watch import describe_wait
from minitf.runtime.distributed.connect import connect_with_retry
from minitf.runtime.distributed.launcher import LocalCluster, load_recording
from minitf.runtime.distributed.partition import import_partition, parse_task
from minitf.runtime.distributed.step_ids import INCARNATION_ENV, REPLAYABLE
from minitf.runtime.distributed.transport import Channel
from minitf.stepper.describe import describe_state, loop_name

if TYPE_CHECKING:
    from minitf.framework.ops import Graph
    from minitf.runtime.core.session import BaseSession
    from minitf.runtime.distributed.cluster_spec import ClusterSpec
    from minitf.viz.render import GraphPicture

MOVE_NAMES = {RUN: "run", DELIVER: "deliver"}


logger = logging.getLogger("minitf")


class _RemoteTask:
    """A task of a cluster, reached over the authenticated wire."""

    def __init__(self, task: str, wire):
        self.name = task
        self._channel = Channel(wire, task)

    def call(self, method: str, *args, timeout: float = 30.0):
        return self._channel.request(lambda c: (f"stepper_{method}", c, *args), timeout)

    def close(self) -> None:
        self._channel.close()


class _LocalTask:
    """A task in this process: a `minitf.runtime.distributed.worker.Stepping`."""

    def __init__(self, stepping):
        self.name = stepping.task_name
        self._stepping = stepping

    def call(self, method: str, *args, timeout: float = 30.0):
        return getattr(self._stepping, method)(*args)

    def close(self) -> None:
        pass


class Stepper:
    """Steps a cluster (or a local session) one move at a time.

    Build it with `launch`, `for_cluster`, `for_session` or `for_local_sessions`.

    Args:
        tasks: The tasks' links, in cluster order.
        settle_timeout: Seconds to wait for the tasks to hold still after a move.
        graph: The graph `picture` draws, if any.
        discover: Returns the links of tasks that appeared since (local sessions).

    Attributes:
        events: Every move made, in order: ``{"task", "step_id", "move", "op", "type",
            "offer", "frames"}`` (``offer``: a delivery that runs the op that waited;
            ``frames``: ``[[frame name, iteration], ...]`` of a move in a
            ``tf.while_loop``, outermost first, else empty).
        on_move: Called with each event after its move (a page showing the state live).
        cluster: The `LocalCluster` this stepper started (`launch`), or None.
    """

    def __init__(
        self,
        tasks: list,
        settle_timeout: float = 10.0,
        graph: Graph | None = None,
        discover: Callable[[], list] | None = None,
    ):
        self._tasks = {t.name: t for t in tasks}
        self.settle_timeout = settle_timeout
        self.events: list[dict] = []
        self.graph = graph
        self.on_move = None
        self.cluster: LocalCluster | None = None
        self._discover = discover
        self._launch_args: dict | None = None
        # Every task's log length when stepping began, and after each event: the
        # points `back` can return to.
        self._start_marks: dict[str, int] = {}
        self._marks: list[dict[str, int]] = []
        # A recording being stepped (Stepper.replay): each task's moves, in order.
        self._recording: dict[str, list[tuple]] | None = None
        self._order: list[str] | None = None  # the task of each recorded move, in order
        # Says whether the stepped script has ended, where no cluster tells (local sessions).
        self.ended_when: Callable[[], bool] | None = None
        self._known_lengths: dict[str, int] = {}  # each task's log length when last asked
        self._ended: dict[str, int] = {}  # tasks whose processes finished: their last length

    @classmethod
    def launch(
        cls,
        script: str,
        tasks: dict[str, int],
        args: Sequence[str] = (),
        breaks: Sequence[str] = (),
        output: TextIO | None = None,
        schedule: dict | None = None,
        break_timeout: float = 120.0,
    ) -> Stepper:
        """Starts ``script`` as a local cluster whose every task is held; returns its stepper.

        Args:
            script: The TF1 script every task runs (as ``minitf launch`` runs it).
            tasks: ``{"ps": 1, "worker": 2}``.
            args: The script's own arguments.
            breaks: Patterns: the tasks run free until an op matching one is
                about to run (then every task is held).
            output: Where the tasks' output goes (default: stdout).
            schedule: Moves to replay first (`schedule` of an earlier stepper
                of the same script): the run reaches the same state.
            break_timeout: Seconds to wait for a breakpoint.
        """
        stepper = cls([])
        stepper._launch_args = {
            "script": script,
            "tasks": {job: n for job, n in tasks.items() if n},
            "args": list(args),
            "output": output,
        }
        stepper._start(list(breaks) if schedule is None else [], break_timeout)
        if schedule is not None:
            stepper._replay(schedule)
            stepper._start_marks = {name: len(moves) for name, moves in schedule.items()}
        return stepper

    @classmethod
    def replay(
        cls,
        recording: str,
        moves: int | None = 0,
        output: TextIO | None = None,
        break_timeout: float = 120.0,
    ) -> Stepper:
        """Starts a recorded run again, held at its start, to step along the recording.

        ``recording`` is a file ``LocalCluster(record=...)`` or ``minitf
        launch --record`` wrote. From here every move follows it: `next`,
        `until` and `step` make, on each task, the move the task made next in
        the recording, so the run goes the same way with the same values;
        `back` steps backwards; `continue_` makes the rest of the recorded
        moves, then lets the run finish.

        Args:
            recording: The file.
            moves: How many recorded moves to make at once (None: all of them).
            output: Where the tasks' output goes.
            break_timeout: Passed on to `launch`; a replay sets no breakpoints, so it
                does not wait for one.

        Raises:
            ValueError: if the file is not a recording.
            FailedPreconditionError: if the run goes another way than recorded
                (a script that decides by the clock).
        """
        data = load_recording(recording)
        stepper = cls.launch(
            data["script"], data["tasks"], data["args"], output=output, break_timeout=break_timeout
        )
        stepper._recording = {
            task: [tuple(move) for move in log] for task, log in data["moves"].items()
        }
        if moves is None:
            stepper._replay(stepper._recorded_rest())
        else:
            for _ in range(moves):
                if stepper.script_ended() or stepper.next() is None:
                    break
        return stepper

    def follow(self, moves: dict[str, list], order: list[str] | None = None) -> None:
        """Steps along a recorded run from here: each move is the one the recording made next.

        Args:
            moves: Each task's recorded moves from the run's start
                (``{task: [(step id, RUN or DELIVER, op name), ...]}``).
            order: The task of each recorded move, in the order they were
                made (a simulated run's, `SimulatedStepper.recording`): moves
                then follow that order across tasks too, so two runs step
                the same way whatever the processes' timing.
        """
        self._recording = {task: [tuple(m) for m in log] for task, log in moves.items()}
        self._order = list(order) if order is not None else None

    @property
    def recording_done(self) -> bool:
        """True when stepping a recording whose every move has been made."""
        return self._recording is not None and not self._recorded_rest()

    def _turn(self, made: dict[str, int]) -> str | None:
        """The task whose move the recording's order makes next, if it has an order.

        Args:
            made: Each task's moves so far (`_log_lengths`).
        """
        if self._order is None:
            return None
        count = sum(made.values())
        return self._order[count] if count < len(self._order) else None

    def _recorded_rest(self, made: dict[str, int] | None = None) -> dict[str, list[tuple]]:
        """Each task's recorded moves it has not made yet (``made``: `_log_lengths`, if known)."""
        if self._recording is None:
            return {}
        made = self._log_lengths() if made is None else made
        return {
            task: log[made.get(task, 0) :]
            for task, log in self._recording.items()
            if made.get(task, 0) < len(log)
        }

    @classmethod
    def for_cluster(cls, cluster_spec: ClusterSpec, graph: Graph | None = None) -> Stepper:
        """A stepper on every task of a running ``cluster_spec`` (started held).

        Args:
            cluster_spec: The cluster's `ClusterSpec`.
            graph: The graph to draw in `picture` (a client's graph), if any.
        """
        return cls(_remote_tasks(cluster_spec), graph=graph)

    @classmethod
    def for_session(cls, session: BaseSession) -> Stepper:
        """A stepper on a local ``tf.Session(scheduler=HeldScheduler())``.

        Args:
            session: The session, made with ``scheduler=HeldScheduler()``.
        """
        return cls([_LocalTask(session.stepping)], graph=session.graph)

    @classmethod
    def for_local_sessions(cls, sessions: list) -> Stepper:
        """A stepper on the sessions `held_scheduler.hold_local_sessions` collects.

        Sessions made later (the script is still running) join as they appear.

        Args:
            sessions: The list `hold_local_sessions` returned.
        """
        known: set[int] = set()

        def discover():
            found = [s for s in list(sessions) if id(s) not in known]
            known.update(id(s) for s in found)
            return [_LocalTask(s.stepping) for s in found]

        return cls([], discover=discover)

    def close(self) -> None:
        """Closes the connections (the tasks stay as they are, and a held one runs free)."""
        for task in self._tasks.values():
            task.close()

    def wait(self, timeout: float | None = None) -> int:
        """Waits for the script of a `launch` ed cluster to end; returns its exit code.

        Args:
            timeout: Seconds to wait, or None for no limit.

        Raises:
            ValueError: if this stepper did not start its cluster.
            subprocess.TimeoutExpired: if the script does not end in time.
        """
        if self.cluster is None:
            raise ValueError("this stepper did not start its cluster: nothing to wait for")
        return self.cluster.wait(timeout)

    def wait_for_break(self, timeout: float = 120.0) -> None:
        """Waits until a task stops at a breakpoint, then holds every task.

        Args:
            timeout: Seconds to wait.

        Raises:
            DeadlineExceededError: if no task stops within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(t["held"] and t["steps"] for t in self.state()["tasks"]):
                self.hold()
                self._settle()
                self._start_marks = self._log_lengths()
                return
            self._check_still_running()
            time.sleep(0.05)  # the tasks run free until then; nothing to wait on here
        raise errors.DeadlineExceededError(
            None, None, f"no task reached a breakpoint in {timeout:.0f} s: is the pattern right?"
        )

    def _check_still_running(self) -> None:
        """Raises, in one line, if a task of the script failed or every worker has ended."""
        failed = []
        if self.cluster is not None:
            failed = [(t, c) for t, c in self.cluster.poll().items() if c not in (None, 0)]
        if failed:
            (job, index), code = failed[0]
            raise errors.FailedPreconditionError(
                None, None,
                f"the script failed on {job}:{index} (exit code {code}) before any op matched "
                "the breakpoint: its output is above",
            )  # fmt: skip
        if self.script_ended():
            raise errors.FailedPreconditionError(
                None, None, "the script ended before any op matched the breakpoint: is it right?"
            )

    # -- looking ----------------------------------------------------------------------------

    def state(self, limit: int = 16) -> dict:
        """Every task's held steps and resources, the global step and the moves so far.

        Args:
            limit: Queue elements shown per queue; variables with more numbers
                show only their shape.

        Returns:
            ``{"tasks": [task state], "global_step": int or None, "moves": int,
            "candidates": [candidate]}``; a task state is
            `minitf.runtime.distributed.worker.Stepping.state`, a candidate
            ``{"task", "step_id", "move", "index", "op", "type", "offer", "frames"}``.
        """
        self._refresh()
        tasks = [self._task_state(task, limit) for task in self._tasks.values()]
        return {
            "tasks": tasks,
            "global_step": _global_step(tasks),
            "moves": len(self.events),
            "candidates": _candidates(tasks),
        }

    def _task_state(self, task, limit: int) -> dict:
        """One task's state; a task whose process has ended (a finished worker) is shown so."""
        if task.name not in self._ended:
            state = self._ask(task, "state", limit)
            if state is not None:
                return state
        return {"task": task.name, "held": False, "ended": True, "steps": [], "resources": []}

    def highlight(self, state: dict | None = None) -> dict[str, str]:
        """``{op name: "done" | "running" | "blocked"}`` for a picture of the held steps.

        "done": ops run by the moves so far; "running": ops about to move
        (ready to run, or with a completion to deliver); "blocked": ops waiting.

        Args:
            state: A `state` (default: the current one).
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

    def step_highlight(self, task: str, step: dict) -> dict[str, str]:
        """`highlight` for one held step on one task (a step state from `state`).

        "done" is every op the step has finished, moves made before a
        breakpoint included.

        Args:
            task: The task's full name.
            step: The step's state (from `state`).
        """
        marks = dict.fromkeys(step["ran"], "done")
        for op in step["ready"] + step["arrived"]:
            marks[op["name"]] = "running"
        for op in step["waiting"]:
            marks[op["name"]] = "blocked"
        return marks

    def step_pictures(
        self,
        state: dict | None = None,
        collapse: str | list[str] | int | None = None,
        highlight: bool = True,
    ) -> list[dict]:
        """One picture per held step on each task: the ops it runs there, outlined.

        Args:
            state: A `state` (default: the current one).
            collapse: Name scopes to fold (as `minitf.viz.draw`).
            highlight: Outline what ran, what is about to move and what waits.

        Returns:
            ``[{"task", "step_id", "client", "picture"}]`` where ``picture`` is a
            `minitf.viz.render.GraphPicture` (Jupyter shows it inline).
        """
        state = state or self.state()
        return [
            {
                "task": task["task"],
                "step_id": step["step_id"],
                "client": step["client"],
                "picture": self.step_picture(task["task"], step, highlight, collapse),
            }
            for task in state["tasks"]
            for step in task["steps"]
        ]

    def step_picture(
        self,
        task: str,
        step: dict | int,
        highlight: bool = True,
        collapse: str | list[str] | int | None = None,
    ) -> GraphPicture:
        """The ops one held step runs on ``task``, outlined as `step_highlight` says.

        Args:
            task: The task's full name.
            step: The step's state (from `state`), or its id (then nothing is outlined).
            highlight: Outline what ran, what is about to move and what waits.
            collapse: Name scopes to fold (as `minitf.viz.draw`).

        Returns:
            A `minitf.viz.render.GraphPicture`.
        """
        from minitf.viz import dot  # an observer: only pictures need it
        from minitf.viz.render import GraphPicture

        step_id = step if isinstance(step, int) else step["step_id"]
        marks = self.step_highlight(task, step) if highlight and isinstance(step, dict) else None
        # The task sends its part of the step as data; it is drawn here.
        described = self._tasks[task].call("step_graph", step_id)
        graph = import_partition(described["nodes"])
        shown = [graph.get_operation_by_name(name) for name in described["ops"]]
        return GraphPicture(dot.graph_dot(graph, shown, highlight=marks, collapse=collapse))

    def overview(self, state: dict | None = None) -> tuple[str, dict[str, str]]:
        """One picture of every held step on every task, Send joined to Recv: the page's main view.

        Drawn as a slide draws a partitioned step (scopes that only compute
        folded, repeated ops as one box), with a cluster per task and, where
        a task runs several steps, one per step.

        Args:
            state: A `state` (default: the current one).

        Returns:
            ``(DOT text, {op key: DOT id})``. An op's key is
            ``"TASK|STEP|OP"``: the task's short name (``worker:1``), the
            step id in hex and the op's name; its DOT id names the box it is
            drawn in (an SVG node's ``<title>``).
        """
        from minitf.viz import dot  # an observer: only pictures need it
        from minitf.viz.dot_text import Slide

        state = state or self.state()
        parts = []
        for task in state["tasks"]:
            for step in task["steps"]:
                described = self._tasks[task["task"]].call("step_graph", step["step_id"])
                short, hex_id = _short(task["task"]), f"{step['step_id']:x}"
                parts.append({
                    "task": task["task"],
                    "label": f"step {hex_id} of {_short(step['client'])}",
                    "step_id": step["step_id"],
                    "graph": import_partition(described["nodes"]),
                    "ops": described["ops"],
                    "prefix": f"{short}|{hex_id}|",
                })  # fmt: skip
        return dot.running_steps_dot(parts, slide=Slide(fit=False))

    def picture(self, view: str = "whole", **kwargs: Any) -> GraphPicture:
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
        return f"<pre>{html.escape(describe_state(self.state()))}</pre>"

    # -- moving -----------------------------------------------------------------------------

    def next(self, task: str | None = None, wait: float = 10.0) -> dict | None:
        """Makes one move (on ``task`` if given); returns its event, or None if none came.

        Waits up to ``wait`` seconds for a move to become possible (a client
        starting its next step, a tensor arriving).

        Args:
            task: A task pattern (``worker:1``), or None for the first task that can move.
            wait: Seconds to wait for a move to become possible.

        Raises:
            ValueError: for a task pattern that names no task, a task that
                cannot move (saying what it waits for), or a script that has ended.
        """
        wanted = self._task_name(task) if task is not None else None
        candidate = self._first_candidate(wanted, wait)
        if candidate is None:
            if self.script_ended():
                raise ValueError("the script has ended: nothing moves any more (back N goes back)")
            if wanted is not None:
                raise ValueError(f"{_short(wanted)} cannot move now: {self._waits_on(wanted)}")
            return None
        return self._make(candidate)

    def next_event(self, task: str | None = None, max_moves: int = 10_000) -> list[dict]:
        """Moves until a dataflow event has happened (on ``task`` if given); returns the moves.

        The stepper's coarser granularity: a dataflow event is a move of an
        op that carries data between tasks or changes state (`is_dataflow_event`:
        a ``_Send`` or ``_Recv``, an accumulator's ``apply_grad`` or
        ``take_grad``, an enqueue or dequeue, an assign or an optimizer's
        update); the ops in between run together. An op that starts to wait
        and whose completion is there at once is delivered by the same call.

        Args:
            task: A task pattern (``worker:1``), or None for any task.
            max_moves: The most moves to make.

        Raises:
            ValueError: as `next`, when not even one move can be made.
        """
        made: list[dict] = []
        for _ in range(max_moves):
            try:
                event = self.next(task)
            except ValueError:
                if made:
                    break
                raise
            if event is None:
                break
            made.append(event)
            if is_dataflow_event(event["type"]):
                if event["move"] == "run":
                    done = self._delivery_of(event)
                    if done is not None:
                        made.append(self._make(done))
                break
        return made

    def _delivery_of(self, event: dict) -> dict | None:
        """The candidate that delivers the op ``event`` just ran, if it is there now."""
        for candidate in self.state()["candidates"]:
            same = all(candidate[k] == event[k] for k in ("task", "step_id", "op"))
            if same and candidate["move"] == "deliver":
                return candidate
        return None

    def script_ended(self) -> bool:
        """Whether every worker of the stepped script has ended (nothing will move again)."""
        if self.ended_when is not None:
            return self.ended_when()
        if self.cluster is None:
            return False
        workers = [parse_task(name) for name in self._tasks if parse_task(name)[0] != "ps"]
        return bool(workers) and all(self._task_exited(f"/job:{j}/replica:0/task:{i}")
                                     for j, i in workers)  # fmt: skip

    def _waits_on(self, task: str) -> str:
        """What ``task``'s held steps wait for, in words."""
        state = self._ask(self._tasks[task], "state")
        waits = [
            f"{op['name']} waits for {describe_wait(op['waits_for'])}"
            for step in (state or {}).get("steps", [])
            for op in step["waiting"]
        ]
        return "; ".join(waits[:3]) if waits else "no step of it is running"

    def check_pattern(self, pattern: str) -> None:
        """Raises unless ``pattern`` names an op that may run, or a task (`until`, ``--break``).

        Args:
            pattern: A stepper pattern: part of an op's name, its type, or a task.

        Raises:
            ValueError: naming the closest op names and types, when it names nothing.
        """
        if any(matches(pattern, "", "", name) or pattern == name for name in self._tasks):
            return
        known = set()
        for task in self._live():
            known.update(tuple(op) for op in self._ask(task, "known_ops") or [])
        if not known or any(matches(pattern, name, kind, "") for name, kind in known):
            return
        hint = closest(pattern, known)
        raise ValueError(
            f"no op or task matches {pattern!r}{hint}: it matches part of an op's name, "
            "its type (ResourceAccumulatorApplyGradient) or a task (worker:1)"
        )

    def until(self, pattern: str, max_moves: int = 100_000, wait: float = 10.0) -> list[dict]:
        """Moves until an op matching ``pattern`` is about to move (it does not).

        About to move: about to run, or — an op that waited, like a
        ``take_grad`` whose gradients have come — about to be delivered. A
        pattern matches part of an op's name, its type, or its task
        (``worker:1``). Returns the events of the moves made.

        Args:
            pattern: The op pattern.
            max_moves: The most moves to make.
            wait: Seconds to wait for each move to become possible.
        """
        self.check_pattern(pattern)

        def reached(candidate: dict) -> bool:
            return matches(pattern, candidate["op"], candidate["type"], candidate["task"])

        return self._until(reached, max_moves, wait)

    def until_iteration(
        self, iteration: int, loop: str | None = None, max_moves: int = 100_000, wait: float = 10.0
    ) -> list[dict]:
        """Moves until iteration ``iteration`` of a loop starts: its first move is next (not made).

        The moves of a ``tf.while_loop`` run in iterations of its frame
        (`minitf.runtime.core.frames`): iteration 0 starts when an ``Enter``
        runs, iteration 1 when a ``NextIteration`` has run in iteration 0,
        and so on. Nothing moves if the next move is in that iteration or
        a later one already. Returns the events of the moves made.

        Args:
            iteration: The iteration (0 is the first).
            loop: The loop, by the name scope of its ops (``while``,
                ``outer/while``) or its frame's name; None: any loop.
            max_moves: The most moves to make.
            wait: Seconds to wait for each move to become possible.

        Raises:
            ValueError: for a negative ``iteration``, or a ``loop`` no
                registered graph has.
        """
        if iteration < 0:
            raise ValueError(f"an iteration is 0 or more, got {iteration}")
        if loop is not None:
            self._check_loop(loop)

        def reached(candidate: dict) -> bool:
            return any(
                number >= iteration and loop in (None, frame, loop_name(frame))
                for frame, number in candidate.get("frames") or []
            )

        return self._until(reached, max_moves, wait)

    def _until(self, reached: Callable[[dict], bool], max_moves: int, wait: float) -> list[dict]:
        """Makes moves until the next one is ``reached``; returns their events."""
        made = []
        for _ in range(max_moves):
            candidate = self._first_candidate(None, wait)
            if candidate is None or reached(candidate):
                break
            made.append(self._make(candidate))
        return made

    def _check_loop(self, loop: str) -> None:
        """Raises unless a graph registered on a task has a loop named ``loop`` (its LoopCond)."""
        known = set()
        for task in self._live():
            known.update(tuple(op) for op in self._ask(task, "known_ops") or [])
        loops = sorted({name.rpartition("/")[0] for name, kind in known if kind == "LoopCond"})
        if known and loop not in loops and not any(loop_name(loop) == name for name in loops):
            raise ValueError(
                f"no loop {loop!r}: the loops are {', '.join(loops) or 'none'} "
                "(the name scope of a loop's ops)"
            )

    def until_blocked(self, task: str, max_moves: int = 100_000) -> list[dict]:
        """Moves on ``task`` until nothing there can move: every step there waits.

        Args:
            task: A task pattern (``worker:1``).
            max_moves: The most moves to make.
        """
        name = self._task_name(task)
        made = []
        for _ in range(max_moves):
            candidate = self._first_candidate(name, wait=0.2)
            if candidate is None:
                break
            made.append(self._make(candidate))
        return made

    def step(self, global_step: int, max_moves: int = 1_000_000, wait: float = 10.0) -> list:
        """Moves until the global step is at least ``global_step``.

        Args:
            global_step: The global step to reach.
            max_moves: The most moves to make.
            wait: Seconds to wait for each move to become possible.
        """
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

    def back(self, moves: int = 1) -> list[dict]:
        """Undoes the last ``moves`` moves; returns the events that remain.

        The script's cluster is started again with every task held and each
        task's recorded moves — the free-running ones before a breakpoint
        too — are replayed up to where the stepper was ``moves`` moves ago.
        Steps have the same ids in every run and each move is the same, so
        the tasks reach the same state: the same queue contents, counts and
        variable values.

        Args:
            moves: How many moves to undo.

        Raises:
            FailedPreconditionError: if this stepper did not start its cluster
                (`launch`, ``minitf step``): only then can it start it again.
            ValueError: if fewer than ``moves`` moves were made.
        """
        if self._launch_args is None:
            raise errors.FailedPreconditionError(
                None,
                None,
                "back re-runs the script from its start, so it needs a stepper that started "
                "the script: use Stepper.launch (minitf step does)",
            )
        if not 1 <= moves <= len(self.events):
            raise ValueError(f"cannot go back {moves} move(s): {len(self.events)} made so far")
        keep = len(self.events) - moves
        schedule = self.schedule(keep)
        events, marks = self.events[:keep], self._marks[:keep]
        start_marks = self._start_marks
        self._stop()
        self._start([], break_timeout=0)
        self._replay(schedule)
        self.events, self._marks, self._start_marks = events, marks, start_marks
        if self.on_move is not None:
            self.on_move(None)
        return self.events

    def schedule(self, moves: int | None = None) -> dict[str, list]:
        """Each task's recorded moves up to the ``moves``-th event (default: all so far).

        Args:
            moves: How many events to include (default: all so far).

        Returns:
            ``{task: [(step id, RUN or DELIVER, op name), ...]}``: what `launch`
            replays (``schedule=``) to reach the same point again.
        """
        moves = len(self.events) if moves is None else moves
        marks = self._marks[moves - 1] if moves else self._start_marks
        return {
            name: [tuple(m) for m in task.call("log", 0)[: marks.get(name, 0)]]
            for name, task in self._tasks.items()
        }

    def continue_(self) -> None:
        """Releases every task and clears its breakpoints: steps run free from now on.

        Stepping a recording, it first makes the rest of the recorded moves
        (while the run takes the recorded path: at the end of a run, threads
        that stop on a flag may not, and the run then finishes on its own).
        """
        rest = self._recorded_rest()
        if rest:
            try:
                self._replay(rest, wait=5.0)
            except errors.FailedPreconditionError as exc:
                # Threads that stop on a flag (a queue runner at the end of
                # training) may take another path than recorded: let it finish.
                logger.warning("%s; the run goes on without the recording from here", exc.message)
        for task in self._live():
            self._ask(task, "hold", False, [])

    def hold(self) -> None:
        """Holds every task again (steps stop before their next move)."""
        for task in self._tasks.values():
            task.call("hold", True)

    # -- inside -----------------------------------------------------------------------------

    def _start(self, breaks: list[str], break_timeout: float) -> None:
        launch = self._launch_args
        # One incarnation for every run: a replay's step ids are the recorded ones.
        env = {STEPPER_ENV: "1", BREAK_ENV: ";".join(breaks), INCARNATION_ENV: REPLAYABLE}
        self.cluster = LocalCluster(
            launch["tasks"],
            script=launch["script"],
            args=launch["args"],
            env=env,
            output=launch["output"],
        ).start()
        self._tasks = {}
        try:
            self._tasks = {
                t.name: t for t in _remote_tasks(self.cluster.cluster_spec, self.cluster)
            }
            self._start_marks = {}
            if breaks:
                self.wait_for_break(break_timeout)
        except BaseException:
            # No stepper is returned to stop them: without this the processes would
            # live as long as this one (a notebook's kernel).
            self._stop()
            raise

    def _stop(self) -> None:
        self.close()
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    def _replay(self, schedule: dict[str, list], wait: float = 30.0) -> None:
        """Makes each task's recorded moves again, in that task's order.

        Raises:
            FailedPreconditionError: if a task does not offer its next recorded
                move within ``wait`` seconds (the script decides by time, not data).
        """
        pending = {name: deque(moves) for name, moves in schedule.items() if moves}
        deadline = time.monotonic() + wait
        while pending:
            progressed = False
            for name in list(pending):
                task, (step_id, kind, op) = self._tasks[name], pending[name][0]
                state = None
                if self._settle_task(task) is not None:
                    state = self._ask(task, "state")
                if state is None:
                    del pending[name]  # it ended: it made its moves
                    continue
                for candidate in _candidates([state]):
                    if (
                        candidate["step_id"] == step_id
                        and _KINDS[candidate["move"]] == kind
                        and candidate["op"] == op
                    ):
                        # None: its last move let the script end, and the process with it.
                        self._ask(task, "grant", step_id, kind, candidate["index"],
                                  self.settle_timeout)  # fmt: skip
                        pending[name].popleft()
                        progressed = True
                        break
                if not pending[name]:
                    del pending[name]
            if progressed:
                deadline = time.monotonic() + wait
            elif time.monotonic() > deadline:
                name, (step_id, kind, op) = next((n, m[0]) for n, m in pending.items())
                raise errors.FailedPreconditionError(
                    None,
                    None,
                    f"the replay went another way: {name} never offered to "
                    f"{MOVE_NAMES[kind]} {op} in step {step_id:x} (does the script decide "
                    "by the clock, or by files an earlier run left such as checkpoints to "
                    "restore, rather than by the values it fetches?)",
                )
            else:
                time.sleep(0.02)  # a client may be about to start its next step
        self._settle()

    def _refresh(self) -> None:
        if self._discover is not None:
            for task in self._discover():
                self._tasks[task.name] = task

    def _log_lengths(self) -> dict[str, int]:
        lengths = {}
        for name, task in self._tasks.items():
            if name in self._ended:
                lengths[name] = self._ended[name]
                continue
            count = self._ask(task, "moves")
            if count is None:
                # Its process finished (a worker at the end of its script): its
                # moves are all made; the count before it went is the count.
                self._ended[name] = count = self._known_lengths.get(name, 0)
            lengths[name] = count
        self._known_lengths = lengths
        return lengths

    def _live(self) -> list:
        """The tasks whose processes still run (a worker ends with its script)."""
        return [
            task
            for name, task in self._tasks.items()
            if name not in self._ended and not self._task_exited(name)
        ]

    def _task_exited(self, name: str, wait: float = 0.0) -> bool:
        """Whether the task's process has ended (waiting up to ``wait`` s: it may be ending)."""
        if self.cluster is None:
            return False
        exited = self.cluster.wait_task(*parse_task(name), wait) is not None
        if exited and name not in self._ended:
            # A task ends once it has made its last move: all of a recording's.
            recorded = (self._recording or {}).get(name)
            last = self._known_lengths.get(name, 0)
            self._ended[name] = max(last, len(recorded)) if recorded is not None else last
        return exited

    def _task_name(self, pattern: str) -> str:
        for name in self._tasks:
            if matches(pattern, "", "", name) or pattern == name:
                return name
        raise ValueError(f"no task {pattern!r}; the tasks are {', '.join(self._tasks)}")

    def _ask(self, task, method: str, *args, timeout: float = 30.0):
        """``task.call(method, *args)``, or None once the task's process has ended.

        A worker's process ends with its script, between any two calls: a
        lost connection to a task that exited is that end, not an error.
        """
        try:
            return task.call(method, *args, timeout=timeout)
        except errors.UnavailableError:
            if not self._task_exited(task.name, wait=5.0):
                raise
            return None

    def _settle_task(self, task):
        """Waits until ``task`` holds still; None once its process has ended."""
        return self._ask(task, "settle", self.settle_timeout, timeout=self.settle_timeout + 5)

    def _settle(self) -> None:
        for task in self._live():
            self._settle_task(task)

    def _first_candidate(self, task: str | None, wait: float) -> dict | None:
        deadline = time.monotonic() + wait
        if self.script_ended():
            return None  # at once: nothing will move again
        while True:
            self._refresh()
            self._settle()
            states = [self._ask(t, "state") for t in self._live() if task in (None, t.name)]
            found = _candidates([state for state in states if state is not None])
            made = self._log_lengths() if self._recording is not None else {}
            rest = self._recorded_rest(made)
            if self._recording is not None and not rest:
                return None  # the recording's moves are all made: `continue_` finishes the run
            if rest:  # stepping a recording: only each task's next recorded move
                found = [
                    c
                    for c in found
                    if c["task"] in rest
                    and rest[c["task"]][0] == (c["step_id"], _KINDS[c["move"]], c["op"])
                ]
                turn = self._turn(made)
                if turn is not None:  # and only on the task whose turn it is
                    found = [c for c in found if c["task"] == turn]
            if found:
                return found[0]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)  # a client may be about to start its next step

    def _make(self, candidate: dict) -> dict:
        kind = RUN if candidate["move"] == "run" else DELIVER
        task = self._tasks[candidate["task"]]
        try:
            # A None answer: the task's process ended after its last move.
            self._ask(
                task, "grant", candidate["step_id"], kind, candidate["index"], self.settle_timeout
            )
        except (errors.OpError, ValueError) as exc:
            raise errors.FailedPreconditionError(
                None, None, f"the move {candidate} could not be made: {exc}"
            ) from exc
        self._settle()
        event = {
            k: candidate[k] for k in ("task", "step_id", "move", "op", "type", "offer", "frames")
        }
        self.events.append(event)
        self._marks.append(self._log_lengths())
        if self.on_move is not None:
            self.on_move(event)
        return event


_EVENT_TYPES = re.compile(
    r"^_(Send|Recv)$|Enqueue|Dequeue|QueueClose|ApplyGradient|TakeGradient|SetGlobalStep"
    r"|^Assign|^(Resource)?Apply|^(Resource)?Scatter|CountUpTo"
)


def is_dataflow_event(op_type: str) -> bool:
    """Whether a move of an op of ``op_type`` is a dataflow event (`Stepper.next_event`).

    Args:
        op_type: The op's type (``QueueDequeueV2``).
    """
    return _EVENT_TYPES.search(op_type) is not None


_KINDS = {"run": RUN, "deliver": DELIVER}


def _remote_tasks(cluster_spec, cluster: LocalCluster | None = None) -> list[_RemoteTask]:
    """Links to every task; with the ``cluster`` that started them, a task that died says so."""
    tasks = []
    for job in cluster_spec.jobs:
        for i in cluster_spec.task_indices(job):
            name = f"/job:{job}/replica:0/task:{i}"
            if cluster is None:
                wire = connect_with_retry(cluster_spec.task_address(job, i), name)
            else:
                wire = cluster.connect(job, i)  # waits while the task starts, fails if it exits
            tasks.append(_RemoteTask(name, wire))
    return tasks


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
                            "offer": op.get("offer", False),
                            "frames": op.get("frames", []),
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


def closest(pattern: str, known) -> str:
    """`` (did you mean A, B?)`` for the op types and last name parts nearest ``pattern``, or "".

    Args:
        pattern: A stepper pattern that matched nothing.
        known: ``(name, type)`` of the ops that may run (`Stepping.known_ops`).
    """
    words = {kind for _, kind in known} | {name.rsplit("/", 1)[-1] for name, _ in known}
    close = difflib.get_close_matches(pattern, sorted(words), n=3, cutoff=0.5)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _short(task: str) -> str:
    """``/job:worker/replica:0/task:1`` → ``worker:1``."""
    job, index = parse_task(task)
    return f"{job}:{index}"
