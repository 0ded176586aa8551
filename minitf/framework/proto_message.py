"""A small protobuf message: declared fields, protobuf's Python API, its exact bytes and text.

A message class lists its fields (`RepeatedScalar`, `SubMessage`,
`MessageMap`, `RepeatedMessage`: the kinds ``example.proto`` and
``feature.proto`` use) and `Message` gives it what ``google.protobuf``'s
generated classes have: keyword construction, ``SerializeToString``,
``FromString``, ``ParseFromString``, ``CopyFrom``, ``MergeFrom``, ``==``,
``HasField``, ``WhichOneof``, and ``str()`` in protobuf text format.

Presence works as in protobuf's Python API: reading an unset sub-message
returns an empty one and sets nothing; the first change below it (an
appended value, a map entry) makes it, and every message above it, present.
A sub-message in a ``oneof`` that becomes present clears the other members.

The bytes are protobuf's, field by field in field-number order, with two
choices where protobuf leaves one open: numbers are packed (proto3's
default), and map entries are written sorted by key (what protobuf writes
with ``deterministic=True``; without it protobuf's order is unspecified).
Unknown fields are skipped when parsing, not kept.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Iterable, Iterator, MutableMapping, MutableSequence, Sequence
from typing import Any

import numpy as np

from minitf.framework import proto_wire as wire


def _check_float(value) -> float:
    if not isinstance(value, numbers.Real):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    with np.errstate(over="ignore"):
        return float(np.float32(value))  # a float field holds float32 values


def _check_int64(value) -> int:
    return wire.check_int64(operator.index(value))


def _check_bytes(value) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError(f"expected bytes, {type(value).__name__} found")
    return bytes(value)


def _format_float(value: float) -> str:
    """A float32 as protobuf's text format writes it: 6 significant digits, 9 if they are needed."""
    text = f"{value:.6g}"
    if np.isfinite(value) and np.float32(float(text)) != np.float32(value):
        text = f"{value:.9g}"
    return text


_ESCAPES = {ord("\n"): b"\\n", ord("\r"): b"\\r", ord("\t"): b"\\t", ord('"'): b'\\"',
            ord("'"): b"\\'", ord("\\"): b"\\\\"}  # fmt: skip


def quote(data: bytes, utf8: bool = False) -> str:
    """``data`` as a quoted text-format string: C escapes, octal for what is not printable.

    Args:
        data: The bytes of a ``bytes`` or ``string`` field.
        utf8: True for a ``string`` field, whose non-ASCII characters stay as they are.
    """
    out = bytearray(b'"')
    for byte in data:
        if byte in _ESCAPES:
            out += _ESCAPES[byte]
        elif 0x20 <= byte < 0x7F or (utf8 and byte >= 0x80):
            out.append(byte)
        else:
            out += f"\\{byte:03o}".encode()
    out += b'"'
    return out.decode("utf-8" if utf8 else "ascii")


class _Scalar:
    """What a repeated scalar field holds: its check, its wire encoding and its text."""

    def __init__(self, check, wire_types, encode, decode, text):
        self.check, self.wire_types = check, wire_types
        self.encode, self.decode, self.text = encode, decode, text


def _decode_float(wire_type, payload):
    if wire_type == wire.FIXED32:
        return [wire.unpack_float(payload)]
    return wire.unpack_floats(payload)


def _decode_int64(wire_type, payload):
    if wire_type == wire.VARINT:
        return [wire.as_int64(payload)]
    return wire.unpack_varints(payload)


def _encode_packed(pack):
    def encode(number, values):
        return wire.encode_length_delimited(number, pack(values)) if values else b""

    return encode


BYTES = _Scalar(
    _check_bytes,
    (wire.LENGTH_DELIMITED,),
    lambda number, values: b"".join(wire.encode_length_delimited(number, v) for v in values),
    lambda wire_type, payload: [bytes(payload)],
    quote,
)
FLOAT = _Scalar(
    _check_float,
    (wire.LENGTH_DELIMITED, wire.FIXED32),
    _encode_packed(wire.pack_floats),
    _decode_float,
    _format_float,
)
INT64 = _Scalar(
    _check_int64,
    (wire.LENGTH_DELIMITED, wire.VARINT),
    _encode_packed(wire.pack_varints),
    _decode_int64,
    str,
)


