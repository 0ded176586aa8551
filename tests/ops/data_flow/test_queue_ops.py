"""tf.FIFOQueue: graph construction, run-time semantics, blocking, closing and cancelling.

Expected behaviour is TF 1.x's (shared/spec/tf1_semantics.md §4 and TF's
fifo_queue_test.py). Threads are joined with timeouts; a run is known to be
blocked when the queue resource reports a waiting attempt, never by sleeping.
"""

import threading
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitf as tf
from minitf.ops.data_flow.queue_kernels import DEQUEUE, ENQUEUE
from tests.ops.data_flow.queue_helpers import WAIT, Background, queue_resource

pytestmark = pytest.mark.timeout(60)

# -- construction ------------------------------------------------------------------------


def test_queue_op_types_and_properties():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []], name="q")
    assert q.queue_ref.op.type == "FIFOQueueV2"
    assert q.queue_ref.dtype == tf.resource
    assert q.name == "q"
    assert q.dtypes == [tf.float32, tf.int32]
    assert [s.as_list() for s in q.shapes] == [[2], []]
    assert q.names is None
    assert q.queue_ref.op.get_attr("capacity") == 10
    assert q.enqueue([[1.0, 2.0], 3]).type == "QueueEnqueueV2"
    assert q.enqueue_many([[[1.0, 2.0]], [3]]).type == "QueueEnqueueManyV2"
    assert q.dequeue()[0].op.type == "QueueDequeueV2"
    assert q.dequeue_many(2)[0].op.type == "QueueDequeueManyV2"
    assert q.dequeue_up_to(2)[0].op.type == "QueueDequeueUpToV2"
    assert q.close().type == "QueueCloseV2"
    assert q.size().op.type == "QueueSizeV2" and q.size().dtype == tf.int32
    assert q.is_closed().op.type == "QueueIsClosedV2" and q.is_closed().dtype == tf.bool


def test_op_names_follow_tf():
    q = tf.FIFOQueue(10, tf.float32, name="jobs")
    assert q.dequeue().op.name == "jobs_Dequeue"
    assert q.size().op.name == "jobs_Size"
    assert q.close().name == "jobs_Close"
    assert q.is_closed().op.name == "jobs_IsClosed"
    assert q.enqueue(1.0).name == "jobs_enqueue"
    assert q.enqueue_many([[1.0]]).name == "jobs_EnqueueMany"


def test_queue_is_built_outside_control_dependencies():
    c = tf.no_op()
    with tf.control_dependencies([c]):
        q = tf.FIFOQueue(1, tf.float32)
    assert q.queue_ref.op.control_inputs == []


def test_shapes_must_be_fully_defined():
    with pytest.raises(ValueError, match="All shapes must be fully defined"):
        tf.FIFOQueue(10, tf.float32, shapes=[[None, 2]])


def test_a_single_shape_is_accepted_for_one_component():
    assert tf.FIFOQueue(10, tf.float32, shapes=(3, 2)).shapes[0].as_list() == [3, 2]
    assert tf.FIFOQueue(10, tf.float32, shapes=()).shapes[0].as_list() == []


def test_shapes_and_names_must_match_dtypes():
    with pytest.raises(ValueError, match="same length"):
        tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[1], [2], [3]])
    with pytest.raises(ValueError, match="same length"):
        tf.FIFOQueue(10, [tf.float32, tf.int32], names=["a"])


def test_dict_enqueue_rules():
    named = tf.FIFOQueue(10, [tf.float32, tf.int32], names=["x", "y"])
    with pytest.raises(ValueError, match="must enqueue a dictionary"):
        named.enqueue([1.0, 2])
    with pytest.raises(ValueError, match="do not match names of Queue"):
        named.enqueue({"x": 1.0, "z": 2})
    unnamed = tf.FIFOQueue(10, tf.float32)
    with pytest.raises(ValueError, match="must have names to enqueue a dictionary"):
        unnamed.enqueue({"x": 1.0})


