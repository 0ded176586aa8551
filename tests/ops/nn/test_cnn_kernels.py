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
from minitf.ops.nn import conv_kernels, nn_kernels

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
def test_relu_and_its_gradient_are_numpys_with_nans_and_signed_zeros(monkeypatch, shape):
    # The kernels compare with a block of zeros repeated along the leading
    # axes: the bits of np.maximum(x, 0) and of g * (x > 0), every step. A
    # large Relu keeps its mask for the step's ReluGrad (which then never
    # compares); a value fetched in one step is not written by the next.
    if np.prod(shape) >= nn_kernels.MASK_CHUNK:
        monkeypatch.setattr(nn_kernels, "_relu_grad_into", None)
    rng = np.random.RandomState(13)
    fetched = []
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
            fetched.append((got_relu, got_relu.copy()))
            np.testing.assert_array_equal(got_relu, np.maximum(xv, np.float32(0)))
            assert np.array_equal(np.signbit(got_relu), np.signbit(np.maximum(xv, np.float32(0))))
            np.testing.assert_array_equal(got_grad, gv * (xv > 0))
    for got, kept in fetched:
        np.testing.assert_array_equal(got, kept)


def _tiled_pool_reference(x, grad, k):
    """The k x k / stride-k max pool of ``x`` (sizes multiples of k) and its gradient.

    ``np.argmax`` of each window's taps in row-major order is its first
    largest tap (TF's CPU kernel's choice); the gradient is placed by
    indexing, with no multiplication.
    """
    n, h, w, c = x.shape
    windows = x.reshape(n, h // k, k, w // k, k, c).transpose(0, 1, 3, 5, 2, 4)
    windows = windows.reshape(n, h // k, w // k, c, k * k)
    taps = np.zeros(windows.shape, grad.dtype)
    np.put_along_axis(taps, np.argmax(windows, axis=-1)[..., None], grad[..., None], axis=-1)
    taps = taps.reshape(n, h // k, w // k, c, k, k).transpose(0, 1, 4, 2, 5, 3)
    return windows.max(axis=-1), taps.reshape(x.shape)


def _pool_and_gradient(shape, padding, dtype=tf.float32, ksize=2, stride=2):
    xt, gt = tf.placeholder(dtype, shape), tf.placeholder(dtype)
    pooled = tf.nn.max_pool(xt, [1, ksize, ksize, 1], [1, stride, stride, 1], padding)
    return xt, gt, pooled, tf.gradients(pooled, xt, grad_ys=gt)[0]


def _pool_input(rng, shape, dtype, values):
    x = rng.randn(*shape).astype(dtype)
    if values == "relu":
        x = np.maximum(x, 0)
    elif values == "ties":
        x = rng.randint(0, 3, shape).astype(dtype)
        x[0] = 0
        x[-1, 0, 0] = -0.0
    elif values == "infinite":
        x[:, ::2] = rng.choice([np.inf, -np.inf, 1.0], x[:, ::2].shape)
    return x


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize(
    "shape, k, dtype, values",
    [
        ((50, 28, 28, 32), 2, np.float32, "normal"),
        ((50, 14, 14, 64), 2, np.float32, "relu"),
        ((3, 4, 6, 5), 2, np.float64, "ties"),
        ((2, 2, 2, 1), 2, np.float32, "ties"),
        ((4, 6, 2, 3), 2, np.float32, "infinite"),
        ((3, 6, 9, 2), 3, np.float32, "ties"),
    ],
)
def test_max_pool_keeps_where_the_maxima_are_for_its_gradient(
    monkeypatch, padding, shape, k, dtype, values
):
    # Windows that tile the input: the pool finds each window's first largest
    # tap, kept for the step's MaxPoolGrad (never the gradient's own search);
    # every step new values, so nothing of one step may reach the next. Ties
    # go to the first largest tap, signed zeros are equal, infinities are
    # ordinary values.
    monkeypatch.setattr(conv_kernels, "max_pool_grad", None)
    rng = np.random.RandomState(8)
    xt, gt, pooled, dx = _pool_and_gradient(shape, padding, tf.as_dtype(dtype), k, k)
    with tf.Session() as sess:
        for _ in range(3):
            x = _pool_input(rng, shape, dtype, values)
            grad = rng.randn(*pooled.shape.as_list()).astype(dtype)
            got_pool, got_dx = sess.run([pooled, dx], {xt: x, gt: grad})
            want_pool, want_dx = _tiled_pool_reference(x, grad, k)
            assert got_pool.dtype == got_dx.dtype == dtype
            np.testing.assert_array_equal(got_pool, want_pool)
            np.testing.assert_array_equal(got_dx, want_dx)


def test_max_pool_grad_of_another_output_or_alone_searches_itself():
    # MaxPoolGrad given an output other than its MaxPool's, or run without its
    # MaxPool in the step, finds the maxima itself from what it is given.
    rng = np.random.RandomState(9)
    x = rng.randint(0, 3, (2, 4, 4, 3)).astype(np.float32)
    grad = rng.randn(2, 2, 2, 3).astype(np.float32)
    want_pool, want_dx = _tiled_pool_reference(x, grad, 2)
    xt, gt, pooled, dx = _pool_and_gradient(x.shape, "VALID")
    with tf.Session() as sess:
        alone = sess.run(dx, {xt: x, gt: grad, pooled: want_pool})
        zeros = sess.run(dx, {xt: x, gt: grad, pooled: np.full(want_pool.shape, 7, np.float32)})
    np.testing.assert_array_equal(alone, want_dx)
    np.testing.assert_array_equal(zeros, np.zeros_like(x))  # no input equals 7


def _loop_pool_grad(x, grad, k, s, padding):
    """Max pool gradient by a loop over windows (padding never wins), first largest tap."""
    n, h, w, c = x.shape
    oh, ow = grad.shape[1:3]
    pad_h = max((oh - 1) * s + k - h, 0) // 2 if padding == "SAME" else 0
    pad_w = max((ow - 1) * s + k - w, 0) // 2 if padding == "SAME" else 0
    result = np.zeros(x.shape, np.float64)
    for b, r, q, d in np.ndindex(n, oh, ow, c):
        rows = range(max(r * s - pad_h, 0), min(r * s - pad_h + k, h))
        cols = range(max(q * s - pad_w, 0), min(q * s - pad_w + k, w))
        taps = [(i, j) for i in rows for j in cols]
        i, j = taps[int(np.argmax([x[b, i, j, d] for i, j in taps]))]
        result[b, i, j, d] += grad[b, r, q, d]
    return result


@pytest.mark.parametrize(
    "shape, padding, ksize, stride",
    [
        ((2, 5, 6, 3), "SAME", 2, 2),  # odd rows: padding, the windows do not tile
        ((2, 5, 7, 3), "VALID", 2, 2),  # odd sizes: the last row and column are in no window
        ((2, 6, 6, 3), "SAME", 2, 1),  # overlapping windows
    ],
)
def test_max_pools_whose_windows_do_not_tile(monkeypatch, shape, padding, ksize, stride):
    monkeypatch.setattr(conv_kernels, "max_pool_of_tiles", None)
    rng = np.random.RandomState(10)
    x = rng.randint(0, 3, shape).astype(np.float32)
    xt, gt, pooled, dx = _pool_and_gradient(shape, padding, ksize=ksize, stride=stride)
    grad = rng.randn(*pooled.shape.as_list()).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run(dx, {xt: x, gt: grad})
    want = _loop_pool_grad(x, grad, ksize, stride, padding)  # overlapping windows: sums
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_max_pool_of_tiles_with_a_nan():
    # A window holding a NaN pools to NaN and, as before, passes no gradient
    # (no input equals its maximum); the other windows are as without it.
    rng = np.random.RandomState(11)
    x = rng.randn(2, 4, 4, 3).astype(np.float32)
    x[1, 2, 3, 1] = np.nan
    grad = rng.randn(2, 2, 2, 3).astype(np.float32)
    xt, gt, pooled, dx = _pool_and_gradient(x.shape, "SAME")
    with tf.Session() as sess:
        got_pool, got_dx = sess.run([pooled, dx], {xt: x, gt: grad})
    assert np.isnan(got_pool[1, 1, 1, 1]) and np.isnan(got_pool).sum() == 1
    clean = x.copy()
    clean[1, 2:4, 2:4, 1] = 0
    want = _tiled_pool_reference(clean, grad, 2)[1]
    want[1, 2:4, 2:4, 1] = 0
    np.testing.assert_array_equal(got_dx, want)


def test_max_pool_of_tiles_of_integers():
    x = np.random.RandomState(14).randint(-5, 5, (2, 6, 9, 3)).astype(np.int32)
    xt = tf.placeholder(tf.int32, x.shape)
    pooled = tf.nn.max_pool(xt, [1, 3, 3, 1], [1, 3, 3, 1], "VALID")
    with tf.Session() as sess:
        got = sess.run(pooled, {xt: x})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, _tiled_pool_reference(x, np.zeros((2, 2, 3, 3)), 3)[0])


def test_max_pool_without_a_gradient_marks_nothing(monkeypatch):
    monkeypatch.setattr(conv_kernels, "max_pool_of_tiles", None)
    x = np.random.RandomState(15).randn(2, 4, 4, 3).astype(np.float32)
    xt = tf.placeholder(tf.float32, x.shape)
    pooled = tf.nn.max_pool(xt, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    with tf.Session() as sess:
        got = sess.run(pooled, {xt: x})
    np.testing.assert_array_equal(got, _tiled_pool_reference(x, np.zeros((2, 2, 2, 3)), 2)[0])
