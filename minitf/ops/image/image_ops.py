"""``tf.image`` built from ordinary ops: resize_images, flips, brightness and contrast, crops.

Each function builds the graph TF1's ``image_ops_impl.py`` builds, from the
array, math and random ops (a flip is a ``ReverseV2``, a crop a ``Slice``); only
the resampling itself is an op of its own (`image_resize`). Images are
``[height, width, channels]`` or batches ``[batch, height, width, channels]``.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops, tensor_util
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.debugging import logging_ops
from minitf.ops.image.image_resize import resize_bilinear, resize_nearest_neighbor
from minitf.ops.math import math_ops
from minitf.ops.random import random_ops

__all__ = [
    "ResizeMethod",
    "adjust_brightness",
    "adjust_contrast",
    "central_crop",
    "convert_image_dtype",
    "flip_left_right",
    "flip_up_down",
    "per_image_standardization",
    "random_brightness",
    "random_contrast",
    "random_crop",
    "random_flip_left_right",
    "random_flip_up_down",
    "resize_image_with_crop_or_pad",
    "resize_images",
    "rgb_to_grayscale",
]


class ResizeMethod:
    """The ``method`` values of `resize_images` (TF1's numbering)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _image_tensor(image, name: str = "image") -> ops.Tensor:
    """``image`` as a tensor of rank 3 or 4 (unknown rank passes, as in TF's static check)."""
    image = ops.convert_to_tensor(image, name=name)
    ndims = image.get_shape().ndims
    if ndims is not None and ndims not in (3, 4):
        raise ValueError(f"'image' (shape {image.get_shape()}) must have either 3 or 4 dimensions.")
    return image


def _static_hw(image: ops.Tensor, fn_name: str) -> tuple[int, int]:
    """The static height and width of an image or batch (this version needs them known)."""
    shape = image.get_shape()
    height, width = shape[-3].value, shape[-2].value
    if height is None or width is None:
        raise ValueError(
            f"{fn_name} needs the height and width of 'image' known when the graph "
            f"is built, got {shape}"
        )
    return height, width


def _as_batch(images: ops.Tensor) -> tuple[ops.Tensor, bool]:
    if images.get_shape().ndims == 3:
        return array_ops.expand_dims(images, 0), False
    return images, True


def _aspect_preserving_size(images: ops.Tensor, size) -> list[int]:
    """The largest size within ``size`` with the image's aspect ratio (TF rounds)."""
    height, width = _static_hw(images, "resize_images(preserve_aspect_ratio=True)")
    new_height, new_width = (int(x) for x in tensor_util.constant_value(size))
    factor = min(new_height / height, new_width / width)
    return [int(round(height * factor)), int(round(width * factor))]


def resize_images(
    images: Any,
    size: Any,
    method: Any = ResizeMethod.BILINEAR,
    align_corners: bool = False,
    preserve_aspect_ratio: bool = False,
) -> ops.Tensor:
    """Resizes an image or a batch to ``size`` ``[new_height, new_width]``.

    Bilinear returns ``float32``; nearest neighbour keeps the dtype. If the static size
    already is ``size``, ``images`` comes back unchanged, as in TF1.

    Args:
        images: ``[height, width, channels]`` or ``[batch, height, width, channels]``.
        size: Two ``int32`` values.
        method: ``ResizeMethod.BILINEAR`` or ``ResizeMethod.NEAREST_NEIGHBOR``.
        align_corners: If True, the corner pixels line up.
        preserve_aspect_ratio: If True, the result fits in ``size`` keeping the aspect
            ratio (needs the sizes known when the graph is built).

    Raises:
        ValueError: if the rank or ``size`` is wrong, or ``method`` is not supported
            (``BICUBIC`` and ``AREA`` are not implemented).
    """
    with ops.name_scope(None, "resize", [images, size]):
        images = _image_tensor(images, "images")
        if images.get_shape().ndims is None:
            raise ValueError("'images' contains no shape.")
        batch, is_batch = _as_batch(images)
        size = ops.convert_to_tensor(size, dtype=dtypes.int32, name="size")
        if not size.get_shape().is_compatible_with([2]):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        if preserve_aspect_ratio:
            size = ops.convert_to_tensor(_aspect_preserving_size(batch, size), dtype=dtypes.int32)
        new_size = tensor_util.constant_value(size)
        hw = tuple(d.value for d in batch.get_shape()[1:3])
        if new_size is not None and hw == tuple(int(x) for x in new_size):
            return images
        resized = _resample(batch, size, method, align_corners)
        return resized if is_batch else array_ops.squeeze(resized, axis=[0])


def _resample(batch, size, method, align_corners):
    if method == ResizeMethod.BILINEAR:
        return resize_bilinear(batch, size, align_corners=align_corners)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        return resize_nearest_neighbor(batch, size, align_corners=align_corners)
    if method in (ResizeMethod.BICUBIC, ResizeMethod.AREA):
        raise ValueError(
            f"resize_images: method {method} (BICUBIC or AREA) is not implemented in minitf; "
            "use ResizeMethod.BILINEAR or ResizeMethod.NEAREST_NEIGHBOR"
        )
    raise ValueError("Resize method is not implemented.")


def _flip(image, axis_3d: int, name: str) -> ops.Tensor:
    with ops.name_scope(None, name, [image]):
        image = _image_tensor(image)
        axis = axis_3d + (1 if image.get_shape().ndims == 4 else 0)
        return array_ops.reverse(image, [axis])


def flip_left_right(image: Any) -> ops.Tensor:
    """Mirrors an image (or each image of a batch) horizontally: reverses the width axis."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image: Any) -> ops.Tensor:
    """Mirrors an image (or each image of a batch) vertically: reverses the height axis."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image, axis_3d: int, seed, name: str) -> ops.Tensor:
    """Flips with probability 1/2: one coin for an image, one per image for a batch."""
    with ops.name_scope(None, name, [image]):
        image = _image_tensor(image)
        if image.get_shape().ndims == 3:
            coin = random_ops.random_uniform([], 0, 1.0, seed=seed)
            return control_flow_ops.cond(
                math_ops.less(coin, 0.5),
                lambda: array_ops.reverse(image, [axis_3d]),
                lambda: image,
            )
        batch = array_ops.shape(image)[0]
        coins = random_ops.random_uniform(array_ops.stack([batch]), 0, 1.0, seed=seed)
        flips = math_ops.cast(math_ops.round(array_ops.reshape(coins, [-1, 1, 1, 1])), image.dtype)
        flipped = array_ops.reverse(image, [axis_3d + 1])
        return flips * flipped + (1 - flips) * image


def random_flip_left_right(image: Any, seed: Any = None) -> ops.Tensor:
    """Mirrors horizontally with probability 1/2 (each image of a batch on its own).

    Args:
        image: An image or a batch.
        seed: The op-level seed.
    """
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image: Any, seed: Any = None) -> ops.Tensor:
    """Mirrors vertically with probability 1/2 (each image of a batch on its own).

    Args:
        image: An image or a batch.
        seed: The op-level seed.
    """
    return _random_flip(image, 0, seed, "random_flip_up_down")