def test_static_shape_checks_at_graph_construction():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[2]])
    with pytest.raises(ValueError):
        q.enqueue([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError):
        q.enqueue_many([[1.0, 2.0, 3.0]])  # each element [3] vs declared [2]
    with pytest.raises(ValueError):
        q.enqueue_many(1.0)  # enqueue_many needs rank >= 1
    pair = tf.FIFOQueue(10, [tf.float32, tf.float32])
    with pytest.raises(ValueError):
        pair.enqueue_many([[1.0, 2.0], [1.0, 2.0, 3.0]])  # batch sizes 2 and 3


def test_dequeue_structures_and_static_shapes():
    one = tf.FIFOQueue(10, tf.float32, shapes=[[3]])
    assert isinstance(one.dequeue(), tf.Tensor)
    assert one.dequeue().shape.as_list() == [3]
    assert one.dequeue_many(4).shape.as_list() == [4, 3]
    assert one.dequeue_many(tf.placeholder(tf.int32, [])).shape.as_list() == [None, 3]
    assert one.dequeue_up_to(4).shape.as_list() == [None, 3]
    pair = tf.FIFOQueue(10, [tf.float32, tf.int32])
    assert isinstance(pair.dequeue(), list) and len(pair.dequeue()) == 2
    assert pair.dequeue()[0].shape.ndims is None
    named = tf.FIFOQueue(10, [tf.float32, tf.int32], names=["x", "y"])
    out = named.dequeue()
    assert sorted(out) == ["x", "y"] and out["y"].dtype == tf.int32


# -- running -------------------------------------------------------------------------------


def test_fifo_order_with_enqueue_many_and_dequeue_many():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue(1.0))
        sess.run(q.enqueue_many([[2.0, 3.0, 4.0]]))
        assert sess.run(q.size()) == 4
        assert sess.run(q.dequeue()) == 1.0
        np.testing.assert_array_equal(sess.run(q.dequeue_many(2)), [2.0, 3.0])
        assert sess.run(q.dequeue()) == 4.0
        assert sess.run(q.size()) == 0


def test_tuple_and_dict_elements_round_trip():
    q = tf.FIFOQueue(10, [tf.int32, tf.string], names=["n", "s"], shapes=[[], []])
    with tf.Session() as sess:
        sess.run(q.enqueue_many({"n": [1, 2], "s": [b"a", b"b"]}))
        first = sess.run(q.dequeue())
        assert first == {"n": 1, "s": b"a"}
        batch = sess.run(q.dequeue_many(1))
        np.testing.assert_array_equal(batch["n"], [2])
        assert list(batch["s"]) == [b"b"]


def test_enqueued_values_are_copies_of_fed_arrays():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[3]])
    x = tf.placeholder(tf.float32, [3])
    value = np.array([1.0, 2.0, 3.0], np.float32)
    with tf.Session() as sess:
        sess.run(q.enqueue(x), {x: value})
        value[:] = 0.0
        out = sess.run(q.dequeue())
        np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
        out[0] = 9.0  # the caller owns what it fetched


def test_run_time_shape_and_dtype_checks():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[2, 3, 3]])
    x = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Shape mismatch in tuple component 0. Expected \[2,3,3\], got \[2,3,4\]",
        ):
            sess.run(q.enqueue(x), {x: np.zeros((2, 3, 4))})
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"Shape mismatch in tuple component 0. Expected \[1,2,3,3\], got \[1,2,3,4\]",
        ):
            sess.run(q.enqueue_many(x), {x: np.zeros((1, 2, 3, 4))})
        assert sess.run(q.size()) == 0


def test_empty_enqueue_many_is_a_no_op_even_when_closed():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    x = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        sess.run(q.close())
        sess.run(q.enqueue_many(x), {x: np.zeros(0, np.float32)})
        assert sess.run(q.size()) == 0


def test_dequeue_many_needs_shapes_even_for_zero():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="require the components to have"):
            sess.run(q.dequeue_many(0))


