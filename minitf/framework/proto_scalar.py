"""Singular scalar fields (``string tag = 1;``, ``double min = 1;``) and more repeated kinds.

`minitf.framework.proto_message` has what ``example.proto`` needs: repeated
numbers and bytes, messages and maps. The summary, event and graph protos
also hold single numbers, strings and enums; `ScalarField` is such a field
with proto3's rules, as protobuf's Python API has them:

* an unset field reads as its default (``""``, ``0``, ``0.0``, ``False``);
  it is written only when it differs from the default, so setting a field to
  its default is the same as not setting it;
* a field in a ``oneof`` is different: once set it is present
  (``HasField``, ``WhichOneof``) and written even when it holds the default,
  and setting it clears the other members of its oneof.

Setting a field inside a sub-message makes the sub-message present, as
appending to one of its lists does. Also here: the repeated kinds `DOUBLE`
(``repeated double``, packed) and `STRING` (``repeated string``).
"""

from __future__ import annotations

import math
import numbers
import operator
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import proto_wire as wire
from minitf.framework.proto_message import Message, _Field, _format_float, _Scalar, quote

__all__ = ["BOOL", "DOUBLE", "STRING", "ScalarField", "Single", "enum", "single"]


def _check_double(value) -> float:
    if not isinstance(value, numbers.Real):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    return float(value)


def _check_str(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"expected str, {type(value).__name__} found")
    return value


def _check_bytes(value) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError(f"expected bytes, {type(value).__name__} found")
    return bytes(value)


def _check_int32(value) -> int:
    value = operator.index(value)
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"Value out of range: {value}")
    return value


def _check_bool(value) -> bool:
    if not isinstance(value, (bool, numbers.Integral, np.bool_)):
        raise TypeError(f"expected bool, {type(value).__name__} found")
    return bool(value)


def _check_float(value) -> float:
    value = _check_double(value)
    with np.errstate(over="ignore"):
        return float(np.float32(value))  # a float field holds float32 values


