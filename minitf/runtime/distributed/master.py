"""The master: how ``tf.Session(target)`` runs a step across the tasks of a cluster.

For each run signature (fetches, targets, feeds — and the graph's version)
the master, once:

1. prunes the graph to what the step needs, places every op on a task and
   partitions the ops per task, with ``_Send``/``_Recv`` pairs on the edges
   between tasks (`minitf.runtime.distributed.partition.partition_step`);
2. registers each partition with its task, which plans it and keeps it.

The master reaches its tasks only through its transport
(`minitf.runtime.distributed.transport`): it never builds a wire message.
Every run starts each task's part with the step id, the fed values its
partition reads and the deadline; the tasks run their partitions
concurrently and exchange tensors through their rendezvous; the master
gathers the fetched values. If any task fails, or the deadline passes, the
master aborts the step on every task and raises the TF error — the root
cause, not the cancellations it triggered.

In TF the master runs inside the server the session connects to; in minitf
it runs in the client process, which asks that server for the cluster and
talks to every task directly. The session's default device is that server's
task.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np

from minitf.framework import errors, ops
from minitf.runtime.core import config, step_stats
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.connect import error_message, parse_address
from minitf.runtime.distributed.observers import Observers
from minitf.runtime.distributed.step_ids import incarnation
from minitf.runtime.distributed.step_ids import signature as run_signature
from minitf.runtime.distributed.transport import Call, TcpTransport, rebuild_error, unpack

logger = logging.getLogger("minitf")

_ABORT_GRACE = 5.0  # seconds to let aborted partitions report before giving up on them
_LOSER_CODES = (errors.CANCELLED, errors.ABORTED)
_DEADLINE_GRACE = 2.0  # seconds to let a task past the step's deadline say what waited there


def target_address(target: str) -> str:
    """``"grpc://host:port"`` or ``"minitf://host:port"`` → ``"host:port"``.

    Args:
        target: A session target.

    Raises:
        InvalidArgumentError: for another scheme, or an address with no port.
    """
    for scheme in ("grpc://", "minitf://"):
        if target.startswith(scheme):
            address = target[len(scheme) :]
            parse_address(address)  # TF refuses an address with no port when the session is made
            return address
    raise errors.InvalidArgumentError(
        None,
        None,
        f"Session target {target!r} is not a server address: use a tf.train.Server's "
        "target ('grpc://host:port'), or '' for a local session.",
    )


class _StepPlan:
    """A run signature, partitioned and registered: what each run sends where."""

    def __init__(self):
        self.parts: list[tuple[str, int, list[int]]] = []  # (task, handle, feed indices)
        self.fetch_from: list[tuple[str | None, int]] = []  # (task or None for a feed, index)
        self.partitions: dict[str, partition_lib.Partition] = {}
        self.signature = ""  # what its step ids are counted by (`run_signature`)


class Master(Observers):
    """Runs a session's steps on a cluster.

    Args:
        target: The session target (a server's ``target``).
        graph: The session's graph.
        config: The session's ``ConfigProto``.
        transport: How to reach the tasks (default: TCP to the target's server;
            a simulated cluster's is `minitf.runtime.distributed.in_process`).

    Raises:
        UnavailableError: if the target server cannot be reached.
    """

    def __init__(self, target: str, graph: ops.Graph, config, transport=None):
        self._graph = graph
        self._config = config
        self._transport = transport or TcpTransport(target_address(target), target)
        self._transport.on_remade(self._forget_plans)
        self.cluster = self._transport.cluster
        self.job, self.task = self._transport.job, self._transport.task
        self.task_name = f"/job:{self.job}/replica:0/task:{self.task}"
        self._plans: dict[tuple, _StepPlan] = {}
        self._build_lock = threading.RLock()  # a connection remade while building forgets plans
        self._clock_offsets: dict[str, int] = {}
        self._active: set[int] = set()  # steps running now, aborted by close()
        self._active_lock = threading.Lock()
        self._step_ids = self._transport.step_ids(self.task_name)
        # What a run's replies set: an in-process transport's needs no lock (`new_event`).
        self._new_event = getattr(self._transport, "new_event", threading.Event)
        self._closed = False

    def _forget_plans(self) -> None:
        with self._build_lock:
            self._plans = {}

    def close(self) -> None:
        """Cancels the steps still running on the tasks and closes the connections.

        The servers and their state stay. A ``run`` still waiting raises
        ``CancelledError``, as in TF; its partitions are aborted on every task,
        so none of its blocked ops (a dequeue, a ``take_grad``) lives on to take
        an element meant for a later step.
        """
        with self._active_lock:
            self._closed = True
            active = list(self._active)
        self._transport.close(active)

    # -- planning --------------------------------------------------------------------------

    def _plan(self, fetches, targets, feeds) -> _StepPlan:
        key = (tuple(fetches), tuple(targets), tuple(feeds), self._graph.version)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        with self._build_lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = self._build(list(fetches), list(targets), list(feeds))
                if len(self._plans) > 256:
                    self._plans.clear()
                self._plans[key] = plan
        return plan

    def _build(self, fetches, targets, feeds) -> _StepPlan:
        tasks = {job: self.cluster.num_tasks(job) for job in self.cluster.jobs}
        parts, fetch_from = partition_lib.partition_step(
            fetches, targets, feeds, tasks, self.job, self.task, self._config.allow_soft_placement
        )
        plan = _StepPlan()
        plan.partitions = parts
        feed_index = {t.name: i for i, t in enumerate(feeds)}
        for task, part in parts.items():
            part.client = self.task_name
            part.session = f"{self.task_name}#{incarnation()}#{self._step_ids.base:x}"
            handle = self._transport.register(task, part)
            plan.parts.append((task, handle, [feed_index[name] for _, name in part.feeds]))
        plan.fetch_from = fetch_from
        plan.signature = run_signature(fetches, targets, feeds)
        return plan

    # -- running ---------------------------------------------------------------------------

    def run(
        self, fetches, targets, feeds, feed_values, timeout_ms: int, trace: bool = False
    ) -> tuple[list[Any], dict | None]:
        """Runs one step; returns the fetched values and, if ``trace``, its step stats.

        The step stats have one ``dev_stats`` entry per task, on this
        process's clock (`clock_offset`).

        Args:
            fetches: The tensors the run fetches.
            targets: The ops it runs.
            feeds: The tensors it feeds.
            feed_values: The fed values, one per feed.
            timeout_ms: The step's deadline in milliseconds (0: none).
            trace: Whether to trace the step.

        Raises:
            OpError: the root-cause TF error of a failing task, or
                ``DeadlineExceededError`` after ``timeout_ms`` (0: no limit).
            AbortedError: if a connection to a task was lost and had to be
                made again during this run: the task may be a new process,
                whose state is gone (uninitialized variables), as TF's run
                fails when a task restarts under it. The next run registers
                its partitions again; ``MonitoredSession`` makes a new session
                and waits until the model is ready again.
        """
        remade = self._transport.remade
        plan = self._plan(fetches, targets, feeds)
        step_id = self._step_ids.next_of(plan.signature)
        # Registered under the lock close() takes: a step either is aborted by
        # close() or sees the session closed, never runs on unnoticed.
        with self._active_lock:
            if self._closed:
                raise errors.CancelledError(None, None, "Session has been closed.")
            self._active.add(step_id)
        try:
            return self._run_step(plan, step_id, feed_values, timeout_ms, trace, remade)
        finally:
            self._active.discard(step_id)

    def _run_step(self, plan, step_id, feed_values, timeout_ms, trace, remade):
        transport = self._transport
        for task, _, _ in plan.parts:
            transport.channel(task)  # connected (again, if lost) before anything is sent
        if transport.remade != remade:
            # Nothing was sent: running the partitions registered on a task that
            # restarted could read its state before a chief restores it.
            raise errors.AbortedError(
                None,
                None,
                f"the connection to {transport.remade_task} was lost and made again during "
                "this run: the task may have restarted, and its state with it. The next run "
                "registers this session's partitions again (MonitoredSession makes a new "
                "session and waits until the model is ready).",
            )
        calls = []
        answered = self._new_event()  # set whenever a task answers
        # This process's worker, when it serves the session's own task.
        here = transport.local_worker() if self.task_name in plan.partitions else None
        # With this task's part run here, a task's reply may carry the tensors
        # its last ops send to this task (`Server._start`).
        carry = here is not None and not trace and config.fast()
        carried_to = (here, step_id) if carry else None
        local = None
        for task, handle, feed_idx in plan.parts:
            values = [feed_values[i] for i in feed_idx]
            if here is not None and task == self.task_name and local is None:
                local = (here, handle, values)
                continue
            call = transport.run(
                task, handle, step_id, values, timeout_ms, trace, carry, answered, carried_to
            )
            calls.append((task, call))
        if local is not None:
            # Every other task has its part of the step: this one runs here.
            calls.append((self.task_name, self._run_here(step_id, calls, local, timeout_ms, trace)))
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms else None
        results, failure = self._gather(calls, answered, deadline)
        if failure is not None and self._closed:  # close() has aborted it everywhere
            raise errors.CancelledError(None, None, "Session has been closed.")
        if failure is not None:
            if any(transport.lost(task) for task, _, _ in plan.parts):
                # The task may come back as a new process that knows none of our
                # partitions: the next run plans and registers again. This run
                # fails, as TF's does when a task restarts under it.
                self._forget_plans()
            raise self._abort(step_id, calls, failure)
        values = [
            feed_values[index] if task is None else _owned(results[task][index])
            for task, index in plan.fetch_from
        ]
        if not trace:
            return values, None
        per_task = {
            partition_lib.full_device_of(task): step_stats.shift(
                pending.reply[3], self.clock_offset(task)
            )
            for task, pending in calls
        }
        return values, step_stats.build(per_task)

    @staticmethod
    def _run_here(step_id: int, calls: list, local: tuple, timeout_ms: int, trace: bool) -> Call:
        """Runs this process's own partition of the step with a direct call to its worker.

        No message and no copy: the fed values reach the kernels as read-only
        views (as in a local session), and a fetched value that is read-only
        (a variable's) is copied for the caller. While it runs, a task that
        fails the step cancels it here (``on_error``), as the gathering of
        replies would.

        Returns:
            The finished call, with the reply a server would have sent.
        """
        worker, handle, values = local

        def cancel(reply: tuple) -> None:
            error = errors.exception_type_from_error_code(reply[2])(None, None, reply[3])
            worker.abort_step(step_id, error)

        for _, pending in calls:
            pending.on_error = cancel
        for _, pending in calls:  # a reply that came before its on_error was set
            if pending.event.is_set() and pending.reply[0] == "error":
                cancel(pending.reply)
        done = Call(finished=True)
        try:
            fetched, nodes = worker.run_graph(
                handle, step_id, [_read_only(v) for v in values], timeout_ms, trace
            )
            reply = ("ok", 0, [_local_value(v) for v in fetched])
            if nodes is not None:
                reply = (*reply, nodes)
        except Exception as exc:  # noqa: BLE001 - reported as the task's reply
            reply = ("error", 0, *error_message(exc))
        finally:
            for _, pending in calls:
                pending.on_error = None
        done.finish(reply)
        return done

    def _gather(self, calls, answered: threading.Event, deadline):
        """Every task's results, or the first failure in the order failures come.

        A task that is lost fails its call at once; waiting on the tasks one
        after the other would wait forever on another task whose part waits
        for a tensor the lost one will never send.

        Returns:
            ``({task: results}, None)`` or ``(partial results, OpError)``.
        """
        results: dict[str, list] = {}
        waiting = list(calls)
        while waiting:
            answered.clear()
            still = []
            for task, pending in waiting:
                if not pending.event.is_set():
                    still.append((task, pending))
                    continue
                try:
                    results[task] = unpack(pending.reply, self._graph)
                except errors.DeadlineExceededError as exc:  # the task's deadline came first
                    return results, _on_task(exc, task)
                except errors.OpError as exc:
                    return results, exc
            waiting = still
            if not waiting:  # (an answer that came during the scan set `answered`: no wait)
                break
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._transport.wait(answered, remaining):
                return results, self._deadline_error(waiting)
        return results, None

    def _deadline_error(self, waiting: list) -> errors.OpError:
        """The error of a step past its deadline: a task's own, which names what waited there.

        Every task has the step's deadline too; its error (the ops still
        waiting and for what) comes a moment after this process's.
        """
        late = time.monotonic() + _DEADLINE_GRACE
        for task, pending in waiting:
            if self._transport.wait(pending.event, max(0.0, late - time.monotonic())):
                if pending.reply[0] == "error" and pending.reply[2] == errors.DEADLINE_EXCEEDED:
                    return _on_task(rebuild_error(*pending.reply[2:5], self._graph), task)
        tasks = ", ".join(task for task, _ in waiting)
        return errors.DeadlineExceededError(
            None, None, f"Timed out waiting for {tasks} (the run's deadline passed)"
        )

    def _abort(self, step_id, calls, failure: errors.OpError) -> errors.OpError:
        """Aborts the step everywhere, lets the tasks report, returns the root cause."""
        for task, pending in calls:
            if not pending.event.is_set():
                self._transport.abort(task, step_id, failure.error_code, failure.message)
        grace = time.monotonic() + _ABORT_GRACE
        for _, pending in calls:
            if not self._transport.wait(pending.event, max(0.0, grace - time.monotonic())):
                continue
            if pending.reply[0] == "error" and failure.error_code in _LOSER_CODES:
                if pending.reply[2] not in _LOSER_CODES:
                    failure = rebuild_error(*pending.reply[2:5], self._graph)
        return failure


def _read_only(value: Any) -> Any:
    """A fed array as a view kernels cannot write (the caller keeps it)."""
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


def _local_value(value: Any) -> Any:
    """A value fetched from this process's worker, made the caller's own (as the wire would)."""
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()  # a variable's value, a fed view: not the caller's to write
    return value


def _owned(value: Any) -> Any:
    """A fetched array that just arrived: nobody else holds its memory, so the caller may write it.

    (An array sent read-only — a variable's value — arrives read-only; without
    this the session would copy it once more.)
    """
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        try:
            value.flags.writeable = True
        except ValueError:
            return value  # its memory is not ours to write: the session copies it
    return value


def _on_task(error: errors.OpError, task: str) -> errors.OpError:
    """A task's deadline error, saying which task's ops were still waiting."""
    return type(error)(error.node_def, error.op, f"{error.message} (on {task})")
