"""How the master reaches its tasks: a transport is a way to call each task's `Worker`.

The master (`minitf.runtime.distributed.master`) never builds a wire message
nor looks a server up: it asks its transport to

* `TcpTransport.register` a partition with a task (TF's ``RegisterGraph``),
* `TcpTransport.run` a registered partition for one step (``RunGraph``),
* `TcpTransport.abort` a step on a task,
* `TcpTransport.request` what observers read (accumulators, clocks, traces),

and, when the session's own task is served in this process, gives it that
task's `Worker` (`TcpTransport.local_worker`) to call directly, as TF's
master calls its local worker without gRPC.

`TcpTransport` carries the calls over the authenticated TCP wire
(`minitf.runtime.distributed.wire`): one `Channel` per task, whose reader
thread hands each reply to its `Call`.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable
from typing import Any

from minitf.framework import errors, ops
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.cluster_spec import ClusterSpec
from minitf.runtime.distributed.connect import connect_with_retry, in_process_worker
from minitf.runtime.distributed.step_ids import StepIds
from minitf.runtime.distributed.wire import Wire

_FINISHED = threading.Event()
_FINISHED.set()


class Call:
    """One request to a task, waiting for its reply (`event` is set when it comes).

    Args:
        notify: An event to set too when the reply comes (one event may serve many calls).
        finished: True for a call already over (made in this process).
    """

    __slots__ = ("event", "reply", "notify", "on_error", "carried_to")

    def __init__(self, notify: threading.Event | None = None, finished: bool = False):
        # A call made in this process is over before anyone waits on it.
        self.event = _FINISHED if finished else threading.Event()
        self.reply: tuple | None = None
        self.notify = notify  # also set when the reply comes (one event for many calls)
        self.on_error = None  # called with an error reply, on the thread that brings it
        # (worker, step id): where the tensors a run's reply carries go (server's ``carry``).
        self.carried_to: tuple | None = None

    def finish(self, reply: tuple) -> None:
        """Takes the reply: files the tensors it carries, then wakes whoever waits.

        Args:
            reply: ``("ok", call id, values, ...)`` or ``("error", call id, code, message, op)``.
        """
        if self.carried_to is not None and len(reply) > 4 and reply[0] == "ok":
            worker, step_id = self.carried_to
            for key, value in reply[4]:
                worker.deliver_tensor(step_id, key, value)
        self.reply = reply
        if self.event is not _FINISHED:
            self.event.set()
        if self.notify is not None:
            self.notify.set()
        if self.on_error is not None and reply[0] == "error":
            self.on_error(reply)


class Channel:
    """A client connection to one task; a reader thread hands replies to their callers.

    Args:
        wire: The connection to the task.
        task: The task's name.
    """

    def __init__(self, wire: Wire, task: str):
        self.task = task
        self._wire = wire
        self._lock = threading.Lock()
        self._calls: dict[int, Call] = {}
        self._ids = itertools.count(1)
        self._lost: str | None = None
        threading.Thread(target=self._read, name=f"minitf-channel{task}", daemon=True).start()

    def call(
        self, build, notify: threading.Event | None = None, carried_to: tuple | None = None
    ) -> Call:
        """Sends ``build(call_id)``; returns the pending call (``notify`` is set when it ends).

        Args:
            build: ``build(call_id) -> message``: the request to send.
            notify: An event to set too when the reply comes (one event may serve many calls).
            carried_to: ``(worker, step id)``: the in-process worker that receives
                the tensors the reply carries (a run sent with ``carry``), or None.
        """
        pending = Call(notify)
        pending.carried_to = carried_to  # before the request leaves: the reply may come at once
        with self._lock:
            call_id = next(self._ids)
            if self._lost is None:
                self._calls[call_id] = pending
        if self._lost is not None:
            pending.finish(("error", call_id, errors.UNAVAILABLE, self._lost, None))
            return pending
        try:
            self._wire.send(build(call_id))
        except OSError as exc:
            self._fail_all(f"lost the connection to {self.task}: {exc}")
        return pending

    def send(self, message: tuple) -> None:
        """Sends a one-way message (an abort); a broken connection is ignored.

        Args:
            message: The message.
        """
        try:
            self._wire.send(message)
        except OSError:
            pass

    def request(self, build, timeout: float) -> Any:
        """A call that waits for its reply; returns the payload or raises its error.

        Args:
            build: ``build(call_id) -> message``: the request to send.
            timeout: Seconds to wait for the reply.

        Raises:
            UnavailableError: if the task does not answer in time.
            OpError: the TF error the task replied with.
        """
        pending = self.call(build)
        if not pending.event.wait(timeout):
            raise errors.UnavailableError(None, None, f"{self.task} did not answer in {timeout} s")
        return unpack(pending.reply, None)

    @property
    def lost(self) -> bool:
        """True once the connection is gone."""
        return self._lost is not None

    @property
    def wire(self) -> Wire:
        """The connection (the server in this process sends tensors on it too)."""
        return self._wire

    def _read(self) -> None:
        while True:
            try:
                reply = self._wire.recv()
            except Exception as exc:  # noqa: BLE001 - a wire closed under recv raises TypeError
                self._fail_all(f"lost the connection to {self.task} ({type(exc).__name__})")
                return
            with self._lock:
                pending = self._calls.pop(reply[1], None)
            if pending is not None:
                pending.finish(reply)

    def _fail_all(self, why: str) -> None:
        with self._lock:
            if self._lost is None:
                self._lost = why
            calls, self._calls = self._calls, {}
        for call_id, pending in calls.items():
            pending.finish(("error", call_id, errors.UNAVAILABLE, why, None))

    def close(self) -> None:
        """Closes the connection; calls still waiting for a reply fail with UnavailableError."""
        self._fail_all(f"the connection to {self.task} was closed")
        self._wire.close()


def _run_message(call: int, *, handle, step_id, feeds, timeout_ms, trace, carry) -> tuple:
    """The ``run`` request of one task's part of a step (`minitf.runtime.distributed.server`)."""
    return ("run", call, handle, step_id, feeds, timeout_ms, trace, carry)


