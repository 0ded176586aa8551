"""What a kernel sees of the step it runs in: `StepContext` (TF's ``OpKernelContext``).

A step's context carries the task's resource manager and rendezvous, the
step's id and deadline, the transport ``_Send`` uses, the clock, and the
step's `CancellationManager`, where a kernel that waits registers how to
wake up when the step is cancelled.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from minitf.framework.ops import Operation
from minitf.runtime.core.clock import WALL_CLOCK, WallClock
from minitf.runtime.core.execution import as_op_error
from minitf.runtime.core.frames import rendezvous_key
from minitf.runtime.core.resource_mgr import ResourceMgr

_step_ids = itertools.count(1)
_container_lock = threading.Lock()  # makes a step's container once (see `step_container`)


class CancellationManager:
    """Lets blocked kernels register how to wake up when a step is cancelled.

    Attributes:
        is_cancelled: True once `start_cancel` has been called (read it; only
            `start_cancel` sets it). A plain attribute, not a property: every
            waiting kernel reads it, and a property read is a call.
    """

    __slots__ = ("_lock", "_callbacks", "_tokens", "is_cancelled")

    def __init__(self):
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._tokens = 0  # the last token given
        self.is_cancelled = False

    def register(self, callback: Callable[[], None]) -> int | None:
        """Registers ``callback``; returns a token, or None if already cancelled.

        Args:
            callback: Called with no arguments when the step is cancelled.
        """
        with self._lock:
            if self.is_cancelled:
                return None
            token = self._tokens = self._tokens + 1
            self._callbacks[token] = callback
            return token

    def deregister(self, token: int | None) -> None:
        """Forgets a callback (the kernel finished normally).

        Args:
            token: What `register` returned (None is ignored).
        """
        if token is None:
            return
        with self._lock:
            self._callbacks.pop(token, None)

    def start_cancel(self) -> None:
        """Cancels: calls every registered callback once."""
        with self._lock:
            if self.is_cancelled:
                return
            self.is_cancelled = True
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            callback()


class StepContext:
    """What a kernel sees of the step it runs in (TF's ``OpKernelContext``).

    Attributes:
        step_id: The step's id: in a process, local steps count up from 1; a
            cluster step's id comes from its master (`minitf.runtime.distributed.master`).
        resource_mgr: The task's `ResourceMgr`.
        cancellation: The step's `CancellationManager`; None for a step made
            with ``cancellable=False``, one that walks straight
            (a local step with nothing that waits): nothing in it waits, so nothing
            registers to be woken.
        deadline: ``time.monotonic()`` value after which the step fails, or None.
        rendezvous: The task's `Rendezvous`, where ``_Recv`` waits (cluster steps).
        transport: What ``_Send`` uses to reach other tasks (cluster steps).
        client: The task whose session runs the step (``/job:worker/replica:0/task:1``).
        clock: Where time is read (`minitf.runtime.core.clock`); ``deadline`` is on it.
        trace: A list to append one `OpEvent` per executed op to, or None.
        notes: While tracing, what kernels tell the trace about their op
            (``{(op name, frame_iter): {field: value}}``; see `note`): in a
            loop, each iteration of an op has notes of its own.
        outbox: The tensors ``_Send`` has given and the driver has not sent
            yet (`post`, `flush_outbox`), or None to send each one at once.
        carry_to: The task whose tensors from the step's last burst of ops
            wait for the step's reply instead of leaving in a message of
            their own (`Worker.start_graph`), or None.
        carried: Those tensors, ``(key, value)`` pairs, once the step has ended.
        frame_iter: Where in the step's loops the op being run runs: ``""`` in
            the root frame, else its frame and iteration,
            ``"while/while_context:3"`` (`minitf.runtime.core.frames.Iteration.key`);
            a ``_Send`` or ``_Recv`` in a loop adds it to its key (`rendezvous_key`).
        step_container: The resources that live for this step only (see the property).

    Args:
        cancellable: False for a step that walks straight: it gets no
            `CancellationManager` (``cancellation`` is None).
    """

    __slots__ = (
        "step_id", "resource_mgr", "cancellation", "deadline", "rendezvous", "transport",
        "client", "clock", "defer_attempts", "trace", "notes", "outbox", "carry_to", "carried",
        "_step_container", "frame_iter",
    )  # fmt: skip

    def __init__(
        self,
        resource_mgr,
        deadline: float | None = None,
        step_id: int | None = None,
        rendezvous=None,
        transport=None,
        client: str = "/job:localhost/replica:0/task:0",
        clock: WallClock = WALL_CLOCK,
        cancellable: bool = True,
    ):
        self.step_id = next(_step_ids) if step_id is None else step_id
        self.resource_mgr = resource_mgr
        self.cancellation = CancellationManager() if cancellable else None
        self.deadline = deadline
        self.rendezvous = rendezvous
        self.transport = transport
        self.client = client
        self.clock = clock
        # Set by a stepper's scheduler: waiting attempts are offered, not run
        # (ops.data_flow.blocking).
        self.defer_attempts = False
        self.trace: list | None = None
        self.notes: dict[tuple[str, str], dict] = {}
        self.outbox: dict[str, list] | None = None
        self.carry_to: str | None = None
        self.carried: list[tuple[str, Any]] | None = None
        self._step_container: ResourceMgr | None = None
        self.frame_iter = ""

    @property
    def step_container(self) -> ResourceMgr:
        """The step's own resources (TF's ``ScopedStepContainer``), made on first use.

        A ``TensorArray`` lives here (`minitf.ops.data_flow.tensor_array_kernels`):
        TF keeps it in the container ``__per_step_<step id>`` of the device's
        resource manager and drops that container when the step ends. Here the
        container is the step's own, so it goes with the step's context: nothing
        another step runs can find it, and nothing is left behind.
        """
        container = self._step_container
        if container is None:
            with _container_lock:
                if self._step_container is None:
                    self._step_container = ResourceMgr(f"__per_step_{self.step_id}")
                container = self._step_container
        return container

    def rendezvous_key(self, key: str) -> str:
        """The rendezvous key of a tensor in the op's iteration (`frames.rendezvous_key`).

        Args:
            key: The ``_Send``/``_Recv``'s ``tensor_name``: ``src;dst;tensor``.
        """
        return rendezvous_key(key, self.frame_iter)

    def post(self, task: str, key: str, value: Any, op: Operation) -> None:
        """Sends ``value`` to ``task``'s rendezvous under ``key``: now, or in the step's next batch.

        While the driver runs a burst of ready ops (`Executor`), the tensors
        for one task wait in ``outbox`` and leave together, in one message,
        when it has no more ops to run; otherwise they go at once.

        Args:
            task: The receiving task.
            key: The rendezvous key.
            value: The tensor.
            op: The ``_Send`` (named if the send fails).
        """
        outbox = self.outbox
        if outbox is None:
            self.transport.send_tensor(task, self.step_id, key, value)
        else:
            outbox.setdefault(task, []).append((key, value, op))

    def flush_outbox(self) -> None:
        """Sends the tensors waiting in ``outbox``, one message per task.

        Raises:
            OpError: the transport's error, naming the first ``_Send`` of the
                message that could not be sent.
        """
        outbox = self.outbox
        if not outbox:
            return
        batches = list(outbox.items())
        outbox.clear()
        for task, items in batches:
            try:
                self.transport.send_tensors(task, self.step_id, [(k, v) for k, v, _ in items])
            except Exception as exc:
                raise as_op_error(exc, items[0][2]) from exc

    def note(self, op_name: str, field: str, value: Any, frame_iter: str | None = None) -> None:
        """Adds ``field`` to the traced stats of ``op_name`` (only while tracing).

        Kernels use it to say what the trace cannot see from outside: what a
        waiting op waited on, which peer a tensor went to, which queue
        elements moved (`minitf.runtime.core.step_stats`). The note is the
        op's in one iteration of its loop: the same op runs in many, and
        several of them may wait at once.

        Args:
            op_name: The op's name.
            field: The stats field.
            value: Its value (JSON-able).
            frame_iter: The op's iteration, as ``frame_iter`` read when its
                kernel started; needed by a note made in its completion, which
                may come while another op runs. Default: the current one.
        """
        if self.trace is not None:
            where = self.frame_iter if frame_iter is None else frame_iter
            self.notes.setdefault((op_name, where), {})[field] = value

    def take_notes(self, op_name: str) -> dict | None:
        """Removes and returns the notes of ``op_name`` in the current ``frame_iter``, if any.

        Args:
            op_name: The op's name.
        """
        notes = self.notes
        return notes.pop((op_name, self.frame_iter), None) if notes else None
