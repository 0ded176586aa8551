"""tf.train.QueueRunner, add_queue_runner and start_queue_runners: TF 1.x's behaviour.

Expected behaviour is TF's (shared/spec/tf1_semantics.md §8 and TF's
queue_runner_impl.py). The runner's logic is checked twice: against a small
stand-in queue whose ops only count how often they ran (so it needs no queue
kernels), and against ``tf.FIFOQueue`` with real producers and consumers.
Threads are joined with timeouts; nothing sleeps to wait.
"""

import logging

import numpy as np
import pytest

import minitf as tf
from minitf.framework import errors
from minitf.framework.graph_keys import GraphKeys
from minitf.train.coordinator import Coordinator
from minitf.train.queue_runner_impl import QueueRunner, add_queue_runner, start_queue_runners

pytestmark = pytest.mark.timeout(60)

WAIT = 10.0  # seconds: a generous bound for things that happen at once on a healthy run


def join_all(threads) -> None:
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads), "a queue runner thread did not end"


class CountingQueue:
    """Stands in for a queue: its close ops count how often they ran.

    ``close()`` adds one to ``closes``, ``close(cancel_pending_enqueues=True)``
    to ``cancels``; `source` builds an enqueue op that succeeds ``n`` times in
    all and then fails with ``InvalidArgumentError`` (an index out of range),
    which a runner built with that type as its "closed" type treats as the
    end of its input.
    """

    def __init__(self, name="counting_queue"):
        self.name = name
        self.closes = tf.Variable(0, name=f"{name}_closes")
        self.cancels = tf.Variable(0, name=f"{name}_cancels")
        self.taken = tf.Variable(0, name=f"{name}_taken")

    def close(self, cancel_pending_enqueues=False, name=None):
        counter = self.cancels if cancel_pending_enqueues else self.closes
        return tf.assign_add(counter, 1, name=name).op

    def source(self, n):
        return tf.gather(tf.range(n), tf.assign_add(self.taken, 1) - 1).op

    def counts(self, sess):
        return sess.run({"closes": self.closes, "cancels": self.cancels, "taken": self.taken})


# -- construction ------------------------------------------------------------------------


def test_missing_queue_or_enqueue_ops_is_a_value_error():
    q = CountingQueue()
    with pytest.raises(ValueError, match="Must provide queue and enqueue_ops."):
        QueueRunner(q)
    with pytest.raises(ValueError, match="Must provide queue and enqueue_ops."):
        QueueRunner(q, [])
    with pytest.raises(ValueError, match="Must provide queue and enqueue_ops."):
        QueueRunner(enqueue_ops=[tf.no_op()])


def test_queue_runner_def_excludes_queue():
    q = CountingQueue()
    qr_def = QueueRunner(q, [tf.no_op()]).to_proto()
    with pytest.raises(ValueError, match="queue_runner_def and queue are mutually exclusive."):
        QueueRunner(q, queue_runner_def=qr_def)


@pytest.mark.parametrize(
    "closed_types", [[errors.OutOfRangeError], (), (ValueError,), (errors.OutOfRangeError, int)]
)
def test_queue_closed_exception_types_must_be_a_tuple_of_tf_errors(closed_types):
    with pytest.raises(TypeError, match="must be a tuple of tf.error types"):
        QueueRunner(CountingQueue(), [tf.no_op()], queue_closed_exception_types=closed_types)


def test_defaults_close_and_cancel_the_queue():
    q = CountingQueue()
    op = tf.no_op(name="enqueue")
    qr = QueueRunner(q, [op])
    assert qr.queue is q
    assert qr.enqueue_ops == [op]
    assert qr.name == "counting_queue"
    assert qr.queue_closed_exception_types == (errors.OutOfRangeError,)
    assert qr.exceptions_raised == []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(qr.close_op)
        sess.run(qr.cancel_op)
        sess.run(qr.cancel_op)
        assert q.counts(sess) == {"closes": 1, "cancels": 2, "taken": 0}