def unpack(reply: tuple, graph: ops.Graph | None) -> Any:
    """The payload of an ``ok`` reply, or raises the TF error of an ``error`` reply.

    Args:
        reply: A reply from a task: ``("ok", call id, payload)`` or ``("error", call id, code,
            message, op name)``.
        graph: The client graph, whose op the error names, or None.

    Raises:
        OpError: the TF error of an ``error`` reply.
    """
    if reply[0] == "ok":
        return reply[2]
    raise rebuild_error(reply[2], reply[3], reply[4], graph)


def rebuild_error(code: int, message: str, op_name: str | None, graph) -> errors.OpError:
    """The TF error a task reported, naming the client graph's op when it can.

    Args:
        code: The TF error code.
        message: The error message.
        op_name: The failing op's name, or None.
        graph: The client graph to find the op in, or None.
    """
    op = None
    if op_name is not None and graph is not None:
        try:
            op = graph.get_operation_by_name(op_name)
        except (KeyError, ValueError):
            op = None
    cls = errors.exception_type_from_error_code(code)
    return cls(op.node_def if op is not None else None, op, message)


class TcpTransport:
    """The master's calls to the tasks of a cluster over the authenticated TCP wire.

    Connects to the session target's server, asks it for the cluster and its
    own task (``hello``), and connects to every other task on first use.

    Args:
        target_address: ``"host:port"`` of the session target's server.
        target: The target as the session gave it (for error messages).

    Attributes:
        cluster: The `ClusterSpec`, as the target's server knows it.
        job: The target task's job.
        task: The target task's index.
        remade: How many connections were made again after one was lost.
        remade_task: The task the last one went to, or None.
    """

    def __init__(self, target_address: str, target: str):
        self._address = target_address
        wire = connect_with_retry(target_address, f"the session target {target}")
        first = Channel(wire, target)
        cluster, self.job, self.task = first.request(lambda c: ("hello", c), timeout=30.0)
        self.cluster = ClusterSpec(cluster)
        self._task_name = f"/job:{self.job}/replica:0/task:{self.task}"
        self._channels: dict[str, Channel] = {self._task_name: first}
        self._lock = threading.Lock()
        self._closed = False
        self._on_remade: Callable[[], None] | None = None
        self.remade = 0
        self.remade_task: str | None = None

    def step_ids(self, task_name: str) -> StepIds:
        """The ids of a session's steps (`minitf.runtime.distributed.step_ids`).

        Args:
            task_name: The session's task.
        """
        return StepIds(task_name)

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        """Waits up to ``timeout`` seconds (None: for ever) for ``event``; True if it is set.

        Args:
            event: What the master waits for (a reply).
            timeout: Seconds, or None.
        """
        return event.wait(timeout)

    def on_remade(self, forget: Callable[[], None]) -> None:
        """Calls ``forget()`` whenever a lost connection is made again (the task may be new).

        Args:
            forget: What the master forgets then (its registered partitions).
        """
        self._on_remade = forget

    def channel(self, task: str, connect_timeout: float | None = None) -> Channel:
        """The connection to ``task`` (made on first use, remade if lost).

        Args:
            task: The task name.
            connect_timeout: Seconds to keep trying to connect (default:
                ``MINITF_CONNECT_TIMEOUT``).

        Raises:
            CancelledError: if the transport has been closed.
            UnavailableError: if the task cannot be reached.
        """
        with self._lock:
            if self._closed:
                raise errors.CancelledError(None, None, "Session has been closed.")
            channel = self._channels.get(task)
            if channel is not None and not channel.lost:
                return channel
            job, index = partition_lib.parse_task(task)
            wire = connect_with_retry(self.cluster.task_address(job, index), task, connect_timeout)
            remade = channel is not None
            if remade:
                self.remade += 1
                self.remade_task = task
            channel = Channel(wire, task)
            self._channels[task] = channel
        if remade and self._on_remade is not None:
            # A restarted task knows none of our partitions: the master forgets
            # its plans, outside this lock (it takes its build lock, which a
            # thread building a plan holds while it asks here for a channel).
            self._on_remade()
        here = self.local_worker()
        share = getattr(here.transport, "share", None) if here is not None else None
        if share is not None:
            share(task, channel)  # this task's tensors for ``task`` go on it too
        return channel

    def local_worker(self):
        """The `Worker` of the session's own task when its server runs in this process, or None."""
        worker = in_process_worker(self._address)
        return worker if worker is not None and worker.task_name == self._task_name else None

    def register(self, task: str, part: partition_lib.Partition) -> int:
        """Registers a partition with ``task``; returns its handle (TF's ``RegisterGraph``).

        Args:
            task: The task.
            part: The partition.

        Raises:
            OpError: the task's error.
        """
        return self.channel(task).request(lambda c: ("register", c, part), 60.0)

    def run(
        self, task: str, handle: int, step_id: int, feeds: list, timeout_ms: int, trace: bool,
        carry: bool, notify: threading.Event, carried_to: tuple | None,
    ) -> Call:  # fmt: skip
        """Starts one task's part of a step; returns the `Call` its reply finishes.

        Args:
            task: The task.
            handle: What `register` returned.
            step_id: The step's id.
            feeds: The values its partition reads.
            timeout_ms: The step's deadline (0: none).
            trace: Whether to return the part's op stats.
            carry: Whether tensors for the session's task may come with the reply.
            notify: Set when the reply comes (one event for every task of the step).
            carried_to: ``(worker, step id)`` that receives carried tensors, or None.
        """
        message = functools.partial(
            _run_message, handle=handle, step_id=step_id, feeds=feeds,
            timeout_ms=timeout_ms, trace=trace, carry=carry,
        )  # fmt: skip
        return self.channel(task).call(message, notify, carried_to)

    def abort(self, task: str, step_id: int, code: int, message: str) -> None:
        """Aborts a step on ``task``, if there is a connection to it.

        Args:
            task: The task.
            step_id: The step.
            code: The TF error code its waiting ops fail with.
            message: The error message.
        """
        channel = self._channels.get(task)
        if channel is not None:
            channel.send(("abort", step_id, code, message))

    def request(self, task: str, kind: str, *args: Any, timeout: float = 10.0,
                connect_timeout: float | None = None) -> Any:  # fmt: skip
        """A call to an observer's method of ``task`` (``clock``, ``accumulators``, ...).

        Args:
            task: The task.
            kind: The call.
            *args: Its arguments.
            timeout: Seconds to wait for the reply.
            connect_timeout: Seconds to keep trying to connect.

        Raises:
            UnavailableError: if the task does not answer in time.
            OpError: the task's error.
        """
        channel = self.channel(task, connect_timeout)
        return channel.request(lambda c: (kind, c, *args), timeout)

    def lost(self, task: str) -> bool:
        """Whether the connection to ``task`` has been lost.

        Args:
            task: The task.
        """
        channel = self._channels.get(task)
        return channel is not None and channel.lost

    def close(self, active_steps: list[int]) -> None:
        """Aborts ``active_steps`` on every task and closes the connections.

        Args:
            active_steps: The steps still running.
        """
        with self._lock:
            self._closed = True
            local = self.local_worker()
            for step_id in active_steps:
                for channel in self._channels.values():
                    channel.send(("abort", step_id, errors.CANCELLED, "Session was closed."))
                if local is not None:
                    # A part running here with a direct call: cancel it directly too,
                    # not only through the message the connection closed next carries.
                    local.abort_step(
                        step_id, errors.CancelledError(None, None, "Session was closed.")
                    )
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
