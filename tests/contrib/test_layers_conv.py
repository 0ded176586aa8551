"""tf.contrib.layers.conv2d, max_pool2d, avg_pool2d and dropout: ports of contrib's
``layers_test.py`` (names, shapes, variables, collections), values by numpy."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

layers = tf.contrib.layers


def _named(name):
    return [v for v in tf.global_variables() if v.op.name.split("/")[-1] == name]


def _np_conv_same(x, w):
    """A SAME, stride-1 cross-correlation of NHWC ``x`` with ``w`` by a loop."""
    kh, kw = w.shape[:2]
    top, left = (kh - 1) // 2, (kw - 1) // 2
    xp = np.pad(x, ((0, 0), (top, kh - 1 - top), (left, kw - 1 - left), (0, 0)))
    out = np.zeros(x.shape[:3] + (w.shape[3],))
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            out[:, i, j] = np.einsum("nabc,abco->no", xp[:, i : i + kh, j : j + kw], w)
    return out


def test_create_conv_names_shapes_and_variables():
    images = np.random.uniform(size=(5, 7, 9, 4)).astype(np.float32)
    output = layers.convolution2d(images, 32, [3, 3])
    assert output.op.name == "Conv/Relu"
    assert output.get_shape().as_list() == [5, 7, 9, 32]
    assert _named("weights")[0].get_shape().as_list() == [3, 3, 4, 32]
    assert _named("biases")[0].get_shape().as_list() == [32]
    assert [v.op.name for v in tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)] == [
        "Conv/weights",
        "Conv/biases",
    ]
    assert layers.conv2d is layers.convolution2d


def test_conv_values_are_relu_of_the_convolution_plus_bias():
    rng = np.random.RandomState(0)
    x, w, b = rng.randn(2, 5, 6, 3), rng.randn(3, 2, 3, 4), rng.randn(4)
    y = layers.conv2d(
        tf.constant(x),
        4,
        [3, 2],
        weights_initializer=tf.constant_initializer(w),
        biases_initializer=tf.constant_initializer(b),
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), np.maximum(_np_conv_same(x, w) + b, 0), rtol=1e-10)


def test_default_weights_are_xavier_uniform():
    layers.conv2d(tf.zeros([1, 8, 8, 16]), 32, 5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w, b = sess.run([_named("weights")[0], _named("biases")[0]])
    # fan_in = 5*5*16, fan_out = 5*5*32: limit sqrt(6 / (fan_in + fan_out)).
    limit = np.sqrt(6.0 / (25 * 16 + 25 * 32))
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.9 * limit
    np.testing.assert_array_equal(b, np.zeros(32))


@pytest.mark.parametrize(
    "kwargs, name, shape",
    [
        ({"stride": 2}, "Conv/Relu", [5, 4, 5, 32]),  # ceil(7 / 2), ceil(9 / 2)
        ({"padding": "VALID"}, "Conv/Relu", [5, 5, 7, 32]),
        ({"activation_fn": None}, "Conv/BiasAdd", [5, 7, 9, 32]),
        ({"scope": "conv1"}, "conv1/Relu", [5, 7, 9, 32]),
        ({"rate": 2, "padding": "VALID"}, "Conv/Relu", [5, 3, 5, 32]),
    ],
)
def test_conv_arguments(kwargs, name, shape):
    output = layers.conv2d(tf.zeros([5, 7, 9, 3]), 32, [3, 3], **kwargs)
    assert output.op.name == name
    assert output.get_shape().as_list() == shape


def test_kernel_size_from_a_tensor_shape_makes_a_fully_connected_conv():
    images = tf.zeros([5, 7, 9, 32])
    output = layers.conv2d(images, 64, images.get_shape()[1:3], padding="VALID")
    assert output.get_shape().as_list() == [5, 1, 1, 64]


def test_nchw_builds_channels_first():
    output = layers.conv2d(tf.zeros([5, 4, 7, 9]), 32, [3, 3], data_format="NCHW")
    assert output.get_shape().as_list() == [5, 32, 7, 9]
    assert _named("weights")[0].get_shape().as_list() == [3, 3, 4, 32]


def test_bad_rank_and_data_format():
    with pytest.raises(ValueError, match="Convolution expects input with rank 4, got 5"):
        layers.convolution2d(tf.zeros([5, 6, 7, 9, 3]), 32, 3)
    with pytest.raises(ValueError, match="Invalid data_format: 'CHWN'"):
        layers.convolution2d(tf.zeros([5, 7, 9, 3]), 32, 3, data_format="CHWN")


def test_weights_regularizer_is_l2_of_the_weights():
    layers.conv2d(
        tf.ones([5, 7, 9, 3]), 32, [3, 3], weights_regularizer=layers.l2_regularizer(0.01)
    )
    (wd,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert wd.op.name == "Conv/kernel/Regularizer/l2_regularizer"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w, loss = sess.run([_named("weights")[0], wd])
    np.testing.assert_allclose(loss, 0.01 * np.sum(w**2) / 2, rtol=1e-5)


def test_reuse_and_unique_scopes():
    images = tf.zeros([5, 7, 9, 3])
    layers.conv2d(images, 32, [3, 3], scope="conv1")
    layers.conv2d(images, 32, [3, 3], scope="conv1", reuse=True)
    assert len(tf.global_variables()) == 2
    layers.conv2d(images, 32, [3, 3])
    second = layers.conv2d(images, 32, [3, 3])
    assert len(tf.global_variables()) == 6
    assert second.op.name == "Conv_1/Relu"


def test_normalizer_replaces_the_biases():
    calls = []

    def normalizer(x, scale):
        calls.append(x.op.type)
        return x * scale

    layers.conv2d(
        tf.zeros([1, 4, 4, 2]), 3, 2, normalizer_fn=normalizer, normalizer_params={"scale": 2.0}
    )
    assert calls == ["Conv2D"]
    assert _named("biases") == []


def test_collections_and_aliases():
    with tf.name_scope("fe"):
        conv = layers.conv2d(
            tf.zeros([5, 7, 9, 3]),
            32,
            [3, 3],
            outputs_collections="outputs",
            variables_collections={"weights": ["w"], "biases": ["b"]},
            scope="Conv",
        )
    (collected,) = tf.get_collection("outputs")
    assert collected is conv
    assert collected.aliases == ["Conv"]
    assert [v.op.name for v in tf.get_collection("w")] == ["Conv/weights"]
    assert [v.op.name for v in tf.get_collection("b")] == ["Conv/biases"]


def test_not_trainable():
    layers.conv2d(tf.zeros([1, 4, 4, 2]), 3, 2, trainable=False)
    assert tf.trainable_variables() == []
    assert len(tf.global_variables()) == 2


# --- pools and dropout ------------------------------------------------------------------


@pytest.mark.parametrize(
    "pool, op_type, reduce",
    [(layers.max_pool2d, "MaxPool", np.max), (layers.avg_pool2d, "AvgPool", np.mean)],
)
def test_pools_default_to_stride_2_valid(pool, op_type, reduce):
    x = np.random.RandomState(1).randn(5, 3, 6, 3)
    output = pool(x, [3, 3])
    scope = "MaxPool2D" if op_type == "MaxPool" else "AvgPool2D"
    assert output.op.name == f"{scope}/{op_type}"
    assert output.get_shape().as_list() == [5, 1, 2, 3]
    expected = np.stack([reduce(x[:, 0:3, c : c + 3], axis=(1, 2)) for c in (0, 2)], axis=1)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(output)[:, 0], expected, rtol=1e-10)


def test_pool_scope_padding_and_collections():
    images = tf.zeros([5, 3, 6, 3])
    assert layers.max_pool2d(images, [3, 3], scope="pool1").op.name == "pool1/MaxPool"
    assert layers.avg_pool2d(images, [3, 3], padding="SAME").get_shape().as_list() == [5, 2, 3, 3]
    assert layers.max_pool2d(images, 3, stride=1, padding="SAME").get_shape().as_list() == [
        5,
        3,
        6,
        3,
    ]
    output = layers.avg_pool2d(images, [3, 3], outputs_collections="outputs")
    assert tf.get_collection("outputs") == [output]
    assert output.aliases == ["AvgPool2D_1"]
    nchw = layers.max_pool2d(tf.zeros([5, 2, 3, 6]), [3, 3], data_format="NCHW")
    assert nchw.get_shape().as_list() == [5, 2, 1, 2]


def test_pool_data_format_is_checked():
    with pytest.raises(ValueError, match="data_format has to be either NCHW or NHWC."):
        layers.max_pool2d(tf.zeros([5, 3, 6, 3]), [3, 3], data_format="CHWN")


def test_dropout_keeps_about_keep_prob_and_scales():
    x = tf.ones([100, 100])
    y = layers.dropout(x, keep_prob=0.3, seed=1)
    assert y.op.name.startswith("Dropout/")
    out = tf.Session().run(y)
    kept = out[out != 0]
    np.testing.assert_allclose(kept, 1 / 0.3, rtol=1e-6)
    assert abs(kept.size / out.size - 0.3) < 0.03


def test_dropout_not_training_passes_through():
    x = np.arange(6.0).reshape(2, 3)
    is_training = tf.placeholder(tf.bool, [])
    y = layers.dropout(x, 0.5, is_training=is_training, outputs_collections=["outputs"])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {is_training: False}), x)
    assert y.aliases == ["Dropout"]
    assert layers.dropout(tf.constant(x), is_training=False).op.type != "Mul"
