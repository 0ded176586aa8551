"""A reader's serialized state: TF's ``ReaderBaseState`` protocol buffer, byte for byte.

``reader_base.proto`` has four fields: ``work_started = 1``,
``work_finished = 2``, ``num_records_produced = 3`` (int64) and
``current_work = 4`` (bytes). Serialized in proto3's wire format: each
non-default field as a tag (``field << 3 | wire type``) and its value, an
int64 as a varint (a negative one in ten bytes), bytes as a varint length and
the bytes. The parser accepts what a protobuf parser accepts (fields in any
order, repeated, unknown ones skipped) and refuses the rest, so a state cut
short or with junk around it fails as in TF: "Could not parse state for
IdentityReader 'name': <the bytes, C-escaped>".
"""

from __future__ import annotations

from typing import Protocol

from minitf.framework import errors

__all__ = ["serialize", "restore", "encode", "decode"]

_INT_FIELDS = {1: "work_started", 2: "work_finished", 3: "num_records_produced"}
_WORK_FIELD = 4
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


class _Reader(Protocol):
    name: str
    work: bytes
    work_started: int
    work_finished: int
    num_records_produced: int


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # an int64 is sent as its 64-bit two's complement
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode(fields: dict) -> bytes:
    """The wire form of a ``ReaderBaseState`` given as a dict of its field names."""
    out = bytearray()
    for number, name in _INT_FIELDS.items():
        if fields[name]:
            out += _varint(number << 3 | _VARINT) + _varint(fields[name])
    if fields["current_work"]:
        work = fields["current_work"]
        out += _varint(_WORK_FIELD << 3 | _BYTES) + _varint(len(work)) + work
    return bytes(out)


class _Malformed(Exception):
    pass


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _Malformed
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _signed(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def _read_field(data: bytes, pos: int) -> tuple[int, int, int | bytes | None]:
    """One field: its number, the position after it and its value (None for skipped types)."""
    tag, pos = _read_varint(data, pos)
    number, wire_type = tag >> 3, tag & 7
    if number == 0:
        raise _Malformed
    if wire_type == _VARINT:
        value, pos = _read_varint(data, pos)
        return number, pos, value
    if wire_type == _BYTES:
        length, pos = _read_varint(data, pos)
        if pos + length > len(data):
            raise _Malformed
        return number, pos + length, data[pos : pos + length]
    width = {_FIXED64: 8, _FIXED32: 4}.get(wire_type)
    if width is None or pos + width > len(data):
        raise _Malformed
    return number, pos + width, None


def decode(data: bytes) -> dict | None:
    """The fields of a ``ReaderBaseState`` in ``data``, or None if it does not parse."""
    fields = {"work_started": 0, "work_finished": 0, "num_records_produced": 0,
              "current_work": b""}  # fmt: skip
    pos = 0
    try:
        while pos < len(data):
            number, pos, value = _read_field(data, pos)
            if number in _INT_FIELDS and isinstance(value, int):
                fields[_INT_FIELDS[number]] = _signed(value)
            elif number == _WORK_FIELD and isinstance(value, bytes):
                fields["current_work"] = value
    except _Malformed:
        return None
    return fields


def _c_escape(data: bytes) -> str:
    """``data`` as TF's ``absl::CEscape`` prints it: octal escapes for unprintable bytes."""
    named = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x27: "\\'", 0x5C: "\\\\"}
    return "".join(named.get(b) or (chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}") for b in data)


def _debug_string(fields: dict) -> str:
    lines = [f"{name}: {fields[name]}" for name in _INT_FIELDS.values() if fields[name]]
    if fields["current_work"]:
        lines.append(f'current_work: "{_c_escape(fields["current_work"])}"')
    return "".join(line + "\n" for line in lines)


def serialize(reader: _Reader) -> bytes:
    """The reader's base state (TF's ``SaveBaseState`` then ``SerializeToString``)."""
    return encode(
        {
            "work_started": reader.work_started,
            "work_finished": reader.work_finished,
            "num_records_produced": reader.num_records_produced,
            "current_work": reader.work,
        }
    )


def restore(reader: _Reader, state: bytes) -> None:
    """Sets the reader's base state from ``state`` (TF's ``RestoreBaseState``).

    Raises:
        InvalidArgumentError: if ``state`` does not parse, has a negative
            count, or was taken in the middle of a work unit.
    """
    fields = decode(state)
    if fields is None:
        raise errors.InvalidArgumentError(
            None, None, f"Could not parse state for {reader.name}: {_c_escape(state)}"
        )
    reader.work_started = fields["work_started"]
    reader.work_finished = fields["work_finished"]
    reader.num_records_produced = fields["num_records_produced"]
    reader.work = fields["current_work"]
    counts = (reader.work_started, reader.work_finished, reader.num_records_produced)
    if min(counts) < 0:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Unexpected negative value when restoring in {reader.name}: {_debug_string(fields)}",
        )
    if reader.work_started > reader.work_finished:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Inconsistent work started vs. finished when restoring in {reader.name}: "
            f"{_debug_string(fields)}",
        )
