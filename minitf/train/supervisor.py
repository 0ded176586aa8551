"""``tf.train.Supervisor``: TF1's training helper before `MonitoredTrainingSession`.

A supervisor wraps a `Coordinator`, a `Saver`, a `SessionManager` and a
summary `FileWriter`. Its constructor finds or builds the ops (each
``USE_DEFAULT`` argument is taken from its graph collection, else built as
TF builds it) and then freezes the graph. `Supervisor.managed_session` gives
a session whose model is ready — the chief restores the newest checkpoint of
``logdir`` or runs the init op; another task waits for the chief — and
starts the standard services, three `LooperThread` subclasses that run on a
timer (the first time at once):

- `SVSummaryThread` runs the summary op and writes its result every
  ``save_summaries_secs``;
- `SVStepCounterThread` writes ``global_step/sec`` as often;
- `SVTimerCheckpointThread` saves a checkpoint every ``save_model_secs``.

Only the chief writes: a non-chief supervisor has no logdir, no writer and no
services. When the ``with`` block ends (normally, or by an exception) the
supervisor stops and joins the threads, writes a ``SessionLog.STOP`` and
closes the session; the block's exception is raised again, except
``OutOfRangeError``, the normal end of the input.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from minitf.framework import dtypes, ops
from minitf.framework.event_pb2 import SessionLog
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.summary_pb2 import Summary
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.state import variables
from minitf.summary import summary as summary_lib
from minitf.summary.writer import FileWriter
from minitf.train import coordinator, training_util
from minitf.train import saver as saver_lib
from minitf.train.session_manager import SessionManager

if TYPE_CHECKING:
    import threading

    from minitf.runtime.core.config import ConfigProto, RunOptions
    from minitf.runtime.core.session import Session
    from minitf.train.queue_runner_impl import QueueRunner

logger = logging.getLogger("minitf")

_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")


class Supervisor:
    """Initializes or restores the model, checkpoints it and writes summaries on timers.

    Every argument left at ``USE_DEFAULT`` is taken from its graph collection
    (``READY_OP``, ``INIT_OP``, ...) or, if that is empty, built and added to
    it; ``None`` turns the feature off.

    Args:
        graph: The model's graph (default: the default graph). It is frozen
            at the end of the constructor.
        ready_op: Names the variables not initialized yet (default:
            ``report_uninitialized_variables()``).
        ready_for_local_init_op: The same for what ``local_init_op`` needs
            (default: the ``READY_FOR_LOCAL_INIT_OP`` collection, else None).
        is_chief: Whether this task initializes, restores, checkpoints and
            writes summaries; other tasks wait for the chief.
        init_op: Run by the chief when there is no checkpoint (default: the
            global variables' initializer).
        init_feed_dict: Feeds for ``init_op``.
        local_init_op: Run in every new session (default: the local
            variables' and the ``TABLE_INITIALIZERS`` initializers).
        logdir: The chief's directory for checkpoints and event files.
        summary_op: What `SVSummaryThread` runs (default:
            ``tf.summary.merge_all()``).
        saver: The `Saver` of the checkpoints (default: a new ``Saver()``).
        global_step: The step written with summaries and checkpoints
            (default: the tensor ``global_step:0`` if it is an integer).
        save_summaries_secs: Seconds between summaries (0: none).
        save_model_secs: Seconds between checkpoints (0: none).
        recovery_wait_secs: The longest wait between two looks of a task
            waiting for the chief.
        stop_grace_secs: Seconds the threads have to end after `stop`.
        checkpoint_basename: The checkpoints' file name in ``logdir``.
        session_manager: A `SessionManager` (default: one made of the ops above).
        summary_writer: A `FileWriter` (default: one on ``logdir``), or None.
        init_fn: Called as ``init_fn(sess)`` after ``init_op``.
        local_init_run_options: ``RunOptions`` for ``local_init_op``.

    Raises:
        ValueError: if ``is_chief`` is False and a variable has no device.
    """

    USE_DEFAULT = 0
    """Passed for an argument, asks for its default (TF's value, 0)."""

    def __init__(
        self,
        graph: ops.Graph | None = None,
        ready_op: Any = USE_DEFAULT,
        ready_for_local_init_op: Any = USE_DEFAULT,
        is_chief: bool = True,
        init_op: Any = USE_DEFAULT,
        init_feed_dict: dict | None = None,
        local_init_op: Any = USE_DEFAULT,
        logdir: str | None = None,
        summary_op: Any = USE_DEFAULT,
        saver: Any = USE_DEFAULT,
        global_step: Any = USE_DEFAULT,
        save_summaries_secs: float = 120,
        save_model_secs: float = 600,
        recovery_wait_secs: float = 30,
        stop_grace_secs: float = 120,
        checkpoint_basename: str = "model.ckpt",
        session_manager: SessionManager | None = None,
        summary_writer: Any = USE_DEFAULT,
        init_fn: Callable[[Session], None] | None = None,
        local_init_run_options: RunOptions | None = None,
    ):
        graph = graph if graph is not None else ops.get_default_graph()
        with graph.as_default():
            self._ready_op = _or_default(ready_op, GraphKeys.READY_OP, _report_uninitialized)
            self._ready_for_local_init_op = _or_default(
                ready_for_local_init_op, GraphKeys.READY_FOR_LOCAL_INIT_OP, lambda: None
            )
            self._init_op = _or_default(init_op, GraphKeys.INIT_OP, _global_init)
            self._init_feed_dict = init_feed_dict
            self._local_init_op = _or_default(local_init_op, GraphKeys.LOCAL_INIT_OP, _local_init)
            self._saver = _or_default(saver, GraphKeys.SAVERS, _default_saver)
            self._summary_op = _or_default(summary_op, GraphKeys.SUMMARY_OP, summary_lib.merge_all)
            self._global_step = _or_default(global_step, GraphKeys.GLOBAL_STEP, _step_tensor)
        self._graph = graph
        self._is_chief = is_chief
        self._coord = coordinator.Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        self._logdir = logdir if is_chief else None
        self._save_summaries_secs = save_summaries_secs if is_chief else None
        self._save_model_secs = save_model_secs if is_chief else None
        self._save_path = os.path.join(logdir, checkpoint_basename) if self._logdir else None
        self._summary_writer = self._make_writer(summary_writer) if is_chief else None
        self._graph_added_to_summary = False
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op,
            ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op,
            graph=graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options,
        )
        self._verify_setup()
        graph.finalize()

    def _make_writer(self, summary_writer) -> FileWriter | None:
        if summary_writer is not Supervisor.USE_DEFAULT:
            return summary_writer
        return FileWriter(self._logdir) if self._logdir else None

    def _verify_setup(self) -> None:
        """A non-chief shares the chief's variables, so each must be placed on a device."""
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type in _VARIABLE_OPS and not op.device:
                raise ValueError(
                    f"When using replicas, all Variables must have their device set: {op}"
                )

    # -- what it uses ------------------------------------------------------------------------

    @property
    def is_chief(self) -> bool:
        """Whether this supervisor initializes, restores and writes."""
        return self._is_chief

    @property
    def session_manager(self) -> SessionManager:
        """The `SessionManager` that makes the sessions."""
        return self._session_manager

    @property
    def coord(self) -> coordinator.Coordinator:
        """The `Coordinator` of the services, the queue runners and `loop` threads."""
        return self._coord

    @property
    def init_op(self) -> ops.Operation | None:
        """The op the chief runs when there is no checkpoint."""
        return self._init_op

    @property
    def init_feed_dict(self) -> dict | None:
        """The feeds for `init_op`."""
        return self._init_feed_dict

    @property
    def ready_op(self) -> ops.Tensor | None:
        """The op naming the variables not initialized yet."""
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> ops.Tensor | None:
        """The op naming what the local init op still waits for."""
        return self._ready_for_local_init_op

    @property
    def summary_writer(self) -> FileWriter | None:
        """The chief's `FileWriter` (None in other tasks or without a logdir)."""
        return self._summary_writer

    @property
    def summary_op(self) -> ops.Tensor | None:
        """The op `SVSummaryThread` runs."""
        return self._summary_op

    @property
    def save_summaries_secs(self) -> float | None:
        """Seconds between summaries (None in a non-chief)."""
        return self._save_summaries_secs

    @property
    def global_step(self) -> ops.Tensor | None:
        """The step tensor written with summaries and checkpoints."""
        return self._global_step

    @property
    def saver(self) -> saver_lib.Saver | None:
        """The `Saver` of the checkpoints."""
        return self._saver

    @property
    def save_model_secs(self) -> float | None:
        """Seconds between checkpoints (None in a non-chief)."""
        return self._save_model_secs

    @property
    def save_path(self) -> str | None:
        """The checkpoints' path prefix, ``logdir/checkpoint_basename``."""
        return self._save_path

    # -- sessions ----------------------------------------------------------------------------

    def prepare_or_wait_for_session(
        self,
        master: str = "",
        config: ConfigProto | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        start_standard_services: bool = True,
    ) -> Session:
        """A session whose model is ready: prepared by the chief, waited for elsewhere.

        The chief restores the newest checkpoint of ``logdir`` (or runs the
        init op), writes the graph to the event file and, with
        ``start_standard_services``, starts the services. Every task then
        starts the queue runners of the graph.

        Args:
            master: The session's target.
            config: The session's `ConfigProto`.
            wait_for_checkpoint: Whether the chief waits for a checkpoint to appear.
            max_wait_secs: How long to wait (for the checkpoint or the chief).
            start_standard_services: Whether to start the services and queue runners.

        Returns:
            The session.
        """
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn,
            )  # fmt: skip
            self._write_graph()
            if start_standard_services:
                logger.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(
                master, config=config, max_wait_secs=max_wait_secs
            )
        if start_standard_services:
            logger.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(
        self,
        master: str = "",
        config: ConfigProto | None = None,
        start_standard_services: bool = True,
        close_summary_writer: bool = True,
    ) -> Iterator[Session]:
        """A ``with`` block around a ready session; on exit it stops everything and closes it.

        An exception from the block or from a service thread is raised again
        after the threads are joined and the session closed, except
        ``OutOfRangeError`` (the input is exhausted: a normal end).

        Args:
            master: The session's target.
            config: The session's `ConfigProto`.
            start_standard_services: Whether to start the services and queue runners.
            close_summary_writer: Whether to close the summary writer at the end.

        Yields:
            The session.
        """
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services
            )
            yield sess
        except Exception as exc:  # noqa: BLE001 - handed to the coordinator, raised by stop()
            self.request_stop(exc)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                _close_quietly(sess)

    # -- services ----------------------------------------------------------------------------

    def start_standard_services(self, sess: Session) -> list[threading.Thread] | None:
        """Starts the chief's summary, step-counter and checkpoint threads for ``sess``.

        Which start depends on the constructor's arguments: summaries need a
        writer, ``save_summaries_secs`` and a summary op; the step counter a
        global step; checkpoints a saver and ``save_model_secs``.

        Args:
            sess: The session the threads run in.

        Returns:
            The started threads (None, with a warning, without a logdir).

        Raises:
            RuntimeError: in a non-chief supervisor.
        """
        if not self._is_chief:
            raise RuntimeError(
                "Only chief supervisor can start standard services. "
                "Because only chief supervisors can write events."
            )
        if not self._logdir:
            logger.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        if self._global_step is not None and self._summary_writer:
            step = training_util.global_step(sess, self._global_step)
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        threads: list[threading.Thread] = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(SVSummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(SVStepCounterThread(self, sess))
        if self._saver and self._save_model_secs:
            threads.append(SVTimerCheckpointThread(self, sess))
        for thread in threads:
            thread.start()
        return threads

    def start_queue_runners(
        self, sess: Session, queue_runners: Iterable[QueueRunner] | None = None
    ) -> list[threading.Thread]:
        """Starts the threads of ``queue_runners`` (default: the graph's) on the coordinator.

        Args:
            sess: The session the threads run in.
            queue_runners: The `QueueRunner`\\ s (default: the ``QUEUE_RUNNERS`` collection).

        Returns:
            The started threads.
        """
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for runner in queue_runners:
            threads.extend(runner.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(
        self,
        timer_interval_secs: float | None,
        target: Callable,
        args: Iterable | None = None,
        kwargs: dict | None = None,
    ) -> coordinator.LooperThread:
        """Starts a thread calling ``target(*args, **kwargs)`` every ``timer_interval_secs``.

        The first call is at once; None means back to back. The thread ends
        when a stop is requested, and `stop` joins it.

        Args:
            timer_interval_secs: Seconds between calls, or None.
            target: The callable.
            args: Its positional arguments.
            kwargs: Its keyword arguments.

        Returns:
            The started thread.
        """
        return coordinator.LooperThread.loop(
            self._coord, timer_interval_secs, target, args=args, kwargs=kwargs
        )

    def summary_computed(
        self, sess: Session, summary: Summary | bytes, global_step: int | None = None
    ) -> None:
        """Writes a summary computed by the caller, at ``global_step`` (default: the current one).

        Args:
            sess: The session to read the global step in.
            summary: A `Summary` or its serialized bytes.
            global_step: The step to write it at.

        Raises:
            RuntimeError: if there is no summary writer.
        """
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = training_util.global_step(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    # -- stopping ----------------------------------------------------------------------------

    def stop(
        self,
        threads: Iterable[threading.Thread] | None = None,
        close_summary_writer: bool = True,
        ignore_live_threads: bool = False,
    ) -> None:
        """Requests a stop and joins the threads; does not close the session.

        Args:
            threads: More threads to join besides the services, the queue
                runners and the `loop` threads.
            close_summary_writer: Whether to write ``SessionLog.STOP`` and
                close the summary writer.
            ignore_live_threads: Whether threads alive after ``stop_grace_secs``
                are only logged.

        Raises:
            Exception: the first exception a thread (or `request_stop`) reported.
            RuntimeError: if threads outlive the grace period.
        """
        self._coord.request_stop()
        try:
            self._coord.join(
                threads,
                stop_grace_period_secs=self._stop_grace_secs,
                ignore_live_threads=ignore_live_threads,
            )
        finally:
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex: BaseException | tuple | None = None) -> None:
        """Asks the threads to stop; ``ex`` is raised again by `stop`.

        Args:
            ex: An exception or ``sys.exc_info()`` tuple.
        """
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._coord.should_stop()

    def stop_on_exception(self) -> contextlib.AbstractContextManager:
        """A context manager that requests a stop with the exception raised in it."""
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        """Blocks until a stop is requested."""
        self._coord.wait_for_stop()

    def _write_graph(self) -> None:
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._graph_added_to_summary = True


class SVSummaryThread(coordinator.LooperThread):
    """Runs the supervisor's summary op and writes the result every ``save_summaries_secs``.

    Args:
        sv: The `Supervisor`.
        sess: The session to run in.
    """

    def __init__(self, sv: Supervisor, sess: Session):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        """Computes the summary (with the step, if there is one) and writes it."""
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            logger.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class SVStepCounterThread(coordinator.LooperThread):
    """Writes the steps per second (tag ``<step op name>/sec``) every ``save_summaries_secs``.

    Args:
        sv: The `Supervisor`.
        sess: The session to read the step in.
        step_counter: The step tensor (default: the supervisor's global step).
    """

    def __init__(self, sv: Supervisor, sess: Session, step_counter: ops.Tensor | None = None):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._step_counter = sv.global_step if step_counter is None else step_counter
        self._summary_tag = f"{self._step_counter.op.name}/sec"
        self._last_time = 0.0
        self._last_step = 0

    def start_loop(self) -> None:
        """Notes the step and the time the counting starts from."""
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._step_counter)

    def run_loop(self) -> None:
        """Writes the steps done since the last tick, per second."""
        step = training_util.global_step(self._sess, self._step_counter)
        now = time.time()
        elapsed = now - self._last_time
        rate = (step - self._last_step) / elapsed if elapsed > 0 else float("inf")
        self._last_step, self._last_time = step, now
        summary = Summary(value=[Summary.Value(tag=self._summary_tag, simple_value=rate)])
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(summary, step)
        logger.debug("%s: %g", self._summary_tag, rate)


class SVTimerCheckpointThread(coordinator.LooperThread):
    """Saves a checkpoint to the supervisor's ``save_path`` every ``save_model_secs``.

    Args:
        sv: The `Supervisor`.
        sess: The session to save.
    """

    def __init__(self, sv: Supervisor, sess: Session):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        """Saves, then records a ``SessionLog.CHECKPOINT`` in the event file."""
        logger.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            step = training_util.global_step(self._sess, self._sv.global_step)
            log = SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path)
            self._sv.summary_writer.add_session_log(log, step)


