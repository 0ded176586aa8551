"""A virtual-time scheduler for a whole cluster in one process: `Simulation`.

A simulated cluster runs the same code as a real one. Every task is a
`minitf.runtime.distributed.worker.Worker`; every session's steps go through
the same `minitf.runtime.distributed.master.Master`, which reaches the tasks
through the in-process transport (`minitf.runtime.distributed.in_process`)
instead of TCP. What differs is who makes the moves and what time it is:
each task's executor hands the steps it starts to this scheduler, which makes
every move of every task itself, one at a time, on a virtual clock.

* **Clients** are threads (a worker's training loop, the chief's queue
  runner). A client runs Python until its master waits for the tasks; then
  it parks. The simulation makes a move only while every client is parked,
  so where a client is in its own code never decides anything.
* **Moves** are the executions' two moves (run a ready op, deliver an
  arrived completion). The next move is the one that can start earliest on
  the virtual clock; ties go by task, then by the step's client and number,
  then by op. So the same cluster, seed and clients make the same moves,
  with the same values, every time.
* **Time** is virtual. A task runs one op at a time; an op takes
  ``op_cost(op)`` seconds (zero by default). A worker's partition that
  computes gradients starts after a delay drawn from its delay model
  (`minitf.cluster.delays`), seeded per worker. Nothing sleeps, and a step
  has no deadline.
* **Tensors** between tasks are copied, as the wire copies them, and
  arrive when the op that sent them ends.

When every client is parked and no move is possible, the cluster is
deadlocked: each step still running fails with ``DeadlineExceededError``
naming what its ops wait for, where a real cluster would wait for ever.

Sessions reach a simulation through targets ``sim://<id>/<job>/<index>``;
``tf.train.Server`` in a client is the simulated task's.
`minitf.cluster.SimulatedCluster` is the user's API.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import heapq
import itertools
import math
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from minitf.framework import errors, ops
from minitf.runtime.core.frames import TaggedSteps
from minitf.runtime.core.scheduler import DELIVER, RUN, Scheduler
from minitf.runtime.core.watch import describe_wait
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.cluster_spec import ClusterSpec
from minitf.runtime.distributed.connect import error_message
from minitf.runtime.distributed.worker import Worker

if TYPE_CHECKING:
    from minitf.runtime.core.executor import _Started
    from minitf.runtime.core.plan import Unit
    from minitf.runtime.distributed.transport import Call

DelayModel = Callable[[np.random.Generator], float]
"""A worker's delay model: draws virtual seconds from a random generator."""

SCHEME = "sim://"
_simulations: weakref.WeakValueDictionary[int, Simulation] = weakref.WeakValueDictionary()
_ids = itertools.count(1)
_current = threading.local()  # .client: the _Client the running thread is

# A simulated run makes many short-lived objects, some in reference cycles (a
# step's parts, executions and their completions), and keeps every task's
# graphs alive: at the default thresholds the collector would walk all of
# them about once per update. While runs go on, it collects less often.
RUN_GC_THRESHOLDS = (100_000, 50, 100)
_gc_lock = threading.Lock()
_gc_runs = [0, None]  # simulated runs going on, and the thresholds to restore after the last


class VirtualClock:
    """The simulation's clock, as the runtime reads clocks (`minitf.runtime.core.clock`)."""

    def __init__(self):
        self.seconds = 0.0

    def now(self) -> float:
        """Virtual seconds since the simulation started."""
        return self.seconds

    def now_ns(self) -> int:
        """Virtual nanoseconds since the simulation started."""
        return int(self.seconds * 1e9)

    def wait(self, event: threading.Event, seconds: float | None) -> bool:
        """Never waits: virtual time does not pass while something waits on it.

        Args:
            event: The event.
            seconds: Ignored.

        Returns:
            Whether ``event`` is set now.
        """
        return event.is_set()

    def remaining(self, deadline: float | None) -> float | None:
        """Virtual seconds left until ``deadline``, or None for no deadline.

        Args:
            deadline: A `now` time, or None.
        """
        return None if deadline is None else max(0.0, deadline - self.seconds)


class Abandoned(BaseException):  # noqa: N818 - not an error: the run is given up
    """Ends a simulation's loop and its clients once it is abandoned (`Simulation.abandon`).

    A ``BaseException``, as ``SystemExit`` is: a script's ``except Exception``
    does not stop it, and its ``finally`` blocks run.
    """


class _Client:
    """A thread that runs steps: its name, and where it is on the virtual clock."""

    def __init__(self, name: str, index: int, time: float, lock):
        self.name = name
        self.index = index
        self.time = time
        self.steps = itertools.count(1)
        self.alive = True
        self.woken = False
        self.open: _Step | None = None  # the step it runs now
        self.wake = threading.Condition(lock)  # notified when it may run again


class _Part:
    """One task's part of a running step: the run its executor started, and when each op may start.

    Args:
        step: The `_Step`.
        task: The task's name.
        call: The master's call, finished when the part ends.
        loss: Which of the part's fetches is the loss, or None.
        computes_gradients: Whether a worker's delay comes before it.
    """

    # Slots: a part is made for every task of every step (17 per update of a 6-of-8 run).
    __slots__ = (
        "step", "task", "order", "key", "loops", "call", "loss", "computes_gradients", "run",
        "execution", "start", "ready_at", "pushed", "delay", "epoch", "info", "ended", "error",
        "inbox", "who",
    )  # fmt: skip

    def __init__(
        self, step, task: str, order: int, call: Call, loss: int | None,
        computes_gradients: bool,
    ):  # fmt: skip
        self.step = step
        self.task = task
        self.order = order  # the task's place in ties
        self.key = step.key
        self.loops = False  # its plan has loops: a move names an iteration too
        self.call = call
        self.loss = loss
        self.computes_gradients = computes_gradients
        self.run: _Started | None = None  # set when the task's executor starts it
        self.execution = None
        self.start = 0.0
        self.ready_at: dict[int, float] = {}
        self.pushed: set[int] = set()  # ops put in the simulation's heap to run
        self.delay = 0.0  # the worker's delay before this part (computing its gradients)
        self.epoch = 0  # heap entries of an older epoch are void (the part was cancelled)
        self.info: Any = ()  # per unit of its execution: a `_UnitInfo`
        self.ended = False
        self.error: BaseException | None = None
        # Its execution's completions, until the loop takes them in (`Simulation._collect`).
        self.inbox = _Inbox()
        # Who makes its moves, as the event log names them (`Simulation.events`).
        self.who = (task, step.client, step.key[1], step.step_id)

    def attach(self, run: _Started, start: float, dirty: list) -> None:
        """The executor started the part: its moves are the simulation's from ``start`` on."""
        self.run = run
        self.execution = run.execution
        self.loops = run.execution.plan.has_loops
        self.start = start
        if run.execution.plan.has_async:
            run.execution.gather(self.inbox)
        # A completion reached this part: it is taken in after the move that made it.
        # (``list.append`` itself, no Python call; a part listed again has nothing new.)
        self.execution.on_arrival = functools.partial(dirty.append, self)

    def available(self, i: int) -> float:
        return self.ready_at.get(i, self.start)


