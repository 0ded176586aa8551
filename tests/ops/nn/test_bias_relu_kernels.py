"""The kernels of BiasAddGrad, ReluGrad and Relu on the CNN's shapes and on edge cases.

Expected values: per-channel sums by ``math.fsum`` over float64 copies, the
ReLU gradient as ``g * (features > 0)`` written element by element, and
TF's definitions for NaN (a NaN gradient times a zero mask is NaN).
"""

import math

import numpy as np
import pytest

import minitf as tf

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
