"""``tf.train.QueueRunner``: threads that keep running a queue's enqueue ops.

A `QueueRunner` holds a queue, the ops that fill it and two ops that close
it. ``create_threads(sess, coord)`` makes one thread per enqueue op, each
running its op in a loop until the coordinator stops:

* an exception of a "queue closed" type (``OutOfRangeError`` by default: the
  op's own input is exhausted) ends that thread quietly, and the last thread
  to end that way runs ``close_op``, so the consumers drain what is left and
  then get ``OutOfRangeError`` themselves;
* any other exception is reported to the coordinator (which stops every
  thread and re-raises it from ``coord.join``), or, without a coordinator,
  kept in `QueueRunner.exceptions_raised` and re-raised in the thread;
* with a coordinator, one more thread waits for the stop request and runs
  ``cancel_op`` (a close that also fails the enqueues still waiting), so no
  thread stays blocked on a full queue.

`add_queue_runner` collects runners in the graph's ``QUEUE_RUNNERS``
collection and `start_queue_runners` starts them all.

TF source: ``tensorflow/python/training/queue_runner_impl.py``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING

from minitf.framework import errors, meta_graph, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.runtime.core.session import BaseSession
from minitf.runtime.distributed import simulation
from minitf.train.coordinator import Coordinator

if TYPE_CHECKING:
    from minitf.ops.data_flow.queue_ops import QueueBase

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

_logger = logging.getLogger("minitf")


class QueueRunner:
    """Holds a queue's enqueue ops, to be run in threads.

    Args:
        queue: The queue (a `tf.FIFOQueue` or any object with ``name`` and
            ``close(cancel_pending_enqueues=...)``).
        enqueue_ops: The ops to run, one thread each. They need not be the
            same op but are expected to enqueue into ``queue``.
        close_op: The op that closes the queue once the input is exhausted,
            keeping pending enqueues. Defaults to ``queue.close()``.
        cancel_op: The op that closes the queue on a stop request, failing
            pending enqueues. Defaults to ``queue.close(cancel_pending_enqueues=True)``.
        queue_closed_exception_types: A non-empty tuple of `tf.errors.OpError`
            subclasses that mean "closed" when an enqueue op raises them.
            Defaults to ``(tf.errors.OutOfRangeError,)``.
        queue_runner_def: A QueueRunnerDef (the dict `to_proto` returns) to
            rebuild the runner from the ops of the default graph; exclusive
            with the other arguments.
        import_scope: A name scope to prepend to the names in ``queue_runner_def``.

    Raises:
        ValueError: if ``queue_runner_def`` is given with ``queue`` or
            ``enqueue_ops``, or, without it, ``queue`` or ``enqueue_ops`` is missing.
        TypeError: if ``queue_closed_exception_types`` is not a non-empty tuple
            of error types.
    """

    def __init__(
        self,
        queue: QueueBase | None = None,
        enqueue_ops: list[ops.Operation] | None = None,
        close_op: ops.Operation | None = None,
        cancel_op: ops.Operation | None = None,
        queue_closed_exception_types: tuple[type[errors.OpError], ...] | None = None,
        queue_runner_def: dict | None = None,
        import_scope: str | None = None,
    ):
        if queue_runner_def:
            if queue or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_proto(queue_runner_def, import_scope)
        else:
            self._init_from_args(
                queue, enqueue_ops, close_op, cancel_op, queue_closed_exception_types
            )
        self._lock = threading.Lock()  # guards the two attributes below
        # Per session: how many enqueue threads are still running in it.
        self._runs_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._exceptions_raised: list[Exception] = []

    def _init_from_args(self, queue, enqueue_ops, close_op, cancel_op, closed_types) -> None:
        if queue is None or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        if closed_types is not None and (
            not isinstance(closed_types, tuple)
            or not closed_types
            or not all(isinstance(t, type) and issubclass(t, errors.OpError) for t in closed_types)
        ):
            raise TypeError(
                "queue_closed_exception_types, when provided, must be a tuple of tf.error "
                f"types, but saw: {closed_types}"
            )
        self._queue = queue
        self._enqueue_ops = enqueue_ops
        self._close_op = queue.close() if close_op is None else close_op
        if cancel_op is None:
            cancel_op = queue.close(cancel_pending_enqueues=True)
        self._cancel_op = cancel_op
        self._queue_closed_exception_types = closed_types or (errors.OutOfRangeError,)

    def _init_from_proto(self, queue_runner_def: dict, import_scope: str | None) -> None:
        graph = ops.get_default_graph()

        def element(name):
            return graph.as_graph_element(_prepend_name_scope(name, import_scope))

        self._queue = element(queue_runner_def["queue_name"])
        self._enqueue_ops = [element(name) for name in queue_runner_def["enqueue_op_name"]]
        self._close_op = element(queue_runner_def["close_op_name"])
        self._cancel_op = element(queue_runner_def["cancel_op_name"])
        codes = queue_runner_def.get("queue_closed_exception_types", ())
        closed_types = tuple(errors.exception_type_from_error_code(c) for c in codes)
        # QueueRunnerDefs written before the field existed mean OutOfRangeError.
        self._queue_closed_exception_types = closed_types or (errors.OutOfRangeError,)

    @property
    def queue(self):
        """The queue (an op when the runner was rebuilt from a QueueRunnerDef)."""
        return self._queue

    @property
    def enqueue_ops(self) -> list:
        """The enqueue ops, one thread each."""
        return self._enqueue_ops

    @property
    def close_op(self) -> ops.Operation:
        """The op run once every enqueue thread has seen the queue closed."""
        return self._close_op

    @property
    def cancel_op(self) -> ops.Operation:
        """The op run when the coordinator requests a stop."""
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple[type, ...]:
        """The exception types that end an enqueue thread quietly."""
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list[Exception]:
        """The exceptions the threads raised when they had no coordinator.

        With a coordinator the exceptions go to it instead and this list stays
        empty. `create_threads` starts a new list.
        """
        return self._exceptions_raised

    @property
    def name(self) -> str:
        """The name of the queue."""
        return self._queue.name

    def _run(self, sess, enqueue_op, coord: Coordinator | None = None) -> None:
        """One enqueue thread: runs ``enqueue_op`` until stopped, closed or failing."""
        decremented = False
        try:
            enqueue = sess.make_callable(enqueue_op)
            while not (coord and coord.should_stop()):
                try:
                    enqueue()
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            self._run_ignoring_errors(sess, self._close_op)
                    return
        except Exception as e:
            if coord:
                coord.request_stop(e)
            else:
                _logger.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord: Coordinator) -> None:
        """The extra thread with a coordinator: on the stop request, cancels the queue."""
        coord.wait_for_stop()
        self._run_ignoring_errors(sess, cancel_op)

    @staticmethod
    def _run_ignoring_errors(sess, op) -> None:
        # Closing may fail harmlessly: the queue is already closed, or the session is.
        try:
            sess.run(op)
        except Exception as e:  # noqa: BLE001
            _logger.debug("Ignored exception: %s", e)

    def create_threads(
        self,
        sess: BaseSession,
        coord: Coordinator | None = None,
        daemon: bool = False,
        start: bool = False,
    ) -> list[threading.Thread]:
        """Creates the threads that run the enqueue ops in ``sess``.

        One thread per enqueue op and, with a coordinator, one more that runs
        ``cancel_op`` when a stop is requested. They are registered with
        ``coord``. If the threads of an earlier call for ``sess`` are still
        running, nothing is created.

        Args:
            sess: The `Session` to run the ops in.
            coord: An optional `Coordinator` to stop the threads and collect errors.
            daemon: Whether the threads are daemon threads.
            start: Whether to start the threads; otherwise the caller starts them.

        Returns:
            The threads, or ``[]`` if this runner's threads already run in ``sess``.
        """
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        # In a simulated cluster's client, each thread becomes a client too.
        threads = [
            threading.Thread(
                target=simulation.adopt(
                    lambda op=op: self._run(sess, op, coord), f"{self.name}-{op.name}"
                ),
                name=f"QueueRunnerThread-{self.name}-{op.name}",
            )
            for op in self._enqueue_ops
        ]
        if coord:
            threads.append(
                threading.Thread(
                    target=simulation.adopt(
                        lambda: self._close_on_stop(sess, self._cancel_op, coord),
                        f"{self.name}-close_on_stop",
                    ),
                    name=f"QueueRunnerThread-{self.name}-close_on_stop",
                )
            )
        for t in threads:
            if coord:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads

    def to_proto(self, export_scope: str | None = None) -> dict | None:
        """Returns this runner as a QueueRunnerDef dict, or None if outside ``export_scope``.

        The keys are the fields of TF's ``QueueRunnerDef``: ``queue_name``,
        ``enqueue_op_name``, ``close_op_name``, ``cancel_op_name`` (names with
        ``export_scope`` removed) and ``queue_closed_exception_types`` (error codes).

        Args:
            export_scope: A name scope to strip from the names; a runner whose queue is outside it
                gives None.
        """
        if export_scope is not None and not self.queue.name.startswith(export_scope):
            return None
        return {
            "queue_name": _strip_name_scope(self.queue.name, export_scope),
            "enqueue_op_name": [
                _strip_name_scope(op.name, export_scope) for op in self.enqueue_ops
            ],
            "close_op_name": _strip_name_scope(self.close_op.name, export_scope),
            "cancel_op_name": _strip_name_scope(self.cancel_op.name, export_scope),
            "queue_closed_exception_types": [
                errors.error_code_from_exception_type(t) for t in self._queue_closed_exception_types
            ],
        }

    @staticmethod
    def from_proto(queue_runner_def: dict, import_scope: str | None = None) -> QueueRunner:
        """Returns the `QueueRunner` described by a QueueRunnerDef dict.

        Args:
            queue_runner_def: A QueueRunnerDef dict, as `to_proto` returns.
            import_scope: A name scope to prepend to its names.
        """
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)


def _prepend_name_scope(name: str, import_scope: str | None) -> str:
    return f"{import_scope}/{name}" if import_scope else name


def _strip_name_scope(name: str, export_scope: str | None) -> str:
    if export_scope and name.startswith(export_scope.rstrip("/") + "/"):
        return name[len(export_scope.rstrip("/")) + 1 :]
    return name


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds ``qr`` to a collection of the default graph, for `start_queue_runners`.

    Args:
        qr: A `QueueRunner`.
        collection: The collection key; defaults to ``GraphKeys.QUEUE_RUNNERS``.
    """
    ops.add_to_collection(collection, qr)


