"""PNG and JPEG as tensors: ``DecodePng``, ``EncodePng``, ``DecodeJpeg``.

``EncodePng`` writes the PNG format by hand (unfiltered rows compressed with
zlib), so its bytes differ from TF's but decode to the same pixels. Decoding uses
Pillow, which matplotlib (a dependency of minitf) requires; it is imported when a
decoder first runs. Decoded images are ``[height, width, channels]`` ``uint8``.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops, tensor_shape
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops import op_def_library
from minitf.ops.string.string_ops import as_bytes

__all__ = ["decode_jpeg", "decode_png", "encode_png"]

# Pillow's mode for each channel count when decoding.
_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _decode_op(op_type: str, contents, channels: int, dtype, name) -> ops.Tensor:
    if channels not in (0, 1, 2, 3, 4) or (op_type == "DecodeJpeg" and channels in (2, 4)):
        allowed = "0, 1 or 3" if op_type == "DecodeJpeg" else "0, 1, 2, 3 or 4"
        raise ValueError(f"{op_type}: channels must be {allowed}, got {channels}")
    with ops.name_scope(name, op_type, [contents]) as scope:
        contents = ops.convert_to_tensor(contents, dtype=dtypes.string, name="contents")
        contents.get_shape().assert_has_rank(0)
        shape = tensor_shape.TensorShape([None, None, channels or None])
        attrs = {"channels": channels, "dtype": dtype}
        op = op_def_library.create_op(op_type, [contents], [dtype], scope, attrs, [shape])
    return op.outputs[0]


def decode_png(
    contents: Any, channels: int = 0, dtype: Any = dtypes.uint8, name: str | None = None
) -> ops.Tensor:
    """Decodes a PNG string to ``[height, width, channels]`` ``uint8``.

    Args:
        contents: A scalar string tensor, the PNG file's bytes.
        channels: 0 (as stored), 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA).
        dtype: ``uint8`` (TF's ``uint16`` output is not implemented).
        name: The op name.

    Raises:
        ValueError: if ``channels`` is not one of those.
        TypeError: if ``dtype`` is not ``uint8``.
        InvalidArgumentError: at run time, if the bytes are not a PNG image.
    """
    dtype = dtypes.as_dtype(dtype)
    op_def_library.check_dtype("dtype", dtype, (dtypes.uint8,), "DecodePng")
    return _decode_op("DecodePng", contents, channels, dtype, name)


def decode_jpeg(contents: Any, channels: int = 0, name: str | None = None) -> ops.Tensor:
    """Decodes a JPEG string to ``[height, width, channels]`` ``uint8``.

    Args:
        contents: A scalar string tensor, the JPEG file's bytes.
        channels: 0 (as stored), 1 (grey) or 3 (RGB).
        name: The op name.

    Raises:
        ValueError: if ``channels`` is not one of those.
        InvalidArgumentError: at run time, if the bytes are not a JPEG image.
    """
    return _decode_op("DecodeJpeg", contents, channels, dtypes.uint8, name)


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> ops.Tensor:
    """Encodes ``[height, width, channels]`` ``uint8``/``uint16`` pixels as a PNG string.

    Args:
        image: A 3-D tensor with 1 to 4 channels.
        compression: zlib's level, 0 to 9, or -1 for the default.
        name: The op name.

    Raises:
        TypeError: if the dtype is not ``uint8`` or ``uint16``.
        ValueError: if ``image`` is not 3-D.
    """
    with ops.name_scope(name, "EncodePng", [image]) as scope:
        image = ops.convert_to_tensor(image, name="image")
        dtype = image.dtype.base_dtype
        op_def_library.check_dtype("image", dtype, (dtypes.uint8, dtypes.uint16), "EncodePng")
        image.get_shape().assert_has_rank(3)
        attrs = {"T": dtype, "compression": int(compression)}
        shape = tensor_shape.TensorShape([])
        op = op_def_library.create_op("EncodePng", [image], [dtypes.string], scope, attrs, [shape])
    return op.outputs[0]


def _open_image(op, data: bytes, kind: str):
    from PIL import Image  # a dependency of matplotlib; imported when a decoder runs

    try:
        picture = Image.open(io.BytesIO(data))
        picture.load()
    except Exception:  # noqa: BLE001 - Pillow raises several classes for bad data
        raise errors.InvalidArgumentError(
            None, op, f"Invalid {kind} data, size {len(data)}"
        ) from None
    if picture.format != kind:
        raise errors.InvalidArgumentError(
            None, op, f"Expected image ({kind}), got {picture.format or 'unknown format'}"
        )
    return picture


def _pixels(picture, channels: int) -> np.ndarray:
    if channels == 0:
        channels = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}.get(picture.mode, 3)
        if picture.mode in ("P", "PA") and "transparency" in picture.info:
            channels = 4
    pixels = np.asarray(picture.convert(_MODES[channels]), dtype=np.uint8)
    return pixels.reshape(pixels.shape[0], pixels.shape[1], channels)


def _decode_kernel(kind: str):
    def kernel(op: Any):
        channels = op.get_attr("channels")

        def compute(ctx: Any, contents: Any):
            picture = _open_image(op, as_bytes(contents), kind)
            return _pixels(picture, channels)

        return compute

    return kernel


register_kernel("DecodePng")(_decode_kernel("PNG"))
register_kernel("DecodeJpeg")(_decode_kernel("JPEG"))


def png_bytes(image: np.ndarray, compression: int) -> bytes:
    """A PNG file of ``[height, width, channels]`` ``uint8``/``uint16`` pixels, unfiltered rows."""
    height, width, channels = image.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    depth = 16 if image.dtype == np.uint16 else 8
    pixels = image.astype(">u2" if depth == 16 else np.uint8).reshape(height, -1).view(np.uint8)
    rows = np.concatenate([np.zeros((height, 1), np.uint8), pixels], axis=1)
    header = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    data = zlib.compress(rows.tobytes(), compression)
    return _PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload)
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


@register_kernel("EncodePng")
def _encode_png_kernel(op):
    compression = op.get_attr("compression")

    def compute(ctx: Any, image: Any):
        image = np.asarray(image)
        channels = image.shape[2]
        if channels not in (1, 2, 3, 4):
            raise errors.InvalidArgumentError(
                None, op, f"image must have 1, 2, 3, or 4 channels, got {channels}"
            )
        return png_bytes(image, compression)

    return compute


NotDifferentiable("DecodePng")
NotDifferentiable("DecodeJpeg")
NotDifferentiable("EncodePng")