class _Child:
    """Something a message holds that tells its owner when it changes (``_listener``)."""

    _listener: Callable[[], None] | None = None

    def _changed(self) -> None:
        if self._listener is not None:
            self._listener()


class RepeatedScalarContainer(_Child, MutableSequence):
    """The values of a repeated scalar field: a list that checks what goes in.

    Args:
        kind: The field's scalar kind (`BYTES`, `FLOAT`, `INT64`).
    """

    __hash__ = None

    def __init__(self, kind: _Scalar):
        self._kind = kind
        self._values: list = []

    def __getitem__(self, index: int | slice) -> Any:
        return self._values[index]

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            self._values[index] = [self._kind.check(v) for v in value]
        else:
            self._values[index] = self._kind.check(value)
        self._changed()

    def __delitem__(self, index: int | slice) -> None:
        del self._values[index]
        self._changed()

    def __len__(self) -> int:
        return len(self._values)

    def insert(self, index: int, value: Any) -> None:
        """Inserts ``value`` before ``index``.

        Args:
            index: The position.
            value: The value (checked like every value of this field).
        """
        self._values.insert(index, self._kind.check(value))
        self._changed()

    def append(self, value: Any) -> None:
        """Appends ``value``.

        Args:
            value: The value (checked like every value of this field).
        """
        self._values.append(self._kind.check(value))
        self._changed()

    def extend(self, values: Iterable) -> None:
        """Appends every value of ``values`` (all are checked before any is added).

        Args:
            values: An iterable of values.
        """
        checked = [self._kind.check(v) for v in values]
        self._values.extend(checked)
        self._changed()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RepeatedScalarContainer):
            return self._values == other._values
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return self._values == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._values)


class MessageMap(_Child, MutableMapping):
    """The entries of a ``map<string, Message>`` field; reading a missing key adds an entry.

    Args:
        value_type: The message class of the values.
    """

    __hash__ = None

    def __init__(self, value_type: type):
        self._value_type = value_type
        self._entries: dict[str, Message] = {}

    def __getitem__(self, key: str) -> Message:
        entry = self._entries.get(key)
        if entry is None:
            if not isinstance(key, str):
                raise TypeError(f"expected str, {type(key).__name__} found")
            entry = self._put(key, self._value_type())
            self._changed()
        return entry

    def _put(self, key: str, value: Message) -> Message:
        value._listener = self._changed
        self._entries[key] = value
        return value

    def __setitem__(self, key: str, value: Message) -> None:
        raise ValueError("Direct assignment of submessage not allowed")

    def __delitem__(self, key: str) -> None:
        del self._entries[key]
        self._changed()

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str, default: Any = None) -> Any:
        """The entry for ``key``, or ``default`` (no entry is added).

        Args:
            key: The key.
            default: What to return when there is no entry.
        """
        return self._entries.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageMap):
            return self._entries == other._entries
        return dict(self._entries) == other if isinstance(other, dict) else NotImplemented

    def __repr__(self) -> str:
        return repr(self._entries)


class RepeatedCompositeContainer(_Child, Sequence):
    """The messages of a repeated message field.

    Args:
        message_type: The message class of the elements.
    """

    __hash__ = None

    def __init__(self, message_type: type):
        self._type = message_type
        self._messages: list[Message] = []

    def _put(self, message: Message) -> Message:
        message._listener = self._changed
        self._messages.append(message)
        return message

    def add(self, **fields: Any) -> Message:
        """Appends a new message built from ``fields`` and returns it.

        Args:
            **fields: Field values, as for the message's constructor.
        """
        message = self._put(self._type(**fields))
        self._changed()
        return message

    def append(self, message: Message) -> None:
        """Appends a copy of ``message``.

        Args:
            message: A message of the element type.

        Raises:
            TypeError: for a value of another type.
        """
        if not isinstance(message, self._type):
            raise TypeError(
                f"Expected message of type {self._type.FULL_NAME}, got {type(message).__name__}"
            )
        self._put(self._type()).MergeFrom(message)
        self._changed()

    def extend(self, messages: Iterable[Message]) -> None:
        """Appends a copy of each message of ``messages``.

        Args:
            messages: An iterable of messages of the element type.
        """
        for message in messages:
            self.append(message)

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._messages[index]

    def __delitem__(self, index: int | slice) -> None:
        del self._messages[index]
        self._changed()

    def __len__(self) -> int:
        return len(self._messages)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RepeatedCompositeContainer):
            return self._messages == other._messages
        return self._messages == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(self._messages)


