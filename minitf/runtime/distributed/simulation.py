"""Every task of a cluster in one process, on a virtual clock, one move at a time.

A `Simulation` holds each task's state (its `ResourceMgr` and `Rendezvous`,
as a real task's `minitf.runtime.distributed.worker.Worker` does) and runs every
partition of every step itself, as a `minitf.runtime.core.execution.StepExecution`
it advances move by move. Nothing runs on its own:

* **Clients** are threads (a worker's training loop, the chief's queue
  runner). A client runs Python until its session's ``run`` hands the step
  to the simulation; then it parks until the step is done. The simulation
  makes a move only while every client is parked, so where a client is in
  its own code never decides anything.
* **Moves** are the executions' two moves (run a ready op, deliver an
  arrived completion). The next move is the one that can start earliest on
  the virtual clock; ties go by task, then by the step's client and number,
  then by op. So the same cluster, seed and clients make the same moves,
  with the same values, every time.
* **Time** is virtual. A task runs one op at a time; an op takes
  ``op_cost(op)`` seconds (zero by default). A worker's partition that
  computes gradients starts after a delay drawn from its delay model
  (`minitf.cluster.delays`), seeded per worker. Nothing sleeps.
* **Tensors** between tasks are copied, as the wire copies them, and
  arrive when the op that sent them ends.

When every client is parked and no move is possible, the cluster is
deadlocked: each step still running fails with ``DeadlineExceededError``
naming what its ops wait for, where a real cluster would wait for ever.

Sessions reach a simulation through targets ``sim://<id>/<job>/<index>``
(`SimulatedMaster`). `minitf.cluster.SimulatedCluster` is the user's API.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from minitf.framework import errors, ops
from minitf.runtime.core.execution import StepExecution
from minitf.runtime.core.rendezvous import Rendezvous
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.core.scheduler import DELIVER, RUN
from minitf.runtime.core.step_context import StepContext
from minitf.runtime.core.watch import describe_wait
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.cluster_spec import ClusterSpec, server_def
from minitf.runtime.distributed.step_ids import REPLAYABLE, StepIds
from minitf.runtime.distributed.worker import RegisteredGraph

if TYPE_CHECKING:
    from minitf.runtime.core.config import ConfigProto

DelayModel = Callable[[np.random.Generator], float]
"""A worker's delay model: draws virtual seconds from a random generator."""

SCHEME = "sim://"
_simulations: weakref.WeakValueDictionary[int, Simulation] = weakref.WeakValueDictionary()
_ids = itertools.count(1)
_current = threading.local()  # .client: the _Client the running thread is


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


class _Task:
    """One task's state: what a `Worker` keeps, without threads."""

    def __init__(self, name: str, order: int, simulation: Simulation):
        self.name = name
        self.order = order
        self.resource_mgr = ResourceMgr()
        self.rendezvous = Rendezvous()
        self.busy_until = 0.0
        self._simulation = simulation

    def send_tensor(self, task: str, step_id: int, key: str, value) -> None:
        """A ``_Send``'s tensor reaches ``task`` now, copied as the wire copies it."""
        self._simulation.task(task).rendezvous.send(step_id, key, _copied(value))


class _Client:
    """A thread that runs steps: its name, and where it is on the virtual clock."""

    def __init__(self, name: str, index: int, time: float, lock):
        self.name = name
        self.index = index
        self.time = time
        self.steps = itertools.count(1)
        self.alive = True
        self.woken = False
        self.wake = threading.Condition(lock)  # notified when it may run again


class _Part:
    """One partition of a running step: its execution and when each op may start."""

    def __init__(self, step, task: _Task, execution: StepExecution, start: float, dirty: list):
        self.step = step
        self.task = task
        self.execution = execution
        self.start = start
        self.ready_at: dict[int, float] = {}
        self.pushed: set[int] = set()  # ops put in the simulation's heap to run
        self.dirty = False
        self.delay = 0.0  # the worker's delay before this part (computing its gradients)
        self.epoch = 0  # heap entries of an older epoch are void (the part was cancelled)
        self._dirty = dirty
        execution.on_arrival = self._arrived

    def _arrived(self) -> None:
        # A completion reached this step (it is taken in after the move that made it).
        if not self.dirty:
            self.dirty = True
            self._dirty.append(self)

    def available(self, i: int) -> float:
        return self.ready_at.get(i, self.start)

    def ended(self, i: int, time: float) -> None:
        for j in self.execution.steps[i].successors:
            if self.ready_at.get(j, self.start) < time:
                self.ready_at[j] = time