def _or_default(given, key: str, build: Callable[[], Any]):
    """``given``; for ``USE_DEFAULT``, the first of collection ``key``, else ``build()`` (added)."""
    if given is not Supervisor.USE_DEFAULT:
        return given
    found = ops.get_collection(key)
    if len(found) > 1:
        logger.info("Found %d %s operations. Returning the first one.", len(found), key)
    if found:
        return found[0]
    built = build()
    if built is not None:
        ops.add_to_collection(key, built)
    return built


def _report_uninitialized():
    return variables.report_uninitialized_variables()


def _global_init():
    return variables.global_variables_initializer()


def _local_init():
    """The local variables' initializer and the table initializers, as one op (TF's default)."""
    tables = ops.get_collection(GraphKeys.TABLE_INITIALIZERS)
    return control_flow_ops.group(variables.local_variables_initializer(), *tables)


def _default_saver():
    return saver_lib.Saver() if variables.global_variables() else None


def _step_tensor():
    """The tensor ``global_step:0`` if the graph has one of an integer type."""
    try:
        step = ops.get_default_graph().get_tensor_by_name("global_step:0")
    except (KeyError, ValueError):
        return None
    if step.dtype.base_dtype in (dtypes.int32, dtypes.int64):
        return step
    logger.warning("Found 'global_step' is not an int type: %s", step.dtype)
    return None


def _close_quietly(sess) -> None:
    """Closes ``sess``; what closing raises is of no interest any more (TF ignores it too)."""
    if sess is None:
        return
    try:
        sess.close()
    except Exception:  # noqa: BLE001
        logger.debug("Closing the supervised session failed", exc_info=True)
