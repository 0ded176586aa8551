"""What one task of a cluster does, as plain methods: TF's ``Worker`` service.

Every task — ps or worker — serves the same few calls (TF's
``RegisterGraph``, ``RunGraph``, ``RecvTensor``, ``Abort``):

* `Worker.register_graph` plans a partition a client sends, once;
* `Worker.run_graph` runs it for one step and returns the fetched values;
* `Worker.deliver_tensor` hands a ``_Send`` from another task to this
  task's rendezvous;
* `Worker.abort_step` cancels a step here;
* `Worker.accumulators`, `Worker.start_recording` / `Worker.stop_recording`
  and `Worker.clock_micros` let observers look inside.

A `Worker` knows nothing of sockets. `minitf.runtime.distributed.server.Server` carries
these calls over the authenticated TCP wire; another transport (one that
calls them directly, inside one process) can carry them just as well. The
only thing a worker needs from its transport is a way to send tensors to
other tasks: an object with ``send_tensor(task, step_id, key, value)``.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
from collections.abc import Callable
from typing import Any

from minitf.framework import errors
from minitf.runtime.core import step_stats
from minitf.runtime.core.clock import WALL_CLOCK, WallClock
from minitf.runtime.core.executor import Executor
from minitf.runtime.core.pipeline import build_plan
from minitf.runtime.core.plan import bind_kernel, topological_order
from minitf.runtime.core.rendezvous import Rendezvous
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.core.step_context import StepContext
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.stepping import Stepping

logger = logging.getLogger("minitf")


class RegisteredGraph:
    """A partition registered by a client: its graph, its plan and kernels.

    Args:
        part: The `Partition` the client sent.
        segment: The stateful kernels already built for the client's session,
            by op name (TF's ``OpSegment``), or None.
    """

    def __init__(self, part: partition_lib.Partition, segment: dict | None = None):
        self.graph = partition_lib.import_partition(part.nodes)
        g = self.graph
        self.feeds = [g.get_tensor_by_name(f"{name}:0") for name, _ in part.feeds]
        self.fetches = [g.get_tensor_by_name(name) for name in part.fetches]
        self.targets = [g.get_operation_by_name(name) for name in part.targets]
        # Pruned by the master: only ordered again here, each fusable chain kept together.
        fed = {t.op for t in self.feeds}
        order = topological_order(
            [op for op in g.get_operations() if op not in fed], set(self.feeds)
        )
        self.plan = build_plan(
            self.fetches, self.targets, self.feeds, _binder(segment),
            recv_dead=part.dead_values, order=order,
        )  # fmt: skip
        self.client = part.client
        # A step in which this task computes gradients: where a straggler is slow.
        self.computes_gradients = partition_lib.computes_gradients(node.name for node in part.nodes)


def _binder(segment: dict | None):
    """``bind_kernel``, keeping one kernel per stateful op name in ``segment`` (a session's)."""
    if segment is None:
        return bind_kernel

    def bind(op):
        info = segment.get(op.name)
        if info is None:
            info = bind_kernel(op)
            if info.stateful:
                segment[op.name] = info
        return info

    return bind


class Worker:
    """The state of one task and the calls it serves.

    Args:
        task_name: ``/job:<job>/replica:0/task:<i>``.
        scheduler: Chooses every move of this task's steps (default: free-running).
        straggler: A `minitf.cluster.delays.Straggler`, or None.
        clock: Where time is read (`minitf.runtime.core.clock`).
        inter_op_threads: How many of the task's steps may move at once (TF's inter-op pool).

    Attributes:
        resource_mgr: The task's variables, queues and accumulators.
        rendezvous: Where tensors sent to this task wait for their ``_Recv``.
        recorders: The task's active trace recordings.
        transport: What ``_Send`` uses to reach other tasks; set by the transport.
    """

    def __init__(
        self,
        task_name: str,
        scheduler=None,
        straggler=None,
        clock: WallClock = WALL_CLOCK,
        inter_op_threads: int = 1,
    ):
        self.task_name = task_name
        self.straggler = straggler
        self.clock = clock
        self.resource_mgr = ResourceMgr()
        self.rendezvous = Rendezvous()
        self.recorders = step_stats.Recorders()
        self.transport = None
        self._executor = Executor(scheduler, task=task_name, inter_op_threads=inter_op_threads)
        self._registered: dict[int, RegisteredGraph] = {}
        # Each session's stateful kernels, by op name (TF's OpSegment).
        self._segments: dict[str, dict] = {}
        # Handles are unique to this worker's process: a client that still
        # holds a handle of the process this one replaced (a restarted task)
        # gets "lost graph" (AbortedError, which a MonitoredSession recovers
        # from), never another client's partition registered under the same
        # number, as TF's graph handles name one worker incarnation.
        self._handles = itertools.count((secrets.randbits(31) << 32) + 1)
        self._steps: dict[int, StepContext] = {}
        self._steps_lock = threading.Lock()

    # -- the calls -------------------------------------------------------------------------

    def register_graph(self, part: partition_lib.Partition) -> int:
        """Plans a partition once; returns the handle `run_graph` takes.

        Args:
            part: The `Partition` the client sent.
        """
        segment = self._segments.setdefault(part.session, {}) if part.session else None
        registered = RegisteredGraph(part, segment)
        handle = next(self._handles)
        self._registered[handle] = registered
        return handle

    @property
    def num_registered_graphs(self) -> int:
        """How many partitions clients have registered here (one per run signature each)."""
        return len(self._registered)

    def may_block(self, handle: int) -> bool:
        """True if a run of ``handle`` may wait (so its caller should not hold a connection).

        Args:
            handle: What `register_graph` returned.
        """
        registered = self._registered.get(handle)
        return registered is not None and (
            registered.plan.has_async
            or self._straggles(registered)
            or self._executor.scheduler.observes_ops  # a stepper holds every step
        )

    def run_graph(
        self, handle: int, step_id: int, feed_values: list, timeout_ms: int, traced: bool
    ) -> tuple[list[Any], list[dict] | None]:
        """Runs a registered partition for one step.

        Args:
            handle: From `register_graph`.
            step_id: The step's id, the same on every task of the step.
            feed_values: The values of the partition's feeds.
            timeout_ms: The step's deadline from now (0: none).
            traced: Return the step's op stats too.

        Returns:
            ``(fetched values, op stats or None)``.

        Raises:
            OpError: the step's error (``AbortedError`` for an unknown handle).
        """
        registered = self._registered.get(handle)
        if registered is None:
            raise errors.AbortedError(None, None, f"{self.task_name} lost graph {handle}")
        ctx = self._context(registered, step_id, timeout_ms)
        recording = self.recorders.active
        if traced or recording:
            ctx.trace = []
        aborted = self._begin(ctx)
        delay = None
        started = ctx.clock.now_ns() if ctx.trace is not None else 0
        try:
            if aborted is not None:
                raise aborted
            if self._straggles(registered):
                delay = self._straggle(ctx)
                if delay is not None and recording:
                    # Recorded now: the step may wait long after it (for a token).
                    self.recorders.record([delay])
            values = self._executor.run(registered.plan, ctx, feed_values)
        finally:
            self._end(step_id)
            nodes = self._record(ctx, recording, registered.plan, started)
        if not traced:
            return values, None
        return values, [delay, *nodes] if delay is not None else nodes

    def start_graph(
        self,
        handle: int,
        step_id: int,
        feed_values: list,
        timeout_ms: int,
        done: Callable[..., None],
        carry: bool = False,
    ) -> bool:
        """Starts a run of a partition with ops that wait; it holds no thread while they do.

        The task's loop makes the step's moves (`Executor.start`): the
        calling thread (a connection's reader) goes back to reading at once,
        and each completion — a tensor delivered (`deliver_tensor`), an
        enqueue or ``apply_grad`` that lets a dequeue or a ``take_grad``
        finish — has the loop take the step up again. A run that is traced,
        recorded, stepped or slowed down by a straggler is not started here:
        `run_graph` runs it on a thread of its own, which waits with it —
        unless the scheduler makes every move itself (`Scheduler.runs_steps`).

        Args:
            handle: From `register_graph`.
            step_id: The step's id, the same on every task of the step.
            feed_values: The values of the partition's feeds.
            timeout_ms: The step's deadline from now (0: none).
            done: Called once, on the thread that ends the run, with the
                fetched values and None, or None and the step's `OpError`;
                with ``carry``, also with the tensors held back for the
                client (a list of ``(key, value)``, or None; to be ignored
                with an error).
            carry: Whether the tensors for the client's task that the run's
                last moves send wait for ``done`` instead of leaving in a
                message of their own: the client's reply carries them
                (`StepContext.carry_to`).

        Returns:
            False if this run must go through `run_graph` instead (nothing was done).
        """
        registered = self._registered.get(handle)
        if registered is None:
            return False
        if not self._executor.scheduler.runs_steps and (
            not registered.plan.has_async
            or self._executor.observe_ops
            or self.recorders.active
            or self._straggles(registered)
        ):
            return False
        ctx = self._context(registered, step_id, timeout_ms)
        if carry:
            ctx.carry_to = ctx.client

        def finish(values, error):
            self._end(step_id)
            if carry:
                done(values, error, ctx.carried)
            else:
                done(values, error)

        aborted = self._begin(ctx)
        if aborted is not None:
            finish(None, aborted)
        else:
            self._executor.start(registered.plan, ctx, feed_values, finish)
        return True

    def _context(self, registered: RegisteredGraph, step_id: int, timeout_ms: int) -> StepContext:
        """A new step's context on this task (its deadline ``timeout_ms`` from now, 0: none)."""
        deadline = self.clock.now() + timeout_ms / 1000.0 if timeout_ms else None
        return StepContext(
            self.resource_mgr,
            deadline,
            step_id,
            rendezvous=self.rendezvous,
            transport=self.transport,
            client=registered.client,
            clock=self.clock,
        )

    def _begin(self, ctx: StepContext) -> errors.OpError | None:
        """Registers a step that starts here (`abort_step` finds it); returns its abort, if any.

        An abort that came before the step was registered (a session closed
        right after sending the run) left its mark in the rendezvous.
        """
        with self._steps_lock:
            self._steps[ctx.step_id] = ctx
        return self.rendezvous.aborted(ctx.step_id)

    def _end(self, step_id: int) -> None:
        """Forgets a step that has ended here, and what is left of it in the rendezvous."""
        with self._steps_lock:
            self._steps.pop(step_id, None)
        self.rendezvous.cleanup(step_id)

    def deliver_tensor(self, step_id: int, key: str, value: Any) -> None:
        """A ``_Send`` from another task: the tensor waits here for its ``_Recv``.

        Args:
            step_id: The step.
            key: The rendezvous key of the tensor.
            value: The tensor's value.
        """
        self.rendezvous.send(step_id, key, value)

    def abort_step(self, step_id: int, error: errors.OpError) -> None:
        """Cancels the step here, now or when it arrives.

        Args:
            step_id: The step.
            error: The error its waiting ops fail with.
        """
        self.rendezvous.abort(step_id, error)
        with self._steps_lock:
            ctx = self._steps.get(step_id)
        if ctx is not None:
            ctx.cancellation.start_cancel()

    def cancel_all(self) -> None:
        """Cancels every running step (the task is stopping)."""
        with self._steps_lock:
            steps = list(self._steps.values())
        for ctx in steps:
            ctx.cancellation.start_cancel()

    def accumulators(self, since: dict | None = None) -> list[dict]:
        """The task's accumulators and what they have seen (`ResourceMgr.accumulators`).

        Args:
            since: ``{shared name: event number}``: only newer history.
        """
        return self.resource_mgr.accumulators(since)

    def clock_micros(self) -> int:
        """This task's wall clock in microseconds (for putting traces on one clock)."""
        return step_stats.wall_micros()

    def start_recording(self) -> int:
        """Starts tracing every step this task runs, whoever runs it; returns an id."""
        return self.recorders.start()

    def stop_recording(self, recording: int):
        """Ends a recording; returns its op stats and how many were dropped.

        Args:
            recording: What `start_recording` returned.
        """
        return self.recorders.stop(recording)

    @property
    def stepping(self) -> Stepping:
        """The stepper's calls on this task (`Stepping`)."""
        graphs = lambda: [r.graph for r in list(self._registered.values())]  # noqa: E731
        return Stepping(self.task_name, self._executor.scheduler, self.resource_mgr, graphs)

    # -- stragglers and traces -------------------------------------------------------------

    def _straggles(self, registered: RegisteredGraph) -> bool:
        return self.straggler is not None and registered.computes_gradients

    def _straggle(self, ctx: StepContext) -> dict | None:
        """Waits this straggler's next delay (cut short if the step is cancelled).

        Returns:
            The delay's trace entry when the step is traced, else None.

        Raises:
            CancelledError: if the step was cancelled during the wait.
        """
        seconds = self.straggler.next_delay()
        start = ctx.clock.now_ns()
        woken = threading.Event()
        token = ctx.cancellation.register(woken.set)
        try:
            if token is None or ctx.clock.wait(woken, seconds):
                raise errors.CancelledError(
                    None, None, f"Step was cancelled during {self.task_name}'s straggler delay"
                )
        finally:
            ctx.cancellation.deregister(token)
        if ctx.trace is None:
            return None
        current = threading.current_thread()
        return step_stats.delay_stats(
            start, ctx.clock.now_ns(), (current.ident, current.name), ctx.step_id, seconds
        )

    def _record(self, ctx: StepContext, recording: bool, plan, started: int) -> list[dict]:
        if ctx.trace is None:
            return []
        nodes = step_stats.step_nodes(plan, started, ctx.step_id, ctx.trace)
        if recording:
            self.recorders.record(nodes)
        return nodes
