"""``tf.train.Supervisor`` in one process: ports of TF 1.15's ``supervisor_test.py``.

Expected values are those of TF's test (the counters, the restored values,
the errors' words); the event files are read back with TensorBoard's own
``EventAccumulator`` and with ``summary_iterator``.
"""

import glob
import threading

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import minitf as tf
from minitf.framework.event_pb2 import SessionLog

pytestmark = pytest.mark.timeout(60)


def _session_logs(logdir) -> list[tuple[int, int]]:
    """(status, step) of every SessionLog in the event files of ``logdir``."""
    found = []
    for path in sorted(glob.glob(f"{logdir}/events.out.tfevents.*")):
        for event in tf.train.summary_iterator(path):
            if event.HasField("session_log"):
                found.append((event.session_log.status, event.step))
    return found


def test_basics_prepare_then_stop(tmp_path):
    with tf.Graph().as_default():
        my_op = tf.constant(1.0)
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        sess = sv.prepare_or_wait_for_session("")
        for _ in range(10):
            assert sess.run(my_op) == 1.0
        sess.close()
        sv.stop()


def test_managed_session_counts_steps_and_stops(tmp_path):
    with tf.Graph().as_default():
        my_op = tf.constant(1.0)
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        last_step = None
        with sv.managed_session("") as sess:
            for step in range(10):
                last_step = step
                sess.run(my_op)
        assert last_step == 9
        assert sv.should_stop()


def test_managed_session_raises_the_user_s_error_again(tmp_path):
    with tf.Graph().as_default():
        my_op = tf.constant(1.0)
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        last_step = None
        with pytest.raises(RuntimeError, match="failing here"):
            with sv.managed_session("") as sess:
                for step in range(10):
                    last_step = step
                    if step == 1:
                        raise RuntimeError("failing here")
                    sess.run(my_op)
        assert sv.should_stop()
        assert last_step == 1


def test_managed_session_ignores_out_of_range_error(tmp_path):
    with tf.Graph().as_default():
        my_op = tf.constant(1.0)
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        last_step = None
        with sv.managed_session("") as sess:
            for step in range(10):
                last_step = step
                if step == 3:
                    raise tf.errors.OutOfRangeError(my_op.op.node_def, my_op.op, "all done")
                sess.run(my_op)
        assert sv.should_stop()
        assert last_step == 3


def test_managed_session_ends_when_its_input_queue_is_exhausted(tmp_path):
    # range_input_producer's epoch counter is a local variable (local_init_op) and its
    # queue runner is started by the supervisor; two epochs of 0..4 then OutOfRangeError.
    with tf.Graph().as_default():
        index = tf.train.range_input_producer(5, num_epochs=2, shuffle=False).dequeue()
        sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
        seen = []
        with sv.managed_session("") as sess:
            while not sv.should_stop():
                seen.append(int(sess.run(index)))
        assert seen == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]


def test_init_op_with_feed_dict(tmp_path):
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, shape=(3,))
        v = tf.Variable(p, name="v")
        sv = tf.train.Supervisor(
            logdir=str(tmp_path),
            init_op=tf.global_variables_initializer(),
            init_feed_dict={p: [1.0, 2.0, 3.0]},
        )
        sess = sv.prepare_or_wait_for_session("")
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        sv.stop()


def test_init_fn_alone_initializes(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0, 3.0])

        def init_fn(sess):
            sess.run(v.initializer)

        sv = tf.train.Supervisor(logdir=str(tmp_path), init_op=None, init_fn=init_fn)
        sess = sv.prepare_or_wait_for_session("")
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        sv.stop()


def test_local_init_op_initializes_local_variables(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0, 3.0], collections=[tf.GraphKeys.LOCAL_VARIABLES])
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        with sv.managed_session("") as sess:
            np.testing.assert_array_equal(sess.run(w), [1.0, 2.0, 3.0])


def test_restore_from_logdir(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        step = tf.train.get_or_create_global_step()
        update = [tf.assign(v, 42.0), tf.assign(step, 7)]
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0)
        with sv.managed_session("") as sess:
            sess.run(update)
            sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-7")
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        step = tf.train.get_or_create_global_step()
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0)
        with sv.managed_session("") as sess:
            assert sess.run(v) == 42.0
            assert sess.run(step) == 7


