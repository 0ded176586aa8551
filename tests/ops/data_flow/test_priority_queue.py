"""tf.PriorityQueue: the int64 priority in front, lowest first, and TF's checks.

Expected values are TF 1.x's: ports of TF's priority_queue_test.py (the
priorities come out as ``sorted`` of what went in, each with its own side
values) and the error texts of priority_queue.cc and data_flow_ops.py.
Threads are joined with timeouts; a run is known to be blocked when the
queue resource reports a waiting attempt, never by sleeping.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.priority_queue_kernels import PriorityQueue
from minitf.ops.data_flow.queue_kernels import DEQUEUE, ENQUEUE
from tests.ops.data_flow.queue_helpers import WAIT, Background, queue_resource

pytestmark = pytest.mark.timeout(60)


def _side_values(rng, n):
    elem = rng.integers(-5, 5, size=n).astype(np.int64)
    return elem, rng.random(n).astype(bytes), rng.random(n).astype(bytes)


def _assert_sorted_with_their_values(deq, elem, side_0, side_1):
    deq_elem, deq_0, deq_1 = deq
    np.testing.assert_array_equal(deq_elem, sorted(elem))
    allowed = {}
    for e, v0, v1 in zip(elem, side_0, side_1):
        allowed.setdefault(e, []).append((v0, v1))
    for e, v0, v1 in zip(deq_elem, deq_0, deq_1):
        allowed[e].remove((v0, v1))  # each pair comes out once, with its own priority
    assert all(not left for left in allowed.values())


# -- construction ----------------------------------------------------------------------------


def test_the_priority_is_an_int64_component_in_front():
    q = tf.PriorityQueue(10, [tf.string, tf.float32], shapes=[(), (2,)], name="pq")
    assert q.queue_ref.op.type == "PriorityQueueV2"
    assert q.queue_ref.op.get_attr("component_types") == [tf.string, tf.float32]
    assert q.dtypes == [tf.int64, tf.string, tf.float32]
    assert [s.as_list() for s in q.shapes] == [[], [], [2]]
    assert [t.dtype for t in q.dequeue()] == [tf.int64, tf.string, tf.float32]
    assert tf.queue.PriorityQueue is tf.PriorityQueue is tf.io.PriorityQueue


def test_shapes_must_be_given():
    # TF1's generated priority_queue_v2 wants a list: None fails while the graph is built.
    with pytest.raises(
        TypeError, match="Expected list for 'shapes' argument to 'priority_queue_v2'"
    ):
        tf.PriorityQueue(10, [tf.string])
    q = tf.PriorityQueue(10, tf.string, shapes=[])  # [] is one scalar shape
    assert [s.as_list() for s in q.shapes] == [[], []]


def test_names_count_the_priority():
    q = tf.PriorityQueue(10, [tf.int32], shapes=[()], names=["p", "x"])
    with tf.Session() as sess:
        sess.run(q.enqueue({"p": 2, "x": 20}))
        sess.run(q.enqueue({"p": 1, "x": 10}))
        assert sess.run(q.dequeue()) == {"p": 1, "x": 10}
    with pytest.raises(ValueError, match="names must have the same length as dtypes"):
        tf.PriorityQueue(10, [tf.int32], shapes=[()], names=["x"])


def test_an_enqueue_without_an_int64_priority_fails_when_built():
    q = tf.PriorityQueue(2000, tf.string, ((),))
    with pytest.raises(TypeError, match="Expected int64"):
        q.enqueue_many((["a", "b", "c"], ["a", "b", "c"]))  # TF's testInsertingNonInt64Fails
    with pytest.raises(ValueError, match="requested dtype int64 for Tensor with dtype int32"):
        q.enqueue((tf.constant(1), "a"))


# -- order ---------------------------------------------------------------------------------------


def test_round_trip_insert_read_once_sorts():
    rng = np.random.default_rng(0)
    q = tf.PriorityQueue(2000, (tf.string, tf.string), ((), ()))
    elem, side_0, side_1 = _side_values(rng, 100)
    with tf.Session() as sess:
        for e, v0, v1 in zip(elem, side_0, side_1):
            sess.run(q.enqueue((e, tf.constant(v0), tf.constant(v1))))
        _assert_sorted_with_their_values(sess.run(q.dequeue_many(100)), elem, side_0, side_1)


def test_round_trip_insert_once_read_many_and_one_by_one_sorts():
    rng = np.random.default_rng(1)
    q = tf.PriorityQueue(2000, tf.int64, ((),))
    elem = rng.integers(-100, 100, size=1000).astype(np.int64)
    with tf.Session() as sess:
        sess.run(q.enqueue_many((elem, elem)))
        many = np.hstack([sess.run(q.dequeue_many(100))[0] for _ in range(5)])
        take = sess.make_callable(q.dequeue())
        single = [take()[0] for _ in range(500)]
    np.testing.assert_array_equal(np.concatenate([many, single]), sorted(elem))


def test_equal_priorities_come_out_in_enqueue_order():
    q = tf.PriorityQueue(10, tf.int32, ((),))
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([3, 1, 2, 1, 1], [30, 10, 20, 11, 12])))
        priorities, values = sess.run(q.dequeue_many(5))
    np.testing.assert_array_equal(priorities, [1, 1, 1, 2, 3])
    np.testing.assert_array_equal(values, [10, 11, 12, 20, 30])


def test_multi_threaded_inserts_then_one_sorted_read():
    rng = np.random.default_rng(2)
    q = tf.PriorityQueue(2000, (tf.string, tf.string), ((), ()))
    elem, side_0, side_1 = _side_values(rng, 100)
    enqueues = [
        q.enqueue_many((elem[i * 5 : (i + 1) * 5], side_0[i * 5 : (i + 1) * 5],
                        side_1[i * 5 : (i + 1) * 5]))
        for i in range(20)
    ]  # fmt: skip
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        consumer = Background(sess, q.dequeue_many(100))  # waits for all 100, then sorts
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        threads = [threading.Thread(target=sess.run, args=(op,)) for op in enqueues]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        _assert_sorted_with_their_values(consumer.join().result, elem, side_0, side_1)


def test_a_dequeue_many_waits_for_its_whole_batch():
    # Unlike the other queues it takes nothing until it can take all: its batch is sorted.
    q = tf.PriorityQueue(10, tf.int64, ((),))
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        consumer = Background(sess, q.dequeue_many(3))
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        sess.run(q.enqueue((5, 5)))
        sess.run(q.enqueue((9, 9)))
        assert sess.run(q.size()) == 2  # still queued: not taken one by one
        sess.run(q.enqueue((1, 1)))
        np.testing.assert_array_equal(consumer.join().result[0], [1, 5, 9])


def test_fills_capacity_with_many_producers_and_consumers():
    # TF's testRoundTripFillsCapacityMultiThreadedEnqueueAndDequeue (capacity 10).
    rng = np.random.default_rng(3)
    q = tf.PriorityQueue(10, tf.int64, ((),))
    counts = rng.integers(1, 10, size=12)
    values = [rng.integers(5, size=c).astype(np.int64) for c in counts]
    enqueues = [q.enqueue_many((v, v)) for v in values]
    dequeues = [q.dequeue_many(int(c)) for c in rng.permutation(counts)]
    dequeued, mismatched = [], []

    def take(op):
        indices, payload = sess.run(op)
        if not np.array_equal(indices, payload):
            mismatched.append((indices, payload))
        dequeued.extend(indices.tolist())

    with tf.Session() as sess:
        threads = [threading.Thread(target=take, args=(op,)) for op in dequeues]
        threads += [threading.Thread(target=sess.run, args=(op,)) for op in enqueues]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        assert not any(t.is_alive() for t in threads)
    assert mismatched == []
    assert sorted(dequeued) == sorted(np.hstack(values).tolist())


# -- run-time checks, closing and blocking ---------------------------------------------------------


def test_inserting_a_non_scalar_priority_fails():
    priority = tf.placeholder(tf.int64)
    other = tf.placeholder(tf.string)
    q = tf.PriorityQueue(2000, (tf.string,), ((),))
    rng = np.random.default_rng(4)
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Shape mismatch in tuple component 0. Expected \[\], got \[2\]",
        ):
            feed = {priority: np.array([0, 2], np.int64), other: rng.random((3, 5)).astype(bytes)}
            sess.run(q.enqueue((priority, other)), feed)
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Shape mismatch in tuple component 0. Expected \[2\], got \[2,2\]",
        ):
            feed = {
                priority: np.array([[0, 2], [3, 4]], np.int64),
                other: rng.random((2, 3)).astype(bytes),
            }
            sess.run(q.enqueue_many((priority, other)), feed)
        assert sess.run(q.size()) == 0


def test_without_declared_shapes_the_priority_must_still_be_a_scalar():
    # Only a graph made by hand has no shapes (the constructor demands them).
    queue = PriorityQueue("pq", 10, [tf.string], None)
    priority = np.array([1, 2], np.int64)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"scalar, but received shape: \[2\]"):
        queue.validate_tuple([priority, np.array(b"a")], batched=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"scalar, but received shape: \[2\]"):
        queue.validate_tuple([priority[None], np.array([b"a"])], batched=True)
    assert "PriorityQueue's DequeueMany requires the components" in str(queue.dequeue_many_error())


def test_closed_queue_errors():
    q = tf.PriorityQueue(10, tf.int32, ((),), name="pq")
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([4, 2, 3], [40, 20, 30])))
        sess.run(q.close())
        with pytest.raises(tf.errors.CancelledError, match=r"PriorityQueue '_\d+_pq' is closed."):
            sess.run(q.enqueue((1, 10)))
        with pytest.raises(
            tf.errors.OutOfRangeError,
            match=r"PriorityQueue '_\d+_pq' is closed and has insufficient elements "
            r"\(requested 4, current size 3\)",
        ):
            sess.run(q.dequeue_many(4))
        priorities, values = sess.run(q.dequeue_up_to(4))  # what is left, sorted
        np.testing.assert_array_equal(priorities, [2, 3, 4])
        np.testing.assert_array_equal(values, [20, 30, 40])
        with pytest.raises(tf.errors.OutOfRangeError, match=r"\(requested 1, current size 0\)"):
            sess.run(q.dequeue())


def test_blocking_enqueue_to_a_full_queue_and_cancel_pending_enqueues():
    q = tf.PriorityQueue(2, tf.int32, ((),))
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue_many(([5, 6], [50, 60])))
        blocked = Background(sess, q.enqueue((1, 10)))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        assert sess.run(q.dequeue())[0] == 5  # then the waiting enqueue gets in
        blocked.join()
        pending = Background(sess, q.enqueue((7, 70)))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        sess.run(q.close(cancel_pending_enqueues=True))
        assert isinstance(pending.join().error, tf.errors.CancelledError)
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(3))[0], [1, 6])


def test_session_close_cancels_a_blocked_dequeue():
    q = tf.PriorityQueue(10, tf.int32, ((),))
    sess = tf.Session()
    res = queue_resource(sess, q)
    waiter = Background(sess, q.dequeue())
    assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
    sess.close()
    assert isinstance(waiter.join().error, tf.errors.CancelledError)
    assert "Dequeue operation was cancelled" in str(waiter.error)


def test_the_described_state_lists_the_lowest_priorities_first():
    q = tf.PriorityQueue(10, tf.int32, ((),), name="pq")
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([3, 1, 2], [30, 10, 20])))
        (entry,) = [e for e in sess.resource_mgr.describe() if e["kind"] == "queue"]
    assert entry["values"] == [[1, 10], [2, 20], [3, 30]]
