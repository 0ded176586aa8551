"""CRC32C against published check values and a bit-by-bit CRC written here."""

from __future__ import annotations

import random
import time

import pytest

from minitf.ops.io import crc32c


def bitwise_crc32c(data: bytes) -> int:
    """The textbook definition: reflected polynomial 0x82F63B78, one bit at a time."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"123456789", 0xE3069283),  # the CRC catalogue's check value of CRC-32C
        (bytes(32), 0x8A9136AA),  # RFC 3720 (iSCSI), B.4: 32 bytes of zeros
        (b"\xff" * 32, 0x62A8AB43),  # 32 bytes of ones
        (bytes(range(32)), 0x46DD794E),  # 32 incrementing bytes
        (bytes(range(31, -1, -1)), 0x113FDB5C),  # 32 decrementing bytes
        (b"", 0),
    ],
)
def test_published_check_values(data, expected):
    assert crc32c.value(data) == expected


@pytest.mark.parametrize("n", [1, 7, 1023, 1024, 1025, 4096 + 3, 70_001])
def test_long_inputs_agree_with_the_bitwise_definition(n):
    data = random.Random(n).randbytes(n)  # lengths on both sides of the lanes' thresholds
    assert crc32c.value(data) == bitwise_crc32c(data)


def test_extend_is_the_crc_of_the_concatenation():
    data = random.Random(1).randbytes(5000)
    for cut in (0, 1, 999, 2500, 5000):
        assert crc32c.extend(crc32c.value(data[:cut]), data[cut:]) == crc32c.value(data)


def test_mask_and_unmask():
    # TF's masked CRC of the 8 zero bytes of an empty record's length, as TF wrote it
    # in tests/data/tfrecord/reference.tfrecord (bytes 29 03 98 07, little-endian).
    assert crc32c.masked_value(bytes(8)) == 0x07980329
    for crc in (0, 1, 0xE3069283, 0xFFFFFFFF):
        assert crc32c.unmask(crc32c.mask(crc)) == crc
        assert crc32c.mask(crc) != crc
    assert crc32c.mask(crc32c.mask(0xE3069283)) != crc32c.mask(0xE3069283)


def test_a_megabyte_takes_milliseconds_not_a_python_loop():
    data = random.Random(2).randbytes(1 << 20)
    crc32c.value(data)  # warm up
    start = time.perf_counter()
    crc32c.value(data)
    # About 5 ms on numpy lanes; a byte-at-a-time loop takes about 100 ms.
    assert time.perf_counter() - start < 0.05