def test_explicit_ops_and_types_are_kept():
    q = CountingQueue()
    close, cancel = tf.no_op(name="my_close"), tf.no_op(name="my_cancel")
    closed_types = (errors.OutOfRangeError, errors.CancelledError)
    qr = QueueRunner(
        q, [tf.no_op()], close_op=close, cancel_op=cancel, queue_closed_exception_types=closed_types
    )
    assert qr.close_op is close
    assert qr.cancel_op is cancel
    assert qr.queue_closed_exception_types == closed_types


def test_to_proto_and_from_proto_round_trip_through_op_names():
    with tf.name_scope("input"):
        queue_op = tf.no_op(name="counting_queue")  # what the queue's name resolves to
        q = CountingQueue()
        q.name = queue_op.name
        enqueue = q.source(3)
        qr = QueueRunner(q, [enqueue], queue_closed_exception_types=(errors.CancelledError,))
    qr_def = qr.to_proto(export_scope="input")
    assert qr_def == {
        "queue_name": "counting_queue",
        "enqueue_op_name": [enqueue.name[len("input/") :]],
        "close_op_name": qr.close_op.name[len("input/") :],
        "cancel_op_name": qr.cancel_op.name[len("input/") :],
        "queue_closed_exception_types": [1],  # CANCELLED
    }
    assert qr.to_proto(export_scope="elsewhere") is None
    rebuilt = QueueRunner.from_proto(qr_def, import_scope="input")
    assert rebuilt.queue is queue_op
    assert rebuilt.enqueue_ops == [enqueue]
    assert rebuilt.close_op is qr.close_op
    assert rebuilt.cancel_op is qr.cancel_op
    assert rebuilt.queue_closed_exception_types == (errors.CancelledError,)


# -- threads, with the stand-in queue ---------------------------------------------------


def test_one_thread_per_enqueue_op_and_a_close_on_stop_thread_with_a_coordinator():
    q = CountingQueue()
    qr = QueueRunner(q, [tf.no_op(name="a"), tf.no_op(name="b")])
    with tf.Session() as sess:
        threads = qr.create_threads(sess)  # not started
        assert [t.name for t in threads] == [
            "QueueRunnerThread-counting_queue-a",
            "QueueRunnerThread-counting_queue-b",
        ]
        assert not any(t.daemon or t.is_alive() for t in threads)
    qr = QueueRunner(q, [tf.no_op(name="c")])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, daemon=True, start=True)
        assert threads[-1].name == "QueueRunnerThread-counting_queue-close_on_stop"
        assert all(t.daemon for t in threads)
        coord.request_stop()
        coord.join(stop_grace_period_secs=WAIT)  # the threads were registered
        assert q.counts(sess)["cancels"] == 1


def test_the_last_thread_to_see_its_input_closed_runs_close_op_once():
    q = CountingQueue()
    source = q.source(20)
    qr = QueueRunner(q, [source] * 3, queue_closed_exception_types=(errors.InvalidArgumentError,))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        threads = qr.create_threads(sess, start=True)
        join_all(threads)
        counts = q.counts(sess)
    assert counts["closes"] == 1
    assert counts["cancels"] == 0
    assert counts["taken"] >= 20 + 3  # every thread ran until its op failed
    assert qr.exceptions_raised == []


def test_request_stop_runs_cancel_op_and_ends_the_threads():
    q = CountingQueue()
    qr = QueueRunner(q, [tf.assign_add(q.taken, 1).op] * 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=WAIT)
        counts = q.counts(sess)
    assert counts["cancels"] == 1
    assert counts["closes"] == 0


def test_create_threads_again_while_running_returns_nothing():
    q = CountingQueue()
    qr = QueueRunner(q, [tf.assign_add(q.taken, 1).op] * 2)
    with tf.Session() as sess, tf.Session() as other:
        sess.run(tf.global_variables_initializer())
        other.run(tf.global_variables_initializer())
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        assert len(threads) == 3
        assert qr.create_threads(sess, coord=coord, start=True) == []
        other_threads = qr.create_threads(other, coord=coord, start=True)  # another session
        assert len(other_threads) == 3
        coord.request_stop()
        coord.join(stop_grace_period_secs=WAIT)
        # Every thread has ended: the runner may start again in the same session.
        assert len(qr.create_threads(sess)) == 2


