"""tf.reverse (ReverseV2): numpy's flip, its own inverse as a gradient, TF's shape errors."""

import numpy as np
import pytest

import minitf as tf


@pytest.mark.parametrize("axis", [[1], [0, 2], [-1], []])
def test_reverse_is_numpys_flip(axis):
    x = np.arange(24.0).reshape(2, 3, 4)
    with tf.Session() as sess:
        got = sess.run(tf.reverse(x, axis))
    np.testing.assert_array_equal(got, np.flip(x, axis=tuple(axis)) if axis else x)


def test_reverse_gradient_reverses_the_incoming_gradient():
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    weights = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    (grad,) = tf.gradients(tf.reduce_sum(tf.reverse(x, [1]) * weights), x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad), weights[:, ::-1])


def test_reverse_v2_is_reverse_and_keeps_the_static_shape():
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.reverse_v2 is tf.reverse
    assert tf.reverse(x, [0]).get_shape().as_list() == [None, 3]


@pytest.mark.parametrize(
    "axis, words",
    [
        ([3], "'axis'[0] = 3 is out of valid range [0, 1"),
        ([0, -2], "axis 0 specified more than once."),
        ([[1]], "Shape must be rank 1 but is rank 2"),
    ],
)
def test_reverse_refuses_bad_axes_while_building(axis, words):
    # TF 2.21's messages for the same calls (tf.compat.v1 graph mode).
    with pytest.raises(ValueError) as info:
        tf.reverse(tf.zeros([2, 3]), axis)
    assert words in str(info.value)


def test_reverse_checks_a_fed_axis_when_it_runs():
    axis = tf.placeholder(tf.int32, [None])
    y = tf.reverse(tf.zeros([2, 3]), axis)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of valid range"):
            sess.run(y, {axis: [2]})
