"""tf.TensorArray inside tf.while_loop, as TF1 programs use it, and gradients through such loops.

A TensorArray is a loop variable through its flow: written in the body
(``ta = ta.write(i, x)``), stacked after the loop; or unstacked before the
loop and read inside it. Ports of TF's ``tensor_array_ops_test.py`` loop
cases keep TF's expected values; the others are checked against numpy and
against finite differences (``tf.test.compute_gradient_error``).
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def _write_pack_loop(dynamic_size):
    """TF's ``_testWhileLoopWritePackGradients`` graph: out[t] = v0[t] + var + state[t]."""
    v0 = tf.identity(np.arange(3 * 5, dtype=np.float32).reshape(3, 5))
    var = tf.Variable(np.arange(100, 105, dtype=np.float32))
    state0 = tf.identity(np.array([1] * 5, dtype=np.float32))
    ta = tf.TensorArray(
        dtype=tf.float32,
        tensor_array_name="foo",
        size=0 if dynamic_size else 3,
        dynamic_size=dynamic_size,
    )
    time_0 = tf.identity(0)

    def body(time, ta_t, state):
        sliced = tf.squeeze(tf.slice(v0, begin=tf.stack([time, 0]), size=[1, -1]))
        out = sliced + var + state
        state += sliced
        return (time + 1, ta_t.write(time, out), state)

    _, h_final, _ = tf.while_loop(
        cond=lambda time, unused_1, unused_2: time < 3,
        body=body,
        loop_vars=(time_0, ta, state0),
        shape_invariants=(time_0.get_shape(), tf.TensorShape(None), tf.TensorShape(None)),
        parallel_iterations=3,
    )
    return v0, var, state0, h_final


@pytest.mark.parametrize("dynamic_size", [False, True])
def test_while_loop_write_pack_gradients(dynamic_size):
    # TF's testWhileLoopWritePackGradients and testWhileLoopDynamicWritePackGradients.
    v0, var, state0, h_final = _write_pack_loop(dynamic_size)
    assert isinstance(h_final, tf.TensorArray)
    vout = h_final.stack()
    grad_val = -np.arange(3 * 5, dtype=np.float32).reshape(3, 5)
    v0_grad = tf.gradients([vout], [v0], [grad_val])[0]
    state0_grad = tf.gradients([vout], [state0], [grad_val])[0]
    var_grad = tf.gradients([vout], [var], [grad_val])[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        state0_t, var_t, v0_t, vout_t, v0_grad_t, var_grad_t, state0_grad_t = sess.run(
            [state0, var, v0, vout, v0_grad, var_grad, state0_grad]
        )
        (just_v0_grad_t,) = sess.run([v0_grad])
    state_per_time = np.array([state0_t, state0_t + v0_t[0], state0_t + v0_t[0] + v0_t[1]])
    np.testing.assert_allclose(vout_t, v0_t + var_t + state_per_time)
    expected_v0_grad = np.array(
        [grad_val[0] + grad_val[1] + grad_val[2], grad_val[1] + grad_val[2], grad_val[2]]
    )
    np.testing.assert_array_equal(v0_grad_t, expected_v0_grad)
    np.testing.assert_array_equal(just_v0_grad_t, expected_v0_grad)
    np.testing.assert_allclose(var_grad_t, grad_val.sum(axis=0))
    np.testing.assert_allclose(state0_grad_t, grad_val.sum(axis=0))


def test_gradient_loop_uses_tensor_array_grad_with_the_flow():
    v0, _, _, h_final = _write_pack_loop(dynamic_size=False)
    (g,) = tf.gradients(h_final.stack(), v0)
    grads = [
        op
        for op in tf.get_default_graph().get_operations()
        if op.type == "TensorArrayGradV3" and op.name.startswith("gradients/while/")
    ]
    # The write's gradient reads the gradient array inside the gradient loop,
    # made after the (popped) forward flow of its iteration.
    assert grads
    assert all(op.inputs[1].dtype == tf.float32 for op in grads)
    assert all(op._control_flow_context.grad_state is not None for op in grads)
    assert _run(g).shape == (3, 5)


def test_shape_after_while_loop():
    # TF's testShapeAfterWhileLoop: a write in the body refines the element shape.
    ta = tf.TensorArray(dtype=tf.float32, size=10)
    _, ta = tf.while_loop(
        lambda i, _: i < 10, lambda i, ta: (i + 1, ta.write(i, [[0.0]])), [0, ta],
        parallel_iterations=1,
    )  # fmt: skip
    assert ta.element_shape.as_list() == [1, 1]
    np.testing.assert_array_equal(_run(ta.stack()), np.zeros((10, 1, 1)))


def test_sum_of_two_read_variables_without_repeat_grad():
    # TF's testSumOfTwoReadVariablesWithoutRepeatGrad.
    a = tf.identity(np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1)
    b = tf.identity(np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1 + 3 * 5)
    ta = tf.TensorArray(dtype=tf.float32, size=2)
    ta = ta.write(0, a, name="write_a").write(1, b, name="write_b")
    c = ta.read(0, name="read_a_0") + ta.read(1, name="read_b_0")
    g0 = -(np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1)
    grad_a = tf.gradients([c], [a], [g0])[0]
    grad_b = tf.gradients([c], [b], [g0])[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(grad_a), g0)
        np.testing.assert_array_equal(sess.run(grad_b), g0)
        joint_a, joint_b = sess.run([grad_a, grad_b])
    np.testing.assert_array_equal(joint_a, g0)
    np.testing.assert_array_equal(joint_b, g0)


def test_grad_serial_two_loops_without_cond():
    # TF's testGradSerialTwoLoops, with the body's tf.cond written as a product:
    # acc[0] = x, acc[i] = 2 acc[i - 1] (i < 5), then 95 zeros; d(sum)/dx = 1+2+4+8+16.
    x = tf.constant(2.0, name="x")
    acc = tf.TensorArray(
        dtype=tf.float32, size=100, clear_after_read=False, element_shape=tf.TensorShape([])
    )
    acc = acc.write(0, x)
    i = tf.constant(1, name="i")

    def b(i, acc):
        return i + 1, acc.write(i, tf.multiply(acc.read(i - 1), 2.0))

    i1, acc1 = tf.while_loop(lambda i, acc: i < 5, b, [i, acc])
    z = tf.constant(0.0)
    _, acc2 = tf.while_loop(lambda i, acc: i < 100, lambda i, acc: (i + 1, acc.write(i, z)),
                            [i1, acc1])  # fmt: skip
    r = acc2.stack()
    (grad,) = tf.gradients(r, [x])
    r_t, grad_t = _run([r, grad])
    np.testing.assert_array_equal(r_t[:6], [2.0, 4.0, 8.0, 16.0, 32.0, 0.0])
    assert grad_t == pytest.approx(31.0)


# -- reading inside a loop from an unstacked array --------------------------------------


def _map_square(x):
    """``out[i] = x[i] ** 2`` by a loop that reads an unstacked array and writes another."""
    n = tf.shape(x)[0]
    elems = tf.TensorArray(tf.float32, size=n).unstack(x)
    out = tf.TensorArray(tf.float32, size=n)

    def body(i, out):
        v = elems.read(i)
        return i + 1, out.write(i, v * v)

    _, out = tf.while_loop(lambda i, out: i < n, body, [0, out])
    return out.stack()


def test_read_unstacked_array_inside_loop():
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    y = _map_square(x)
    (g,) = tf.gradients(y, x, grad_ys=[[1.0, 10.0, 100.0, 1000.0]])
    y_t, g_t = _run([y, g])
    np.testing.assert_array_equal(y_t, [1.0, 4.0, 9.0, 16.0])
    np.testing.assert_array_equal(g_t, [2.0, 40.0, 600.0, 8000.0])  # 2 x dy


def test_read_unstacked_array_inside_loop_against_finite_differences():
    x_value = np.array([[0.5, -1.0], [1.5, 2.0], [-0.3, 0.7]], dtype=np.float64)
    x = tf.constant(x_value, dtype=tf.float64)
    n = tf.shape(x)[0]
    elems = tf.TensorArray(tf.float64, size=n).unstack(x)

    def body(i, total, out):
        v = elems.read(i)
        total = total + tf.sin(v) * v
        return i + 1, total, out.write(i, total * v)

    _, _, out = tf.while_loop(
        lambda i, total, out: i < n,
        body,
        [0, tf.zeros([2], tf.float64), tf.TensorArray(tf.float64, size=n)],
    )
    y = out.stack()
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [3, 2], y, [3, 2], x_init_value=x_value)
    assert error < 1e-4


