"""``tf.TFRecordReader``, ``tf.TextLineReader``, ... and ``tf.read_file``/``tf.write_file``.

A reader object builds ops; it holds no file. ``tf.TFRecordReader()`` adds a
``TFRecordReaderV2`` op whose kernel finds or creates the reader resource in
the task's resource manager, and each method adds one op taking the reader's
handle: ``read`` → ``ReaderReadV2``, ``read_up_to`` → ``ReaderReadUpToV2``,
``num_records_produced`` → ``ReaderNumRecordsProducedV2``, and so on. The
work units — file names — come from a queue of strings, usually a
``tf.FIFOQueue`` filled with file names and closed::

    filenames = tf.FIFOQueue(10, tf.string, shapes=[])
    fill = filenames.enqueue_many([["a.tfrecord", "b.tfrecord"]])
    close = filenames.close()
    key, value = tf.TFRecordReader().read(filenames)

Running ``key, value`` gives one record per run, moving on to the next file
when one ends, and raises ``OutOfRangeError`` once the queue is closed and
every file has been read. The resources and kernels are in
`minitf.ops.io.readers` and `minitf.ops.io.reader_kernels`.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.common_shapes import check_rank
from minitf.ops.io.tf_record import TFRecordOptions

__all__ = [
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "FixedLengthRecordReader",
    "WholeFileReader",
    "IdentityReader",
    "read_file",
    "write_file",
]

_SCALAR = tensor_shape.TensorShape([])
_VECTOR = tensor_shape.TensorShape([None])


def _create(op_type: str, inputs, out_types, name, shapes, attrs=None) -> ops.Operation:
    return ops.get_default_graph().create_op(
        op_type, list(inputs), list(out_types), name=name or op_type, attrs=attrs or {},
        shapes=list(shapes),
    )  # fmt: skip


def _reader_op(op_type: str, name, attrs: dict) -> ops.Tensor:
    """The op that makes (or finds) a reader; its output is the reader's handle."""
    attrs = {**attrs, "container": "", "shared_name": ""}
    with ops.control_dependencies(None):
        return _create(op_type, [], [dtypes.resource], name, [_SCALAR], attrs).outputs[0]


def _queue_ref(queue) -> ops.Tensor:
    return queue if isinstance(queue, ops.Tensor) else queue.queue_ref


class ReaderBase:
    """The methods every reader has (TF's ``tf.ReaderBase``).

    Args:
        reader_ref: The reader's handle (the output of its reader op).
        supports_serialize: Whether `serialize_state` and `restore_state` work.
    """

    def __init__(self, reader_ref: ops.Tensor, supports_serialize: bool = False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self) -> ops.Tensor:
        """The reader's handle tensor."""
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        """Whether the reader can serialize and restore its state."""
        return self._supports_serialize

    def read(self, queue: Any, name: str | None = None) -> tuple[ops.Tensor, ops.Tensor]:
        """The next record ``(key, value)``, two string scalars.

        When run it takes the next work unit from ``queue`` if it has none in
        progress — waiting while the queue is empty, failing with
        ``OutOfRangeError`` once it is closed and empty.

        Args:
            queue: A queue of strings, or its handle tensor.
            name: The op name.
        """
        op = _create("ReaderReadV2", [self._reader_ref, _queue_ref(queue)],
                     [dtypes.string, dtypes.string], name, [_SCALAR, _SCALAR])  # fmt: skip
        return op.outputs[0], op.outputs[1]

    def read_up_to(
        self, queue: Any, num_records: Any, name: str | None = None
    ) -> tuple[ops.Tensor, ops.Tensor]:
        """Up to ``num_records`` records ``(keys, values)``, two string vectors.

        It may return fewer even before the last file: it stops at the end of
        a file it has read some records from.

        Args:
            queue: A queue of strings, or its handle tensor.
            num_records: An int64 scalar.
            name: The op name.
        """
        with ops.name_scope(name, "ReaderReadUpToV2", [self._reader_ref]) as scope:
            count = ops.convert_to_tensor(num_records, dtype=dtypes.int64, name="num_records")
            inputs = [self._reader_ref, _queue_ref(queue), count]
            check_rank(count, 0, scope, "ReaderReadUpToV2", inputs)
            op = _create("ReaderReadUpToV2", inputs, [dtypes.string, dtypes.string], scope,
                         [_VECTOR, _VECTOR])  # fmt: skip
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name: str | None = None) -> ops.Tensor:
        """An int64 scalar: how many records the reader has produced (successful reads).

        Args:
            name: The op name.
        """
        return self._int64_op("ReaderNumRecordsProducedV2", name)

    def num_work_units_completed(self, name: str | None = None) -> ops.Tensor:
        """An int64 scalar: how many work units (files) the reader has finished.

        Args:
            name: The op name.
        """
        return self._int64_op("ReaderNumWorkUnitsCompletedV2", name)

    def _int64_op(self, op_type: str, name) -> ops.Tensor:
        return _create(op_type, [self._reader_ref], [dtypes.int64], name, [_SCALAR]).outputs[0]

    def serialize_state(self, name: str | None = None) -> ops.Tensor:
        """A string scalar encoding the reader's state (``UnimplementedError`` if it cannot).

        Args:
            name: The op name.
        """
        return _create(
            "ReaderSerializeStateV2", [self._reader_ref], [dtypes.string], name, [_SCALAR]
        ).outputs[0]

    def restore_state(self, state: Any, name: str | None = None) -> ops.Operation:
        """Restores a state from `serialize_state` of a reader of the same type.

        Args:
            state: A string scalar.
            name: The op name.

        Raises:
            ValueError: if ``state`` is not a scalar.
        """
        with ops.name_scope(name, "ReaderRestoreStateV2", [self._reader_ref]) as scope:
            state = ops.convert_to_tensor(state, dtype=dtypes.string, name="state")
            inputs = [self._reader_ref, state]
            check_rank(state, 0, scope, "ReaderRestoreStateV2", inputs)
            return _create("ReaderRestoreStateV2", inputs, [], scope, [])

    def reset(self, name: str | None = None) -> ops.Operation:
        """Returns the reader to its initial state: no work in progress, counts at 0.

        Args:
            name: The op name.
        """
        return _create("ReaderResetV2", [self._reader_ref], [], name, [])


