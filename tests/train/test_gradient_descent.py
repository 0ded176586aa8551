import numpy as np
import pytest

import minitf as tf
from minitf.ops.training import training_ops

pytestmark = pytest.mark.timeout(60)

f32 = np.float32


def _data(n=8, seed=0):
    rng = np.random.RandomState(seed)
    return rng.randn(n, 3).astype(f32), rng.randn(n, 1).astype(f32)


def _numpy_linear_regression_gd(xs, ys, lr, steps):
    """Plain numpy gradient descent on mean((x @ w + b - y)^2), in float32."""
    w = np.zeros((3, 1), f32)
    b = f32(0)
    n = f32(xs.shape[0])
    for _ in range(steps):
        err = xs @ w + b - ys
        dw = f32(2) * xs.T @ err / n
        db = f32(2) * err.sum() / n
        w = w - f32(lr) * dw
        b = b - f32(lr) * db
    return w, b


def test_exact_tf1_linear_regression_program_matches_numpy_gradient_descent():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.train.get_or_create_global_step()
    )
    xs, ys = _data()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(20):
            sess.run(step, {x: xs, y: ys})
        w_val, b_val, gs = sess.run([w, b, tf.train.get_global_step()])
    w_ref, b_ref = _numpy_linear_regression_gd(xs, ys, 0.1, 20)
    assert w_val.dtype == np.float32 and b_val.dtype == np.float32
    np.testing.assert_allclose(w_val, w_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b_val, b_ref, rtol=1e-5, atol=1e-6)
    assert gs == 20


def test_dense_update_is_var_minus_lr_times_grad_in_float32():
    w0 = np.array([1.0, -2.0, 3.0], f32)
    c = np.array([0.3, 0.7, -1.1], f32)
    w = tf.Variable(w0)
    loss = tf.reduce_sum(w * c)
    train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        got = sess.run(w)
    expected = w0
    for _ in range(3):
        expected = expected - c * f32(0.25)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


def test_sparse_gradient_uses_scatter_sub_and_accumulates_duplicate_indices():
    w0 = np.arange(12, dtype=f32).reshape(4, 3)
    idx = np.array([0, 2, 0], np.int32)
    c = np.random.RandomState(1).randn(3, 3).astype(f32)
    w = tf.Variable(w0)
    loss = tf.reduce_sum(tf.gather(w, idx) * c)
    opt = tf.train.GradientDescentOptimizer(0.5)
    grads_and_vars = opt.compute_gradients(loss)
    assert isinstance(grads_and_vars[0][0], tf.IndexedSlices)
    train = opt.apply_gradients(grads_and_vars)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "ScatterSub" in types and "ApplyGradientDescent" not in types
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        got = sess.run(w)
    expected = w0.copy()
    for _ in range(2):
        for i, row in zip(idx, c):
            expected[i] -= row * f32(0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_resource_variables_dense_and_sparse():
    w0 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], f32)
    w = tf.get_variable("w", initializer=w0, use_resource=True)
    v = tf.Variable(np.array([1.0, -1.0], f32), use_resource=True)
    idx = np.array([2, 2, 0], np.int32)
    loss = tf.reduce_sum(tf.gather(w, idx)) + tf.reduce_sum(v * v)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"ResourceApplyGradientDescent", "ResourceScatterAdd"} <= types
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        w_val, v_val = sess.run([w, v])
    w_ref = w0.copy()
    for i in idx:
        w_ref[i] += -np.ones(2, f32) * f32(0.1)
    v_ref = np.array([1.0, -1.0], f32) - f32(2) * np.array([1.0, -1.0], f32) * f32(0.1)
    np.testing.assert_allclose(w_val, w_ref, rtol=1e-6)
    np.testing.assert_allclose(v_val, v_ref, rtol=1e-6)


def test_learning_rate_may_be_a_tensor_or_a_callable():
    lr = tf.placeholder(tf.float32, [])
    w = tf.Variable(np.array([1.0], f32))
    w2 = tf.Variable(np.array([1.0], f32))
    train = tf.train.GradientDescentOptimizer(lr).minimize(tf.reduce_sum(w), var_list=[w])
    train2 = tf.train.GradientDescentOptimizer(lambda: 0.5).minimize(
        tf.reduce_sum(w2), var_list=[w2]
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {lr: 0.25})
        sess.run(train2)
        np.testing.assert_allclose(sess.run(w), [0.75])
        np.testing.assert_allclose(sess.run(w2), [0.5])


