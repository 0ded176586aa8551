"""The reader resources: TF's ``ReaderBase`` and the readers built on it.

A reader turns *work units* — file names, dequeued from a queue of strings —
into records ``(key, value)``. It lives in the task's resource manager like a
queue, and keeps, between steps, the file it is in the middle of and its
counts (TF's ``tensorflow/core/framework/reader_base.cc``):

* ``read`` produces one record. If no work unit is in progress it dequeues
  the next file name from the queue first — waiting, like a dequeue, while
  the queue is empty, and failing with the queue's ``OutOfRangeError`` once
  it is closed and empty. A file with no records is finished and the next
  one taken, within the same ``read``.
* ``read_up_to(n)`` produces up to ``n`` records, never reading past the end
  of the file it finished in if it has some already.
* ``work_started``, ``work_finished`` and ``num_records_produced`` count.

As in TF, one read at a time uses a reader: TF holds the reader's mutex for
the whole read, waits for the queue included. Here a read first *holds* the
reader — an attempt on the reader's own list, served first come, first
served — and lets go when it is done; its wait for a file name is an attempt
on the queue's dequeue list (`minitf.ops.data_flow.blocking`), so a waiting
read holds no thread. The reader's state changes only under its lock.

Each reader type adds three hooks: `ReaderBase.on_work_started` (open the file),
`ReaderBase.read_locked` (the next record, or the end) and `ReaderBase.on_work_finished`.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from minitf.framework import dtypes, errors
from minitf.ops.data_flow.blocking import NO_PROGRESS, Attempt, BlockingResource, Offer
from minitf.ops.data_flow.queue_base import DEQUEUE, Taken
from minitf.ops.io import file_io, reader_state, record_io
from minitf.ops.string.string_ops import as_bytes

READ = 0  # the reader's one attempt list: reads waiting to hold it

Record = tuple[bytes, bytes]


class ReaderBase(BlockingResource):
    """What every reader keeps and how a read runs (TF's ``ReaderBase``).

    Args:
        name: How errors name the reader: ``"<Type> '<op name>'"``.
    """

    supports_serialize = False

    def __init__(self, name: str):
        super().__init__(directions=1)
        self.name = name
        self.work = b""
        self.work_started = 0
        self.work_finished = 0
        self.num_records_produced = 0
        self._held = False

    # -- the hooks of a reader type (called with the lock held) ---------------------------

    def on_work_started(self) -> None:
        """Prepares to read ``self.work`` (opens the file)."""

    def on_work_finished(self) -> None:
        """Lets go of what `on_work_started` took."""

    def read_locked(self) -> tuple[Record | None, bool]:
        """The next record of the current work unit, or None; and whether the unit has ended."""
        raise NotImplementedError

    def read_up_to_locked(self, n: int) -> tuple[list[Record], bool]:
        """Up to ``n`` records of the current work unit (one by default), and whether it ended."""
        record, at_end = self.read_locked()
        return ([] if record is None else [record]), at_end

    def reset_locked(self) -> None:
        """Back to the state of a new reader (TF's ``ResetLocked``)."""
        self.on_work_finished()
        self.work = b""
        self.work_started = self.work_finished = self.num_records_produced = 0

    def serialize_state_locked(self) -> bytes:
        """The reader's state as bytes; most readers cannot (TF's ``Unimplemented``)."""
        raise errors.UnimplementedError(None, None, "Reader SerializeState")

    def restore_state_locked(self, state: bytes) -> None:
        """Restores a state from `serialize_state_locked`."""
        raise errors.UnimplementedError(None, None, "Reader RestoreState")

    # -- state -------------------------------------------------------------------------------

    def work_in_progress(self) -> bool:
        """Whether a work unit has been started and not finished."""
        return self.work_finished < self.work_started

    def key_name(self, key) -> bytes:
        """``<work unit>:<key>``: the key of a record of the current work unit."""
        return self.work + b":" + str(key).encode()

    def start_work_locked(self, work: bytes) -> None:
        """Starts the work unit ``work``; if that fails it does not count as started."""
        self.work = work
        self.on_work_started()
        self.work_started += 1

    def finish_work_locked(self) -> None:
        """Ends the current work unit."""
        self.on_work_finished()
        self.work_finished = self.work_started

    def reset(self) -> None:
        """`reset_locked` under the lock."""
        with self.lock:
            self.reset_locked()

    def serialize_state(self) -> bytes:
        """`serialize_state_locked` under the lock."""
        with self.lock:
            return self.serialize_state_locked()

    def restore_state(self, state: bytes) -> None:
        """Restores ``state``; if it cannot be restored the reader is reset (as in TF)."""
        with self.lock:
            try:
                self.restore_state_locked(state)
            except errors.OpError:
                self.reset_locked()
                raise

    # -- holding the reader for one read -----------------------------------------------------

    def run_hold(self, attempt: Attempt):
        """Takes the reader for one read if no other read has it (lock held)."""
        if self._held:
            return NO_PROGRESS
        self._held = True
        return attempt.complete(None)

    def release(self) -> None:
        """Lets the next waiting read have the reader."""

        def let_go():
            self._held = False

        self.mutate(let_go)

    def read(self, ctx, queue, done, wanted: int, up_to: bool) -> None:
        """Starts a read of ``wanted`` records; ``done`` receives the outputs or the error.

        Args:
            ctx: The step's context.
            queue: The queue resource of work units.
            done: The kernel's completion.
            wanted: How many records (1 for ``ReaderReadV2``).
            up_to: True for ``ReaderReadUpToV2`` (outputs are vectors, and it
                stops at the end of a work unit).
        """
        _Read(self, ctx, queue, done, wanted, up_to).start()


_LATER = object()


class _Handoff:
    """Tells a completion that came while it was asked for from one that came later.

    A dequeue's ``done`` may be called before `try_attempt` returns (an
    element was there) or later from another thread. The first case is
    handled in the asking loop — no recursion for a run of empty files —
    the second by ``later``.
    """

    def __init__(self, later):
        self._lock = threading.Lock()
        self._state = "asking"
        self._result = None
        self._later = later

    def deliver(self, result) -> None:
        with self._lock:
            if self._state == "asking":
                self._state, self._result = "got", result
                return
        self._later(result)

    def settle(self):
        """The result if it came already, else `_LATER` (it will go to ``later``)."""
        with self._lock:
            if self._state == "got":
                return self._result
            self._state = "later"
            return _LATER


class _Read:
    """One run of ``ReaderReadV2`` or ``ReaderReadUpToV2`` (TF's ``Read`` and ``ReadUpTo``)."""

    def __init__(self, reader: ReaderBase, ctx, queue, done, wanted: int, up_to: bool):
        self.reader, self.ctx, self.queue, self.done = reader, ctx, queue, done
        self.wanted, self.up_to = wanted, up_to
        self.records: list[Record] = []

    def start(self) -> None:
        self.reader.try_attempt(
            READ, self.ctx, self._held, self.reader.run_hold, "Read operation was cancelled"
        )

    def _held(self, result) -> None:
        if isinstance(result, BaseException):
            self.done(result)  # cancelled while waiting for the reader
            return
        self._advance()

    def _advance(self) -> None:
        """Reads until the outputs are complete, taking work units as it needs them."""
        while True:
            try:
                with self.reader.lock:
                    complete = self._read_locked()
            except errors.OpError as e:
                self._finish(e)
                return
            if complete:
                self._finish(self._outputs())
                return
            work = self._dequeue_work()
            if work is _LATER or not self._start_work(work):
                return

    def _read_locked(self) -> bool:
        """Reads from the work unit in progress; True when the read is complete."""
        reader = self.reader
        while len(self.records) < self.wanted:
            if not reader.work_in_progress():
                return False
            records, at_end = reader.read_up_to_locked(self.wanted - len(self.records))
            if not records and not at_end:
                raise errors.InternalError(
                    None, None, f"ReadLocked() for {reader.name} must produce a record or end"
                )
            self.records += records
            reader.num_records_produced += len(records)
            if at_end:
                reader.finish_work_locked()
                if self.up_to and self.records:
                    return True
        return True

    def _dequeue_work(self):
        handoff = _Handoff(self._late_work)
        queue = self.queue
        queue.try_attempt(
            DEQUEUE,
            self.ctx,
            handoff.deliver,
            queue.run_dequeue,
            "Dequeue operation was cancelled",
            Taken(1),  # run_dequeue notes the id of the element taken in it
            ready=lambda attempt: queue.size_locked() > 0 or queue.closed,
        )
        return handoff.settle()

    def _late_work(self, result) -> None:
        if self._start_work(result):
            self._advance()

    def _start_work(self, result) -> bool:
        """Starts the dequeued work unit; False if the read ended (or waits for an offer)."""
        if isinstance(result, Offer):
            self.done(result)  # a held step runs the dequeue itself; its result comes back here
            return False
        if isinstance(result, BaseException):
            self._finish(result)
            return False
        try:
            work = _work_unit(result)
            with self.reader.lock:
                self.reader.start_work_locked(work)
        except errors.OpError as e:
            self._finish(e)
            return False
        return True

    def _outputs(self):
        if not self.up_to:
            return self.records[0]
        keys = np.empty(len(self.records), dtype=object)
        values = np.empty(len(self.records), dtype=object)
        for i, (key, value) in enumerate(self.records):
            keys[i], values[i] = key, value
        return keys, values

    def _finish(self, result) -> None:
        self.done(result)
        self.reader.release()


def _work_unit(element: tuple) -> bytes:
    """The file name in a dequeued element, checked as TF's ``GetNextWorkLocked`` does."""
    if len(element) != 1:
        raise errors.InvalidArgumentError(None, None, "Expected single component queue")
    value = np.asarray(element[0])
    if dtypes.as_dtype(value.dtype) != dtypes.string:
        raise errors.InvalidArgumentError(None, None, "Expected queue with single string component")
    if value.size != 1:
        raise errors.InvalidArgumentError(
            None, None, "Expected to dequeue a one-element string tensor"
        )
    return as_bytes(value.reshape(()))


def _path(work: bytes) -> str:
    return os.fsdecode(work)


# -- the reader types ---------------------------------------------------------------------------


class TFRecordReader(ReaderBase):
    """Records of TFRecord files; key ``<file>:<offset of the record>``.

    Args:
        name: The reader's op name.
        compression_type: ``""``, ``"ZLIB"`` or ``"GZIP"``.
    """

    def __init__(self, name: str, compression_type: str):
        super().__init__(f"TFRecordReader '{name}'")
        self.compression_type = compression_type
        self._records: record_io.RecordReader | None = None

    def on_work_started(self) -> None:
        self._records = record_io.open_records(_path(self.work), self.compression_type)

    def on_work_finished(self) -> None:
        if self._records is not None:
            self._records.close()
            self._records = None

    def read_locked(self):
        offset = self._records.offset
        record = self._records.read_record()
        if record is None:
            return None, True
        return (self.key_name(offset), record), False


class TextLineReader(ReaderBase):
    """Lines of text files without their ``\\n`` (or ``\\r\\n``); key ``<file>:<line number>``.

    Line numbers count from 1 and include the skipped header lines.

    Args:
        name: The reader's op name.
        skip_header_lines: Lines skipped at the start of every file.
    """

    def __init__(self, name: str, skip_header_lines: int):
        super().__init__(f"TextLineReader '{name}'")
        self.skip_header_lines = skip_header_lines
        self._file = None
        self._line_number = 0

    def on_work_started(self) -> None:
        self._line_number = 0
        self._file = file_io.open_file(_path(self.work), "rb")
        while self._line_number < self.skip_header_lines:
            if not self._file.readline():
                return  # a file shorter than its header: the next read ends it
            self._line_number += 1

    def on_work_finished(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def read_locked(self):
        line = self._file.readline()
        self._line_number += 1
        if not line:
            return None, True
        if line.endswith(b"\n"):
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
        return (self.key_name(self._line_number), line), False


class FixedLengthRecordReader(ReaderBase):
    """Records of ``record_bytes`` bytes each; key ``<file>:<record number>`` from 0.

    After ``header_bytes`` a record starts every ``hop_bytes`` (0: every
    ``record_bytes``, no overlap); a record counts only if it and
    ``footer_bytes`` more fit in the file, as TF reads ahead by the footer.

    Args:
        name: The reader's op name.
        record_bytes: The length of a record.
        header_bytes: Bytes skipped at the start of a file.
        footer_bytes: Bytes ignored at the end of a file.
        hop_bytes: The distance between the starts of two records.
        encoding: ``""``, ``"ZLIB"`` or ``"GZIP"``: how the file is compressed.
    """

    def __init__(self, name, record_bytes, header_bytes, footer_bytes, hop_bytes, encoding):
        super().__init__(f"FixedLengthRecordReader '{name}'")
        self.record_bytes, self.header_bytes, self.footer_bytes = (
            record_bytes,
            header_bytes,
            footer_bytes,
        )
        self.hop_bytes = hop_bytes or record_bytes
        self.encoding = encoding
        self._stream = None
        self._lookahead = b""  # bytes read beyond the last record's start
        self._record_number = 0

    def on_work_started(self) -> None:
        self._record_number = 0
        self._lookahead = b""
        self._stream = record_io.open_stream(_path(self.work), self.encoding)
        if len(self._stream.read(self.header_bytes)) < self.header_bytes:
            raise errors.OutOfRangeError(
                None, None, f"{_path(self.work)} is shorter than its header of "
                f"{self.header_bytes} bytes"
            )  # fmt: skip

    def on_work_finished(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def read_locked(self):
        if self._record_number and not self._hop():
            return None, True
        needed = self.record_bytes + self.footer_bytes - len(self._lookahead)
        data = self._stream.read(needed)
        if len(data) < needed:
            return None, True
        self._lookahead += data
        key = self.key_name(self._record_number)
        self._record_number += 1
        return (key, self._lookahead[: self.record_bytes]), False

    def _hop(self) -> bool:
        """Moves to the next record's start; False if the file ends first."""
        if self.hop_bytes <= len(self._lookahead):
            self._lookahead = self._lookahead[self.hop_bytes :]
            return True
        skip = self.hop_bytes - len(self._lookahead)
        self._lookahead = b""
        return len(self._stream.read(skip)) == skip


class WholeFileReader(ReaderBase):
    """One record per file: key the file name, value its contents."""

    supports_serialize = True

    def __init__(self, name: str):
        super().__init__(f"WholeFileReader '{name}'")

    def read_locked(self):
        return (self.work, file_io.read_file(_path(self.work))), True

    def serialize_state_locked(self) -> bytes:
        return reader_state.serialize(self)

    def restore_state_locked(self, state: bytes) -> None:
        reader_state.restore(self, state)


class IdentityReader(ReaderBase):
    """One record per work unit: key and value both the work unit itself."""

    supports_serialize = True

    def __init__(self, name: str):
        super().__init__(f"IdentityReader '{name}'")

    def read_locked(self):
        return (self.work, self.work), True

    def serialize_state_locked(self) -> bytes:
        return reader_state.serialize(self)

    def restore_state_locked(self, state: bytes) -> None:
        reader_state.restore(self, state)
