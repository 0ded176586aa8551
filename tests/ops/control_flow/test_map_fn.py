"""tf.map_fn: a loop over rows built from tf.while_loop and TensorArrays.

Ports of TF 1.15's ``map_fn_test.py`` cases with TF's expected values (the
SparseTensor case as TF 1.15 has it: refused), plus gradients by hand and
against finite differences.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

NUMS = np.array([1, 2, 3, 4, 5, 6])


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def test_map_simple():
    elems = tf.constant(list(NUMS), name="data")
    r = tf.map_fn(lambda x: tf.multiply(tf.add(x, 3), 2), elems)
    np.testing.assert_array_equal(_run(r), (NUMS + 3) * 2)


def test_map_simple_not_tensor():
    r = tf.map_fn(lambda x: tf.multiply(tf.add(x, 3), 2), NUMS)
    np.testing.assert_array_equal(_run(r), (NUMS + 3) * 2)


def test_map_sparse_tensor_is_refused():
    # TF 1.15 refuses a SparseTensor (TF 2.3 later mapped its rows).
    st = tf.SparseTensor(indices=[[0, 0], [0, 1], [1, 0]], values=[0, 1, 2], dense_shape=[2, 2])
    with pytest.raises(TypeError, match="To perform a map on the values of a sparse tensor"):
        tf.map_fn(lambda x: x, st)


def test_map_over_scalar_errors():
    with pytest.raises(ValueError, match="not scalars"):
        tf.map_fn(lambda x: x, [1, 2])
    with pytest.raises(ValueError, match="not a scalar"):
        tf.map_fn(lambda x: x, 1)


def test_map_scoped():
    def double_scoped(x):
        with tf.variable_scope("body"):
            two = tf.get_variable("two", [], dtype=tf.int32, initializer=tf.constant_initializer(2))
            return tf.multiply(x, two)

    with tf.variable_scope("root") as varscope:
        elems = tf.constant(list(NUMS), name="data")
        r = tf.map_fn(double_scoped, elems)
        assert [v.name for v in tf.trainable_variables()] == ["root/body/two:0"]
        varscope.reuse_variables()
        r_reused = tf.map_fn(double_scoped, elems)
        assert len(tf.trainable_variables()) == 1
    got, got_reused = _run([r, r_reused])
    np.testing.assert_array_equal(got, 2 * NUMS)
    np.testing.assert_array_equal(got_reused, 2 * NUMS)


def test_map_grad():
    param = tf.constant(2.0)
    elems = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="elems")
    y = tf.map_fn(lambda x: tf.multiply(tf.square(x), param), elems)
    g_param = tf.gradients(y, param)[0]
    g_elems = tf.gradients(y, elems)[0]
    got_param, got_elems = _run([g_param, g_elems])
    assert got_param == 91.0
    np.testing.assert_array_equal(got_elems, [4.0, 8.0, 12.0, 16.0, 20.0, 24.0])


def test_map_single_input_multi_output():
    r = tf.map_fn(lambda x: ((x + 3) * 2, -(x + 3) * 2), NUMS, dtype=(tf.int64, tf.int64))
    assert len(r) == 2
    assert r[0].get_shape().as_list() == r[1].get_shape().as_list() == [6]
    received = _run(r)
    np.testing.assert_array_equal(received[0], (NUMS + 3) * 2)
    np.testing.assert_array_equal(received[1], -(NUMS + 3) * 2)


def test_map_multi_output_mismatched_dtype():
    with pytest.raises(TypeError, match="two structures don't have the same nested structure"):
        # fn returns a tuple, dtype is a list
        tf.map_fn(lambda x: ((x + 3) * 2, -(x + 3) * 2), NUMS, dtype=[tf.int64, tf.int64])


def test_map_multi_input_single_output():
    r = tf.map_fn(lambda x: x[0] * x[1][0] + x[1][1], (NUMS, (NUMS, -NUMS)), dtype=tf.int64)
    assert r.get_shape().as_list() == [6]
    np.testing.assert_array_equal(_run(r), NUMS * NUMS + (-NUMS))


def test_map_multi_input_same_structure_output():
    r = tf.map_fn(lambda x: (x[1][0], (x[1][1], x[0])), (NUMS, (2 * NUMS, -NUMS)))
    r = [r[0], r[1][0], r[1][1]]
    assert [t.get_shape().as_list() for t in r] == [[6], [6], [6]]
    received = _run(r)
    np.testing.assert_array_equal(received[0], 2 * NUMS)
    np.testing.assert_array_equal(received[1], -NUMS)
    np.testing.assert_array_equal(received[2], NUMS)


def test_map_shape():
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    y = tf.map_fn(lambda e: e, x)
    assert y.get_shape().as_list() == list(_run(y).shape) == [2, 3]


def test_map_unknown_shape():
    x = tf.placeholder(tf.float32)
    y = tf.map_fn(lambda e: e, x)
    assert y.get_shape().dims is None


def test_map_empty_scalar():
    map_return = tf.map_fn(lambda x: 1, tf.constant([], dtype=tf.int32))
    assert map_return.get_shape().as_list() == [0]
    assert _run(map_return).shape == (0,)


def test_map_empty_tensor():
    map_return = tf.map_fn(lambda x: tf.zeros([3, 2]), tf.constant([]))
    assert map_return.get_shape().as_list() == [0, 3, 2]
    assert _run(map_return).shape == (0, 3, 2)


def test_map_with_another_dtype_needs_dtype():
    x = tf.constant([1, 2, 3])
    r = tf.map_fn(lambda e: tf.cast(e, tf.float32) / 2.0, x, dtype=tf.float32)
    np.testing.assert_array_equal(_run(r), [0.5, 1.0, 1.5])
    wrong = tf.map_fn(lambda e: tf.cast(e, tf.float32) / 2.0, x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorArray dtype is int32"):
        _run(wrong)


def test_map_rows_run_as_parallel_iterations():
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    r = tf.map_fn(tf.reduce_sum, x, parallel_iterations=1)
    np.testing.assert_array_equal(_run(r), [3.0, 12.0, 21.0, 30.0])
    enters = [op for op in tf.get_default_graph().get_operations() if op.type == "Enter"]
    assert {op.get_attr("parallel_iterations") for op in enters} == {1}


def test_map_matrix_rows_against_finite_differences():
    x_value = np.array([[0.3, -0.2, 0.9], [0.5, 0.1, -0.7]], dtype=np.float64)
    x = tf.constant(x_value)
    w = tf.constant(np.array([[1.0, -2.0], [0.5, 0.25], [-1.5, 2.0]]))
    r = tf.map_fn(lambda row: tf.tanh(tf.matmul(tf.expand_dims(row, 0), w))[0], x)
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [2, 3], r, [2, 2], x_init_value=x_value)
    assert error < 1e-4