class _Field:
    """One declared field: its name, number and how it is held, written, read and printed."""

    repeated = True

    def __init__(self, name: str, number: int):
        self.name, self.number = name, number

    def __get__(self, message, owner=None):
        if message is None:
            return self
        return message._get(self)

    def __set__(self, message, value) -> None:
        kind = "map, or repeated" if self.repeated else "composite"
        raise AttributeError(
            f'Assignment not allowed to {kind} field "{self.name}" in protocol message object.'
        )


class RepeatedScalar(_Field):
    """A ``repeated`` bytes, float or int64 field (numbers packed).

    Args:
        name: The field name.
        number: The field number.
        kind: `BYTES`, `FLOAT` or `INT64`.
    """

    def __init__(self, name: str, number: int, kind: _Scalar):
        super().__init__(name, number)
        self.kind = kind

    def new(self, message: Message) -> RepeatedScalarContainer:
        return RepeatedScalarContainer(self.kind)

    def init(self, message: Message, value: Any) -> None:
        self.__get__(message).extend(value)

    def merge(self, message: Message, other: Message) -> None:
        if other._data.get(self.name):
            self.__get__(message).extend(other._data[self.name])

    def encode(self, message: Message) -> bytes:
        values = message._data.get(self.name)
        return self.kind.encode(self.number, values._values) if values else b""

    def decode(self, message: Message, wire_type: int, payload: int | bytes) -> None:
        self.__get__(message)._values.extend(self.kind.decode(wire_type, payload))

    def wire_types(self) -> tuple:
        return self.kind.wire_types

    def text(self, message: Message, pad: str) -> list[str]:
        values = message._data.get(self.name) or ()
        return [f"{pad}{self.name}: {self.kind.text(v)}" for v in values]

    def compared(self, message: Message) -> list:
        values = message._data.get(self.name)
        return values._values if values else []


def _as_message(message_type: type, value):
    if isinstance(value, message_type):
        return value
    if isinstance(value, dict):
        return message_type(**value)
    raise TypeError(
        "Parameter to initialize message field must be dict or instance of same class: "
        f"expected {message_type} got {type(value)}."
    )


def _message_lines(name: str, message: Message, pad: str) -> list[str]:
    return [f"{pad}{name} {{", *message._text_lines(pad + "  "), f"{pad}}}"]


class SubMessage(_Field):
    """A singular message field, perhaps a member of a ``oneof``.

    Args:
        name: The field name.
        number: The field number.
        message_type: The message class it holds.
        oneof: The name of the ``oneof`` it belongs to, or None.
    """

    repeated = False

    def __init__(self, name: str, number: int, message_type: type, oneof: str | None = None):
        super().__init__(name, number)
        self.message_type, self.oneof = message_type, oneof

    def new(self, message: Message) -> Message:
        return self.message_type()

    def init(self, message: Message, value: Any) -> None:
        child = self.__get__(message)
        child.MergeFrom(_as_message(self.message_type, value))
        message._child_set(self)

    def merge(self, message: Message, other: Message) -> None:
        if self.name in other._present:
            self.__get__(message).MergeFrom(other._data[self.name])

    def encode(self, message: Message) -> bytes:
        if self.name not in message._present:
            return b""
        return wire.encode_length_delimited(self.number, message._data[self.name]._encode())

    def decode(self, message: Message, wire_type: int, payload: int | bytes) -> None:
        self.__get__(message)._merge_bytes(payload)
        message._child_set(self)

    def wire_types(self) -> tuple:
        return (wire.LENGTH_DELIMITED,)

    def text(self, message: Message, pad: str) -> list[str]:
        if self.name not in message._present:
            return []
        return _message_lines(self.name, message._data[self.name], pad)

    def compared(self, message: Message) -> Message | None:
        return message._data[self.name] if self.name in message._present else None


