"""``tf.python_io`` (and ``tf.io``): writing and reading TFRecord files from Python.

No graph is involved: `TFRecordWriter` appends records to a file, and
`tf_record_iterator` yields them back. The files are TF's own format
(`minitf.ops.io.record_io`), so TensorFlow reads what minitf writes and the
other way round. In a graph, ``tf.TFRecordReader`` reads the same files.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator

from minitf.framework import errors
from minitf.ops.io import record_io

__all__ = [
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "tf_record_iterator",
]


class TFRecordCompressionType:
    """The compression of a TFRecord file: ``NONE``, ``ZLIB`` or ``GZIP`` (TF's constants)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """How a TFRecord file is compressed (TF's ``tf.io.TFRecordOptions``).

    Only ``compression_type`` matters to a reader. A writer also uses
    ``compression_level``, ``mem_level`` and ``compression_strategy`` (zlib's
    parameters); the buffer sizes, ``flush_mode``, ``window_bits`` and
    ``compression_method`` are kept but change nothing in minitf.

    Args:
        compression_type: ``"GZIP"``, ``"ZLIB"``, ``""`` or None (none), or a
            `TFRecordCompressionType` constant.
        flush_mode: Kept for TF's signature.
        input_buffer_size: Kept for TF's signature.
        output_buffer_size: Kept for TF's signature.
        window_bits: Kept for TF's signature (zlib's 15, gzip's 31 are used).
        compression_level: 0 to 9, or None (zlib's default).
        compression_method: Kept for TF's signature (deflate is the only one).
        mem_level: 1 to 9, or None (9, TF's default).
        compression_strategy: zlib's strategy, or None.

    Raises:
        ValueError: if ``compression_type`` is not one of these.
    """

    compression_type_map = {
        TFRecordCompressionType.ZLIB: "ZLIB",
        TFRecordCompressionType.GZIP: "GZIP",
        TFRecordCompressionType.NONE: "",
    }

    def __init__(
        self,
        compression_type: int | str | None = None,
        flush_mode: int | None = None,
        input_buffer_size: int | None = None,
        output_buffer_size: int | None = None,
        window_bits: int | None = None,
        compression_level: int | None = None,
        compression_method: int | None = None,
        mem_level: int | None = None,
        compression_strategy: int | None = None,
    ):
        self.get_compression_type_string(compression_type)
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: TFRecordOptions | int | str | None) -> str:
        """The compression type of ``options`` as ``"ZLIB"``, ``"GZIP"`` or ``""``.

        Args:
            options: A `TFRecordOptions`, a `TFRecordCompressionType` constant,
                a string, or None.

        Raises:
            ValueError: for anything else.
        """
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, (int, str)) and options in cls.compression_type_map:
            return cls.compression_type_map[options]
        if options in cls.compression_type_map.values():
            return options
        raise ValueError(f'Not a valid compression_type: "{options}"')

    def _writer_arguments(self) -> dict:
        def given(value, default):
            return default if value is None else value

        return {
            "compression_type": self.get_compression_type_string(self.compression_type),
            "compression_level": given(self.compression_level, zlib.Z_DEFAULT_COMPRESSION),
            "mem_level": given(self.mem_level, 9),
            "strategy": given(self.compression_strategy, zlib.Z_DEFAULT_STRATEGY),
        }


def _options(options) -> TFRecordOptions:
    return options if isinstance(options, TFRecordOptions) else TFRecordOptions(options)


class TFRecordWriter:
    """Writes records to a TFRecord file (TF's ``tf.io.TFRecordWriter``).

    A context manager: ``with tf.python_io.TFRecordWriter(path) as w:
    w.write(b"...")`` closes the file at the end of the block.

    Args:
        path: The file to write (created, or truncated if it exists).
        options: A `TFRecordOptions`, a `TFRecordCompressionType` constant,
            ``"ZLIB"``/``"GZIP"``/``""``, or None.

    Raises:
        NotFoundError: if the file's directory does not exist.
        ValueError: for an unknown compression type.
    """

    def __init__(
        self, path: str | bytes | os.PathLike, options: TFRecordOptions | int | str | None = None
    ):
        self._path = os.fsdecode(path)
        self._writer = record_io.RecordWriter(self._path, **_options(options)._writer_arguments())

    def _open_writer(self) -> record_io.RecordWriter:
        if self._writer is None:
            raise errors.FailedPreconditionError(None, None, "Writer is closed.")
        return self._writer

    def write(self, record: bytes | str) -> None:
        """Appends one record.

        Args:
            record: ``bytes`` (a ``str`` is written as UTF-8).

        Raises:
            FailedPreconditionError: if the writer is closed ("Writer is closed.").
        """
        if isinstance(record, str):
            record = record.encode()
        self._open_writer().write(bytes(record))

    def flush(self) -> None:
        """Writes out the buffered records, so that a reader sees them.

        Raises:
            FailedPreconditionError: if the writer is closed ("Writer is closed.").
        """
        self._open_writer().flush()

    def close(self) -> None:
        """Finishes the file (a compressed stream's end) and closes it; closing twice is fine."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def tf_record_iterator(
    path: str | bytes | os.PathLike, options: TFRecordOptions | int | str | None = None
) -> Iterator[bytes]:
    """An iterator over the records of a TFRecord file (TF's ``tf.python_io.tf_record_iterator``).

    The file is opened at once; the records are read as the iterator advances.

    Args:
        path: The file.
        options: A `TFRecordOptions`, a `TFRecordCompressionType` constant,
            ``"ZLIB"``/``"GZIP"``/``""``, or None.

    Returns:
        An iterator of ``bytes``. Advancing it over a truncated or corrupted
        record raises ``tf.errors.DataLossError``.

    Raises:
        NotFoundError: if there is no such file.
        ValueError: for an unknown compression type.
    """
    compression_type = TFRecordOptions.get_compression_type_string(options)
    return iter(record_io.open_records(os.fsdecode(path), compression_type))