def _format_double(value: float) -> str:
    """A double as protobuf's text format writes it: the shortest repr, ``-2`` not ``-2.0``."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _encode_doubles(number: int, values) -> bytes:
    packed = struct.pack(f"<{len(values)}d", *values)
    return wire.encode_length_delimited(number, packed) if values else b""


def _decode_doubles(wire_type: int, payload) -> list[float]:
    if wire_type == wire.FIXED64:
        return [struct.unpack("<d", payload)[0]]
    if len(payload) % 8:
        raise wire.DecodeError("packed doubles of a length that is not a multiple of 8")
    return list(struct.unpack(f"<{len(payload) // 8}d", payload))


DOUBLE = _Scalar(
    _check_double,
    (wire.LENGTH_DELIMITED, wire.FIXED64),
    _encode_doubles,
    _decode_doubles,
    _format_double,
)
STRING = _Scalar(
    _check_str,
    (wire.LENGTH_DELIMITED,),
    lambda number, values: b"".join(
        wire.encode_length_delimited(number, v.encode()) for v in values
    ),
    lambda wire_type, payload: [bytes(payload).decode("utf-8")],
    lambda value: quote(value.encode(), utf8=True),
)
BOOL = _Scalar(
    _check_bool,
    (wire.LENGTH_DELIMITED, wire.VARINT),
    lambda number, values: (
        wire.encode_length_delimited(number, wire.pack_varints([int(v) for v in values]))
        if values
        else b""
    ),
    lambda wire_type, payload: (
        [bool(payload)]
        if wire_type == wire.VARINT
        else [bool(v) for v in wire.unpack_varints(payload)]
    ),
    lambda value: "true" if value else "false",
)


class Single:
    """What a singular scalar field holds: its default, check, wire form and text.

    Args:
        default: The value of an unset field.
        check: Checks a value and returns it as stored.
        wire_type: The wire type it is written with.
        encode: ``encode(value)`` -> the payload bytes (after the tag).
        decode: ``decode(payload)`` -> the value (payload as `proto_wire.iter_fields` gives it).
        text: ``text(value)`` -> the value in text format.
    """

    def __init__(self, default, check, wire_type, encode, decode, text):
        self.default, self.check, self.wire_type = default, check, wire_type
        self.encode, self.decode, self.text = encode, decode, text


def _varint_single(default, check, text: Callable = str, signed: bool = True) -> Single:
    return Single(
        default,
        check,
        wire.VARINT,
        lambda v: wire.encode_varint(int(v)),
        (lambda p: wire.as_int64(p)) if signed else int,
        text,
    )


def _length_single(default, check, encode, decode, text) -> Single:
    return Single(
        default,
        check,
        wire.LENGTH_DELIMITED,
        lambda v: wire.encode_varint(len(encode(v))) + encode(v),
        decode,
        text,
    )


def single(kind: str) -> Single:
    """The singular kind named by its proto type: ``"string"``, ``"bytes"``, ``"double"``,
    ``"float"``, ``"int32"``, ``"int64"`` or ``"bool"``.

    Raises:
        KeyError: for another type name.
    """
    return _SINGLES[kind]


_SINGLES = {
    "string": _length_single(
        "", _check_str, str.encode, lambda p: bytes(p).decode("utf-8"),
        lambda v: quote(v.encode(), utf8=True),
    ),
    "bytes": _length_single(
        b"", _check_bytes, bytes, bytes, quote
    ),
    "double": Single(
        0.0, _check_double, wire.FIXED64, lambda v: struct.pack("<d", v),
        lambda p: struct.unpack("<d", p)[0], _format_double,
    ),
    "float": Single(
        0.0, _check_float, wire.FIXED32, lambda v: struct.pack("<f", v),
        lambda p: struct.unpack("<f", p)[0], _format_float,
    ),
    "int32": _varint_single(0, _check_int32),
    "int64": _varint_single(0, lambda v: wire.check_int64(operator.index(v))),
    "bool": _varint_single(False, _check_bool, lambda v: "true" if v else "false", signed=False),
}  # fmt: skip


def enum(names: dict[int, str]) -> Single:
    """The kind of an enum field whose values are ``names`` (number -> name, e.g. 7 -> DT_STRING).

    Like protobuf's Python API, a field takes the number (a known one) and shows
    the name in text format.
    """

    def check(value) -> int:
        value = _check_int32(value)
        if value not in names:
            raise ValueError(f"Unknown enum value: {value}")
        return value

    return _varint_single(0, check, lambda v: names.get(v, str(v)))


class ScalarField(_Field):
    """A singular scalar field (string, bytes, a number, bool, enum), perhaps in a ``oneof``.

    Args:
        name: The field name.
        number: The field number.
        kind: A `Single` (from `single` or `enum`).
        oneof: The name of the ``oneof`` it belongs to, or None.
    """

    repeated = False

    def __init__(self, name: str, number: int, kind: Single, oneof: str | None = None):
        super().__init__(name, number)
        self.kind, self.oneof = kind, oneof

    def __get__(self, message, owner=None):
        if message is None:
            return self
        return message._data.get(self.name, self.kind.default)

    def __set__(self, message: Message, value: Any) -> None:
        self._store(message, self.kind.check(value))

    def _store(self, message: Message, value: Any) -> None:
        message._data[self.name] = value
        if self.oneof:
            message._child_set(self)  # present, the rest of its oneof cleared
        else:
            message._changed()

    def init(self, message: Message, value: Any) -> None:
        self.__set__(message, value)

    def _written(self, message: Message) -> bool:
        if self.name not in message._data:
            return False
        return bool(self.oneof) or message._data[self.name] != self.kind.default

    def merge(self, message: Message, other: Message) -> None:
        if self._written(other):
            self.__set__(message, other._data[self.name])

    def encode(self, message: Message) -> bytes:
        if not self._written(message):
            return b""
        value = message._data[self.name]
        return wire.encode_tag(self.number, self.kind.wire_type) + self.kind.encode(value)

    def decode(self, message: Message, wire_type: int, payload) -> None:
        self._store(message, self.kind.decode(payload))  # an unknown enum number is kept

    def wire_types(self) -> tuple:
        return (self.kind.wire_type,)

    def text(self, message: Message, pad: str) -> list[str]:
        if not self._written(message):
            return []
        return [f"{pad}{self.name}: {self.kind.text(message._data[self.name])}"]

    def compared(self, message: Message) -> Any:
        if self.oneof and self.name not in message._present:
            return None
        return self.__get__(message)
