"""Specification of minitf's math ops against TF1 semantics (numpy as the oracle)."""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients import gradient_checker
from minitf.ops.math import math_ops

pytestmark = pytest.mark.timeout(60)

X = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]], dtype=np.float32)
Y = np.array([[2.0, 0.5, -1.5], [3.0, -2.5, 1.25]], dtype=np.float32)
IX = np.array([[7, -7, 5], [0, 9, -4]], dtype=np.int32)
IY = np.array([[2, 2, -3], [5, -4, 3]], dtype=np.int32)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# -- element-wise binary ops: values ---------------------------------------------------------

BINARY_CASES = [
    (tf.add, np.add),
    (tf.subtract, np.subtract),
    (tf.multiply, np.multiply),
    (tf.maximum, np.maximum),
    (tf.minimum, np.minimum),
    (tf.squared_difference, lambda x, y: (x - y) ** 2),
    (tf.floordiv, np.floor_divide),
    (tf.floormod, np.mod),
]


@pytest.mark.parametrize("fn, np_fn", BINARY_CASES)
def test_binary_op_float32_matches_numpy(fn, np_fn):
    value = run(fn(tf.constant(X), tf.constant(Y)))
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, np_fn(X, Y), rtol=1e-6)


@pytest.mark.parametrize("fn, np_fn", BINARY_CASES)
def test_binary_op_int32_matches_numpy(fn, np_fn):
    value = run(fn(tf.constant(IX), tf.constant(IY)))
    assert value.dtype == np.int32
    np.testing.assert_array_equal(value, np_fn(IX, IY))


def test_op_types_of_the_binary_functions():
    x, y = tf.constant(X), tf.constant(Y)
    assert tf.add(x, y).op.type == "Add"  # TF1's tf.add is gen_math_ops.add
    assert tf.subtract(x, y).op.type == "Sub"
    assert tf.sub is tf.subtract and tf.mul is tf.multiply and tf.neg is tf.negative
    assert tf.multiply(x, y).op.type == "Mul"
    quotient = tf.floordiv(x, y)
    assert (quotient.op.name, quotient.op.type) == ("floordiv", "FloorDiv")
    assert tf.mod(x, y).op.type == "FloorMod"
    assert tf.pow(x, y).op.type == "Pow"
    assert tf.maximum(x, y).op.type == "Maximum"
    assert tf.minimum(x, y).op.type == "Minimum"
    assert tf.squared_difference(x, y).op.type == "SquaredDifference"


def test_pow_float_and_int():
    base = np.array([1.5, 2.0, 4.0], np.float32)
    value = run(tf.pow(tf.constant(base), tf.constant([2.0, 0.5, -1.0])))
    np.testing.assert_allclose(value, [2.25, np.sqrt(2.0), 0.25], rtol=1e-6)
    assert run(tf.pow(tf.constant([2, 3]), tf.constant([8, 2]))).tolist() == [256, 9]


def test_pow_of_integers_to_negative_powers_fails_at_run_time():
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(tf.pow(tf.constant([2]), tf.constant([-1])))


