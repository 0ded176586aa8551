import numpy as np
import pytest

import minitf as tf
from minitf.ops.training import training_ops

pytestmark = pytest.mark.timeout(60)

f32 = np.float32


def _np_momentum(var, accum, lr, grad, momentum, nesterov=False):
    """TF's ApplyMomentum kernel in float32 numpy."""
    lr, momentum = f32(lr), f32(momentum)
    accum = accum * momentum + grad
    if nesterov:
        return var - (grad * lr + accum * momentum * lr), accum
    return var - accum * lr, accum


@pytest.mark.parametrize("nesterov", [False, True])
def test_dense_updates_match_the_momentum_formula(nesterov):
    w0 = np.array([[1.0, -2.0], [0.5, 3.0]], f32)
    c = np.array([[0.3, -0.7], [1.1, 0.2]], f32)
    w = tf.Variable(w0, name="w")
    # loss = sum(c * w^2) / 2 gives grad = c * w: the gradient changes every step.
    loss = tf.reduce_sum(c * w * w) * 0.5
    train = tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=nesterov).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        var, accum = w0, np.zeros_like(w0)
        for _ in range(5):
            sess.run(train)
            var, accum = _np_momentum(var, accum, 0.1, c * var, 0.9, nesterov)
        got = sess.run(w)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, var, rtol=1e-6)


def test_slot_is_named_var_slash_momentum_colocated_and_not_trainable():
    with tf.device("/job:ps/task:0"):
        w = tf.get_variable("w", [2, 3], initializer=tf.zeros_initializer())
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    train = opt.minimize(tf.reduce_sum(w))
    slot = opt.get_slot(w, "momentum")
    assert slot.op.name == "w/Momentum"
    assert slot.name == "w/Momentum:0"
    assert slot.device == w.device
    assert slot.op.colocation_groups() == [b"loc:@w"]
    assert slot.get_shape().as_list() == [2, 3]
    assert slot not in tf.trainable_variables()
    assert slot in tf.global_variables()
    assert opt.get_slot_names() == ["momentum"]
    assert opt.get_slot(w, "other") is None
    assert opt.variables() == [slot]
    update = tf.get_default_graph().get_operation_by_name("Momentum/update_w/ApplyMomentum")
    assert update.device == w.device
    assert update.colocation_groups() == [b"loc:@w"]
    assert train.name == "Momentum"


def test_slot_starts_at_zero():
    w = tf.Variable(np.ones((2, 3), f32), name="w")
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    opt.minimize(tf.reduce_sum(w))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(opt.get_slot(w, "momentum")), np.zeros((2, 3), f32))


def test_two_optimizers_on_one_variable_get_unique_slot_names():
    w = tf.Variable([1.0, 2.0], name="w")
    a = tf.train.MomentumOptimizer(0.1, 0.9)
    b = tf.train.MomentumOptimizer(0.1, 0.5)
    a.minimize(tf.reduce_sum(w))
    b.minimize(tf.reduce_sum(w))
    assert a.get_slot(w, "momentum").op.name == "w/Momentum"
    assert b.get_slot(w, "momentum").op.name == "w/Momentum_1"


def test_sparse_update_sums_duplicate_indices_before_the_momentum_step():
    w0 = np.arange(8, dtype=f32).reshape(4, 2)
    idx = np.array([3, 1, 3], np.int32)
    c = np.array([[1.0, 2.0], [0.5, -1.0], [-3.0, 0.25]], f32)
    w = tf.Variable(w0, name="w")
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(tf.gather(w, idx) * c))
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "SparseApplyMomentum" in types
    var, accum = w0.copy(), np.zeros_like(w0)
    summed = {3: c[0] + c[2], 1: c[1]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
            for i, g in summed.items():
                accum[i] = accum[i] * f32(0.9) + g
                var[i] = var[i] - accum[i] * f32(0.1)
        got = sess.run(w)
    np.testing.assert_allclose(got, var, rtol=1e-6)


def test_sparse_apply_momentum_kernel_visits_repeated_indices_in_order():
    var0 = np.array([[1.0], [2.0]], f32)
    var = tf.Variable(var0)
    accum = tf.Variable(np.zeros((2, 1), f32))
    grad = np.array([[1.0], [2.0]], f32)
    out = training_ops.sparse_apply_momentum(var, accum, 0.5, grad, [0, 0], 0.9, use_nesterov=True)
    assert out.op.get_attr("Tindices") == tf.int32
    assert out.op.get_attr("use_nesterov") is True
    v, a = var0[0].copy(), np.zeros(1, f32)
    for g in grad:
        a = a * f32(0.9) + g
        v = v - (f32(0.5) * g + f32(0.5) * f32(0.9) * a)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(out)
        np.testing.assert_allclose(sess.run(var), [v, var0[1]], rtol=1e-6)
        np.testing.assert_allclose(sess.run(accum), [a, [0.0]], rtol=1e-6)


def test_sparse_apply_momentum_index_out_of_range():
    var = tf.Variable(np.zeros((2, 1), f32))
    accum = tf.Variable(np.zeros((2, 1), f32))
    out = training_ops.sparse_apply_momentum(var, accum, 0.5, [[1.0]], [5], 0.9)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="Index 5 at offset 0"):
            sess.run(out)


def test_resource_variables_use_resource_ops_and_give_the_same_numbers():
    w0 = np.array([1.0, -2.0, 0.5], f32)
    c = np.array([0.3, -0.7, 1.1], f32)
    emb0 = np.arange(6, dtype=f32).reshape(3, 2)
    w = tf.Variable(w0, use_resource=True, name="w")
    emb = tf.get_variable("emb", initializer=emb0, use_resource=True)
    loss = tf.reduce_sum(c * w * w) * 0.5 + tf.reduce_sum(tf.gather(emb, [2, 0, 2]))
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    train = opt.minimize(loss)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"ResourceApplyMomentum", "ResourceSparseApplyMomentum"} <= types
    assert opt.get_slot(w, "momentum").op.type == "VarHandleOp"
    assert opt.get_slot(emb, "momentum").op.name == "emb/Momentum"
    var, accum = w0, np.zeros_like(w0)
    e, ea = emb0.copy(), np.zeros_like(emb0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
            var, accum = _np_momentum(var, accum, 0.1, c * var, 0.9)
            for i, g in ((2, np.full(2, 2.0, f32)), (0, np.ones(2, f32))):
                ea[i] = ea[i] * f32(0.9) + g
                e[i] = e[i] - ea[i] * f32(0.1)
        got_w, got_e = sess.run([w, emb])
    np.testing.assert_allclose(got_w, var, rtol=1e-6)
    np.testing.assert_allclose(got_e, e, rtol=1e-6)


def test_apply_momentum_runtime_shape_error():
    var = tf.Variable(np.zeros(2, f32))
    accum = tf.Variable(np.zeros(2, f32))
    grad = tf.placeholder(tf.float32)
    out = training_ops.apply_momentum(var, accum, 0.1, grad, 0.9)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="var and grad do not have"):
            sess.run(out, {grad: np.zeros(3, f32)})
