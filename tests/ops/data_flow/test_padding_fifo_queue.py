"""tf.PaddingFIFOQueue: partial shapes, padded batches, and the FIFO queue's waiting and closing.

Expected values are TF 1.x's: ports of TF's padding_fifo_queue_test.py
(the padded batches are its own expected arrays) and the error texts of
padding_fifo_queue.cc and data_flow_ops.py. Threads are joined with
timeouts; a run is known to be blocked when the queue resource reports a
waiting attempt, never by sleeping.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.queue_kernels import DEQUEUE
from tests.ops.data_flow.queue_helpers import WAIT, Background, queue_resource

pytestmark = pytest.mark.timeout(60)

STR_ELEMS = [["a"], ["ab"], ["abc"], ["abc", "d"], ["abc", "d", "e"], ["abc", "d", "e", "f"]]
INT_ELEMS = [[[1]], [[2]], [[3]], [[1, 2]], [[1, 2, 3]], [[1, 2, 3, 4]]]
PADDED_STR = [[b"a", b"", b""], [b"ab", b"", b""], [b"abc", b"", b""], [b"abc", b"d", b""],
              [b"abc", b"d", b"e"]]  # fmt: skip
PADDED_INT = [[[1, 0, 0]], [[2, 0, 0]], [[3, 0, 0]], [[1, 2, 0]], [[1, 2, 3]]]


# -- construction ----------------------------------------------------------------------------


def test_op_type_and_static_shapes():
    q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string], [(None,), (None, 2)], name="pad")
    assert q.queue_ref.op.type == "PaddingFIFOQueueV2"
    assert [s.as_list() for s in q.shapes] == [[None], [None, 2]]
    assert [t.shape.as_list() for t in q.dequeue()] == [[None], [None, 2]]
    assert [t.shape.as_list() for t in q.dequeue_many(2)] == [[2, None], [2, None, 2]]
    assert [t.shape.as_list() for t in q.dequeue_up_to(2)] == [[None, None], [None, None, 2]]
    assert tf.queue.PaddingFIFOQueue is tf.PaddingFIFOQueue is tf.io.PaddingFIFOQueue


@pytest.mark.parametrize("shapes", [None, (None,), [None]])
def test_shapes_must_be_a_list_of_shapes(shapes):
    with pytest.raises(ValueError, match="When providing partial shapes, a list of shapes must"):
        tf.PaddingFIFOQueue(10, tf.float32, shapes)


def test_shapes_are_a_required_argument():
    with pytest.raises(TypeError):
        tf.PaddingFIFOQueue(10, tf.float32)


def test_one_shape_per_component():
    with pytest.raises(
        ValueError,
        match="Shapes must be provided for all components, but received 2 dtypes and 1 shapes.",
    ):
        tf.PaddingFIFOQueue(10, [tf.float32, tf.int32], [(None,)])


def test_enqueue_of_the_wrong_static_shape_fails_when_built():
    q = tf.PaddingFIFOQueue(10, (tf.int32, tf.int32), ((), (2,)))
    with pytest.raises(ValueError):
        q.enqueue(([1, 2], [2, 2]))
    with pytest.raises(ValueError):
        q.enqueue_many((7, [[1, 2], [3, 4], [5, 6]]))


# -- padding ---------------------------------------------------------------------------------------


def _variable_queue(sess, q):
    for s, i in zip(STR_ELEMS, INT_ELEMS):
        sess.run(q.enqueue((s, i)))


def test_dequeue_many_pads_to_the_largest_element():
    q = tf.PaddingFIFOQueue(10, (tf.string, tf.int32), shapes=((None,), (1, None)))
    with tf.Session() as sess:
        _variable_queue(sess, q)
        string_val, int_val = sess.run(q.dequeue_many(5))
        assert string_val.tolist() == PADDED_STR
        np.testing.assert_array_equal(int_val, PADDED_INT)
        string_val, int_val = sess.run(q.dequeue())  # a single element is never padded
        assert string_val.tolist() == [b"abc", b"d", b"e", b"f"]
        np.testing.assert_array_equal(int_val, [[1, 2, 3, 4]])


def test_dequeue_up_to_pads_too():
    q = tf.PaddingFIFOQueue(10, (tf.string, tf.int32), shapes=((None,), (1, None)))
    with tf.Session() as sess:
        _variable_queue(sess, q)
        string_val, int_val = sess.run(q.dequeue_up_to(5))
        assert string_val.tolist() == PADDED_STR
        np.testing.assert_array_equal(int_val, PADDED_INT)


def test_fully_defined_shapes_batch_as_a_fifo_queue():
    q = tf.PaddingFIFOQueue(10, (tf.float32, tf.int32), shapes=((), (None,)))
    floats = [10.0, 20.0, 30.0, 40.0, 50.0]
    ints = [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]
    with tf.Session() as sess:
        sess.run(q.enqueue_many((floats, ints)))
        float_val, int_val = sess.run(q.dequeue_many(4))
        np.testing.assert_array_equal(float_val, floats[:4])
        np.testing.assert_array_equal(int_val, ints[:4])
        float_val, int_val = sess.run(q.dequeue())
        assert float_val == 50.0
        np.testing.assert_array_equal(int_val, [9, 10])


def test_a_batch_pads_each_dimension_on_its_own():
    # Expected by hand: a 1x3 and a 2x1 element in a [None, None] component.
    q = tf.PaddingFIFOQueue(10, tf.float32, [(None, None)])
    with tf.Session() as sess:
        sess.run(q.enqueue(([[1.0, 2.0, 3.0]],)))
        sess.run(q.enqueue(([[4.0], [5.0]],)))
        np.testing.assert_array_equal(
            sess.run(q.dequeue_many(2)),
            [[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], [[4.0, 0.0, 0.0], [5.0, 0.0, 0.0]]],
        )


def test_empty_dequeue_many_has_zero_sized_open_dimensions():
    q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string], [(None,), (None, 2)])
    with tf.Session() as sess:
        ints, strings = sess.run(q.dequeue_many(0))
    assert ints.shape == (0, 0) and ints.dtype == np.int32 and strings.shape == (0, 0, 2)


def test_partially_known_high_dimension():
    q = tf.PaddingFIFOQueue(10, tf.int32, ((4, None, 4, None),))
    elems = np.array([[[[[x] * 4] * 4] * 4] * 4 for x in range(10)], np.int32)
    with tf.Session() as sess:
        sess.run(q.enqueue_many((elems,)))
        np.testing.assert_array_equal(sess.run(q.dequeue_many(10)), elems)


def test_named_components_are_padded_by_name():
    q = tf.PaddingFIFOQueue(5, [tf.int32, tf.float32], [(None,), ()], names=["ids", "w"])
    with tf.Session() as sess:
        sess.run(q.enqueue({"ids": [1, 2, 3], "w": 0.5}))
        sess.run(q.enqueue({"ids": [4], "w": 1.5}))
        batch = sess.run(q.dequeue_many(2))
    np.testing.assert_array_equal(batch["ids"], [[1, 2, 3], [4, 0, 0]])
    np.testing.assert_array_equal(batch["w"], [0.5, 1.5])


# -- run-time checks ---------------------------------------------------------------------------


def test_enqueue_of_a_wrong_partially_known_shape_at_run_time():
    q = tf.PaddingFIFOQueue(10, (tf.int32, tf.int32), ((2, 2), (None, 3)))
    elems_ok = np.ones((2, 2), np.int32)
    bad = tf.placeholder(tf.int32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected \[\?,3\], got \[3,4\]"):
            sess.run(q.enqueue((elems_ok, bad)), {bad: np.ones((3, 4))})
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Shape mismatch in tuple component 1. Expected \[2,\?,3\], got \[2,3,4\]",
        ):
            sess.run(q.enqueue_many((np.ones((2, 2, 2)), bad)), {bad: np.ones((2, 3, 4))})
        assert sess.run(q.size()) == 0


def test_a_shared_queue_with_compatible_shapes_is_one_queue():
    a = tf.PaddingFIFOQueue(10, tf.int32, [(None,)], shared_name="s", name="a")
    b = tf.PaddingFIFOQueue(10, tf.int32, [(3,)], shared_name="s", name="b")
    c = tf.PaddingFIFOQueue(10, tf.int32, [(None, None)], shared_name="s", name="c")
    with tf.Session() as sess:
        sess.run(a.enqueue(([1, 2, 3],)))
        assert sess.run(b.size()) == 1
        with pytest.raises(tf.errors.InvalidArgumentError, match="component shapes"):
            sess.run(c.size())


def test_a_shared_name_of_another_kind_of_queue_fails():
    fifo = tf.FIFOQueue(10, tf.int32, shapes=[(3,)], shared_name="s", name="fifo")
    padding = tf.PaddingFIFOQueue(10, tf.int32, [(3,)], shared_name="s", name="padding")
    with tf.Session() as sess:
        sess.run(fifo.size())
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="Expected FIFOQueue, found PaddingFIFOQueue"
        ):
            sess.run(padding.size())


# -- closing and blocking ----------------------------------------------------------------------


def test_closed_queue_messages():
    q = tf.PaddingFIFOQueue(10, tf.int32, [(None,)], name="q")
    with tf.Session() as sess:
        sess.run(q.enqueue(([1, 2],)))
        sess.run(q.close())
        with pytest.raises(tf.errors.CancelledError, match=r"FIFOQueue '_\d+_q' is closed."):
            sess.run(q.enqueue(([1],)))
        with pytest.raises(
            tf.errors.OutOfRangeError,
            match=r"PaddingFIFOQueue '_\d+_q' is closed and has insufficient elements "
            r"\(requested 2, current size 1\)",
        ):
            sess.run(q.dequeue_many(2))
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(2)), [[1, 2]])
        with pytest.raises(tf.errors.OutOfRangeError, match=r"FIFOQueue '_\d+_q' is closed"):
            sess.run(q.dequeue())


def test_blocking_dequeue_many_pads_what_arrives():
    q = tf.PaddingFIFOQueue(10, tf.int32, [(None,)])
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        consumer = Background(sess, q.dequeue_many(2))
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        sess.run(q.enqueue(([7],)))
        sess.run(q.enqueue(([8, 9],)))
        np.testing.assert_array_equal(consumer.join().result, [[7, 0], [8, 9]])


def test_blocked_dequeue_up_to_returns_the_rest_once_closed():
    q = tf.PaddingFIFOQueue(10, tf.int32, [(None,)])
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        consumer = Background(sess, q.dequeue_up_to(3))
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        sess.run(q.enqueue(([1, 2, 3],)))
        sess.run(q.close())
        np.testing.assert_array_equal(consumer.join().result, [[1, 2, 3]])


def test_session_close_cancels_a_blocked_dequeue_many():
    q = tf.PaddingFIFOQueue(10, tf.int32, [(None,)])
    sess = tf.Session()
    res = queue_resource(sess, q)
    consumer = Background(sess, q.dequeue_many(2))
    assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
    sess.close()
    assert isinstance(consumer.join().error, tf.errors.CancelledError)