class MessageMapField(_Field):
    """A ``map<string, Message>`` field: entries are ``{key = 1; value = 2}`` messages.

    Args:
        name: The field name.
        number: The field number.
        value_type: The message class of the values.
    """

    def __init__(self, name: str, number: int, value_type: type):
        super().__init__(name, number)
        self.value_type = value_type

    def new(self, message: Message) -> MessageMap:
        return MessageMap(self.value_type)

    def init(self, message: Message, value: Any) -> None:
        entries = self.__get__(message)
        for key, entry in value.items():
            entries[key].MergeFrom(_as_message(self.value_type, entry))

    def merge(self, message: Message, other: Message) -> None:
        entries = self.__get__(message)
        for key, entry in (other._data.get(self.name) or {}).items():
            entries[key].CopyFrom(entry)  # a merged map entry replaces the old one

    def encode(self, message: Message) -> bytes:
        entries = message._data.get(self.name) or {}
        return b"".join(
            wire.encode_length_delimited(
                self.number,
                wire.encode_length_delimited(1, key.encode())
                + wire.encode_length_delimited(2, entries[key]._encode()),
            )
            for key in sorted(entries)
        )

    def decode(self, message: Message, wire_type: int, payload: int | bytes) -> None:
        key, value = b"", b""
        for number, entry_wire_type, part in wire.iter_fields(payload):
            if entry_wire_type != wire.LENGTH_DELIMITED:
                continue
            if number == 1:
                key = part
            elif number == 2:
                value += part  # a value written twice is merged, as concatenated bytes are
        try:
            text = key.decode("utf-8")
        except UnicodeDecodeError:
            raise wire.DecodeError("a map key that is not UTF-8") from None
        entry = self.value_type()
        entry._merge_bytes(value)
        self.__get__(message)._put(text, entry)

    def wire_types(self) -> tuple:
        return (wire.LENGTH_DELIMITED,)

    def text(self, message: Message, pad: str) -> list[str]:
        entries = message._data.get(self.name) or {}
        lines = []
        for key in sorted(entries):
            lines += [f"{pad}{self.name} {{", f"{pad}  key: {quote(key.encode(), utf8=True)}"]
            lines += _message_lines("value", entries[key], pad + "  ") + [f"{pad}}}"]
        return lines

    def compared(self, message: Message) -> dict:
        entries = message._data.get(self.name)
        return dict(entries._entries) if entries else {}


class RepeatedMessage(_Field):
    """A ``repeated`` message field.

    Args:
        name: The field name.
        number: The field number.
        message_type: The message class of the elements.
    """

    def __init__(self, name: str, number: int, message_type: type):
        super().__init__(name, number)
        self.message_type = message_type

    def new(self, message: Message) -> RepeatedCompositeContainer:
        return RepeatedCompositeContainer(self.message_type)

    def init(self, message: Message, value: Any) -> None:
        elements = self.__get__(message)
        for element in value:
            elements.append(_as_message(self.message_type, element))

    def merge(self, message: Message, other: Message) -> None:
        if other._data.get(self.name):
            self.__get__(message).extend(other._data[self.name])

    def encode(self, message: Message) -> bytes:
        elements = message._data.get(self.name) or ()
        return b"".join(wire.encode_length_delimited(self.number, m._encode()) for m in elements)

    def decode(self, message: Message, wire_type: int, payload: int | bytes) -> None:
        element = self.message_type()
        element._merge_bytes(payload)
        self.__get__(message)._put(element)

    def wire_types(self) -> tuple:
        return (wire.LENGTH_DELIMITED,)

    def text(self, message: Message, pad: str) -> list[str]:
        lines = []
        for element in message._data.get(self.name) or ():
            lines += _message_lines(self.name, element, pad)
        return lines

    def compared(self, message: Message) -> list:
        elements = message._data.get(self.name)
        return list(elements._messages) if elements else []