def test_floor_division_and_modulo_follow_python_signs():
    x, y = tf.constant([7, -7, 7, -7]), tf.constant([2, 2, -2, -2])
    assert run(tf.floordiv(x, y)).tolist() == [3, -4, -4, 3]
    assert run(tf.floormod(x, y)).tolist() == [1, 1, -1, -1]
    fx, fy = tf.constant([7.5, -7.5]), tf.constant([2.0, 2.0])
    np.testing.assert_allclose(run(fx // fy), [3.0, -4.0])
    np.testing.assert_allclose(run(fx % fy), [1.5, 0.5])


def test_integer_division_by_zero_is_an_invalid_argument_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        run(tf.floordiv(tf.constant([1, 2]), tf.constant([1, 0])))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        run(tf.floormod(tf.constant([1]), tf.constant([0])))


@pytest.mark.parametrize("divisor", [np.int32(0), np.array(0, np.int32), np.array([0], np.int32)])
def test_integer_division_by_a_fed_zero_fails_unless_there_is_nothing_to_divide(divisor):
    x, y = tf.placeholder(tf.int32), tf.placeholder(tf.int32)
    for op in (tf.floordiv(x, y), tf.floormod(x, y)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            run(op, {x: np.array([7, -7], np.int32), y: divisor})
        assert run(op, {x: np.zeros(0, np.int32), y: divisor}).shape == (0,)
    assert run(tf.floordiv(x, y), {x: np.int32(-7), y: np.int32(2)}) == -4  # -7 // 2 by hand


# -- division ---------------------------------------------------------------------------------


def test_truediv_of_floats_is_realdiv():
    t = tf.truediv(tf.constant(X), tf.constant(Y))
    assert t.op.type == "RealDiv" and t.op.name == "truediv"
    np.testing.assert_allclose(run(t), X / Y, rtol=1e-6)


def test_truediv_casts_int32_to_float64_and_int16_to_float32():
    t = tf.truediv(tf.constant([7, -7]), tf.constant([2, 2]))
    assert t.dtype == tf.float64
    np.testing.assert_allclose(run(t), [3.5, -3.5])
    small = tf.truediv(tf.constant([3], dtype=tf.int16), tf.constant([2], dtype=tf.int16))
    assert small.dtype == tf.float32
    assert [op.type for op in tf.get_default_graph().get_operations()].count("Cast") == 4


def test_truediv_rejects_mixed_dtypes():
    with pytest.raises(TypeError, match="x and y must have the same dtype"):
        tf.truediv(tf.constant([1.0]), tf.constant([1]))


def test_div_is_python2_division():
    ints = tf.div(tf.constant([7, -7]), tf.constant([2, 2]))
    assert ints.op.type == "FloorDiv" and ints.op.name == "div"
    assert run(ints).tolist() == [3, -4]
    floats = tf.div(tf.constant([7.0]), tf.constant([2.0]))
    assert floats.op.type == "RealDiv"
    np.testing.assert_allclose(run(floats), [3.5])


def test_divide_uses_the_division_operator():
    t = tf.divide(tf.constant([3.0]), tf.constant([2.0]))
    assert t.op.type == "RealDiv" and t.op.name == "truediv"
    named = tf.divide(tf.constant([3.0]), 2.0, name="half")
    assert named.op.name == "half"
    np.testing.assert_allclose(run(named), [1.5])
    assert tf.divide(3, 2) == 1.5


# -- broadcasting, static shapes and construction errors -------------------------------------


def test_broadcasting_column_with_row():
    a = np.arange(3, dtype=np.float32).reshape(3, 1)
    b = np.arange(4, dtype=np.float32).reshape(1, 4) * 10
    t = tf.constant(a) + tf.constant(b)
    assert t.get_shape().as_list() == [3, 4]
    np.testing.assert_array_equal(run(t), a + b)


def test_static_shape_with_unknown_dimensions():
    x = tf.placeholder(tf.float32, [None, 3])
    assert (x * tf.constant([1.0, 2.0, 3.0])).get_shape().as_list() == [None, 3]
    assert (x + tf.placeholder(tf.float32)).get_shape().ndims is None


def test_incompatible_shapes_raise_value_error_naming_the_dimensions():
    with pytest.raises(ValueError) as info:
        tf.add(tf.constant(np.zeros((2, 3), np.float32)), [1.0, 2.0, 3.0, 4.0])
    message = str(info.value)
    assert "Dimensions must be equal, but are 3 and 4" in message
    assert "(op: 'Add') with input shapes: [2,3], [4]" in message


def test_mixing_float32_and_int32_tensors_is_a_type_error_naming_both():
    with pytest.raises(TypeError) as info:
        tf.constant([1.0]) * tf.constant([1])
    assert "int32" in str(info.value) and "float32" in str(info.value)


def test_python_scalars_take_the_tensor_dtype():
    x = tf.constant([1.5], dtype=tf.float64)
    assert (x + 1).dtype == tf.float64
    assert (2 * x).dtype == tf.float64
    assert (tf.constant([1.0]) + 1).dtype == tf.float32
    with pytest.raises(TypeError):
        tf.constant([1]) + 1.5
    with pytest.raises(TypeError):
        1.5 + tf.constant([1])


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.sqrt(tf.constant([4]))
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.constant([True]) + tf.constant([False])


# -- comparisons and logic --------------------------------------------------------------------

COMPARISONS = [
    (tf.equal, np.equal, "Equal"),
    (tf.not_equal, np.not_equal, "NotEqual"),
    (tf.less, np.less, "Less"),
    (tf.less_equal, np.less_equal, "LessEqual"),
    (tf.greater, np.greater, "Greater"),
    (tf.greater_equal, np.greater_equal, "GreaterEqual"),
]


@pytest.mark.parametrize("fn, np_fn, op_type", COMPARISONS)
def test_comparisons_give_bool_tensors(fn, np_fn, op_type):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    t = fn(tf.constant(x), 2.0)
    assert t.dtype == tf.bool and t.op.type == op_type
    np.testing.assert_array_equal(run(t), np_fn(x, 2.0))
    np.testing.assert_array_equal(run(fn(tf.constant(IX), tf.constant(IY))), np_fn(IX, IY))


def test_logical_ops():
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    tp, tq = tf.constant(p), tf.constant(q)
    values = run([tf.logical_and(tp, tq), tf.logical_or(tp, tq), tf.logical_not(tp)])
    np.testing.assert_array_equal(values[0], p & q)
    np.testing.assert_array_equal(values[1], p | q)
    np.testing.assert_array_equal(values[2], ~p)
    np.testing.assert_array_equal(run(tf.logical_xor(tp, tq)), p ^ q)
    assert tf.logical_xor(tp, tq).op.name == "LogicalXor_1"


@pytest.mark.parametrize("fn", [tf.logical_and, tf.logical_or])
def test_logical_ops_reject_non_bool(fn):
    with pytest.raises(TypeError):
        fn(tf.constant([1.0]), tf.constant([0.0]))


def test_logical_not_rejects_non_bool():
    with pytest.raises(TypeError):
        tf.logical_not(tf.constant([1]))


# -- element-wise unary ops -------------------------------------------------------------------

POSITIVE = np.array([[0.25, 1.0, 2.5], [4.0, 0.5, 9.0]], dtype=np.float32)

UNARY_CASES = [
    (tf.abs, np.abs, X, "Abs"),
    (tf.negative, np.negative, X, "Neg"),
    (tf.sign, np.sign, X, "Sign"),
    (tf.square, np.square, X, "Square"),
    (tf.sqrt, np.sqrt, POSITIVE, "Sqrt"),
    (tf.rsqrt, lambda v: 1 / np.sqrt(v), POSITIVE, "Rsqrt"),
    (tf.exp, np.exp, X, "Exp"),
    (tf.log, np.log, POSITIVE, "Log"),
    (tf.log1p, np.log1p, POSITIVE, "Log1p"),
    (tf.reciprocal, lambda v: 1 / v, X, "Reciprocal"),
    (tf.sigmoid, lambda v: 1 / (1 + np.exp(-v)), X, "Sigmoid"),
    (tf.tanh, np.tanh, X, "Tanh"),
    (tf.sin, np.sin, X, "Sin"),
    (tf.cos, np.cos, X, "Cos"),
    (tf.floor, np.floor, X, "Floor"),
    (tf.ceil, np.ceil, X, "Ceil"),
    (tf.round, np.round, X, "Round"),
]


@pytest.mark.parametrize("fn, np_fn, value, op_type", UNARY_CASES)
def test_unary_op_float32_matches_numpy(fn, np_fn, value, op_type):
    t = fn(tf.constant(value))
    assert t.op.type == op_type and t.op.name == op_type
    assert t.get_shape().as_list() == list(value.shape)
    result = run(t)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, np_fn(value.astype(np.float64)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "fn, np_fn", [(tf.abs, np.abs), (tf.negative, np.negative), (tf.sign, np.sign)]
)
def test_unary_op_int32_matches_numpy(fn, np_fn):
    result = run(fn(tf.constant(IX)))
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, np_fn(IX))


def test_round_is_half_to_even_and_identity_on_integers():
    np.testing.assert_array_equal(
        run(tf.round(tf.constant([0.9, 2.5, 2.3, 1.5, -4.5]))), [1.0, 2.0, 2.0, 2.0, -4.0]
    )
    ints = tf.constant([1, 2])
    assert tf.round(ints) is ints


def test_sigmoid_is_accurate_in_both_tails():
    value = run(tf.sigmoid(tf.constant([-30.0, 30.0])))
    np.testing.assert_allclose(value, [1 / (1 + np.exp(30.0)), 1.0], rtol=1e-6)


def test_sigmoid_and_tanh_names_are_tf_names():
    assert tf.sigmoid(tf.constant([0.0])).op.type == "Sigmoid"
    assert tf.tanh(tf.constant([0.0])).op.type == "Tanh"


# -- add_n and casts --------------------------------------------------------------------------


def test_add_n_sums_its_inputs():
    t = tf.add_n([tf.constant(X), tf.constant(Y), tf.constant(X)])
    assert t.op.type == "AddN" and t.op.get_attr("N") == 3
    np.testing.assert_allclose(run(t), X + Y + X, rtol=1e-6)


def test_add_n_of_one_input_returns_it():
    x = tf.constant(X)
    assert tf.add_n([x]) is x
    named = tf.add_n([x], name="total")
    assert named.op.name == "total"


def test_add_n_errors():
    with pytest.raises(ValueError):
        tf.add_n([])
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
        tf.add_n([tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match="Shapes must be equal rank"):
        tf.add_n([tf.constant([1.0]), tf.constant([[1.0]])])
    with pytest.raises(TypeError, match=r"\[float32, int32\]"):
        tf.add_n([tf.constant([1.0]), tf.constant([1])])


def test_cast_truncates_towards_zero_and_records_types():
    t = tf.cast(tf.constant([1.8, -1.8, 2.2]), tf.int32)
    assert t.op.type == "Cast"
    assert t.op.get_attr("SrcT") == tf.float32 and t.op.get_attr("DstT") == tf.int32
    assert run(t).tolist() == [1, -1, 2]
    assert run(tf.cast(tf.constant([True, False]), tf.float32)).tolist() == [1.0, 0.0]


def test_cast_to_the_same_dtype_returns_the_tensor():
    x = tf.constant([1.0])
    assert tf.cast(x, tf.float32) is x


def test_tf1_cast_helpers():
    x = tf.constant([1, 2])
    assert tf.to_float(x).dtype == tf.float32 and tf.to_float(x).op.name.startswith("ToFloat")
    assert tf.to_double(x).dtype == tf.float64
    assert tf.to_int64(x).dtype == tf.int64
    assert tf.to_int32(tf.constant([2.7])).dtype == tf.int32
    assert run(tf.to_int32(tf.constant([2.7]))).tolist() == [2]


def test_saturate_cast_clamps():
    t = tf.saturate_cast(tf.constant([-5.0, 100.0, 300.0]), tf.uint8)
    assert t.dtype == tf.uint8
    assert run(t).tolist() == [0, 100, 255]


# -- matmul -----------------------------------------------------------------------------------

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.arange(12, dtype=np.float32).reshape(3, 4) - 5


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_with_transposes(ta, tb):
    a = A.T.copy() if ta else A
    b = B.T.copy() if tb else B
    t = tf.matmul(tf.constant(a), tf.constant(b), transpose_a=ta, transpose_b=tb)
    assert t.op.type == "MatMul" and t.get_shape().as_list() == [2, 4]
    assert t.op.get_attr("transpose_a") == ta and t.op.get_attr("transpose_b") == tb
    np.testing.assert_allclose(run(t), A @ B, rtol=1e-6)


def test_matmul_of_integers():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    b = np.array([[7, 8], [9, 10], [11, 12]], np.int32)
    result = run(tf.matmul(a, b))
    assert result.dtype == np.int32 and result.tolist() == [[58, 64], [139, 154]]


def test_batch_matmul_broadcasts_batch_dimensions():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(8, dtype=np.float32).reshape(4, 2)
    t = tf.matmul(tf.constant(a), tf.constant(b))
    assert t.op.type == "BatchMatMulV2" and t.get_shape().as_list() == [2, 3, 2]
    np.testing.assert_allclose(run(t), a @ b)
    t2 = tf.matmul(tf.constant(a), tf.constant(a), transpose_b=True)
    assert t2.op.get_attr("adj_y") is True
    np.testing.assert_allclose(run(t2), a @ a.transpose(0, 2, 1))


def test_matmul_inner_dimension_mismatch_message():
    with pytest.raises(ValueError) as info:
        tf.matmul(tf.constant(np.zeros((2, 3), np.float32)), np.zeros((4, 5), np.float32))
    assert str(info.value) == (
        "Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul') with input "
        "shapes: [2,3], [4,5]."
    )


def test_matmul_rank_errors():
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
        tf.matmul(tf.constant([1.0, 2.0]), tf.constant([[1.0], [2.0]]))
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a"):
        tf.matmul(tf.constant(A), tf.constant(B), transpose_a=True, adjoint_a=True)


def test_matmul_dtype_mismatch():
    with pytest.raises(TypeError, match="int32.*float32"):
        tf.matmul(tf.constant(A), tf.constant(np.ones((3, 4), np.int32)))


def test_matmul_with_unknown_inner_dimension_fails_at_run_time():
    a = tf.placeholder(tf.float32, [2, None])
    t = tf.matmul(a, tf.constant(B))
    assert t.get_shape().as_list() == [2, 4]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
        run(t, {a: np.zeros((2, 5), np.float32)})


# -- reductions -------------------------------------------------------------------------------

R = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5

REDUCTIONS = [
    (tf.reduce_sum, np.sum, "Sum"),
    (tf.reduce_mean, np.mean, "Mean"),
    (tf.reduce_max, np.max, "Max"),
    (tf.reduce_min, np.min, "Min"),
    (tf.reduce_prod, np.prod, "Prod"),
]


@pytest.mark.parametrize("fn, np_fn, op_type", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 2], (-1, -3)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(fn, np_fn, op_type, axis, keepdims):
    value = R / 8 if op_type == "Prod" else R
    t = fn(tf.constant(value), axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = np_fn(value.astype(np.float64), axis=np_axis, keepdims=keepdims)
    assert t.op.type == op_type and t.op.get_attr("keep_dims") == keepdims
    assert t.get_shape().as_list() == list(np.shape(expected))
    result = run(t)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-5)


@pytest.mark.parametrize("fn, np_fn, op_type", REDUCTIONS)
@pytest.mark.parametrize("axis", [[0], [-1], [0, 2], []])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_of_fed_values_give_numpys_bits(fn, np_fn, op_type, axis, keepdims):
    # Fed, so nothing is folded: the kernel runs on the values of the step,
    # with the axes known when the graph is built and with the axes fed.
    value = R / 8 if op_type == "Prod" else R
    x, axes = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    fixed, fed = fn(x, axis=axis, keepdims=keepdims), fn(x, axis=axes, keepdims=keepdims)
    feed = {x: value, axes: np.array(axis, np.int32)}
    expected = np_fn(value, axis=tuple(axis), keepdims=keepdims)
    if op_type == "Mean":  # a sum in float32, then one division by the count
        count = np.prod([value.shape[a] for a in axis], dtype=np.int64)
        expected = np.sum(value, axis=tuple(axis), keepdims=keepdims) / np.float32(count)
    for got in run([fixed, fed], feed):
        assert got.dtype == np.float32 and got.shape == np.shape(expected)
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()


def test_reduction_of_axes_out_of_range_or_repeated_is_an_invalid_argument_error():
    x, axes = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    total = tf.reduce_sum(x, axis=axes)
    for bad in ([3], [0, 0]):
        with pytest.raises(tf.errors.InvalidArgumentError):
            run(total, {x: R, axes: np.array(bad, np.int32)})


def test_reduction_of_integers_keeps_dtype_and_mean_truncates():
    x = tf.constant([[1, 2], [3, 5]])
    assert run(tf.reduce_sum(x)) == 11 and run(tf.reduce_sum(x)).dtype == np.int32
    assert run(tf.reduce_mean(tf.constant([1, 0, 1, 0]))) == 0  # TF's documented example
    assert run(tf.reduce_mean(x, axis=0)).tolist() == [2, 3]
    assert run(tf.reduce_mean(tf.constant([-3, 0]))) == -1  # C++ division truncates
    assert run(tf.reduce_prod(x, axis=1)).tolist() == [2, 15]


def test_reduce_any_and_all():
    x = tf.constant([[True, True], [False, False]])
    assert run(tf.reduce_all(x)) == np.False_
    assert run(tf.reduce_all(x, 1)).tolist() == [True, False]
    assert run(tf.reduce_any(x, 0)).tolist() == [True, True]
    assert tf.reduce_any(x).op.type == "Any" and tf.reduce_all(x).op.type == "All"
    with pytest.raises(TypeError):
        tf.reduce_any(tf.constant([1.0]))


def test_reduction_deprecated_aliases():
    x = tf.constant(R)
    np.testing.assert_allclose(run(tf.reduce_sum(x, reduction_indices=[1])), R.sum(axis=1))
    assert tf.reduce_sum(x, 1, keep_dims=True).get_shape().as_list() == [2, 1, 4]
    with pytest.raises(ValueError):
        tf.reduce_sum(x, axis=1, reduction_indices=1)
    with pytest.raises(ValueError):
        tf.reduce_sum(x, keepdims=True, keep_dims=True)


def test_reduction_axis_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="Invalid reduction dimension 3 for input with 3"):
        tf.reduce_sum(tf.constant(R), axis=3)


def test_reduction_static_shapes_with_unknown_dimensions():
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.reduce_sum(x, 1).get_shape().as_list() == [None]
    assert tf.reduce_mean(x).get_shape().as_list() == []
    assert tf.reduce_max(x, 0, keepdims=True).get_shape().as_list() == [1, 3]
    dynamic_axis = tf.placeholder(tf.int32, [])
    assert tf.reduce_sum(x, dynamic_axis).get_shape().ndims is None
    assert tf.reduce_sum(x, dynamic_axis, keepdims=True).get_shape().as_list() == [None, None]
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert run(tf.reduce_sum(x, dynamic_axis), {x: value, dynamic_axis: -1}).tolist() == [3, 12]


def test_reduction_over_unknown_rank():
    x = tf.placeholder(tf.float32)
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert run(tf.reduce_sum(x), {x: value}) == 15.0


def test_argmax_and_argmin():
    x = np.array([[1.0, 9.0, 3.0], [7.0, 2.0, 8.0]], np.float32)
    t = tf.argmax(tf.constant(x))
    assert t.op.type == "ArgMax" and t.dtype == tf.int64
    assert run(t).tolist() == [1, 0, 1]  # TF1 default axis is 0
    assert run(tf.argmax(x, axis=1)).tolist() == [1, 2]
    assert run(tf.argmin(x, 1)).tolist() == [0, 1]
    assert run(tf.argmin(x, dimension=-1)).tolist() == [0, 1]
    t32 = tf.argmax(x, 1, output_type=tf.int32)
    assert t32.dtype == tf.int32 and run(t32).dtype == np.int32
    assert tf.argmin(x, 1).get_shape().as_list() == [2]
    with pytest.raises(ValueError):
        tf.argmax(x, axis=1, dimension=1)


# -- sequences --------------------------------------------------------------------------------


def test_range():
    t = tf.range(5)
    assert t.op.type == "Range" and t.op.name == "range" and t.dtype == tf.int32
    assert run(t).tolist() == [0, 1, 2, 3, 4]
    assert run(tf.range(3, 18, 3)).tolist() == [3, 6, 9, 12, 15]
    floats = tf.range(3, 1, -0.5)
    assert floats.dtype == tf.float32 and floats.get_shape().as_list() == [4]
    np.testing.assert_allclose(run(floats), [3.0, 2.5, 2.0, 1.5])
    assert tf.range(4, dtype=tf.float64).dtype == tf.float64


def test_range_invalid_arguments():
    with pytest.raises(ValueError, match="Requires delta != 0"):
        tf.range(0, 5, 0)
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0"):
        tf.range(5, 1)
    limit = tf.placeholder(tf.int32, [])
    t = tf.range(5, limit)
    assert t.get_shape().as_list() == [None]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start <= limit"):
        run(t, {limit: 1})


def test_cumsum():
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    assert run(tf.cumsum(x)).tolist() == [[1, 2, 3], [5, 7, 9]]
    assert run(tf.cumsum(x, axis=1)).tolist() == [[1, 3, 6], [4, 9, 15]]
    assert run(tf.cumsum(x, 1, exclusive=True)).tolist() == [[0, 1, 3], [0, 4, 9]]
    assert run(tf.cumsum(x, 1, reverse=True)).tolist() == [[6, 5, 3], [15, 11, 6]]
    assert run(tf.cumsum(x, 1, exclusive=True, reverse=True)).tolist() == [[5, 3, 0], [11, 6, 0]]


# -- operator overloading ---------------------------------------------------------------------

OPERATORS = [
    (lambda a, b: a + b, "add", "AddV2"),
    (lambda a, b: a - b, "sub", "Sub"),
    (lambda a, b: a * b, "mul", "Mul"),
    (lambda a, b: a / b, "truediv", "RealDiv"),
    (lambda a, b: a // b, "floordiv", "FloorDiv"),
    (lambda a, b: a % b, "mod", "FloorMod"),
    (lambda a, b: a**b, "pow", "Pow"),
    (lambda a, b: a < b, "Less", "Less"),
    (lambda a, b: a <= b, "LessEqual", "LessEqual"),
    (lambda a, b: a > b, "Greater", "Greater"),
    (lambda a, b: a >= b, "GreaterEqual", "GreaterEqual"),
]


@pytest.mark.parametrize("operator, name, op_type", OPERATORS)
def test_operator_op_names_and_types(operator, name, op_type):
    t = operator(tf.constant(POSITIVE), tf.constant(POSITIVE))
    assert (t.op.name, t.op.type) == (name, op_type)


@pytest.mark.parametrize("operator, name, op_type", OPERATORS[:7])
def test_reflected_operators_with_python_scalars(operator, name, op_type):
    t = operator(2.0, tf.constant(POSITIVE))
    assert (t.op.name, t.op.type) == (name, op_type)
    assert t.dtype == tf.float32
    np.testing.assert_allclose(run(t), operator(np.float32(2.0), POSITIVE), rtol=1e-6)


def test_operator_values():
    x, y = tf.constant(X), tf.constant(Y)
    values = run([x + y, x - 1, 3 - x, x * 2, x / y, 1 / y, x**2, -x, abs(x)])
    expected = [X + Y, X - 1, 3 - X, X * 2, X / Y, 1 / Y, X**2, -X, np.abs(X)]
    for value, want in zip(values, expected):
        np.testing.assert_allclose(value, want, rtol=1e-6)


def test_unary_operator_names():
    x = tf.constant(X)
    negated, absolute = -x, abs(x)
    assert (negated.op.name, negated.op.type) == ("Neg", "Neg")
    assert (absolute.op.name, absolute.op.type) == ("Abs", "Abs")


def test_matmul_operator():
    t = tf.constant(A) @ tf.constant(B)
    assert (t.op.name, t.op.type) == ("matmul", "MatMul")
    np.testing.assert_allclose(run(t), A @ B)
    r = A @ tf.constant(B)
    assert r.op.name == "matmul_1"
    np.testing.assert_allclose(run(r), A @ B)


def test_logical_operators():
    p, q = tf.constant([True, True, False, False]), tf.constant([True, False, True, False])
    both, either, one, neither = p & q, p | q, p ^ q, ~p
    assert (both.op.name, both.op.type) == ("and", "LogicalAnd")
    assert (either.op.name, either.op.type) == ("or", "LogicalOr")
    assert one.op.name == "xor"
    assert neither.op.type == "LogicalNot"
    values = run([both, either, one, neither])
    assert [v.tolist() for v in values] == [
        [True, False, False, False],
        [True, True, True, False],
        [False, True, True, False],
        [False, False, True, True],
    ]
    with pytest.raises(TypeError):
        tf.constant([1.0]) & tf.constant([0.0])


def test_equality_stays_identity():
    x = tf.constant([1.0])
    same = x
    assert (x == same) is True
    assert (x == tf.constant([1.0])) is False
    assert {x: 1}[same] == 1


def test_operator_inside_a_name_scope():
    with tf.name_scope("layer"):
        t = tf.constant(X) + tf.constant(Y)
    assert t.op.name == "layer/add"


def test_numpy_array_on_the_left_defers_to_the_tensor():
    t = np.ones(3, np.float32) - tf.constant([1.0, 2.0, 3.0])
    assert isinstance(t, tf.Tensor) and t.op.name == "sub"
    np.testing.assert_allclose(run(t), [0.0, -1.0, -2.0])


# -- gradients --------------------------------------------------------------------------------

RNG = np.random.default_rng(7)


def grad_error(fn, *values, delta=1e-3):
    """Largest finite-difference error of ``fn`` w.r.t. each of its float64 inputs."""
    worst = 0.0
    for i, value in enumerate(values):
        with tf.Graph().as_default(), tf.Session():
            inputs = [tf.constant(v) for v in values]
            inputs[i] = tf.placeholder(tf.float64, value.shape)
            y = fn(*inputs)
            err = gradient_checker.compute_gradient_error(
                inputs[i], list(value.shape), y, y.get_shape().as_list(), value, delta=delta
            )
        worst = max(worst, err)
    return worst


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape)


def away_from_zero(*shape):
    return RNG.uniform(0.5, 1.5, size=shape) * RNG.choice([-1.0, 1.0], size=shape)


BINARY_GRADS = [
    (tf.add, rand, rand),
    (lambda a, b: a + b, rand, rand),
    (tf.subtract, rand, rand),
    (tf.multiply, rand, rand),
    (tf.truediv, rand, away_from_zero),
    (tf.maximum, rand, rand),
    (tf.minimum, rand, rand),
    (tf.squared_difference, rand, rand),
    (tf.pow, lambda *s: rand(*s, low=0.5, high=2.0), rand),
    (tf.floormod, lambda *s: rand(*s, low=0.1, high=0.9), lambda *s: rand(*s, low=1.1, high=2)),
]


@pytest.mark.parametrize("fn, make_x, make_y", BINARY_GRADS)
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((3, 1), (1, 4)), ((2, 3), (3,))])
def test_binary_gradients(fn, make_x, make_y, shapes):
    x, y = make_x(*shapes[0]), make_y(*shapes[1])
    assert grad_error(fn, x, y) < 1e-4


