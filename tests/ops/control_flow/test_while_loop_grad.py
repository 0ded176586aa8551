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


def _loop_of_squares():
    v = tf.constant(2.0, name="v")
    return v, tf.while_loop(lambda v: v < 100.0, tf.square, [v], parallel_iterations=1)


def test_while_grad_multiple_uses():
    # TF's testWhileGrad_MultipleUses: r = v**8, r*r = v**16, d/dv = 16 * 2**15.
    v, r = _loop_of_squares()
    assert _run(tf.gradients(r * r, v)[0]) == 524288.0


def test_while_grad_loop_add():
    # TF's testWhileGrad_LoopAdd: r + r = 2 v**8, d/dv = 16 * 2**7.
    v, r = _loop_of_squares()
    assert _run(tf.gradients(r + r, v)[0]) == 2048.0


def test_while_grad_square_through_a_cond():
    # TF's testWhileGrad_Square: the loop's result passes through a cond.
    v, r = _loop_of_squares()
    r = tf.cond(tf.less(1, 2), lambda: r, lambda: v)
    assert _run(tf.gradients(r, v)[0]) == 1024.0


@pytest.mark.parametrize("parallel_iterations", [1, 10])
def test_while_grad_mul_of_a_captured_tensor_and_the_initial_value(parallel_iterations):
    # TF's testWhileGrad_Mul: v * a**3 (2, 6, 18, 54, 162): d/da = 3 * 2 * 9, d/dv = 27.
    a = tf.constant(3.0, name="a")
    v = tf.constant(2.0, name="v")
    r = tf.while_loop(
        lambda v: v < 100.0, lambda v: v * a, [v], parallel_iterations=parallel_iterations
    )
    assert _run(tf.gradients(r, [a, v])) == [216.0, 81.0]


def test_while_grad_variable():
    # TF's testWhileGrad_Variable.
    a = tf.Variable(3.0)
    v = tf.constant(2.0, name="v")
    r = tf.while_loop(lambda v: v < 100.0, lambda v: v * a, [v], parallel_iterations=1)
    (g,) = tf.gradients(r, a)
    with tf.Session() as sess:
        sess.run(a.initializer)
        assert sess.run(g) == 216.0


def test_while_grad_shape_of_an_unknown_length():
    # TF's testWhileGrad_Shape: x**5 * 2, d/dx = 10 x**4.
    x = tf.placeholder(tf.float32, shape=[None])
    v = tf.constant([2.0], name="v")
    n = tf.constant(0, name="n")
    r = tf.while_loop(
        lambda i, v: i < 5,
        lambda i, v: [i + 1, x * v],
        [n, v],
        [n.get_shape(), tf.TensorShape(None)],
        parallel_iterations=1,
    )
    (g,) = tf.gradients(r[1], x)
    assert g.get_shape().as_list() == [None]
    np.testing.assert_allclose(_run(g, {x: [3.0, 4.0]}), [810.0, 2560.0])


def test_while_grad_base_shape_of_a_loop_that_never_runs():
    # TF's testWhileGrad_BaseShape: the loop returns v0, so only square(x) counts.
    x = tf.placeholder(tf.float32, [None])
    v0 = tf.constant([2.0, 2.0], name="v")
    r = tf.while_loop(lambda v: tf.constant(False), lambda v: v * x, [v0])
    (g,) = tf.gradients([r, tf.square(x)], x)
    np.testing.assert_allclose(_run(g, {x: [1.0, 2.0]}), [2.0, 4.0])


def test_while_grad_one_output_with_control_dependency_on_second():
    # TF's testWhileGrad_OneOutputWithControlDependencyOnSecond: y_f = x + y.
    i = tf.constant(0, name="i")
    x = tf.constant(1.0, name="x")
    y = tf.constant(1.0, name="y")

    def body(i, xi, yi):
        return tf.add(i, 1), tf.identity(xi), tf.add(xi, yi)

    _, x_f, y_f = tf.while_loop(lambda i, *_: tf.less(i, 1), body, [i, x, y])
    with tf.control_dependencies([x_f]):
        y_f_d = tf.identity(y_f)
    (g,) = tf.gradients([y_f_d], [x])
    assert g is not None
    assert _run([y_f_d, g]) == [2.0, 1.0]


def _doubling_loop(x):
    return tf.while_loop(
        lambda i, x: tf.less(i, 5), lambda i, x: (i + 1, x * 2.0), [0, x], parallel_iterations=1
    )[1]


def test_while_grad_serial_two_loops():
    # TF's testWhileGrad_SerialTwoLoops: x * 2**10.
    x = tf.constant(2.0, name="x")
    assert _run(tf.gradients(_doubling_loop(_doubling_loop(x)), x)[0]) == 1024.0


def test_while_grad_parallel_two_loops():
    # TF's testWhileGrad_ParallelTwoLoops: 2 * x * 2**5.
    x = tf.constant(2.0, name="x")
    assert _run(tf.gradients(_doubling_loop(x) + _doubling_loop(x), x)[0]) == 64.0


def test_while_grad_const():
    # TF's testWhileGrad_Const: the body replaces c0 by a constant.
    c0 = tf.constant(0.0, name="c0")
    c1 = tf.constant(1.0, name="c1")
    t = tf.while_loop(lambda d, _: d < 1, lambda d, _: (d + 1, c1), [tf.constant(0), c0])
    assert _run(tf.gradients(tf.reduce_sum(t[1]), [c0])[0]) == 0.0


def _doubling_inner_loop(s):
    return tf.while_loop(lambda i, x: i < 4, lambda i, x: [i + 1, x * 2.0], [tf.constant(0), s])[1]


