"""tf.layers.dense / flatten / dropout: ports of TF's ``layers/core_test.py`` and numpy oracles.

Variable names and counts are those TF's tests assert; outputs are checked
against numpy computed from the variables' values.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

RNG = np.random.RandomState(7)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def _names(variables):
    return [v.name for v in variables]


def test_dense_layer_properties_and_variable_names():
    dense = tf.layers.Dense(2, activation=tf.nn.relu, name="my_dense")
    assert dense.units == 2 and dense.activation is tf.nn.relu and dense.name == "my_dense"
    assert dense.use_bias and dense.kernel is None
    dense(tf.ones([5, 3]))
    assert _names(dense.trainable_variables) == ["my_dense/kernel:0", "my_dense/bias:0"]
    assert dense.kernel.get_shape().as_list() == [3, 2]
    assert dense.bias.get_shape().as_list() == [2]
    assert dense.scope_name == "my_dense"


def test_dense_default_names_are_unique_per_layer():
    x = tf.ones([2, 3])
    tf.layers.dense(x, 2)
    tf.layers.dense(x, 2)
    tf.layers.Dense(2)(x)
    assert _names(tf.trainable_variables()) == [
        "dense/kernel:0",
        "dense/bias:0",
        "dense_1/kernel:0",
        "dense_1/bias:0",
        "dense_2/kernel:0",
        "dense_2/bias:0",
    ]


def test_scope_name_before_first_call_raises():
    with pytest.raises(ValueError, match="has not been used yet"):
        _ = tf.layers.Dense(2).scope_name


def test_dense_output_is_activation_of_matmul_plus_bias():
    x = RNG.randn(4, 3).astype(np.float32)
    layer = tf.layers.Dense(2, activation=tf.nn.relu, bias_initializer=tf.ones_initializer())
    y = layer(tf.constant(x))
    out, kernel, bias = _run([y, layer.kernel, layer.bias])
    np.testing.assert_allclose(out, np.maximum(x @ kernel + bias, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(bias, [1.0, 1.0])


def test_dense_on_rank_3_inputs_multiplies_the_last_axis():
    x = RNG.randn(2, 4, 3).astype(np.float32)
    inputs = tf.placeholder(tf.float32, [None, 4, 3])
    layer = tf.layers.Dense(5)
    y = layer(inputs)
    assert y.get_shape().as_list() == [None, 4, 5]
    out, kernel, bias = _run([y, layer.kernel, layer.bias], {inputs: x})
    np.testing.assert_allclose(
        out, np.einsum("bij,jk->bik", x, kernel) + bias, rtol=1e-5, atol=1e-6
    )


def test_dense_no_bias():
    layer = tf.layers.Dense(2, use_bias=False)
    layer(tf.ones([1, 3]))
    assert _names(layer.variables) == ["dense/kernel:0"]
    assert layer.bias is None


def test_dense_non_trainable():
    layer = tf.layers.Dense(2, trainable=False)
    layer(tf.ones([1, 3]))
    assert layer.trainable_variables == []
    assert len(layer.non_trainable_variables) == 2
    assert tf.trainable_variables() == []


def test_layer_called_twice_shares_its_variables():
    layer = tf.layers.Dense(2)
    a = layer(tf.ones([1, 3]))
    b = layer(tf.ones([1, 3]))
    assert len(tf.global_variables()) == 2
    np.testing.assert_allclose(*_run([a, b]))


def test_functional_dense_reuse_by_name():
    # TF core_test.testFunctionalDenseTwiceReuse.
    x = tf.ones([2, 3])
    tf.layers.dense(x, 2, name="my_dense")
    tf.layers.dense(x, 2, name="my_dense", reuse=True)
    assert _names(tf.trainable_variables()) == ["my_dense/kernel:0", "my_dense/bias:0"]


def test_functional_dense_same_name_without_reuse_raises():
    x = tf.ones([2, 3])
    tf.layers.dense(x, 2, name="my_dense")
    with pytest.raises(ValueError, match="my_dense/kernel already exists"):
        tf.layers.dense(x, 2, name="my_dense")


def test_functional_dense_reuse_from_variable_scope():
    # TF core_test.testFunctionalDenseTwiceReuseFromScope.
    x = tf.ones([2, 3])
    with tf.variable_scope("scope"):
        tf.layers.dense(x, 2, name="my_dense")
    with tf.variable_scope("scope", reuse=True):
        tf.layers.dense(x, 2, name="my_dense")
    assert _names(tf.trainable_variables()) == ["scope/my_dense/kernel:0", "scope/my_dense/bias:0"]


def test_functional_dense_initializer_from_scope():
    # TF core_test.testFunctionalDenseInitializerFromScope.
    with tf.variable_scope("scope", initializer=tf.ones_initializer()):
        tf.layers.dense(tf.ones([3, 2]), 3)
    kernel, bias = _run(tf.global_variables())
    np.testing.assert_array_equal(kernel, np.ones([2, 3]))
    np.testing.assert_array_equal(bias, np.zeros([3]))


def test_dense_kernel_default_is_glorot_uniform():
    fan_in, fan_out = 200, 300
    layer = tf.layers.Dense(fan_out)
    layer(tf.ones([1, fan_in]))
    tf.set_random_seed(1)
    kernel = _run(layer.kernel)
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(kernel).max() <= limit
    # Uniform on [-limit, limit]: variance limit**2 / 3 = 2 / (fan_in + fan_out).
    np.testing.assert_allclose(kernel.var(), 2.0 / (fan_in + fan_out), rtol=0.05)
    assert abs(kernel.mean()) < 0.01


def test_dense_regularizers_go_to_the_collection_and_losses():
    # TF core_test.testKernelRegularizer / testBiasRegularizer / testActivityRegularizer.
    def regularizer(x):
        return tf.reduce_sum(x) * 1e-3

    layer = tf.layers.Dense(
        2,
        kernel_regularizer=regularizer,
        bias_regularizer=regularizer,
        activity_regularizer=regularizer,
        bias_initializer=tf.ones_initializer(),
    )
    y = layer(tf.ones([5, 3]))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 3 and layer.losses == losses
    values, kernel, out = _run([losses, layer.kernel, y])
    np.testing.assert_allclose(values[0], kernel.sum() * 1e-3, rtol=1e-5)
    np.testing.assert_allclose(values[1], 2e-3, rtol=1e-5)
    np.testing.assert_allclose(values[2], out.sum() * 1e-3, rtol=1e-5)


def test_reused_layer_adds_its_regularizer_loss_once():
    x = tf.ones([2, 3])
    tf.layers.dense(x, 2, name="d", kernel_regularizer=tf.nn.l2_loss)
    tf.layers.dense(x, 2, name="d", kernel_regularizer=tf.nn.l2_loss, reuse=True)
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1


def test_dense_constraint_is_recorded_on_the_variable():
    def constraint(x):
        return x / 10.0

    layer = tf.layers.Dense(2, kernel_constraint=constraint, bias_constraint=constraint)
    layer(tf.ones([1, 3]))
    assert layer.kernel.constraint is constraint and layer.bias.constraint is constraint


def test_dense_rank_1_input_is_an_error():
    with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
        tf.layers.dense(tf.ones([3]), 2)


def test_dense_unknown_last_dimension_is_an_error():
    with pytest.raises(
        ValueError, match="last dimension of the inputs to `Dense` should be defined"
    ):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)


def test_dense_ops_go_in_the_layer_name_scope():
    layer = tf.layers.Dense(2)
    y1 = layer(tf.ones([1, 3]))
    y2 = layer(tf.ones([1, 3]))
    assert y1.op.name.startswith("dense/") and y2.op.name.startswith("dense/")


def test_flatten_shapes_and_order():
    # TF core_test FlattenTest.testCreateFlatten / testFlattenValue.
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    inputs = tf.placeholder(tf.float32, [None, 3, 4])
    y = tf.layers.flatten(inputs)
    assert y.get_shape().as_list() == [None, 12]
    np.testing.assert_array_equal(_run(y, {inputs: x}), x.reshape(2, 12))


def test_flatten_channels_first_moves_channels_last():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = tf.layers.Flatten(data_format="channels_first")(tf.constant(x))
    np.testing.assert_array_equal(_run(y), x.transpose(0, 2, 1).reshape(2, 12))


def test_flatten_unknown_inner_dimension():
    y = tf.layers.flatten(tf.placeholder(tf.float32, [5, None, 2]))
    assert y.get_shape().as_list() == [5, None]


def test_dropout_not_training_is_identity():
    x = RNG.randn(5, 5).astype(np.float32)
    np.testing.assert_array_equal(_run(tf.layers.dropout(tf.constant(x), 0.5)), x)


def test_dropout_training_zeroes_or_scales():
    # TF core_test.testDropoutProperties/testBooleanLearningPhase: kept values are x / (1 - rate).
    y = _run(tf.layers.dropout(tf.ones([100, 100]), rate=0.75, training=True))
    assert set(np.unique(y)) <= {0.0, 4.0}
    assert 0.2 < (y == 4.0).mean() < 0.3


def test_dropout_training_tensor_chooses_at_run_time():
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.Dropout(rate=0.5)(tf.ones([50, 50]), training=training)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {training: False}), np.ones([50, 50]))
        dropped = sess.run(y, {training: True})
    assert set(np.unique(dropped)) == {0.0, 2.0}


def test_dropout_noise_shape_drops_whole_rows():
    y = _run(tf.layers.dropout(tf.ones([20, 8]), 0.5, noise_shape=[20, 1], training=True))
    for row in y:
        assert len(set(row)) == 1


def test_small_model_trains():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 2).astype(np.float32)
    labels = (x[:, 0] * x[:, 1] > 0).astype(np.int32)
    tf.set_random_seed(3)
    inputs = tf.placeholder(tf.float32, [None, 2])
    hidden = tf.layers.dense(inputs, 16, activation=tf.nn.tanh)
    logits = tf.layers.dense(hidden, 2)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {inputs: x})
        for _ in range(200):
            sess.run(train, {inputs: x})
        last = sess.run(loss, {inputs: x})
    assert first > 0.6 and last < 0.2
