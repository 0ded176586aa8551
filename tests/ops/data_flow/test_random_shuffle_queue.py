"""tf.RandomShuffleQueue: random order, min_after_dequeue, seeds, closing and blocking.

Expected values are TF 1.x's: most tests are ports of TF's
random_shuffle_queue_test.py (the multiset of what comes out, the number
of dequeues that can finish, the error texts of random_shuffle_queue_op.cc).
minitf does not reproduce TF's Philox stream, so no test pins an order.
Threads are joined with timeouts; a run is known to be blocked when the
queue resource reports a waiting attempt, never by sleeping.
"""

import hashlib
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitf as tf
from minitf.framework.random_seed import DEFAULT_GRAPH_SEED
from minitf.ops.data_flow.queue_kernels import DEQUEUE, ENQUEUE
from tests.ops.data_flow.queue_helpers import WAIT, Background, queue_resource

pytestmark = pytest.mark.timeout(60)


def run_all(sess, fetch, times):
    return [sess.run(fetch) for _ in range(times)]


# -- construction ----------------------------------------------------------------------------


def test_op_type_attributes_and_names():
    q = tf.RandomShuffleQueue(10, 5, tf.float32, shapes=[[2]], name="shuffle")
    op = q.queue_ref.op
    assert op.type == "RandomShuffleQueueV2"
    assert op.get_attr("capacity") == 10 and op.get_attr("min_after_dequeue") == 5
    assert q.dequeue().op.type == "QueueDequeueV2"
    assert q.dequeue().op.name == "shuffle_Dequeue_1"
    assert q.dequeue_many(3).shape.as_list() == [3, 2]
    assert q.dequeue_up_to(3).shape.as_list() == [None, 2]
    assert tf.queue.RandomShuffleQueue is tf.RandomShuffleQueue is tf.io.RandomShuffleQueue


def test_seeds_follow_tf():
    # TF's data_flow_ops.RandomShuffleQueue: no seed at all is (0, 0) — random;
    # an op seed alone uses the default graph seed; a graph seed with a
    # shared name derives seed2 from both (md5), not from the op count.
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(10, 0, tf.float32)
        assert (q.queue_ref.op.get_attr("seed"), q.queue_ref.op.get_attr("seed2")) == (0, 0)
        q = tf.RandomShuffleQueue(10, 0, tf.float32, seed=7)
        assert q.queue_ref.op.get_attr("seed") == DEFAULT_GRAPH_SEED
        assert q.queue_ref.op.get_attr("seed2") == 7
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        q = tf.RandomShuffleQueue(10, 0, tf.float32, shared_name="sh")
        expected = int(hashlib.md5(b"5sh").hexdigest()[:8], 16) & 0x7FFFFFFF
        assert expected == 479829233  # what TF 1.x gives these seeds
        assert (q.queue_ref.op.get_attr("seed"), q.queue_ref.op.get_attr("seed2")) == (5, expected)


def test_enqueue_with_a_wrong_shape_fails_when_built():
    q = tf.RandomShuffleQueue(10, 5, tf.float32, shapes=tf.TensorShape([3, 2]))
    q.enqueue(([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],))
    with pytest.raises(ValueError):
        q.enqueue(([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],))


# -- running -------------------------------------------------------------------------------------


def test_scalar_shapes_every_element_comes_out_once():
    q = tf.RandomShuffleQueue(10, 0, [tf.int32, tf.int32], shapes=[(), (1,)])
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1, 2, 3, 4], [[5], [6], [7], [8]]]))
        sess.run(q.enqueue([9, [10]]))
        results = [(int(a), int(b[0])) for a, b in run_all(sess, q.dequeue(), 2)]
        a, b = sess.run(q.dequeue_many(3))
        results += [(int(a[i]), int(b[i][0])) for i in range(3)]
    assert sorted(results) == [(1, 5), (2, 6), (3, 7), (4, 8), (9, 10)]


def test_enqueue_many_twice_and_dequeue_many():
    q = tf.RandomShuffleQueue(10, 0, tf.float32, ((),))
    elems = [10.0, 20.0, 30.0, 40.0, 50.0]
    with tf.Session() as sess:
        sess.run(q.enqueue_many((elems,)))
        sess.run(q.enqueue_many((elems,)))
        got = list(sess.run(q.dequeue_many(5))) + list(sess.run(q.dequeue_up_to(5)))
        assert sess.run(q.size()) == 0
    assert sorted(got) == sorted(elems + elems)


