import numpy as np
import pytest

import minitf as tf
from minitf.ops.training import training_ops

pytestmark = pytest.mark.timeout(60)

f32 = np.float32


class _NumpyAdam:
    """TF1's Adam (ApplyAdam kernel and the beta-power updates of _finish) in float32."""

    def __init__(self, shape, lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8):
        self.lr, self.b1, self.b2, self.eps = f32(lr), f32(beta1), f32(beta2), f32(epsilon)
        self.b1p, self.b2p = self.b1, self.b2
        self.m = np.zeros(shape, f32)
        self.v = np.zeros(shape, f32)

    def alpha(self):
        one = f32(1)
        return self.lr * np.sqrt(one - self.b2p) / (one - self.b1p)

    def dense(self, var, g):
        one = f32(1)
        alpha = self.alpha()
        self.m = self.m + (g - self.m) * (one - self.b1)
        self.v = self.v + (g * g - self.v) * (one - self.b2)
        var = var - (self.m * alpha) / (np.sqrt(self.v) + self.eps)
        self._finish()
        return var

    def sparse(self, var, indices, values):
        """TF1's _apply_sparse_shared: decay everything, scatter-add the new terms."""
        one = f32(1)
        alpha = self.alpha()
        self.m = self.m * self.b1
        np.add.at(self.m, indices, values * (one - self.b1))
        self.v = self.v * self.b2
        np.add.at(self.v, indices, (values * values) * (one - self.b2))
        var = var - alpha * self.m / (np.sqrt(self.v) + self.eps)
        self._finish()
        return var

    def _finish(self):
        self.b1p = self.b1p * self.b1
        self.b2p = self.b2p * self.b2


def test_dense_updates_match_tf1_adam():
    w0 = np.array([[1.0, -2.0], [0.5, 3.0]], f32)
    c = np.array([[0.3, -0.7], [1.1, 0.2]], f32)
    w = tf.Variable(w0, name="w")
    loss = tf.reduce_sum(c * w * w) * 0.5
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.minimize(loss)
    ref, var = _NumpyAdam(w0.shape, lr=0.1), w0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(6):
            sess.run(train)
            var = ref.dense(var, c * var)
        got, m, v = sess.run([w, opt.get_slot(w, "m"), opt.get_slot(w, "v")])
        b1p, b2p = sess.run(list(opt._get_beta_accumulators()))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, var, rtol=1e-6)
    np.testing.assert_allclose(m, ref.m, rtol=1e-6)
    np.testing.assert_allclose(v, ref.v, rtol=1e-6)
    np.testing.assert_allclose([b1p, b2p], [ref.b1p, ref.b2p], rtol=1e-6)


def test_slots_and_beta_powers_names_and_placement():
    a = tf.Variable(np.zeros(2, f32), name="b_var")
    b = tf.Variable(np.zeros(3, f32), name="a_var")
    opt = tf.train.AdamOptimizer()
    opt.minimize(tf.reduce_sum(a) + tf.reduce_sum(b))
    assert opt.get_slot(a, "m").op.name == "b_var/Adam"
    assert opt.get_slot(a, "v").op.name == "b_var/Adam_1"
    assert opt.get_slot(b, "m").op.name == "a_var/Adam"
    assert opt.get_slot_names() == ["m", "v"]
    beta1_power, beta2_power = opt._get_beta_accumulators()
    assert beta1_power.op.name == "beta1_power" and beta2_power.op.name == "beta2_power"
    # Colocated with the variable whose name sorts first.
    assert beta1_power.op.colocation_groups() == [b"loc:@a_var"]
    assert beta1_power not in tf.trainable_variables()
    names = [v.op.name for v in opt.variables()]
    assert names == sorted(names) and len(names) == 6
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run([beta1_power, beta2_power]), [0.9, 0.999])


def test_sparse_path_is_tf1_apply_sparse_shared():
    w0 = np.arange(8, dtype=f32).reshape(4, 2) * f32(0.1)
    idx = np.array([1, 3, 1], np.int32)
    c = np.array([[1.0, 2.0], [0.5, -1.0], [-3.0, 0.25]], f32)
    w = tf.Variable(w0, name="w")
    train = tf.train.AdamOptimizer(0.05).minimize(tf.reduce_sum(tf.gather(w, idx) * c))
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "ScatterAdd" in types and "ApplyAdam" not in types
    ref, var = _NumpyAdam(w0.shape, lr=0.05), w0.copy()
    unique = np.array([1, 3])
    summed = np.stack([c[0] + c[2], c[1]])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4):
            sess.run(train)
            var = ref.sparse(var, unique, summed)
        got = sess.run(w)
    np.testing.assert_allclose(got, var, rtol=1e-5, atol=1e-7)


def test_resource_variables_dense_and_sparse():
    w0 = np.array([1.0, -2.0, 0.5], f32)
    e0 = np.ones((3, 2), f32)
    w = tf.Variable(w0, use_resource=True, name="w")
    emb = tf.Variable(e0, use_resource=True, name="emb")
    loss = tf.reduce_sum(w * w) + tf.reduce_sum(tf.gather(emb, [2]) * 3.0)
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.minimize(loss)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"ResourceApplyAdam", "ResourceScatterAdd"} <= types
    assert opt._get_beta_accumulators()[0].op.type == "VarHandleOp"
    ref_w, var = _NumpyAdam(w0.shape, lr=0.1), w0
    ref_e, e = _NumpyAdam(e0.shape, lr=0.1), e0.copy()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
            var = ref_w.dense(var, f32(2) * var)
            e = ref_e.sparse(e, np.array([2]), np.full((1, 2), 3.0, f32))
        got_w, got_e = sess.run([w, emb])
    np.testing.assert_allclose(got_w, var, rtol=1e-6)
    np.testing.assert_allclose(got_e, e, rtol=1e-5)


def test_apply_adam_kernel_with_nesterov():
    var0 = np.array([1.0, -1.0], f32)
    g = np.array([0.5, 2.0], f32)
    var, m, v = (tf.Variable(x) for x in (var0, np.zeros(2, f32), np.zeros(2, f32)))
    out = training_ops.apply_adam(var, m, v, 0.9, 0.999, 0.01, 0.9, 0.999, 1e-8, g,
                                  use_nesterov=True)  # fmt: skip
    assert out.op.type == "ApplyAdam" and out.op.get_attr("use_nesterov") is True
    one, b1, b2 = f32(1), f32(0.9), f32(0.999)
    alpha = f32(0.01) * np.sqrt(one - b2) / (one - b1)
    m_ref = (g - 0) * (one - b1)
    v_ref = (g * g) * (one - b2)
    expected = var0 - ((g * (one - b1) + b1 * m_ref) * alpha) / (np.sqrt(v_ref) + f32(1e-8))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(out), expected, rtol=1e-6)


def test_apply_adam_requires_scalar_hyper_parameters_at_run_time():
    var, m, v = (tf.Variable(np.zeros(2, f32)) for _ in range(3))
    lr = tf.placeholder(tf.float32)
    out = training_ops.apply_adam(var, m, v, 0.9, 0.999, lr, 0.9, 0.999, 1e-8, [1.0, 1.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="lr is not a scalar"):
            sess.run(out, {lr: [0.1, 0.1]})
