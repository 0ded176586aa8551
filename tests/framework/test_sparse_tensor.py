"""tf.SparseTensor: construction, fetching (SparseTensorValue) and feeding, as in TF1."""

from __future__ import annotations

import numpy as np
import pytest

import minitf as tf


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_construction_names_dtypes_and_static_shape():
    sp = tf.SparseTensor([[0, 1]], [1.0], [3, 4])
    assert (sp.indices.name, sp.values.name, sp.dense_shape.name) == (
        "SparseTensor/indices:0",
        "SparseTensor/values:0",
        "SparseTensor/dense_shape:0",
    )
    assert sp.indices.dtype == tf.int64 and sp.dense_shape.dtype == tf.int64
    assert sp.dtype == tf.float32
    assert sp.shape.as_list() == [3, 4] and sp.get_shape().as_list() == [3, 4]
    assert tf.SparseTensor([[0, 1]], [1], [3, 4]).values.dtype == tf.int32
    assert tf.sparse.SparseTensor is tf.SparseTensor


@pytest.mark.parametrize(
    "indices, values, dense_shape, message",
    [
        ([[0, 1]], [1.0, 2.0], [3, 4], "Dimensions 1 and 2 are not compatible"),
        ([0, 1], [1.0], [3, 4], "must have rank 2"),
        ([[0, 1]], [1.0], [3, 4, 5], "Dimensions 2 and 3 are not compatible"),
    ],
)
def test_shapes_that_do_not_fit_are_refused(indices, values, dense_shape, message):
    with pytest.raises(ValueError, match=message):
        tf.SparseTensor(indices, values, dense_shape)


def test_run_returns_a_sparse_tensor_value():
    sp = tf.SparseTensor([[0, 1]], [1], [3, 4])
    with tf.Session() as sess:
        value = sess.run(sp)
        nested = sess.run({"sp": sp, "pair": [sp.values]})
        assert sp.eval(session=sess).values.tolist() == [1]
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, [[0, 1]])
    np.testing.assert_array_equal(value.values, [1])
    np.testing.assert_array_equal(value.dense_shape, [3, 4])
    assert isinstance(nested["sp"], tf.SparseTensorValue)
    np.testing.assert_array_equal(nested["pair"][0], [1])


def test_feed_a_sparse_placeholder_a_value_or_a_tuple():
    sp = tf.sparse_placeholder(tf.float32, shape=[3, 4], name="sp")
    assert (sp.indices.name, sp.values.name, sp.dense_shape.name) == (
        "sp/indices:0",
        "sp/values:0",
        "sp/shape:0",
    )
    assert sp.indices.get_shape().as_list() == [None, 2]
    assert sp.shape.as_list() == [3, 4]
    dense = tf.sparse.to_dense(sp)
    expected = np.zeros((3, 4), np.float32)
    expected[0, 1] = 2.0
    with tf.Session() as sess:
        value = sess.run(sp, {sp: tf.SparseTensorValue([[0, 1]], [2.0], [3, 4])})
        np.testing.assert_array_equal(value.values, [2.0])
        np.testing.assert_array_equal(sess.run(dense, {sp: ([[0, 1]], [2.0], [3, 4])}), expected)
    unknown = tf.sparse.placeholder(tf.int64)
    assert unknown.shape.ndims is None


def test_sparse_tensor_to_dense():
    sp = tf.SparseTensor([[0, 1], [2, 0]], [1.0, 2.0], [3, 2])
    with tf.Session() as sess:
        np.testing.assert_array_equal(
            sess.run(tf.sparse_tensor_to_dense(sp, default_value=-1)),
            [[-1, 1], [-1, -1], [2, -1]],
        )
        strings = tf.SparseTensor([[0, 1], [2, 0]], ["a", "b"], [3, 2])
        np.testing.assert_array_equal(
            sess.run(tf.sparse_tensor_to_dense(strings)), [[b"", b"a"], [b"", b""], [b"b", b""]]
        )
        unsorted = tf.SparseTensor([[1], [0]], [1, 2], [3])
        np.testing.assert_array_equal(
            sess.run(tf.sparse_tensor_to_dense(unsorted, validate_indices=False)), [2, 1, 0]
        )
    assert tf.sparse_tensor_to_dense(sp).get_shape().as_list() == [3, 2]
    assert tf.sparse_tensor_to_dense(sp).op.type == "SparseToDense"


@pytest.mark.parametrize(
    "indices, message",
    [
        ([[1], [0]], "indices[1] = [0] is out of order. Many sparse ops require sorted indices."),
        ([[0], [0]], "indices[1] = [0] is repeated"),
        ([[5], [6]], "indices[0] = [5] is out of bounds: need 0 <= index < [3]"),
    ],
)
def test_bad_indices_are_refused_when_densified(indices, message):
    dense = tf.sparse_tensor_to_dense(tf.SparseTensor(indices, [1, 2], [3]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(dense)
    assert message in str(info.value)