def test_named_components_come_out_as_dicts():
    q = tf.RandomShuffleQueue(10, 0, [tf.int32, tf.string], shapes=[(), ()], names=["n", "s"])
    with tf.Session() as sess:
        sess.run(q.enqueue_many({"n": [1, 2, 3], "s": [b"a", b"b", b"c"]}))
        batch = sess.run(q.dequeue_many(3))
    assert sorted(zip(batch["n"].tolist(), batch["s"].tolist())) == [
        (1, b"a"), (2, b"b"), (3, b"c"),
    ]  # fmt: skip


def test_empty_dequeue_many_and_up_to():
    q = tf.RandomShuffleQueue(10, 0, tf.float32, shapes=())
    with tf.Session() as sess:
        assert sess.run(q.dequeue_many(0)).tolist() == []
        sess.run(q.enqueue(10.0))
        assert sess.run(q.dequeue_up_to(0)).tolist() == []
        assert sess.run(q.size()) == 1


def test_dequeue_many_without_shapes_fails():
    q = tf.RandomShuffleQueue(10, 0, tf.float32)
    with tf.Session() as sess:
        sess.run(q.enqueue(tf.constant([10.0, 20.0], shape=(1, 2))))
        message = (
            "RandomShuffleQueue's DequeueMany and DequeueUpTo require the components to have "
            "specified shapes."
        )
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(q.dequeue_many(0))
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(q.dequeue_up_to(1))
        assert sess.run(q.size()) == 1


def test_min_after_dequeue_must_be_below_the_capacity():
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="min_after_dequeue 5 must be < capacity 5"
        ):
            sess.run(tf.RandomShuffleQueue(5, 5, tf.float32).size())
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="min_after_dequeue -1 must be >= 0"
        ):
            sess.run(tf.RandomShuffleQueue(5, -1, tf.float32).size())
        assert sess.run(tf.RandomShuffleQueue(-1, 3, tf.float32).size()) == 0  # unbounded


def test_each_element_is_equally_likely_to_come_out_first():
    # Four elements, min_after_dequeue 0: the first dequeue takes each one a
    # quarter of the time. 2000 draws: each count is 500 ± 22 (one standard
    # deviation); the bounds are more than four of them away.
    q = tf.RandomShuffleQueue(10, 0, tf.int32, shapes=(), seed=11)
    with tf.Session() as sess:
        fill = sess.make_callable(q.enqueue_many(([0, 1, 2, 3],)))
        first = sess.make_callable(q.dequeue())
        rest = sess.make_callable(q.dequeue_many(3))
        counts = Counter()
        for _ in range(2000):
            fill()
            counts[int(first())] += 1
            rest()
    assert sorted(counts) == [0, 1, 2, 3]
    assert all(400 < c < 600 for c in counts.values()), counts


def _orders(seed_pair, graph_seed=None):
    with tf.Graph().as_default() as g:
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        q = tf.RandomShuffleQueue(10, 5, tf.int32, ((),), seed=seed_pair)
        with tf.Session(graph=g) as sess:
            sess.run(q.enqueue_many(([1, 2, 3, 4, 5, 6, 7, 8, 9, 10],)))
            first = sess.run(q.dequeue_many(5)).tolist()
            sess.run(q.close())
            return first, sess.run(q.dequeue_many(5)).tolist()


def test_the_same_seeds_give_the_same_order_in_a_new_graph():
    assert _orders(1729, graph_seed=3) == _orders(1729, graph_seed=3)


def test_dequeue_many_in_different_orders():
    # TF's testDequeueManyInDifferentOrders: two seeds, before and after close.
    (a, c), (b, d) = _orders(1729), _orders(87539319)
    results = [a, b, c, d]
    for i in range(1, 4):
        for j in range(i):
            assert results[i] != results[j]
    assert sorted(a + c) == sorted(b + d) == list(range(1, 11))


# -- min_after_dequeue and closing -------------------------------------------------------------


