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
from minitf.framework.graph_pb2 import GraphDef, graph_def_from_graph

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


# -- event files, as TF's test reads them --------------------------------------------------------


def _events(logdir):
    """The events of the newest event file in ``logdir`` (TF's test's ``_summary_iterator``)."""
    return list(tf.train.summary_iterator(sorted(glob.glob(f"{logdir}/event*"))[-1]))


def _values(event) -> list[tuple[str, float]]:
    return [(v.tag, v.simple_value) for v in event.summary.value]


def _three_scalars():
    return tf.summary.merge(
        [
            tf.summary.scalar(tag, tf.constant(value))
            for tag, value in (("c1", 1.0), ("c2", 2.0), ("c3", 3.0))
        ]
    )


def _assert_graph_event(event, graph):
    written = GraphDef()
    written.ParseFromString(event.graph_def)
    assert written == graph_def_from_graph(graph)


def test_chief_can_write_events(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        summ = _three_scalars()
        sv = tf.train.Supervisor(is_chief=True, logdir=logdir, summary_op=None)
        sess = sv.prepare_or_wait_for_session("")
        sv.summary_computed(sess, sess.run(summ))
        sess.close()
        sv.stop()
    events = _events(logdir)
    assert events[0].file_version == "brain.Event:2"
    _assert_graph_event(events[1], sess.graph)
    assert _values(events[2]) == [("c1", 1.0), ("c2", 2.0), ("c3", 3.0)]
    assert events[3].session_log.status == SessionLog.STOP
    assert len(events) == 4


def test_managed_session_keeps_its_summary_writer(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        summ = _three_scalars()
        sv = tf.train.Supervisor(logdir=logdir)
        for _ in range(2):
            with sv.managed_session(
                "", close_summary_writer=False, start_standard_services=False
            ) as sess:
                sv.summary_computed(sess, sess.run(summ))
    sv.summary_writer.close()
    events = _events(logdir)
    assert events[0].file_version == "brain.Event:2"
    assert events[1].graph_def
    assert _values(events[2]) == _values(events[3]) == [("c1", 1.0), ("c2", 2.0), ("c3", 3.0)]
    assert len(events) == 4


def test_non_chief_cannot_write_events():
    with tf.Graph().as_default():
        sv = tf.train.Supervisor(is_chief=False)
        sess = sv.prepare_or_wait_for_session("")
        with pytest.raises(RuntimeError):
            sv.summary_computed(sess, b"")
        with pytest.raises(RuntimeError):
            sv.start_standard_services(sess)
        sv.stop()


def test_logdir_but_explicitly_no_summary_writer_still_checkpoints(tmp_path):
    with tf.Graph().as_default():
        tf.Variable([1.0], name="foo")
        summ = tf.summary.scalar("c1", tf.constant(1.0))
        sv = tf.train.Supervisor(logdir=str(tmp_path), summary_writer=None)
        sess = sv.prepare_or_wait_for_session("")
        with pytest.raises(RuntimeError, match="requires a summary writer"):
            sv.summary_computed(sess, sess.run(summ))
        sv.stop()  # joins the checkpoint thread, which saved once at its start
        assert glob.glob(sv.save_path + ".index")


def test_no_logdir_but_explicit_summary_writer(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        summ = _three_scalars()
        sv = tf.train.Supervisor(
            logdir="", summary_op=None, summary_writer=tf.summary.FileWriter(logdir)
        )
        sess = sv.prepare_or_wait_for_session("")
        sv.summary_computed(sess, sess.run(summ))
        sess.close()
        sv.stop()
    events = _events(logdir)
    _assert_graph_event(events[1], sess.graph)
    assert _values(events[2]) == [("c1", 1.0), ("c2", 2.0), ("c3", 3.0)]
    assert events[3].session_log.status == SessionLog.STOP
    assert len(events) == 4


def test_no_logdir_succeeds_and_a_given_session_manager_is_used():
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0, 3.0])
        sv = tf.train.Supervisor(logdir="", summary_op=None)
        sv.prepare_or_wait_for_session("").close()
        sv.stop()
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0, 3.0])
        manager = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
        sv = tf.train.Supervisor(logdir="", session_manager=manager, init_op=v.initializer)
        assert sv.session_manager is manager
        np.testing.assert_array_equal(sv.prepare_or_wait_for_session("").run(v), [1.0, 2.0, 3.0])
        sv.stop()