def test_an_enqueue_error_is_reported_through_coord_join():
    q = CountingQueue()
    source = q.source(5)  # fails with InvalidArgumentError, not a "closed" type here
    qr = QueueRunner(q, [source])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        with pytest.raises(errors.InvalidArgumentError, match="not in"):
            coord.join(threads, stop_grace_period_secs=WAIT)
        counts = q.counts(sess)
    assert counts == {"closes": 0, "cancels": 1, "taken": 6}
    assert qr.exceptions_raised == []  # a coordinator takes the exceptions


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_without_a_coordinator_errors_go_to_exceptions_raised(caplog):
    q = CountingQueue()
    fed = tf.placeholder(tf.int32, [], name="never_fed")
    qr = QueueRunner(q, [tf.assign_add(q.taken, fed).op] * 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with caplog.at_level(logging.ERROR, logger="minitf"):
            threads = qr.create_threads(sess, start=True)
            join_all(threads)
        counts = q.counts(sess)
    assert len(qr.exceptions_raised) == 2
    assert all(isinstance(e, errors.InvalidArgumentError) for e in qr.exceptions_raised)
    assert "Exception in QueueRunner" in caplog.text
    assert counts == {"closes": 0, "cancels": 0, "taken": 0}  # a failure closes nothing
    with tf.Session() as sess:
        qr.create_threads(sess)  # a new run starts a new list
    assert qr.exceptions_raised == []


# -- the collection ----------------------------------------------------------------------


def test_add_queue_runner_and_start_queue_runners():
    q1, q2 = CountingQueue("q1"), CountingQueue("q2")
    qr1 = QueueRunner(q1, [tf.assign_add(q1.taken, 1).op])
    qr2 = QueueRunner(q2, [tf.assign_add(q2.taken, 1).op] * 2)
    add_queue_runner(qr1)
    add_queue_runner(qr2)
    assert tf.get_collection(GraphKeys.QUEUE_RUNNERS) == [qr1, qr2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = Coordinator()
        threads = start_queue_runners(sess, coord=coord)
        assert len(threads) == (1 + 1) + (2 + 1)
        assert all(t.daemon for t in threads)
        assert start_queue_runners(sess, coord=coord) == []  # already running
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=WAIT)
        assert sess.run([q1.cancels, q2.cancels]) == [1, 1]


def test_start_queue_runners_uses_the_default_session_and_the_given_collection():
    q = CountingQueue()
    add_queue_runner(QueueRunner(q, [tf.assign_add(q.taken, 1).op]), collection="my_runners")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = Coordinator()
        with sess.as_default():
            assert start_queue_runners(coord=coord, start=False) == []  # default: empty
            threads = start_queue_runners(coord=coord, collection="my_runners", start=False)
        assert len(threads) == 2
        assert not any(t.is_alive() for t in threads)
        for t in threads:
            t.start()
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=WAIT)


def test_start_queue_runners_reads_the_collection_of_the_sessions_graph():
    graph = tf.Graph()
    with graph.as_default():
        q = CountingQueue()
        add_queue_runner(QueueRunner(q, [tf.no_op()]))
    with tf.Session(graph=graph) as sess:
        threads = start_queue_runners(sess, start=False)  # the default graph is empty
    assert len(threads) == 1


def test_start_queue_runners_needs_a_session():
    with pytest.raises(ValueError, match="No default session is registered"):
        start_queue_runners()
    with pytest.raises(TypeError, match="sess must be a `tf.Session` object"):
        start_queue_runners(sess=object())


# -- with tf.FIFOQueue -------------------------------------------------------------------