def test_floordiv_has_no_gradient():
    x = tf.placeholder(tf.float64, [3])
    assert tf.gradients(tf.floordiv(x, 2.0), x) == [None]


UNARY_GRADS = [
    (tf.abs, away_from_zero),
    (tf.negative, rand),
    (tf.square, rand),
    (tf.sqrt, lambda *s: rand(*s, low=0.5, high=2)),
    (tf.rsqrt, lambda *s: rand(*s, low=0.5, high=2)),
    (tf.exp, rand),
    (tf.log, lambda *s: rand(*s, low=0.5, high=2)),
    (tf.log1p, lambda *s: rand(*s, low=0.0, high=2)),
    (tf.reciprocal, away_from_zero),
    (tf.sigmoid, lambda *s: rand(*s, low=-3, high=3)),
    (tf.tanh, rand),
    (tf.sin, rand),
    (tf.cos, rand),
    (tf.sign, away_from_zero),
    (lambda v: tf.cast(tf.cast(v, tf.float32), tf.float64), rand),
    (lambda v: tf.cumsum(v, 1), rand),
    (lambda v: tf.cumsum(v, 0, exclusive=True, reverse=True), rand),
    (lambda v: tf.add_n([v, 2.0 * v, v * v]), rand),
]


@pytest.mark.parametrize("fn, make", UNARY_GRADS)
def test_unary_gradients(fn, make):
    assert grad_error(fn, make(2, 3)) < 1e-4