def convert_image_dtype(
    image: Any, dtype: Any, saturate: bool = False, name: str | None = None
) -> ops.Tensor:
    """Converts pixels between dtypes, rescaling: floats in ``[0, 1]``, ints over their range.

    Args:
        image: A tensor.
        dtype: The new dtype.
        saturate: If True, clamp before casting (for values out of range).
        name: The op name.

    Raises:
        AttributeError: if ``dtype`` is not a float or integer type.
    """
    image = ops.convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer")
    if dtype == image.dtype.base_dtype:
        return array_ops.identity(image, name=name)
    with ops.name_scope(name, "convert_image", [image]) as scope:
        return _convert(image, dtype, saturate, scope)


def _cast(value, dtype, saturate: bool, name=None):
    return (math_ops.saturate_cast if saturate else math_ops.cast)(value, dtype, name=name)


def _convert(image, dtype, saturate: bool, scope: str) -> ops.Tensor:
    source = image.dtype.base_dtype
    if source.is_integer and dtype.is_integer:
        if source.max > dtype.max:
            scale = (source.max + 1) // (dtype.max + 1)
            return _cast(math_ops.floordiv(image, scale), dtype, saturate, name=scope)
        scale = (dtype.max + 1) // (source.max + 1)
        return math_ops.multiply(math_ops.cast(image, dtype), scale, name=scope)
    if source.is_floating and dtype.is_floating:
        return math_ops.cast(image, dtype, name=scope)
    if source.is_integer:
        return math_ops.multiply(math_ops.cast(image, dtype), 1.0 / source.max, name=scope)
    # Float to integer: scale by max + 0.5 so that 1.0 truncates to max (TF's comment).
    return _cast(math_ops.multiply(image, dtype.max + 0.5), dtype, saturate, name=scope)


