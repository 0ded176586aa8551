import numpy as np
import pytest

import minitf as tf
from minitf.ops.training import training_ops

pytestmark = pytest.mark.timeout(60)

f32 = np.float32


def _np_adagrad(var, accum, lr, grad):
    """TF's ApplyAdagrad kernel in float32 numpy (rsqrt as 1 / sqrt)."""
    accum = accum + grad * grad
    return var - grad * f32(lr) * (f32(1) / np.sqrt(accum)), accum


def test_dense_updates_match_the_adagrad_formula():
    w0 = np.array([[1.0, -2.0], [0.5, 3.0]], f32)
    c = np.array([[0.3, -0.7], [1.1, 0.2]], f32)
    w = tf.Variable(w0, name="w")
    loss = tf.reduce_sum(c * w * w) * 0.5
    train = tf.train.AdagradOptimizer(0.2).minimize(loss)
    var, accum = w0, np.full_like(w0, 0.1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run(train)
            var, accum = _np_adagrad(var, accum, 0.2, c * var)
        got = sess.run(w)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, var, rtol=1e-6)


def test_accumulator_slot_name_and_initial_value():
    w = tf.Variable(np.zeros((3,), f32), name="w")
    opt = tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.5)
    opt.minimize(tf.reduce_sum(w))
    acc = opt.get_slot(w, "accumulator")
    assert acc.op.name == "w/Adagrad"
    assert acc.op.colocation_groups() == [b"loc:@w"]
    assert opt.get_slot_names() == ["accumulator"]
    assert tf.get_default_graph().get_operation_by_name("Adagrad/update_w/ApplyAdagrad")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(acc), np.full(3, 0.5, f32))


def test_initial_accumulator_value_must_be_positive():
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)


def test_sparse_update_sums_duplicates_then_applies_sparse_apply_adagrad():
    w0 = np.arange(8, dtype=f32).reshape(4, 2)
    idx = np.array([1, 3, 1], np.int32)
    c = np.array([[1.0, 2.0], [0.5, -1.0], [-3.0, 0.25]], f32)
    w = tf.Variable(w0, name="w")
    train = tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(tf.gather(w, idx) * c))
    assert "SparseApplyAdagrad" in {op.type for op in tf.get_default_graph().get_operations()}
    var, accum = w0.copy(), np.full_like(w0, 0.1)
    summed = {1: c[0] + c[2], 3: c[1]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
            for i, g in summed.items():
                accum[i] = accum[i] + g * g
                var[i] = var[i] - f32(0.1) * g * (f32(1) / np.sqrt(accum[i]))
        got = sess.run(w)
    np.testing.assert_allclose(got, var, rtol=1e-6)


def test_sparse_apply_adagrad_kernel_on_a_vector_uses_lr_g_over_sqrt():
    var0 = np.array([1.0, 2.0, 3.0], f32)
    var = tf.Variable(var0)
    accum = tf.Variable(np.full(3, 0.1, f32))
    out = training_ops.sparse_apply_adagrad(var, accum, 0.5, np.array([0.3, 0.4], f32), [2, 2])
    v, a = var0.copy(), np.full(3, 0.1, f32)
    for g in (f32(0.3), f32(0.4)):
        a[2] = a[2] + g * g
        v[2] = v[2] - f32(0.5) * g / np.sqrt(a[2])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(out)
        np.testing.assert_allclose(sess.run(var), v, rtol=1e-6)
        np.testing.assert_allclose(sess.run(accum), a, rtol=1e-6)


def test_resource_variables():
    w0 = np.array([1.0, -2.0, 0.5], f32)
    w = tf.Variable(w0, use_resource=True, name="w")
    emb = tf.Variable(np.ones((3, 2), f32), use_resource=True, name="emb")
    loss = tf.reduce_sum(w * w) + tf.reduce_sum(tf.gather(emb, [0, 0]))
    train = tf.train.AdagradOptimizer(0.1).minimize(loss)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"ResourceApplyAdagrad", "ResourceSparseApplyAdagrad"} <= types
    var, accum = w0, np.full_like(w0, 0.1)
    e, ea = np.ones((3, 2), f32), np.full((3, 2), 0.1, f32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(train)
            var, accum = _np_adagrad(var, accum, 0.1, f32(2) * var)
            g = np.full(2, 2.0, f32)
            ea[0] = ea[0] + g * g
            e[0] = e[0] - f32(0.1) * g * (f32(1) / np.sqrt(ea[0]))
        got_w, got_e = sess.run([w, emb])
    np.testing.assert_allclose(got_w, var, rtol=1e-6)
    np.testing.assert_allclose(got_e, e, rtol=1e-6)