class _Inbox(list):
    """A part's completions ``(index, result, arrival ns)``, in the order they arrived.

    Only moves (on the loop's thread) and clients holding the simulation's
    lock make them: a list, put by ``list.append`` itself, spares the
    ``queue.SimpleQueue`` round trip of a real task's inbox.
    """

    __slots__ = ()
    put = list.append


class _Step:
    """A client's run of one step: its parts on the tasks, until every one has ended."""

    __slots__ = (
        "client", "key", "step_id", "task", "parts", "outstanding", "sealed", "failed", "loss",
        "done", "end", "cancels", "cancelled",
    )  # fmt: skip

    def __init__(self, client: _Client, number: int, step_id: int, task: str):
        self.client = client
        self.key = (client.index, number)
        self.step_id = step_id
        self.task = task  # the client's task (its master's)
        self.parts: list[_Part] = []
        self.outstanding = 0  # parts not ended
        self.sealed = False  # the client waits: it starts no more parts of this step
        self.failed = False
        self.loss: float | None = None
        self.done = False
        self.end = 0.0
        self.cancels = False  # it took from an accumulator whose takes cancel in-flight work
        self.cancelled = False  # its worker's computation was cancelled


class Simulation(Scheduler):
    """A cluster's tasks in this process, every move of every step made here on a virtual clock.

    It is the scheduler of every simulated task (`Scheduler.runs_steps`):
    their executors hand it the steps they start, and its loop
    (`run_until_clients_end`) makes their moves.

    Args:
        tasks: ``{"ps": 2, "worker": 100}``.
        seed: Seeds every delay draw.
        worker_delay: A `minitf.cluster.delays.DelayModel` for every worker,
            a dict ``{worker index: model}``, or None.
        op_cost: Virtual seconds an op takes: a dict by op type, a function of
            the op, or None for zero.

    Attributes:
        cluster_spec: The cluster, with an address per task that names it.
        clock: The `VirtualClock`.
        by_op: Make every op a move of its own even when ops are free and no
            stepper watches (a run to record, or to compare with a stepped
            one); see `observes_ops`.

    Raises:
        ValueError: if a job has no tasks, or not a whole number of them.
        TypeError: if ``worker_delay`` or ``op_cost`` is none of the above.
    """

    runs_steps = True

    def __init__(
        self,
        tasks: dict[str, int],
        seed: int = 0,
        worker_delay: DelayModel | dict[int | str, DelayModel] | None = None,
        op_cost: dict[str, float] | Callable[[ops.Operation], float] | None = None,
    ):
        if not tasks or any(not isinstance(n, int) or n < 1 for n in tasks.values()):
            raise ValueError(
                f"a simulated cluster needs a whole number of tasks, at least one, per job: "
                f"{tasks} (for example {{'ps': 1, 'worker': 8}})"
            )
        self.id = next(_ids)
        self.cluster_spec = ClusterSpec(
            {
                job: [f"sim{self.id}-{job}-{i}:{i + 1}" for i in range(int(n))]
                for job, n in tasks.items()
            }
        )
        names = [
            f"/job:{job}/replica:0/task:{i}"
            for job in sorted(self.cluster_spec.jobs)
            for i in self.cluster_spec.task_indices(job)
        ]
        self.clock = VirtualClock()
        self._workers: dict[str, Worker] = {}
        for name in names:
            worker = self._workers[name] = Worker(name, scheduler=self, clock=self.clock)
            worker.transport = self  # its _Send ops call send_tensor
        self._order = {name: order for order, name in enumerate(names)}
        self._busy_until = dict.fromkeys(names, 0.0)
        self.seed = seed
        self._delays = _delay_models(worker_delay)
        self._rngs: dict[int, np.random.Generator] = {}
        self._delay_of: dict[str, tuple] = {}  # task -> (its delay model or None, its index)
        self._cost = _cost_function(op_cost)
        self._lock = threading.RLock()
        # The simulation's loop waits on _cond for every client to park; each
        # client waits on its own condition, so waking one wakes no other.
        self._cond = threading.Condition(self._lock)
        self._clients: list[_Client] = []
        self._running: set[_Client] = set()
        self._outside: dict[_Client, Callable[[], bool]] = {}  # parked until a condition holds
        # Parked until their step ends: woken by the move that ends it, never polled.
        self._on_step: dict[_Client, Callable[[], bool]] = {}
        self._by_thread: dict[threading.Thread, _Client] = {}
        self._joining: set[_Client] = set()  # in a server's join()
        self._new: list[_Step] = []
        self._loop_thread: threading.Thread | None = None  # the thread in `run_until_clients_end`
        self._woken: list[_Client] = []  # clients it woke, to notify when it waits (`_let_go`)
        self._steps: set[_Step] = set()
        self._starting: _Part | None = None  # the part a task's executor is starting
        self._heap: list[tuple] = []  # candidate moves (see _make_moves)
        self._held: tuple | None = None  # one more, kept out of the heap until the next pop
        self.cancelled: list[tuple[float, str]] = []  # (time, worker task) of each cancel
        self._seq = itertools.count()  # breaks the last ties in the heap
        self._now: deque = deque()  # isolated ops to make at once: (part, op, epoch)
        # Parts a completion reached since the last look, in the order the first one did.
        self._dirty: list[_Part] = []
        self._moves: list[tuple] = []  # every move, cheaply: see `events`
        self._made = 0  # ops the moves ran or delivered: `move_count`
        self._listed = 0  # moves listed op by op in `events` so far
        # Waiting attempts that completed: (moves made by then, task, step id, op).
        self._offered: list[tuple[int, str, int, str]] = []
        self._events: list[tuple] = []
        self.failure: BaseException | None = None
        self.failed_client: str | None = None  # the client that raised `failure`
        self._failure_order = (0, 0)
        # Per task: virtual seconds spent running ops, and waiting out delays.
        self.busy: dict[str, float] = dict.fromkeys(names, 0.0)
        self.delayed: dict[str, float] = dict.fromkeys(names, 0.0)
        # Each accumulator's history: (entry, virtual time, made by a cancelled step).
        self.accumulator_events: dict[tuple[str, str], list[tuple[tuple, float, bool]]] = {}
        # Every fetch of a loss: (virtual time, task, value); see `loss_names`.
        self.losses: list[tuple[float, str, float]] = []
        self.loss_names: set[str] = {"loss"}
        self._accumulator_seen: dict[tuple[str, str], int] = {}
        self._accumulators: dict[str, tuple[int, list]] = {}  # see `_accumulators_of`
        self.sessions: dict[str, int] = {}  # sessions opened per task, as each task counts them
        # Each step that ended well: (client, step number, ops in its partitions' plans).
        self.completed: list[tuple[str, int, int]] = []
        # Called before every move with what it is (a stepper holds the run there);
        # raising `Abandoned` there ends the run (`abandon`).
        self.gate: Callable[[dict], None] | None = None
        self._abandoned = False
        self.by_op = False
        self._unit_info: dict[int, tuple] = {}  # id(units) -> (units, their `_UnitInfo` s)
        _simulations[self.id] = self

    @property
    def observes_ops(self) -> bool:
        """Whether every op is a move of its own (`Scheduler.observes_ops`).

        When ops cost time, when a stepper holds each move (`gate`) or when
        the run is recorded (`by_op`). Otherwise ops are free and nobody
        watches them one by one: a move is one of the plan's units, as on a
        real task (`minitf.runtime.core.plan.Plan.units`): the same ops, the
        same values and the same times, with fewer moves. The event log
        still lists every op (`events`).
        """
        return self._cost is not None or self.gate is not None or self.by_op

    # -- the tasks -------------------------------------------------------------------------

    def target(self, job: str, index: int = 0) -> str:
        """The session target of one task.

        Args:
            job: The task's job.
            index: The task's index.
        """
        self.cluster_spec.task_address(job, index)  # raises for a task not in the cluster
        return f"{SCHEME}{self.id}/{job}/{index}"

    def worker(self, name: str) -> Worker:
        """A task's `Worker` by name (``/job:ps/replica:0/task:0``).

        Args:
            name: The task's name.
        """
        return self._workers[name]

    def tasks(self) -> list[str]:
        """Every task's name, in the order ties go."""
        return list(self._workers)

    def serve(self, cluster: ClusterSpec, job: str, task: int) -> Worker:
        """The `Worker` that a client's ``tf.train.Server`` is: the simulated task's.

        Args:
            cluster: The cluster the script gave ``tf.train.Server``.
            job: The task's job.
            task: The task's index.

        Raises:
            ValueError: if the cluster is not the simulation's.
        """
        if cluster.as_dict() != self.cluster_spec.as_dict():
            raise ValueError(
                f"tf.train.Server's cluster {cluster.as_dict()} is not the simulated cluster's "
                f"{self.cluster_spec.as_dict()}: build it from the --*_hosts flags "
                "(or TF_CONFIG) the simulated cluster gives each task"
            )
        return self._workers[f"/job:{job}/replica:0/task:{task}"]

    def send_tensor(self, task: str, step_id: int, key: str, value) -> None:
        """A ``_Send``'s tensor reaches ``task`` now, copied as the wire copies it."""
        # Most often an array: copied here, without the call of _copied.
        copied = value.copy() if type(value) is np.ndarray else _copied(value)
        self._workers[task].deliver_tensor(step_id, key, copied)

    # -- the clients -----------------------------------------------------------------------

    def client(self, name: str, target: Callable[[], Any]) -> threading.Thread:
        """A thread that runs ``target`` as a client of this simulation (not started).

        Clients are numbered in the order they are made, which is the order
        ties between their steps go.

        Args:
            name: The thread's name.
            target: What the thread runs.
        """
        with self._cond:
            parent = getattr(_current, "client", None)
            client = _Client(name, len(self._clients), parent.time if parent else 0.0, self._lock)
            self._clients.append(client)
            self._running.add(client)  # it runs from now until it first parks
        return threading.Thread(
            target=self._run_client, args=(client, target), name=name, daemon=True
        )

    def adopt(self, target: Callable[[], Any], name: str) -> Callable[[], Any]:
        """Wraps ``target`` for a thread a client starts (a queue runner's) to be a client too.

        Outside a simulation's client, returns ``target`` unchanged.

        Args:
            target: What the new thread runs.
            name: Its name, under the parent client's.
        """
        parent = getattr(_current, "client", None)
        if parent is None:
            return target
        with self._cond:
            child = _Client(f"{parent.name}/{name}", len(self._clients), parent.time, self._lock)
            self._clients.append(child)
            self._running.add(child)
        return lambda: self._run_client(child, target)

    def _run_client(self, client: _Client, target: Callable[[], Any]) -> None:
        _current.client = client
        with self._cond:
            self._by_thread[threading.current_thread()] = client
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported by run()
            with self._cond:
                # The first failure of the run; of clients that failed between the
                # same two moves, the first client's (threads race; this does not).
                order = (self._made, client.index)
                if self.failure is None or order < self._failure_order:
                    self.failure, self.failed_client, self._failure_order = exc, client.name, order
        finally:
            with self._cond:
                self._seal(client)
                client.alive = False
                self._running.discard(client)
                self._cond.notify_all()

    def park_until(self, ready: Callable[[], bool]) -> bool:
        """Parks the calling client until ``ready()`` holds (a step's end, a coordinator's stop).

        ``ready`` is checked only when every client is parked, so when the
        client wakes does not depend on thread timing. The step the client
        started is complete: it starts no more parts.

        Args:
            ready: A condition, checked under the simulation's lock.

        Returns:
            True once ``ready()`` holds; False if the cluster deadlocked first
            (every client waits and nothing can move).
        """
        return self._park(ready, self._outside)

    def _park(self, ready: Callable[[], bool], parked: dict) -> bool:
        client = self._caller()
        with self._cond:
            if self._abandoned:
                raise Abandoned
            self._seal(client)
            if ready():
                return True
            parked[client] = ready
            self._running.discard(client)
            self._cond.notify()
            while client in parked:
                client.wake.wait()
            if self._abandoned:
                raise Abandoned
            return client.woken

    def wait_for(self, event: threading.Event) -> bool:
        """Parks the calling client until ``event`` is set and its step has ended or failed.

        What a master waits for (`minitf.runtime.distributed.in_process.InProcessTransport.wait`):
        the client wakes once per step, not once per part.

        Args:
            event: The event a call's reply sets.

        Returns:
            True once it holds; False if the cluster deadlocked first.
        """
        step = self._caller().open
        if step is None:
            return self.park_until(event.is_set)
        # Only the move that ends or fails the step can make this hold (`_wake`).
        return self._park(lambda: event.is_set() and (step.done or step.failed), self._on_step)

    def join_server(self) -> None:
        """A task's ``server.join()``: parked until every client that is not joining has ended."""
        client = self._caller()
        with self._cond:
            self._joining.add(client)
        self.park_until(lambda: all(not c.alive or c in self._joining for c in self._clients))

    def ended(self, threads: Iterable[threading.Thread]) -> bool:
        """Whether every one of ``threads`` has ended (a client's end is the simulation's).

        Args:
            threads: Threads, clients of this simulation or not.
        """
        with self._cond:
            for thread in threads:
                client = self._by_thread.get(thread)
                if client.alive if client is not None else thread.is_alive():
                    return False
        return True

    def _caller(self) -> _Client:
        client = getattr(_current, "client", None)
        clients = self._clients  # a client's index is its place here: no search among 100s
        if client is None or client.index >= len(clients) or clients[client.index] is not client:
            raise RuntimeError(
                "a simulated cluster's session runs only in its clients' threads "
                "(SimulatedCluster.run)"
            )
        return client

    def _seal(self, client: _Client) -> None:
        """The client's step has all its parts: it ends once they have (when it parks,
        starts its next step or ends; its master need not wait for parts already over)."""
        step = client.open
        if step is not None and not step.sealed:
            step.sealed = True
            if step.outstanding == 0:
                self._step_done(step)

    def _wake(self, client: _Client) -> None:
        """Wakes a parked client if what it waits for holds (every client is parked now)."""
        for parked in (self._on_step, self._outside):
            ready = parked.get(client)
            if ready is not None and ready():
                del parked[client]
                client.woken = True
                self._running.add(client)
                self._notify(client)

    def _notify(self, client: _Client) -> None:
        """Lets a woken client's thread go on: at once, or when the loop next waits.

        The loop's own wakes wait until it waits (`_let_go`): a thread woken
        while the loop still holds the lock could only wait for it again.
        """
        if threading.current_thread() is self._loop_thread:
            self._woken.append(client)
        else:
            client.wake.notify()

    def _let_go(self) -> None:
        """Notifies the clients the loop woke (`_notify`); it is about to wait, or to end."""
        woken = self._woken
        while woken:
            woken.pop(0).wake.notify()

    def _wake_outside(self, all_of_them: bool = False) -> bool:
        """Wakes the clients parked outside whose condition holds (or all); True if any woke.

        With ``all_of_them``, the clients waiting for their steps too (what
        they wait for cannot happen any more).
        """
        woke = False
        for parked in (self._outside, self._on_step) if all_of_them else (self._outside,):
            for client in sorted(parked, key=lambda c: c.index):
                ready = parked[client]()
                if ready or all_of_them:
                    del parked[client]
                    client.woken = ready
                    self._running.add(client)
                    self._notify(client)
                    woke = True
        return woke

    # -- steps, as the in-process transport starts and aborts them -------------------------

    def start_run(
        self, task: str, handle: int, step_id: int, feed_values: list, call: Call,
        client_task: str, loss: int | None, computes_gradients: bool,
    ) -> None:  # fmt: skip
        """Starts one task's part of the calling client's step; ``call`` finishes when it ends.

        Args:
            task: The task.
            handle: The partition's handle on that task.
            step_id: The step's id (the master's: a recorded schedule replays on real tasks).
            feed_values: The values its partition reads.
            call: The master's call for this part.
            client_task: The client's task (whose losses the simulation notes).
            loss: Which of the part's fetches is the loss, or None.
            computes_gradients: Whether the part computes gradients (a worker's delay comes first).

        Raises:
            RuntimeError: if the calling thread is not a client of this simulation.
        """
        client = self._caller()
        with self._cond:
            step = client.open
            if step is None or step.step_id != step_id or step.sealed:
                self._seal(client)
                step = client.open = _Step(client, next(client.steps), step_id, client_task)
                self._new.append(step)
            part = _Part(step, task, self._order[task], call, loss, computes_gradients)
            step.parts.append(part)
            step.outstanding += 1
            self._starting = part
            try:
                started = self._workers[task].start_graph(
                    handle, step_id, feed_values, 0, lambda v, e: self._part_done(part, v, e)
                )
            finally:
                self._starting = None
            if not started:  # a handle the task does not know
                self._part_done(
                    part, None, errors.AbortedError(None, None, f"{task} lost graph {handle}")
                )
            if part.ended:  # aborted before it began, or nothing to run
                self._part_ended(part, client.time)

    def start(self, run: _Started) -> None:
        """A task's executor started a step (`Executor.start`): its moves are made here.

        Args:
            run: The started step.
        """
        part = self._starting
        part.delay = delay = self._delay(part.task, part.computes_gradients)
        part.attach(run, part.step.client.time + delay, self._dirty)
        execution = run.execution
        part.info = self._units_of(execution)
        if not execution.ready and not execution.waiting:  # finished (nothing to run)
            run.settle()

    def take_up(self, run: _Started) -> None:
        """Never called: a simulated part hears of its completions itself (`_Part`)."""
        raise AssertionError("a simulated step's completions reach its part")

    def abort(self, task: str, step_id: int, error: errors.OpError) -> None:
        """Aborts a step's part on ``task`` (the master's abort): it ends now, with ``error``.

        Args:
            task: The task.
            step_id: The step.
            error: The error its waiting ops fail with.
        """
        with self._cond:
            self._workers[task].abort_step(step_id, error)
            for step in list(self._steps) + self._new:
                if step.step_id == step_id:
                    for part in step.parts:
                        if part.task == task and not part.ended and part.run is not None:
                            part.run.fail(error)
                            self._part_ended(part, step.client.time)

    def _part_done(self, part: _Part, values: list | None, error: BaseException | None) -> None:
        """A task ended its part (its executor's ``done``): the master's call finishes."""
        part.ended = True
        part.error = error
        if error is not None:
            reply = ("error", 0, *error_message(error))
        else:
            if part.loss is not None and part.step.loss is None and np.ndim(values[part.loss]) == 0:
                part.step.loss = float(values[part.loss])
            copies = []
            if values:  # (a training step fetches nothing); an array is copied without a call
                copies = [v.copy() if type(v) is np.ndarray else _copied(v) for v in values]
            reply = ("ok", 0, copies, [])  # no op stats: see `events`
        part.call.finish(reply)

    def _part_ended(self, part: _Part, time: float) -> None:
        """Counts an ended part of its step at virtual ``time``; the last one ends the step."""
        step = part.step
        step.outstanding -= 1
        if time > step.end:
            step.end = time
        if part.error is not None and not step.failed:
            step.failed = True
            self._wake(step.client)  # its master aborts the other parts
        if step.outstanding == 0 and step.sealed:
            self._step_done(step)

    def _step_done(self, step: _Step) -> None:
        if step.done:
            return
        step.done = True
        self._steps.discard(step)
        client = step.client
        if step.end > client.time:
            client.time = step.end
        if not step.failed:
            planned = 0
            for part in step.parts:
                if part.execution is not None:
                    planned += len(part.execution.steps)
            self.completed.append((client.name, step.key[1], planned))
            if step.loss is not None:
                self.losses.append((client.time, step.task, step.loss))
            if step.cancels:
                self._cancel_in_flight(step.end)
        step.parts = []  # they refer to it: freed at once, not by the garbage collector
        self._wake(client)

    # -- the loop --------------------------------------------------------------------------

    def run_until_clients_end(self) -> None:
        """Makes moves until every client has ended (call it from the thread that started them).

        If the `gate` abandons the run, every parked client is woken to raise
        `Abandoned`, and this returns at once.
        """
        with self._cond:
            self._loop_thread = threading.current_thread()
            try:
                self._loop()
            except BaseException as exc:
                # Abandoned by the gate, or a move failed outside any step (a bad
                # op_cost): the clients' threads end, raising Abandoned.
                self._abandoned = True
                self._wake_outside(all_of_them=True)
                if not isinstance(exc, Abandoned):
                    raise
            finally:
                self._let_go()
                self._loop_thread = None

    def abandon(self) -> None:
        """Gives the run up before it starts (a run already moving is abandoned by its `gate`)."""
        with self._cond:
            self._abandoned = True
            self._wake_outside(all_of_them=True)

    def executions(self, task: str) -> dict[int, Any]:
        """The steps running on ``task`` now, by id: their executions (what a stepper shows).

        Args:
            task: The task's name.
        """
        return {
            part.step.step_id: part.execution
            for step in sorted(self._steps, key=lambda s: s.key)
            for part in step.parts
            if part.task == task and not part.ended and part.execution is not None
        }

    def _loop(self) -> None:
        """Makes moves while clients wait for them (under the lock); returns when all have ended."""
        while True:
            clients_ran = bool(self._running)
            self._let_go()
            while self._running:
                self._cond.wait()
            # What parked clients wait for (a stop, a thread's end) changes
            # only while clients run, or when a step ends (`_step_done`).
            if clients_ran and self._outside and self._wake_outside():
                continue
            if self._new:
                for step in sorted(self._new, key=lambda s: s.key):
                    if step.done:
                        continue
                    self._steps.add(step)
                    for part in step.parts:
                        if not part.ended:
                            self._offer(part, part.start)
                self._new.clear()
            if self._make_moves():
                continue
            if self._steps:
                self._fail_deadlocked()
                continue
            if self._outside or self._on_step:
                self._wake_outside(all_of_them=True)  # what they wait for cannot happen
                continue
            if not any(c.alive for c in self._clients):
                return

    def _make_moves(self) -> bool:
        """Makes moves, each the earliest possible, until one wakes a client; False if none.

        The earliest move is the one that can start earliest (ties: task,
        step, deliver before run, op). Candidates wait in a heap keyed by
        when their op became available; a popped one whose task is busy
        later than that goes back with its real start, so the first one that
        pops unchanged is the earliest. A move that wakes no client changes
        nothing a parked client waits for, and starts no step: the next move
        follows at once.
        """
        made = False
        heap, busy_until = self._heap, self._busy_until
        while True:
            if self._dirty:
                self._absorb(self.clock.seconds)
            held = self._held
            if held is not None:  # the heap's with it: it comes out at once if it is the least
                self._held = None
                entry = heapq.heappushpop(heap, held)
            elif heap:
                entry = heapq.heappop(heap)
            else:
                return made
            time, order, key, kind, i, _, part, epoch = entry
            if part.ended or epoch != part.epoch:
                continue
            if kind == 0 and i not in part.execution.arrived:
                continue
            busy = busy_until[part.task]
            if busy > time:
                heapq.heappush(heap, (busy, order, key, kind, i, next(self._seq), part, epoch))
                continue
            self._make(part, kind == 1, i, time)
            if self._now:
                self._make_isolated()
            made = True
            if self._running:
                return True

    def _offer(self, part: _Part, time: float, moved: int | None = None) -> None:
        """Puts the part's ready ops not offered yet, and completions by ``time``, in the heap.

        When the part starts, and after each move of a part with loops (a move
        names an iteration too, so every ready move is looked at); a move of a
        part without loops offers its successors itself (`_follow`).

        Args:
            moved: The op that just ran or was delivered, if the part moved.
        """
        if part.inbox:
            self._collect(part, time)
        pushed, pending = part.pushed, part.execution.pending
        info, ready_at, start, epoch = part.info, part.ready_at, part.start, part.epoch
        now = self._now if moved is not None and self._cost is None else None
        for i in part.execution.ready:
            if i not in pushed and not pending[i]:
                pushed.add(i)
                available = ready_at.get(i, start)
                if now is not None and info[i].isolated and available <= time:
                    now.append((part, i, epoch))  # made at once: see _make_isolated
                    continue
                entry = (available, part.order, part.key, 1, i, next(self._seq), part, epoch)
                heapq.heappush(self._heap, entry)

    def _follow(self, part: _Part, unit: _UnitInfo, end: float) -> None:
        """The unit a move of ``part`` (without loops) ran or delivered ended at ``end``.

        Its successors may start no earlier; those it made ready are offered
        (`_offer`, in one pass over the successors).
        """
        if part.inbox:
            self._collect(part, end)  # none of them is a successor: those wait for it
        ready_at, first, pushed = part.ready_at, part.start, part.pushed
        pending, epoch = part.execution.pending, part.epoch
        now = self._now if self._cost is None else None
        for j in unit.successors:
            available = ready_at.get(j, first)
            if available < end:
                ready_at[j] = available = end
            if pending[j] or j in pushed:
                continue
            pushed.add(j)
            if now is not None and available <= end and part.info[j].isolated:
                now.append((part, j, epoch))  # made at once: see _make_isolated
                continue
            entry = (available, part.order, part.key, 1, j, next(self._seq), part, epoch)
            if self._held is None:
                self._held = entry  # most often the next move: see _make_moves
            else:
                heapq.heappush(self._heap, entry)

    def _collect(self, part: _Part, time: float) -> None:
        """Puts the completions that reached ``part`` in the heap, deliverable from ``time`` on."""
        inbox = part.inbox
        items = inbox.copy()
        del inbox[: len(items)]
        part.execution.take(items)
        info, ready_at, start, epoch = part.info, part.ready_at, part.start, part.epoch
        heap, seq, order, key = self._heap, self._seq, part.order, part.key
        for i, _, _ in items:
            unit = info[i]
            if unit.offered:
                # On a held real task this attempt is first offered to its
                # step, which runs it as a move of its own (ops.data_flow.blocking).
                self._offered.append((self._made, part.task, part.step.step_id, unit.op.name))
            when = ready_at.get(i, start)
            if when < time:
                when = time
            ready_at[i] = when
            heapq.heappush(heap, (when, order, key, 0, i, next(seq), part, epoch))

    def _absorb(self, time: float) -> None:
        """Takes in the completions that moves made (they arrive at ``time``)."""
        while self._dirty:
            dirty = list(self._dirty)
            self._dirty.clear()  # the parts hold this list: empty it, never replace it
            for part in dirty:
                # Only a move makes ops ready, and each move offered them.
                if part.inbox and not part.ended:
                    self._collect(part, time)

    def _make(self, part: _Part, running: bool, i: int, start: float) -> None:
        """Makes one move of a part on its task's execution; the part ends once nothing is left.

        The simulation is its tasks' loop (`Scheduler.runs_steps`): it makes the
        move itself and hands the step's error, or its end, to the started
        step (`minitf.runtime.core.executor._Started`).
        """
        execution = part.execution
        unit = part.info[i]
        clock = self.clock
        if clock.seconds < start:
            clock.seconds = start
        end = start + self._cost(unit.op) if running and self._cost is not None else start
        if self.gate is not None:
            self._ask_gate(part, running, i, unit, start)
        taken = None  # the accumulator a take's delivery takes from
        # The event log lists every op the move ran: a unit's, in the order it runs them.
        if running:
            self._moves.append((start, part.who, True, unit.ops))
            self._made += unit.count
        else:
            self._moves.append((start, part.who, False, unit.delivered))
            self._made += 1
            if unit.takes:
                taken = execution.vals[unit.take_slot]
        try:
            if running:
                execution.run_op(i)
            else:
                execution.deliver(i)
        except BaseException as exc:  # noqa: BLE001 - the step's error ends its part
            part.run.fail(exc)
        else:
            if not execution.ready and not execution.waiting:  # finished
                part.run.settle()
        if part.ended and part.error is not None:
            self._part_ended(part, end)
            return
        if end > start:
            task = part.task
            self._busy_until[task] = end
            self.busy[task] += end - start
            clock.seconds = end
        if unit.accumulates:
            step = part.step
            self._note_accumulators(part.task, end, step.cancelled)
            if taken is not None:
                step.cancels = step.cancels or getattr(taken, "cancels_in_flight", False)
        if part.ended:
            self._part_ended(part, end)
        elif part.loops:
            ready_at, first = part.ready_at, part.start
            if running and i in execution.waiting:
                ready_at[i] = end  # an asynchronous op's completion arrives no earlier
            else:
                for j in unit.successors:  # they may start once it has ended
                    if ready_at.get(j, first) < end:
                        ready_at[j] = end
            self._offer(part, end, i)
        elif running and i in execution.waiting:
            part.ready_at[i] = end  # an asynchronous op's completion arrives no earlier
            if part.inbox:  # (nothing is ready: its successors wait for it)
                self._collect(part, end)
        else:
            self._follow(part, unit, end)
        if self._dirty:
            self._absorb(end)  # completions this move made arrive when it ends

    def _ask_gate(self, part: _Part, running: bool, i: int, unit: _UnitInfo, start: float) -> None:
        """Tells the `gate` the move about to be made (a stepper holds the run there)."""
        # Not the step itself: a finished step's values must not outlive it.
        self.gate(
            {"task": part.task, "step_id": part.step.step_id,
             "move": "run" if running else "deliver", "index": i, "op": unit.op.name,
             "type": unit.op.type, "time": start}
        )  # fmt: skip

    def _make_isolated(self) -> None:
        """Runs the isolated ops the last move made ready, and those they make ready, now.

        Only when ops are free: such an op touches nothing but its inputs and
        outputs (`minitf.runtime.core.plan.PlanStep.isolated`) and takes no time,
        so where it falls among the moves of this instant changes no value
        and no time. Making it at once spares the heap; it is still a move
        of its own, in the event log and the schedule.
        """
        now = self._now
        while now:
            part, i, epoch = now.popleft()
            if not part.ended and epoch == part.epoch:
                self._make(part, True, i, part.available(i))

    @property
    def move_count(self) -> int:
        """How many moves have been made (a walk's ops each, as `events` lists them)."""
        return self._made

    @property
    def events(self) -> list[tuple]:
        """Every move made, in order, op by op (a walk's ops each, in the order it ran them).

        Each is ``(time, task, client, step number, "run" or "deliver", op name)``.
        """
        moves, made = self._moves, self._events
        for start, (task, client, number, _), running, listed in moves[self._listed :]:
            kind = "run" if running else "deliver"
            made.extend((start, task, client.name, number, kind, op.name) for op in listed)
        self._listed = len(moves)
        return made

    def schedule(self) -> dict[str, list[tuple[int, int, str]]]:
        """Each task's moves so far, in order, as a real task's stepper logs them.

        Each move is ``(step id, RUN or DELIVER, op name)`` (`minitf.runtime.core.scheduler`).
        The ids are those the same sessions get on real tasks, so the
        schedule can be replayed there (`minitf.stepper.Stepper.replay`).
        """
        return self.schedule_and_order()[0]

    def schedule_and_order(self) -> tuple[dict[str, list[tuple[int, int, str]]], list[str]]:
        """`schedule`, and the task of each of its moves in the order they were made.

        A stepper that follows the order on real tasks makes their moves in
        the simulation's order, not only each task's in its own.
        """
        moves: dict[str, list[tuple[int, int, str]]] = {}
        order: list[str] = []
        offered = iter(self._offered)
        offer = next(offered, None)
        made = 0
        for _, (task, _, _, step_id), running, listed in self._moves:
            kind = RUN if running else DELIVER
            for op in listed:
                made += 1
                moves.setdefault(task, []).append((step_id, kind, op.name))
                order.append(task)
                # A dequeue or take_grad that this move let finish ran here, at
                # once; a held task first offers it to its step, whose delivery
                # of the offer is the next move on the task.
                while offer is not None and offer[0] == made:
                    _, where, waiting, op_name = offer
                    moves.setdefault(where, []).append((waiting, DELIVER, op_name))
                    order.append(where)
                    offer = next(offered, None)
        return moves, order

    def _units_of(self, execution) -> Any:
        """What the simulation needs of each unit of ``execution`` (`_UnitInfo`), by move.

        Worked out once per plan (and way of running it), and kept.
        """
        plan = execution.plan
        by_op = plan.has_loops or execution.by_op
        units = plan.op_units if by_op else plan.units
        kept = self._unit_info.get(id(units))
        if kept is None or kept[0] is not units:
            isolated = {step.op for step in plan.steps if step.isolated}
            kept = self._unit_info[id(units)] = (
                units, tuple(_UnitInfo(unit, isolated) for unit in units)
            )  # fmt: skip
        return TaggedSteps(kept[1]) if plan.has_loops else kept[1]

    def _note_accumulators(self, task: str, time: float, cancelled: bool) -> None:
        """Timestamps what the task's accumulators have recorded since the last look.

        Args:
            cancelled: Whether the move was made by a step whose computation was cancelled.
        """
        seen = self._accumulator_seen
        kept = self._accumulators.get(task)
        if kept is None or kept[0] != self._workers[task].resource_mgr.changes:
            kept = self._accumulators_of(task)
        for key, resource in kept[1]:
            new = resource.events - seen.get(key, 0)
            if new > 0:
                history = resource.history
                timed = self.accumulator_events.setdefault(key, [])
                if new == 1 and history:  # most often: one new entry
                    timed.append((history[-1], time, cancelled))
                else:
                    back = range(min(new, len(history)), 0, -1)  # the newest, oldest first
                    timed.extend((history[-k], time, cancelled) for k in back)
                seen[key] = resource.events

    def _accumulators_of(self, task: str) -> tuple[int, list[tuple[tuple[str, str], Any]]]:
        """Finds the task's resources that keep a history (its accumulators).

        Kept with the task's ``resource_mgr.changes`` then: `_note_accumulators`
        reads the kept ones while that count stands.
        """
        manager = self._workers[task].resource_mgr
        found = [
            ((task, name), resource)
            for _, name, resource in manager.items()
            if getattr(resource, "history", None) is not None
        ]
        kept = self._accumulators[task] = (manager.changes, found)
        return kept

    def _cancel_in_flight(self, time: float) -> None:
        """An update was made: every worker still computing gradients stops now.

        A policy's accumulator asks for this (`minitf.cluster.policies`): a
        part still in its delay starts at once, so the rest of the delay is
        never spent, and the step goes on with what it read, as a cancelled
        computation whose gradient the accumulator drops as stale.
        """
        for step in sorted(self._steps, key=lambda s: s.key):
            for part in step.parts:
                if part.ended or part.delay <= 0 or part.start <= time:
                    continue
                self.delayed[part.task] -= part.start - time
                self.cancelled.append((time, part.task))
                step.cancelled = True
                part.start = time
                part.ready_at = {i: min(t, time) for i, t in part.ready_at.items()}
                part.epoch += 1
                order, key, heap = self._order[part.task], step.key, self._heap
                for i in part.execution.arrived:
                    entry = (part.ready_at.get(i, time), order, key, 0, i, next(self._seq))
                    heapq.heappush(heap, (*entry, part, part.epoch))
                for i in part.execution.ready:
                    if i in part.pushed:
                        entry = (part.available(i), order, key, 1, i, next(self._seq))
                        heapq.heappush(heap, (*entry, part, part.epoch))

    def _fail_deadlocked(self) -> None:
        """Every client waits and nothing can move: each running step fails, naming its waits."""
        for step in sorted(self._steps, key=lambda s: s.key):
            waits = []
            running = [p for p in step.parts if not p.ended]
            for part in running:
                execution = part.execution
                for i in sorted(execution.waiting):
                    name = part.info[i].op.name
                    what = describe_wait(execution.waits_for(i))
                    waits.append(f"{name} on {part.task} waits for {what}")
            message = (
                "Timed out waiting for notification (every client of the simulated cluster "
                "waits and no op can move): " + "; ".join(waits or ["nothing"])
            )
            for part in running:
                part.run.fail(errors.DeadlineExceededError(None, None, message))
                self._part_ended(part, self.clock.seconds)

    def _delay(self, task_name: str, computes_gradients: bool) -> float:
        """The virtual seconds a part on ``task_name`` waits before it starts (drawn now)."""
        if not computes_gradients:
            return 0.0
        kept = self._delay_of.get(task_name)
        if kept is None:  # a task's model, found once
            job, index = partition_lib.parse_task(task_name)
            model = self._delays.get(index, self._delays.get("*")) if job == "worker" else None
            kept = self._delay_of[task_name] = (model, index)
        model, index = kept
        if model is None:
            return 0.0
        rng = self._rngs.get(index)
        if rng is None:
            rng = self._rngs[index] = np.random.default_rng([self.seed, index])
        delay = float(model(rng))
        self.delayed[task_name] += delay
        return delay