def start_queue_runners(
    sess: BaseSession | None = None,
    coord: Coordinator | None = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = GraphKeys.QUEUE_RUNNERS,
) -> list[threading.Thread]:
    """Creates (and by default starts) the threads of every queue runner in a collection.

    The collection is read from ``sess.graph``.

    Args:
        sess: The `Session` to run the queue ops in; defaults to the default session.
        coord: An optional `Coordinator` for the threads.
        daemon: Whether the threads are daemon threads.
        start: Whether to start the threads.
        collection: The collection key; defaults to ``GraphKeys.QUEUE_RUNNERS``.

    Returns:
        All the threads created.

    Raises:
        ValueError: if ``sess`` is None and there is no default session.
        TypeError: if ``sess`` is not a `Session`.
    """
    if sess is None:
        sess = ops.get_default_session()
        if not sess:
            raise ValueError(
                "Cannot start queue runners: No default session is registered. Use "
                "`with sess.as_default()` or pass an explicit session to "
                "tf.start_queue_runners(sess=sess)"
            )
    if not isinstance(sess, BaseSession):
        # TF lets monitored sessions through without starting anything: they
        # start the queue runners themselves.
        if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {sess.__class__}")
    with sess.graph.as_default():
        queue_runners = ops.get_collection(collection)
        if not queue_runners:
            _logger.warning(
                "`tf.train.start_queue_runners()` was called when no queue runners were "
                "defined. You can safely remove the call to this deprecated function."
            )
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


def _queue_runner_to_proto(runner: QueueRunner, export_scope: str | None = None) -> dict | None:
    return runner.to_proto(export_scope=export_scope)


# Queue runners are exported as their QueueRunnerDef (TF registers them here too).
meta_graph.register_proto_function(
    GraphKeys.QUEUE_RUNNERS, _queue_runner_to_proto, QueueRunner.from_proto
)