def test_dequeue_from_closed_queue_drains_below_min_after_dequeue():
    q = tf.RandomShuffleQueue(10, 2, tf.float32, name="q")
    elems = [10.0, 20.0, 30.0, 40.0]
    with tf.Session() as sess:
        sess.run(q.enqueue_many((elems,)))
        sess.run(q.close())
        assert sorted(run_all(sess, q.dequeue(), 4)) == elems
        with pytest.raises(
            tf.errors.OutOfRangeError,
            match=r"RandomShuffleQueue '_\d+_q' is closed and has insufficient elements "
            r"\(requested 1, current size 0\)",
        ):
            sess.run(q.dequeue())


def test_blocking_dequeue_keeps_min_after_dequeue_until_closed():
    q = tf.RandomShuffleQueue(10, 2, tf.float32)
    elems = [10.0, 20.0, 30.0, 40.0]
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue_many((elems,)))
        got = run_all(sess, q.dequeue(), 2)  # 4 > 2, then 3 > 2
        waiter = Background(sess, q.dequeue())  # 2 is not > 2: it waits
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        assert sess.run(q.size()) == 2
        sess.run(q.close())  # the min_after_dequeue rule is lifted
        got.append(waiter.join().result)
        got.append(sess.run(q.dequeue()))
    assert sorted(got) == elems


def test_blocking_dequeue_up_to_smaller_than_min_after_dequeue():
    q = tf.RandomShuffleQueue(capacity=10, min_after_dequeue=2, dtypes=tf.float32, shapes=((),))
    elems = [10.0, 20.0, 30.0, 40.0]
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue_many((elems,)))
        first = Background(sess, q.dequeue_up_to(3))  # takes 2, then waits for a third
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        assert sess.run(q.size()) == 2
        sess.run(q.close())
        got = list(first.join().result)
        assert len(got) == 3
        last = sess.run(q.dequeue_up_to(3))  # only one is left
        assert len(last) == 1
    assert sorted(got + list(last)) == elems


def test_blocking_dequeue_many_from_closed_queue_gives_back_what_it_took():
    q = tf.RandomShuffleQueue(10, 0, tf.float32, ((),), name="q")
    elems = [10.0, 20.0, 30.0, 40.0]
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue_many((elems,)))
        got = list(sess.run(q.dequeue_many(3)))
        second = Background(sess, q.dequeue_many(3))  # takes the last one and waits
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        assert sess.run(q.size()) == 0
        sess.run(q.close())
        assert isinstance(second.join().error, tf.errors.OutOfRangeError)
        assert "(requested 2, current size 0)" in str(second.error)
        got += list(sess.run(q.dequeue_many(q.size())))  # the element taken came back
    assert sorted(got) == elems


def test_blocking_dequeue_many_from_closed_empty_queue():
    q = tf.RandomShuffleQueue(10, 5, tf.float32, ((),))
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        waiters = [Background(sess, q.dequeue_many(4)), Background(sess, q.dequeue_up_to(4))]
        assert res.wait_for_waiting(DEQUEUE, 2, WAIT)
        sess.run(q.close())
        for waiter in waiters:
            assert isinstance(waiter.join().error, tf.errors.OutOfRangeError)
            assert "is closed and has insufficient" in str(waiter.error)


def test_enqueue_to_a_closed_queue_is_cancelled():
    q = tf.RandomShuffleQueue(10, 4, tf.float32, name="q")
    with tf.Session() as sess:
        sess.run(q.enqueue((10.0,)))
        sess.run(q.close())
        with pytest.raises(
            tf.errors.CancelledError, match=r"RandomShuffleQueue '_\d+_q' is closed."
        ):
            sess.run(q.enqueue((10.0,)))
        with pytest.raises(tf.errors.CancelledError, match="is already closed"):
            sess.run(q.close())


# -- blocking -----------------------------------------------------------------------------------


def test_blocking_enqueue_to_a_full_queue():
    q = tf.RandomShuffleQueue(4, 0, tf.float32, ((),))
    elems = [10.0, 20.0, 30.0, 40.0]
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue_many((elems,)))
        blocked = Background(sess, q.enqueue((50.0,)))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        results = run_all(sess, q.dequeue(), 5)
        blocked.join()
        assert blocked.error is None
    assert sorted(results) == elems + [50.0]
    assert results[0] != 50.0  # there was no room for it when the first was taken


