"""Variable constraints under ``minimize``: TF 1.15's optimizer assigns ``constraint(var)``
after each dense update (ref and resource variables) and refuses sparse updates of a
constrained variable. Expected values: the update and the projection done in numpy."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def max_norm(limit, axis=0):
    """Keras' MaxNorm: rescale each column whose L2 norm exceeds ``limit``."""

    def constraint(w):
        norms = tf.sqrt(tf.reduce_sum(tf.square(w), axis=axis, keepdims=True))
        return w * (tf.clip_by_value(norms, 0.0, limit) / (norms + 1e-7))

    return constraint


def np_max_norm(w, limit, axis=0):
    norms = np.sqrt(np.sum(w**2, axis=axis, keepdims=True))
    return w * (np.clip(norms, 0.0, limit) / (norms + 1e-7))


def test_dense_kernel_max_norm_after_sgd_steps():
    rng = np.random.RandomState(0)
    x, y = rng.randn(8, 3).astype(np.float32), rng.randn(8, 2).astype(np.float32)
    w0 = rng.randn(3, 2).astype(np.float32) * 3
    out = tf.layers.dense(
        x,
        2,
        use_bias=False,
        kernel_initializer=tf.constant_initializer(w0),
        kernel_constraint=max_norm(1.0),
    )
    loss = tf.reduce_mean(tf.square(out - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    (kernel,) = tf.trainable_variables()
    w = w0.astype(np.float64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
            grad = 2 * x.T @ (x @ w - y) / y.size
            w = np_max_norm(w - 0.1 * grad, 1.0)
            np.testing.assert_allclose(sess.run(kernel), w, rtol=1e-5, atol=1e-6)
    assert np.all(np.linalg.norm(w, axis=0) <= 1.0 + 1e-6)


@pytest.mark.parametrize("use_resource", [False, True])
def test_get_variable_non_neg_after_an_adam_step(use_resource):
    w0 = np.array([0.0005, 1.0, -0.5], np.float32)
    v = tf.get_variable(
        "v",
        initializer=w0,
        constraint=lambda t: tf.maximum(t, 0.0),
        use_resource=use_resource,
    )
    assert (v.op.type == "VarHandleOp") == use_resource
    train = tf.train.AdamOptimizer(0.001).minimize(tf.reduce_sum(v * [1.0, -1.0, 1.0]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        value = sess.run(v)
    # Adam's first step moves each weight by lr * sign(g) (m_hat / sqrt(v_hat) = g / |g|).
    step = 0.001 * np.array([1.0, -1.0, 1.0]) / (1.0 + 1e-8)
    np.testing.assert_allclose(value, np.maximum(w0 - step, 0.0), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("use_resource", [False, True])
def test_the_constraint_reads_the_updated_value(use_resource):
    # Updated [2, 3] -> [1.5, 1.5]; a read before the update would give [1, 1.5].
    v = tf.get_variable(
        "v",
        initializer=[1.0, 2.0],
        constraint=lambda t: tf.minimum(t, 1.5),
        use_resource=use_resource,
    )
    train = tf.train.GradientDescentOptimizer(1.0).minimize(-tf.reduce_sum(v))
    assert "Minimum" in [o.type for o in tf.get_default_graph().get_operations()]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(v), [1.5, 1.5])


def test_unconstrained_variables_are_not_projected():
    v = tf.Variable([1.0, 2.0])
    train = tf.train.GradientDescentOptimizer(1.0).minimize(-tf.reduce_sum(v))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(v), [2.0, 3.0])


@pytest.mark.parametrize("use_resource", [False, True])
def test_a_sparse_update_of_a_constrained_variable_is_refused(use_resource):
    table = tf.get_variable(
        "table",
        initializer=np.ones((4, 2), np.float32),
        constraint=lambda t: tf.maximum(t, 0.0),
        use_resource=use_resource,
    )
    loss = tf.reduce_sum(tf.nn.embedding_lookup(table, [0, 2]))
    with pytest.raises(
        RuntimeError, match="Cannot use a constraint function on a sparse variable."
    ):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss)


def test_conv2d_layer_kernel_constraint():
    x = np.ones((1, 3, 3, 1), np.float32)
    tf.layers.conv2d(
        x, 1, 2, kernel_initializer=tf.ones_initializer(), kernel_constraint=lambda k: k * 0.0
    )
    loss = tf.reduce_sum(tf.trainable_variables()[0])
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_array_equal(sess.run(tf.trainable_variables()[0]), np.zeros((2, 2, 1, 1)))
