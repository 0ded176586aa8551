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
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from minitf.framework import device as pydev
from minitf.framework import errors, ops
from minitf.runtime.core import fetches as fetch_lib
from minitf.runtime.core import step_stats
from minitf.runtime.core.clock import WALL_CLOCK
from minitf.runtime.core.config import ConfigProto, RunOptions
from minitf.runtime.core.executor import Executor
from minitf.runtime.core.held_scheduler import HeldScheduler
from minitf.runtime.core.pipeline import build_plan
from minitf.runtime.core.plan import KernelInfo, Plan, bind_kernel
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.core.step_context import StepContext
from minitf.runtime.distributed import simulation
from minitf.runtime.distributed.master import Master
from minitf.runtime.distributed.worker import Stepping
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


class _HeldSessions:
    """The local sessions a stepper in this process steps (`hold_local_sessions`)."""

    def __init__(self, breakpoints: list[str]):
        self.breakpoints = breakpoints
        self.sessions: list[BaseSession] = []


_held: _HeldSessions | None = None
_held_lock = threading.Lock()


def hold_local_sessions(breakpoints: Iterable[str] = ()) -> list:
    """Every local session made from now on holds its steps for a stepper in this process.

    ``minitf step SCRIPT`` without a cluster runs the script in its own
    process this way: the script's sessions are made as usual and each
    waits for the stepper's moves (running free until one of
    ``breakpoints`` when there are some). A session given a ``scheduler=``
    keeps it.

    Args:
        breakpoints: Op-name patterns (see `HeldScheduler.set_breakpoints`);
            with some, the sessions run free until an op matches one.

    Returns:
        The list the sessions are appended to, in the order they are made.
    """
    global _held
    with _held_lock:
        _held = _HeldSessions([b for b in breakpoints if b])
        return _held.sessions


