"""Event files: TFRecord files of ``Event`` protos, written by a background thread.

TF's ``EventsWriter`` (``tensorflow/core/util/events_writer.cc``) names a
file ``events.out.tfevents.<seconds, 10 digits>.<hostname><suffix>`` and
makes it when the first event is written; its first record is an event with
``file_version: "brain.Event:2"``. If the file disappears, the next write
starts a new one.

TF's ``EventFileWriter`` (``tensorflow/python/summary/writer/event_file_writer.py``)
puts events on a queue of ``max_queue`` places (``add_event`` blocks while
it is full) that a daemon thread writes; the thread flushes the file after
a write when ``flush_secs`` have passed since its last flush. ``flush``
waits until the queue is written, ``close`` stops the thread, and ``reopen``
starts a new one, which writes a new file.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time

from minitf.framework.event_pb2 import Event
from minitf.ops.io import record_io

__all__ = ["EventFileWriter", "EventsWriter"]

FILE_VERSION = "brain.Event:2"


class EventsWriter:
    """Writes `Event`\\ s to one event file, made on the first write (TF's ``EventsWriter``).

    Args:
        file_prefix: The path and start of the file name (``<logdir>/events``).
        file_suffix: Appended to the file name.
    """

    def __init__(self, file_prefix: str, file_suffix: str = ""):
        self._prefix, self._suffix = file_prefix, file_suffix
        self._writer: record_io.RecordWriter | None = None
        self.filename = ""

    def init(self) -> record_io.RecordWriter:
        """Makes the file and writes its first event, unless the file is there already."""
        if self._writer is not None and os.path.exists(self.filename):
            return self._writer
        if self._writer is not None:
            self._writer.close()
        now = time.time()
        self.filename = (
            f"{self._prefix}.out.tfevents.{int(now):010d}.{socket.gethostname()}{self._suffix}"
        )
        self._writer = record_io.RecordWriter(self.filename)
        self._writer.write(Event(wall_time=now, file_version=FILE_VERSION).SerializeToString())
        self._writer.flush()
        return self._writer

    def write_event(self, event: Event) -> None:
        """Appends ``event`` (making the file first if there is none)."""
        self.init().write(event.SerializeToString())

    def flush(self) -> None:
        """Writes out what is buffered (nothing, when no file is open)."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the file; the next write makes a new one."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class _EventLoggerThread(threading.Thread):
    """Takes events off the queue and writes them until it takes the sentinel."""

    def __init__(self, events: queue.Queue, writer: EventsWriter, flush_secs: float, sentinel):
        super().__init__(name="EventLoggerThread", daemon=True)
        self._events, self._writer = events, writer
        self._flush_secs, self._sentinel = flush_secs, sentinel
        self._next_flush = 0.0

    def run(self) -> None:
        while True:
            event = self._events.get()
            try:
                if event is self._sentinel:
                    return
                self._writer.write_event(event)
                now = time.time()
                if now > self._next_flush:
                    self._writer.flush()
                    self._next_flush = now + self._flush_secs
            finally:
                self._events.task_done()


class EventFileWriter:
    """Writes events to an event file in ``logdir`` from a background thread.

    Args:
        logdir: The directory (made if it does not exist).
        max_queue: How many events may wait to be written before ``add_event`` blocks.
        flush_secs: How often, in seconds, the thread flushes the file.
        filename_suffix: Appended to the file name.
    """

    def __init__(
        self,
        logdir: str,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str | None = None,
    ):
        self._logdir = os.fspath(logdir)
        os.makedirs(self._logdir, exist_ok=True)
        self._events: queue.Queue = queue.Queue(max_queue)
        self._writer = EventsWriter(os.path.join(self._logdir, "events"), filename_suffix or "")
        if filename_suffix:
            self._writer.init()  # as TF's InitWithSuffix: the file is made now
        self._flush_secs = flush_secs
        self._sentinel = object()
        self._closed = False
        self._worker = self._start_worker()

    def _start_worker(self) -> _EventLoggerThread:
        worker = _EventLoggerThread(self._events, self._writer, self._flush_secs, self._sentinel)
        worker.start()
        return worker

    def get_logdir(self) -> str:
        """The directory the event file is in."""
        return self._logdir

    def reopen(self) -> None:
        """After `close`, starts writing again (to a new file); otherwise does nothing."""
        if self._closed:
            self._worker = self._start_worker()
            self._closed = False

    def add_event(self, event: Event) -> None:
        """Queues ``event`` to be written (blocks while the queue is full; ignored once closed)."""
        if not self._closed:
            self._events.put(event)

    def flush(self) -> None:
        """Waits until every queued event is written, then flushes the file to disk."""
        self._events.join()
        self._writer.flush()

    def close(self) -> None:
        """Writes what is queued, flushes, stops the thread and closes the file."""
        if self._closed:
            return
        self._events.put(self._sentinel)
        self.flush()
        self._worker.join()
        self._writer.close()
        self._closed = True