def test_dynamic_array_grows_in_loop_and_gradient_flows():
    x = tf.constant(1.5)
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

    def body(i, p, ta):
        p = p * x
        return i + 1, p, ta.write(i, p)

    _, _, ta = tf.while_loop(lambda i, p, ta: i < 4, body, [0, tf.constant(1.0), ta])
    y = ta.stack()  # x, x^2, x^3, x^4
    (g,) = tf.gradients(tf.reduce_sum(y), x)
    y_t, size_t, g_t = _run([y, ta.size(), g])
    np.testing.assert_allclose(y_t, [1.5, 1.5**2, 1.5**3, 1.5**4])
    assert size_t == 4
    assert g_t == pytest.approx(1 + 2 * 1.5 + 3 * 1.5**2 + 4 * 1.5**3)


def test_nested_loops_write_rows_of_an_array():
    # out[i] = sum_j (i + 1) * x[j] for j < 3, built by an inner loop per row.
    x = tf.constant([1.0, 2.0, 3.0])
    xs = tf.TensorArray(tf.float32, size=3, clear_after_read=False).unstack(x)

    def outer(i, out):
        def inner(j, s):
            return j + 1, s + tf.cast(i + 1, tf.float32) * xs.read(j)

        _, s = tf.while_loop(lambda j, s: j < 3, inner, [0, tf.constant(0.0)])
        return i + 1, out.write(i, s)

    _, out = tf.while_loop(lambda i, out: i < 2, outer, [0, tf.TensorArray(tf.float32, size=2)])
    y = out.stack()
    (g,) = tf.gradients(y, x)
    y_t, g_t = _run([y, g])
    np.testing.assert_array_equal(y_t, [6.0, 12.0])
    np.testing.assert_array_equal(g_t, [3.0, 3.0, 3.0])  # (1 + 2) for every x[j]


def test_array_made_inside_the_body_lives_for_one_iteration():
    # Each iteration makes its own array: writing index 0 again does not fail.
    def body(i, total):
        ta = tf.TensorArray(tf.float32, size=1).write(0, tf.cast(i, tf.float32))
        return i + 1, total + ta.read(0)

    _, total = tf.while_loop(lambda i, t: i < 4, body, [0, tf.constant(0.0)])
    assert _run(total) == 6.0
