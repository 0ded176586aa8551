"""A task's outgoing connections to the other tasks of its cluster, for ``_Send``.

A ``_Send`` on this task gives its tensor to `Peers`, which sends it to the
receiving task's server: on a connection of its own, made on first use and
again after a task restarts, or on the connection a session of this process
already has to that task (`Peers.share`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from minitf.framework import errors
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.cluster_spec import ClusterSpec
from minitf.runtime.distributed.connect import cluster_secret, connect_with_retry, parse_address
from minitf.runtime.distributed.wire import Wire

logger = logging.getLogger("minitf")


class Peers:
    """Outgoing connections from this task to the others, for ``_Send``."""

    def __init__(self, cluster: ClusterSpec, local, name: str):
        self._cluster = cluster
        self._local = local  # this task's worker, for sends to its own task
        self._name = name
        self._lock = threading.Lock()
        self._wires: dict[str, Wire] = {}
        self._connecting: dict[str, threading.Lock] = {}
        self._reached: set[str] = set()  # tasks connected to once: they have started
        self._shared: dict[str, Any] = {}  # task -> a session's channel to it (`share`)

    def share(self, task: str, channel) -> None:
        """Sends the tensors for ``task`` on a session's connection to it, while it lasts.

        A worker script's session in this process holds a connection to each
        task it runs steps on (`minitf.runtime.distributed.transport.Channel`). A tensor sent
        on it reaches that task's reader right behind the run request that
        needs it, and the reader takes both with one wake-up, where a second
        connection would wake a second reader. Once the channel is lost or
        closed, this task's own connection carries the tensors again.

        Args:
            task: The receiving task.
            channel: The session's channel to it.
        """
        if task != self._name:
            with self._lock:
                self._shared[task] = channel

    def send_tensor(self, task: str, step_id: int, key: str, value) -> None:
        """Delivers ``value`` to ``task``'s rendezvous."""
        if task == self._name:
            self._local.deliver_tensor(step_id, key, value)
            return
        self._send(task, ("tensor", step_id, key, value))

    def send_tensors(self, task: str, step_id: int, items: list[tuple[str, Any]]) -> None:
        """Delivers ``(key, value)`` pairs of one step to ``task``'s rendezvous, in one message."""
        if task == self._name:
            for key, value in items:
                self._local.deliver_tensor(step_id, key, value)
            return
        if len(items) == 1:
            self.send_tensor(task, step_id, *items[0])
            return
        self._send(task, ("tensors", step_id, items))

    def _send(self, task: str, message: tuple) -> None:
        """Sends a ``tensor`` or ``tensors`` message to ``task``; a broken connection is forgotten.

        A session's connection may close under the send (the session closed
        on another thread): the message then goes on this task's own
        connection. Nothing of it was taken at the other end, whose reader
        of that connection has gone.

        Raises:
            UnavailableError: if the connection broke; it names the tensors' keys.
        """
        wire, channel = self._wire(task)
        while True:
            try:
                wire.send(message)
                return
            except OSError as exc:
                error = exc
                with self._lock:
                    if channel is None:
                        self._wires.pop(task, None)
                    elif self._shared.get(task) is channel:
                        del self._shared[task]
            if channel is None:
                break
            wire, channel = self._wire(task, shared=False)
        if message[0] == "tensor":
            keys = message[2]
        else:
            keys = ", ".join(key for key, _ in message[2])
        raise errors.UnavailableError(
            None, None, f"lost the connection to {task} while sending {keys}: {error}"
        ) from None

    def _wire(self, task: str, shared: bool = True) -> tuple[Wire, Any]:
        """The connection to send on, and the session's channel it belongs to (or None).

        Args:
            task: The receiving task.
            shared: Whether a session's shared connection may be used.
        """
        with self._lock:
            channel = self._shared.get(task) if shared else None
            if channel is not None:
                if not channel.lost:
                    return channel.wire, channel
                del self._shared[task]
            wire = self._wires.get(task)
            if wire is not None and not wire.hung_up():
                return wire, None
            # One lock per peer: connecting to a task that is down (retried
            # for seconds) must not hold up the tensors for the others.
            connecting = self._connecting.setdefault(task, threading.Lock())
        with connecting:
            with self._lock:
                wire = self._wires.get(task)
                lost = task in self._reached
            if wire is not None and not wire.hung_up():
                return wire, None  # another thread connected meanwhile
            if wire is not None:
                wire.close()  # the task went away; it may be back at its address
            spec = partition_lib.parse_task(task)
            address = self._cluster.task_address(spec[0], spec[1])
            if lost:
                wire = self._reconnect(task, address)
            else:
                wire = connect_with_retry(address, task)  # it may still be starting up
            with self._lock:
                self._wires[task] = wire
                self._reached.add(task)
            return wire, None

    @staticmethod
    def _reconnect(task: str, address: str) -> Wire:
        """One try to reach a task that was reached before and went away.

        The sending thread may be running another client's step (a resumed
        step, `Executor.start`): retrying for `connect_timeout`
        seconds would hold up everything that thread carries. A task that
        is down fails the send at once, as TF's RPC to a task that is gone
        fails with ``UNAVAILABLE``; the next step tries again, and reaches
        the task once it is back.

        Raises:
            UnavailableError: if the task does not answer now.
        """
        try:
            return Wire.connect(parse_address(address), cluster_secret(), timeout=1.0, peer=task)
        except Exception as exc:  # noqa: BLE001 - refused, reset, timed out, or the handshake
            raise errors.UnavailableError(
                None,
                None,
                f"lost the connection to {task}, and it does not answer at {address} "
                f"({type(exc).__name__}: {exc}): it is down or restarting",
            ) from None

    def close(self) -> None:
        with self._lock:
            for wire in self._wires.values():
                wire.close()
            self._wires.clear()