class _Step:
    """A client's run: its partitions, and its values or error once it ends."""

    def __init__(self, client: _Client, number: int, step_id: int, fetch_from, feed_values):
        self.client = client
        self.key = (client.index, number)
        self.step_id = step_id
        self.parts: list[_Part] = []
        self.fetch_from = fetch_from
        self.feed_values = feed_values
        self.values: list | None = None
        self.error: errors.OpError | None = None
        self.done = False
        self.end = 0.0
        self.cancels = False  # it took from an accumulator whose takes cancel in-flight work
        self.cancelled = False  # its worker's computation was cancelled


class Simulation:
    """A cluster's tasks in this process, advanced one move at a time on a virtual clock.

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

    Raises:
        ValueError: if a job has no tasks, or not a whole number of them.
        TypeError: if ``worker_delay`` or ``op_cost`` is none of the above.
    """

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
        self._tasks = {name: _Task(name, order, self) for order, name in enumerate(names)}
        self.clock = VirtualClock()
        self.seed = seed
        self._delays = _delay_models(worker_delay)
        self._rngs: dict[int, np.random.Generator] = {}
        self._cost = _cost_function(op_cost)
        self._lock = threading.RLock()
        # The simulation's loop waits on _cond for every client to park; each
        # client waits on its own condition, so waking one wakes no other.
        self._cond = threading.Condition(self._lock)
        self._clients: list[_Client] = []
        self._running: set[_Client] = set()
        self._outside: dict[_Client, Callable[[], bool]] = {}  # parked until a condition holds
        self._by_thread: dict[threading.Thread, _Client] = {}
        self._joining: set[_Client] = set()  # in a server's join()
        self._new: list[_Step] = []
        self._steps: set[_Step] = set()
        self._heap: list[tuple] = []  # candidate moves (see _next_move)
        self.cancelled: list[tuple[float, str]] = []  # (time, worker task) of each cancel
        self._seq = itertools.count()  # breaks the last ties in the heap
        self._now: deque = deque()  # isolated ops to make at once: (part, op, epoch)
        self._dirty: list[_Part] = []  # parts a completion reached since the last look
        self._moves: list[tuple] = []  # every move, cheaply: see `events`
        # Waiting attempts that completed: (moves made by then, task, step id, op).
        self._offered: list[tuple[int, str, int, str]] = []
        self._events: list[tuple] = []
        self.failure: BaseException | None = None
        # Per task: virtual seconds spent running ops, and waiting out delays.
        self.busy: dict[str, float] = dict.fromkeys(self._tasks, 0.0)
        self.delayed: dict[str, float] = dict.fromkeys(self._tasks, 0.0)
        # Each accumulator's history: (entry, virtual time, made by a cancelled step).
        self.accumulator_events: dict[tuple[str, str], list[tuple[tuple, float, bool]]] = {}
        # Every fetch of a loss: (virtual time, task, value); see SimulatedMaster.
        self.losses: list[tuple[float, str, float]] = []
        self.loss_names: set[str] = {"loss"}
        self._accumulator_seen: dict[tuple[str, str], int] = {}
        self.sessions: dict[str, int] = {}  # sessions opened per task, as each task counts them
        # Each step that ended well: (client, step number, ops in its partitions' plans).
        self.completed: list[tuple[str, int, int]] = []
        _simulations[self.id] = self

    # -- what clients see ------------------------------------------------------------------

    def target(self, job: str, index: int = 0) -> str:
        """The session target of one task.

        Args:
            job: The task's job.
            index: The task's index.
        """
        self.cluster_spec.task_address(job, index)  # raises for a task not in the cluster
        return f"{SCHEME}{self.id}/{job}/{index}"

    def task(self, name: str) -> _Task:
        """A task's state by name (``/job:ps/replica:0/task:0``).

        Args:
            name: The task's name.
        """
        return self._tasks[name]

    def tasks(self) -> list[str]:
        """Every task's name, in the order ties go."""
        return list(self._tasks)

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
                if self.failure is None:
                    self.failure = exc
        finally:
            with self._cond:
                client.alive = False
                self._running.discard(client)
                self._cond.notify_all()

    def park_until(self, ready: Callable[[], bool]) -> bool:
        """Parks the calling client until ``ready()`` holds (a coordinator's stop, say).

        ``ready`` is checked only when every client is parked, so when the
        client wakes does not depend on thread timing.

        Args:
            ready: A condition, checked under the simulation's lock.

        Returns:
            True once ``ready()`` holds; False if the cluster deadlocked first
            (every client waits and nothing can move).
        """
        client = self._caller()
        with self._cond:
            if ready():
                return True
            self._outside[client] = ready
            self._running.discard(client)
            self._cond.notify()
            while client in self._outside:
                client.wake.wait()
            return client.woken

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
        if client is None or client not in self._clients:
            raise RuntimeError(
                "a simulated cluster's session runs only in its clients' threads "
                "(SimulatedCluster.run)"
            )
        return client

    def _wake_outside(self, all_of_them: bool = False) -> bool:
        """Wakes the clients parked outside whose condition holds (or all); True if any woke."""
        woke = False
        for client in sorted(self._outside, key=lambda c: c.index):
            ready = self._outside[client]()
            if ready or all_of_them:
                del self._outside[client]
                client.woken = ready
                self._running.add(client)
                client.wake.notify()
                woke = True
        return woke

    def submit(self, step_plan: _SimPlan, feed_values: list, step_id: int | None = None) -> list:
        """Runs one step for the calling client; returns its fetched values.

        Args:
            step_plan: The run signature's plan (a `SimulatedMaster`'s).
            feed_values: The fed values, in the plan's order.
            step_id: The step's id (default: one from the client and a count);
                a `SimulatedMaster` gives the id a real master would, so a
                recorded schedule replays on real tasks (`schedule`).

        Raises:
            OpError: the step's error.
            RuntimeError: if the calling thread is not a client of this simulation.
        """
        client = self._caller()
        with self._cond:
            number = next(client.steps)
            if step_id is None:
                step_id = client.index << 32 | number
            step = _Step(client, number, step_id, step_plan.fetch_from, feed_values)
            for task_name, registered, feed_index in step_plan.parts:
                task = self.task(task_name)
                ctx = StepContext(
                    task.resource_mgr,
                    None,
                    step.step_id,
                    rendezvous=task.rendezvous,
                    transport=task,
                    client=step_plan.client,
                    clock=self.clock,
                )
                execution = StepExecution(
                    registered.plan, ctx, [feed_values[i] for i in feed_index]
                )
                delay = self._delay(task_name, registered)
                part = _Part(step, task, execution, client.time + delay, self._dirty)
                part.delay = delay
                step.parts.append(part)
            self._new.append(step)
            self._running.discard(client)
            self._cond.notify()
            while not step.done:
                client.wake.wait()
        if step.error is not None:
            raise step.error
        return step.values

    def note_loss(self, task: str, value: Any) -> None:
        """Records a loss a client fetched, at its client's virtual time.

        Args:
            task: The client's task.
            value: The fetched value; only a scalar is recorded.
        """
        if np.ndim(value) == 0:
            self.losses.append((self._caller().time, task, float(value)))

    # -- the loop --------------------------------------------------------------------------

    def run_until_clients_end(self) -> None:
        """Makes moves until every client has ended (call it from the thread that started them)."""
        with self._cond:
            while True:
                clients_ran = bool(self._running)
                while self._running:
                    self._cond.wait()
                # What parked clients wait for (a stop, a thread's end) changes
                # only while clients run, never during moves.
                if clients_ran and self._outside and self._wake_outside():
                    continue
                if self._new:
                    for step in sorted(self._new, key=lambda s: s.key):
                        self._steps.add(step)
                        if _finished(step):
                            # Nothing to run (folded away).
                            self._end(step, step.client.time, None)
                            continue
                        for part in step.parts:
                            self._offer(part, part.start)
                    self._new.clear()
                self._absorb(self.clock.seconds)
                move = self._next_move()
                if move is not None:
                    self._make(*move)
                    if self._now:
                        self._make_isolated()
                    continue
                if self._steps:
                    self._fail_deadlocked()
                    continue
                if self._outside:
                    self._wake_outside(all_of_them=True)  # what they wait for cannot happen
                    continue
                if not any(c.alive for c in self._clients):
                    return

    def _next_move(self):
        """The move that can start earliest (ties: task, step, deliver before run, op).

        Candidates wait in a heap keyed by when their op became available; a
        popped one whose task is busy later than that goes back with its
        real start, so the first one that pops unchanged is the earliest.
        """
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            time, order, key, kind, i, _, part, epoch = entry
            if part.step.done or epoch != part.epoch:
                continue
            if kind == 0 and i not in part.execution.arrived:
                continue
            start = max(time, part.task.busy_until)
            if start > time:
                heapq.heappush(heap, (start, order, key, kind, i, next(self._seq), part, epoch))
                continue
            return part.step, part, "deliver" if kind == 0 else "run", i, start
        return None

    def _offer(self, part: _Part, time: float, moved: int | None = None) -> None:
        """Puts the part's newly ready ops, and completions arrived by ``time``, in the heap.

        Args:
            moved: The op that just ran or was delivered, if the part moved.
        """
        execution, key, order = part.execution, part.step.key, part.task.order
        heap = self._heap
        if part.dirty:
            part.dirty = False
            arrived = execution.arrived
            before = len(arrived)
            execution.collect()
            for n in range(before, len(arrived)):
                i = arrived[n]
                op = execution.steps[i].op
                if op.type in _OFFERED_OPS:
                    # On a held real task this attempt is first offered to its
                    # step, which runs it as a move of its own (ops.data_flow.blocking).
                    where = (len(self._moves), part.task.name, part.step.step_id, op.name)
                    self._offered.append(where)
                when = max(part.ready_at.get(i, part.start), time)
                part.ready_at[i] = when
                heapq.heappush(heap, (when, order, key, 0, i, next(self._seq), part, part.epoch))
        # New ready ops are among the successors of the op that just moved
        # (all ready ops when the step starts); each is pushed once.
        pushed, pending = part.pushed, execution.pending
        steps = execution.steps
        now = self._now if moved is not None and self._cost is None else None
        for i in execution.ready if moved is None else steps[moved].successors:
            if i not in pushed and not pending[i]:
                pushed.add(i)
                available = part.available(i)
                if now is not None and steps[i].isolated and available <= time:
                    now.append((part, i, part.epoch))  # made at once: see _make_isolated
                    continue
                heapq.heappush(
                    heap, (available, order, key, 1, i, next(self._seq), part, part.epoch)
                )

    def _absorb(self, time: float) -> None:
        """Takes in the completions that moves made (they arrive at ``time``)."""
        while self._dirty:
            dirty = list(self._dirty)
            self._dirty.clear()  # the parts hold this list: empty it, never replace it
            for part in dirty:
                if not part.step.done:
                    self._offer(part, time)

    def _make(self, step: _Step, part: _Part, kind: str, i: int, start: float) -> None:
        execution = part.execution
        plan_step = execution.steps[i]
        clock = self.clock
        if clock.seconds < start:
            clock.seconds = start
        running = kind == "run"
        end = start + self._cost(plan_step.op) if running and self._cost is not None else start
        task = part.task
        # Not the step itself: a finished step's values must not outlive it.
        self._moves.append(
            (start, task, step.client, step.key[1], step.step_id, running, plan_step)
        )
        try:
            if running:
                execution.run_op(i)
            else:
                execution.deliver(i)
        except errors.OpError as exc:
            self._end(step, end, exc)
            return
        if end > start:
            task.busy_until = end
            self.busy[task.name] += end - start
            clock.seconds = end
        if plan_step.op.type in _ACCUMULATOR_OPS:
            self._note_accumulators(task, end, step.cancelled)
            if not running and "TakeGradient" in plan_step.op.type:
                taken = execution.vals[plan_step.in_slots[0]]
                step.cancels = step.cancels or getattr(taken, "cancels_in_flight", False)
        if running and i in execution.waiting:
            part.ready_at[i] = end  # an asynchronous op's completion arrives no earlier
        else:
            part.ended(i, end)
        self._offer(part, end, i)
        if self._dirty:
            self._absorb(end)  # completions this move made arrive when it ends
        if not (execution.ready or execution.waiting) and _finished(step):
            self._end(step, end, None)

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
            if not part.step.done and epoch == part.epoch:
                self._make(part.step, part, "run", i, part.available(i))

    @property
    def move_count(self) -> int:
        """How many moves have been made."""
        return len(self._moves)

    @property
    def events(self) -> list[tuple]:
        """Every move made, in order.

        Each is ``(time, task, client, step number, "run" or "deliver", op name)``.
        """
        moves, made = self._moves, self._events
        for start, task, client, number, _, running, plan_step in moves[len(made) :]:
            made.append(
                (start, task.name, client.name, number,
                 "run" if running else "deliver", plan_step.op.name)
            )  # fmt: skip
        return made

    def schedule(self) -> dict[str, list[tuple[int, int, str]]]:
        """Each task's moves so far, in order, as a real task's stepper logs them.

        Each move is ``(step id, RUN or DELIVER, op name)`` (`minitf.runtime.core.scheduler`).
        The ids are those the same sessions get on real tasks, so the
        schedule can be replayed there (`minitf.stepper.Stepper.replay`).
        """
        moves: dict[str, list[tuple[int, int, str]]] = {}
        offered = iter(self._offered)
        offer = next(offered, None)
        for made, (_, task, _, _, step_id, running, plan_step) in enumerate(self._moves, 1):
            moves.setdefault(task.name, []).append(
                (step_id, RUN if running else DELIVER, plan_step.op.name)
            )
            # A dequeue or take_grad that this move let finish ran here, at
            # once; a held task first offers it to its step, whose delivery of
            # the offer is the next move on the task.
            while offer is not None and offer[0] == made:
                _, where, waiting, op_name = offer
                moves.setdefault(where, []).append((waiting, DELIVER, op_name))
                offer = next(offered, None)
        return moves

    def _note_accumulators(self, task: _Task, time: float, cancelled: bool) -> None:
        """Timestamps what the task's accumulators have recorded since the last look.

        Args:
            cancelled: Whether the move was made by a step whose computation was cancelled.
        """
        for _, name, resource in task.resource_mgr.items():
            history = getattr(resource, "history", None)
            if history is None:
                continue
            key = (task.name, name)
            new = resource.events - self._accumulator_seen.get(key, 0)
            if new > 0:
                timed = self.accumulator_events.setdefault(key, [])
                timed.extend((event, time, cancelled) for event in list(history)[-new:])
                self._accumulator_seen[key] = resource.events

    def _end(self, step: _Step, time: float, error: errors.OpError | None) -> None:
        if error is None:
            planned = sum(len(p.execution.steps) for p in step.parts)
            self.completed.append((step.client.name, step.key[1], planned))
            finished = {p.task.name: p.execution for p in step.parts}
            results = {name: execution.fetches() for name, execution in finished.items()}
            step.values = [
                _copied(step.feed_values[index] if task is None else results[task][index])
                for task, index in step.fetch_from
            ]
        else:
            step.error = error
            for part in step.parts:
                part.task.rendezvous.abort(step.step_id, error)
                part.execution.ctx.cancellation.start_cancel()
        for part in step.parts:
            part.task.rendezvous.cleanup(step.step_id)
        self._steps.discard(step)
        if step.cancels and error is None:
            self._cancel_in_flight(time)
        step.done = True
        step.end = time
        client = step.client
        client.time = max(client.time, time)
        self._running.add(client)  # it runs again until it parks or ends
        client.wake.notify()

    def _cancel_in_flight(self, time: float) -> None:
        """An update was made: every worker still computing gradients stops now.

        A policy's accumulator asks for this (`minitf.cluster.policies`): a
        part still in its delay starts at once, so the rest of the delay is
        never spent, and the step goes on with what it read, as a cancelled
        computation whose gradient the accumulator drops as stale.
        """
        for step in sorted(self._steps, key=lambda s: s.key):
            for part in step.parts:
                if part.delay <= 0 or part.start <= time:
                    continue
                self.delayed[part.task.name] -= part.start - time
                self.cancelled.append((time, part.task.name))
                step.cancelled = True
                part.start = time
                part.ready_at = {i: min(t, time) for i, t in part.ready_at.items()}
                part.epoch += 1
                order, key, heap = part.task.order, step.key, self._heap
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
            for part in step.parts:
                execution = part.execution
                for i in sorted(execution.waiting):
                    name = execution.steps[i].op.name
                    what = describe_wait(execution.waits_for(i))
                    waits.append(f"{name} on {part.task.name} waits for {what}")
            message = (
                "Timed out waiting for notification (every client of the simulated cluster "
                "waits and no op can move): " + "; ".join(waits or ["nothing"])
            )
            self._end(step, self.clock.seconds, errors.DeadlineExceededError(None, None, message))

    def _delay(self, task_name: str, registered: RegisteredGraph) -> float:
        job, index = partition_lib.parse_task(task_name)
        model = self._delays.get(index, self._delays.get("*")) if job == "worker" else None
        if model is None or not registered.computes_gradients:
            return 0.0
        rng = self._rngs.get(index)
        if rng is None:
            rng = self._rngs[index] = np.random.default_rng([self.seed, index])
        delay = float(model(rng))
        self.delayed[task_name] += delay
        return delay


