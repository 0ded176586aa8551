"""tf.nn.conv2d and its gradient ops, conv2d_transpose, max_pool, avg_pool.

Expected values come from TF's conv_ops_test.py and pooling_ops_test.py (inputs
and filters ``1..n``), and from a direct loop over windows written here in
numpy; gradients are checked against finite differences.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error

pytestmark = pytest.mark.timeout(60)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _counting(shape):
    """``1, 2, ..., n`` in ``shape``, float32 (TF's tests' inputs)."""
    return np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)


def _padding(size, window, stride, padding):
    if padding == "VALID":
        return (size - window) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return out, total // 2, total - total // 2


def _np_conv(x, w, strides, padding, dilations=(1, 1)):
    """Cross-correlation by a loop over output positions and filter taps."""
    n, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    ekh, ekw = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    oh, top, bottom = _padding(h, ekh, strides[0], padding)
    ow, left, right = _padding(wd, ekw, strides[1], padding)
    x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out = np.zeros((n, oh, ow, o))
    for a in range(oh):
        for b in range(ow):
            for i in range(kh):
                for j in range(kw):
                    r, c = a * strides[0] + i * dilations[0], b * strides[1] + j * dilations[1]
                    out[:, a, b] += x[:, r, c] @ w[i, j]
    return out


def _np_pool(x, k, s, padding, reduce):
    n, h, wd, c = x.shape
    oh, top, _ = _padding(h, k[0], s[0], padding)
    ow, left, _ = _padding(wd, k[1], s[1], padding)
    out = np.zeros((n, oh, ow, c))
    for a in range(oh):
        for b in range(ow):
            r0, c0 = a * s[0] - top, b * s[1] - left
            window = x[:, max(r0, 0) : r0 + k[0], max(c0, 0) : c0 + k[1]]
            out[:, a, b] = reduce(window, axis=(1, 2))
    return out


# --- values from TF's conv_ops_test.py ------------------------------------------------


@pytest.mark.parametrize(
    "x_shape, w_shape, stride, padding, expected",
    [
        (
            [1, 2, 3, 3],
            [1, 1, 3, 3],
            1,
            "VALID",
            [30, 36, 42, 66, 81, 96, 102, 126, 150, 138, 171, 204, 174, 216, 258, 210, 261, 312],
        ),
        ([1, 2, 3, 3], [2, 2, 3, 3], 1, "VALID", [2271, 2367, 2463, 2901, 3033, 3165]),
        ([1, 2, 3, 3], [2, 2, 3, 3], 2, "VALID", [2271, 2367, 2463]),
        ([1, 2, 3, 3], [2, 2, 3, 3], 2, "SAME", [2271, 2367, 2463, 1230, 1305, 1380]),
        ([1, 7, 7, 1], [2, 2, 1, 1], 3, "VALID", [65, 95, 275, 305]),
        ([1, 3, 3, 1], [1, 1, 1, 1], 2, "SAME", [1, 3, 7, 9]),
        ([1, 4, 4, 1], [1, 1, 1, 1], 2, "SAME", [1, 3, 9, 11]),
        ([1, 4, 4, 1], [2, 2, 1, 1], 3, "SAME", [44, 28, 41, 16]),
    ],
)
def test_conv2d_matches_tf_test_values(x_shape, w_shape, stride, padding, expected):
    y = tf.nn.conv2d(_counting(x_shape), _counting(w_shape), [1, stride, stride, 1], padding)
    np.testing.assert_allclose(_run(y).ravel(), expected, rtol=1e-6)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize(
    "strides, dilations", [((1, 1), (1, 1)), ((2, 2), (1, 1)), ((2, 3), (1, 1)), ((1, 1), (2, 3))]
)
def test_conv2d_matches_a_loop_and_its_static_shape(padding, strides, dilations):
    rng = np.random.RandomState(0)
    x, w = rng.randn(2, 9, 8, 3), rng.randn(3, 2, 3, 4)
    y = tf.nn.conv2d(x, w, [1, *strides, 1], padding, dilations=[1, *dilations, 1])
    expected = _np_conv(x, w, strides, padding, dilations)
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(_run(y), expected, rtol=1e-10)


def _check_gradients(build, values, delta=1e-4):
    tensors = [tf.constant(v) for v in values]
    y = build(*tensors)
    with tf.Session():
        return compute_gradient_error(
            tensors, [list(v.shape) for v in values], y, y.shape.as_list(), list(values), delta
        )


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize(
    "strides, dilations", [((1, 1), (1, 1)), ((2, 3), (1, 1)), ((1, 1), (2, 1))]
)
def test_conv2d_gradients(padding, strides, dilations):
    rng = np.random.RandomState(1)
    x, w = rng.randn(2, 6, 7, 2), rng.randn(3, 2, 2, 3)

    def build(x, w):
        return tf.nn.conv2d(x, w, [1, *strides, 1], padding, dilations=[1, *dilations, 1])

    assert _check_gradients(build, [x, w]) < 1e-8


def test_the_gradients_are_tfs_ops():
    x = tf.placeholder(tf.float32, [1, 4, 4, 1])
    w = tf.Variable(tf.ones([2, 2, 1, 1]))
    dx, dw = tf.gradients(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), [x, w])
    assert dx.op.type == "Conv2DBackpropInput"
    assert dw.op.type == "Conv2DBackpropFilter"
    assert dx.shape.as_list() == [1, 4, 4, 1]
    assert dw.shape.as_list() == [2, 2, 1, 1]


def test_backprop_ops_are_differentiable_in_turn():
    rng = np.random.RandomState(2)
    x, w, g = rng.randn(1, 5, 5, 2), rng.randn(3, 3, 2, 2), rng.randn(1, 3, 3, 2)

    def backprop_input(w, g):
        return tf.nn.conv2d_backprop_input([1, 5, 5, 2], w, g, [1, 2, 2, 1], "SAME")

    def backprop_filter(x, g):
        return tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 2], g, [1, 2, 2, 1], "SAME")

    assert _check_gradients(backprop_input, [w, g]) < 1e-8
    assert _check_gradients(backprop_filter, [x, g]) < 1e-8


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    # <conv2d(x, w), y> == <x, conv2d_transpose(y, w)> for every x and y.
    rng = np.random.RandomState(3)
    x, w, y = rng.randn(2, 7, 6, 3), rng.randn(3, 3, 3, 4), rng.randn(2, 4, 3, 4)
    conv = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
    transposed = tf.nn.conv2d_transpose(y, w, [2, 7, 6, 3], [1, 2, 2, 1], "SAME")
    assert transposed.shape.as_list() == [2, 7, 6, 3]
    forward, backward = _run([conv, transposed])
    np.testing.assert_allclose(np.sum(forward * y), np.sum(x * backward), rtol=1e-10)


def test_conv2d_transpose_gradients():
    rng = np.random.RandomState(4)
    v, w = rng.randn(1, 3, 3, 2), rng.randn(2, 2, 1, 2)

    def build(v, w):
        return tf.nn.conv2d_transpose(v, w, [1, 6, 6, 1], [1, 2, 2, 1], "SAME")

    assert _check_gradients(build, [v, w]) < 1e-8


# --- shape errors at graph construction, NCHW at run time -----------------------------


def test_shape_errors():
    with pytest.raises(ValueError, match="Negative dimension size caused by subtracting 3 from 2"):
        tf.nn.conv2d(
            np.ones((1, 2, 2, 1), np.float32),
            np.ones((3, 3, 1, 1), np.float32),
            [1, 1, 1, 1],
            "VALID",
        )
    with pytest.raises(
        ValueError, match=r"Depth of input \(2\) is not a multiple of input depth of filter \(3\)"
    ):
        tf.nn.conv2d(
            np.ones((1, 4, 4, 2), np.float32),
            np.ones((2, 2, 3, 1), np.float32),
            [1, 1, 1, 1],
            "VALID",
        )
    with pytest.raises(ValueError, match="Attr 'padding' of 'Conv2D' Op passed string 'FOO'"):
        tf.nn.conv2d(
            np.ones((1, 4, 4, 1), np.float32),
            np.ones((2, 2, 1, 1), np.float32),
            [1, 1, 1, 1],
            "FOO",
        )
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 3"):
        tf.nn.max_pool(np.ones((4, 4, 1), np.float32), [1, 2, 2, 1], [1, 2, 2, 1], "VALID")


def test_nchw_is_refused_on_the_cpu_as_in_tf():
    x = np.ones((1, 1, 4, 4), np.float32)
    conv = tf.nn.conv2d(
        x, np.ones((2, 2, 1, 1), np.float32), [1, 1, 1, 1], "VALID", data_format="NCHW"
    )
    assert conv.shape.as_list() == [1, 1, 3, 3]
    pool = tf.nn.max_pool(x, [1, 1, 2, 2], [1, 1, 1, 1], "VALID", data_format="NCHW")
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.UnimplementedError,
            match="The Conv2D op currently only supports the NHWC tensor format on the CPU. "
            "The op was given the format: NCHW",
        ):
            sess.run(conv)
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="Default MaxPoolingOp only supports NHWC"
        ):
            sess.run(pool)


# --- pooling ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pool, shape, padding, expected",
    [
        (tf.nn.avg_pool, [1, 3, 3, 3], "VALID", [7, 8, 9]),
        (tf.nn.avg_pool, [1, 2, 4, 3], "SAME", [8.5, 9.5, 10.5, 14.5, 15.5, 16.5]),
        (tf.nn.max_pool, [1, 3, 3, 3], "VALID", [13, 14, 15]),
        (tf.nn.max_pool, [1, 2, 3, 3], "SAME", [13, 14, 15, 16, 17, 18]),
    ],
)
def test_pools_match_tf_test_values(pool, shape, padding, expected):
    y = pool(_counting(shape), [1, 2, 2, 1], [1, 2, 2, 1], padding)
    np.testing.assert_allclose(_run(y).ravel(), expected)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("ksize, strides", [((3, 2), (2, 2)), ((2, 2), (1, 1)), ((1, 3), (3, 1))])
def test_pools_match_a_loop(padding, ksize, strides):
    x = np.random.RandomState(5).randn(2, 7, 6, 3)
    for pool, reduce in [(tf.nn.max_pool, np.max), (tf.nn.avg_pool, np.mean)]:
        y = pool(x, [1, *ksize, 1], [1, *strides, 1], padding)
        expected = _np_pool(x, ksize, strides, padding, reduce)
        assert y.shape.as_list() == list(expected.shape)
        np.testing.assert_allclose(_run(y), expected, rtol=1e-12)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("ksize, strides", [((3, 2), (2, 2)), ((2, 2), (1, 1))])
def test_pool_gradients(padding, ksize, strides):
    x = np.random.RandomState(6).randn(2, 5, 6, 2)
    for pool in (tf.nn.max_pool, tf.nn.avg_pool):

        def build(x, pool=pool):
            return pool(x, [1, *ksize, 1], [1, *strides, 1], padding)

        assert _check_gradients(build, [x]) < 1e-8


def test_max_pool_grad_goes_to_the_first_maximum():
    # A window of equal values: TF's CPU kernel gives the gradient to its first element.
    x = tf.constant(np.ones((1, 2, 2, 1), np.float32))
    y = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    (dx,) = tf.gradients(y, [x])
    assert dx.op.type == "MaxPoolGrad"
    np.testing.assert_array_equal(_run(dx).ravel(), [1, 0, 0, 0])


def test_avg_pool_grad_is_tfs_op():
    x = tf.constant(np.ones((1, 4, 4, 1), np.float32))
    (dx,) = tf.gradients(tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), [x])
    assert dx.op.type == "AvgPoolGrad"
    np.testing.assert_allclose(_run(dx), np.full((1, 4, 4, 1), 0.25))


@pytest.mark.timeout(60)
def test_a_small_cnn_learns():
    # Two classes: a bright top half or a bright bottom half, with noise.
    rng = np.random.RandomState(7)
    labels = rng.randint(0, 2, 64)
    images = rng.rand(64, 8, 8, 1).astype(np.float32) * 0.5
    for i, label in enumerate(labels):
        images[i, 4 * label : 4 * label + 4] += 1.0
    x = tf.constant(images)
    w1 = tf.Variable(rng.randn(3, 3, 1, 4).astype(np.float32) * 0.3)
    w2 = tf.Variable(rng.randn(4 * 4 * 4, 2).astype(np.float32) * 0.3)
    h = tf.nn.relu(tf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME"))
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    logits = tf.matmul(tf.reshape(h, [64, -1]), w2)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(30):
            sess.run(train)
        assert sess.run(loss) < first / 2