def test_nested_while_grad_serial_inner():
    # TF's testNestedWhileGrad_SerialInner: 1 -> 256 in one outer iteration.
    v = tf.constant(1.0)
    r = tf.while_loop(
        lambda x: x < 128.0, lambda x: _doubling_inner_loop(_doubling_inner_loop(x)), [v]
    )
    assert _run(tf.gradients(r, v)[0]) == 256.0


def test_nested_while_grad_parallel_inner():
    # TF's testNestedWhileGrad_ParallelInner: (16 v)**2, d/dv = 512 v.
    v = tf.constant(1.0)
    r = tf.while_loop(
        lambda x: x < 128.0, lambda x: _doubling_inner_loop(x) * _doubling_inner_loop(x), [v]
    )
    assert _run(tf.gradients(r, v)[0]) == 512.0


def test_nested_while_cond_while_grad():
    # TF's testNestedWhileCondWhileGrad.
    v = tf.constant(1.0)

    def body(x):
        return tf.cond(
            tf.constant(True), lambda: tf.square(_doubling_inner_loop(x)), lambda: x * 2.0
        )

    r = tf.while_loop(lambda x: x < 128.0, body, [v])
    assert _run(tf.gradients(r, v)[0]) == 512.0


def test_while_grad_in_while():
    # TF's testWhileGradInWhile: tf.gradients of an inner loop, called in an outer
    # loop's body, differentiates the inner loop only (1 + 9 x, d/dx = 9).
    n = tf.convert_to_tensor(1.0, name="n")
    x = tf.placeholder(tf.float32, shape=None)

    def outer_body(n):
        r = tf.while_loop(lambda n: n < 10.0, lambda n: n + x, [n], [tf.TensorShape(None)])
        return tf.gradients(r, x)

    r = tf.while_loop(lambda n: n < 6.0, outer_body, [n], [tf.TensorShape(None)])
    assert _run(r, {x: 1.0}) == 9.0


def test_while_grad_concat_trains():
    # TF's testWhileGrad_Concat: each row of x is concatenated twice, d sum / dx = 2.
    x = tf.get_variable("x", initializer=[[1.0, 2.0]])
    i0 = tf.constant(0)
    h0 = tf.zeros([0, 2])
    _, h = tf.while_loop(
        lambda i, _: i < 2,
        lambda i, h: (i + 1, tf.concat([h, x], 0)),
        [i0, h0],
        [i0.get_shape(), tf.TensorShape([None, 2])],
    )
    train = tf.train.GradientDescentOptimizer(0.01).minimize(tf.reduce_sum(h))
    with tf.Session() as sess:
        sess.run(x.initializer)
        sess.run(train)
        np.testing.assert_allclose(sess.run(x), [[0.98, 1.98]])


def _power_loop(cond, x, **kwargs):
    """``p`` multiplied by ``x`` while ``cond(i, p)`` holds, from ``(0, 1.0)``."""
    return tf.while_loop(cond, lambda i, p: (i + 1, p * x), [0, 1.0], **kwargs)[1]


@pytest.mark.parametrize(
    ("cond", "power"),
    [
        # i stops it after 3 iterations: p = x**3.
        (lambda i, p: tf.logical_and(i < 3, p < 50.0), 3),
        # p stops it: 1, 2, ..., 64 = x**6.
        (lambda i, p: tf.logical_and(i < 10, p < 50.0), 6),
        # Either keeps it going: i until 3, then p until 8 (x**3), so 3 times.
        (lambda i, p: tf.logical_or(i < 3, p < 5.0), 3),
    ],
)
def test_while_grad_with_a_cond_combining_predicates(cond, power):
    # d x**n / dx = n x**(n-1) at x = 2 (the first case: 12, TF's value too).
    x = tf.constant(2.0)
    p = _power_loop(cond, x)
    assert _run([p, tf.gradients(p, x)[0]]) == [2.0**power, power * 2.0 ** (power - 1)]


def test_while_grad_with_a_cond_reading_a_captured_tensor():
    # p < limit with limit = 20: 1, 2, ..., 32 = x**5, d/dx = 5 * 16.
    x = tf.constant(2.0)
    limit = tf.placeholder(tf.float32, [])
    p = _power_loop(lambda i, p: tf.logical_and(i < 10, p < limit), x)
    assert _run([p, tf.gradients(p, x)[0]], {limit: 20.0}) == [32.0, 80.0]


def test_while_grad_with_a_cond_on_a_float_loop_variable_only():
    # 1.5 * 3**4 = 121.5 is the first >= 50: d/dy of 1.5 y**4 = 6 y**3.
    y = tf.placeholder(tf.float32, [])
    p = tf.while_loop(lambda p: p < 50.0, lambda p: p * y, [1.5])
    assert _run([p, tf.gradients(p, y)[0]], {y: 3.0}) == [121.5, 162.0]


def test_while_grad_with_maximum_iterations():
    # Two iterations: 1.5 y**2, d/dy = 3 y.
    y = tf.placeholder(tf.float32, [])
    p = tf.while_loop(lambda p: p < 1000.0, lambda p: p * y, [1.5], maximum_iterations=2)
    assert _run([p, tf.gradients(p, y)[0]], {y: 3.0}) == [13.5, 9.0]


def test_while_grad_with_maximum_iterations_and_a_combined_cond():
    # The counter stops it at 4 before p reaches 50: x**4, d/dx = 4 * 8.
    x = tf.constant(2.0)
    p = _power_loop(lambda i, p: tf.logical_and(i < 10, p < 50.0), x, maximum_iterations=4)
    assert _run([p, tf.gradients(p, x)[0]]) == [16.0, 32.0]