class SimulatedServer:
    """``tf.train.Server`` in a task's script that a simulated cluster runs.

    Made by ``tf.train.Server(...)`` itself when it is called in a client of
    a simulation: its target is the simulated task's, and ``join`` parks the
    task until every client that is not joining has ended (a ps task's script
    waits there, as it waits for ever on a real cluster).

    Args:
        simulation: The `Simulation`.
        cluster: The cluster the script gave ``tf.train.Server``.
        job: The task's job.
        task: The task's index.

    Raises:
        ValueError: if the cluster is not the simulation's.
    """

    def __init__(self, simulation: Simulation, cluster: ClusterSpec, job: str, task: int):
        if cluster.as_dict() != simulation.cluster_spec.as_dict():
            raise ValueError(
                f"tf.train.Server's cluster {cluster.as_dict()} is not the simulated cluster's "
                f"{simulation.cluster_spec.as_dict()}: build it from the --*_hosts flags "
                "(or TF_CONFIG) the simulated cluster gives each task"
            )
        self._simulation = simulation
        self._cluster = cluster
        self._job, self._task = job, task
        self.target = simulation.target(job, task)

    @property
    def server_def(self) -> dict:
        """A ``ServerDef``-like dict: the cluster, this job and task."""
        return server_def(self._cluster, self._job, self._task)

    @property
    def task_name(self) -> str:
        """``/job:<job>/replica:0/task:<i>``."""
        return f"/job:{self._job}/replica:0/task:{self._task}"

    def start(self) -> None:
        """Nothing to start: the simulation holds the task."""

    def stop(self) -> None:
        """Nothing to stop: the simulation holds the task."""

    def join(self) -> None:
        """Parks until every client that is not joining has ended."""
        self._simulation.join_server()


