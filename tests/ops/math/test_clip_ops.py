"""Ports of TF 1.15's clip_ops_test.py cases (expected values from that test), plus gradients."""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.math import clip_ops

pytestmark = pytest.mark.timeout(60)


def _run(*fetches):
    with tf.Session() as sess:
        return sess.run(list(fetches))


def test_clip_by_value_clips_both_sides_and_keeps_tf_names():
    x = tf.constant([-5.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
    clipped = tf.clip_by_value(x, -4.4, 4.4)
    assert clipped.op.name == "clip_by_value" and clipped.op.type == "Maximum"
    (got,) = _run(clipped)
    np.testing.assert_allclose(got, [[-4.4, 2.0, 3.0], [4.0, 4.4, 4.4]])


def test_clip_by_value_with_tensor_bounds_of_t_shape():
    x = tf.constant([-5.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
    lo = tf.constant([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], shape=[2, 3])
    hi = tf.constant([6.0, 6.0, 6.0, 6.0, 6.0, 6.0], shape=[2, 3]) - 1.5
    (got,) = _run(tf.clip_by_value(x, lo, hi))
    np.testing.assert_allclose(got, [[1.0, 2.0, 3.0], [4.0, 4.5, 4.5]])


def test_clip_by_value_rejects_a_bound_that_broadcasts_t():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError):
        tf.clip_by_value(x, tf.zeros([3, 2]), 1.0)


def test_clip_by_value_of_indexed_slices_clips_the_values():
    values = tf.constant([[-5.0, 2.0], [9.0, 0.5]])
    slices = tf.IndexedSlices(values, tf.constant([0, 3]), tf.constant([4, 2]))
    clipped = tf.clip_by_value(slices, 0.0, 1.0)
    assert isinstance(clipped, tf.IndexedSlices)
    got, idx = _run(clipped.values, clipped.indices)
    np.testing.assert_allclose(got, [[0.0, 1.0], [1.0, 0.5]])
    np.testing.assert_array_equal(idx, [0, 3])


def test_clip_by_value_op_kernel_and_tf_gradient():
    x = tf.constant([[-5.0, 1.0, 7.0], [0.5, 3.0, -0.5]])
    lo = tf.constant(-1.0)
    hi = tf.constant(2.0)
    y = clip_ops.clip_by_value_op(x, lo, hi)
    assert y.op.type == "ClipByValue" and y.op.name == "ClipByValue"
    w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    gx, glo, ghi = tf.gradients(tf.reduce_sum(y * w), [x, lo, hi])
    got, gx, glo, ghi = _run(y, gx, glo, ghi)
    np.testing.assert_allclose(got, [[-1.0, 1.0, 2.0], [0.5, 2.0, -0.5]])
    # By hand: x gets w where it is inside, each bound the sum of w where it won.
    np.testing.assert_allclose(gx, [[0.0, 2.0, 0.0], [4.0, 0.0, 6.0]])
    assert glo == 1.0 and ghi == 3.0 + 5.0


def test_clip_by_value_op_gradient_matches_finite_differences():
    x0 = np.array([[-5.0, 1.0, 7.0], [0.5, 3.0, -0.5]])
    x = tf.constant(x0, dtype=tf.float64)
    lo = tf.constant(np.full((2, 3), -1.0))
    y = clip_ops.clip_by_value_op(x, lo, tf.constant(2.0, tf.float64))
    with tf.Session():
        err = tf.test.compute_gradient_error([x, lo], [[2, 3], [2, 3]], y, [2, 3])
    assert err < 1e-6


def test_clip_by_value_op_bounds_must_be_scalars_or_of_t_shape():
    x = tf.placeholder(tf.float32)
    y = clip_ops.clip_by_value_op(x, tf.placeholder(tf.float32), 1.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be either of the same"):
            sess.run(y, {x: np.zeros([2, 2]), y.op.inputs[1]: np.zeros([2])})


def test_clip_by_norm_clips_and_keeps_a_small_tensor():
    x = tf.constant([-3.0, 0.0, 0.0, 4.0, 0.0, 0.0], shape=[2, 3])
    clipped = tf.clip_by_norm(x, 4.0)
    assert clipped.op.name == "clip_by_norm"
    got, same = _run(clipped, tf.clip_by_norm(x, 6.0))
    np.testing.assert_allclose(got, [[-2.4, 0.0, 0.0], [3.2, 0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(same, [[-3.0, 0.0, 0.0], [4.0, 0.0, 0.0]])


def test_clip_by_norm_over_axis_0():
    x = tf.constant([-3.0, 0.0, 0.0, 4.0, 0.0, 3.0], shape=[2, 3])
    (got,) = _run(tf.clip_by_norm(x, 4.0, [0]))
    np.testing.assert_allclose(got, [[-2.4, 0.0, 0.0], [3.2, 0.0, 3.0]], rtol=1e-6)


def test_clip_by_norm_of_zeros_has_a_finite_gradient():
    x = tf.zeros([3, 3])
    clipped = tf.clip_by_norm(x, 1.0)
    (grad,) = tf.gradients(clipped, [x])
    got, grad = _run(clipped, grad)
    np.testing.assert_array_equal(got, np.zeros([3, 3]))
    assert np.isfinite(grad).all()


def test_clip_by_norm_gradient_matches_finite_differences():
    x0 = np.array([[-3.0, 1.0, 0.5], [4.0, 2.0, 1.0]])
    x = tf.constant(x0)
    y = tf.clip_by_norm(x, tf.constant(2.0, tf.float64))
    with tf.Session():
        err = tf.test.compute_gradient_error(x, [2, 3], y, [2, 3])
    assert err < 1e-6


def test_clip_by_norm_of_indexed_slices():
    slices = tf.IndexedSlices(tf.constant([[-3.0, 0.0], [4.0, 0.0]]), tf.constant([1, 2]))
    clipped = tf.clip_by_norm(slices, 4.0)
    assert isinstance(clipped, tf.IndexedSlices)
    (got,) = _run(clipped.values)
    np.testing.assert_allclose(got, [[-2.4, 0.0], [3.2, 0.0]], rtol=1e-6)


def _global_norm_inputs():
    x0 = tf.constant([-2.0, 0.0, 0.0, 4.0, 0.0, 0.0], shape=[2, 3])
    x1 = tf.constant([1.0, -2.0])
    return x0, x1


def test_clip_by_global_norm_scales_every_tensor():
    x0, x1 = _global_norm_inputs()
    # Global norm of x0 and x1 = sqrt(2^2 + 4^2 + 1^2 + 2^2) = 5: every value times 0.8.
    (c0, c1), norm = tf.clip_by_global_norm((x0, x1), 4.0)
    assert norm.op.name == "global_norm/global_norm"
    assert c0.op.name == "clip_by_global_norm/clip_by_global_norm/_0"
    c0, c1, norm, gn = _run(c0, c1, norm, tf.global_norm([x0, x1]))
    np.testing.assert_allclose(c0, [[-1.6, 0.0, 0.0], [3.2, 0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(c1, [0.8, -1.6], rtol=1e-6)
    assert norm == pytest.approx(5.0) and gn == pytest.approx(5.0)


def test_clip_by_global_norm_keeps_none_entries_and_uses_use_norm():
    x0, x1 = _global_norm_inputs()
    clipped, norm = tf.clip_by_global_norm([x0, None, x1], 4.0, use_norm=tf.constant(8.0))
    assert clipped[1] is None
    c0, c2, norm = _run(clipped[0], clipped[2], norm)
    np.testing.assert_allclose(c0, [[-1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    np.testing.assert_allclose(c2, [0.5, -1.0])
    assert norm == 8.0


def test_clip_by_global_norm_with_indexed_slices():
    x0, x1 = _global_norm_inputs()
    slices = tf.IndexedSlices(x0, tf.constant([0, 2]), tf.constant([3, 3]))
    (c0, c1), norm = tf.clip_by_global_norm([slices, x1], 4.0)
    assert isinstance(c0, tf.IndexedSlices)
    c0, idx, c1, norm = _run(c0.values, c0.indices, c1, norm)
    np.testing.assert_allclose(c0, [[-1.6, 0.0, 0.0], [3.2, 0.0, 0.0]], rtol=1e-6)
    np.testing.assert_array_equal(idx, [0, 2])
    assert norm == pytest.approx(5.0)


def test_clip_by_global_norm_not_clipped_and_of_zeros():
    x0, x1 = _global_norm_inputs()
    (c0, c1), _ = tf.clip_by_global_norm([x0, x1], 6.0)
    (z0,), zero_norm = tf.clip_by_global_norm([tf.zeros([2])], 1.0)
    c0, c1, z0, zero_norm = _run(c0, c1, z0, zero_norm)
    np.testing.assert_allclose(c0, [[-2.0, 0.0, 0.0], [4.0, 0.0, 0.0]])
    np.testing.assert_allclose(c1, [1.0, -2.0])
    np.testing.assert_array_equal(z0, [0.0, 0.0])
    assert zero_norm == 0.0


def test_clip_by_global_norm_of_an_infinite_norm_is_nan():
    x0, _ = _global_norm_inputs()
    (c0, c1), norm = tf.clip_by_global_norm([x0, tf.constant([np.inf, 1.0])], 4.0)
    c0, c1, norm = _run(c0, c1, norm)
    assert np.isinf(norm)
    assert np.isnan(c0).all() and np.isnan(c1).all()


def test_global_norm_wants_a_sequence():
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.global_norm(tf.constant([1.0]))
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.clip_by_global_norm(tf.constant([1.0]), 1.0)


def test_clip_by_average_norm():
    x = tf.constant([-3.0, 0.0, 0.0, 4.0, 0.0, 0.0], shape=[2, 3])
    # Average norm of x = sqrt(3^2 + 4^2) / 6 = 0.83333.
    clipped = tf.clip_by_average_norm(x, 0.8)
    assert clipped.op.name == "clip_by_average_norm"
    got, same = _run(clipped, tf.clip_by_average_norm(x, 0.9))
    np.testing.assert_allclose(got, [[-2.88, 0.0, 0.0], [3.84, 0.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(same, [[-3.0, 0.0, 0.0], [4.0, 0.0, 0.0]], rtol=1e-6)