def test_dequeue_many_zero_returns_an_empty_batch_at_once():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
    with tf.Session() as sess:
        a, b = sess.run(q.dequeue_many(0))
    assert a.shape == (0, 2) and a.dtype == np.float32 and b.shape == (0,)


def test_unbounded_capacity():
    q = tf.FIFOQueue(-1, tf.int32, shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue_many([np.arange(1000, dtype=np.int32)]))
        np.testing.assert_array_equal(sess.run(q.dequeue_many(1000)), np.arange(1000))


# -- closing -------------------------------------------------------------------------------


def test_enqueue_to_a_closed_queue_is_cancelled():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        sess.run(q.close())
        assert sess.run(q.is_closed())
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            sess.run(q.enqueue(1.0))


def test_closing_twice_is_cancelled_but_cancel_close_is_not():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        sess.run(q.close())
        with pytest.raises(tf.errors.CancelledError, match="is already closed"):
            sess.run(q.close())
        sess.run(q.close(cancel_pending_enqueues=True))


def test_dequeue_of_a_closed_empty_queue_is_out_of_range():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        sess.run(q.enqueue(5.0))
        sess.run(q.close())
        assert sess.run(q.dequeue()) == 5.0  # elements stay dequeueable after close
        with pytest.raises(
            tf.errors.OutOfRangeError,
            match=r"is closed and has insufficient elements \(requested 1, current size 0\)",
        ):
            sess.run(q.dequeue())


def test_dequeue_up_to_returns_the_rest_once_closed():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1.0, 2.0, 3.0]]))
        sess.run(q.close())
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(2)), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(2)), [3.0])
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(q.dequeue_up_to(2))


def test_dequeue_many_on_a_closed_queue_with_too_few_fails_and_keeps_them():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1.0, 2.0]]))
        sess.run(q.close())
        with pytest.raises(tf.errors.OutOfRangeError, match=r"requested 3, current size 2"):
            sess.run(q.dequeue_many(3))
        np.testing.assert_array_equal(sess.run(q.dequeue_many(2)), [1.0, 2.0])


# -- blocking ------------------------------------------------------------------------------


def test_dequeue_blocks_until_an_enqueue():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        waiter = Background(sess, q.dequeue())
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        sess.run(q.enqueue(7.0))
        assert waiter.join().result == 7.0


def test_enqueue_blocks_while_full():
    q = tf.FIFOQueue(1, tf.float32)
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue(1.0))
        blocked = Background(sess, q.enqueue(2.0))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        assert sess.run(q.size()) == 1
        assert sess.run(q.dequeue()) == 1.0
        blocked.join()
        assert blocked.error is None
        assert sess.run(q.dequeue()) == 2.0


def test_enqueue_many_larger_than_capacity_fills_then_blocks():
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        producer = Background(sess, q.enqueue_many([[1, 2, 3, 4, 5]]))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        assert sess.run(q.size()) == 2
        got = [sess.run(q.dequeue()) for _ in range(5)]
        producer.join()
        assert got == [1, 2, 3, 4, 5]


def test_dequeue_many_takes_elements_as_they_arrive_beyond_capacity():
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        consumer = Background(sess, q.dequeue_many(5))
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        for i in range(5):
            sess.run(q.enqueue(i))
        np.testing.assert_array_equal(consumer.join().result, [0, 1, 2, 3, 4])


def test_blocked_dequeue_many_puts_elements_back_when_closed():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        consumer = Background(sess, q.dequeue_many(4))
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        sess.run(q.enqueue_many([[10, 20]]))  # taken by the waiting dequeue_many
        assert sess.run(q.size()) == 0
        sess.run(q.close())
        consumer.join()
        assert isinstance(consumer.error, tf.errors.OutOfRangeError)
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(4)), [10, 20])


def test_blocked_dequeue_fails_when_the_queue_is_closed():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        waiter = Background(sess, q.dequeue())
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        sess.run(q.close())
        assert isinstance(waiter.join().error, tf.errors.OutOfRangeError)