@pytest.mark.parametrize("fn", [tf.sigmoid, tf.tanh, tf.sqrt, tf.rsqrt, tf.reciprocal])
def test_second_derivatives(fn):
    def first_derivative(v):
        return tf.gradients(fn(v), v)[0]

    assert grad_error(first_derivative, rand(2, 3, low=0.5, high=2)) < 1e-4


@pytest.mark.parametrize("fn", [tf.floor, tf.ceil, tf.round])
def test_piecewise_constant_ops_have_no_gradient(fn):
    x = tf.placeholder(tf.float64, [3])
    assert tf.gradients(fn(x), x) == [None]


def test_not_differentiable_ops():
    x = tf.placeholder(tf.float64, [3])
    y = tf.cast(tf.argmax(x), tf.float64) + tf.cast(tf.less(x, 0.0), tf.float64)
    assert tf.gradients(y, x) == [None]


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_gradients(ta, tb):
    a = rand(3, 2) if ta else rand(2, 3)
    b = rand(4, 3) if tb else rand(3, 4)
    assert grad_error(lambda p, q: tf.matmul(p, q, transpose_a=ta, transpose_b=tb), a, b) < 1e-4


@pytest.mark.parametrize("adj", [False, True])
def test_batch_matmul_gradients_with_broadcast(adj):
    a, b = rand(2, 2, 3), rand(3, 2)
    b = b.T.copy() if adj else b
    assert grad_error(lambda p, q: tf.matmul(p, q, transpose_b=adj), a, b) < 1e-4
    assert grad_error(lambda p, q: tf.matmul(p, q), rand(1, 2, 3), rand(2, 3, 2)) < 1e-4


