"""tf.layers.batch_normalization: variables, update ops and moving averages computed in numpy.

The cases follow TF's ``layers/normalization_test.py``; every expected value
is the batch-norm formula evaluated by hand on the same inputs.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

RNG = np.random.RandomState(11)
EPS = 1e-3


def _names(variables):
    return [v.name for v in variables]


def _normalize(x, mean, var, axis=-1):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + EPS)


def test_variables_names_and_trainability():
    # TF normalization_test.testCreateBN.
    bn = tf.layers.BatchNormalization(axis=1)
    y = bn(tf.ones([5, 4, 3]), training=True)
    assert y.get_shape().as_list() == [5, 4, 3]
    assert _names(bn.variables) == [
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]
    assert _names(tf.trainable_variables()) == _names(bn.variables)[:2]
    assert bn.gamma.get_shape().as_list() == [4]
    assert len(bn.updates) == 2
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == bn.updates


def test_no_updates_when_not_training():
    tf.layers.batch_normalization(tf.ones([5, 3]), training=False)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []


def test_center_and_scale_off():
    bn = tf.layers.BatchNormalization(center=False, scale=False)
    bn(tf.ones([2, 3]))
    assert _names(bn.variables) == [
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]


def test_training_normalizes_by_batch_and_moves_the_averages():
    x = (RNG.randn(10, 3) * [1.0, 2.0, 3.0] + [1.0, -2.0, 5.0]).astype(np.float32)
    inputs = tf.constant(x)
    y = tf.layers.batch_normalization(inputs, training=True)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving_mean, moving_var = tf.global_variables()[2:]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
        for _ in range(3):
            sess.run(updates)
        mm, mv = sess.run([moving_mean, moving_var])
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(out, _normalize(x, mean, var), rtol=1e-4, atol=1e-5)
    expected_mm, expected_mv = np.zeros(3), np.ones(3)
    for _ in range(3):
        expected_mm = expected_mm * 0.99 + mean * 0.01
        expected_mv = expected_mv * 0.99 + var * 0.01
    np.testing.assert_allclose(mm, expected_mm, rtol=1e-5)
    np.testing.assert_allclose(mv, expected_mv, rtol=1e-5)


def test_inference_uses_the_moving_averages():
    x = RNG.randn(6, 2).astype(np.float32)
    y = tf.layers.batch_normalization(
        tf.constant(x),
        moving_mean_initializer=tf.constant_initializer([0.5, -1.0]),
        moving_variance_initializer=tf.constant_initializer([2.0, 0.25]),
        gamma_initializer=tf.constant_initializer(3.0),
        beta_initializer=tf.constant_initializer(0.5),
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
    expected = 3.0 * _normalize(x, np.array([0.5, -1.0]), np.array([2.0, 0.25])) + 0.5
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_training_tensor_chooses_statistics_at_run_time():
    # TF normalization_test.testBooleanLearningPhase with a placeholder.
    x = (RNG.randn(8, 3) + 4.0).astype(np.float32)
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(tf.constant(x), momentum=0.9, training=training)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    mm_var, mv_var = tf.global_variables()[2:]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out_train, *_ = sess.run([y] + updates, {training: True})
        out_infer, *_ = sess.run([y] + updates, {training: False})
        mm, mv = sess.run([mm_var, mv_var])
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(out_train, _normalize(x, mean, var), rtol=1e-4, atol=1e-5)
    # The updates ran twice, but with training False the momentum is 1: no change.
    np.testing.assert_allclose(mm, 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(mv, 0.9 + 0.1 * var, rtol=1e-5)
    np.testing.assert_allclose(out_infer, _normalize(x, mm, mv), rtol=1e-4, atol=1e-5)


def test_4d_channels_last_uses_the_fused_unbiased_variance_for_the_average():
    x = RNG.randn(2, 3, 3, 4).astype(np.float32)
    y = tf.layers.batch_normalization(tf.constant(x), axis=3, training=True)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving_var = tf.global_variables()[3]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, *_ = sess.run([y] + updates)
        mv = sess.run(moving_var)
    flat = x.reshape(-1, 4)
    np.testing.assert_allclose(out, _normalize(x, flat.mean(0), flat.var(0)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mv, 0.99 + 0.01 * flat.var(0, ddof=1), rtol=1e-5)


def test_4d_channels_first_axis_1():
    x = RNG.randn(3, 2, 2, 2).astype(np.float32)
    y = tf.layers.batch_normalization(tf.constant(x), axis=1, training=True, fused=False)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving_mean, moving_var = tf.global_variables()[2:]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, *_ = sess.run([y] + updates)
        mm, mv = sess.run([moving_mean, moving_var])
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    np.testing.assert_allclose(out, _normalize(x, mean, var, axis=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mm, 0.01 * mean, rtol=1e-5)
    np.testing.assert_allclose(mv, 0.99 + 0.01 * var, rtol=1e-5)


def test_fused_true_on_2d_inputs_is_an_error():
    with pytest.raises(ValueError, match="fused=True only support 4D input tensors"):
        tf.layers.batch_normalization(tf.ones([2, 3]), fused=True)


def test_bad_axis_is_an_error():
    with pytest.raises(ValueError, match="Invalid axis: 2"):
        tf.layers.batch_normalization(tf.ones([2, 3]), axis=2)


def test_regularizers_and_reuse():
    x = tf.ones([2, 3])
    tf.layers.batch_normalization(x, gamma_regularizer=tf.nn.l2_loss, name="bn")
    tf.layers.batch_normalization(x, gamma_regularizer=tf.nn.l2_loss, name="bn", reuse=True)
    assert len(tf.global_variables()) == 4
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 1
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(losses[0]), 1.5)  # l2_loss(ones(3)) = 3 / 2


def test_training_with_update_ops_as_dependencies():
    rng = np.random.RandomState(1)
    x = (rng.randn(32, 4) * 3.0 + 2.0).astype(np.float32)
    target = (x @ rng.randn(4, 1)).astype(np.float32)
    training = tf.placeholder_with_default(True, [])
    hidden = tf.layers.batch_normalization(tf.constant(x), training=training)
    prediction = tf.layers.dense(hidden, 1)
    loss = tf.reduce_mean(tf.square(prediction - target))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    moving_mean = tf.global_variables()[2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(100):
            sess.run(train)
        last, mm = sess.run([loss, moving_mean])
    assert last < 0.05 * first
    np.testing.assert_allclose(mm, (1 - 0.99**100) * x.mean(0), rtol=1e-4)
