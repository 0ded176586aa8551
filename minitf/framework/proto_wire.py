"""The protobuf wire format, by hand: what ``SerializeToString`` writes and a parser reads.

A serialized message is a sequence of fields, each a *tag* — the varint
``field_number << 3 | wire_type`` — and a payload:

* wire type 0, a varint: 7 bits a byte, least significant group first, the
  high bit set on every byte but the last; a negative int64 is written as its
  64-bit two's complement (ten bytes);
* wire type 1, eight little-endian bytes (fixed64, double);
* wire type 2, a varint length and that many bytes (strings, bytes, nested
  messages, and *packed* repeated numbers: all values one after another);
* wire type 5, four little-endian bytes (fixed32, float).

This module knows only those bytes; `minitf.framework.proto_message` gives
them meaning (which field is which, what a message holds).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class DecodeError(Exception):
    """Raised when bytes are not a valid serialized message (protobuf's ``message.DecodeError``)."""


def encode_varint(value: int) -> bytes:
    """``value`` (a uint64, or an int64 written as its two's complement) as a varint."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_tag(number: int, wire_type: int) -> bytes:
    """The tag that starts field ``number`` with payload ``wire_type``."""
    return encode_varint(number << 3 | wire_type)


def encode_length_delimited(number: int, payload: bytes) -> bytes:
    """Field ``number`` holding ``payload`` (bytes, a string, a message or a packed list)."""
    return encode_tag(number, LENGTH_DELIMITED) + encode_varint(len(payload)) + payload


def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Reads a varint at ``pos``: returns (its value as a uint64, the position after it).

    Raises:
        DecodeError: if the data ends inside the varint or it is longer than ten bytes.
    """
    result = shift = 0
    while True:
        if pos >= len(data) or shift >= 70:
            raise DecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7


def as_int64(value: int) -> int:
    """A uint64 read from the wire as the int64 it encodes (two's complement)."""
    return value - (1 << 64) if value > _INT64_MAX else value


def iter_fields(data: bytes) -> Iterator[tuple[int, int, object]]:
    """Yields ``(field number, wire type, payload)`` for each field of a serialized message.

    The payload is an int for varints, ``bytes`` for the other wire types.

    Raises:
        DecodeError: for a truncated field, field number 0 or a wire type
            protobuf no longer writes (groups, 3 and 4) or never defined.
    """
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = decode_varint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise DecodeError("field number 0")
        if wire_type == VARINT:
            value, pos = decode_varint(data, pos)
            yield number, wire_type, value
            continue
        if wire_type == LENGTH_DELIMITED:
            size, pos = decode_varint(data, pos)
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
        else:
            raise DecodeError(f"wire type {wire_type}")
        if pos + size > end:
            raise DecodeError("truncated field")
        yield number, wire_type, data[pos : pos + size]
        pos += size


def pack_floats(values) -> bytes:
    """Float32 values as a packed payload (four little-endian bytes each)."""
    return struct.pack(f"<{len(values)}f", *values)


def unpack_floats(payload: bytes) -> list[float]:
    """The float32 values of a packed payload.

    Raises:
        DecodeError: if the payload is not a whole number of floats.
    """
    if len(payload) % 4:
        raise DecodeError("packed floats of a length that is not a multiple of 4")
    return list(struct.unpack(f"<{len(payload) // 4}f", payload))


def unpack_float(payload: bytes) -> float:
    """One float32 written unpacked (wire type 5)."""
    return struct.unpack("<f", payload)[0]


def pack_varints(values) -> bytes:
    """Int64 values as a packed payload (varints one after another)."""
    return b"".join(encode_varint(v) for v in values)


def unpack_varints(payload: bytes) -> list[int]:
    """The int64 values of a packed payload."""
    values, pos = [], 0
    while pos < len(payload):
        value, pos = decode_varint(payload, pos)
        values.append(as_int64(value))
    return values


def check_int64(value: int) -> int:
    """``value`` if it fits an int64.

    Raises:
        ValueError: protobuf's message, if it does not.
    """
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"Value out of range: {value}")
    return value
