"""Specification tests for ``tf.constant`` and ``tf.convert_to_tensor`` (TF 1.15 rules)."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _run(t):
    with tf.Session() as sess:
        return sess.run(t)


# -- dtype inference ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (1.5, tf.float32),
        ([1.0, 2.0], tf.float32),
        ([1, 2.5], tf.float32),
        (1, tf.int32),
        ([1, 2, 3], tf.int32),
        (2**31 - 1, tf.int32),
        (2**31, tf.int64),
        (-(2**31) - 1, tf.int64),
        ([1, 2**40], tf.int64),
        (True, tf.bool),
        ([True, False], tf.bool),
        ("abc", tf.string),
        (b"abc", tf.string),
        (np.float64(1.5), tf.float64),
        (np.array([1.0, 2.0]), tf.float64),
        (np.array([1, 2], dtype=np.int64), tf.int64),
        (np.array([1, 2], dtype=np.int16), tf.int16),
        (np.float16(1.0), tf.float16),
        (np.array([1.0], dtype=np.float32), tf.float32),
    ],
)
def test_constant_infers_tf_dtype_from_python_and_numpy_values(value, expected):
    assert tf.constant(value).dtype == expected


def test_constant_python_float_is_rounded_to_float32():
    value = _run(tf.constant(0.1))
    assert value.dtype == np.float32
    assert value == np.float32(0.1)


def test_constant_numpy_float64_keeps_double_precision():
    value = _run(tf.constant(np.array([0.1, 1e-300])))
    assert value.dtype == np.float64
    np.testing.assert_array_equal(value, np.array([0.1, 1e-300]))


def test_constant_big_python_int_keeps_its_value_as_int64():
    value = _run(tf.constant([1, 2**40]))
    assert value.dtype == np.int64
    np.testing.assert_array_equal(value, np.array([1, 2**40], dtype=np.int64))


def test_string_constant_evaluates_to_bytes():
    assert _run(tf.constant("abc")) == b"abc"
    np.testing.assert_array_equal(_run(tf.constant(["a", "bc"])), np.array([b"a", b"bc"]))


def test_unicode_string_is_utf8_encoded():
    assert _run(tf.constant("é")) == "é".encode()


# -- names, shapes, op type -----------------------------------------------------------------


def test_constant_op_type_and_default_names():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    c = tf.constant(3.0, name="c")
    assert a.op.type == "Const"
    assert (a.name, b.name, c.name) == ("Const:0", "Const_1:0", "c:0")
    assert a.op.get_attr("dtype") == tf.float32


def test_constant_name_inside_name_scope():
    with tf.name_scope("outer"):
        t = tf.constant(1)
    assert t.name == "outer/Const:0"


def test_constant_static_shape_is_the_value_shape():
    assert tf.constant(1.0).shape.as_list() == []
    assert tf.constant([[1, 2, 3], [4, 5, 6]]).shape.as_list() == [2, 3]
    assert tf.constant(np.zeros((0, 4))).shape.as_list() == [0, 4]


# -- dtype argument -------------------------------------------------------------------------


def test_dtype_argument_converts_python_ints_to_floats():
    value = _run(tf.constant([1, 2], dtype=tf.float32))
    assert value.dtype == np.float32
    np.testing.assert_array_equal(value, [1.0, 2.0])


def test_dtype_argument_accepts_numpy_and_string_dtypes():
    assert tf.constant(1, dtype=np.int64).dtype == tf.int64
    assert tf.constant(1, dtype="float64").dtype == tf.float64


def test_dtype_argument_int64_keeps_big_values():
    assert _run(tf.constant(2**40, dtype=tf.int64)) == 2**40


def test_float_for_int_dtype_raises_typeerror_with_tf_message():
    with pytest.raises(TypeError) as info:
        tf.constant(1.5, dtype=tf.int32)
    assert str(info.value) == "Expected int32, got 1.5 of type 'float' instead."


def test_float_in_list_for_int_dtype_raises_typeerror():
    with pytest.raises(TypeError, match="Expected int64, got 2.5 of type 'float' instead."):
        tf.constant([1, 2.5], dtype=tf.int64)


def test_python_bools_are_accepted_for_int_and_float_dtypes():
    # TF1's _FilterInt/_FilterFloat accept any numbers.Integral/numbers.Real, bool included.
    assert _run(tf.constant(True, dtype=tf.int32)) == 1
    np.testing.assert_array_equal(_run(tf.constant([True, False], dtype=tf.float32)), [1.0, 0.0])


def test_numpy_float_array_is_truncated_to_an_int_dtype():
    # numpy inputs skip the Python type check: make_tensor_proto calls values.astype(dtype).
    np.testing.assert_array_equal(
        _run(tf.constant(np.array([1.7, -2.2]), dtype=tf.int32)), np.array([1, -2], np.int32)
    )


def test_int_for_bool_dtype_raises_typeerror():
    with pytest.raises(TypeError, match="Expected bool, got 1 of type 'int' instead."):
        tf.constant(1, dtype=tf.bool)


def test_string_for_float_dtype_raises_typeerror():
    with pytest.raises(TypeError, match="Expected float32, got 'a' of type 'str' instead."):
        tf.constant("a", dtype=tf.float32)


def test_numpy_array_is_cast_to_requested_dtype():
    value = _run(tf.constant(np.array([1.7, -2.2]), dtype=tf.float32))
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, np.array([1.7, -2.2], dtype=np.float32))


# -- shape argument (TF1 rules: broadcast a scalar, pad a short list with its last element) --


def test_scalar_is_broadcast_to_shape():
    value = _run(tf.constant(7, shape=[2, 3]))
    np.testing.assert_array_equal(value, np.full((2, 3), 7, dtype=np.int32))
    assert tf.constant(7.0, shape=[2, 3]).shape.as_list() == [2, 3]


def test_list_of_the_right_size_is_reshaped():
    value = _run(tf.constant([1, 2, 3, 4, 5, 6], shape=[2, 3]))
    np.testing.assert_array_equal(value, np.arange(1, 7).reshape(2, 3))


def test_short_list_is_padded_with_its_last_element():
    value = _run(tf.constant([1, 2, 3], shape=[2, 3]))
    np.testing.assert_array_equal(value, [[1, 2, 3], [3, 3, 3]])


def test_too_many_elements_raise_valueerror():
    # TF1's make_tensor_proto: ValueError("Too many elements provided. Needed at most 2, ...").
    with pytest.raises(
        ValueError, match="Too many elements provided. Needed at most 2, but received 3"
    ):
        tf.constant([1, 2, 3], shape=[2])


def test_verify_shape_rejects_a_different_shape():
    with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(3,\), got \(2,\)\."):
        tf.constant([1, 2], shape=[3], verify_shape=True)


def test_verify_shape_rejects_broadcasting_a_scalar():
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.constant(1.0, shape=[2], verify_shape=True)


def test_verify_shape_accepts_the_exact_shape():
    np.testing.assert_array_equal(_run(tf.constant([1, 2], shape=[2], verify_shape=True)), [1, 2])


def test_ragged_nested_list_raises_valueerror():
    # TF1: "Argument must be a dense tensor: [[1, 2], [3]] - got shape [2], but wanted [2, 2]."
    with pytest.raises(ValueError, match="dense tensor"):
        tf.constant([[1, 2], [3]])


def test_unconvertible_object_raises_typeerror():
    with pytest.raises(TypeError):
        tf.constant(object())


# -- convert_to_tensor --------------------------------------------------------------------


def test_convert_to_tensor_returns_tensors_unchanged():
    t = tf.constant(1.0)
    assert tf.convert_to_tensor(t) is t
    assert tf.convert_to_tensor(t, dtype=tf.float32) is t


def test_convert_to_tensor_of_tensor_with_other_dtype_raises_valueerror():
    t = tf.constant(1.0)
    with pytest.raises(
        ValueError, match="Tensor conversion requested dtype int32 for Tensor with dtype float32"
    ):
        tf.convert_to_tensor(t, dtype=tf.int32)


def test_convert_to_tensor_of_python_value_with_incompatible_dtype_raises_typeerror():
    with pytest.raises(TypeError, match="Expected int32, got 1.5 of type 'float' instead."):
        tf.convert_to_tensor(1.5, dtype=tf.int32)


def test_convert_to_tensor_python_values_make_const_ops():
    t = tf.convert_to_tensor([1.0, 2.0])
    assert t.op.type == "Const"
    assert t.dtype == tf.float32
    np.testing.assert_array_equal(_run(t), [1.0, 2.0])


def test_convert_to_tensor_name_argument():
    assert tf.convert_to_tensor(3, name="three").name == "three:0"


def test_preferred_dtype_is_used_when_the_value_fits():
    assert tf.convert_to_tensor(1, preferred_dtype=tf.int64).dtype == tf.int64
    assert tf.convert_to_tensor(1, preferred_dtype=tf.float32).dtype == tf.float32


def test_preferred_dtype_falls_back_to_inference_when_value_does_not_fit():
    assert tf.convert_to_tensor(1.5, preferred_dtype=tf.int32).dtype == tf.float32


def test_preferred_dtype_does_not_change_an_existing_tensor():
    t = tf.constant(1.0)
    assert tf.convert_to_tensor(t, preferred_dtype=tf.int32) is t


def test_dtype_wins_over_preferred_dtype():
    assert tf.convert_to_tensor(1, dtype=tf.float64, preferred_dtype=tf.int64).dtype == tf.float64