class SimulatedMaster:
    """A session's master on a `Simulation`: plans each run signature, hands each run over.

    Has the methods of `minitf.runtime.distributed.master.Master` that a session uses.

    Args:
        target: The session's target, a task of the simulation.
        graph: The session's graph.
        config: The session's `ConfigProto`.
    """

    def __init__(self, target: str, graph: ops.Graph, config: ConfigProto):
        simulation, job, task = _parse_target(target)
        self._simulation = simulation
        self._graph = graph
        self._config = config
        self.cluster = simulation.cluster_spec
        self.job, self.task = job, task
        self.task_name = f"/job:{job}/replica:0/task:{task}"
        self._plans: dict[tuple, _SimPlan] = {}
        self._segments: dict[str, dict] = {}  # this session's stateful kernels, per task

        # The ids a real master would give (with a replayable incarnation).
        self._step_ids = StepIds(self.task_name, simulation.sessions, REPLAYABLE)
        self._closed = False

    def devices(self) -> list[str]:
        """Every device of the cluster (each task's one CPU)."""
        return [partition_lib.full_device_of(t) for t in self._simulation.tasks()]

    def run(
        self,
        fetches: list[ops.Tensor],
        targets: list[ops.Operation],
        feeds: list[ops.Tensor],
        feed_values: list,
        timeout_ms: int,
        trace: bool = False,
    ) -> tuple[list, None]:
        """Runs one step on the simulation; returns ``(values, None)``.

        Args:
            fetches: The tensors the run fetches.
            targets: The ops it runs.
            feeds: The tensors it feeds.
            feed_values: The fed values, one per feed.
            timeout_ms: Ignored: virtual time has no deadline.
            trace: Ignored: a simulation's trace is its event log.

        Raises:
            CancelledError: if the session has been closed.
            OpError: the step's error.
        """
        if self._closed:
            raise errors.CancelledError(None, None, "Session has been closed.")
        key = (tuple(fetches), tuple(targets), tuple(feeds), self._graph.version)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._build(list(fetches), list(targets), list(feeds))
        step_id = self._step_ids.next(fetches, targets, feeds)
        values = self._simulation.submit(plan, list(feed_values), step_id)
        if plan.loss is not None:
            self._simulation.note_loss(self.task_name, values[plan.loss])
        return values, None

    def _build(self, fetches, targets, feeds) -> _SimPlan:
        tasks = {job: self.cluster.num_tasks(job) for job in self.cluster.jobs}
        parts, fetch_from = partition_lib.partition_step(
            fetches, targets, feeds, tasks, self.job, self.task, self._config.allow_soft_placement
        )
        plan = _SimPlan(self.task_name)
        feed_index = {t.name: i for i, t in enumerate(feeds)}
        for task in sorted(parts, key=lambda t: self._simulation.task(t).order):
            part = parts[task]
            part.client = self.task_name
            registered = RegisteredGraph(part, self._segments.setdefault(task, {}))
            plan.parts.append((task, registered, [feed_index[name] for _, name in part.feeds]))
        plan.fetch_from = fetch_from
        names = self._simulation.loss_names
        fetch_names = [getattr(f, "name", f) for f in fetches]
        plan.loss = next(
            (n for n, f in enumerate(fetch_names) if f.endswith(":0") and _base_name(f) in names),
            None,
        )
        return plan

    def accumulators(self, since: dict | None = None, job: str | None = None) -> list[dict]:
        """Every accumulator of the cluster's tasks and what it has seen.

        Args:
            since: ``{shared name: event number}``: only newer history.
            job: Only the tasks of this job, or None for all.
        """
        found = []
        for name in self._simulation.tasks():
            if job is None or partition_lib.parse_task(name)[0] == job:
                for acc in self._simulation.task(name).resource_mgr.accumulators(since):
                    found.append({**acc, "task": name})
        return found

    def start_recording(self):
        """Not available: a simulated cluster's trace is its event log (`Simulation.events`).

        Raises:
            UnimplementedError: always.
        """
        raise errors.UnimplementedError(
            None, None, "traces of a simulated cluster come from its event log (Simulation.events)"
        )

    stop_recording = start_recording

    def close(self) -> None:
        """Closes the session; the simulation and its tasks' state stay."""
        self._closed = True


class _SimPlan:
    def __init__(self, client: str):
        self.client = client
        self.parts: list[tuple[str, RegisteredGraph, list[int]]] = []
        self.fetch_from: list[tuple[str | None, int]] = []
        self.loss: int | None = None  # which fetch is the loss, if one is


def _base_name(tensor_name: str) -> str:
    """``"model/loss:0"`` → ``"loss"`` (the last part of the op's name)."""
    return tensor_name.rsplit(":", 1)[0].rsplit("/", 1)[-1]


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


def _parse_target(target: str) -> tuple[Simulation, str, int]:
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


def _finished(step: _Step) -> bool:
    return all(part.execution.finished for part in step.parts)


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
        return lambda op: float(op_cost(op))
    if not isinstance(op_cost, dict) or not all(
        isinstance(seconds, (int, float)) and seconds >= 0 for seconds in op_cost.values()
    ):
        raise TypeError(
            "op_cost must be None, a function of the op, or {op type: seconds >= 0} "
            f"('*' for the others); got {op_cost!r:.200}"
        )
    table = dict(op_cost)
    return lambda op: float(table.get(op.type, table.get("*", 0.0)))