def _in_float(image, adjust, name: str, values) -> ops.Tensor:
    """``adjust`` applied in ``float32``, converted back to the image's dtype (saturating)."""
    with ops.name_scope(None, name, [image, *values]):
        image = ops.convert_to_tensor(image, name="image")
        original = image.dtype.base_dtype
        flt = convert_image_dtype(image, dtypes.float32) if original.is_integer else image
        adjusted = adjust(flt)
        return convert_image_dtype(adjusted, original, saturate=True)


def adjust_brightness(image: Any, delta: Any) -> ops.Tensor:
    """Adds ``delta`` to every pixel, in ``[0, 1]`` float scale for integer images.

    Args:
        image: An image or batch.
        delta: A scalar added to the (float) pixel values.
    """
    return _in_float(
        image, lambda flt: flt + math_ops.cast(delta, flt.dtype), "adjust_brightness", [delta]
    )


def adjust_contrast(images: Any, contrast_factor: Any) -> ops.Tensor:
    """Scales each channel's distance from its mean over the image: ``(x - mean) * factor + mean``.

    Args:
        images: ``[..., height, width, channels]``.
        contrast_factor: The scalar factor.
    """

    def adjust(flt: Any):
        mean = math_ops.reduce_mean(flt, axis=[-3, -2], keepdims=True)
        return (flt - mean) * math_ops.cast(contrast_factor, flt.dtype) + mean

    return _in_float(images, adjust, "adjust_contrast", [contrast_factor])


def random_brightness(image: Any, max_delta: Any, seed: Any = None) -> ops.Tensor:
    """`adjust_brightness` by a delta drawn uniformly from ``[-max_delta, max_delta)``.

    Raises:
        ValueError: if ``max_delta`` is negative.
    """
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image: Any, lower: Any, upper: Any, seed: Any = None) -> ops.Tensor:
    """`adjust_contrast` by a factor drawn uniformly from ``[lower, upper)``.

    Raises:
        ValueError: if ``upper <= lower`` or ``lower`` is negative.
    """
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def per_image_standardization(image: Any) -> ops.Tensor:
    """``(x - mean) / max(stddev, 1 / sqrt(num_pixels))`` per image, in ``float32``.

    ``num_pixels`` counts every element of an image (height * width * channels).

    Args:
        image: An image or batch.
    """
    with ops.name_scope(None, "per_image_standardization", [image]) as scope:
        image = math_ops.cast(_image_tensor(image), dtypes.float32)
        axes = [-1, -2, -3]
        num_pixels = math_ops.reduce_prod(array_ops.shape(image)[-3:])
        mean = math_ops.reduce_mean(image, axis=axes, keepdims=True)
        variance = math_ops.reduce_mean(math_ops.square(image), axis=axes, keepdims=True)
        variance = math_ops.maximum(variance - math_ops.square(mean), 0.0)
        min_stddev = math_ops.rsqrt(math_ops.cast(num_pixels, dtypes.float32))
        scale = math_ops.maximum(math_ops.sqrt(variance), min_stddev)
        return math_ops.divide(image - mean, scale, name=scope)