class _UnitInfo:
    """One unit of a plan as the simulation sees it (`minitf.runtime.core.plan.Unit`).

    Args:
        unit: The unit: one op, or a straight walk of several.
        isolated: The plan's ops that touch nothing but their inputs and outputs.
    """

    __slots__ = (
        "op", "ops", "count", "delivered", "successors", "isolated", "accumulates", "takes",
        "take_slot", "offered",
    )  # fmt: skip

    def __init__(self, unit: Unit, isolated: set):
        self.op = unit.op  # names the unit
        self.ops = unit.ops
        self.count = len(unit.ops)
        self.delivered = (unit.op,)  # what a delivery lists in the event log
        self.successors = unit.successors
        step = unit.step
        if step is not None:
            self.isolated = step.isolated
        else:
            self.isolated = all(op in isolated for op in unit.ops)
        self.accumulates = any(op.type in _ACCUMULATOR_OPS for op in unit.ops)
        self.takes = step is not None and step.op.type in _TAKE_OPS
        self.take_slot = step.in_slots[0] if self.takes else -1
        # Its attempts are offered to its step (an empty walk has no op: it never waits).
        self.offered = step is not None and step.op.type in _OFFERED_OPS


@contextlib.contextmanager
def fewer_collections():
    """While a simulated run goes on, the garbage collector runs less often (`RUN_GC_THRESHOLDS`).

    What it collects is the same, later: no value and no virtual time
    depends on when. Runs may overlap; the thresholds come back when the
    last one ends.
    """
    with _gc_lock:
        if _gc_runs[0] == 0:
            _gc_runs[1] = gc.get_threshold()
            gc.set_threshold(*RUN_GC_THRESHOLDS)
        _gc_runs[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs[0] -= 1
            if _gc_runs[0] == 0:
                gc.set_threshold(*_gc_runs[1])


def is_simulated(target: str) -> bool:
    """Whether a session target names a task of a simulated cluster.

    Args:
        target: A session target.
    """
    return isinstance(target, str) and target.startswith(SCHEME)


def park_until(ready: Callable[[], bool]) -> bool | None:
    """In a simulation's client: `Simulation.park_until`; elsewhere None (wait as usual).

    Args:
        ready: A condition (see `Simulation.park_until`).
    """
    simulation = current()
    return None if simulation is None else simulation.park_until(ready)


def adopt(target: Callable[[], Any], name: str) -> Callable[[], Any]:
    """In a simulation's client: the target of a thread it starts, made a client too.

    Args:
        target: What the new thread runs.
        name: Its name.
    """
    simulation = current()
    return target if simulation is None else simulation.adopt(target, name)


def current() -> Simulation | None:
    """The simulation whose client the calling thread is, or None."""
    client = getattr(_current, "client", None)
    if client is None:
        return None
    for simulation in list(_simulations.values()):
        if client in simulation._clients:
            return simulation
    return None


def parse_target(target: str) -> tuple[Simulation, str, int]:
    """The simulation, job and task index a ``sim://`` session target names.

    Args:
        target: A session target.

    Raises:
        InvalidArgumentError: if it names no task of a running simulated cluster.
    """
    try:
        sim_id, job, index = target[len(SCHEME) :].split("/")
        simulation = _simulations[int(sim_id)]
        simulation.cluster_spec.task_address(job, int(index))
    except (ValueError, KeyError) as exc:
        raise errors.InvalidArgumentError(
            None, None, f"Session target {target!r} names no task of a running simulated cluster"
        ) from exc
    return simulation, job, int(index)


# The waiting ops whose attempts a held task offers to their step before running them.
_OFFERED_OPS = frozenset(
    {"QueueDequeueV2", "ResourceAccumulatorTakeGradient", "SparseAccumulatorTakeGradient"}
)

# The accumulator ops whose taken gradients may cancel the work in flight (a policy's).
_TAKE_OPS = frozenset(("AccumulatorTakeGradient", "ResourceAccumulatorTakeGradient",
                       "SparseAccumulatorTakeGradient"))  # fmt: skip

# The op types after which an accumulator has something new to timestamp.
_ACCUMULATOR_OPS = frozenset(
    f"{prefix}{name}"
    for prefix in ("", "Resource")
    for name in (
        "AccumulatorApplyGradient",
        "AccumulatorTakeGradient",
        "AccumulatorSetGlobalStep",
        "SparseAccumulatorApplyGradient",
        "SparseAccumulatorTakeGradient",
    )
)


def _copied(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    if isinstance(value, (np.generic, int, float, bool, str, bytes)) or value is None:
        return value
    return copy.deepcopy(value)


def _delay_models(worker_delay) -> dict:
    """``{worker index or "*": model}``: each model a callable drawing seconds from a generator.

    The models come from the layer above (`minitf.cluster.delays`, which
    `minitf.cluster.SimulatedCluster` checks): the runtime only calls them.

    Raises:
        TypeError: for anything but callables (alone, or by worker index or ``"*"``).
    """
    if worker_delay is None:
        return {}
    models = worker_delay if isinstance(worker_delay, dict) else {"*": worker_delay}
    for key, model in models.items():
        if not callable(model) or not (key == "*" or isinstance(key, int)):
            raise TypeError(f"worker_delay {key!r}: {model!r} draws no delay (not callable)")
    return dict(models)


def _cost_function(op_cost) -> Callable[[ops.Operation], float] | None:
    if op_cost is None:
        return None  # every op is free
    if callable(op_cost):

        def checked(op: ops.Operation) -> float:
            seconds = float(op_cost(op))
            if not 0 <= seconds < math.inf:
                raise ValueError(
                    f"op_cost gave {seconds} s for op {op.name!r} ({op.type}): a cost is a "
                    "finite number of virtual seconds >= 0"
                )
            return seconds

        return checked
    if not isinstance(op_cost, dict) or not all(
        isinstance(seconds, (int, float)) and 0 <= seconds < math.inf
        for seconds in op_cost.values()
    ):
        raise TypeError(
            "op_cost must be None, a function of the op, or {op type: seconds >= 0} "
            f"('*' for the others); got {op_cost!r:.200}"
        )
    table = dict(op_cost)
    return lambda op: float(table.get(op.type, table.get("*", 0.0)))