def test_big_dequeue_many_takes_elements_as_they_come():
    q = tf.RandomShuffleQueue(2, 0, tf.int32, ((),))
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        consumer = Background(sess, q.dequeue_many(4))
        assert res.wait_for_waiting(DEQUEUE, 1, WAIT)
        for e in range(4):
            assert consumer.thread.is_alive()
            sess.run(q.enqueue((e,)))
        assert sorted(consumer.join().result.tolist()) == [0, 1, 2, 3]


def test_close_with_cancel_pending_enqueues():
    q = tf.RandomShuffleQueue(2, 0, tf.int32, ((),))
    with tf.Session() as sess:
        res = queue_resource(sess, q)
        sess.run(q.enqueue_many(([1, 2],)))
        pending = Background(sess, q.enqueue_many(([3, 4],)))
        assert res.wait_for_waiting(ENQUEUE, 1, WAIT)
        sess.run(q.close(cancel_pending_enqueues=True))
        assert isinstance(pending.join().error, tf.errors.CancelledError)
        assert sorted(sess.run(q.dequeue_up_to(5)).tolist()) == [1, 2]


def test_session_close_cancels_every_blocked_operation():
    # TF's testResetOfBlockingOperation.
    q_empty = tf.RandomShuffleQueue(5, 0, tf.float32, ((),))
    q_full = tf.RandomShuffleQueue(5, 0, tf.float32, ((),))
    sess = tf.Session()
    empty, full = queue_resource(sess, q_empty), queue_resource(sess, q_full)
    sess.run(q_full.enqueue_many(([1.0, 2.0, 3.0, 4.0, 5.0],)))
    runs = [Background(sess, op) for op in (
        q_empty.dequeue(), q_empty.dequeue_many(1), q_empty.dequeue_up_to(1),
        q_full.enqueue((6.0,)), q_full.enqueue_many(([6.0],)),
    )]  # fmt: skip
    assert empty.wait_for_waiting(DEQUEUE, 3, WAIT)
    assert full.wait_for_waiting(ENQUEUE, 2, WAIT)
    sess.close()
    for run in runs:
        assert isinstance(run.join().error, tf.errors.CancelledError)
        assert "was cancelled" in str(run.error)


# -- sharing ------------------------------------------------------------------------------------


def test_a_shared_queue_accepts_an_unseeded_second_creator():
    q1 = tf.RandomShuffleQueue(1, 0, tf.float32, ((),), shared_name="shared_queue", seed=98765432)
    tf.set_random_seed(None)
    q2 = tf.RandomShuffleQueue(1, 0, tf.float32, ((),), shared_name="shared_queue")
    with tf.Session() as sess:
        sess.run(q1.enqueue((10.0,)))
        assert sess.run(q2.size()) == 1
        assert sess.run(q2.dequeue()) == 10.0


_TEN_FIVE = dict(capacity=10, min_after_dequeue=5)


@pytest.mark.parametrize(
    ("first", "second", "words"),
    [
        (_TEN_FIVE, dict(capacity=15, min_after_dequeue=5), "capacity"),
        (dict(capacity=10, min_after_dequeue=0), _TEN_FIVE,
         "has min_after_dequeue 0 but requested min_after_dequeue was 5."),
        (_TEN_FIVE, dict(_TEN_FIVE, dtypes=tf.int32), "component types"),
        (_TEN_FIVE, dict(_TEN_FIVE, shapes=[(1, 1, 2, 3)]), "component shapes"),
        (dict(_TEN_FIVE, seed=12), dict(_TEN_FIVE, seed=21), "has random seeds"),
    ],
)  # fmt: skip
def test_incompatible_shared_queue_errors(first, second, words):
    a = tf.RandomShuffleQueue(**{"dtypes": tf.float32, **first}, shared_name="q_a")
    b = tf.RandomShuffleQueue(**{"dtypes": tf.float32, **second}, shared_name="q_a")
    with tf.Session() as sess:
        sess.run(a.queue_ref)
        with pytest.raises(tf.errors.InvalidArgumentError, match=words):
            sess.run(b.queue_ref)