def drain(sess, dequeue) -> list:
    """Dequeues until OutOfRangeError; a run blocked for WAIT seconds fails the test."""
    options = tf.RunOptions(timeout_in_ms=int(WAIT * 1000))
    values = []
    while True:
        try:
            values.append(sess.run(dequeue, options=options))
        except errors.OutOfRangeError:
            return values


def closed_input(sess, values):
    """A closed queue holding ``values``: an input that runs out."""
    q = tf.FIFOQueue(-1, tf.int32, shapes=[[]])
    sess.run(q.enqueue_many([values]))
    sess.run(q.close())
    return q


def test_threads_fill_a_queue_and_the_consumer_gets_everything():
    numbers = np.arange(100, dtype=np.int32)
    with tf.Session() as sess:
        source = closed_input(sess, numbers)
        out = tf.FIFOQueue(5, tf.int32, shapes=[[]], name="doubled")
        qr = QueueRunner(out, [out.enqueue(2 * source.dequeue())] * 3)
        threads = qr.create_threads(sess, start=True)
        values = drain(sess, out.dequeue())  # ends once the last thread has closed `out`
        join_all(threads)
        assert sess.run(out.is_closed())
    assert sorted(values) == sorted(2 * numbers)
    assert qr.exceptions_raised == []


def test_the_queue_closes_only_after_every_enqueue_thread_has_run_out():
    with tf.Session() as sess:
        done_first = closed_input(sess, [1, 2])
        still_open = tf.FIFOQueue(-1, tf.int32, shapes=[[]])
        out = tf.FIFOQueue(-1, tf.int32, shapes=[[]])
        qr = QueueRunner(
            out, [out.enqueue(done_first.dequeue()), out.enqueue(still_open.dequeue())]
        )
        first, second = qr.create_threads(sess, start=True)
        join_all([first])
        assert not sess.run(out.is_closed())  # `second` still waits for input
        sess.run(still_open.enqueue_many([[3, 4]]))
        sess.run(still_open.close())
        join_all([second])
        assert sess.run(out.is_closed())
        assert sorted(drain(sess, out.dequeue())) == [1, 2, 3, 4]


def test_request_stop_cancels_an_enqueue_blocked_on_a_full_queue():
    with tf.Session() as sess:
        out = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        qr = QueueRunner(out, [out.enqueue(7)] * 2)
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        assert sess.run(out.dequeue()) == 7  # the runner is producing
        coord.request_stop()
        # The close-on-stop thread cancels the blocked enqueues; their
        # CancelledError arrives after the stop and is not reported.
        coord.join(threads, stop_grace_period_secs=WAIT)
        assert sess.run(out.is_closed())
        assert drain(sess, out.dequeue()) in ([], [7])  # what was queued stays readable


def test_an_enqueue_error_stops_the_coordinator_and_cancels_the_queue():
    with tf.Session() as sess:
        out = tf.FIFOQueue(10, tf.float32, shapes=[[2]])
        fed = tf.placeholder(tf.float32, [2], name="never_fed")
        qr = QueueRunner(out, [out.enqueue(fed)])
        coord = Coordinator()
        threads = qr.create_threads(sess, coord=coord, start=True)
        with pytest.raises(errors.InvalidArgumentError, match="never_fed"):
            coord.join(threads, stop_grace_period_secs=WAIT)
        assert sess.run(out.is_closed())


def test_start_queue_runners_feeds_a_training_style_loop():
    numbers = np.arange(12, dtype=np.int32)
    with tf.Session() as sess:
        source = closed_input(sess, numbers)
        batches = tf.FIFOQueue(4, tf.int32, shapes=[[]])
        add_queue_runner(QueueRunner(batches, [batches.enqueue(source.dequeue())] * 2))
        batch = batches.dequeue_many(3)
        coord = Coordinator()
        threads = start_queue_runners(sess, coord=coord)
        options = tf.RunOptions(timeout_in_ms=int(WAIT * 1000))
        seen = []
        try:
            while not coord.should_stop():
                seen.extend(sess.run(batch, options=options).tolist())
        except errors.OutOfRangeError:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=WAIT)
    assert sorted(seen) == numbers.tolist()
