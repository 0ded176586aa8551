"""``tf.summary.FileWriter`` and ``tf.summary.FileWriterCache``.

A `FileWriter` turns what a training loop hands it — a serialized
``Summary`` fetched from a summary op, a ``SessionLog``, the graph — into
``Event``\\ s stamped with the wall time and the step, and queues them for an
`EventFileWriter`. As TF's ``SummaryToEventTransformer``
(``tensorflow/python/summary/writer/writer.py``), it keeps a value's
``metadata`` only the first time its tag is seen.

``add_run_metadata`` writes a traced run's ``RunMetadata`` (its step
statistics) as TF's ``tagged_run_metadata`` event, which TensorBoard's
graph view offers per tag ("Session runs").

Left out: TF's ``session`` argument (a writer made of graph ops) and
``add_meta_graph`` (minitf's meta graphs are JSON, not the protocol buffer
TensorBoard reads).
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from typing import Any

from minitf.framework import ops
from minitf.framework.event_pb2 import Event, SessionLog, TaggedRunMetadata
from minitf.framework.graph_pb2 import GraphDef, graph_def_from_graph
from minitf.framework.summary_pb2 import Summary
from minitf.summary.event_file_writer import EventFileWriter

__all__ = ["FileWriter", "FileWriterCache"]

_logger = logging.getLogger("minitf")


class FileWriter:
    """Writes summaries, session logs and the graph to an event file in ``logdir``.

    Args:
        logdir: The directory of the event file (made if needed).
        graph: A `tf.Graph` (or a ``GraphDef``) to write first, e.g. ``sess.graph``.
        max_queue: How many events may wait to be written.
        flush_secs: How often, in seconds, the file is flushed.
        graph_def: Deprecated: a graph passed the old way.
        filename_suffix: Appended to the event file's name.
        session: TF's writer made of graph ops; minitf has none (must be None).

    Raises:
        ValueError: if ``session`` is given.
    """

    def __init__(
        self,
        logdir: str,
        graph: ops.Graph | GraphDef | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        graph_def: ops.Graph | GraphDef | None = None,
        filename_suffix: str | None = None,
        session: Any = None,
    ):
        if session is not None:
            raise ValueError("minitf's FileWriter writes from Python only: pass session=None")
        self.event_writer = EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)
        self._closed = False
        self._seen_summary_tags: set[str] = set()
        self._session_run_tags: set[str] = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph=graph, graph_def=graph_def)

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get_logdir(self) -> str:
        """The directory the event file is written to."""
        return self.event_writer.get_logdir()

    def _warn_if_closed(self) -> None:
        if self._closed:
            warnings.warn(
                "Attempting to use a closed FileWriter. The operation will be a noop unless "
                "the FileWriter is explicitly reopened.",
                stacklevel=3,
            )

    def _add_event(self, event: Event, step) -> None:
        self._warn_if_closed()
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_event(self, event: Event) -> None:
        """Queues ``event`` as it is (no time or step is set).

        Args:
            event: An `Event`.
        """
        self._warn_if_closed()
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary | bytes, global_step: int | None = None) -> None:
        """Writes a summary: what a summary op returned from ``Session.run``, or a `Summary`.

        Args:
            summary: A `Summary` or its serialized bytes.
            global_step: The step to record with it.
        """
        if isinstance(summary, (bytes, bytearray)):
            summary = Summary.FromString(bytes(summary))
        for value in summary.value:  # every tag counts as seen, with metadata or not (as TF)
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")  # TensorBoard keeps a tag's first metadata
                continue
            self._seen_summary_tags.add(value.tag)
        self._add_event(Event(summary=summary), global_step)

    def add_session_log(self, session_log: SessionLog, global_step: int | None = None) -> None:
        """Writes a `SessionLog` (``START`` tells TensorBoard a run restarted at ``global_step``).

        Args:
            session_log: A `SessionLog`.
            global_step: The step to record with it.
        """
        self._add_event(Event(session_log=session_log), global_step)

    def add_run_metadata(self, run_metadata: Any, tag: str, global_step: int | None = None) -> None:
        """Writes the metadata of one traced ``Session.run`` under ``tag``.

        Args:
            run_metadata: A `tf.RunMetadata` a run with
                ``tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)`` filled
                (anything with ``SerializeToString``).
            tag: The name TensorBoard lists the run under; each tag once per writer.
            global_step: The step to record with it.

        Raises:
            ValueError: if ``tag`` was already used by this writer.
        """
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags.add(tag)
        tagged = TaggedRunMetadata(tag=tag, run_metadata=run_metadata.SerializeToString())
        self._add_event(Event(tagged_run_metadata=tagged), global_step)

    def add_graph(
        self,
        graph: ops.Graph | GraphDef | None,
        global_step: int | None = None,
        graph_def: ops.Graph | GraphDef | None = None,
    ) -> None:
        """Writes a graph for TensorBoard's graph dashboard.

        Args:
            graph: A `tf.Graph` (written with each op's output shapes) or a ``GraphDef``.
            global_step: The step to record with it.
            graph_def: Deprecated: a graph passed the old way.

        Raises:
            ValueError: if both ``graph`` and ``graph_def`` are given.
            TypeError: if the graph is neither a `tf.Graph` nor a ``GraphDef``.
        """
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        given = graph if graph is not None else graph_def
        if isinstance(given, ops.Graph):
            true_graph_def = graph_def_from_graph(given)
        elif isinstance(given, GraphDef):
            _logger.warning(
                "Passing a `GraphDef` to the SummaryWriter is deprecated. Pass a `Graph` "
                "object instead, such as `sess.graph`."
            )
            true_graph_def = given
        else:
            raise TypeError(
                "The passed graph must be an instance of `Graph` or the deprecated `GraphDef`"
            )
        self._add_event(Event(graph_def=true_graph_def.SerializeToString()), global_step)

    def flush(self) -> None:
        """Waits until every queued event is written and flushes the file."""
        self._warn_if_closed()
        self.event_writer.flush()

    def close(self) -> None:
        """Writes what is queued and closes the file; `reopen` starts a new one."""
        self.event_writer.close()
        self._closed = True

    def reopen(self) -> None:
        """Writes again after `close`, to a new event file in the same directory."""
        self.event_writer.reopen()
        self._closed = False


class FileWriterCache:
    """One `FileWriter` per logdir, shared (TF's ``FileWriterCache``): what hooks write with."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.RLock()

    @staticmethod
    def clear() -> None:
        """Closes every cached writer and forgets them."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir: str) -> FileWriter:
        """The writer of ``logdir``, made (with the default graph) the first time.

        Args:
            logdir: The directory.
        """
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir, graph=ops.get_default_graph())
            return FileWriterCache._cache[logdir]
