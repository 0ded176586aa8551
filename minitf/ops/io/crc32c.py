"""CRC32C (Castagnoli), the checksum of TFRecord files, and TF's masking of it.

CRC32C is the CRC with the polynomial 0x1EDC6F41 (0x82F63B78 bit-reversed),
initial value and final xor 0xFFFFFFFF, bits processed least significant
first (TF's ``tensorflow/core/lib/hash/crc32c.h``; the standard library's
``zlib.crc32`` uses another polynomial). A byte at a time it is the table
step ``crc = TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)``.

A Python loop of that step costs about 0.1 µs a byte, 0.1 s for a megabyte.
Long inputs are therefore cut into many *lanes* of equal length whose CRCs
numpy computes side by side, one table step for every lane at once, and the
lane CRCs are then joined. Joining uses the linearity of a CRC without its
initial value and final xor (the *raw* CRC, ``raw(c, data)`` started from
state ``c``)::

    raw(c, A + B) = Z(len(B))(raw(c, A)) ^ raw(0, B)

where ``Z(n)`` — feeding ``n`` zero bytes — is a linear map of 32 bits. A
linear map is kept as four 256-entry tables (one per byte of its input, the
XOR of whose entries is the image), and ``Z(2n)`` is ``Z(n)`` applied to its
own tables, so a binary tree joins 4096 lanes in twelve vectorised steps.
"""

from __future__ import annotations

import numpy as np

__all__ = ["value", "extend", "mask", "unmask", "masked_value"]

_POLY = 0x82F63B78  # 0x1EDC6F41, bits reversed
_MASK_DELTA = 0xA282EAD8
_SMALL = 1024  # below this many bytes the plain loop is faster than lanes
_LANE_BYTES = 256  # the shortest lane worth a numpy step per byte
_MAX_LANES = 4096


def _make_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _make_table()
_NP_TABLE = np.array(_TABLE, dtype=np.uint32)


def _raw_loop(crc: int, data) -> int:
    """The raw CRC state after ``data``, a byte at a time (the reference step)."""
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


# -- linear maps of 32 bits, as four byte tables -------------------------------------------------


def _apply(op: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The image of every value of ``x`` (uint32) under the map ``op`` (a (4, 256) table)."""
    return op[0][x & 0xFF] ^ op[1][(x >> 8) & 0xFF] ^ op[2][(x >> 16) & 0xFF] ^ op[3][x >> 24]


def _compose(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """The map ``x -> outer(inner(x))``."""
    return _apply(outer, inner)


def _one_zero_byte() -> np.ndarray:
    """``Z(1)``: the table step with a zero byte, ``TABLE[c & 0xFF] ^ (c >> 8)``."""
    values = np.arange(256, dtype=np.uint32)
    op = np.empty((4, 256), dtype=np.uint32)
    op[0] = _NP_TABLE
    for k in range(1, 4):
        op[k] = values << np.uint32(8 * (k - 1))  # (b << 8k) >> 8
    return op


_Z1 = _one_zero_byte()


def _zeros_map(n: int) -> np.ndarray:
    """``Z(n)``, by squaring and multiplying ``Z(1)``."""
    result = None
    power = _Z1
    while n:
        if n & 1:
            result = power if result is None else _compose(power, result)
        n >>= 1
        if n:
            power = _compose(power, power)
    if result is None:  # n == 0: the identity
        values = np.arange(256, dtype=np.uint32)
        return np.stack([values << np.uint32(8 * k) for k in range(4)])
    return result


# -- lanes -------------------------------------------------------------------------------------


def _raw_lanes(data: np.ndarray, lanes: int) -> tuple[int, np.ndarray]:
    """``raw(0, data)`` and ``Z(len(data))``; ``data`` is ``lanes`` (a power of 2) equal lanes."""
    length = len(data) // lanes
    columns = np.ascontiguousarray(data.reshape(lanes, length).T)  # row j: byte j of each lane
    crc = np.zeros(lanes, dtype=np.uint32)
    low = crc.view(np.uint8)[::4]  # the low byte of each lane's state (little-endian)
    index = np.empty(lanes, dtype=np.uint8)
    looked_up = np.empty(lanes, dtype=np.uint32)
    for row in columns:
        np.bitwise_xor(low, row, out=index)
        np.take(_NP_TABLE, index, out=looked_up)
        np.right_shift(crc, 8, out=crc)
        np.bitwise_xor(crc, looked_up, out=crc)
    shift = _zeros_map(length)
    while len(crc) > 1:  # join neighbours: left then right, each `length` bytes long
        crc = _apply(shift, crc[0::2]) ^ crc[1::2]
        shift = _compose(shift, shift)
    return int(crc[0]), shift


def _raw(crc: int, data: bytes | memoryview) -> int:
    """The raw CRC state after ``data`` starting from ``crc``."""
    n = len(data)
    if n < _SMALL:
        return _raw_loop(crc, data)
    lanes = 1 << min((n // _LANE_BYTES).bit_length() - 1, _MAX_LANES.bit_length() - 1)
    main = lanes * (n // lanes)
    lane_crc, shift = _raw_lanes(np.frombuffer(data, dtype=np.uint8, count=main), lanes)
    start = int(_apply(shift, np.array([crc], dtype=np.uint32))[0])
    return _raw(start ^ lane_crc, memoryview(data)[main:])


def extend(crc: int, data: bytes | bytearray | memoryview) -> int:
    """The CRC32C of ``A + data`` given ``crc``, the CRC32C of ``A`` (TF's ``crc32c::Extend``).

    Args:
        crc: The CRC32C of the bytes before ``data`` (0 for none).
        data: The bytes to add.
    """
    return _raw(crc ^ 0xFFFFFFFF, memoryview(data).cast("B")) ^ 0xFFFFFFFF


def value(data: bytes | bytearray | memoryview) -> int:
    """The CRC32C of ``data`` (TF's ``crc32c::Value``); ``value(b"123456789") == 0xE3069283``.

    Args:
        data: The bytes.
    """
    return extend(0, data)


def mask(crc: int) -> int:
    """TF's masked CRC: rotated right by 15 bits plus a constant (``crc32c::Mask``).

    A CRC of data that holds CRCs of its own is weak; TFRecord files store
    masked CRCs for that reason.

    Args:
        crc: A CRC32C.
    """
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    """The CRC that `mask` turned into ``masked`` (``crc32c::Unmask``).

    Args:
        masked: A masked CRC.
    """
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_value(data: bytes | bytearray | memoryview) -> int:
    """``mask(value(data))``: what a TFRecord file stores after a length or a record.

    Args:
        data: The bytes.
    """
    return mask(value(data))
