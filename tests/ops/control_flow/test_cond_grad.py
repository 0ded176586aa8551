"""Gradients through ``tf.cond`` and ``tf.case``: ports of TF's control_flow_ops_py_test.py.

The expected values are TF's own (its test's assertions), or derivatives
worked out by hand, or central differences (``tf.test.compute_gradient_error``).
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

OPTIONS = tf.RunOptions(timeout_in_ms=20000)


def _dense(value):
    """An IndexedSlicesValue as the dense array it stands for (a dense value as it is)."""
    if not hasattr(value, "indices"):
        return np.asarray(value)
    dense = np.zeros(value.dense_shape, dtype=value.values.dtype)
    np.add.at(dense, value.indices, value.values)
    return dense


# -- TF's testCondGrad_* and testNestedCond_Simple ---------------------------------------


def test_cond_grad_1_identity_in_both_branches():
    x = tf.constant(10.0, name="x")
    r = tf.cond(tf.less(1, 2), lambda: tf.identity(x), lambda: tf.identity(x))
    (grad,) = tf.gradients(r, [x])
    with tf.Session() as sess:
        assert sess.run(grad) == 1.0


def test_cond_grad_2_each_branch_its_own_gradient():
    c = tf.placeholder(tf.int32, shape=[])
    x = tf.constant(10.0)
    r = tf.cond(tf.less(c, 2), lambda: tf.multiply(x, 42.0), lambda: tf.multiply(x, 3.0))
    (grad,) = tf.gradients(r, [x])
    with tf.Session() as sess:
        assert sess.run(grad, {c: 1}) == 42.0
        assert sess.run(grad, {c: 3}) == 3.0


def test_cond_grad_3_gradients_built_inside_a_branch():
    c = tf.placeholder(tf.int32, shape=[])
    ox = tf.constant(10.0)

    def fn1(x):
        m = x * x
        return tf.gradients(m, [ox])[0]

    y = tf.multiply(7.0, ox)
    r = tf.cond(tf.less(c, 2), lambda: fn1(y), lambda: tf.multiply(ox, 3.0))
    with tf.Session() as sess:
        assert sess.run(r, {c: 1}) == 980.0
        assert sess.run(r, {c: 3}) == 30.0


def test_nested_cond_simple():
    x = tf.constant(0.0, name="X")
    y = tf.cond(tf.constant(True), lambda: x, lambda: tf.cond(x < 1.0, lambda: x, lambda: x))
    z = tf.cond(tf.constant(False), lambda: x, lambda: tf.cond(x < 1.0, lambda: x, lambda: x))
    with tf.Session() as sess:
        assert sess.run(tf.gradients(y, x)[0]) == 1.0
        assert sess.run(tf.gradients(z, x)[0]) == 1.0


def test_cond_grad_gather_sums_slices_and_dense():
    v1 = tf.Variable([1.0, 42.0])
    c = tf.placeholder(tf.int32, shape=[])
    r = tf.cond(tf.less(c, 2), lambda: tf.identity(v1), lambda: tf.gather(v1, [1, 1]))
    (grad,) = tf.gradients(r, [v1])
    with tf.Session() as sess:
        sess.run(v1.initializer)
        np.testing.assert_array_equal(_dense(sess.run(grad, {c: 1})), [1.0, 1.0])
        np.testing.assert_array_equal(_dense(sess.run(grad, {c: 3})), [0.0, 2.0])


def test_cond_grad_multi_device_style_product():
    # TF's testCondGradMultiDevice without devices: d(2xy)/dx = 2y, or 0 off the branch.
    pred = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32)
    y = tf.placeholder(tf.float32)
    z = tf.cond(pred, lambda: x * y * 2.0, lambda: 2.0)
    (grad,) = tf.gradients(z, x)
    with tf.Session() as sess:
        assert sess.run(grad, {pred: True, x: 1.0, y: 2.0}) == 4.0
        assert sess.run(grad, {pred: False, x: 1.0, y: 2.0}) == 0.0


# -- What the gradient graph is made of --------------------------------------------------


def test_a_read_value_goes_through_a_switch_and_its_gradient_through_a_merge():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(3.0)
    y = tf.cond(p, lambda: x * x, lambda: x + 1.0)
    mul = [op for op in tf.get_default_graph().get_operations() if op.type == "Mul"][0]
    assert {t.op.type for t in mul.inputs} == {"Switch"}
    assert mul._cond_context.branch == 1
    (grad,) = tf.gradients(y, x)
    types = {op.type for op in tf.get_default_graph().get_operations() if "cond_grad" in op.name}
    assert {"Switch", "Merge"} <= types
    with tf.Session() as sess:
        assert sess.run(grad, {p: True}) == 6.0
        assert sess.run(grad, {p: False}) == 1.0


def test_a_value_only_one_branch_reads_gets_zeros_when_the_other_runs():
    p = tf.placeholder(tf.bool, [])
    a = tf.constant([1.0, 2.0])
    b = tf.constant([3.0, 4.0])
    y = tf.cond(p, lambda: a * 5.0, lambda: b * b)
    ga, gb = tf.gradients(tf.reduce_sum(y), [a, b])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run([ga, gb], {p: True}), [[5, 5], [0, 0]])
        np.testing.assert_array_equal(sess.run([ga, gb], {p: False}), [[0, 0], [6, 8]])


def test_several_results_and_a_gradient_that_also_goes_around_the_cond():
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [2])
    s, t = tf.cond(p, lambda: (x * x, tf.exp(x)), lambda: (x * 0.5, x))
    y = tf.reduce_sum(s) + tf.reduce_sum(t) + tf.reduce_sum(3.0 * x)
    (grad,) = tf.gradients(y, x)
    xv = np.array([0.5, -1.0], dtype=np.float32)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {p: True, x: xv}), 2 * xv + np.exp(xv) + 3)
        np.testing.assert_allclose(sess.run(grad, {p: False, x: xv}), [4.5, 4.5])


def test_a_variable_in_a_branch_is_read_when_its_reader_runs():
    v = tf.Variable(1.0)
    p = tf.placeholder(tf.bool, [])

    def true_fn():
        with tf.control_dependencies([v.assign(5.0)]):
            return tf.identity(v) * 2.0

    y = tf.cond(p, true_fn, lambda: v * 3.0)
    (grad,) = tf.gradients(y, v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y, {p: True}) == 10.0
        assert sess.run(grad, {p: True}) == 2.0
        assert sess.run(grad, {p: False}) == 3.0


def test_nested_conds_three_ways():
    # y = x^3 (p, q), 2x (p, not q), x^2 (not p); each derivative at x = 1.5.
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(p, lambda: tf.cond(q, lambda: x * x * x, lambda: 2.0 * x), lambda: x * x)
    (grad,) = tf.gradients(y, x)
    with tf.Session() as sess:
        assert sess.run(grad, {p: True, q: True, x: 1.5}) == pytest.approx(6.75)
        assert sess.run(grad, {p: True, q: False, x: 1.5}) == 2.0
        assert sess.run(grad, {p: False, q: True, x: 1.5}) == 3.0


def test_case_differentiates():
    i = tf.placeholder(tf.int32, [])
    x = tf.constant(2.0)
    y = tf.case(
        [(tf.equal(i, 0), lambda: x * x), (tf.equal(i, 1), lambda: x * x * x)],
        default=lambda: -x,
    )
    (grad,) = tf.gradients(y, x)
    with tf.Session() as sess:
        assert [sess.run(grad, {i: k}) for k in (0, 1, 2)] == [4.0, 12.0, -1.0]


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("taken", [True, False])
def test_numeric_gradient_through_a_cond(shape, taken):
    p = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float64, shape)
    w = tf.constant(np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape))
    y = tf.cond(p, lambda: tf.sin(x) * w + x * x, lambda: tf.tanh(x * w) - tf.exp(x) * 0.25)
    rng = np.random.RandomState(7)
    x0 = rng.uniform(-1.0, 1.0, shape)
    with tf.Session():
        error = tf.test.compute_gradient_error(
            x, list(shape), y, list(shape), x_init_value=x0, extra_feed_dict={p: taken}
        )
    assert error < 1e-4


def test_a_model_with_a_branch_on_a_placeholder_trains():
    # Train mode adds a penalty (w - 3)^2 through a cond; eval mode does not.
    # Gradient descent by hand: each training step the loss is (w x - t)^2 + (w - 3)^2.
    train = tf.placeholder(tf.bool, [], name="train")
    w = tf.Variable(0.0)
    x, t = 2.0, 4.0
    fit = tf.square(w * x - t)
    loss = tf.cond(train, lambda: fit + tf.square(w - 3.0), lambda: fit)
    step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    expected = 0.0
    with tf.Session() as sess:
        sess.run(w.initializer)
        for _ in range(20):
            sess.run(step, {train: True})
            expected -= 0.05 * (2 * (expected * x - t) * x + 2 * (expected - 3.0))
        assert sess.run(w) == pytest.approx(expected, rel=1e-5)
        before = sess.run(loss, {train: False})
        sess.run(step, {train: False})
        assert sess.run(loss, {train: False}) < before


# -- A cond in a loop, a loop in a cond ---------------------------------------------------


@pytest.mark.parametrize("known_shape", [True, False], ids=["simple", "unknown_shape"])
def test_while_cond_grad(known_shape):
    # TF's testWhileCondGrad_Simple and testWhileCondGrad_UnknownShape: 2 -> 4 -> 16 -> 256.
    v = tf.convert_to_tensor(2.0, name="v") if known_shape else tf.placeholder(tf.float32)
    n = tf.convert_to_tensor(100.0, name="n")
    one = tf.convert_to_tensor(1.0, name="one")
    r = tf.while_loop(
        lambda x: tf.less(x, n),
        lambda x: tf.cond(tf.constant(True), lambda: tf.square(x), lambda: tf.subtract(x, one)),
        [v],
    )
    (grad,) = tf.gradients(r, v)
    feed = {} if known_shape else {v: 2.0}
    with tf.Session() as sess:
        assert sess.run(grad, feed, options=OPTIONS) == 1024.0


def test_a_cond_in_a_loop_takes_a_different_branch_each_iteration():
    # 1.5 -> 2.25 -> 5.0625 -> 2.53125 -> 6.4072..., squaring below 3, halving above;
    # the derivative is the product of each step's: 3 * 4.5 * 0.5 * 5.0625.
    # Shapes unknown, so the branches' gradients need their forward shapes from stacks.
    v = tf.placeholder(tf.float32)
    scale = tf.constant(0.5)
    _, r = tf.while_loop(
        lambda i, x: i < 4,
        lambda i, x: (i + 1, tf.cond(x < 3.0, lambda: x * x, lambda: x * scale)),
        [0, v],
    )
    gv, gs = tf.gradients(r, [v, scale])
    with tf.Session() as sess:
        rv, gvv, gsv = sess.run([r, gv, gs], {v: 1.5}, options=OPTIONS)
    assert rv == pytest.approx(2.53125**2)
    assert gvv == pytest.approx(3 * 4.5 * 0.5 * 5.0625)
    # d r / d scale: only iteration 3 halves; r = (5.0625 * s)^2, so 2 * 5.0625^2 * s.
    assert gsv == pytest.approx(2 * 5.0625**2 * 0.5)


def test_cond_grad_in_nested_whiles():
    def outer_body(i, x):
        _, x = tf.while_loop(lambda j, x: j < 3, inner_body, [0, 0.0])
        return i + 1, x

    def inner_body(j, x):
        y = tf.cond(tf.less(x, 1), lambda: 2 * x, lambda: x)
        return j + 1, tf.gradients(y, x)[0]

    i, x = tf.while_loop(lambda i, x: i < 3, outer_body, [0, 0.0])
    with tf.Session() as sess:
        i_val, x_val = sess.run([i, x], options=OPTIONS)
    assert i_val == 3
    assert x_val == pytest.approx(1.0)


def test_while_grad_in_cond():
    n = tf.convert_to_tensor(1.0, name="n")
    x = tf.placeholder(tf.float32, shape=None)

    def fn1():
        r = tf.while_loop(lambda n: n < 10.0, lambda n: n + x, [n], [tf.TensorShape(None)])
        return tf.gradients(r, x)

    r = tf.cond(tf.less(1, 2), fn1, lambda: x)
    with tf.Session() as sess:
        assert sess.run(r, {x: 1.0}, options=OPTIONS) == pytest.approx(9.0)


def test_gradient_through_a_loop_in_a_branch():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(2.0)
    y = tf.cond(
        p, lambda: tf.while_loop(lambda v: v < 100.0, lambda v: v * v, [x]), lambda: x * 3.0
    )
    (grad,) = tf.gradients(y, x)
    with tf.Session() as sess:
        assert sess.run([y, grad], {p: True}, options=OPTIONS) == [256.0, 1024.0]
        assert sess.run([y, grad], {p: False}, options=OPTIONS) == [6.0, 3.0]
