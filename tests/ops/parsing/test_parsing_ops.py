"""tf.parse_example and tf.parse_single_example: ports of TF's parsing_ops_test.py.

Expected values are those of TF's tests (ParseExampleTest,
ParseSingleExampleTest); the error messages are the ones TF 2.x's
``tf.compat.v1`` kernels print for the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitf as tf

F = tf.train.Feature


def floats(v):
    return F(float_list=tf.train.FloatList(value=v))


def ints(v):
    return F(int64_list=tf.train.Int64List(value=v))


def strings(v):
    return F(bytes_list=tf.train.BytesList(value=v))


def serialize(*feature_dicts):
    return [
        tf.train.Example(features=tf.train.Features(feature=d)).SerializeToString()
        for d in feature_dicts
    ]


def run(out):
    with tf.Session() as sess:
        return sess.run(out)


def check(actual: dict, expected: dict):
    assert set(actual) == set(expected)
    for key, value in expected.items():
        got = actual[key]
        if isinstance(value, tuple):
            assert isinstance(got, tf.SparseTensorValue)
            for part, want in zip(got, value):
                np.testing.assert_array_equal(part, want)
        else:
            np.testing.assert_array_equal(got, value)


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_empty_serialized_with_all_defaults():
    b_default = np.array([[b"0.1", b"0.2", b"0.3"]] * 3)
    c_default = np.array([0.5, 0.25], dtype=np.float32)
    features = {
        "st_a": tf.VarLenFeature(tf.int64),
        "a": tf.FixedLenFeature((1, 3), tf.int64, default_value=[0, 42, 0]),
        "b": tf.FixedLenFeature((3, 3), tf.string, default_value=b_default),
        "c:has_a_tricky_name": tf.FixedLenFeature((2,), tf.float32, default_value=c_default),
    }
    out = tf.parse_example(tf.convert_to_tensor(["", ""]), features)
    check(
        run(out),
        {
            "st_a": (np.empty((0, 2), np.int64), np.empty((0,), np.int64), [2, 0]),
            "a": np.array(2 * [[[0, 42, 0]]]),
            "b": np.array(2 * [b_default]),
            "c:has_a_tricky_name": np.array(2 * [c_default]),
        },
    )
    assert out["a"].get_shape().as_list() == [2, 1, 3]
    assert out["st_a"].indices.get_shape().as_list() == [None, 2]
    assert out["st_a"].values.get_shape().as_list() == [None]
    assert out["st_a"].dense_shape.get_shape().as_list() == [2]


def test_required_feature_missing_names_the_example():
    features = {"c": tf.FixedLenFeature((2,), tf.float32), "st_a": tf.VarLenFeature(tf.int64)}
    empty_feature = serialize({"c": F()})
    out = tf.parse_example(empty_feature, features, example_names=["in1"])
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(out)
    assert "Name: in1, Feature: c (data type: float) is required but could not be found." in str(
        info.value
    )
    out = tf.parse_example(["", ""], features)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Name: <unknown>, Feature: c \(data type: float\) is required",
    ):
        run(out)


def test_dense_not_matching_shape_fails():
    serialized = serialize({"a": floats([1, 1, 3])}, {"a": floats([-1, -1])})
    out = tf.parse_example(
        serialized,
        {"a": tf.FixedLenFeature((1, 3), tf.float32)},
        example_names=["passing", "failing"],
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Name: failing, Key: a, Index: 1.  Number of float values != expected.  "
        r"Values size: 2 but output shape: \[1,3\]",
    ):
        run(out)


def test_serialized_containing_sparse():
    serialized = serialize(
        {"st_c": floats([3, 4])},
        {"st_c": floats([])},
        {"st_d": F()},
        {"st_c": floats([1, 2, -1]), "st_d": strings([b"hi"])},
    )
    out = tf.parse_example(
        serialized, {"st_c": tf.VarLenFeature(tf.float32), "st_d": tf.VarLenFeature(tf.string)}
    )
    check(
        run(out),
        {
            "st_c": (
                [[0, 0], [0, 1], [3, 0], [3, 1], [3, 2]],
                np.array([3.0, 4.0, 1.0, 2.0, -1.0], np.float32),
                [4, 3],
            ),
            "st_d": ([[3, 0]], [b"hi"], [4, 1]),
        },
    )


def test_serialized_containing_dense():
    bname = "b*has+a:tricky_name"
    serialized = serialize(
        {"a": floats([1, 1]), bname: strings([b"b0_str"])},
        {"a": floats([-1, -1]), bname: strings([b""])},
    )
    out = tf.parse_example(
        serialized,
        {
            "a": tf.FixedLenFeature((1, 2, 1), dtype=tf.float32),
            bname: tf.FixedLenFeature((1, 1, 1, 1), dtype=tf.string),
        },
    )
    check(
        run(out),
        {
            "a": np.array([[1, 1], [-1, -1]], np.float32).reshape(2, 1, 2, 1),
            bname: np.array([b"b0_str", b""], dtype=object).reshape(2, 1, 1, 1, 1),
        },
    )


def test_concatenated_examples_take_the_last_value_of_a_key():
    first = serialize({"a": floats([10, 10])}, {"b": strings([b"b100"])})
    second = serialize({"a": floats([1, 1]), "b": strings([b"b0_str"])},
                       {"a": floats([-1, -1]), "b": strings([b"b1"])})  # fmt: skip
    out = tf.parse_example(
        [x + y for x, y in zip(first, second)],
        {"a": tf.FixedLenFeature((1, 2, 1), tf.float32), "b": tf.FixedLenFeature((), tf.string)},
    )
    check(
        run(out),
        {
            "a": np.array([[1, 1], [-1, -1]], np.float32).reshape(2, 1, 2, 1),
            "b": [b"b0_str", b"b1"],
        },
    )


def test_dense_scalar_and_defaults():
    serialized = serialize({"a": floats([1])}, {})
    out = tf.parse_example(
        serialized, {"a": tf.FixedLenFeature((1,), tf.float32, default_value=-1)}
    )
    check(run(out), {"a": np.array([[1], [-1]], np.float32)})

    serialized = serialize({"a": floats([1, 1])}, {"b": strings([b"b1"])}, {"b": F()})
    out = tf.parse_example(
        serialized,
        {
            "a": tf.FixedLenFeature((1, 2, 1), tf.float32, default_value=[3.0, -3.0]),
            "b": tf.FixedLenFeature((1, 1, 1, 1), tf.string, default_value="tmp_str"),
        },
    )
    check(
        run(out),
        {
            "a": np.array([[1, 1], [3, -3], [3, -3]], np.float32).reshape(3, 1, 2, 1),
            "b": np.array([b"tmp_str", b"b1", b"tmp_str"], dtype=object).reshape(3, 1, 1, 1, 1),
        },
    )


def test_sequence_features_are_padded():
    serialized = serialize(
        {"c": ints([2])},
        {"a": floats([1, 1]), "b": strings([b"b0_str", b"b1_str"])},
        {"a": floats([-1, -1, 2, 2]), "b": strings([b"b1"])},
        {"a": floats([]), "c": ints([3])},
    )
    features = {
        "a": tf.FixedLenSequenceFeature((2, 1), tf.float32, allow_missing=True),
        "b": tf.FixedLenSequenceFeature((1, 1, 1), tf.string, allow_missing=True),
        "c": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
        "d": tf.FixedLenSequenceFeature([], tf.string, allow_missing=True),
    }
    out = tf.parse_example(serialized, features)
    a = np.array([[0, 0, 0, 0], [1, 1, 0, 0], [-1, -1, 2, 2], [0, 0, 0, 0]], np.float32)
    b = np.array([[b"", b""], [b"b0_str", b"b1_str"], [b"b1", b""], [b"", b""]], dtype=object)
    expected = {
        "a": a.reshape(4, 2, 2, 1),
        "b": b.reshape(4, 2, 1, 1, 1),
        "c": np.array([2, 0, 0, 3], np.int64).reshape(4, 1),
        "d": np.empty((4, 0), dtype=object),
    }
    check(run(out), expected)
    assert out["a"].get_shape().as_list() == [4, None, 2, 1]

    padded = dict(features, a=tf.FixedLenSequenceFeature((2, 1), tf.float32, allow_missing=True,
                                                         default_value=-2.0))  # fmt: skip
    a = np.array([[-2, -2, -2, -2], [1, 1, -2, -2], [-1, -1, 2, 2], [-2, -2, -2, -2]], np.float32)
    check(run(tf.parse_example(serialized, padded)), dict(expected, a=a.reshape(4, 2, 2, 1)))

    out = tf.parse_example(
        serialized,
        {"b": tf.FixedLenSequenceFeature((2, 1, 1), tf.string, allow_missing=True)},
        example_names=["in1", "in2", "in3", "in4"],
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Name: in3, Key: b, Index: 2.  Number of bytes values is not a multiple of "
        r"stride length. Saw 1 values but output shape is: \[\?,2,1,1\]",
    ):
        run(out)


def test_single_example_with_sparse_and_dense():
    (serialized,) = serialize({"c": floats([3, 4]), "st_a": floats([3.0, 4.0])})
    b_default = np.array([[b"x", b"y", b"z"]] * 3)
    out = tf.parse_single_example(
        tf.convert_to_tensor(serialized),
        {
            "st_a": tf.VarLenFeature(tf.float32),
            "a": tf.FixedLenFeature((1, 3), tf.int64, default_value=[1, 2, 3]),
            "b": tf.FixedLenFeature((3, 3), tf.string, default_value=b_default),
            "c": tf.FixedLenFeature((2,), tf.float32),
        },
        example_names=tf.convert_to_tensor("in1"),
    )
    check(
        run(out),
        {
            "st_a": ([[0], [1]], np.array([3.0, 4.0], np.float32), [2]),
            "a": [[1, 2, 3]],
            "b": b_default,
            "c": np.array([3, 4], np.float32),
        },
    )
    assert out["st_a"].indices.get_shape().as_list() == [None, 1]
    assert out["st_a"].dense_shape.get_shape().as_list() == [1]
    assert out["b"].get_shape().as_list() == [3, 3]
    assert out["a"].op.type == "ParseSingleExample"


def test_single_example_errors_name_the_key():
    (serialized,) = serialize({"x": ints([1]), "s": strings([b"a"]), "f": floats([1, 2, 3])})
    cases = [
        ({"y": tf.FixedLenFeature([], tf.float32)},
         "Feature: y (data type: float) is required but could not be found."),
        ({"x": tf.FixedLenFeature([], tf.float32)},
         "Key: x.  Data types don't match. Data type: int64 but expected type: float"),
        ({"s": tf.VarLenFeature(tf.int64)},
         "Key: s.  Data types don't match. Expected type: int64, Actual type: string"),
        ({"f": tf.FixedLenFeature([2], tf.float32)},
         "Key: f.  Number of float values != expected.  Values size: 3 but output shape: [2]"),
        ({"f": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)},
         "Key: f.  Number of float values is not a multiple of stride length."),
    ]  # fmt: skip
    for features, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            run(tf.parse_single_example(serialized, features))
        assert message in str(info.value)


def test_batch_type_errors_name_name_key_and_index():
    serialized = serialize({"x": ints([1])})
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(tf.parse_example(serialized, {"x": tf.FixedLenFeature([], tf.float32)}))
    assert (
        "Name: <unknown>, Key: x, Index: 0.  Data types don't match. Data type: int64 but "
        "expected type: float" in str(info.value)
    )


def test_corrupt_record():
    out = tf.parse_example([b"\x0a\x05\x0a"], {"x": tf.VarLenFeature(tf.float32)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example input"):
        run(out)


def test_single_sequence_feature_missing_is_empty():
    (serialized,) = serialize({})
    out = tf.parse_single_example(
        serialized, {"x": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)}
    )
    assert run(out)["x"].shape == (0, 2)


def test_io_names_and_feeding_a_placeholder():
    records = tf.placeholder(tf.string, [None])
    out = tf.io.parse_example(records, {"v": tf.io.VarLenFeature(tf.int64)})
    with tf.Session() as sess:
        value = sess.run(out["v"], {records: serialize({"v": ints([5, 6])}, {"v": ints([7])})})
    np.testing.assert_array_equal(value.indices, [[0, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(value.values, [5, 6, 7])
    np.testing.assert_array_equal(value.dense_shape, [2, 2])
    assert tf.io.parse_single_example is tf.parse_single_example


@pytest.mark.parametrize(
    "features, error, message",
    [
        ({"a": tf.FixedLenFeature(None, tf.float32)}, ValueError,
         "Missing shape for feature a. Received feature=FixedLenFeature(shape=None, "
         "dtype=tf.float32, default_value=None)."),
        ({"x": tf.FixedLenFeature([None], tf.float32)}, ValueError,
         "First dimension of shape for feature x unknown. Consider using FixedLenSequenceFeature."),
        ({"x": tf.FixedLenFeature([2, None], tf.float32)}, ValueError,
         "All dimensions of shape for feature x need to be known but received [2, None]."),
        ({"x": tf.FixedLenSequenceFeature([2], tf.float32)}, ValueError,
         "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."),
        ({}, ValueError, "Invalid argument: features cannot be empty."),
        (None, ValueError, "Argument `features` cannot be None or falsy. Got None"),
        ({"x": tf.FixedLenFeature([], tf.int32)}, TypeError,
         "Value passed to parameter 'dense_defaults' has DataType int32 not in list of allowed "
         "values: float32, int64, string"),
        ({"x": tf.VarLenFeature(tf.float64)}, TypeError,
         "Value passed to parameter 'sparse_types' has DataType float64"),
        ({"x": 3}, ValueError, "Unsupported int 3 for key 'x'"),
        ({"x": tf.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0, 3.0])}, ValueError,
         "Cannot reshape a tensor with 3 elements to shape [2] (2 elements)"),
    ],
)  # fmt: skip
def test_bad_feature_specs_fail_at_graph_construction(graph, features, error, message):
    with pytest.raises(error) as info:
        tf.parse_example([b""], features)
    assert message in str(info.value)
    assert not graph.get_operations() or all(
        op.type != "ParseExample" for op in graph.get_operations()
    )


def test_serialized_of_the_wrong_rank():
    with pytest.raises(ValueError, match="Input serialized must be a scalar"):
        tf.parse_single_example([b""], {"x": tf.VarLenFeature(tf.float32)})
    with pytest.raises(ValueError, match="Shape must be at most rank 1 but is rank 2"):
        tf.parse_example([[b""]], {"x": tf.VarLenFeature(tf.float32)})