def test_default_init_op(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0, 3.0])
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        sess = sv.prepare_or_wait_for_session("")
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        sv.stop()


def _local_init_session(server, logdir, is_chief, initial, init_op=True):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:localhost"):
            v = tf.Variable(initial, name="v")
            vadd = v.assign_add(1)
            w = tf.Variable(v, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES])
            ready_for_local_init_op = tf.report_uninitialized_variables(tf.global_variables())
    kwargs = {"init_op": v.initializer} if init_op else {}
    sv = tf.train.Supervisor(
        logdir=logdir, is_chief=is_chief, graph=graph, recovery_wait_secs=1,
        ready_for_local_init_op=ready_for_local_init_op, **kwargs,
    )  # fmt: skip
    return sv, sv.prepare_or_wait_for_session(server.target), v, vadd, w


def test_ready_for_local_init_op(tmp_path):
    server = tf.train.Server.create_local_server()
    sv0, sess0, v0, _, w0 = _local_init_session(server, str(tmp_path), True, 1)
    sv1, sess1, _, vadd1, w1 = _local_init_session(server, str(tmp_path), False, 1)
    assert sess0.run(w0) == 1
    assert sess1.run(vadd1) == 2
    assert sess1.run(w1) == 1
    assert sess0.run(v0) == 2
    sv0.stop()
    sv1.stop()


def test_ready_for_local_init_op_restore_from_checkpoint(tmp_path):
    server = tf.train.Server.create_local_server()
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        tf.Variable(10.0, name="v")
        sv = tf.train.Supervisor(logdir=logdir)
        sv.prepare_or_wait_for_session(server.target)
        sv.stop()  # joins the checkpoint thread, which saved once at its start
    sv0, sess0, v0, _, w0 = _local_init_session(server, logdir, True, 1.0, init_op=False)
    sv1, sess1, _, vadd1, w1 = _local_init_session(server, logdir, False, 1.0, init_op=False)
    assert sess0.run(w0) == 10
    assert sess1.run(vadd1) == 11
    assert sess1.run(w1) == 10
    assert sess0.run(v0) == 11
    sv0.stop()
    sv1.stop()


def test_local_init_op_runs_local_and_table_initializers(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(
            [1.0, 2.0, 3.0], trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES]
        )
        w = tf.Variable([4, 5, 6], trainable=False, collections=[])
        tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, w.initializer)
        assert tf.global_variables() == []
        sv = tf.train.Supervisor(logdir=str(tmp_path), init_op=None)
        sess = sv.prepare_or_wait_for_session("")
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(sess.run(w), [4, 5, 6])
        sv.stop()


def test_local_init_op_for_non_chief(tmp_path):
    with tf.Graph().as_default():
        with tf.device("/job:localhost"):
            v = tf.Variable(
                [1.0, 2.0, 3.0], trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES]
            )
        sv = tf.train.Supervisor(logdir=str(tmp_path), init_op=None, is_chief=False)
        sess = sv.prepare_or_wait_for_session("")
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        sv.stop()


def test_init_op_fails(tmp_path):
    server = tf.train.Server.create_local_server()
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0, 3.0], name="v")
        tf.Variable([4.0, 5.0, 6.0], name="w")
        sv = tf.train.Supervisor(logdir=str(tmp_path), init_op=v.initializer)
        with pytest.raises(RuntimeError, match="Variables not initialized: w"):
            sv.prepare_or_wait_for_session(server.target)


