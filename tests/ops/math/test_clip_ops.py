"""``tf.clip_by_value``: values and gradient as TF 1.15's (a Minimum then a Maximum)."""

import numpy as np
import pytest

import minitf as tf


def test_clip_by_value_values_and_name():
    t = tf.constant([[-5.0, 1.0, 3.0], [4.0, 9.0, 2.0]])
    clipped = tf.clip_by_value(t, 2.0, 4.0)
    assert clipped.name == "clip_by_value:0"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(clipped), [[2.0, 2.0, 3.0], [4.0, 4.0, 2.0]])


def test_clip_by_value_gradient_passes_inside_and_at_the_bounds():
    t = tf.constant([-1.0, 0.5, 2.0, 1.0, 0.0])
    loss = tf.reduce_sum(tf.clip_by_value(t, 0.0, 1.0) * tf.constant([1.0, 2.0, 3.0, 4.0, 5.0]))
    (grad,) = tf.gradients(loss, t)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad), [0.0, 2.0, 0.0, 4.0, 5.0])


def test_clip_by_value_bound_that_would_broadcast_is_an_error():
    with pytest.raises(ValueError):
        tf.clip_by_value(tf.constant([1.0, 2.0]), tf.constant([[0.0], [1.0]]), 3.0)
