"""tf.nn.xw_plus_b, l2_normalize, batch_normalization, fused_batch_norm, selu, top_k, in_top_k.

Expected values: TF's topk_op_test.py, in_topk_op_test.py and nn_test.py cases,
values printed by TF 1.x for the same inputs (fused_batch_norm, selu), and
numpy formulas.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error

pytestmark = pytest.mark.timeout(60)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _gradient_error(build, value):
    x = tf.constant(value)
    y = build(x)
    with tf.Session():
        return compute_gradient_error(
            x, list(value.shape), y, y.shape.as_list(), x_init_value=value, delta=1e-5
        )


def test_xw_plus_b():
    x, w, b = np.array([[1.0, 2.0]]), np.array([[1.0, 0.5], [2.0, -1.0]]), np.array([0.5, 1.0])
    y = tf.nn.xw_plus_b(x, w, b)
    assert y.op.name == "xw_plus_b"
    assert y.op.type == "BiasAdd"
    np.testing.assert_allclose(_run(y), x @ w + b)


def test_l2_normalize():
    x = np.random.RandomState(0).randn(3, 4)
    for axis in (0, 1, [0, 1]):
        expected = x / np.sqrt(np.sum(x**2, axis=tuple(np.atleast_1d(axis)), keepdims=True))
        np.testing.assert_allclose(_run(tf.nn.l2_normalize(x, axis)), expected)
    np.testing.assert_array_equal(_run(tf.nn.l2_normalize(np.zeros(3), 0)), np.zeros(3))
    assert _gradient_error(lambda t: tf.nn.l2_normalize(t, 1), x) < 1e-8
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):
        tf.nn.l2_normalize(x, axis=0, dim=0)


def test_batch_normalization_formula_and_gradient():
    rng = np.random.RandomState(1)
    x, m, v = rng.randn(4, 3), rng.randn(3), rng.rand(3) + 0.5
    beta, gamma = rng.randn(3), rng.randn(3)
    expected = (x - m) / np.sqrt(v + 0.001) * gamma + beta
    y = tf.nn.batch_normalization(x, m, v, beta, gamma, 0.001)
    np.testing.assert_allclose(_run(y), expected)
    bare = tf.nn.batch_normalization(x, m, v, None, None, 0.001)
    np.testing.assert_allclose(_run(bare), (x - m) / np.sqrt(v + 0.001))
    assert (
        _gradient_error(lambda t: tf.nn.batch_normalization(t, m, v, beta, gamma, 1e-3), x) < 1e-8
    )


def test_fused_batch_norm_training_matches_tf():
    # TF 1.x prints these for the same inputs: the batch variance is unbiased (n - 1).
    x = np.arange(24, dtype=np.float32).reshape(2, 2, 2, 3)
    y, mean, variance = tf.nn.fused_batch_norm(x, np.full(3, 2, np.float32), np.ones(3, np.float32))
    y, mean, variance = _run([y, mean, variance])
    np.testing.assert_allclose(mean, [10.5, 11.5, 12.5])
    np.testing.assert_allclose(variance, [54, 54, 54], rtol=1e-6)
    np.testing.assert_allclose(
        y[:, :, :, 0].ravel(),
        [
            -2.0550182,
            -1.1821558,
            -0.3092935,
            0.56356883,
            1.4364312,
            2.3092935,
            3.1821558,
            4.0550184,
        ],
        rtol=1e-5,
    )


def test_fused_batch_norm_of_half_precision_takes_float32_parameters_as_tf():
    # TF's kernel: float32 scale, offset and statistics for a float16 x, y in float16.
    x = np.random.RandomState(4).randn(2, 3, 3, 2).astype(np.float16)
    scale, offset = np.array([1.5, 0.5], np.float32), np.array([0.25, -1.0], np.float32)
    y, mean, variance = tf.nn.fused_batch_norm(x, tf.constant(scale), tf.constant(offset))
    assert (y.dtype, mean.dtype, variance.dtype) == (tf.float16, tf.float32, tf.float32)
    y, mean, variance = _run([y, mean, variance])
    x32 = x.astype(np.float32)
    m, v = x32.mean(axis=(0, 1, 2)), x32.var(axis=(0, 1, 2))
    expected = ((x32 - m) / np.sqrt(v + 0.001) * scale + offset).astype(np.float16)
    np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float32), atol=2e-3)
    np.testing.assert_allclose(mean, m, rtol=1e-6)
    np.testing.assert_allclose(variance, v * 18 / 17, rtol=1e-5)  # unbiased: n = 18
    y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, m, v, is_training=False)
    np.testing.assert_allclose(_run(y).astype(np.float32), expected.astype(np.float32), atol=2e-3)


def test_fused_batch_norm_inference_and_nchw():
    rng = np.random.RandomState(2)
    x = rng.randn(2, 3, 4, 5)
    scale, offset, m, v = rng.randn(3), rng.randn(3), rng.randn(3), rng.rand(3) + 1
    y, _, _ = tf.nn.fused_batch_norm(
        x, scale, offset, m, v, epsilon=0.01, data_format="NCHW", is_training=False
    )
    col = lambda a: a.reshape(1, 3, 1, 1)  # noqa: E731
    expected = (x - col(m)) / np.sqrt(col(v) + 0.01) * col(scale) + col(offset)
    np.testing.assert_allclose(_run(y), expected)
    with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D tensor"):
        tf.nn.fused_batch_norm(x, scale, offset, is_training=False)
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 2"):
        tf.nn.fused_batch_norm(np.ones((2, 3)), scale, offset)


def test_fused_batch_norm_training_gradient():
    x = np.random.RandomState(3).randn(2, 2, 3, 2)

    def build(t):
        return tf.nn.fused_batch_norm(t, [1.0, 2.0], [0.0, 0.5])[0]

    assert _gradient_error(build, x) < 1e-7


def test_selu_matches_tf_and_differentiates():
    y = tf.nn.selu(np.array([-1.0, 0.0, 1.0], np.float32))
    np.testing.assert_allclose(_run(y), [-1.1113307, 0.0, 1.050701], rtol=1e-6)
    x = np.array([[-1.5, -0.2, 0.3, 2.0]])
    assert _gradient_error(tf.nn.selu, x) < 1e-8


# --- top_k and in_top_k: TF's topk_op_test.py / in_topk_op_test.py ------------------------

ROWS = [[0.1, 0.3, 0.2, 0.4], [0.1, 0.3, 0.4, 0.2]]


@pytest.mark.parametrize(
    "k, values, indices",
    [
        (1, [[0.4], [0.4]], [[3], [2]]),
        (2, [[0.4, 0.3], [0.4, 0.3]], [[3, 1], [2, 1]]),
        (4, [[0.4, 0.3, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1]], [[3, 1, 2, 0], [2, 1, 3, 0]]),
    ],
)
def test_top_k(k, values, indices):
    v, i = tf.nn.top_k(ROWS, k)
    assert v.op.type == "TopKV2"
    assert v.shape.as_list() == [2, k]
    got_v, got_i = _run([v, i])
    np.testing.assert_allclose(got_v, values, rtol=1e-6)
    np.testing.assert_array_equal(got_i, indices)
    assert got_i.dtype == np.int32


def test_top_k_ties_take_the_lower_index_first():
    values, indices = _run(tf.nn.top_k([[1.0, 3.0, 3.0, 1.0, 2.0]], 4))
    np.testing.assert_array_equal(values, [[3, 3, 2, 1]])
    np.testing.assert_array_equal(indices, [[1, 2, 4, 0]])
    values, indices = _run(tf.nn.top_k(np.array([3, 0, 255, 3], np.uint8), 3))
    np.testing.assert_array_equal(values, [255, 3, 3])
    np.testing.assert_array_equal(indices, [2, 0, 3])


def test_top_k_errors_and_gradient():
    with pytest.raises(ValueError, match="input must have last dimension >= k = 3 but is 2"):
        tf.nn.top_k([[1.0, 2.0]], 3)
    with pytest.raises(ValueError, match="must be non-negative but is -1"):
        tf.nn.top_k([[1.0, 2.0]], -1)
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        tf.nn.top_k(1.0)
    k = tf.placeholder(tf.int32, [])
    values, _ = tf.nn.top_k([[1.0, 2.0]], k)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="input must have at least k"):
            sess.run(values, {k: 3})
    x = np.array([[0.5, -1.0, 2.0, 0.1], [3.0, 1.0, 2.0, -2.0]])
    assert _gradient_error(lambda t: tf.nn.top_k(t, 2)[0], x) < 1e-8


@pytest.mark.parametrize(
    "predictions, targets, k, expected",
    [
        ([[0.1, 0.3, 0.2, 0.4], [0.1, 0.2, 0.3, 0.4]], [3, 1], 1, [True, False]),
        ([[0.1, 0.3, 0.2, 0.4], [0.1, 0.2, 0.3, 0.4]], [0, 2], 2, [False, True]),
        ([[0.1, 0.3, 0.2, 0.4], [0.1, 0.2, 0.3, 0.4]], [1, 3], 3, [True, True]),
        ([[0.1, 0.3, 0.2, 0.2], [0.1, 0.3, 0.2, 0.2]], [2, 3], 2, [True, True]),
        ([[1.0, np.nan, 1.0, 1.0]], [1], 4, [False]),
        ([[1.0, 2.0]], [5], 1, [False]),
    ],
)
def test_in_top_k(predictions, targets, k, expected):
    result = tf.nn.in_top_k(np.array(predictions, np.float32), targets, k)
    assert result.dtype == tf.bool
    np.testing.assert_array_equal(_run(result), expected)
