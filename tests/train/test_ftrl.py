"""Ports of TF 1.15's ftrl_test.py: its expected values, and a numpy reference of the kernel."""

import numpy as np
import pytest

import minitf as tf
from tests.train.test_proximal import _train

pytestmark = pytest.mark.timeout(60)


def _np_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, shrinkage=0.0):
    """TF's FTRL kernel in float64 numpy."""
    new_accum = accum + grad * grad
    p = -lr_power
    linear = linear + grad + 2 * shrinkage * var - (new_accum**p - accum**p) / lr * var
    y = new_accum**p / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / y, 0.0)
    return var, new_accum, linear


@pytest.mark.parametrize("use_resource", [False, True])
def test_without_regularization(use_resource):
    opt = tf.train.FtrlOptimizer(3.0, initial_accumulator_value=0.1)
    grads = [[0.1, 0.2], [0.01, 0.02]]
    v0, v1 = _train(opt, [[0.0, 0.0], [0.0, 0.0]], grads, 3, use_resource)
    np.testing.assert_allclose(v0, [-2.60260963, -4.29698515], rtol=1e-6)
    np.testing.assert_allclose(v1, [-0.28432083, -0.56694895], rtol=1e-6)


@pytest.mark.parametrize(
    ("l1", "l2", "steps"),
    [(0.0, 0.0, 3), (0.001, 0.0, 10), (0.001, 2.0, 10)],
)
def test_with_regularization_matches_the_reference(l1, l2, steps):
    opt = tf.train.FtrlOptimizer(
        3.0, initial_accumulator_value=0.1, l1_regularization_strength=l1,
        l2_regularization_strength=l2,
    )  # fmt: skip
    var_np = [np.array([1.0, 2.0]), np.array([4.0, 3.0])]
    grads = [np.array([0.1, 0.2]), np.array([0.01, 0.02])]
    got = _train(
        opt, [v.astype(np.float32) for v in var_np], [g.astype(np.float32) for g in grads], steps
    )
    for v, g, result in zip(var_np, grads, got):
        state = (v, np.full(2, 0.1), np.zeros(2))
        for _ in range(steps):
            state = _np_ftrl(*state, g, 3.0, l1, l2, -0.5)
        np.testing.assert_allclose(result, state[0], rtol=1e-5)


def test_ftrl_with_l1_l2_expected_values():
    # ftrl_test's testFtrlWithL1_L2.
    opt = tf.train.FtrlOptimizer(
        3.0, initial_accumulator_value=0.1, l1_regularization_strength=0.001,
        l2_regularization_strength=2.0,
    )  # fmt: skip
    v0, v1 = _train(opt, [[1.0, 2.0], [4.0, 3.0]], [[0.1, 0.2], [0.01, 0.02]], 10)
    np.testing.assert_allclose(v0, [-0.24059935, -0.46829352], rtol=1e-5)
    np.testing.assert_allclose(v1, [-0.02406147, -0.04830509], rtol=1e-5)


@pytest.mark.parametrize("use_resource", [False, True])
def test_learning_rate_power_and_shrinkage_use_ftrl_v2(use_resource):
    opt = tf.train.FtrlOptimizer(
        0.5, learning_rate_power=-0.3, l1_regularization_strength=0.01,
        l2_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.2,
    )  # fmt: skip
    (got,) = _train(opt, [[1.0, -2.0]], [[0.3, 0.4]], 4, use_resource)
    op_type = "ResourceApplyFtrlV2" if use_resource else "ApplyFtrlV2"
    assert op_type in {op.type for op in tf.get_default_graph().get_operations()}
    state = (np.array([1.0, -2.0]), np.full(2, 0.1), np.zeros(2))
    for _ in range(4):
        state = _np_ftrl(*state, np.array([0.3, 0.4]), 0.5, 0.01, 0.1, -0.3, shrinkage=0.2)
    np.testing.assert_allclose(got, state[0], rtol=1e-5)


@pytest.mark.parametrize("use_resource", [False, True])
def test_sparse_updates_only_the_given_rows(use_resource):
    w0 = np.array([[1.0, -2.0], [0.3, 4.0], [5.0, 0.01]])
    w = tf.Variable(w0.astype(np.float32), use_resource=use_resource, name="w")
    vals = np.array([[0.1, 0.2], [0.3, -0.4]])
    slices = tf.IndexedSlices(tf.constant(vals, tf.float32), tf.constant([2, 0]))
    opt = tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.05)
    update = opt.apply_gradients([(slices, w)])
    op_type = "ResourceSparseApplyFtrl" if use_resource else "SparseApplyFtrl"
    assert op_type in {op.type for op in tf.get_default_graph().get_operations()}
    grad = np.zeros_like(w0)
    grad[[2, 0]] = vals
    state = [w0.copy(), np.full_like(w0, 0.1), np.zeros_like(w0)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(update)
            new = _np_ftrl(*state, grad, 0.5, 0.05, 0.0, -0.5)
            for a, n in zip(state, new):
                a[[0, 2]] = n[[0, 2]]
        np.testing.assert_allclose(sess.run(w), state[0], rtol=1e-5, atol=1e-7)


def test_slot_names_and_argument_checks():
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    opt = tf.train.FtrlOptimizer(0.1)
    opt.minimize(tf.reduce_sum(w))
    assert opt.get_slot_names() == ["accum", "linear"]
    assert opt.get_slot(w, "accum").op.name == "w/Ftrl"
    assert opt.get_slot(w, "linear").op.name == "w/Ftrl_1"
    assert tf.get_default_graph().get_operation_by_name("Ftrl/update_w/ApplyFtrl")
    with pytest.raises(
        ValueError, match="learning_rate_power 0.500000 needs to be negative or zero"
    ):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength -1.000000 needs to be"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