# -- what a waiting dequeue waits for --------------------------------------------------------------


def test_a_deadline_says_the_dequeue_waits_for_more_than_min_after_dequeue():
    q = tf.RandomShuffleQueue(10, 2, tf.float32, shapes=[], name="shuffle")
    take = q.dequeue_many(2, name="take_two")
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([1.0, 2.0, 3.0],)))
        with pytest.raises(tf.errors.DeadlineExceededError) as raised:
            sess.run(take, options=tf.RunOptions(timeout_in_ms=200))
        assert "take_two waits for queue" in raised.value.message
        assert "needs 2 more than min_after_dequeue 2" in raised.value.message
        assert sess.run(q.size()) == 3  # what it had taken came back


def test_the_described_state_shows_min_after_dequeue():
    q = tf.RandomShuffleQueue(10, 2, tf.float32, shapes=[], name="shuffle")
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([1.0, 2.0, 3.0],)))
        (entry,) = [e for e in sess.resource_mgr.describe() if e["kind"] == "queue"]
    assert entry["min_after_dequeue"] == 2 and entry["size"] == 3
    assert sorted(entry["values"]) == [1.0, 2.0, 3.0] and not entry["closed"]


# -- property: the queue against a reference model ---------------------------------------------

_BOUNDED = tf.RunOptions(timeout_in_ms=5000)  # a run the model says completes must not wait

_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("enqueue_many"), st.lists(st.integers(0, 99), max_size=4)),
        st.tuples(st.just("dequeue"), st.just(0)),
        st.tuples(st.just("dequeue_many"), st.integers(0, 4)),
        st.tuples(st.just("dequeue_up_to"), st.integers(1, 4)),
        st.tuples(st.just("close"), st.just(0)),
    ),
    max_size=25,
)


def _expected(model: Counter, capacity, keep, closed, kind, arg):
    """What TF's RandomShuffleQueue does: ("ok", n taken), ("error", class), or None (blocks)."""
    size = sum(model.values())
    available = size if closed else size - keep
    if kind == "enqueue_many":
        if not arg:
            return ("ok", 0)
        if closed:
            return ("error", tf.errors.CancelledError)
        return ("ok", 0) if size + len(arg) <= capacity else None
    wanted = 1 if kind == "dequeue" else arg
    if wanted <= available or (kind == "dequeue_many" and wanted == 0):
        return ("ok", wanted)
    if not closed:
        return None
    if kind == "dequeue_up_to" and size:
        return ("ok", size)
    return ("error", tf.errors.OutOfRangeError)


@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(2, 8), keep=st.integers(0, 3), operations=_OPERATIONS)
def test_queue_matches_a_reference_multiset(capacity, keep, operations):
    keep = min(keep, capacity - 1)
    graph = tf.Graph()
    with graph.as_default():
        q = tf.RandomShuffleQueue(capacity, keep, tf.int32, shapes=[[]], seed=5)
        many = tf.placeholder(tf.int32, [None])
        n = tf.placeholder(tf.int32, [])
        build = {
            "enqueue_many": (q.enqueue_many(many), many),
            "dequeue": (q.dequeue(), None),
            "dequeue_many": (q.dequeue_many(n), n),
            "dequeue_up_to": (q.dequeue_up_to(n), n),
        }
        close = q.close()
    model, closed = Counter(), False
    with tf.Session(graph=graph) as sess:
        for kind, arg in operations:
            if kind == "close":
                if not closed:
                    sess.run(close)
                closed = True
                continue
            expected = _expected(model, capacity, keep, closed, kind, arg)
            if expected is None:
                continue  # it would block
            fetch, placeholder = build[kind]
            feed = {} if placeholder is None else {placeholder: np.asarray(arg, np.int32)}
            outcome, value = expected
            if outcome == "error":
                with pytest.raises(value):
                    sess.run(fetch, feed)
                continue
            got = np.ravel(sess.run(fetch, feed, options=_BOUNDED)).tolist()
            if kind == "enqueue_many":
                model.update(arg)
                continue
            assert len(got) == value
            taken = Counter(got)
            assert not taken - model, f"{got} was not all in the queue {model}"
            model -= taken
        assert sess.run(q.size()) == sum(model.values())
