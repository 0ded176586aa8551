"""tf.layers.conv2d and the 2-D pooling layers: TF's test cases, numpy loops as the oracle.

Shapes and variable names are those of TF's ``convolutional_test.py`` and
``pooling_test.py``; values are computed with explicit loops over windows.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

RNG = np.random.RandomState(5)


def _run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def _conv_valid(x, w, stride):
    kh, kw = w.shape[:2]
    rows = (x.shape[1] - kh) // stride + 1
    cols = (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], rows, cols, w.shape[3]))
    for i in range(rows):
        for j in range(cols):
            patch = x[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def _pool_valid(x, size, stride, reduce):
    rows = (x.shape[1] - size) // stride + 1
    cols = (x.shape[2] - size) // stride + 1
    out = np.zeros((x.shape[0], rows, cols, x.shape[3]))
    for i in range(rows):
        for j in range(cols):
            window = x[:, i * stride : i * stride + size, j * stride : j * stride + size, :]
            out[:, i, j, :] = reduce(window, axis=(1, 2))
    return out


def test_conv2d_variables_and_shapes():
    # TF convolutional_test.testConv2D.
    images = tf.random_uniform((5, 7, 9, 4), seed=1)
    layer = tf.layers.Conv2D(32, [3, 3], activation=tf.nn.relu)
    output = layer(images)
    assert output.op.name.startswith("conv2d/")
    assert output.get_shape().as_list() == [5, 5, 7, 32]
    assert layer.kernel.get_shape().as_list() == [3, 3, 4, 32]
    assert layer.bias.get_shape().as_list() == [32]
    assert [v.name for v in tf.trainable_variables()] == ["conv2d/kernel:0", "conv2d/bias:0"]


def test_conv2d_same_padding_and_strides_shapes():
    # TF convolutional_test.testCreateConv2DStrides / testConv2DPaddingSame.
    images = tf.ones((5, 6, 8, 4))
    assert tf.layers.conv2d(images, 32, 3, strides=2).get_shape().as_list() == [5, 2, 3, 32]
    same = tf.layers.conv2d(images, 32, [3, 3], padding="same")
    assert same.get_shape().as_list() == [5, 6, 8, 32]
    assert [v.name for v in tf.trainable_variables()][::2] == [
        "conv2d/kernel:0",
        "conv2d_1/kernel:0",
    ]


def test_conv2d_values_against_numpy():
    x = RNG.randn(2, 6, 5, 3).astype(np.float32)
    layer = tf.layers.Conv2D(4, (3, 2), strides=2, bias_initializer=tf.constant_initializer(0.5))
    y = layer(tf.constant(x))
    out, kernel = _run([y, layer.kernel])
    np.testing.assert_allclose(out, _conv_valid(x, kernel, 2) + 0.5, rtol=1e-4, atol=1e-5)


def test_conv2d_reuse_and_regularizer():
    images = tf.ones((1, 4, 4, 2))
    tf.layers.conv2d(images, 3, 2, name="conv", kernel_regularizer=tf.nn.l2_loss)
    tf.layers.conv2d(images, 3, 2, name="conv", kernel_regularizer=tf.nn.l2_loss, reuse=True)
    assert len(tf.trainable_variables()) == 2
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1


def test_conv2d_bad_arguments():
    # TF convolutional_test.testInvalidDataFormat / testInvalidStrides / testInvalidKernelSize.
    images = tf.ones((5, 7, 9, 3))
    with pytest.raises(ValueError, match="data_format"):
        tf.layers.conv2d(images, 32, 3, data_format="invalid")
    with pytest.raises(ValueError, match="strides"):
        tf.layers.conv2d(images, 32, 3, strides=(1, 2, 3))
    with pytest.raises(ValueError, match="kernel_size"):
        tf.layers.conv2d(images, 32, (1, 2, 3))
    with pytest.raises(ValueError, match="padding"):
        tf.layers.conv2d(images, 32, 3, padding="full")


def test_conv2d_needs_rank_4_and_known_channels():
    # TF convolutional_test.testUnknownInputChannels.
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        tf.layers.conv2d(tf.ones((5, 7, 9)), 32, 3)
    with pytest.raises(ValueError, match="channel dimension of the inputs should be defined"):
        tf.layers.conv2d(tf.placeholder(tf.float32, (5, 7, 9, None)), 32, 3)


def test_max_and_average_pooling_shapes():
    # TF pooling_test.testCreateMaxPooling2D / testCreateAveragePooling2D / padding same.
    images = tf.random_uniform((5, 7, 9, 4))
    assert tf.layers.MaxPooling2D([2, 2], strides=2)(images).get_shape().as_list() == [5, 3, 4, 4]
    assert tf.layers.average_pooling2d(images, (2, 2), 2).get_shape().as_list() == [5, 3, 4, 4]
    same = tf.layers.max_pooling2d(images, 2, 2, padding="same")
    assert same.get_shape().as_list() == [5, 4, 5, 4]
    assert tf.trainable_variables() == []


def test_pooling_values_against_numpy():
    x = RNG.randn(2, 6, 7, 3).astype(np.float32)
    inputs = tf.constant(x)
    max_out, avg_out = _run(
        [tf.layers.max_pooling2d(inputs, 3, 2), tf.layers.average_pooling2d(inputs, 3, 2)]
    )
    np.testing.assert_allclose(max_out, _pool_valid(x, 3, 2, np.max), rtol=1e-6)
    np.testing.assert_allclose(avg_out, _pool_valid(x, 3, 2, np.mean), rtol=1e-5)


def test_small_convnet_trains():
    rng = np.random.RandomState(0)
    x = rng.rand(16, 6, 6, 1).astype(np.float32)
    labels = (x[:, :3].mean(axis=(1, 2, 3)) > x[:, 3:].mean(axis=(1, 2, 3))).astype(np.int32)
    tf.set_random_seed(2)
    hidden = tf.layers.conv2d(tf.constant(x), 4, 3, padding="same", activation=tf.nn.relu)
    pooled = tf.layers.max_pooling2d(hidden, 2, 2)
    logits = tf.layers.dense(tf.layers.flatten(pooled), 2)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(60):
            sess.run(train)
        last = sess.run(loss)
    assert last < 0.3 * first
