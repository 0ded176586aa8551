"""Specification tests for ``tf.gradients`` (TF 1.15 semantics) against hand derivatives."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def _dense(slices_value, dense_shape):
    """Densifies an evaluated IndexedSlices by summing rows (np.add.at)."""
    dense = np.zeros(dense_shape, dtype=np.asarray(slices_value.values).dtype)
    np.add.at(dense, np.asarray(slices_value.indices), np.asarray(slices_value.values))
    return dense


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def test_gradients_returns_a_list_with_one_entry_per_x():
    x = tf.constant(X)
    y = x + x
    grads = tf.gradients(y, x)
    assert isinstance(grads, list) and len(grads) == 1
    np.testing.assert_array_equal(_run(grads[0]), np.full_like(X, 2.0))


def test_chain_of_square_and_multiply_matches_hand_derivative():
    x = tf.constant(X)
    y = tf.multiply(tf.square(x), 3.0)  # y = 3 x^2
    (g,) = tf.gradients(y, x)
    np.testing.assert_allclose(_run(g), 6.0 * X, rtol=1e-6)


def test_fan_out_gradients_are_accumulated():
    x = tf.constant(X)
    y = x * x + x  # dy/dx = 2x + 1
    (g,) = tf.gradients(y, x)
    np.testing.assert_allclose(_run(g), 2.0 * X + 1.0, rtol=1e-6)


def test_gradient_of_reduce_sum_of_matmul():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    w = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    ta, tw = tf.constant(a), tf.constant(w)
    y = tf.reduce_sum(tf.matmul(ta, tw))
    ga, gw = tf.gradients(y, [ta, tw])
    ones = np.ones((3, 2), np.float32)
    got_a, got_w = _run([ga, gw])
    np.testing.assert_allclose(got_a, ones @ w.T, rtol=1e-6)
    np.testing.assert_allclose(got_w, a.T @ ones, rtol=1e-6)


def test_multiple_ys_are_summed():
    x = tf.constant(X)
    (g,) = tf.gradients([x * 2.0, x * 3.0], x)
    np.testing.assert_allclose(_run(g), np.full_like(X, 5.0))


def test_multiple_xs():
    a = tf.constant(2.0)
    b = tf.constant(3.0)
    y = a * b + a
    ga, gb = tf.gradients(y, [a, b])
    assert _run([ga, gb]) == [4.0, 2.0]


def test_grad_ys_weights_the_output_gradient():
    x = tf.constant(X)
    y = x * x
    gy = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], np.float32)
    (g,) = tf.gradients(y, x, grad_ys=tf.constant(gy))
    np.testing.assert_allclose(_run(g), 2.0 * X * gy, rtol=1e-6)


def test_grad_ys_python_value_and_list_form():
    x = tf.constant(2.0)
    (g,) = tf.gradients([x * x], [x], grad_ys=[3.0])
    assert _run(g) == 12.0


def test_grad_ys_length_mismatch_raises_valueerror():
    x = tf.constant(1.0)
    with pytest.raises(ValueError):
        tf.gradients([x * 2.0, x * 3.0], x, grad_ys=[1.0])


def test_grad_ys_shape_mismatch_raises_valueerror():
    x = tf.constant(X)
    with pytest.raises(ValueError):
        tf.gradients(x * 2.0, x, grad_ys=tf.constant([1.0, 2.0]))


def test_integer_ys_get_ones_of_their_dtype():
    # TF 1.15's _DefaultGradYs fills ones for any non-complex y; gradients
    # flow through no integer tensor (_IsBackpropagatable), so an integer y
    # computed from x gives None, and an integer x's own gradient is the ones.
    i = tf.constant([3, 4], dtype=tf.int64)
    (g,) = tf.gradients(i, i)
    assert g.dtype == tf.int64
    assert g.op.name == "gradients/grad_ys_0"
    np.testing.assert_array_equal(_run(g), [1, 1])
    x = tf.constant([1.0, 2.0])
    assert tf.gradients(tf.cast(x, tf.int32) * 3, x) == [None]
    assert tf.gradients(i * 2, i) == [None]
    assert tf.gradients(tf.cast(i, tf.float32) * 2.0, i) == [None]


def test_complex_ys_need_grad_ys():
    c = tf.constant([1 + 2j], dtype=tf.complex64)
    with pytest.raises(TypeError, match=r"Gradients of complex tensors must set grad_ys"):
        tf.gradients(c * c, c)


def test_given_grad_ys_live_in_the_gradients_name_scope():
    # TF wraps each given grad_ys in an Identity named grad_ys_<i> in the call's scope.
    x = tf.constant(X)
    dy = tf.constant(np.ones_like(X) * 2.0)
    (g,) = tf.gradients(x * 3.0, x, grad_ys=dy, name="gradients_mine")
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert "gradients_mine/grad_ys_0" in names
    np.testing.assert_array_equal(_run(g), np.full_like(X, 6.0))


def test_unconnected_x_gets_none():
    x = tf.constant(1.0)
    z = tf.constant(2.0)
    y = x * 3.0
    assert tf.gradients(y, [z]) == [None]
    gx, gz = tf.gradients(y, [x, z])
    assert gz is None
    assert _run(gx) == 3.0


def test_gradient_of_an_intermediate_tensor():
    x = tf.constant(X)
    h = x * 2.0
    y = h * h  # dy/dh = 2h
    gh, gx = tf.gradients(y, [h, x])
    got_h, got_x = _run([gh, gx])
    np.testing.assert_allclose(got_h, 2.0 * (2.0 * X), rtol=1e-6)
    np.testing.assert_allclose(got_x, 8.0 * X, rtol=1e-6)


def test_gradient_of_a_tensor_with_respect_to_itself_is_grad_ys():
    x = tf.constant(X)
    (g,) = tf.gradients(x, x)
    np.testing.assert_array_equal(_run(g), np.ones_like(X))


def test_stop_gradients_treats_tensors_as_constants():
    # TF documentation example: a = 0, b = 2a, gradients(a + b, [a, b], stop_gradients=[a, b]).
    a = tf.constant(0.0)
    b = 2.0 * a
    stopped = tf.gradients(a + b, [a, b], stop_gradients=[a, b])
    assert _run(stopped) == [1.0, 1.0]


def test_total_derivative_flows_through_an_x_that_depends_on_another_x():
    # TF documentation of stop_gradients: without them, gradients(a + b, [a, b]) with
    # b = 2a gives the total derivatives [3.0, 1.0].
    a = tf.constant(0.0)
    b = 2.0 * a
    assert _run(tf.gradients(a + b, [a, b])) == [3.0, 1.0]


def test_stop_gradients_on_an_intermediate_tensor():
    x = tf.constant(2.0)
    h = x * x
    y = h * 3.0 + x
    (g,) = tf.gradients(y, x, stop_gradients=[h])
    assert _run(g) == 1.0


def test_stop_gradient_op_blocks_the_path():
    x = tf.constant(3.0)
    y = x * tf.stop_gradient(x)  # d/dx treats the second factor as constant
    (g,) = tf.gradients(y, x)
    assert _run(g) == 3.0


def test_gradient_with_respect_to_a_ref_variable():
    v = tf.Variable(X)
    y = tf.reduce_sum(v * v)
    (g,) = tf.gradients(y, v)
    assert g.dtype == tf.float32
    assert g.shape.as_list() == [2, 3]
    np.testing.assert_allclose(_run(g), 2.0 * X, rtol=1e-6)


def test_gradient_with_respect_to_a_resource_variable():
    v = tf.Variable(X, use_resource=True)
    y = tf.reduce_sum(v * 3.0)
    (g,) = tf.gradients(y, v)
    assert g.dtype == tf.float32
    np.testing.assert_allclose(_run(g), np.full_like(X, 3.0))


def test_gradient_with_respect_to_a_variable_read_twice():
    v = tf.Variable(2.0)
    y = v * v.read_value()
    (g,) = tf.gradients(y, v)
    assert _run(g) == 4.0


def test_gradient_shapes_follow_the_xs_including_broadcasting():
    x = tf.constant(X)
    b = tf.constant(np.array([1.0, 2.0, 3.0], np.float32))
    y = tf.reduce_sum((x + b) * 2.0)
    gx, gb = tf.gradients(y, [x, b])
    assert gx.shape.as_list() == [2, 3]
    assert gb.shape.as_list() == [3]
    got_x, got_b = _run([gx, gb])
    np.testing.assert_allclose(got_x, np.full_like(X, 2.0))
    np.testing.assert_allclose(got_b, np.full(3, 4.0, np.float32))


def test_gradient_through_a_placeholder_fed_at_run_time():
    x = tf.placeholder(tf.float32, [None])
    y = tf.reduce_sum(x * x * x)
    (g,) = tf.gradients(y, x)
    value = np.array([1.0, -2.0, 0.5], np.float32)
    np.testing.assert_allclose(_run(g, {x: value}), 3.0 * value**2, rtol=1e-6)


def test_gradient_ops_live_under_the_gradients_name_scope():
    x = tf.constant(1.0)
    (g,) = tf.gradients(x * 2.0, x)
    assert g.op.name.startswith("gradients/")
    (g2,) = tf.gradients(x * 2.0, x, name="my_grads")
    assert g2.op.name.startswith("my_grads/")


def test_op_without_gradient_raises_lookuperror():
    x = tf.constant([1.0, 2.0])
    op = tf.get_default_graph().create_op(
        "MinitfTestOpWithoutGradient", [x], [tf.float32], name="nograd", shapes=[x.shape]
    )
    y = op.outputs[0] * 2.0
    with pytest.raises(
        LookupError,
        match=(
            r"No gradient defined for operation 'nograd' "
            r"\(op type: MinitfTestOpWithoutGradient\)"
        ),
    ):
        tf.gradients(y, x)


def test_not_differentiable_op_gives_none():
    tf.NotDifferentiable("MinitfTestNotDifferentiable")
    x = tf.constant([1.0, 2.0])
    op = tf.get_default_graph().create_op(
        "MinitfTestNotDifferentiable", [x], [tf.float32], name="nd", shapes=[x.shape]
    )
    assert tf.gradients(op.outputs[0] * 2.0, x) == [None]


def test_gate_gradients_gives_the_same_numbers():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    w = np.array([[0.5], [-1.5]], np.float32)
    ta, tw = tf.constant(a), tf.constant(w)
    y = tf.reduce_sum(tf.matmul(ta, tw) * tf.matmul(ta, tw))
    plain = tf.gradients(y, [ta, tw])
    gated = tf.gradients(y, [ta, tw], gate_gradients=True)
    p, q = _run([plain, gated])
    for u, v in zip(p, q):
        np.testing.assert_allclose(u, v, rtol=1e-6)
    r = a @ w
    np.testing.assert_allclose(q[1], a.T @ (2.0 * r), rtol=1e-6)


def test_colocate_gradients_with_ops_places_gradients_with_forward_ops():
    with tf.device("/job:ps/task:0"):
        x = tf.constant(2.0)
        y = x * 3.0
    (g,) = tf.gradients(y, x, colocate_gradients_with_ops=True)
    assert "/job:ps" in g.device


# -- IndexedSlices from gather --------------------------------------------------------------


PARAMS = np.arange(8, dtype=np.float32).reshape(4, 2)


def test_gather_gradient_is_indexed_slices():
    p = tf.constant(PARAMS)
    y = tf.reduce_sum(tf.gather(p, [0, 2, 0]) * 3.0)
    (g,) = tf.gradients(y, p)
    assert isinstance(g, tf.IndexedSlices)
    value = _run(g)
    np.testing.assert_array_equal(np.asarray(value.indices), [0, 2, 0])
    np.testing.assert_array_equal(np.asarray(value.values), np.full((3, 2), 3.0))
    np.testing.assert_array_equal(np.asarray(value.dense_shape), [4, 2])
    expected = np.zeros((4, 2), np.float32)
    np.add.at(expected, [0, 2, 0], np.full((3, 2), 3.0, np.float32))
    np.testing.assert_array_equal(_dense(value, (4, 2)), expected)


def test_gather_gradient_with_respect_to_a_variable():
    v = tf.Variable(PARAMS)
    y = tf.reduce_sum(tf.gather(v, [3, 1]))
    (g,) = tf.gradients(y, v)
    assert isinstance(g, tf.IndexedSlices)
    expected = np.zeros((4, 2), np.float32)
    expected[[3, 1]] = 1.0
    np.testing.assert_array_equal(_dense(_run(g), (4, 2)), expected)


def test_two_gathers_aggregate_into_concatenated_indexed_slices():
    p = tf.constant(PARAMS)
    y = tf.reduce_sum(tf.gather(p, [0, 1])) + tf.reduce_sum(tf.gather(p, [1, 3]) * 2.0)
    (g,) = tf.gradients(y, p)
    assert isinstance(g, tf.IndexedSlices)
    value = _run(g)
    assert sorted(np.asarray(value.indices).tolist()) == [0, 1, 1, 3]
    expected = np.zeros((4, 2), np.float32)
    np.add.at(expected, [0, 1], np.ones((2, 2), np.float32))
    np.add.at(expected, [1, 3], np.full((2, 2), 2.0, np.float32))
    np.testing.assert_array_equal(_dense(value, (4, 2)), expected)


def test_dense_and_sparse_gradients_aggregate_to_the_same_numbers():
    p = tf.constant(PARAMS)
    y = tf.reduce_sum(tf.gather(p, [2])) + tf.reduce_sum(p * 3.0)
    (g,) = tf.gradients(y, p)
    value = _run(g)
    expected = np.full((4, 2), 3.0, np.float32)
    expected[2] += 1.0
    if isinstance(g, tf.IndexedSlices):
        value = _dense(value, (4, 2))
    np.testing.assert_array_equal(np.asarray(value), expected)


def test_mixed_dense_and_sparse_gradients_aggregate_to_indexed_slices():
    # TF 1.15 _AggregatedGrads: if any gradient is IndexedSlices, the sum is IndexedSlices.
    p = tf.constant(PARAMS)
    y = tf.reduce_sum(tf.gather(p, [2])) + tf.reduce_sum(p * 3.0)
    (g,) = tf.gradients(y, p)
    assert isinstance(g, tf.IndexedSlices)


def test_reduce_sum_of_a_scalar_fed_to_an_unknown_shape_placeholder_has_a_gradient():
    # The linear-regression example: its Sum's reduction indices are empty at run time.
    x, y = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    w = tf.Variable(0.0)
    cost = tf.reduce_sum(tf.pow(x * w - y, 2)) / (2 * 1)
    train = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    grad = tf.gradients(cost, w)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: 4.0, y: -2.0}
        # d/dw (x w - y)^2 / 2 = x (x w - y) = 4 * (0 + 2) = 8.
        assert sess.run(grad, feed) == pytest.approx(8.0)
        sess.run(train, feed)
        assert sess.run(w) == pytest.approx(-0.08)


def test_integer_division_of_an_empty_tensor_by_zero_is_empty():
    x = tf.placeholder(tf.int32)
    results = _run(
        [tf.floormod(x, 0), tf.floordiv(x, 0)],
        {x: np.zeros([0], np.int32)},
    )
    assert [r.shape for r in results] == [(0,), (0,)]
