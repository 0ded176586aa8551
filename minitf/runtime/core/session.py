"""``tf.Session``: runs graphs.

``Session.run(fetches, feed_dict)`` turns its arguments into a *run signature*
(the fetched tensors, the target ops, the fed tensors), builds — once per
signature — a `Plan` (pruned, ordered, slot-allocated, kernels bound), checks
the placement of its ops against the session's devices, and hands the plan
with the fed values to the `Executor`. Kernels are built once per op and
session, like TF's ``OpSegment``, so stateful kernels (random generators) keep
their state across runs and signatures.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minitf.framework import ops
from minitf.runtime.core import callables, config, held_scheduler, step_stats
from minitf.runtime.core import fetches as fetch_lib
from minitf.runtime.core.clock import WALL_CLOCK
from minitf.runtime.core.config import ConfigProto, RunOptions
from minitf.runtime.core.executor import Executor
from minitf.runtime.core.feeds import Feeds
from minitf.runtime.core.pipeline import build_plan, order_step
from minitf.runtime.core.plan import KernelInfo, Plan, bind_kernel
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.core.step_context import StepContext
from minitf.runtime.distributed import simulation
from minitf.runtime.distributed.in_process import InProcessTransport
from minitf.runtime.distributed.master import Master
from minitf.runtime.distributed.partition import place
from minitf.runtime.distributed.stepping import Stepping
from minitf.runtime.speedups import intra_op

if TYPE_CHECKING:
    from minitf.runtime.core.config import RunMetadata
    from minitf.runtime.core.scheduler import Scheduler

logger = logging.getLogger("minitf")

LOCAL_TASK = "/job:localhost/replica:0/task:0"
LOCAL_DEVICE = LOCAL_TASK + "/device:CPU:0"


class _DeviceAttributes:
    """What ``Session.list_devices()`` returns for one device."""

    def __init__(self, name: str, device_type: str, memory_limit_bytes: int):
        self.name = name
        self.device_type = device_type
        self.memory_limit_bytes = memory_limit_bytes

    def __repr__(self) -> str:
        return f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes})"


class BaseSession:
    """The machinery shared by `Session` and `InteractiveSession`.

    Args:
        target: Where to run: ``""`` in this process, a server's target
            (``grpc://host:port``) for a task of a cluster, or a task of a
            simulated cluster (`SimulatedCluster.target`).
        graph: The graph to run (default: the default graph).
        config: A `ConfigProto`.
        scheduler: minitf's: a `minitf.runtime.core.scheduler.Scheduler` that
            chooses every move of the session's local steps (default:
            free-running, or held for a stepper after
            `minitf.runtime.core.held_scheduler.hold_local_sessions`).

    Raises:
        TypeError: if ``graph`` is not a `Graph` or ``config`` not a `ConfigProto`.
    """

    def __init__(
        self,
        target: str = "",
        graph: ops.Graph | None = None,
        config: ConfigProto | None = None,
        *,
        scheduler: Scheduler | None = None,
    ):
        if graph is None:
            graph = ops.get_default_graph()
        if not isinstance(graph, ops.Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph)}")
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        if not simulation.is_simulated(target or ""):
            intra_op.configure(config, local=not target)
        self._graph = graph
        self._config = config or ConfigProto()
        self._default_timeout_ms = self._timeout_ms(None)  # a run's without options
        self._target = target or ""
        self._closed = False
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._kernels: dict[ops.Operation, KernelInfo] = {}
        self._plans: dict[tuple, Plan] = {}
        self._mappers = fetch_lib.MapperCache(graph)
        self._feeds = Feeds(graph)
        self._active_steps: set[StepContext] = set()
        self._resource_mgr = ResourceMgr()
        # minitf's: who orders the moves of this session's local steps (a stepper's
        # scheduler, say); the tasks of a cluster have their own (Server(scheduler=)).
        self._stepping_name = LOCAL_TASK
        if scheduler is None and not self._target:
            held = held_scheduler.for_local_session(self, LOCAL_TASK)
            if held is not None:
                scheduler, self._stepping_name = held
        self._executor = Executor(scheduler, task=self._stepping_name)
        self.recorders = step_stats.Recorders()
        self._default_session_context = None
        # With a target, steps run on a cluster: the master places, partitions
        # and sends them to the tasks, whose servers hold the state.
        # A simulated cluster's target (sim://) runs the steps in this process.
        self._master = None
        if self._target:
            simulated = simulation.is_simulated(self._target)
            transport = InProcessTransport(self._target) if simulated else None
            self._master = Master(self._target, graph, self._config, transport)

    @property
    def graph(self) -> ops.Graph:
        """The graph this session runs."""
        return self._graph

    @property
    def graph_def(self) -> dict:
        """A GraphDef-like dict of the session's graph."""
        return {"node": [op.node_def for op in self._graph.get_operations()]}

    @property
    def sess_str(self) -> str:
        """The target string."""
        return self._target

    @property
    def resource_mgr(self) -> ResourceMgr:
        """The resource manager holding this session's variables, queues and accumulators."""
        return self._resource_mgr

    def list_devices(self) -> list[_DeviceAttributes]:
        """The devices available to this session (every task's CPU in a cluster)."""
        names = self._master.devices() if self._master is not None else [LOCAL_DEVICE]
        return [_DeviceAttributes(name, "CPU", 268435456) for name in names]

    def accumulators(self, since: dict | None = None, job: str | None = None) -> dict:
        """The accumulators of every task this session reaches, with what they have seen (minitf's).

        Args:
            since: ``{task: {shared name: event number}}``: only newer history.
            job: Only the tasks of this job (``"ps"``); a local session ignores it.

        Returns:
            ``{task name: [accumulator state, ...]}`` (`ResourceMgr.accumulators`);
            `minitf.cluster.SyncRecord` reads it.
        """
        self._check_open()
        if self._master is not None:
            return self._master.accumulators(since, job)
        return {LOCAL_TASK: self._resource_mgr.accumulators((since or {}).get(LOCAL_TASK))}

    @property
    def stepping(self):
        """This session's steps as a stepper sees them (needs ``scheduler=HeldScheduler()``)."""
        scheduler, graphs = self._executor.scheduler, lambda: [self._graph]
        return Stepping(self._stepping_name, scheduler, self._resource_mgr, graphs)

    def start_recording(self) -> int | dict[str, int]:
        """Starts recording every step that this session's tasks run (minitf's, for `Tracer`).

        A local session records its own steps. A cluster session asks every
        task of the cluster to record every step it runs, whichever client
        runs it — the other workers' steps included.

        Returns:
            A token for `stop_recording`.
        """
        self._check_open()
        if self._master is not None:
            return self._master.start_recording()
        return self.recorders.start()

    def stop_recording(self, token: int | dict[str, int]) -> tuple[dict, int]:
        """Ends a recording.

        Args:
            token: What `start_recording` returned.

        Returns:
            ``(step_stats, dropped)``: the recorded ops as ``StepStats``
            (`minitf.runtime.core.step_stats`) on this process's clock, and how
            many ops were left out over the recording limit.
        """
        if self._master is not None:
            return self._master.stop_recording(token)
        nodes, dropped = self.recorders.stop(token)
        return step_stats.build({LOCAL_DEVICE: nodes}), dropped

    def as_default(self):
        """A context manager making this session the default session."""
        return ops.default_session(self)

    def close(self) -> None:
        """Closes the session: cancels running steps and frees its resources."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            steps = list(self._active_steps)
        for ctx in steps:
            ctx.cancellation.start_cancel()
        self._resource_mgr.clear()
        if self._master is not None:
            self._master.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    # -- running -------------------------------------------------------------------------

    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: RunOptions | None = None,
        run_metadata: RunMetadata | None = None,
    ) -> Any:
        """Runs the ops and evaluates the tensors in ``fetches``.

        Args:
            fetches: A graph element (Tensor, Operation, Variable, name) or any
                nesting of lists, tuples, namedtuples and dicts of them.
            feed_dict: Maps graph elements (or names) to values that replace them.
            options: A `RunOptions` (``timeout_in_ms``).
            run_metadata: A `RunMetadata` to fill in.

        Returns:
            The fetched values, in the structure of ``fetches`` (None for ops).

        Raises:
            RuntimeError: if the session is closed or the graph is empty.
            TypeError: for fetches or feeds of a type that is not valid.
            ValueError: for fetches or feeds that are not valid.
            OpError: the TF error of a failing op.
        """
        self._check_open()
        mapper = self._mappers.get(fetches)  # kept: the graph has ops
        if mapper is None:
            if not self._graph.get_operations():
                raise RuntimeError(
                    "The Session graph is empty.  Add operations to the graph before calling run()."
                )
            mapper = self._mappers.make(fetches)
        feed_tensors, feed_values = self._feeds.process(feed_dict)
        values = self._run_signature(
            mapper.tensors, mapper.ops, feed_tensors, feed_values, options, run_metadata
        )
        return mapper.build(values)

    def make_callable(
        self, fetches: Any, feed_list: list | None = None, accept_options: bool = False
    ) -> Callable:
        """Returns a function that runs ``fetches`` with positional feed values.

        See `minitf.runtime.core.callables.make_callable`.

        Args:
            fetches: What to fetch, as for `run`.
            feed_list: The tensors (or names) fed, in the order the function
                takes their values: a list or tuple, or None.
            accept_options: Whether the function takes ``options`` and
                ``run_metadata`` keyword arguments (without ``feed_list``;
                with it, it always does).

        Returns:
            ``f(*feed_values, **run_options)`` returning the values of ``fetches``.
        """
        return callables.make_callable(self, fetches, feed_list, accept_options)

    def _straight_plan(self, fetch_tensors, target_ops, feed_tensors) -> Plan | None:
        """The plan of a signature if it runs here, never waits and has no deadline.

        Such a step has nothing for `close` to cancel, and nothing to time out.
        """
        if self._master is not None or self._default_timeout_ms:
            return None
        plan = self._plan(fetch_tensors, target_ops, feed_tensors)
        return None if plan.has_async else plan

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    def _run_signature(
        self, fetch_tensors, target_ops, feed_tensors, feed_values, options, run_metadata=None
    ):
        tracing = run_metadata is not None and getattr(options, "trace_level", 0) > 0
        if self._master is not None:
            return self._run_on_cluster(
                fetch_tensors, target_ops, feed_tensors, feed_values, options,
                run_metadata if tracing else None,
            )  # fmt: skip
        plan = self._plan(fetch_tensors, target_ops, feed_tensors)
        timed = options is not None or self._default_timeout_ms
        deadline = self._deadline(options) if timed else None
        ctx = StepContext(self._resource_mgr, deadline=deadline)
        recording = self.recorders.active
        if tracing or recording:
            ctx.trace = []
        elif not plan.has_async:
            # Nothing in the step waits: it is not registered for `close` to cancel.
            self._check_open()
            return fetch_lib.client_values(self._executor.run(plan, ctx, feed_values))
        # No lock here: many threads run steps at once, and set.add/discard are
        # atomic. close() sets _closed before it cancels the active steps, so a
        # step registered after that is caught by the second check.
        self._check_open()
        self._active_steps.add(ctx)
        started = ctx.clock.now_ns() if ctx.trace is not None else 0
        try:
            self._check_open()
            results = self._executor.run(plan, ctx, feed_values)
        finally:
            self._active_steps.discard(ctx)
            if ctx.trace is not None:
                nodes = step_stats.step_nodes(plan, started, ctx.step_id, ctx.trace)
                if recording:
                    self.recorders.record(nodes)
                if tracing:
                    run_metadata.step_stats = step_stats.build({LOCAL_DEVICE: nodes})
        return fetch_lib.client_values(results)

    def _run_on_cluster(
        self, fetch_tensors, target_ops, feed_tensors, feed_values, options, run_metadata
    ):
        with self._lock:
            self._check_open()
        values, stats = self._master.run(
            fetch_tensors, target_ops, feed_tensors, feed_values, self._timeout_ms(options),
            trace=run_metadata is not None,
        )  # fmt: skip
        if run_metadata is not None:
            run_metadata.step_stats = stats
        return fetch_lib.client_values(values)

    def _timeout_ms(self, options) -> int:
        if not config.deadlines_apply():
            return 0  # a stepper holds this process's steps: no wall-clock deadline
        if isinstance(options, RunOptions) and options.timeout_in_ms > 0:
            return options.timeout_in_ms
        return max(self._config.operation_timeout_in_ms, 0)

    def _deadline(self, options) -> float | None:
        timeout_ms = self._timeout_ms(options)
        return WALL_CLOCK.now() + timeout_ms / 1000.0 if timeout_ms else None

    # -- feeds ---------------------------------------------------------------------------

    # -- plans and kernels ---------------------------------------------------------------

    def _plan(self, fetch_tensors, target_ops, feed_tensors) -> Plan:
        key = (tuple(fetch_tensors), tuple(target_ops), tuple(feed_tensors), self._graph.version)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        # One builder at a time: threads that start the same signature together
        # must share one plan and, above all, one kernel per op (a queue without
        # shared_name is created once per kernel).
        with self._build_lock:
            plan = self._plans.get(key)
            if plan is None:
                fetches, targets, feeds = list(fetch_tensors), list(target_ops), list(feed_tensors)
                order = order_step(fetches, targets, feeds)
                # One task, this process: every op on it (or TF's error for one that cannot be).
                soft = self._config.allow_soft_placement
                for op, device in place(order, "localhost", 0, {"localhost": 1}, soft).items():
                    if self._config.log_device_placement:
                        logger.info("%s: (%s): %s", op.name, op.type, device)
                plan = build_plan(fetches, targets, feeds, self._kernel, order=order)
                if len(self._plans) > 256:
                    self._plans.clear()
                self._plans[key] = plan
        return plan

    def _kernel(self, op: ops.Operation) -> KernelInfo:
        cached = self._kernels.get(op)
        if cached is not None:
            return cached
        info = bind_kernel(op)
        self._kernels[op] = info
        return info


class Session(BaseSession):
    """``tf.Session(target='', graph=None, config=None)``: runs a graph.

    Use it as a context manager (``with tf.Session() as sess:``) to make it the
    default session and close it at the end.

    minitf adds one keyword argument: ``scheduler``, a
    `minitf.runtime.core.scheduler.Scheduler` that chooses every move of the
    session's local steps (default: free-running `FifoScheduler`).
    """

    def __enter__(self):
        self._graph_context = self._graph.as_default()
        self._graph_context.__enter__()
        self._default_session_context = self.as_default()
        self._default_session_context.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._default_session_context.__exit__(exc_type, exc, tb)
        self._graph_context.__exit__(exc_type, exc, tb)
        self.close()


class InteractiveSession(BaseSession):
    """A session that makes itself the default session when created (for shells).

    Args:
        target: As for `Session`.
        graph: The graph to run (default: the default graph); it also becomes
            the default graph.
        config: A `ConfigProto`.
        scheduler: As for `Session` (minitf's).
    """

    def __init__(
        self,
        target: str = "",
        graph: ops.Graph | None = None,
        config: ConfigProto | None = None,
        *,
        scheduler: Scheduler | None = None,
    ):
        super().__init__(target, graph, config, scheduler=scheduler)
        self._default_session_context = self.as_default()
        self._default_session_context.__enter__()
        self._graph_context = self._graph.as_default()
        self._graph_context.__enter__()

    def close(self) -> None:
        """Closes the session and removes it as the default session."""
        super().close()
        context = getattr(self, "_default_session_context", None)
        if context is not None:
            self._default_session_context = None
            try:
                self._graph_context.__exit__(None, None, None)
                context.__exit__(None, None, None)
            except AssertionError:
                pass  # closed from another thread: its stacks are not ours
