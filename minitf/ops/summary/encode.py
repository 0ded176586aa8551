"""Images as PNG and sounds as WAV: the files image and audio summaries carry.

A PNG file is a signature and chunks, each ``length, type, data, CRC32``:
``IHDR`` (width, height, 8 bits a channel, the color type: 0 gray, 2 RGB,
6 RGBA), ``IDAT`` (the rows, each led by its filter byte — 0, none — and
compressed as one zlib stream, zlib's default level as TF asks libpng for)
and ``IEND``. A WAV file is a RIFF header and 16-bit little-endian samples,
as TF's ``wav_io.cc`` writes them: each float32 sample times 32768, rounded
half away from zero (C's ``roundf``) and clamped to ``[-32768, 32767]``.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["encode_png", "encode_wav"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG color type (2: gray with alpha)


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def encode_png(image: np.ndarray) -> bytes:
    """A ``[height, width, channels]`` uint8 image (1 to 4 channels) as PNG bytes."""
    height, width, channels = image.shape
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    rows = np.ascontiguousarray(image, dtype=np.uint8).reshape(height, width * channels)
    filtered = np.hstack([np.zeros((height, 1), np.uint8), rows])  # filter 0 on every row
    return (
        _PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(filtered.tobytes(), -1))
        + _chunk(b"IEND", b"")
    )


def encode_wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """``[frames, channels]`` floats in ``[-1, 1]`` as a 16-bit PCM WAV file."""
    frames, channels = samples.shape
    scaled = np.asarray(samples, np.float32) * np.float32(32768.0)
    wide = scaled.astype(np.float64)  # the product is float32; rounding it is exact in doubles
    rounded = np.sign(wide) * np.floor(np.abs(wide) + 0.5)
    data = np.clip(rounded, -32768, 32767).astype("<i2").tobytes()
    block = channels * 2
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    fmt = struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block, block, 16)
    return header + b"fmt " + fmt + b"data" + struct.pack("<I", len(data)) + data
