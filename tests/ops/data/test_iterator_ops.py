"""Ports of TF 1.15's iterator tests (tensorflow/python/data/kernel_tests/iterator_test.py)."""

import numpy as np
import pytest

import minitf as tf


def test_initializable_iterator_starts_over_when_initialized_again():
    # iterator_test: an initializable iterator, read to its end twice
    dataset = tf.data.Dataset.range(3)
    iterator = dataset.make_initializable_iterator()
    next_element = iterator.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(next_element)
        for _ in range(2):
            sess.run(iterator.initializer)
            assert [sess.run(next_element) for _ in range(3)] == [0, 1, 2]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(next_element)
            with pytest.raises(tf.errors.OutOfRangeError):  # and again
                sess.run(next_element)


def test_reinitializable_iterator_from_structure():
    # iterator_test.testReinitializableIterator
    dataset_3 = tf.data.Dataset.from_tensors(tf.constant([1, 2, 3]))
    dataset_4 = tf.data.Dataset.from_tensors(tf.constant([4, 5, 6, 7]))
    iterator = tf.data.Iterator.from_structure(dataset_3.output_types, [None])
    init_3 = iterator.make_initializer(dataset_3)
    init_4 = iterator.make_initializer(dataset_4)
    get_next = iterator.get_next()
    assert iterator.output_types == dataset_3.output_types
    assert iterator.output_shapes.as_list() == [None]
    assert (iterator._iterator_resource.op.type, init_3.type, get_next.op.type) == (
        "IteratorV2",
        "MakeIterator",
        "IteratorGetNext",
    )
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(get_next)
        for init, expected in [(init_3, [1, 2, 3]), (init_4, [4, 5, 6, 7]), (init_3, [1, 2, 3])]:
            sess.run(init)
            np.testing.assert_array_equal(sess.run(get_next), expected)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(get_next)


def test_reinitializable_iterator_static_errors():
    # iterator_test.testReinitializableIteratorStaticErrors
    with pytest.raises(TypeError):  # shapes that do not nest as the types
        tf.data.Iterator.from_structure((tf.int64, tf.float64), [None])
    iterator = tf.data.Iterator.from_structure((tf.int64, tf.float64), ([None], []))
    with pytest.raises(
        ValueError, match="The two structures don't have the same nested structure."
    ):
        iterator.make_initializer(
            tf.data.Dataset.from_tensors(
                ((tf.constant([1, 2, 3], tf.int64),), (tf.constant([4.0, 5.0], tf.float64),))
            )
        )
    with pytest.raises(TypeError):  # other types
        iterator.make_initializer(
            tf.data.Dataset.from_tensors((tf.constant([1, 2, 3]), tf.constant([4.0])))
        )
    with pytest.raises(TypeError):  # incompatible shapes
        iterator.make_initializer(
            tf.data.Dataset.from_tensors(
                (tf.constant([[1, 2]], tf.int64), tf.constant([4.0], tf.float64))
            )
        )


def test_one_shot_iterator_of_nested_structures():
    dataset = tf.data.Dataset.from_tensor_slices(({"a": [1, 2]}, ([3.0, 4.0], [5, 6])))
    iterator = dataset.make_one_shot_iterator()
    assert iterator._iterator_resource.op.type == "OneShotIterator"
    assert iterator.output_types == ({"a": tf.int32}, (tf.float32, tf.int32))
    next_element = iterator.get_next()
    with tf.Session() as sess:
        first = sess.run(next_element)
        second = sess.run(next_element)
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(next_element)
    assert (first[0]["a"], first[1][0], first[1][1]) == (1, 3.0, 5)
    assert (second[0]["a"], second[1][0], second[1][1]) == (2, 4.0, 6)


def test_iterators_with_one_shared_name_are_one_resource():
    # iterator_test.testSimpleSharedResource, in one session's resource manager
    first = tf.data.Dataset.range(4).make_initializable_iterator(shared_name="shared")
    second = tf.data.Iterator.from_structure(tf.int64, [], shared_name="shared")
    with tf.Session() as sess:
        sess.run(first.initializer)
        assert sess.run(first.get_next()) == 0
        assert sess.run(second.get_next()) == 1  # the same iterator, one element further
