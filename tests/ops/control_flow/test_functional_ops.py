"""tf.foldl, tf.foldr and tf.scan: loops over rows built from tf.while_loop and TensorArrays.

Ports of TF 1.15's ``functional_ops_test.py`` cases with TF's expected
values, plus gradients checked by hand and against finite differences.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def simple_scoped_fn(a, x):
    """(a, x) -> 2 (x + a), with the 2 a variable in scope ``body`` (TF's helper)."""
    with tf.variable_scope("body"):
        two = tf.get_variable("two", [], dtype=tf.int32, initializer=tf.constant_initializer(2))
        return tf.multiply(tf.add(a, x), two)


def _double_sum(a, x):
    return tf.multiply(tf.add(a, x), 2)


# -- foldl, foldr ------------------------------------------------------------------------


FOLD_SIMPLE = [(tf.foldl, 208, 880), (tf.foldr, 450, 1282)]


@pytest.mark.parametrize("fold, expected, expected_init", FOLD_SIMPLE)
def test_fold_simple(fold, expected, expected_init):
    # TF's testFoldl_Simple and testFoldr_Simple.
    elems = tf.constant([1, 2, 3, 4, 5, 6], name="data")
    r = fold(_double_sum, elems)
    r_init = fold(_double_sum, elems, initializer=10)
    assert _run([r, r_init]) == [expected, expected_init]


@pytest.mark.parametrize("fold", [tf.foldl, tf.foldr])
def test_fold_single_input_multi_output(fold):
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = fold(lambda a, x: a + x, elems, np.array([1, -1.0]))
    np.testing.assert_array_equal(_run(r), [22.0, 20.0])


@pytest.mark.parametrize("fold", [tf.foldl, tf.foldr])
def test_fold_multi_input_single_output(fold):
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = fold(lambda a, x: a + x[0] + x[1], (elems, -elems), np.array(1.0))
    assert _run(r) == 1.0


def test_foldl_multi_input_different_dims_single_output():
    elems = np.array([[1.0, 1.0, 1.0], [2.0, 3.0, 4.0]])
    other_elems = np.array([-1.0, 1.0])
    r = tf.foldl(lambda a, x: a + x[0] * x[1], (elems, other_elems), np.array([0.0, 0.0, 0.0]))
    np.testing.assert_array_equal(_run(r), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("fold, expected, expected_init", FOLD_SIMPLE)
def test_fold_scoped_makes_one_variable(fold, expected, expected_init):
    # TF's testFoldl_Scoped and testFoldr_Scoped.
    with tf.variable_scope("root") as varscope:
        elems = tf.constant([1, 2, 3, 4, 5, 6], name="data")
        r = fold(simple_scoped_fn, elems)
        assert [v.name for v in tf.trainable_variables()] == ["root/body/two:0"]
        varscope.reuse_variables()
        r_init = fold(simple_scoped_fn, elems, initializer=10)
        assert len(tf.trainable_variables()) == 1
    assert _run([r, r_init]) == [expected, expected_init]


def test_fold_grad():
    # TF's testFold_Grad: d(v * 6!)/dv.
    elems = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = tf.constant(2.0, name="v")
    gl = tf.gradients(tf.foldl(tf.multiply, elems, initializer=v), v)[0]
    gr = tf.gradients(tf.foldr(tf.multiply, elems, initializer=v), v)[0]
    assert _run([gl, gr]) == [720.0, 720.0]


def test_fold_shape():
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    y = tf.foldl(lambda _, row: row, x, initializer=tf.constant([0, 0, 0]))
    assert y.get_shape().as_list() == list(_run(y).shape) == [3]


def test_foldl_gradient_with_respect_to_elems_by_hand():
    # foldl(a * x) from a = v: d/dx_k = v * prod_{j != k} x_j.
    x_value = np.array([1.5, -2.0, 0.5], dtype=np.float32)
    x = tf.constant(x_value)
    r = tf.foldl(tf.multiply, x, initializer=tf.constant(3.0))
    (g,) = tf.gradients(r, x)
    expected = [3.0 * x_value[1] * x_value[2], 3.0 * x_value[0] * x_value[2], 3.0 * -3.0]
    np.testing.assert_allclose(_run(g), expected, rtol=1e-6)


def test_foldr_against_finite_differences():
    x_value = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.8]], dtype=np.float64)
    x = tf.constant(x_value)
    r = tf.foldr(lambda a, row: tf.tanh(a * row + row), x, initializer=tf.ones([2], tf.float64))
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [3, 2], r, [2], x_init_value=x_value)
    assert error < 1e-4


# -- scan --------------------------------------------------------------------------------


def test_scan_simple():
    elems = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = tf.constant(2.0, name="v")
    r = tf.scan(tf.multiply, elems)
    r_init = tf.scan(tf.multiply, elems, initializer=v)
    got, got_init = _run([r, r_init])
    np.testing.assert_array_equal(got, [1.0, 2.0, 6.0, 24.0, 120.0, 720.0])
    np.testing.assert_array_equal(got_init, [2.0, 4.0, 12.0, 48.0, 240.0, 1440.0])


def test_scan_reverse():
    elems = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = tf.constant(2.0, name="v")
    r = tf.scan(tf.multiply, elems, reverse=True)
    r_init = tf.scan(tf.multiply, elems, initializer=v, reverse=True)
    got, got_init = _run([r, r_init])
    np.testing.assert_array_equal(got, [720.0, 720.0, 360.0, 120.0, 30.0, 6.0])
    np.testing.assert_array_equal(got_init, [1440.0, 1440.0, 720.0, 240.0, 60.0, 12.0])


