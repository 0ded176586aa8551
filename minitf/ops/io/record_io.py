"""The TFRecord file format: what `tf.python_io` and ``TFRecordReader`` read and write.

A TFRecord file is a sequence of records, each (TF's
``tensorflow/core/lib/io/record_writer.cc``)::

    uint64  length                       little-endian
    uint32  masked CRC32C of length      the 8 bytes above
    byte    data[length]
    uint32  masked CRC32C of data

(`minitf.ops.io.crc32c` has the checksum and its mask). A file may be
compressed as a whole, as one zlib (``"ZLIB"``) or gzip (``"GZIP"``) stream;
the offsets of records are then offsets in the decompressed stream.

Reading follows ``record_reader.cc``, surprises included:

* the file ends where a record's 12-byte header cannot be read whole — a
  file cut inside a header reads as if it ended before it, without error;
* a record whose data (or its CRC) is cut short is ``DataLossError("truncated
  record at <offset>")``, ``<offset>`` where the record starts;
* a length whose CRC does not match is ``DataLossError("corrupted record at
  <offset>")`` with the record's offset, but data whose CRC does not match
  names the offset of the data, 12 bytes further.

A compressed stream that does not inflate is ``DataLossError("inflate()
failed with error -3: incorrect header check")``, zlib's words as TF prints them.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from minitf.framework import errors
from minitf.ops.io import crc32c, file_io

__all__ = ["COMPRESSION_TYPES", "RecordReader", "RecordWriter", "open_records"]

COMPRESSION_TYPES = ("", "ZLIB", "GZIP")
"""The compression types of a TFRecord file (TF also has ``"SNAPPY"``; minitf does not)."""

_HEADER = 12  # length and its CRC
_FOOTER = 4  # the data's CRC
_CHUNK = 256 << 10  # compressed bytes read at a time (TF's zlib input buffer)
_WBITS = {"ZLIB": zlib.MAX_WBITS, "GZIP": zlib.MAX_WBITS + 16}


def check_compression_type(compression_type: str) -> str:
    """Returns ``compression_type`` if minitf can read and write it.

    Raises:
        ValueError: for any other compression type.
    """
    if compression_type not in COMPRESSION_TYPES:
        raise ValueError(
            f'Not a valid compression_type: "{compression_type}" (one of "", "ZLIB", "GZIP")'
        )
    return compression_type


def _inflate_error(exc: zlib.error) -> errors.DataLossError:
    """TF's words for a stream zlib cannot inflate (Python says "Error -3 while ...: why")."""
    found = re.match(r"Error (-?\d+) while decompressing data: (.*)", str(exc))
    code, why = found.groups() if found else ("?", str(exc))
    return errors.DataLossError(None, None, f"inflate() failed with error {code}: {why}")


