"""Ports of TF 1.15's adadelta_test.py: its numpy reference update, dense and sparse."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

RHO, EPSILON = 0.95, 1e-8


def _np_adadelta(var, accum, accum_update, grad, lr):
    """adadelta_test's reference, one step."""
    accum = accum * RHO + (grad**2) * (1 - RHO)
    update = np.sqrt(accum_update + EPSILON) * (1.0 / np.sqrt(accum + EPSILON)) * grad
    accum_update = accum_update * RHO + (update**2) * (1.0 - RHO)
    return var - update * lr, accum, accum_update


@pytest.mark.parametrize("use_resource", [False, True])
@pytest.mark.parametrize("grad", [0.2, 0.1, 0.01])
@pytest.mark.parametrize("lr", [1.0, 0.5, 0.1])
def test_dense_matches_the_reference(lr, grad, use_resource):
    var0 = tf.Variable([1.0, 2.0], use_resource=use_resource, name="v0")
    var1 = tf.Variable([3.0, 4.0], use_resource=use_resource, name="v1")
    grads = tf.constant([grad, grad])
    opt = tf.train.AdadeltaOptimizer(lr, rho=RHO, epsilon=EPSILON)
    update = opt.apply_gradients([(grads, var0), (grads, var1)])
    expected = [np.array(v, np.float64) for v in ([1.0, 2.0], [3.0, 4.0])]
    accum = accum_update = np.zeros(2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4):
            sess.run(update)
            new = [_np_adadelta(e, accum, accum_update, grad, lr) for e in expected]
            expected = [n[0] for n in new]
            accum, accum_update = new[0][1], new[0][2]
            np.testing.assert_allclose(sess.run(opt.get_slot(var0, "accum")), accum, rtol=1e-5)
            np.testing.assert_allclose(
                sess.run(opt.get_slot(var0, "accum_update")), accum_update, rtol=1e-4
            )
            np.testing.assert_allclose(sess.run([var0, var1]), expected, rtol=1e-5)


@pytest.mark.parametrize("use_resource", [False, True])
def test_sparse_updates_only_the_given_rows(use_resource):
    w0 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    w = tf.Variable(w0, use_resource=use_resource, name="w")
    vals = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], np.float32)
    slices = tf.IndexedSlices(tf.constant(vals), tf.constant([2, 0, 2]), tf.constant([3, 2]))
    opt = tf.train.AdadeltaOptimizer(1.0, rho=RHO, epsilon=EPSILON)
    update = opt.apply_gradients([(slices, w)])
    op_type = "ResourceSparseApplyAdadelta" if use_resource else "SparseApplyAdadelta"
    assert op_type in {op.type for op in tf.get_default_graph().get_operations()}
    # Duplicates are summed first: row 2 gets [0.6, 0.8], row 0 [0.3, 0.4].
    summed = np.zeros_like(w0)
    summed[2], summed[0] = vals[0] + vals[2], vals[1]
    var, accum, accum_update = w0.astype(np.float64), np.zeros_like(w0), np.zeros_like(w0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(update)
            new_var, new_accum, new_update = _np_adadelta(var, accum, accum_update, summed, 1.0)
            rows = [0, 2]
            var[rows], accum[rows], accum_update[rows] = (
                new_var[rows], new_accum[rows], new_update[rows]
            )  # fmt: skip
        np.testing.assert_allclose(sess.run(w), var, rtol=1e-5)
        np.testing.assert_allclose(sess.run(opt.get_slot(w, "accum")), accum, rtol=1e-5)


def test_slot_names():
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    opt = tf.train.AdadeltaOptimizer()
    opt.minimize(tf.reduce_sum(w))
    assert opt.get_slot_names() == ["accum", "accum_update"]
    assert opt.get_slot(w, "accum").op.name == "w/Adadelta"
    assert opt.get_slot(w, "accum_update").op.name == "w/Adadelta_1"
    assert tf.get_default_graph().get_operation_by_name("Adadelta/update_w/ApplyAdadelta")
