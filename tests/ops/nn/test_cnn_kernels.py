"""The kernels of BiasAddGrad and MaxPoolGrad on the CNN's shapes and on edge cases.

Expected values: per-channel sums by ``math.fsum`` over float64 copies (NaN
and infinities as a sum has them), and the pool's gradient window by window
with ``np.argmax`` (TF's CPU kernel gives a window's gradient to its first
largest element in row-major order).
"""

import math

import numpy as np
import pytest

import minitf as tf
from minitf.ops.nn import conv_kernels

pytestmark = pytest.mark.timeout(60)


def _channel_sums(g: np.ndarray, channel: int) -> np.ndarray:
    moved = np.moveaxis(g.astype(np.float64), channel, -1).reshape(-1, g.shape[channel])
    return np.array([math.fsum(moved[:, c]) for c in range(moved.shape[1])])


def _bias_add_grad(g, data_format="NHWC"):
    """The graph's ``BiasAddGrad`` of ``g``: the gradient of a bias add with ``g`` coming in."""
    channels = g.shape.as_list()[1 if data_format == "NCHW" else -1]
    bias = tf.zeros([channels], g.dtype)
    added = tf.nn.bias_add(tf.zeros(g.shape, g.dtype), bias, data_format=data_format)
    grad = tf.gradients(added, bias, grad_ys=g)[0]
    assert grad.op.type == "BiasAddGrad"
    return grad


@pytest.mark.parametrize(
    "shape, dtype, rtol",
    [
        ((50, 28, 28, 32), np.float32, 1e-4),
        ((50, 14, 14, 64), np.float64, 1e-12),
        ((7, 3), np.float32, 1e-6),
        ((2, 3, 4, 5, 6), np.float64, 1e-12),
        ((1, 1), np.float32, 0),
    ],
)
def test_bias_add_grad_sums_every_axis_but_the_last(shape, dtype, rtol):
    g = np.random.RandomState(0).randn(*shape).astype(dtype)
    with tf.Session() as sess:
        got = sess.run(_bias_add_grad(tf.placeholder_with_default(g, shape)))
    want = _channel_sums(g, -1)
    assert got.dtype == dtype and got.shape == (shape[-1],)
    np.testing.assert_allclose(
        got, want, rtol=0, atol=rtol * np.abs(g).sum(axis=tuple(range(g.ndim - 1))).max()
    )


def test_bias_add_grad_of_other_layouts():
    rng = np.random.RandomState(1)
    nchw = rng.randn(3, 4, 5, 6)
    strided = rng.randn(6, 8, 4)[:, ::2]  # not contiguous
    empty = np.zeros((0, 5), np.float32)
    with tf.Session() as sess:
        got = sess.run(
            [
                _bias_add_grad(tf.constant(nchw), "NCHW"),
                _bias_add_grad(tf.placeholder_with_default(strided, strided.shape)),
                _bias_add_grad(tf.placeholder_with_default(empty, empty.shape)),
            ]
        )
    np.testing.assert_allclose(got[0], _channel_sums(nchw, 1), rtol=1e-12)
    np.testing.assert_allclose(got[1], _channel_sums(strided, -1), rtol=1e-12)
    np.testing.assert_array_equal(got[2], np.zeros(5, np.float32))


def test_bias_add_grad_keeps_nans_and_infinities():
    g = np.ones((6, 4), np.float32)
    g[2, 0], g[3, 1], g[4, 2], g[5, 2] = np.nan, np.inf, np.inf, -np.inf
    with tf.Session() as sess:
        got = sess.run(_bias_add_grad(tf.placeholder_with_default(g, g.shape)))
    assert np.isnan(got[0]) and got[1] == np.inf and np.isnan(got[2]) and got[3] == 6