def test_init_op_fails_for_transient_variable(tmp_path):
    server = tf.train.Server.create_local_server()
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0, 3.0], name="v", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        tf.Variable([1.0, 2.0, 3.0], name="w", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        sv = tf.train.Supervisor(logdir=str(tmp_path), local_init_op=v.initializer)
        with pytest.raises(RuntimeError, match="Variables not initialized: w"):
            sv.prepare_or_wait_for_session(server.target)


def test_setup_fail_and_placed_variables_pass(tmp_path):
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0, 3.0], name="v")
        with pytest.raises(ValueError, match="must have their device set"):
            tf.train.Supervisor(logdir=str(tmp_path), is_chief=False)
    with tf.Graph().as_default(), tf.device("/job:ps"):
        tf.Variable([1.0, 2.0, 3.0], name="v")
        tf.train.Supervisor(logdir=str(tmp_path), is_chief=False)


def test_default_global_step(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(287, name="global_step")
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        sess = sv.prepare_or_wait_for_session("")
        assert sess.run(sv.global_step) == 287
        sv.stop()


def test_restore_from_meta_graph(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        tf.Variable(1, name="v0")
        sv = tf.train.Supervisor(logdir=logdir, save_model_secs=0)
        sess = sv.prepare_or_wait_for_session("")
        filename = sv.saver.save(sess, sv.save_path)
        sv.stop()
    with tf.Graph().as_default():
        new_saver = tf.train.import_meta_graph(filename + ".meta")
        assert new_saver is not None
        sv2 = tf.train.Supervisor(logdir=logdir, saver=new_saver, save_model_secs=0)
        sess = sv2.prepare_or_wait_for_session("")
        assert sess.run("v0:0") == 1
        sv2.saver.save(sess, sv2.save_path)
        sv2.stop()


def test_standard_services_without_global_step(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        v = tf.Variable([1.0], name="foo")
        tf.summary.scalar("v", v[0])
        sv = tf.train.Supervisor(logdir=logdir)
        sess = sv.prepare_or_wait_for_session("")
        save_path = sv.save_path
        sv.stop()  # each service ran once at its start
    events = _events(logdir)
    assert events[0].file_version == "brain.Event:2"
    _assert_graph_event(events[1], sess.graph)
    assert _values(events[2]) == [("v", 1.0)]
    assert events[3].session_log.status == SessionLog.STOP
    assert len(events) == 4
    with tf.Graph().as_default(), tf.Session() as sess:
        v = tf.Variable([10.10], name="foo")
        tf.train.Saver([v]).restore(sess, save_path)
        assert sess.run(v)[0] == 1.0


def test_standard_services_with_global_step(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        tf.Variable([123], name="global_step")
        sv = tf.train.Supervisor(logdir=logdir)
        sess = sv.prepare_or_wait_for_session("")
        save_path = f"{sv.save_path}-123"
        sv.stop()
    events = _events(logdir)
    assert events[0].file_version == "brain.Event:2"
    _assert_graph_event(events[1], sess.graph)
    assert (events[2].step, events[2].session_log.status) == (123, SessionLog.START)
    rate = [e for e in events[3:5] if e.HasField("summary")]
    checkpoint = [e for e in events[3:5] if e.HasField("session_log")]
    assert _values(rate[0]) == [("global_step/sec", 0.0)]
    assert (checkpoint[0].step, checkpoint[0].session_log.status) == (123, SessionLog.CHECKPOINT)
    assert events[5].session_log.status == SessionLog.STOP
    assert len(events) == 6
    with tf.Graph().as_default(), tf.Session() as sess:
        v = tf.Variable([-12], name="global_step")
        tf.train.Saver([v]).restore(sess, save_path)
        assert sess.run(v)[0] == 123


def test_no_queue_runners(tmp_path):
    with tf.Graph().as_default(), tf.Session() as sess:
        sv = tf.train.Supervisor(logdir=str(tmp_path))
        assert len(sv.start_queue_runners(sess)) == 0
        sv.stop()


@pytest.mark.parametrize("is_chief", [True, False])
def test_prepare_session_after_stop(tmp_path, is_chief):
    with tf.Graph().as_default():
        sv = tf.train.Supervisor(logdir=str(tmp_path), is_chief=is_chief)
        sess = sv.prepare_or_wait_for_session("")
        sv.stop()
        sess.close()
        assert sv.should_stop()
        sess2 = sv.prepare_or_wait_for_session("")
        assert not sv.should_stop()
        sv.stop()
        sess2.close()
        assert sv.should_stop()