class WholeFileReader(ReaderBase):
    """A reader whose records are whole files: key the file name, value its contents.

    Args:
        name: The reader op's name.
    """

    def __init__(self, name: str | None = None):
        super().__init__(_reader_op("WholeFileReaderV2", name, {}), supports_serialize=True)


class TextLineReader(ReaderBase):
    """A reader whose records are the lines of text files (without the newline).

    The key of a line is ``"<file>:<line number>"``, counting from 1.

    Args:
        skip_header_lines: Lines skipped at the start of every file (None: 0).
        name: The reader op's name.
    """

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None):
        attrs = {"skip_header_lines": 0 if skip_header_lines is None else int(skip_header_lines)}
        super().__init__(_reader_op("TextLineReaderV2", name, attrs))


class FixedLengthRecordReader(ReaderBase):
    """A reader whose records are runs of ``record_bytes`` bytes of a file.

    The key of a record is ``"<file>:<record number>"``, counting from 0.

    Args:
        record_bytes: The length of a record.
        header_bytes: Bytes skipped at the start of every file (None: 0).
        footer_bytes: Bytes ignored at the end of every file (None: 0).
        hop_bytes: The distance between the starts of two records (None or
            0: ``record_bytes``; less makes records overlap).
        name: The reader op's name.
        encoding: ``"ZLIB"`` or ``"GZIP"`` for compressed files (None: not compressed).
    """

    def __init__(
        self,
        record_bytes: int,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        hop_bytes: int | None = None,
        name: str | None = None,
        encoding: str | None = None,
    ):
        def given(value):
            return 0 if value is None else int(value)

        attrs = {
            "record_bytes": int(record_bytes),
            "header_bytes": given(header_bytes),
            "footer_bytes": given(footer_bytes),
            "hop_bytes": given(hop_bytes),
            "encoding": encoding or "",
        }
        super().__init__(_reader_op("FixedLengthRecordReaderV2", name, attrs))


class TFRecordReader(ReaderBase):
    """A reader whose records are the records of TFRecord files.

    The key of a record is ``"<file>:<offset>"``, the offset of the record
    in the (decompressed) file.

    Args:
        name: The reader op's name.
        options: A ``tf.python_io.TFRecordOptions`` (or a compression type) for
            compressed files.

    Raises:
        ValueError: for an unknown compression type.
    """

    def __init__(self, name: str | None = None, options: TFRecordOptions | int | str | None = None):
        compression_type = TFRecordOptions.get_compression_type_string(options)
        attrs = {"compression_type": compression_type}
        super().__init__(_reader_op("TFRecordReaderV2", name, attrs))


class IdentityReader(ReaderBase):
    """A reader whose record for each work unit is the work unit itself, as key and value.

    Args:
        name: The reader op's name.
    """

    def __init__(self, name: str | None = None):
        super().__init__(_reader_op("IdentityReaderV2", name, {}), supports_serialize=True)


def read_file(filename: Any, name: str | None = None) -> ops.Tensor:
    """The contents of the file ``filename``, a string scalar (TF's ``tf.read_file``).

    Args:
        filename: A string scalar.
        name: The op name.

    Raises:
        ValueError: if ``filename`` is not a scalar.
    """
    with ops.name_scope(name, "ReadFile", [filename]) as scope:
        filename = ops.convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        check_rank(filename, 0, scope, "ReadFile", [filename])
        return _create("ReadFile", [filename], [dtypes.string], scope, [_SCALAR]).outputs[0]


def write_file(filename: Any, contents: Any, name: str | None = None) -> ops.Operation:
    """Writes ``contents`` to ``filename``, creating its directory (TF's ``tf.write_file``).

    Args:
        filename: A string scalar.
        contents: A string scalar.
        name: The op name.

    Raises:
        ValueError: if an input is not a scalar.
    """
    with ops.name_scope(name, "WriteFile", [filename, contents]) as scope:
        filename = ops.convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        contents = ops.convert_to_tensor(contents, dtype=dtypes.string, name="contents")
        for tensor in (filename, contents):
            check_rank(tensor, 0, scope, "WriteFile", [filename, contents])
        return _create("WriteFile", [filename, contents], [], scope, [])