def test_scan_single_input_multi_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    initializer = (np.array(1.0), np.array(-1.0))
    r = tf.scan(lambda a, x: (a[0] * x, -a[1] * x), elems, initializer)
    got = _run(r)
    np.testing.assert_array_equal(got[0], [1.0, 2.0, 6.0, 24.0, 120.0, 720.0])
    np.testing.assert_array_equal(got[1], [1.0, -2.0, 6.0, -24.0, 120.0, -720.0])


def test_scan_multi_input_single_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = tf.scan(lambda a, x: a * (x[0] + x[1]), (elems + 1, -elems), np.array(1.0))
    np.testing.assert_array_equal(_run(r), np.ones(6))


def test_scan_multi_input_same_type_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = tf.scan(lambda a, x: (a[0] + x[0], a[1] + x[1]), (elems, -elems))
    got = _run(r)
    np.testing.assert_array_equal(got[0], np.cumsum(elems))
    np.testing.assert_array_equal(got[1], np.cumsum(-elems))


def test_scan_multi_output_mismatched_initializer():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    with pytest.raises(ValueError, match="two structures don't have the same nested structure"):
        tf.scan(lambda a, x: (a, -a), elems, np.array(1.0))


def test_scan_scoped():
    with tf.variable_scope("root") as varscope:
        elems = tf.constant([1, 2, 3, 4, 5, 6], name="data")
        r = tf.scan(simple_scoped_fn, elems)
        assert [v.name for v in tf.trainable_variables()] == ["root/body/two:0"]
        varscope.reuse_variables()
        r_init = tf.scan(simple_scoped_fn, elems, initializer=2)
        assert len(tf.trainable_variables()) == 1
    got, got_init = _run([r, r_init])
    np.testing.assert_array_equal(got, [1, 6, 18, 44, 98, 208])
    np.testing.assert_array_equal(got_init, [6, 16, 38, 84, 178, 368])


def test_scan_foldl_nested():
    elems = tf.constant([1.0, 2.0, 3.0, 4.0], name="data")
    inner_elems = tf.constant([0.5, 0.5], name="data")

    def r_inner(a, x):
        return tf.foldl(lambda b, y: b * y * x, inner_elems, initializer=a)

    np.testing.assert_allclose(_run(tf.scan(r_inner, elems)), [1.0, 1.0, 2.25, 9.0])


def test_scan_waits_for_the_control_dependencies_around_it():
    # TF's testScan_Control gates the scan on a fed placeholder; here the gate
    # is an assign, whose effect the first row shows.
    v = tf.Variable(0.0)
    s = tf.placeholder(tf.float32, shape=[None])
    with tf.control_dependencies([v.assign(5.0)]):
        c = tf.scan(lambda a, x: x * a + v, s)
    np.testing.assert_allclose(_run(c, {s: [1, 3, 3]}), [1.0, 8.0, 29.0])


def test_scan_grad():
    # TF's testScan_Grad: sum of 2 * prefix products = 2 (1 + 2 + 6 + 24 + 120 + 720) / 2.
    elems = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = tf.constant(2.0, name="v")
    r = tf.scan(tf.multiply, elems, initializer=v)
    assert _run(tf.gradients(r, v)[0]) == 873.0


def test_scan_gradient_with_part_stop_gradient():
    a = tf.Variable(0.0, name="a")
    b = tf.Variable(0.0, name="b")
    l0, l1 = tf.scan(lambda elem_, input_: (a, b), tf.zeros(5), initializer=(0.0, 0.0))
    loss = l0 + tf.stop_gradient(l1)
    grad_a, grad_b = tf.gradients(ys=[loss], xs=[a, b])
    assert _run(grad_a) == 5.0  # a is each of the 5 rows of l0
    assert grad_b is None or _run(grad_b) == 0.0


def test_scan_shape():
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    y = tf.scan(lambda _, row: row, x, initializer=tf.constant([0, 0, 0]))
    assert y.get_shape().as_list() == list(_run(y).shape) == [2, 3]


def test_scan_empty_tensor():
    x = tf.scan(lambda x, _: x, tf.range(0), initializer=tf.ones([2, 4]))
    assert x.get_shape().as_list() == [0, 2, 4]
    assert _run(x).shape == (0, 2, 4)


def test_scan_unknown_shape():
    x = tf.placeholder(tf.float32)
    initializer = tf.placeholder(tf.float32)
    y = tf.scan(lambda _, row: row, x, initializer=initializer)
    assert y.get_shape().dims is None


def test_scan_varying_shape():
    x = tf.placeholder(dtype=tf.float32, shape=[None, 2])
    x_t = tf.transpose(x)
    result = tf.scan(lambda a, x: a + x, x)
    result_t = tf.scan(lambda a, x: a + x, x_t, infer_shape=False)
    result_grad = tf.gradients(result, [x])[0]
    result_t_grad = tf.gradients(result_t, [x_t])[0]
    got = _run([result, result_t, result_grad, result_t_grad], {x: [[1.0, 2.0]]})
    np.testing.assert_array_equal(got[0], [[1.0, 2.0]])
    np.testing.assert_array_equal(got[1], [[1.0], [3.0]])
    np.testing.assert_array_equal(got[2], [[1.0, 1.0]])
    np.testing.assert_array_equal(got[3], [[2.0], [1.0]])


def test_scan_cumulative_sum_against_finite_differences():
    x_value = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.8]], dtype=np.float64)
    x = tf.constant(x_value)
    r = tf.scan(lambda a, row: tf.sin(a) + row * row, x, reverse=True)
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [3, 2], r, [3, 2], x_init_value=x_value)
    assert error < 1e-4


def test_fn_must_be_callable():
    for function in (tf.foldl, tf.foldr, tf.scan):
        with pytest.raises(TypeError, match="fn must be callable."):
            function(1, [1, 2])
