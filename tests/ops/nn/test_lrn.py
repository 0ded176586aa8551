"""tf.nn.local_response_normalization (LRN) and its gradient op LRNGrad.

Expected values come from a loop over every position written here from TF's
formula (as TF's lrn_op_test.py does), from TF's test of the gradient at zero
input, and from finite differences.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error

pytestmark = pytest.mark.timeout(60)


def _np_lrn(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    """``x[..., d] / (bias + alpha * sum(x[..., d-r:d+r+1] ** 2)) ** beta`` by a loop."""
    x = x.astype(np.float64)
    out = np.empty_like(x)
    depth = x.shape[3]
    for b, r, c in np.ndindex(*x.shape[:3]):
        for d in range(depth):
            patch = x[b, r, c, max(0, d - depth_radius) : min(depth, d + depth_radius + 1)]
            out[b, r, c, d] = x[b, r, c, d] / (bias + alpha * np.sum(patch * patch)) ** beta
    return out


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def test_defaults_are_tfs():
    x = np.random.RandomState(0).randn(2, 3, 3, 13).astype(np.float32)
    y = tf.nn.lrn(x)
    assert y.op.type == "LRN"
    assert y.op.name == "LRN"
    assert [y.op.get_attr(a) for a in ("depth_radius", "bias", "alpha", "beta")] == [
        5,
        1.0,
        1.0,
        0.5,
    ]
    np.testing.assert_allclose(_run(y), _np_lrn(x), rtol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_random_parameters_match_the_formula(seed):
    # TF's _RunAndVerify: a random shape, radius, bias, alpha and beta.
    rng = np.random.RandomState(seed)
    shape = list(rng.randint(1, 6, size=4))
    shape[3] = int(rng.randint(1, 20))
    radius = int(rng.randint(1, min(8, shape[3]) + 1))
    bias, alpha, beta = 1.0 + rng.rand(), 2.0 * rng.rand(), 0.01 + 2.0 * rng.rand()
    x = rng.rand(*shape).astype(np.float32)
    y = tf.nn.local_response_normalization(x, radius, bias, alpha, beta)
    np.testing.assert_allclose(_run(y), _np_lrn(x, radius, bias, alpha, beta), rtol=1e-4)


def test_float16_matches_the_formula():
    x = np.random.RandomState(3).rand(1, 2, 2, 7).astype(np.float16)
    y = tf.nn.lrn(x, 2, 1.5, 0.5, 0.75)
    assert y.dtype == tf.float16
    np.testing.assert_allclose(_run(y), _np_lrn(x, 2, 1.5, 0.5, 0.75), rtol=1e-3)


def test_gradient_at_zero_input_is_one():
    # TF's testGradientsZeroInput: alpha 0 makes LRN the identity's derivative.
    p = tf.placeholder(tf.float32, [4, 4, 4, 4])
    y = tf.nn.local_response_normalization(p, 2, 1.0, 0.0, 1.0, name="lrn")
    (grad,) = tf.gradients([y], [p])
    assert grad.op.type == "LRNGrad"
    np.testing.assert_allclose(_run(grad, {p: np.zeros([4, 4, 4, 4])}), np.ones([4, 4, 4, 4]))


@pytest.mark.parametrize("radius, bias, alpha, beta", [(5, 1.0, 1.0, 0.5), (2, 1.3, 0.7, 0.9)])
def test_gradient_matches_finite_differences(radius, bias, alpha, beta):
    x = np.random.RandomState(4).rand(1, 2, 3, 8).astype(np.float32)
    t = tf.constant(x)
    y = tf.nn.lrn(t, radius, bias, alpha, beta)
    with tf.Session():
        err = compute_gradient_error(t, [1, 2, 3, 8], y, [1, 2, 3, 8], x, delta=1e-2)
    assert err < 2e-3


def test_gradient_matches_the_jacobian_of_the_formula():
    # d/dx of sum(g * lrn(x)) by central differences of the float64 loop above.
    rng = np.random.RandomState(5)
    x, g = rng.rand(1, 1, 2, 6), rng.randn(1, 1, 2, 6)
    args = (2, 1.2, 0.8, 0.6)
    expected = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[i] = 1e-6
        expected[i] = np.sum(g * (_np_lrn(x + step, *args) - _np_lrn(x - step, *args))) / 2e-6
    t = tf.constant(x.astype(np.float32))
    (grad,) = tf.gradients(tf.nn.lrn(t, *args), t, grad_ys=g.astype(np.float32))
    np.testing.assert_allclose(_run(grad), expected, rtol=1e-4, atol=1e-6)


def test_rank_other_than_4_is_refused_at_construction():
    with pytest.raises(
        ValueError, match=r"Shape must be rank 4 but is rank 3 for 'LRN' \(op: 'LRN'\)"
    ):
        tf.nn.lrn(tf.zeros([2, 3, 4]))


def test_float64_is_refused():
    with pytest.raises(TypeError, match="DataType float64 not in list of allowed values"):
        tf.nn.lrn(tf.zeros([1, 1, 1, 2], tf.float64))


def test_kernel_refuses_a_fed_tensor_of_another_rank():
    p = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="in must be 4-dimensional"):
        _run(tf.nn.lrn(p), {p: np.zeros([2, 2])})