def test_standard_services_write_summaries_step_rate_and_a_checkpoint(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        tf.summary.scalar("c1", tf.constant(1.0))
        tf.summary.scalar("c2", tf.constant(2.0))
        step = tf.train.get_or_create_global_step()
        sv = tf.train.Supervisor(logdir=logdir)
        assert sv.global_step is step
        with sv.managed_session(""):
            pass  # each timer thread runs once at its start
        accumulator = EventAccumulator(logdir)
        accumulator.Reload()
        tags = accumulator.Tags()
        assert {"c1", "c2", "global_step/sec"} <= set(tags["scalars"])
        assert [(e.step, e.value) for e in accumulator.Scalars("c1")] == [(0, 1.0)]
        assert [(e.step, e.value) for e in accumulator.Scalars("c2")] == [(0, 2.0)]
        assert tags["graph"]
        assert accumulator.Graph() is not None
    assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-0")
    logs = _session_logs(logdir)
    assert logs[0] == (SessionLog.START, 0)
    assert (SessionLog.CHECKPOINT, 0) in logs
    assert logs[-1][0] == SessionLog.STOP


def test_summary_computed_writes_at_the_global_step(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        summ = tf.summary.scalar("c1", tf.constant(3.0))
        step = tf.train.get_or_create_global_step()
        set_step = tf.assign(step, 5)
        sv = tf.train.Supervisor(logdir=logdir, summary_op=None, save_model_secs=0)
        with sv.managed_session("") as sess:
            sess.run(set_step)
            sv.summary_computed(sess, sess.run(summ))
        accumulator = EventAccumulator(logdir)
        accumulator.Reload()
        assert [(e.step, e.value) for e in accumulator.Scalars("c1")] == [(5, 3.0)]


def test_summary_computed_without_a_writer_is_an_error():
    with tf.Graph().as_default():
        summ = tf.summary.scalar("c1", tf.constant(1.0))
        sv = tf.train.Supervisor(logdir=None)
        sess = sv.prepare_or_wait_for_session("")
        with pytest.raises(RuntimeError, match="Writing a summary requires a summary writer."):
            sv.summary_computed(sess, sess.run(summ))
        sv.stop()


def test_loop_runs_until_a_stop_is_requested(tmp_path):
    with tf.Graph().as_default():
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        calls = []
        done = threading.Event()

        def count():
            calls.append(1)
            if len(calls) == 5:
                sv.request_stop()
                done.set()

        with sv.managed_session(""):
            sv.loop(None, count)
            assert done.wait(10)
        assert len(calls) == 5


def test_non_chief_needs_every_variable_on_a_device():
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        with pytest.raises(ValueError, match="When using replicas, all Variables must have"):
            tf.train.Supervisor(is_chief=False)


def test_non_chief_does_not_write_and_cannot_start_services(tmp_path):
    with tf.Graph().as_default():
        with tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
            tf.Variable(1.0, name="v")
        sv = tf.train.Supervisor(is_chief=False, logdir=str(tmp_path))
        assert not sv.is_chief
        assert sv.summary_writer is None and sv.save_path is None
        with pytest.raises(RuntimeError, match="Only chief supervisor can start standard"):
            sv.start_standard_services(None)


def test_defaults_come_from_collections_and_freeze_the_graph(tmp_path):
    with tf.Graph().as_default() as graph:
        tf.Variable(1.0, name="v")
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        assert tf.get_collection(tf.GraphKeys.READY_OP) == [sv.ready_op]
        assert tf.get_collection(tf.GraphKeys.INIT_OP) == [sv.init_op]
        assert tf.get_collection(tf.GraphKeys.SAVERS) == [sv.saver]
        assert sv.summary_op is None and sv.global_step is None
        assert sv.ready_for_local_init_op is None
        assert tf.train.Supervisor.USE_DEFAULT == 0
        assert graph.finalized
        with pytest.raises(RuntimeError, match="Graph is finalized"):
            tf.constant(1.0)
        sv.stop()
