"""``tf.gradients`` through ``tf.while_loop``: a backward loop with stacks of forward values.

Ports of TF's ``testWhileGrad_*`` tests with TF's expected values, and
checks against finite differences (``tf.test.compute_gradient_error``) and
derivatives worked out by hand.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_while_grad_mul():
    # TF's testWhileGrad_Mul: v -> v*v until >= 100: 2, 4, 16, 256 = v**8.
    v = tf.constant(2.0, name="v")
    r = tf.while_loop(lambda v: tf.less(v, 100.0), lambda v: tf.multiply(v, v), [v])
    assert _run(tf.gradients(r, v)[0]) == 1024.0


def test_while_grad_square_keeps_forward_values_in_stacks():
    v = tf.constant(2.0, name="v")
    r = tf.while_loop(lambda v: v < 100.0, tf.square, [v], parallel_iterations=1)
    (g,) = tf.gradients(r, v)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"StackV2", "StackPushV2", "StackPopV2"} <= types
    assert _run(g) == 1024.0


def test_while_grad_ys_xs():
    # TF's testWhileGrad_ys_xs.
    x = tf.constant(3.0, name="x")
    y = tf.constant(2.0, name="y")

    def body(x, y):
        y1 = tf.add(x, y)
        x1 = tf.multiply(x, y1)
        return x1, y1

    rx, ry = tf.while_loop(lambda x, y: tf.less(x, 100.0), body, [x, y], parallel_iterations=1)
    assert _run(tf.gradients([rx, ry], x)[0]) == 304.0
    assert _run(tf.gradients([rx, ry], y)[0]) == 124.0
    assert _run(tf.gradients([rx], x)[0]) == 295.0
    assert _run(tf.gradients([rx], y)[0]) == 120.0


def test_while_grad_dependency():
    # TF's testWhileGrad_Dependency: x doubles ten times.
    i = tf.constant(0, name="i")
    x = tf.constant(2.0, name="x")
    ri, rx = tf.while_loop(lambda i, x: i < 10, lambda i, x: (i + 1, x * 2.0), [i, x])
    assert _run(tf.gradients([rx], x)[0]) == 1024.0


def test_while_grad_of_a_captured_tensor_sums_over_iterations():
    # d/dw of a * w**n: n * a * w**(n-1); w enters as a loop invariant.
    w = tf.placeholder(tf.float32, [])
    n = tf.placeholder(tf.int32, [])
    _, out = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * w), [0, tf.constant(3.0)])
    (g,) = tf.gradients(out, w)
    for count in (0, 1, 4):
        assert _run(g, {w: 1.5, n: count}) == pytest.approx(count * 3.0 * 1.5 ** (count - 1))


def test_while_grad_no_gradient_with_back_prop_false():
    # TF's testWhileGrad_NoGradient.
    v = tf.constant(2.0, name="v")
    r = tf.while_loop(lambda v: v < 100.0, tf.square, [v], back_prop=False)
    r = tf.add(r, v)
    assert _run(tf.gradients(r, v)[0]) == 1.0


def test_while_grad_no_dependency():
    # TF's testWhileGrad_NoDependency: the loop passes the variable through.
    variable = tf.Variable(tf.ones([2, 3]))
    duration = tf.zeros([], dtype=tf.int32)
    loop = tf.while_loop(
        lambda d, t, _: d < 10, lambda d, t, _: (d + 1, t, t), [duration, variable, variable]
    )
    cost = tf.reduce_sum(loop[2])
    (grad,) = tf.gradients(cost, [variable])
    with tf.Session() as sess:
        sess.run(variable.initializer)
        np.testing.assert_array_equal(sess.run(grad), np.ones([2, 3]))


def test_nested_while_grad_simple():
    # TF's testNestedWhileGrad_Simple.
    v = tf.constant(1.0)

    def inner_loop(s):
        return tf.while_loop(lambda x: x < 4.0, lambda x: x * 2.0, [s])

    r = tf.while_loop(lambda x: x < 2.0, lambda x: inner_loop(x) * 2.0, [v])
    assert _run(tf.gradients(r, v)[0]) == 8.0


def test_while_grad_matches_finite_differences():
    x = tf.placeholder(tf.float64, [3])
    w = tf.constant([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [0.0, 0.2, 0.7]], tf.float64)

    def body(i, h):
        return i + 1, tf.tanh(tf.reshape(tf.matmul(tf.reshape(h, [1, 3]), w), [3]) + x)

    _, h = tf.while_loop(lambda i, h: i < 4, body, [0, x])
    with tf.Session():
        error = tf.test.compute_gradient_error(
            x, [3], h, [3], x_init_value=np.array([0.1, -0.3, 0.5])
        )
    assert error < 1e-4


def test_gradient_ops_of_a_loop_are_in_a_gradient_loop_of_their_own():
    v = tf.constant(2.0)
    r = tf.while_loop(lambda v: v < 100.0, lambda v: v * v, [v])
    tf.gradients(r, v)
    g = tf.get_default_graph()
    frames = {op.get_attr("frame_name") for op in g.get_operations() if op.type == "Enter"}
    assert frames == {"while/while_context", "gradients/while/while_context"}
    assert g.get_operation_by_name("gradients/b_count_2").type == "LoopCond"