def release_local_sessions() -> None:
    """Sessions made from now on run free again (`hold_local_sessions` undone)."""
    global _held
    with _held_lock:
        _held = None


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
            free-running, or held for a stepper after `hold_local_sessions`).

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
            intra_op.configure(config)  # a positive intra_op_parallelism_threads
        self._graph = graph
        self._config = config or ConfigProto()
        self._default_timeout_ms = self._timeout_ms(None)  # a run's without options
        self._target = target or ""
        self._closed = False
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._kernels: dict[ops.Operation, KernelInfo] = {}
        self._plans: dict[tuple, Plan] = {}
        self._mappers: dict[tuple, fetch_lib.FetchMapper] = {}
        self._static_dims: dict[ops.Tensor, tuple] = {}
        self._active_steps: set[StepContext] = set()
        self._resource_mgr = ResourceMgr()
        # minitf's: who orders the moves of this session's local steps (a stepper's
        # scheduler, say); the tasks of a cluster have their own (Server(scheduler=)).
        self._stepping_name = LOCAL_TASK
        if scheduler is None and _held is not None and not self._target:
            scheduler = self._held_for_stepper()
        self._executor = Executor(scheduler, task=self._stepping_name)
        self.recorders = step_stats.Recorders()
        self._default_session_context = None
        # With a target, steps run on a cluster: the master places, partitions
        # and sends them to the tasks, whose servers hold the state.
        # A simulated cluster's target (sim://) runs the steps in this process.
        self._master = None
        if simulation.is_simulated(self._target):
            self._master = simulation.SimulatedMaster(self._target, graph, self._config)
        elif self._target:
            self._master = Master(self._target, graph, self._config)

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
        return Stepping(self._stepping_name, self._executor.scheduler, self._resource_mgr)

    def _held_for_stepper(self) -> HeldScheduler:
        """The scheduler of a session made while `hold_local_sessions` is on; registers it."""
        with _held_lock:
            if _held.sessions:  # the second session of a script is a task of its own
                self._stepping_name = f"{LOCAL_TASK} #{len(_held.sessions) + 1}"
            scheduler = HeldScheduler(held=not _held.breakpoints, task=self._stepping_name)
            scheduler.set_breakpoints(_held.breakpoints)
            _held.sessions.append(self)
        return scheduler

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
        if not self._graph.get_operations():
            raise RuntimeError(
                "The Session graph is empty.  Add operations to the graph before calling run()."
            )
        mapper = self._mapper(fetches)
        feed_tensors, feed_values = self._process_feeds(feed_dict)
        values = self._run_signature(
            mapper.tensors, mapper.ops, feed_tensors, feed_values, options, run_metadata
        )
        return mapper.build(values)

    def _mapper(self, fetches) -> fetch_lib.FetchMapper:
        """The `FetchMapper` of ``fetches``; kept for one graph element or a flat list of them.

        A training loop fetches the same list every step; a mapper depends only
        on the fetches and the graph (its version counts every change).
        """
        kind, cached = type(fetches), _cached_fetch_types()
        if kind is list or kind is tuple:
            if not all(type(f) in cached for f in fetches):
                return fetch_lib.FetchMapper(self._graph, fetches)
            key = (kind, tuple(fetches), self._graph.version)
        elif kind in cached:
            key = (kind, fetches, self._graph.version)
        else:
            return fetch_lib.FetchMapper(self._graph, fetches)
        mapper = self._mappers.get(key)
        if mapper is None:
            mapper = fetch_lib.FetchMapper(self._graph, fetches)
            if len(self._mappers) >= 64:
                self._mappers.clear()
            self._mappers[key] = mapper
        return mapper

    def make_callable(
        self, fetches: Any, feed_list: list | None = None, accept_options: bool = False
    ) -> Callable:
        """Returns a function that runs ``fetches`` with positional feed values.

        The run signature and its plan are prepared once, so a training loop pays
        no per-call fetch/feed parsing.

        As in TF, a function made with a ``feed_list`` passes its keyword
        arguments on to `run` (``options``, ``run_metadata``) and feeds its
        values to the tensors of ``feed_list`` in order, as ``zip`` pairs
        them: with fewer values the last tensors are not fed (the run then
        fails for a placeholder without a default), and values beyond the
        list are not used. A function made without one takes no feed values,
        and ``options`` and ``run_metadata`` only with ``accept_options``.

        Args:
            fetches: What to fetch, as for `run`.
            feed_list: The tensors (or names) fed, in the order the function
                takes their values: a list or tuple, or None.
            accept_options: Whether the function takes ``options`` and
                ``run_metadata`` keyword arguments (without ``feed_list``;
                with it, it always does).

        Returns:
            ``f(*feed_values, **run_options)`` returning the values of ``fetches``.

        Raises:
            TypeError: if ``feed_list`` is not a list or tuple.
        """
        self._check_open()
        if feed_list is not None and not isinstance(feed_list, (list, tuple)):
            raise TypeError(
                f"`feed_list` must be a list or tuple of the tensors fed, not "
                f"{type(feed_list).__name__}: make_callable(fetches, [x, y])"
            )
        mapper = fetch_lib.FetchMapper(self._graph, fetches)
        feed_tensors = tuple(self._feed_tensor(f) for f in (feed_list or []))
        # Whether the function takes options and metadata (TF's: as run does,
        # or as its template with options does).
        takes_options = accept_options or feed_list is not None
        # Per feed: its tensor, numpy type, and what a value must match to be
        # fed without the general checks: an array of the numpy dtype and the
        # static shape (when fully known), or, for an integer scalar, a Python
        # int within the dtype's range.
        feeds = [
            (t, t.dtype.base_dtype.as_numpy_dtype, np.dtype(t.dtype.base_dtype.as_numpy_dtype),
             _full_shape(t), _int_range(t))
            for t in feed_tensors
        ]  # fmt: skip
        feed_value, is_feedable = self._feed_value, self._graph.is_feedable
        # Tuples, which the plan's key takes as they are.
        fetch_tensors, target_ops = tuple(mapper.tensors), tuple(mapper.ops)
        signature = (fetch_tensors, target_ops, feed_tensors)
        # The plan while the graph is at this version, if it is a local step
        # that never waits: the common training step, which the runner then
        # runs itself.
        straight: list = [None, None]
        graph, build, resource_mgr = self._graph, mapper.build, self._resource_mgr
        run_plan = self._executor.run

        def runner(*feed_args, **kwargs):
            options = metadata = None
            if kwargs:
                options, metadata = _callable_options(kwargs, takes_options)
            if len(feed_args) != len(feed_tensors):
                if feed_list is None:
                    options, metadata = _callable_positional_options(
                        feed_args, accept_options, options, metadata
                    )
                    feed_args = ()
                else:
                    # TF's function pairs the values with feed_list as zip does.
                    feed_dict = dict(zip(feed_tensors, feed_args))
                    return self.run(fetches, feed_dict, options, metadata)
            values = []
            for (t, np_type, dtype, shape, ints), v in zip(feeds, feed_args):
                if type(v) is np.ndarray and v.dtype is dtype and v.shape == shape:
                    v = v.view()
                elif type(v) is int and ints is not None and ints[0] <= v <= ints[1]:
                    v = np.array(v, dtype)
                else:
                    values.append(feed_value(t, v, None, np_type))
                    continue
                if not is_feedable(t):
                    raise _not_feedable(t)
                v.flags.writeable = False  # as _read_only_view
                values.append(v)
            if options is None and metadata is None:
                if straight[0] != graph.version:
                    straight[:] = graph.version, self._straight_plan(*signature)
                plan = straight[1]
                if plan is not None and not self.recorders.active:
                    if self._closed:
                        self._check_open()
                    # Nothing in the step waits: it needs no cancellation manager.
                    ctx = StepContext(resource_mgr, cancellable=False)
                    return build(_client_values(run_plan(plan, ctx, values)))
            return build(self._run_signature(*signature, values, options, metadata))

        return runner

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
            return _client_values(self._executor.run(plan, ctx, feed_values))
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
        return _client_values(results)

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
        return _client_values(values)

    def _timeout_ms(self, options) -> int:
        if isinstance(options, RunOptions) and options.timeout_in_ms > 0:
            return options.timeout_in_ms
        return max(self._config.operation_timeout_in_ms, 0)

    def _deadline(self, options) -> float | None:
        timeout_ms = self._timeout_ms(options)
        return WALL_CLOCK.now() + timeout_ms / 1000.0 if timeout_ms else None

    # -- feeds ---------------------------------------------------------------------------

    def _process_feeds(self, feed_dict) -> tuple[list[ops.Tensor], list[Any]]:
        if not feed_dict:
            return [], []
        tensors, values = [], []
        seen = set()
        for key, value in feed_dict.items():
            tensor = self._feed_tensor(key)
            converted = self._feed_value(tensor, value, key)
            if tensor in seen:  # the last value fed to a tensor wins, as in TF
                values[tensors.index(tensor)] = converted
                continue
            seen.add(tensor)
            tensors.append(tensor)
            values.append(converted)
        return tensors, values

    def _feed_tensor(self, key) -> ops.Tensor:
        try:
            return self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (TypeError, ValueError, KeyError) as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e.args[0]}") from None

    def _feed_value(self, tensor: ops.Tensor, value, key=None, np_dtype=None):
        if np_dtype is None:  # make_callable looks it up once
            np_dtype = tensor.dtype.base_dtype.as_numpy_dtype
        if type(value) is np.ndarray and value.dtype == np_dtype:
            # The common case, kept cheap: an array of the right dtype.
            return self._checked_feed(tensor, value)
        if isinstance(value, ops.Tensor) or hasattr(value, "_as_graph_element"):
            raise TypeError(
                "The value of a feed cannot be a tf.Tensor object. Acceptable feed values "
                "include Python scalars, strings, lists, numpy ndarrays, or TensorHandles. For "
                f"reference, the tensor object was {value} which was passed to the feed with "
                f"key {key if key is not None else tensor}."
            )
        if isinstance(value, int) and not isinstance(value, bool):
            if np.asarray(value).astype(np_dtype) != value:
                raise TypeError(
                    f"Type of feed value {value} with type {type(value)} is not compatible with "
                    f"Tensor type {np_dtype}. Try explicitly setting the type of the feed tensor "
                    "to a larger type (e.g. int64)."
                )
        try:
            np_val = np.asarray(value, dtype=np_dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"Cannot feed value {value!r} for Tensor {tensor.name!r} of dtype "
                f"{tensor.dtype.base_dtype.name}: {e}"
            ) from None
        return self._checked_feed(tensor, np_val)

    def _checked_feed(self, tensor: ops.Tensor, value: np.ndarray) -> np.ndarray:
        """``value`` as the step sees it, once its shape fits and ``tensor`` may be fed."""
        if not self._fits_static_shape(tensor, value.shape):
            raise ValueError(
                f"Cannot feed value of shape {value.shape!r} for Tensor {tensor.name!r}, "
                f"which has shape {str(tensor.get_shape())!r}"
            )
        if not self._graph.is_feedable(tensor):
            raise _not_feedable(tensor)
        return _read_only_view(value)

    def _fits_static_shape(self, tensor: ops.Tensor, shape: tuple) -> bool:
        """Whether ``shape`` is compatible with the tensor's static shape (cached)."""
        if tensor not in self._static_dims:
            static = tensor.get_shape()
            self._static_dims[tensor] = None if static.ndims is None else tuple(static.as_list())
        dims = self._static_dims[tensor]
        if dims is None or dims == shape:
            return True
        return len(dims) == len(shape) and all(d is None or d == s for d, s in zip(dims, shape))

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
                plan = build_plan(
                    list(fetch_tensors), list(target_ops), list(feed_tensors), self._kernel
                )
                if len(self._plans) > 256:
                    self._plans.clear()
                self._plans[key] = plan
        return plan

    def _kernel(self, op: ops.Operation) -> KernelInfo:
        cached = self._kernels.get(op)
        if cached is not None:
            return cached
        self._place(op)
        info = bind_kernel(op)
        self._kernels[op] = info
        return info

    def _place(self, op: ops.Operation) -> str:
        requested = pydev.DeviceSpec.from_string(op.device)
        local = pydev.DeviceSpec.from_string(LOCAL_DEVICE)
        if _satisfies(requested, local) or self._config.allow_soft_placement:
            if self._config.log_device_placement:
                logger.info("%s: (%s): %s", op.name, op.type, LOCAL_DEVICE)
            return LOCAL_DEVICE
        raise errors.InvalidArgumentError(
            op.node_def,
            op,
            f"Cannot assign a device for operation {op.name}: Operation was explicitly assigned "
            f"to {op.device} but available devices are [ {LOCAL_DEVICE} ]. Make sure the device "
            "specification refers to a valid device.",
        )


