"""Ports of TF 1.15's proximal_gradient_descent_test.py and proximal_adagrad_test.py."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _np_prox(var, grad, rate, l1, l2):
    """The proximal step of TF's kernels, in float64 numpy."""
    prox = var - rate * grad
    if l1 > 0:
        return np.sign(prox) * np.maximum(np.abs(prox) - rate * l1, 0.0) / (1 + rate * l2)
    return prox / (1 + rate * l2)


def _np_prox_adagrad(var, accum, grad, lr, l1, l2):
    accum = accum + grad * grad
    return _np_prox(var, grad, lr / np.sqrt(accum), l1, l2), accum


def _train(opt, var_values, grad_values, steps, use_resource=False):
    variables = [tf.Variable(v, use_resource=use_resource) for v in var_values]
    update = opt.apply_gradients(zip([tf.constant(g) for g in grad_values], variables))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(update)
        return sess.run(variables)


@pytest.mark.parametrize("use_resource", [False, True])
def test_proximal_gradient_descent_without_regularization(use_resource):
    opt = tf.train.ProximalGradientDescentOptimizer(3.0)
    grads = [[0.1, 0.2], [4.0, 3.0]]
    v0, v1 = _train(opt, [[0.0, 0.0], [0.0, 0.0]], grads, 3, use_resource)
    np.testing.assert_allclose(v0, [-0.9, -1.8], rtol=1e-6)
    np.testing.assert_allclose(v1, [-36.0, -27.0], rtol=1e-6)


@pytest.mark.parametrize(("l1", "l2"), [(0.001, 2.0), (0.0, 2.0), (0.5, 0.0)])
def test_proximal_gradient_descent_with_regularization(l1, l2):
    opt = tf.train.ProximalGradientDescentOptimizer(
        3.0, l1_regularization_strength=l1, l2_regularization_strength=l2
    )
    var0, grad0 = np.array([1.0, 2.0]), np.array([0.1, 0.2])
    (got,) = _train(opt, [var0.astype(np.float32)], [grad0.astype(np.float32)], 10)
    for _ in range(10):
        var0 = _np_prox(var0, grad0, 3.0, l1, l2)
    np.testing.assert_allclose(got, var0, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("use_resource", [False, True])
def test_proximal_adagrad_without_regularization(use_resource):
    opt = tf.train.ProximalAdagradOptimizer(3.0, initial_accumulator_value=0.1)
    grads = [[0.1, 0.2], [0.01, 0.02]]
    v0, v1 = _train(opt, [[0.0, 0.0], [0.0, 0.0]], grads, 3, use_resource)
    # proximal_adagrad_test's expected values.
    np.testing.assert_allclose(v0, [-2.60260963, -4.29698515], rtol=1e-6)
    np.testing.assert_allclose(v1, [-0.28432083, -0.56694895], rtol=1e-6)


@pytest.mark.parametrize(("l1", "l2"), [(0.001, 0.0), (0.001, 2.0), (0.0, 2.0)])
def test_proximal_adagrad_with_regularization(l1, l2):
    opt = tf.train.ProximalAdagradOptimizer(
        3.0, 0.1, l1_regularization_strength=l1, l2_regularization_strength=l2
    )
    var, accum = np.array([4.0, 3.0]), np.full(2, 0.1)
    grad = np.array([0.01, 0.02])
    (got,) = _train(opt, [var.astype(np.float32)], [grad.astype(np.float32)], 10)
    for _ in range(10):
        var, accum = _np_prox_adagrad(var, accum, grad, 3.0, l1, l2)
    np.testing.assert_allclose(got, var, rtol=1e-5)


@pytest.mark.parametrize("use_resource", [False, True])
@pytest.mark.parametrize("adagrad", [False, True])
def test_sparse_updates_only_the_given_rows(adagrad, use_resource):
    w0 = np.array([[1.0, -2.0], [0.3, 4.0], [5.0, 0.01]])
    w = tf.Variable(w0.astype(np.float32), use_resource=use_resource, name="w")
    vals = np.array([[0.1, 0.2], [0.3, -0.4]])
    slices = tf.IndexedSlices(tf.constant(vals, tf.float32), tf.constant([2, 0]))
    kwargs = {"l1_regularization_strength": 0.05, "l2_regularization_strength": 0.5}
    if adagrad:
        opt = tf.train.ProximalAdagradOptimizer(0.5, **kwargs)
    else:
        opt = tf.train.ProximalGradientDescentOptimizer(0.5, **kwargs)
    update = opt.apply_gradients([(slices, w)])
    name = "SparseApplyProximalAdagrad" if adagrad else "SparseApplyProximalGradientDescent"
    op_types = {op.type for op in tf.get_default_graph().get_operations()}
    assert ("Resource" + name if use_resource else name) in op_types
    var, accum = w0.copy(), np.full_like(w0, 0.1)
    grad = np.zeros_like(w0)
    grad[[2, 0]] = vals
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(update)
            rows = [0, 2]
            if adagrad:
                new, new_accum = _np_prox_adagrad(var, accum, grad, 0.5, 0.05, 0.5)
                accum[rows] = new_accum[rows]
            else:
                new = _np_prox(var, grad, 0.5, 0.05, 0.5)
            var[rows] = new[rows]
        np.testing.assert_allclose(sess.run(w), var, rtol=1e-5, atol=1e-7)


def test_proximal_adagrad_slot_and_op_names():
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    opt = tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.5)
    opt.minimize(tf.reduce_sum(w))
    assert opt.get_slot_names() == ["accumulator"]
    assert opt.get_slot(w, "accumulator").op.name == "w/ProximalAdagrad"
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("ProximalAdagrad/update_w/ApplyProximalAdagrad")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(opt.get_slot(w, "accumulator")), [0.5, 0.5])
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