def test_plain_close_waits_behind_pending_enqueues():
    q = tf.FIFOQueue(1, tf.float32)
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue(1.0))
        pending = Background(sess, q.enqueue(2.0))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        closer = Background(sess, q.close())
        assert res.wait_for_waiting(ENQUEUE, 2, WAIT)  # the close queues behind it
        assert not sess.run(q.is_closed())
        assert sess.run(q.dequeue()) == 1.0  # room: the enqueue, then the close, complete
        pending.join()
        closer.join()
        assert pending.error is None and closer.error is None
        assert sess.run(q.is_closed())
        assert sess.run(q.dequeue()) == 2.0


def test_close_with_cancel_pending_enqueues_fails_them_and_keeps_elements():
    q = tf.FIFOQueue(1, tf.float32)
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue(1.0))
        pending = Background(sess, q.enqueue(2.0))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        sess.run(q.close(cancel_pending_enqueues=True))
        pending.join()
        assert isinstance(pending.error, tf.errors.CancelledError)
        assert "Enqueue operation was cancelled" in str(pending.error)
        assert sess.run(q.dequeue()) == 1.0
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(q.dequeue())


def test_session_close_cancels_a_blocked_dequeue():
    q = tf.FIFOQueue(10, tf.float32)
    sess = tf.Session()
    res = queue_resource(sess, q)
    waiter = Background(sess, q.dequeue())
    assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
    sess.close()
    waiter.join()
    assert isinstance(waiter.error, tf.errors.CancelledError)
    assert "Dequeue operation was cancelled" in str(waiter.error)


def test_a_blocked_op_does_not_hold_up_the_rest_of_its_step():
    # The dequeue is ready first and must wait; the enqueue of the same step
    # then runs and feeds it. A recursive or one-op-at-a-time executor hangs here.
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        value, _ = sess.run([q.dequeue(), q.enqueue(3.0)])
    assert value == 3.0


def test_an_error_elsewhere_in_the_step_cancels_a_blocked_dequeue():
    q = tf.FIFOQueue(10, tf.float32)
    x = tf.placeholder(tf.int32)
    bad = tf.floordiv(x, 0)
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run([q.dequeue(), bad], {x: 1})
        assert res.num_waiting(DEQUEUE) == 0
        sess.run(q.enqueue(1.0))
        assert sess.run(q.size()) == 1  # nothing consumed the element


# -- timeouts ------------------------------------------------------------------------------


def test_run_timeout_raises_deadline_exceeded_and_leaves_nothing_waiting():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=50))
        assert res.num_waiting(DEQUEUE) == 0
        sess.run(q.enqueue(4.0))
        assert sess.run(q.dequeue()) == 4.0


def test_operation_timeout_in_config_is_the_session_default():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=50)) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue())


def test_timed_out_dequeue_many_puts_taken_elements_back():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1, 2]]))
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue_many(3), options=tf.RunOptions(timeout_in_ms=50))
        np.testing.assert_array_equal(sess.run(q.dequeue_many(2)), [1, 2])


# -- sharing -------------------------------------------------------------------------------


def test_queues_with_one_shared_name_are_one_queue():
    a = tf.FIFOQueue(10, tf.float32, shared_name="shared_q", name="a")
    b = tf.FIFOQueue(10, tf.float32, shared_name="shared_q", name="b")
    with tf.Session() as sess:
        sess.run(a.enqueue(1.5))
        assert sess.run(b.size()) == 1
        assert sess.run(b.dequeue()) == 1.5


def test_queues_without_shared_name_are_private():
    a = tf.FIFOQueue(10, tf.float32, name="a")
    b = tf.FIFOQueue(10, tf.float32, name="b")
    with tf.Session() as sess:
        sess.run(a.enqueue(1.5))
        assert sess.run(b.size()) == 0
        assert sess.run(a.size()) == 1


def test_each_session_has_its_own_private_queue():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as one, tf.Session() as two:
        one.run(q.enqueue(1.0))
        assert one.run(q.size()) == 1
        assert two.run(q.size()) == 0