def _satisfies(requested: pydev.DeviceSpec, device: pydev.DeviceSpec) -> bool:
    for field in ("job", "replica", "task", "device_type", "device_index"):
        want = getattr(requested, field)
        if want is not None and want != getattr(device, field):
            return False
    return True


def _full_shape(tensor: ops.Tensor) -> tuple | None:
    """The tensor's static shape as a tuple when every dimension is known, else None."""
    static = tensor.get_shape()
    return tuple(static.as_list()) if static.is_fully_defined() else None


def _int_range(tensor: ops.Tensor) -> tuple[int, int] | None:
    """For a scalar of an integer dtype: the Python ints it takes as they are; else None."""
    dtype = np.dtype(tensor.dtype.base_dtype.as_numpy_dtype)
    if dtype.kind not in "iu" or _full_shape(tensor) != ():
        return None
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _callable_options(kwargs: dict, takes_options: bool) -> tuple:
    """The ``options`` and ``run_metadata`` a `make_callable` function was called with.

    Raises:
        TypeError: for any other keyword, or for these where the function
            takes none (made without ``feed_list`` or ``accept_options``).
    """
    unknown = sorted(set(kwargs) - {"options", "run_metadata"})
    if unknown or not takes_options:
        names = ", ".join(repr(k) for k in (unknown or sorted(kwargs)))
        how = (
            "it passes only options= and run_metadata= on to Session.run"
            if takes_options
            else "make it with accept_options=True to pass options= and run_metadata="
        )
        raise TypeError(f"a callable from make_callable got unexpected keyword {names}: {how}")
    return kwargs.get("options"), kwargs.get("run_metadata")


