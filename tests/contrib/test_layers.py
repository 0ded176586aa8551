"""tf.contrib.layers: ports of contrib's ``initializers_test.py``, ``regularizers_test.py`` and
``layers_test.py`` cases (names, statistics of the draws, regularizer values by numpy).
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

layers = tf.contrib.layers
RNG = np.random.RandomState(3)


def _run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def _draw(initializer, shape):
    return _run(initializer(shape))


def test_xavier_uniform_limit_and_variance():
    # initializers_test.XavierTest: limit sqrt(6 / (fan_in + fan_out)).
    values = _draw(layers.xavier_initializer(seed=1), [100, 40])
    limit = np.sqrt(6.0 / 140)
    assert np.abs(values).max() <= limit
    np.testing.assert_allclose(values.var(), limit**2 / 3, rtol=0.06)


def test_xavier_normal_stddev():
    values = _draw(layers.xavier_initializer(uniform=False, seed=1), [100, 40])
    stddev = np.sqrt(1.3 / 70)
    assert np.abs(values).max() <= 2 * stddev
    # A normal truncated at 2 stddevs keeps 0.774 of its variance.
    np.testing.assert_allclose(values.std(), stddev * np.sqrt(0.7737), rtol=0.05)


def test_xavier_conv2d_fans_include_the_window():
    values = _draw(layers.xavier_initializer_conv2d(seed=2), [3, 3, 20, 40])
    limit = np.sqrt(6.0 / (9 * 20 + 9 * 40))
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.9 * limit


def test_variance_scaling_he_default():
    # initializers_test.VarianceScalingInitializerTest: factor 2, FAN_IN, truncated normal.
    values = _draw(layers.variance_scaling_initializer(seed=4), [200, 100])
    np.testing.assert_allclose(values.std(), np.sqrt(1.3 * 2.0 / 200 * 0.7737), rtol=0.05)


def test_variance_scaling_uniform_fan_out():
    values = _draw(
        layers.variance_scaling_initializer(factor=3.0, mode="FAN_OUT", uniform=True), [50, 30]
    )
    limit = np.sqrt(3.0 * 3.0 / 30)
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.9 * limit


def test_variance_scaling_bad_arguments():
    with pytest.raises(TypeError, match="Unknown mode FAN_MAX"):
        layers.variance_scaling_initializer(mode="FAN_MAX")
    with pytest.raises(TypeError, match="non-floating point type"):
        layers.xavier_initializer(dtype=tf.int32)


def test_l1_and_l2_regularizer_values():
    # regularizers_test.testL1Regularizer / testL2Regularizer.
    values = RNG.randn(5, 5).astype(np.float32)
    tensor = tf.constant(values)
    l1, l2 = _run([layers.l1_regularizer(0.5)(tensor), layers.l2_regularizer(0.25)(tensor)])
    np.testing.assert_allclose(l1, 0.5 * np.abs(values).sum(), rtol=1e-5)
    np.testing.assert_allclose(l2, 0.25 * (values**2).sum() / 2, rtol=1e-5)


def test_regularizer_scale_checks():
    # regularizers_test.testL1RegularizerWithNegativeScale / WithIntScale / Zero.
    with pytest.raises(ValueError, match="less than 0"):
        layers.l2_regularizer(-1.0)
    with pytest.raises(ValueError, match="scale cannot be an integer: 2"):
        layers.l1_regularizer(2)
    assert layers.l1_regularizer(0.0)(tf.ones([2])) is None


def test_apply_regularization_sums_and_collects():
    # regularizers_test.testApplyRegularization.
    a, b = RNG.randn(3).astype(np.float32), RNG.randn(2, 2).astype(np.float32)
    total = layers.apply_regularization(
        layers.l2_regularizer(0.5), [tf.constant(a), tf.constant(b)]
    )
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [total]
    np.testing.assert_allclose(_run(total), 0.5 * ((a**2).sum() + (b**2).sum()) / 2, rtol=1e-5)


def test_apply_regularization_without_weights_raises():
    with pytest.raises(ValueError, match="No weights to regularize"):
        layers.apply_regularization(layers.l2_regularizer(0.5))


def test_fully_connected_names_and_relu_default():
    # layers_test.FCTest.testCreateFCWithScope / testCreateFC.
    x = RNG.randn(4, 3).astype(np.float32)
    y = layers.fully_connected(tf.constant(x), 5, weights_regularizer=layers.l2_regularizer(0.1))
    layers.fully_connected(tf.constant(x), 2, scope="fc1")
    assert [v.name for v in tf.trainable_variables()] == [
        "fully_connected/weights:0",
        "fully_connected/biases:0",
        "fc1/weights:0",
        "fc1/biases:0",
    ]
    assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 4
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1
    out, weights = _run([y, tf.trainable_variables()[0]])
    np.testing.assert_allclose(out, np.maximum(x @ weights, 0), rtol=1e-5, atol=1e-6)


def test_fully_connected_reuse_and_collections():
    x = tf.ones([2, 3])
    layers.fully_connected(x, 2, scope="fc", variables_collections={"weights": ["w"]})
    layers.fully_connected(x, 2, scope="fc", reuse=True, activation_fn=None)
    assert len(tf.trainable_variables()) == 2
    assert [v.name for v in tf.get_collection("w")] == ["fc/weights:0"]


def test_fully_connected_without_biases():
    layers.fully_connected(tf.ones([2, 3]), 2, biases_initializer=None)
    assert [v.name for v in tf.trainable_variables()] == ["fully_connected/weights:0"]


def test_contrib_flatten():
    # layers_test.FlattenTest: rank below 2 is refused.
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(_run(layers.flatten(tf.constant(x))), x.reshape(2, 12))
    with pytest.raises(ValueError, match="at least 2 dimensions|a least 2 dimensions"):
        layers.flatten(tf.ones([3]))