def test_a_shared_queue_with_another_capacity_fails_at_run_time():
    tf.FIFOQueue(10, tf.float32, shared_name="s").size()
    other = tf.FIFOQueue(5, tf.float32, shared_name="s", name="other")
    with tf.Session() as sess:
        sess.run(tf.get_default_graph().get_operation_by_name("fifo_queue_Size").outputs[0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="capacity"):
            sess.run(other.size())


# -- many threads ----------------------------------------------------------------------------


def test_many_producers_and_consumers_lose_and_duplicate_nothing():
    producers, per_producer, consumers = 8, 1000, 4
    q = tf.FIFOQueue(64, tf.int64, shapes=[[]])
    value = tf.placeholder(tf.int64, [])
    enqueue, dequeue = q.enqueue(value), q.dequeue()
    received = [[] for _ in range(consumers)]
    errors_seen = []
    with tf.Session() as sess:
        put = sess.make_callable(enqueue, [value])
        get = sess.make_callable(dequeue)

        def produce(p):
            try:
                for i in range(per_producer):
                    put(p * 1_000_000 + i)
            except Exception as exc:  # noqa: BLE001
                errors_seen.append(exc)

        def consume(c):
            try:
                while True:
                    received[c].append(int(get()))
            except tf.errors.OutOfRangeError:
                return
            except Exception as exc:  # noqa: BLE001
                errors_seen.append(exc)

        threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
        readers = [threading.Thread(target=consume, args=(c,)) for c in range(consumers)]
        for t in threads + readers:
            t.start()
        for t in threads:
            t.join(45)
        sess.run(q.close())
        for t in readers:
            t.join(45)
        assert not any(t.is_alive() for t in threads + readers)
    assert errors_seen == []
    everything = sorted(v for r in received for v in r)
    expected = sorted(p * 1_000_000 + i for p in range(producers) for i in range(per_producer))
    assert everything == expected
    for r in received:  # FIFO: each consumer sees each producer's elements in order
        for p in range(producers):
            mine = [v for v in r if v // 1_000_000 == p]
            assert mine == sorted(mine)


# -- property: the queue against a reference model ---------------------------------------------

_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("enqueue"), st.integers(0, 99)),
        st.tuples(st.just("enqueue_many"), st.lists(st.integers(0, 99), max_size=4)),
        st.tuples(st.just("dequeue"), st.just(0)),
        st.tuples(st.just("dequeue_many"), st.integers(0, 4)),
        st.tuples(st.just("dequeue_up_to"), st.integers(1, 4)),
        st.tuples(st.just("close"), st.booleans()),
        st.tuples(st.just("size"), st.just(0)),
    ),
    max_size=30,
)


def _model_step(model, capacity, closed, kind, arg):
    """What TF's FIFOQueue does; None if the run would block (the test skips it)."""
    if kind == "enqueue":
        if closed:
            return ("error", tf.errors.CancelledError)
        if len(model) >= capacity:
            return None
        model.append(arg)
        return ("ok", None)
    if kind == "enqueue_many":
        if not arg:
            return ("ok", None)
        if closed:
            return ("error", tf.errors.CancelledError)
        if len(model) + len(arg) > capacity:
            return None
        model.extend(arg)
        return ("ok", None)
    if kind == "dequeue":
        if model:
            return ("ok", model.popleft())
        return ("error", tf.errors.OutOfRangeError) if closed else None
    if kind == "dequeue_many":
        if len(model) >= arg:
            return ("ok", [model.popleft() for _ in range(arg)])
        return ("error", tf.errors.OutOfRangeError) if closed else None
    if kind == "dequeue_up_to":
        if len(model) >= arg:
            return ("ok", [model.popleft() for _ in range(arg)])
        if not closed:
            return None
        if model:
            return ("ok", [model.popleft() for _ in range(len(model))])
        return ("error", tf.errors.OutOfRangeError)
    if kind == "size":
        return ("ok", len(model))
    raise AssertionError(kind)