REDUCTION_GRADS = [tf.reduce_sum, tf.reduce_mean, tf.reduce_max, tf.reduce_min, tf.reduce_prod]


@pytest.mark.parametrize("fn", REDUCTION_GRADS)
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (-1, True), ([0, 2], False)])
def test_reduction_gradients(fn, axis, keepdims):
    value = rand(2, 3, 2)
    assert grad_error(lambda v: fn(v, axis=axis, keepdims=keepdims), value) < 1e-4


def _sum_to_shape(grad, shape):
    return (
        tf.get_default_graph()
        .create_op("SumToShape", [grad, shape], [tf.float32], attrs={"T": tf.float32})
        .outputs[0]
    )


@pytest.mark.parametrize(
    "grad_shape, target, axes",
    [
        ((2, 3, 4), [3, 1], (0, 2)),  # a leading axis and a broadcast one
        ((2, 3, 4), [1, 3, 4], (0,)),
        ((2, 3, 4), [2, 1, 1], (1, 2)),
        ((2, 3, 4), [], (0, 1, 2)),  # to a scalar
        ((2, 3, 4), [4], (0, 1)),
        ((1, 3), [1, 3], ()),
    ],
)
def test_sum_to_shape_sums_the_leading_and_broadcast_axes(grad_shape, target, axes):
    value = np.arange(np.prod(grad_shape), dtype=np.float32).reshape(grad_shape) / 7
    grad, shape = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    got = run(_sum_to_shape(grad, shape), {grad: value, shape: np.array(target, np.int32)})
    expected = np.sum(value, axis=axes).reshape(target)
    assert got.shape == tuple(target) and got.dtype == np.float32
    assert np.asarray(got).tobytes() == expected.tobytes()


