"""A slim CNN (``slim = tf.contrib.slim``): arg_scope + conv2d with
normalizer_fn=batch_norm + max_pool2d + fully_connected, trained by SGD. The losses and
moving averages of its first steps are checked against the same network written in
numpy, with gradients by central differences."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

slim = tf.contrib.slim
EPSILON, DECAY, LEARNING_RATE = 0.001, 0.9, 0.5


def _np_conv_same(x, w):
    """A SAME, stride-1 cross-correlation of NHWC ``x`` with a 3x3 ``w``."""
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros(x.shape[:3] + (w.shape[3],))
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            out[:, i, j] = np.einsum("nabc,abco->no", xp[:, i : i + 3, j : j + 3], w)
    return out


def _np_forward(params, images, labels):
    """The loss, and the conv output's batch mean and (unbiased) variance."""
    w1, beta, w2, b2 = params
    conv = _np_conv_same(images, w1)
    mean, variance = conv.mean(axis=(0, 1, 2)), conv.var(axis=(0, 1, 2))
    hidden = np.maximum((conv - mean) / np.sqrt(variance + EPSILON) + beta, 0)
    n, h, w, c = hidden.shape
    pooled = hidden.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
    logits = pooled.reshape(n, -1) @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_softmax[np.arange(n), labels].mean()
    count = n * h * w
    return loss, mean, variance * count / (count - 1)


def _np_sgd_step(params, images, labels, delta=1e-6):
    """One SGD step with the gradient of `_np_forward`'s loss by central differences."""
    stepped = []
    for k, p in enumerate(params):
        grad = np.zeros_like(p)
        for index in np.ndindex(p.shape):
            losses = []
            for sign in (1, -1):
                moved = [q.copy() for q in params]
                moved[k][index] += sign * delta
                losses.append(_np_forward(moved, images, labels)[0])
            grad[index] = (losses[0] - losses[1]) / (2 * delta)
        stepped.append(p - LEARNING_RATE * grad)
    return stepped


def _model(images, params):
    w1, beta, w2, b2 = params
    with slim.arg_scope(
        [slim.conv2d, slim.fully_connected],
        normalizer_fn=slim.batch_norm,
        normalizer_params={"decay": DECAY, "epsilon": EPSILON, "is_training": True},
    ):
        with slim.arg_scope([slim.conv2d], padding="SAME", stride=1):
            net = slim.conv2d(
                images,
                2,
                [3, 3],
                weights_initializer=tf.constant_initializer(w1),
                normalizer_params={
                    "decay": DECAY,
                    "epsilon": EPSILON,
                    "param_initializers": {"beta": tf.constant_initializer(beta)},
                },
                scope="conv1",
            )
        net = slim.max_pool2d(net, [2, 2], scope="pool1")
        net = slim.flatten(net)
        return slim.fully_connected(
            net,
            3,
            activation_fn=None,
            normalizer_fn=None,
            weights_initializer=tf.constant_initializer(w2),
            biases_initializer=tf.constant_initializer(b2),
            scope="logits",
        )


@pytest.mark.timeout(120)
def test_slim_cnn_first_steps_match_numpy():
    rng = np.random.RandomState(7)
    images = rng.randn(4, 6, 6, 1)
    labels = np.array([0, 2, 1, 2])
    params = [rng.randn(3, 3, 1, 2) * 0.5, rng.randn(2) * 0.1, rng.randn(18, 3) * 0.3, rng.randn(3)]
    logits = _model(tf.constant(images), params)
    loss = tf.losses.sparse_softmax_cross_entropy(tf.constant(labels), logits)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(update_ops) == 2  # the conv's batch norm; the logits have no normalizer
    with tf.control_dependencies(update_ops):
        train = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
    assert sorted(v.op.name for v in tf.trainable_variables()) == [
        "conv1/BatchNorm/beta",
        "conv1/weights",
        "logits/biases",
        "logits/weights",
    ]
    moving = [tf.global_variables(f"conv1/BatchNorm/moving_{s}")[0] for s in ("mean", "variance")]

    expected_mean, expected_variance = np.zeros(2), np.ones(2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            want, batch_mean, batch_variance = _np_forward(params, images, labels)
            got, _ = sess.run([loss, train])
            np.testing.assert_allclose(got, want, rtol=1e-6)
            expected_mean = DECAY * expected_mean + (1 - DECAY) * batch_mean
            expected_variance = DECAY * expected_variance + (1 - DECAY) * batch_variance
            np.testing.assert_allclose(sess.run(moving), [expected_mean, expected_variance])
            params = _np_sgd_step(params, images, labels)


def test_slim_names_are_the_contrib_functions():
    for name in ("conv2d", "fully_connected", "max_pool2d", "batch_norm", "flatten", "dropout"):
        assert getattr(slim, name) is getattr(tf.contrib.layers, name)
    assert slim.arg_scope is tf.contrib.framework.arg_scope
    with slim.arg_scope([slim.conv2d], padding="VALID"):
        net = tf.contrib.layers.conv2d(tf.zeros([1, 5, 5, 1]), 1, [3, 3])
    assert net.get_shape().as_list() == [1, 3, 3, 1]