def _callable_positional_options(args: tuple, accept_options: bool, options, metadata) -> tuple:
    """``options`` and ``run_metadata`` given by position to a function made without feeds.

    Made with ``accept_options``, TF's function takes them by position too.

    Raises:
        TypeError: for positional arguments the function does not take.
    """
    if not accept_options or len(args) > 2:
        raise TypeError(
            f"a callable from make_callable without feed_list takes no feed values "
            f"({len(args)} given): pass the tensors they feed as "
            "make_callable(fetches, feed_list=[...])"
        )
    by_keyword = (options, metadata)
    for name, given in zip(("options", "run_metadata"), by_keyword[: len(args)]):
        if given is not None:
            raise TypeError(f"a callable from make_callable got multiple values for {name!r}")
    return (*args, *by_keyword[len(args) :])


def _not_feedable(tensor: ops.Tensor) -> ValueError:
    """TF's error for a feed of a tensor the graph keeps from being fed."""
    return ValueError(f"Tensor {tensor} may not be fed.")


def _read_only_view(array: np.ndarray) -> np.ndarray:
    """A view kernels cannot write to; what is stored or returned from it gets copied.

    Fed arrays are not copied: nothing in a step may change them, and a value
    that outlives the step (a variable assigned from a feed, a fetch of a fed
    tensor) is copied at that point because the view is read-only.
    """
    view = array.view()
    view.flags.writeable = False
    return view


_CACHED_FETCH_TYPES: frozenset = frozenset()


def _cached_fetch_types() -> frozenset:
    """Fetches whose `FetchMapper` a session keeps (alone, or in a flat list or tuple).

    Tensors, ops, names and variables (a training loop fetches its global step).
    """
    global _CACHED_FETCH_TYPES
    if not _CACHED_FETCH_TYPES:
        from minitf.ops.state import variables  # the ops layer is above the runtime

        _CACHED_FETCH_TYPES = frozenset(
            {ops.Tensor, ops.Operation, str, variables.Variable, variables.ResourceVariable}
        )
    return _CACHED_FETCH_TYPES


def _client_values(results: list) -> list:
    """What the caller receives of a step's fetched values (`_client_value` of each)."""
    return [_client_value(v) for v in results] if results else results


def _client_value(value):
    """What the caller receives: a numpy value it may own and change."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value


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
