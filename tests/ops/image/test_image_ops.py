"""tf.image: expected values are TF1's (its image_ops_test cases, and outputs of TF1's
``tf.compat.v1.image`` functions recorded as literals), or formulas by numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitf as tf
from minitf.framework import errors

A = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 2, 2, 1)
B = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
NN = tf.image.ResizeMethod.NEAREST_NEIGHBOR


def _run(tensor):
    with tf.Session() as sess:
        return sess.run(tensor)


@pytest.mark.parametrize(
    "images, size, kwargs, expected",
    [
        (A, [3, 3], {}, [1, 5 / 3, 2, 7 / 3, 3, 10 / 3, 3, 11 / 3, 4]),
        (A, [3, 3], {"align_corners": True}, [1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4]),
        (B, [3, 3], {}, [0, 4 / 3, 8 / 3, 16 / 3, 20 / 3, 8, 32 / 3, 12, 40 / 3]),
        (A, [3, 3], {"method": NN}, [1, 1, 2, 1, 1, 2, 3, 3, 4]),
        (A, [3, 3], {"method": NN, "align_corners": True}, [1, 2, 2, 3, 4, 4, 3, 4, 4]),
        (B, [3, 2], {"method": NN}, [0, 2, 4, 6, 8, 10]),
    ],
)
def test_resize_images_tf1_legacy_pixel_convention(images, size, kwargs, expected):
    out = _run(tf.image.resize_images(images, size, **kwargs))
    np.testing.assert_allclose(out.ravel(), expected, rtol=1e-6)


def test_resize_dtypes_and_3d_images():
    img = np.arange(16, dtype=np.uint8).reshape(4, 4, 1)
    nearest = tf.image.resize_images(img, [3, 2], NN)
    bilinear = tf.image.resize_images(img, [3, 2])
    assert nearest.dtype == tf.uint8 and bilinear.dtype == tf.float32
    assert nearest.get_shape().as_list() == [3, 2, 1]
    np.testing.assert_array_equal(_run(nearest).ravel(), [0, 2, 4, 6, 8, 10])


def test_resize_to_same_size_returns_images():
    img = tf.constant(B)
    assert tf.image.resize_images(img, [4, 4]) is img


def test_resize_preserve_aspect_ratio():
    out = tf.image.resize_images(
        np.zeros((4, 6, 1), np.float32), [6, 6], preserve_aspect_ratio=True
    )
    assert out is not None and out.get_shape().as_list() == [4, 6, 1]
    out = tf.image.resize_images(
        np.zeros((4, 6, 1), np.float32), [9, 9], preserve_aspect_ratio=True
    )
    assert out.get_shape().as_list() == [6, 9, 1]


def test_resize_bilinear_and_nearest_ops():
    np.testing.assert_allclose(
        _run(tf.image.resize_bilinear(A, [3, 3])).ravel(),
        [1, 5 / 3, 2, 7 / 3, 3, 10 / 3, 3, 11 / 3, 4],
        rtol=1e-6,
    )
    assert _run(tf.image.resize_nearest_neighbor(A, [1, 1])).ravel().tolist() == [1]


def test_resize_errors():
    with pytest.raises(ValueError, match="must have either 3 or 4 dimensions"):
        tf.image.resize_images(np.zeros((2, 2)), [3, 3])
    with pytest.raises(ValueError, match="must be a 1-D Tensor of 2 elements"):
        tf.image.resize_images(A, [3, 3, 3])
    with pytest.raises(ValueError, match="BICUBIC or AREA"):
        tf.image.resize_images(A, [3, 3], tf.image.ResizeMethod.AREA)
    with pytest.raises(ValueError):
        tf.image.resize_bilinear(np.zeros((2, 2, 1)), [3, 3])
    size = tf.placeholder(tf.int32, [2])
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match="must be positive"):
        sess.run(tf.image.resize_bilinear(A, size), {size: [0, 3]})


def test_flips_3d_and_4d():
    x = np.arange(12).reshape(2, 2, 3)
    np.testing.assert_array_equal(_run(tf.image.flip_left_right(x)), x[:, ::-1])
    np.testing.assert_array_equal(_run(tf.image.flip_up_down(x)), x[::-1])
    batch = np.stack([x, x + 100])
    np.testing.assert_array_equal(_run(tf.image.flip_left_right(batch)), batch[:, :, ::-1])
    np.testing.assert_array_equal(_run(tf.image.flip_up_down(batch)), batch[:, ::-1])


def test_random_flips_give_either_image_and_both_over_many_runs():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    flipped = tf.image.random_flip_left_right(x, seed=7)
    flipped_ud = tf.image.random_flip_up_down(
        np.arange(2, dtype=np.float32).reshape(2, 1, 1), seed=3
    )
    seen, seen_ud = set(), set()
    with tf.Session() as sess:
        for _ in range(40):
            seen.add(tuple(sess.run(flipped).ravel()))
            seen_ud.add(tuple(sess.run(flipped_ud).ravel()))
    assert seen == {(0, 1, 2, 3, 4, 5), (3, 4, 5, 0, 1, 2)}
    assert seen_ud == {(0, 1), (1, 0)}


def test_random_flip_of_a_batch_flips_each_image_alone():
    batch = np.arange(2, dtype=np.float32).reshape(1, 1, 2, 1) + np.zeros((64, 1, 1, 1), np.float32)
    out = _run(tf.image.random_flip_left_right(batch, seed=5))[:, 0, :, 0]
    kinds = {tuple(row) for row in out}
    assert kinds == {(0, 1), (1, 0)}


def test_random_flip_same_seed_same_graph_same_sequence():
    x = np.arange(2, dtype=np.float32).reshape(1, 2, 1)

    def sequence():
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            flipped = tf.image.random_flip_left_right(x, seed=2)
            with tf.Session() as sess:
                return [tuple(sess.run(flipped).ravel()) for _ in range(10)]

    assert sequence() == sequence()


def test_adjust_brightness():
    x = np.array([[[0, 50, 100], [200, 250, 255]]], np.uint8)
    assert _run(tf.image.adjust_brightness(x, 0.1)).ravel().tolist() == [25, 75, 125, 225, 255, 255]
    assert _run(tf.image.adjust_brightness(x.astype(np.float32), 10.0)).ravel().tolist() == [
        10,
        60,
        110,
        210,
        260,
        265,
    ]


def test_adjust_contrast():
    y = np.array([[[0, 50, 100], [200, 250, 255]], [[10, 20, 30], [40, 50, 60]]], np.uint8)
    assert _run(tf.image.adjust_contrast(y, 2.0)).ravel().tolist() == [
        0,
        7,
        88,
        255,
        255,
        255,
        0,
        0,
        0,
        17,
        7,
        8,
    ]
    np.testing.assert_allclose(
        _run(tf.image.adjust_contrast(y.astype(np.float32), 0.5)).ravel(),
        [
            31.25,
            71.25,
            105.625,
            131.25,
            171.25,
            183.125,
            36.25,
            56.25,
            70.625,
            51.25,
            71.25,
            85.625,
        ],
    )


def test_random_brightness_and_contrast_stay_in_range():
    x = np.full((2, 2, 1), 0.5, np.float32)
    delta = _run(tf.image.random_brightness(x, 0.2, seed=1)) - 0.5
    assert np.all(np.abs(delta) <= 0.2) and np.allclose(delta, delta.flat[0])
    y = np.array([[[0.0], [1.0]]], np.float32)
    out = _run(tf.image.random_contrast(y, 0.5, 1.5, seed=1)).ravel()
    factor = out[1] - out[0]
    assert 0.5 <= factor < 1.5 and np.isclose(out.mean(), 0.5)
    with pytest.raises(ValueError, match="max_delta must be non-negative"):
        tf.image.random_brightness(x, -1.0)
    with pytest.raises(ValueError, match="upper must be > lower"):
        tf.image.random_contrast(x, 1.0, 0.5)
    with pytest.raises(ValueError, match="lower must be non-negative"):
        tf.image.random_contrast(x, -1.0, 0.5)


def test_per_image_standardization_formula():
    x = np.random.default_rng(0).uniform(0, 255, (2, 3, 4, 3)).astype(np.float32)
    out = _run(tf.image.per_image_standardization(x))
    for image, result in zip(x, out):
        expected = (image - image.mean()) / max(image.std(), 1 / np.sqrt(image.size))
        np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        _run(tf.image.per_image_standardization(np.array([[[1.0, 2.0], [3.0, 4.0]]]))).ravel(),
        [-1.3416407, -0.4472136, 0.4472136, 1.3416407],
        rtol=1e-6,
    )
    assert (
        _run(tf.image.per_image_standardization(np.full((2, 2, 1), 5, np.uint8))).tolist()
        == [[[0.0], [0.0]]] * 2
    )


def test_random_crop_is_a_slice_of_the_value():
    x = np.arange(20).reshape(4, 5)
    crop = tf.random_crop(x, [2, 3], seed=4)
    with tf.Session() as sess:
        for _ in range(10):
            out = sess.run(crop)
            top, left = divmod(int(out[0, 0]), 5)
            np.testing.assert_array_equal(out, x[top : top + 2, left : left + 3])
    with pytest.raises(errors.InvalidArgumentError, match="Need value.shape >= size"):
        _run(tf.image.random_crop(np.zeros((2, 3)), [3, 3]))


def test_central_crop():
    c = np.arange(25, dtype=np.int32).reshape(5, 5, 1)
    assert _run(tf.image.central_crop(c, 0.5))[:, :, 0].tolist() == [
        [6, 7, 8],
        [11, 12, 13],
        [16, 17, 18],
    ]
    assert tf.image.central_crop(np.zeros((7, 9, 1)), 0.33).get_shape().as_list() == [3, 3, 1]
    with pytest.raises(ValueError, match=r"central_fraction must be within \(0, 1\]"):
        tf.image.central_crop(c, 0.0)


def test_resize_image_with_crop_or_pad():
    x = np.arange(1, 9).reshape(2, 4, 1)
    out = _run(tf.image.resize_image_with_crop_or_pad(x, 4, 2))
    assert out[:, :, 0].tolist() == [[0, 0], [2, 3], [6, 7], [0, 0]]
    with pytest.raises(ValueError, match="target_width must be > 0"):
        tf.image.resize_image_with_crop_or_pad(x, 4, 0)


def test_convert_image_dtype():
    u8 = np.array([0, 128, 255], np.uint8)
    np.testing.assert_allclose(
        _run(tf.image.convert_image_dtype(u8, tf.float32)), [0, 128 / 255, 1]
    )
    floats = np.array([0, 0.5, 1.0], np.float32)
    assert _run(tf.image.convert_image_dtype(floats, tf.uint8)).tolist() == [0, 127, 255]
    assert _run(tf.image.convert_image_dtype(u8, tf.int32)).tolist() == [0, 1073741824, 2139095040]
    i32 = np.array([0, 2**30, 2**31 - 1], np.int32)
    assert _run(tf.image.convert_image_dtype(i32, tf.uint8)).tolist() == [0, 128, 255]
    out_of_range = np.array([-0.5, 1.5], np.float32)
    assert _run(tf.image.convert_image_dtype(out_of_range, tf.uint8, saturate=True)).tolist() == [
        0,
        255,
    ]


def test_rgb_to_grayscale():
    rgb = np.array([[[10, 20, 30], [200, 100, 50]]], np.uint8)
    assert _run(tf.image.rgb_to_grayscale(rgb)).ravel().tolist() == [18, 124]
    np.testing.assert_allclose(
        _run(tf.image.rgb_to_grayscale(rgb.astype(np.float32))).ravel(), [18.149, 124.18], rtol=1e-5
    )


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_round_trip(channels):
    x = np.random.default_rng(channels).integers(0, 256, (5, 7, channels)).astype(np.uint8)
    out = _run(tf.image.decode_png(tf.image.encode_png(x, compression=9)))
    np.testing.assert_array_equal(out, x)


def test_encode_png_is_a_png_file_pillow_reads():
    import io

    from PIL import Image

    x = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    data = _run(tf.image.encode_png(x))
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(data))), x)
    wide = np.array([[[0], [65535], [258]]], np.uint16)
    assert np.asarray(Image.open(io.BytesIO(_run(tf.image.encode_png(wide))))).tolist() == [
        [0, 65535, 258]
    ]


def test_decode_png_channels_and_errors():
    gray = np.array([[[0], [255]]], np.uint8)
    rgb = _run(tf.image.decode_png(tf.image.encode_png(gray), channels=3))
    assert rgb.tolist() == [[[0, 0, 0], [255, 255, 255]]]
    with pytest.raises(errors.InvalidArgumentError):
        _run(tf.image.decode_png(b"not a png"))
    with pytest.raises(ValueError, match="channels must be"):
        tf.image.decode_png(b"", channels=5)


def test_decode_jpeg_of_a_flat_image():
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 100, 50)).save(out, format="JPEG", quality=95)
    pixels = _run(tf.image.decode_jpeg(out.getvalue()))
    assert pixels.shape == (3, 4, 3)
    assert np.all(np.abs(pixels.astype(int) - [200, 100, 50]) <= 2)
    assert _run(tf.image.decode_jpeg(out.getvalue(), channels=1)).shape == (3, 4, 1)
