"""``tf.image``: resizing, flips, colour, crops and PNG/JPEG codecs (`minitf.ops.image`)."""

# ruff: noqa: F401
from minitf.ops.image.image_codecs import decode_jpeg, decode_png, encode_png
from minitf.ops.image.image_ops import (
    ResizeMethod,
    adjust_brightness,
    adjust_contrast,
    central_crop,
    convert_image_dtype,
    flip_left_right,
    flip_up_down,
    per_image_standardization,
    random_brightness,
    random_contrast,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    resize_image_with_crop_or_pad,
    resize_images,
    rgb_to_grayscale,
)
from minitf.ops.image.image_resize import resize_bilinear, resize_nearest_neighbor
