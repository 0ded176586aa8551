"""The in-process transport: a master's calls to the tasks of a simulated cluster.

One task, two transports. A task is a `minitf.runtime.distributed.worker.Worker`,
plain methods; `minitf.runtime.distributed.transport.TcpTransport` carries a
master's calls to it over the authenticated wire, and `InProcessTransport`
makes them as direct calls to the workers of a simulated cluster
(`minitf.runtime.distributed.simulation.Simulation`), in this process. The
`minitf.runtime.distributed.master.Master` is the same for both: it plans,
partitions, registers, runs, gathers and aborts as it does on real tasks.

Two things differ. A step's parts do not run on threads of their own: each
task's executor hands them to the simulation, whose loop makes their moves
on its virtual clock. And the master does not wait on the calling thread:
`InProcessTransport.wait` parks the client until the simulation has ended
the step (a virtual step has no wall-clock deadline).
"""

from __future__ import annotations

import threading
from typing import Any

from minitf.framework import errors
from minitf.runtime.core import step_stats
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.simulation import parse_target
from minitf.runtime.distributed.step_ids import REPLAYABLE, StepIds
from minitf.runtime.distributed.transport import Call


class InProcessTransport:
    """A master's calls to the workers of a simulated cluster, made directly.

    Has the methods of `minitf.runtime.distributed.transport.TcpTransport`
    that a master uses.

    Args:
        target: The session target, ``sim://<id>/<job>/<index>``.

    Attributes:
        cluster: The simulated cluster's `ClusterSpec`.
        job: The target task's job.
        task: The target task's index.
        remade: Always 0: an in-process task is never lost.
        remade_task: Always None.

    Raises:
        InvalidArgumentError: if the target names no task of a running simulated cluster.
    """

    def __init__(self, target: str):
        self._simulation, self.job, self.task = parse_target(target)
        self.cluster = self._simulation.cluster_spec
        self._task_name = f"/job:{self.job}/replica:0/task:{self.task}"
        # (task, handle) -> (which fetch is the loss or None, whether it computes gradients)
        self._registered: dict[tuple[str, int], tuple[int | None, bool]] = {}
        self._closed = False
        self.remade = 0
        self.remade_task = None

    def on_remade(self, forget) -> None:
        """Nothing to do: an in-process task is never lost, so never found again."""

    def step_ids(self, task_name: str) -> StepIds:
        """The ids of a session's steps: those the same session gets on real tasks.

        Args:
            task_name: The session's task.
        """
        return StepIds(task_name, self._simulation.sessions, REPLAYABLE)

    def channel(self, task: str, connect_timeout: float | None = None) -> None:
        """Nothing to connect; raises if the session is closed.

        Raises:
            CancelledError: if the transport has been closed.
        """
        if self._closed:
            raise errors.CancelledError(None, None, "Session has been closed.")

    def local_worker(self) -> None:
        """None: every part of a simulated step goes through the simulation."""
        return None

    def register(self, task: str, part: partition_lib.Partition) -> int:
        """Registers a partition with ``task``'s worker; returns its handle.

        Args:
            task: The task.
            part: The partition.
        """
        handle = self._simulation.worker(task).register_graph(part)
        names = self._simulation.loss_names
        loss = next(
            (n for n, f in enumerate(part.fetches) if f.endswith(":0") and _base(f) in names),
            None,
        )
        gradients = partition_lib.computes_gradients(node.name for node in part.nodes)
        self._registered[(task, handle)] = (loss, gradients)
        return handle

    def run(
        self, task: str, handle: int, step_id: int, feeds: list, timeout_ms: int, trace: bool,
        carry: bool, notify: threading.Event, carried_to: tuple | None,
    ) -> Call:  # fmt: skip
        """Starts one task's part of a step in the simulation; returns the `Call` it finishes.

        The arguments are `TcpTransport.run`'s; ``timeout_ms``, ``trace``,
        ``carry`` and ``carried_to`` do not apply (virtual time has no
        deadline, a simulation's trace is its event log).
        """
        call = Call(notify, finished=True)  # no threading.Event: a `_Flag` instead
        call.event = _Flag()
        loss, gradients = self._registered.get((task, handle), (None, False))
        self._simulation.start_run(
            task, handle, step_id, feeds, call, self._task_name, loss, gradients
        )
        return call

    @staticmethod
    def new_event() -> _Flag:
        """What a master's run waits on (``threading.Event``'s part that it uses)."""
        return _Flag()

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        """Parks the calling client until ``event`` is set and its step is over (or failed).

        Args:
            event: What the master waits for.
            timeout: Ignored: virtual time has no deadline.

        Returns:
            Whether ``event`` is set (False only if the cluster deadlocked).
        """
        return self._simulation.wait_for(event)  # at once if set: the step is only sealed

    def abort(self, task: str, step_id: int, code: int, message: str) -> None:
        """Aborts a step's part on ``task``: it ends at once with the error.

        Args:
            task: The task.
            step_id: The step.
            code: The TF error code.
            message: The error message.
        """
        error = errors.exception_type_from_error_code(code)(None, None, message)
        self._simulation.abort(task, step_id, error)

    def request(
        self, task: str, kind: str, *args: Any, timeout: float = 10.0,
        connect_timeout: float | None = None,
    ) -> Any:  # fmt: skip
        """An observer's call to ``task``: ``accumulators`` or ``clock``.

        Raises:
            UnimplementedError: for a trace: a simulated cluster's is its event log.
        """
        worker = self._simulation.worker(task)
        if kind == "accumulators":
            return worker.accumulators(*args)
        if kind == "clock":
            return step_stats.wall_micros()
        raise errors.UnimplementedError(
            None, None, "traces of a simulated cluster come from its event log (Simulation.events)"
        )

    def lost(self, task: str) -> bool:
        """False: an in-process task is never lost."""
        return False

    def close(self, active_steps: list[int]) -> None:
        """Aborts ``active_steps`` on every task; later calls raise ``CancelledError``.

        Args:
            active_steps: The steps still running.
        """
        self._closed = True
        cancelled = errors.CancelledError(None, None, "Session was closed.")
        for step_id in active_steps:
            for task in self._simulation.tasks():
                self._simulation.abort(task, step_id, cancelled)


class _Flag:
    """A ``threading.Event`` as a simulated step's calls use it: no lock, no condition.

    Only the simulation sets one (a part ended), under its lock, and nobody
    waits on it: a client that waits parks in the simulation
    (`Simulation.wait_for`), which reads the flag under that lock.
    """

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        """Whether it is set."""
        return self._set

    def set(self) -> None:
        """Sets it."""
        self._set = True

    def clear(self) -> None:
        """Clears it."""
        self._set = False


def _base(tensor_name: str) -> str:
    """``"model/loss:0"`` → ``"loss"`` (the last part of the op's name)."""
    return tensor_name.rsplit(":", 1)[0].rsplit("/", 1)[-1]