@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(1, 6), operations=_OPERATIONS)
def test_queue_matches_a_reference_fifo(capacity, operations):
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(capacity, tf.int32, shapes=[[]])
        one = tf.placeholder(tf.int32, [])
        many = tf.placeholder(tf.int32, [None])
        n = tf.placeholder(tf.int32, [])
        build = {
            "enqueue": (q.enqueue(one), one),
            "enqueue_many": (q.enqueue_many(many), many),
            "dequeue": (q.dequeue(), None),
            "dequeue_many": (q.dequeue_many(n), n),
            "dequeue_up_to": (q.dequeue_up_to(n), n),
            "size": (q.size(), None),
        }
        closers = {False: q.close(), True: q.close(cancel_pending_enqueues=True)}
    model, closed = deque(), False
    with tf.Session(graph=graph) as sess:
        for kind, arg in operations:
            if kind == "close":
                if closed and not arg:
                    with pytest.raises(tf.errors.CancelledError):
                        sess.run(closers[arg])
                else:
                    sess.run(closers[arg])
                closed = True
                continue
            expected = _model_step(model, capacity, closed, kind, arg)
            if expected is None:
                continue  # it would block
            fetch, placeholder = build[kind]
            feed = {} if placeholder is None else {placeholder: np.asarray(arg, np.int32)}
            outcome, value = expected
            if outcome == "error":
                with pytest.raises(value):
                    sess.run(fetch, feed)
                continue
            got = sess.run(fetch, feed)
            if value is not None:
                np.testing.assert_array_equal(got, value)
        assert sess.run(q.size()) == len(model)


def test_other_steps_on_the_session_run_while_one_is_blocked():
    q = tf.FIFOQueue(10, tf.float32)
    v = tf.Variable(0.0)
    bump = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        res = queue_resource(sess, q)
        waiter = Background(sess, q.dequeue())
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        for _ in range(100):
            sess.run(bump)
        assert sess.run(v) == 100.0
        assert waiter.thread.is_alive()
        sess.run(q.enqueue(1.0))
        assert waiter.join().result == 1.0


def test_a_named_element_with_a_string_component_goes_through():
    q = tf.FIFOQueue(
        3, [tf.float32, tf.int32, tf.string], shapes=[[], [], []], names=["a", "b", "c"]
    )
    put = q.enqueue({"a": 1.0, "b": 2, "c": "hello"})
    with tf.Session() as sess:
        sess.run(put)
        assert sess.run(q.dequeue()) == {"a": 1.0, "b": 2, "c": b"hello"}


def test_a_deadline_names_the_waiting_op_and_what_it_waits_for():
    q = tf.FIFOQueue(3, tf.float32, shapes=[], name="tokens")
    take = q.dequeue_many(2, name="take_two")
    with tf.Session() as sess:
        sess.run(q.enqueue(1.0))
        with pytest.raises(tf.errors.DeadlineExceededError) as raised:
            sess.run(take, options=tf.RunOptions(timeout_in_ms=200))
        assert "Timed out waiting for notification" in raised.value.message  # TF's text
        assert "take_two waits for queue" in raised.value.message
        assert "needs 2" in raised.value.message  # (the one element is held by the attempt)
        assert sess.run(q.size()) == 1  # nothing was lost: the element is still there


def test_on_a_cluster_the_deadline_names_the_task_and_the_accumulator_short_of_gradients():
    from minitf.runtime.distributed.launcher import LocalCluster

    with LocalCluster({"ps": 1, "worker": 1}, output=None) as cluster:
        with tf.device("/job:ps/task:0"):
            acc = tf.ConditionalAccumulator(tf.float32, shape=[], shared_name="grads")
            take = acc.take_grad(2)
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(tf.errors.DeadlineExceededError) as raised:
                sess.run(take, options=tf.RunOptions(timeout_in_ms=300))
    message = raised.value.message
    assert "accumulator grads has 0 of 2 gradients for global step 0" in message
    assert "(on /job:ps/replica:0/task:0)" in message