def test_reduction_gradient_with_unknown_batch_dimension():
    x = tf.placeholder(tf.float64, [None, 3])
    (g,) = tf.gradients(tf.reduce_mean(x, 1), x)
    assert g.get_shape().as_list() == [None, 3]
    value = np.zeros((2, 3))
    np.testing.assert_allclose(run(g, {x: value}), np.full((2, 3), 1 / 3))


def test_reduction_gradient_with_dynamic_axis():
    x = tf.placeholder(tf.float64, [2, 3])
    axis = tf.placeholder(tf.int32, [])
    (g,) = tf.gradients(tf.reduce_sum(x * x, axis), x)
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(run(g, {x: value, axis: -1}), 2 * value)


def test_max_gradient_is_split_among_ties():
    x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], tf.float64)
    (g,) = tf.gradients(tf.reduce_max(x, axis=1), x)
    np.testing.assert_allclose(run(g), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])


def test_prod_gradient_with_zeros():
    x = tf.constant([[2.0, 0.0, 3.0], [0.0, 4.0, 0.0], [1.0, 2.0, 5.0]], tf.float64)
    (g,) = tf.gradients(tf.reduce_prod(x, axis=1), x)
    np.testing.assert_allclose(run(g), [[0, 6, 0], [0, 0, 0], [10, 5, 2]])