def random_crop(value: Any, size: Any, seed: Any = None, name: str | None = None) -> ops.Tensor:
    """A slice of ``size`` at a uniformly random offset of ``value`` (``tf.random_crop``).

    Args:
        value: A tensor.
        size: The crop's shape, one entry per dimension of ``value``.
        seed: The op-level seed.
        name: The op name.

    Raises:
        InvalidArgumentError: at run time, if ``size`` exceeds ``value``'s shape.
    """
    with ops.name_scope(name, "random_crop", [value, size]) as scope:
        value = ops.convert_to_tensor(value, name="value")
        size = ops.convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = array_ops.shape(value)
        check = logging_ops.Assert(
            math_ops.reduce_all(math_ops.greater_equal(shape, size)),
            ["Need value.shape >= size, got ", shape, size],
            summarize=1000,
        )
        with ops.control_dependencies([check]):
            limit = shape - size + 1
        offset = random_ops.random_uniform(
            array_ops.shape(shape), dtype=dtypes.int32, maxval=dtypes.int32.max, seed=seed
        )
        return array_ops.slice(value, math_ops.floormod(offset, limit), size, name=scope)


def central_crop(image: Any, central_fraction: float) -> ops.Tensor:
    """The centre of an image (or batch) keeping ``central_fraction`` of its height and width.

    Starts at ``int((size - size * central_fraction) / 2)`` on each axis, as TF.

    Raises:
        ValueError: if ``central_fraction`` is not in ``(0, 1]``, or the height and width
            are not known when the graph is built.
    """
    with ops.name_scope(None, "central_crop", [image]):
        image = _image_tensor(image)
        if central_fraction <= 0.0 or central_fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if central_fraction == 1.0:
            return image
        height, width = _static_hw(image, "central_crop")
        top = int((height - height * central_fraction) / 2)
        left = int((width - width * central_fraction) / 2)
        return _crop(image, top, left, height - 2 * top, width - 2 * left)


def _crop(image, top: int, left: int, height: int, width: int) -> ops.Tensor:
    if image.get_shape().ndims == 3:
        return array_ops.slice(image, [top, left, 0], [height, width, -1])
    return array_ops.slice(image, [0, top, left, 0], [-1, height, width, -1])


def _pad(image, top: int, left: int, height: int, width: int) -> ops.Tensor:
    current_h, current_w = _static_hw(image, "resize_image_with_crop_or_pad")
    rows = [top, height - current_h - top]
    cols = [left, width - current_w - left]
    paddings = [rows, cols, [0, 0]]
    if image.get_shape().ndims == 4:
        paddings = [[0, 0], *paddings]
    return array_ops.pad(image, paddings)


def resize_image_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> ops.Tensor:
    """Crops (centred) or zero-pads (centred) an image or batch to the target size.

    Raises:
        ValueError: if a target is not positive, or the height and width are not known
            when the graph is built.
    """
    with ops.name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image = _image_tensor(image)
        if target_height <= 0:
            raise ValueError("target_height must be > 0.")
        if target_width <= 0:
            raise ValueError("target_width must be > 0.")
        height, width = _static_hw(image, "resize_image_with_crop_or_pad")
        cropped = _crop(
            image,
            max((height - target_height) // 2, 0),
            max((width - target_width) // 2, 0),
            min(target_height, height),
            min(target_width, width),
        )
        return _pad(
            cropped,
            max((target_height - height) // 2, 0),
            max((target_width - width) // 2, 0),
            target_height,
            target_width,
        )


def rgb_to_grayscale(images: Any, name: str | None = None) -> ops.Tensor:
    """Luma ``0.2989 R + 0.587 G + 0.114 B`` of ``[..., 3]`` images, keeping a last axis of 1.

    Args:
        images: RGB images, last axis of size 3.
        name: The op name.
    """
    with ops.name_scope(name, "rgb_to_grayscale", [images]) as scope:
        images = ops.convert_to_tensor(images, name="images")
        original = images.dtype.base_dtype
        flt = convert_image_dtype(images, dtypes.float32)
        weights = ops.convert_to_tensor([0.2989, 0.5870, 0.1140], dtype=dtypes.float32)
        gray = math_ops.reduce_sum(flt * weights, axis=-1, keepdims=True)
        return convert_image_dtype(gray, original, name=scope)