def test_apply_gradient_descent_op_structure_and_output_ref():
    w = tf.Variable(np.array([1.0, 2.0], f32), name="w")
    out = training_ops.apply_gradient_descent(w, 0.5, np.array([1.0, 1.0], f32))
    assert out.op.type == "ApplyGradientDescent"
    assert out.dtype == tf.float32._as_ref
    assert out.op.get_attr("T") == tf.float32
    assert out.op.get_attr("use_locking") is False
    assert [t.op.name for t in out.op.inputs][0] == "w"
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(out), [0.5, 1.5])
        np.testing.assert_allclose(sess.run(w), [0.5, 1.5])


def test_apply_gradient_descent_construction_errors():
    w = tf.Variable(np.array([1.0, 2.0], f32))
    with pytest.raises(TypeError, match="l-value"):
        training_ops.apply_gradient_descent(w.value(), 0.5, [1.0, 1.0])
    with pytest.raises(ValueError, match="ApplyGradientDescent"):
        training_ops.apply_gradient_descent(w, 0.5, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="rank 0"):
        training_ops.apply_gradient_descent(w, [0.5], [1.0, 1.0])
    with pytest.raises(TypeError, match="float64"):
        training_ops.apply_gradient_descent(w, tf.constant(0.5, tf.float64), [1.0, 1.0])


def test_apply_gradient_descent_runtime_errors():
    w = tf.Variable(np.array([1.0, 2.0], f32), name="w")
    delta = tf.placeholder(tf.float32)
    out = training_ops.apply_gradient_descent(w, 0.5, delta)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(out, {delta: [1.0, 1.0]})
        sess.run(w.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="same shape"):
            sess.run(out, {delta: [1.0, 1.0, 1.0]})


def test_apply_gradient_descent_checks_every_step_after_steady_updates():
    w = tf.Variable(np.array([1.0, 2.0], f32), name="w")
    delta = tf.placeholder(tf.float32)
    out = training_ops.apply_gradient_descent(w, 0.5, delta)
    want = np.array([1.0, 2.0], f32)
    with tf.Session() as sess:
        sess.run(w.initializer)
        for step in range(3):
            grad = np.array([step, -1.0], f32)
            want = want - grad * f32(0.5)
            np.testing.assert_array_equal(sess.run(out, {delta: grad}), want)
        with pytest.raises(tf.errors.InvalidArgumentError, match="same shape"):
            sess.run(out, {delta: [1.0, 1.0, 1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="same shape"):
            sess.run(out, {delta: [[1.0, 1.0]]})
        np.testing.assert_array_equal(sess.run(out, {delta: [2.0, 2.0]}), want - f32(1.0))


@pytest.mark.parametrize("chunk_bytes", [None, 4096, 1000])
def test_large_updates_in_chunks_are_var_minus_lr_times_grad(monkeypatch, chunk_bytes):
    # Large variables are updated a chunk at a time (the last chunk shorter):
    # the bits of float32 numpy's two passes. A value fetched and still held
    # is not written into; the variable gets a new array instead.
    if chunk_bytes is not None:
        monkeypatch.setattr(training_ops, "DESCENT_CHUNK_BYTES", chunk_bytes)
    rng = np.random.RandomState(3)
    w0 = rng.randn(1100, 513).astype(f32)  # 2.2 MB, not a whole number of chunks
    w = tf.Variable(w0)
    delta = tf.placeholder(tf.float32, w0.shape)
    out = training_ops.apply_gradient_descent(w, f32(0.01), delta)
    want = w0
    with tf.Session() as sess:
        sess.run(w.initializer)
        for step in range(3):
            grad = rng.randn(*w0.shape).astype(f32)
            want = want - grad * f32(0.01)
            held = sess.run(w) if step == 1 else None
            kept = None if held is None else held.copy()
            sess.run(out.op, {delta: grad})
            np.testing.assert_array_equal(sess.run(w), want)
            if held is not None:
                np.testing.assert_array_equal(held, kept)


def test_large_update_with_a_transposed_gradient():
    rng = np.random.RandomState(4)
    w0 = rng.randn(700, 800).astype(f32)
    grad = rng.randn(800, 700).astype(f32).T  # not C-contiguous
    w = tf.Variable(w0)
    out = training_ops.apply_gradient_descent(w, f32(0.5), tf.placeholder_with_default(grad, None))
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(out.op)
        np.testing.assert_array_equal(sess.run(w), w0 - grad * f32(0.5))