class _Inflating:
    """A readable stream of the decompressed bytes of a zlib or gzip file."""

    def __init__(self, raw: BinaryIO, compression_type: str, path: str):
        self._raw = raw
        self._path = path
        self._inflater = zlib.decompressobj(_WBITS[compression_type])
        self._buffer = bytearray()
        self._eof = False

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes: fewer only at the end of the stream."""
        while len(self._buffer) < n and not self._eof:
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                self._eof = True
                break
            try:
                self._buffer += self._inflater.decompress(chunk)
            except zlib.error as e:
                raise _inflate_error(e) from None
            if self._inflater.eof:
                self._eof = True
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def close(self) -> None:
        """Closes the file."""
        self._raw.close()


def open_stream(path, compression_type: str = ""):
    """A readable stream of the (decompressed) contents of ``path``.

    Args:
        path: The file.
        compression_type: ``""``, ``"ZLIB"`` or ``"GZIP"``.

    Raises:
        NotFoundError: if there is no such file (see `minitf.ops.io.file_io.open_file`).
    """
    raw = file_io.open_file(path, "rb")
    if not compression_type:
        return raw
    return _Inflating(raw, compression_type, str(path))


class RecordReader:
    """Reads the records of one TFRecord stream in order (TF's ``io::RecordReader``).

    Args:
        stream: A readable binary stream (see `open_stream`).
    """

    def __init__(self, stream):
        self._stream = stream
        self.offset = 0
        self._failure: errors.OpError | None = None

    def read_record(self) -> bytes | None:
        """The next record, or None at the end of the stream.

        After a failure every later call fails the same way: the stream is
        not resynchronised (TF re-reads the same bytes and fails again).

        Raises:
            DataLossError: for a truncated or corrupted record.
        """
        if self._failure is not None:
            raise self._failure
        try:
            return self._read_record()
        except errors.DataLossError as e:
            self._failure = e
            raise

    def _read_record(self) -> bytes | None:
        header = self._stream.read(_HEADER)
        if len(header) < _HEADER:
            return None  # TF: a header cut short is the end of the file
        self._check(header[:8], header[8:], self.offset)
        (length,) = struct.unpack("<Q", header[:8])
        body = self._stream.read(length + _FOOTER)
        if len(body) < length + _FOOTER:
            raise _loss("truncated", self.offset)
        data = memoryview(body)[:length]
        self._check(data, body[length:], self.offset + _HEADER)
        self.offset += _HEADER + length + _FOOTER
        return bytes(data)

    @staticmethod
    def _check(data, masked_crc: bytes, offset: int) -> None:
        if crc32c.unmask(struct.unpack("<I", masked_crc)[0]) != crc32c.value(data):
            raise _loss("corrupted", offset)

    def __iter__(self) -> Iterator[bytes]:
        while (record := self.read_record()) is not None:
            yield record

    def close(self) -> None:
        """Closes the stream."""
        self._stream.close()


def _loss(what: str, offset: int) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"{what} record at {offset}")


def open_records(path, compression_type: str = "") -> RecordReader:
    """A `RecordReader` of the TFRecord file ``path``.

    Args:
        path: The file.
        compression_type: ``""``, ``"ZLIB"`` or ``"GZIP"``.

    Raises:
        NotFoundError: if there is no such file.
    """
    return RecordReader(open_stream(path, compression_type))


class RecordWriter:
    """Appends records to a TFRecord file (TF's ``io::RecordWriter``).

    Args:
        path: The file, created or truncated.
        compression_type: ``""``, ``"ZLIB"`` or ``"GZIP"``.
        compression_level: zlib's level (-1: its default, 6).
        mem_level: zlib's memory level (TF's default 9).
        strategy: zlib's strategy.

    Raises:
        NotFoundError: if the file's directory does not exist.
    """

    def __init__(
        self,
        path,
        compression_type: str = "",
        compression_level: int = zlib.Z_DEFAULT_COMPRESSION,
        mem_level: int = 9,
        strategy: int = zlib.Z_DEFAULT_STRATEGY,
    ):
        self._file = file_io.open_file(path, "wb")
        self._deflater = None
        if compression_type:
            self._deflater = zlib.compressobj(
                compression_level, zlib.DEFLATED, _WBITS[compression_type], mem_level, strategy
            )

    @staticmethod
    def encode(record: bytes) -> bytes:
        """One record as it is stored: length, CRC, data, CRC."""
        length = struct.pack("<Q", len(record))
        return b"".join(
            (
                length,
                struct.pack("<I", crc32c.masked_value(length)),
                record,
                struct.pack("<I", crc32c.masked_value(record)),
            )
        )

    def write(self, record: bytes) -> None:
        """Appends one record."""
        encoded = self.encode(record)
        self._file.write(self._deflater.compress(encoded) if self._deflater else encoded)

    def flush(self) -> None:
        """Writes out what is buffered; a compressed stream is sync-flushed (readable so far)."""
        if self._deflater:
            self._file.write(self._deflater.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        """Ends the compressed stream, if any, and closes the file."""
        if self._deflater:
            self._file.write(self._deflater.flush(zlib.Z_FINISH))
            self._deflater = None
        self._file.close()