def test_gradient_of_python_scalar_broadcast():
    x = tf.placeholder(tf.float64, [2, 2])
    (g,) = tf.gradients(tf.reduce_sum(3.0 * x + 1.0), x)
    np.testing.assert_allclose(run(g, {x: np.zeros((2, 2))}), np.full((2, 2), 3.0))


def test_broadcast_gradient_with_unknown_shapes():
    x = tf.placeholder(tf.float64, [None, 1])
    y = tf.placeholder(tf.float64, [1, None])
    gx, gy = tf.gradients(x * y, [x, y])
    xv, yv = np.arange(3.0).reshape(3, 1), np.arange(4.0).reshape(1, 4)
    vx, vy = run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(vx, np.full((3, 1), yv.sum()))
    np.testing.assert_allclose(vy, np.full((1, 4), xv.sum()))


# -- static values ----------------------------------------------------------------------------


def test_constant_arithmetic_folds_for_shape_inference():
    from minitf.framework import tensor_util

    n = tf.constant(3) * 2 + 1
    assert tensor_util.constant_value(n) == 7
    assert tensor_util.constant_value(tf.range(3)).tolist() == [0, 1, 2]
    assert tensor_util.constant_value(tf.cast(tf.constant([2.5]), tf.int32)).tolist() == [2]
    assert math_ops.__all__ and "reduce_sum" in math_ops.__all__
