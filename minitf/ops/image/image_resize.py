"""Resizing images: ``ResizeBilinear`` and ``ResizeNearestNeighbor`` with TF1's pixel convention.

TF1's resize ops (without ``half_pixel_centers``) map output pixel ``i`` to the
input coordinate ``i * scale``, where ``scale`` is ``in_size / out_size``, or
``(in_size - 1) / (out_size - 1)`` with ``align_corners`` (TF's
``core/kernels/image_resizer_state.h``, ``LegacyScaler``). Bilinear interpolates
between the pixels at ``floor`` and ``floor + 1`` (clamped to the edge) and
always returns ``float32``; nearest neighbour takes ``floor`` (``round`` with
``align_corners``) and keeps the dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops, tensor_shape, tensor_util
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops import op_def_library

__all__ = ["resize_bilinear", "resize_nearest_neighbor"]

_RESIZE_TYPES = (
    dtypes.int8,
    dtypes.uint8,
    dtypes.int16,
    dtypes.uint16,
    dtypes.int32,
    dtypes.int64,
    dtypes.float16,
    dtypes.float32,
    dtypes.float64,
)


def _resize_op(op_type: str, images, size, align_corners: bool, out_dtype, name):
    with ops.name_scope(name, op_type, [images, size]) as scope:
        images = ops.convert_to_tensor(images, name="images")
        op_def_library.check_dtype("images", images.dtype.base_dtype, _RESIZE_TYPES, op_type)
        size = ops.convert_to_tensor(size, dtype=dtypes.int32, name="size")
        images_shape = images.get_shape().with_rank(4)
        size.get_shape().with_rank(1).assert_is_compatible_with([2])
        new_size = tensor_util.constant_value(size)
        height, width = (None, None) if new_size is None else (int(x) for x in new_size)
        shape = tensor_shape.TensorShape([images_shape[0], height, width, images_shape[3]])
        attrs = {"T": images.dtype.base_dtype, "align_corners": bool(align_corners)}
        dtype = out_dtype or images.dtype.base_dtype
        op = op_def_library.create_op(op_type, [images, size], [dtype], scope, attrs, [shape])
    return op.outputs[0]


def resize_bilinear(
    images: Any, size: Any, align_corners: bool = False, name: str | None = None
) -> ops.Tensor:
    """Resizes a batch ``[batch, height, width, channels]`` bilinearly to ``size``: ``float32``.

    Args:
        images: A 4-D tensor of a real dtype.
        size: Two ``int32`` values, the new height and width.
        align_corners: If True, the corner pixels of input and output line up.
        name: The op name.

    Raises:
        ValueError: if ``images`` is not 4-D or ``size`` has not two elements.
    """
    return _resize_op("ResizeBilinear", images, size, align_corners, dtypes.float32, name)


def resize_nearest_neighbor(
    images: Any, size: Any, align_corners: bool = False, name: str | None = None
) -> ops.Tensor:
    """Resizes a batch ``[batch, height, width, channels]`` by nearest neighbour to ``size``.

    Args:
        images: A 4-D tensor of a real dtype.
        size: Two ``int32`` values, the new height and width.
        align_corners: If True, the corner pixels of input and output line up.
        name: The op name.

    Raises:
        ValueError: if ``images`` is not 4-D or ``size`` has not two elements.
    """
    return _resize_op("ResizeNearestNeighbor", images, size, align_corners, None, name)


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32((in_size - 1) / (out_size - 1))
    return np.float32(in_size / out_size)


def _source_coords(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    """``i * scale`` for each output index, in float32 as TF computes it."""
    return np.arange(out_size, dtype=np.float32) * _scale(in_size, out_size, align_corners)


def _check_size(op, images: np.ndarray, size: np.ndarray) -> tuple[int, int]:
    height, width = (int(x) for x in np.asarray(size).reshape(-1))
    if height <= 0 or width <= 0:
        raise errors.InvalidArgumentError(
            None, op, f"{op.name}: output dimensions must be positive, got [{height},{width}]"
        )
    if images.shape[1] == 0 or images.shape[2] == 0:
        raise errors.InvalidArgumentError(
            None, op, f"{op.name}: input image must be of non-zero size"
        )
    return height, width


def _bilinear(images: np.ndarray, height: int, width: int, align_corners: bool) -> np.ndarray:
    images = images.astype(np.float32)
    in_h, in_w = images.shape[1:3]
    ys, xs = _source_coords(in_h, height, align_corners), _source_coords(in_w, width, align_corners)
    top, left = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    bottom, right = np.minimum(top + 1, in_h - 1), np.minimum(left + 1, in_w - 1)
    y_lerp = (ys - top).astype(np.float32)[None, :, None, None]
    x_lerp = (xs - left).astype(np.float32)[None, None, :, None]
    rows_top, rows_bottom = images[:, top], images[:, bottom]
    upper = rows_top[:, :, left] + (rows_top[:, :, right] - rows_top[:, :, left]) * x_lerp
    lower = rows_bottom[:, :, left] + (rows_bottom[:, :, right] - rows_bottom[:, :, left]) * x_lerp
    return (upper + (lower - upper) * y_lerp).astype(np.float32)


def _nearest(images: np.ndarray, height: int, width: int, align_corners: bool) -> np.ndarray:
    in_h, in_w = images.shape[1:3]
    # TF rounds half away from zero (roundf); numpy's round would round half to even.
    pick = (lambda x: np.floor(x + 0.5)) if align_corners else np.floor
    ys = np.minimum(pick(_source_coords(in_h, height, align_corners)).astype(np.int64), in_h - 1)
    xs = np.minimum(pick(_source_coords(in_w, width, align_corners)).astype(np.int64), in_w - 1)
    return images[:, ys][:, :, xs]


def _resize_kernel(resample):
    def kernel(op: Any):
        align_corners = op.get_attr("align_corners")

        def compute(ctx: Any, images: Any, size: Any):
            images = np.asarray(images)
            height, width = _check_size(op, images, size)
            return resample(images, height, width, align_corners)

        return compute

    return kernel


register_kernel("ResizeBilinear")(_resize_kernel(_bilinear))
register_kernel("ResizeNearestNeighbor")(_resize_kernel(_nearest))
NotDifferentiable("ResizeBilinear")
NotDifferentiable("ResizeNearestNeighbor")