def _first_max_grad(x, grad, k):
    """MaxPoolGrad of k x k windows tiling ``x``, window by window: the first largest wins."""
    result = np.zeros(x.shape)
    for n in range(x.shape[0]):
        for r in range(x.shape[1] // k):
            for c in range(x.shape[2] // k):
                for d in range(x.shape[3]):
                    window = x[n, r * k : r * k + k, c * k : c * k + k, d]
                    i, j = divmod(int(np.argmax(window)), k)  # argmax: the first in row-major order
                    result[n, r * k + i, c * k + j, d] = grad[n, r, c, d]
    return result


@pytest.mark.parametrize("k, chunk_bytes", [(2, 1 << 20), (2, 700), (3, 1), (2, 2000)])
def test_max_pool_grad_of_tiles_a_few_images_at_a_time(monkeypatch, k, chunk_bytes):
    # Values from {0, 1, 2}: most windows have ties, which go to their first maximum,
    # in every chunk (the last one shorter than the others).
    monkeypatch.setattr(conv_kernels, "TILE_CHUNK_BYTES", chunk_bytes)
    rng = np.random.RandomState(5)
    x = rng.randint(0, 3, (7, 2 * k, 3 * k, 5)).astype(np.float32)
    x[1] = 0  # windows all equal
    grad = rng.randn(7, 2, 3, 5).astype(np.float32)
    xt, gt = tf.placeholder(tf.float32, x.shape), tf.placeholder(tf.float32, grad.shape)
    pooled = tf.nn.max_pool(xt, [1, k, k, 1], [1, k, k, 1], "VALID")
    dx = tf.gradients(pooled, xt, grad_ys=gt)[0]
    with tf.Session() as sess:
        got = sess.run(dx, {xt: x, gt: grad})
    np.testing.assert_array_equal(got, _first_max_grad(x, grad, k))


@pytest.mark.parametrize(
    "shape, dtype",
    [((50, 28, 28, 32), np.float32), ((4, 3, 5), np.float64), ((2, 0, 3), np.float32)],
)
def test_bias_add_with_channels_last_is_numpys_broadcast_add(shape, dtype):
    # The bias repeated along each row of channels: the bits of numpy's add,
    # every step (the result goes into a buffer kept between steps), also for
    # a value that is not contiguous.
    rng = np.random.RandomState(12)
    value = tf.placeholder(dtype, None)
    bias = tf.placeholder(dtype, [shape[-1]])
    added = tf.nn.bias_add(value, bias)
    with tf.Session() as sess:
        for step in range(3):
            v = rng.randn(*shape).astype(dtype)
            if step == 2:
                v = np.swapaxes(rng.randn(*shape[:-3], shape[-2], shape[-3], shape[-1]), -2, -3)
                v = v.astype(dtype)
            b = rng.randn(shape[-1]).astype(dtype)
            got = sess.run(added, {value: v, bias: b})
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, v + b)


@pytest.mark.parametrize("shape", [(50, 28, 28, 32), (3, 5000), (2, 3, 7), (4, 0, 3)])
def test_relu_and_its_gradient_are_numpys_with_nans_and_signed_zeros(shape):
    # The kernels compare with a block of zeros repeated along the leading
    # axes: the bits of np.maximum(x, 0) and of g * (x > 0), every step.
    rng = np.random.RandomState(13)
    x, g = tf.placeholder(tf.float32, shape), tf.placeholder(tf.float32, shape)
    relu = tf.nn.relu(x)
    (grad,) = tf.gradients(relu, [x], grad_ys=g)
    assert grad.op.type == "ReluGrad"
    with tf.Session() as sess:
        for _ in range(3):
            xv = rng.randn(*shape).astype(np.float32)
            gv = rng.randn(*shape).astype(np.float32)
            flat_x, flat_g = xv.reshape(-1), gv.reshape(-1)
            if flat_x.size:
                flat_x[:4] = [np.nan, -0.0, np.inf, -np.inf]
                flat_g[4:6] = [np.inf, np.nan][: max(0, flat_g.size - 4)]
            got_relu, got_grad = sess.run([relu, grad], {x: xv, g: gv})
            np.testing.assert_array_equal(got_relu, np.maximum(xv, np.float32(0)))
            assert np.array_equal(np.signbit(got_relu), np.signbit(np.maximum(xv, np.float32(0))))
            np.testing.assert_array_equal(got_grad, gv * (xv > 0))
