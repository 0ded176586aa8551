"""CSV records as ``tf.decode_csv`` reads them (TF's decode_csv_op.cc, RFC 4180).

A record splits on ``field_delim``. With ``use_quote_delim`` a field that
starts with ``"`` runs to the next ``"`` that is followed by the delimiter
or the end, and ``""`` inside it is one quote; an unquoted field may hold
neither quotes nor line breaks. A record ending in the delimiter has an
empty last field; an empty record has no fields.

Numbers follow TF's ``safe_strto*``: surrounding spaces are allowed, an int
is decimal digits with an optional sign, a float may also be ``nan``,
``inf`` or hexadecimal (``0x10``).
"""

from __future__ import annotations

import re

import numpy as np

from minitf.framework import dtypes


class CsvError(Exception):
    """A record or a field that TF's DecodeCSV refuses (the kernel's InvalidArgumentError)."""


def _unquoted(record: bytes, start: int, delim: int, use_quote: bool) -> tuple[bytes, int]:
    end = start
    while end < len(record) and record[end] != delim:
        if (use_quote and record[end] == ord('"')) or record[end] in b"\r\n":
            raise CsvError("Unquoted fields cannot have quotes/CRLFs inside")
        end += 1
    return record[start:end], end + 1


def _quoted(record: bytes, start: int, delim: int) -> tuple[bytes, int]:
    field = bytearray()
    pos = start + 1  # past the opening quote
    while pos < len(record) - 1:
        if record[pos] != ord('"'):
            field.append(record[pos])
            pos += 1
            continue
        if record[pos + 1] == ord('"'):
            field.append(ord('"'))
            pos += 2
            continue
        if record[pos + 1] != delim:
            raise CsvError("Quote inside a string has to be escaped by another quote")
        break
    closed = pos < len(record) and record[pos] == ord('"')
    if not closed or (pos != len(record) - 1 and record[pos + 1] != delim):
        raise CsvError("Quoted field has to end with quote followed by delim or end")
    return bytes(field), pos + 2


def split_record(record: bytes, delim: int, use_quote: bool) -> list[bytes]:
    """The fields of one record.

    Args:
        record: The record.
        delim: The delimiter, a byte value.
        use_quote: Treat ``"`` as RFC 4180 quoting.

    Raises:
        CsvError: for a stray quote, a line break or an unterminated quoted field.
    """
    fields, pos = [], 0
    while pos < len(record):
        if use_quote and record[pos] == ord('"'):
            field, pos = _quoted(record, pos, delim)
        else:
            field, pos = _unquoted(record, pos, delim, use_quote)
        fields.append(field)
    if record and record[-1] == delim:
        fields.append(b"")
    return fields


_INT = re.compile(rb"\s*[+-]?[0-9]+\s*")
_FLOAT = re.compile(
    rb"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)\s*",
    re.IGNORECASE,
)
_HEX_FLOAT = re.compile(rb"\s*[+-]?0[xX][0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?(?:[pP][+-]?[0-9]+)?\s*")
_TYPE_NAMES = {dtypes.float32: "float", dtypes.float64: "double"}


def type_name(dtype: dtypes.DType) -> str:
    """The word TF's messages use for a column type ("float", "double", "int32", ...)."""
    return _TYPE_NAMES.get(dtype, dtype.name)


def convert_field(field: bytes, dtype: dtypes.DType):
    """A non-empty field as a value of ``dtype``, or None if it is not one."""
    if dtype == dtypes.string:
        return field
    if dtype.is_integer:
        if not _INT.fullmatch(field):
            return None
        value = int(field)
        return value if dtype.min <= value <= dtype.max else None
    if _FLOAT.fullmatch(field):
        text = field.strip().decode()
        with np.errstate(over="ignore"):
            return dtype.as_numpy_dtype(float(text))
    if _HEX_FLOAT.fullmatch(field):
        return dtype.as_numpy_dtype(float.fromhex(field.strip().decode()))
    return None