class Message(_Child):
    """The base of the message classes: protobuf's Python message API over declared fields.

    A subclass sets ``FULL_NAME`` (``"tensorflow.Example"``) and ``FIELDS``, a
    tuple of fields in field-number order.

    Args:
        **fields: Initial field values: a list for a repeated field, a message
            or a dict of its fields for a message field, a dict for a map.
            ``None`` leaves a field unset.

    Raises:
        ValueError: for a keyword that is not a field.
        TypeError: for a value of the wrong type.
    """

    FULL_NAME = ""
    FIELDS: tuple[_Field, ...] = ()
    __hash__ = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._by_name = {f.name: f for f in cls.FIELDS}
        cls._by_number = {f.number: f for f in cls.FIELDS}
        cls._oneofs: dict[str, list[_Field]] = {}
        for field in cls.FIELDS:
            setattr(cls, field.name, field)
            if getattr(field, "oneof", None):
                cls._oneofs.setdefault(field.oneof, []).append(field)

    def __init__(self, **fields: Any):
        self._data: dict = {}  # field name -> its container or sub-message, made when first read
        self._present: set[str] = set()  # the sub-message fields that are set
        self._oneof_case: dict[str, str] = {}
        for name, value in fields.items():
            field = self._by_name.get(name)
            if field is None:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
            if value is not None:
                field.init(self, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or name in self._by_name:
            object.__setattr__(self, name, value)  # a field's descriptor refuses assignment
            return
        raise AttributeError(
            f'Assignment not allowed (no field "{name}" in protocol message object).'
        )

    def _get(self, field: _Field):
        child = self._data.get(field.name)
        if child is None:
            child = self._data[field.name] = field.new(self)
            if isinstance(field, SubMessage):
                child._listener = lambda: self._child_set(field)
            else:
                child._listener = self._changed
        return child

    def _child_set(self, field: SubMessage) -> None:
        """Marks ``field`` present (clearing the rest of its oneof) and this message changed."""
        if field.name not in self._present:
            if field.oneof:
                for other in self._oneofs[field.oneof]:
                    if other is not field:
                        self._clear(other)
                self._oneof_case[field.oneof] = field.name
            self._present.add(field.name)
        self._changed()

    def _clear(self, field: _Field) -> None:
        child = self._data.pop(field.name, None)
        if isinstance(child, _Child):
            child._listener = None  # a detached child no longer changes this message
        self._present.discard(field.name)
        oneof = getattr(field, "oneof", None)
        if oneof and self._oneof_case.get(oneof) == field.name:
            del self._oneof_case[oneof]

    def _field(self, name: str, singular: bool = False) -> _Field:
        field = self._by_name.get(name)
        if field is None or (singular and field.repeated):
            kind = "singular " if singular else ""
            raise ValueError(f'Protocol message {type(self).__name__} has no {kind}"{name}" field.')
        return field

    def HasField(self, field_name: str) -> bool:  # noqa: N802 - protobuf's name
        """Whether a singular message field, or a member of a oneof, is set.

        Args:
            field_name: A singular message field or the name of a oneof.

        Raises:
            ValueError: for a repeated field or a name that is neither.
        """
        if field_name in self._oneofs:
            return field_name in self._oneof_case
        return self._field(field_name, singular=True).name in self._present

    def WhichOneof(self, oneof_group: str) -> str | None:  # noqa: N802 - protobuf's name
        """The name of the field of ``oneof_group`` that is set, or None.

        Args:
            oneof_group: The name of a oneof (``"kind"`` for a ``Feature``).

        Raises:
            ValueError: if the message has no such oneof.
        """
        if oneof_group not in self._oneofs:
            raise ValueError(f'Protocol message has no oneof "{oneof_group}" field.')
        return self._oneof_case.get(oneof_group)

    def ClearField(self, field_name: str) -> None:  # noqa: N802 - protobuf's name
        """Unsets a field (or the member of a oneof that is set).

        Args:
            field_name: A field name or the name of a oneof.

        Raises:
            ValueError: if the message has no such field.
        """
        if field_name in self._oneofs:
            field_name = self._oneof_case.get(field_name)
            if field_name is None:
                return
        self._clear(self._field(field_name))

    def Clear(self) -> None:  # noqa: N802 - protobuf's name
        """Unsets every field."""
        for field in self.FIELDS:
            self._clear(field)

    def MergeFrom(self, other: Message) -> None:  # noqa: N802 - protobuf's name
        """Merges ``other`` in: lists appended, set messages merged, map entries replaced.

        Args:
            other: A message of the same class.

        Raises:
            TypeError: for a message of another class.
        """
        self._check_same_class(other, "MergeFrom")
        for field in self.FIELDS:
            field.merge(self, other)
        self._changed()

    def CopyFrom(self, other: Message) -> None:  # noqa: N802 - protobuf's name
        """Makes this message a copy of ``other``.

        Args:
            other: A message of the same class.

        Raises:
            TypeError: for a message of another class.
        """
        if other is self:
            return
        self._check_same_class(other, "CopyFrom")
        self.Clear()
        self.MergeFrom(other)

    def _check_same_class(self, other, method: str) -> None:
        if type(other) is not type(self):
            raise TypeError(
                f"Parameter to {method}() must be instance of same class: expected "
                f"{self.FULL_NAME} got {type(other).__name__}."
            )

    def _encode(self) -> bytes:
        return b"".join(field.encode(self) for field in self.FIELDS)

    def SerializeToString(self, deterministic: bool | None = None) -> bytes:  # noqa: N802
        """The message in protobuf's binary wire format.

        Args:
            deterministic: Accepted for protobuf's signature; the bytes are
                always deterministic (map entries sorted by key).
        """
        del deterministic
        return self._encode()

    SerializePartialToString = SerializeToString

    def ByteSize(self) -> int:  # noqa: N802 - protobuf's name
        """The length of `SerializeToString`'s bytes."""
        return len(self._encode())

    def _merge_bytes(self, data) -> None:
        for number, wire_type, payload in wire.iter_fields(data):
            field = self._by_number.get(number)
            if field is None:
                continue  # an unknown field: skipped
            if wire_type not in field.wire_types():
                raise wire.DecodeError(f"field {field.name} with wire type {wire_type}")
            field.decode(self, wire_type, payload)

    def MergeFromString(self, serialized: bytes) -> int:  # noqa: N802 - protobuf's name
        """Merges a serialized message in (as `MergeFrom`); returns how many bytes were read.

        Args:
            serialized: ``bytes`` in protobuf's wire format.

        Raises:
            TypeError: if ``serialized`` is not bytes-like.
            DecodeError: if the bytes are not a valid message; nothing is merged.
        """
        if isinstance(serialized, str) or not isinstance(
            serialized, (bytes, bytearray, memoryview)
        ):
            raise TypeError(f"expected bytes, {type(serialized).__name__} found")
        parsed = type(self)()
        try:
            parsed._merge_bytes(bytes(serialized))
        except wire.DecodeError as e:
            raise wire.DecodeError(
                f"Error parsing message with type '{self.FULL_NAME}': {e}"
            ) from None
        self.MergeFrom(parsed)
        return len(serialized)

    def ParseFromString(self, serialized: bytes) -> int:  # noqa: N802 - protobuf's name
        """Replaces the message by the one ``serialized`` holds; returns the bytes read.

        Args:
            serialized: ``bytes`` in protobuf's wire format.

        Raises:
            TypeError: if ``serialized`` is not bytes-like.
            DecodeError: if the bytes are not a valid message.
        """
        parsed = type(self)()
        size = parsed.MergeFromString(serialized)
        self.CopyFrom(parsed)
        return size

    @classmethod
    def FromString(cls, serialized: bytes) -> Message:  # noqa: N802 - protobuf's name
        """A new message parsed from ``serialized``.

        Args:
            serialized: ``bytes`` in protobuf's wire format.

        Raises:
            DecodeError: if the bytes are not a valid message.
        """
        message = cls()
        message.MergeFromString(serialized)
        return message

    def IsInitialized(self) -> bool:  # noqa: N802 - protobuf's name
        """True: these messages have no required fields."""
        return True

    def _text_lines(self, pad: str = "") -> list[str]:
        lines = []
        for field in self.FIELDS:
            lines += field.text(self, pad)
        return lines

    def __str__(self) -> str:
        return "".join(line + "\n" for line in self._text_lines())

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        if type(other) is not type(self):
            return False
        return all(f.compared(self) == f.compared(other) for f in self.FIELDS)

    def __deepcopy__(self, memo: dict | None = None) -> Message:
        copy = type(self)()
        copy.MergeFrom(self)
        return copy

    __copy__ = __deepcopy__

    def __reduce__(self) -> tuple:
        return type(self).FromString, (self.SerializeToString(),)
