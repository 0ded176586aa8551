"""The TF1 training loop: MonitoredTrainingSession, its hooks and the session manager.

Expected values come from the loop written by hand: plain gradient descent
on ``(w * x - y)^2`` computed with numpy, step for step.
"""

import logging
import threading

import numpy as np
import pytest

import minitf as tf

X = np.array([1.0, 2.0, 3.0], dtype=np.float32)
Y = 2.0 * X
LR = 0.05


def _model():
    w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(w * X - Y))
    train_op = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=step)
    return w, step, loss, train_op


def _w_after(steps: int) -> float:
    """Gradient descent on mean((w x - y)^2) by hand."""
    w = 0.0
    for _ in range(steps):
        w -= LR * np.mean(2 * (w * X - Y) * X)
    return w


class _Recorder(tf.train.SessionRunHook):
    """Writes down every call, and fetches the loss in the caller's step."""

    def __init__(self, loss):
        self.calls, self.losses, self._loss = [], [], loss

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.losses.append(float(run_values.results))

    def end(self, session):
        self.calls.append("end")


def test_the_loop_stops_at_last_step_with_the_weights_plain_descent_gives():
    w, step, loss, train_op = _model()
    recorder = _Recorder(loss)
    hooks = [tf.train.StopAtStepHook(last_step=5), recorder]
    with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
        runs = 0
        while not sess.should_stop():
            sess.run(train_op)
            runs += 1
        final_w = sess.run(w)
    assert runs == 5
    assert final_w == pytest.approx(_w_after(5), rel=1e-5)
    # Six runs are hooked: five train_op steps and the read of w.
    assert recorder.calls == ["begin", "after_create_session"] + ["before_run", "after_run"] * 6 + [
        "end"
    ]
    # The hook's fetch ran in the same steps as train_op: the loss at w before each update.
    assert recorder.losses[0] == pytest.approx(float(np.mean(Y**2)), rel=1e-6)


def test_stop_at_step_counts_num_steps_from_the_global_step_at_creation():
    _, step, _, train_op = _model()
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(num_steps=3)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
        assert sess.run(step) == 3


@pytest.mark.parametrize(
    "kwargs, message",
    [({}, "One of num_steps or last_step"), ({"num_steps": 1, "last_step": 2}, "Only one")],
)
def test_stop_at_step_needs_exactly_one_of_its_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tf.train.StopAtStepHook(**kwargs)


def test_hooks_that_need_a_global_step_say_so():
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
        tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=1)])


def test_a_feed_from_a_hook_and_from_the_caller_is_refused():
    x = tf.placeholder(tf.float32, [])
    doubled = 2.0 * x

    class Feeds(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(None, feed_dict={x: 1.0})

    with tf.train.MonitoredSession(hooks=[Feeds()]) as sess:
        assert sess.run(doubled) == 2.0  # the hook's feed is used
        with pytest.raises(RuntimeError, match="Same tensor is fed"):
            sess.run(doubled, feed_dict={x: 3.0})


def test_nan_loss_raises_or_stops():
    v = tf.Variable(np.nan, dtype=tf.float32)
    loss = tf.identity(v)
    with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss)]) as sess:
            sess.run(loss)
    with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss, False)]) as sess:
        sess.run(loss)
        assert sess.should_stop()


def test_logging_tensor_hook_logs_every_n_iterations_and_at_end(caplog):
    counter = tf.Variable(0.0)
    bump = tf.assign_add(counter, 1.0)
    hook = tf.train.LoggingTensorHook({"c": counter}, every_n_iter=2, at_end=True)
    with caplog.at_level(logging.INFO, logger="minitf"):
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(5):
                sess.run(bump)
    # Iterations 0, 2 and 4 are logged (the counter is read in the same step as
    # the increment, so only its order against it is open), then 5.0 at the end.
    assert len(hook.logged) == 4
    assert hook.logged[-1] == "c = 5.0"


def test_final_ops_hook_runs_its_ops_when_the_session_ends():
    _, step, _, train_op = _model()
    final = tf.train.FinalOpsHook(step * 10)
    with tf.train.MonitoredSession(hooks=[final, tf.train.StopAtStepHook(last_step=2)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
    assert final.final_ops_values == 20


def test_out_of_range_ends_the_with_block_quietly_and_hooks_end_is_called():
    q = tf.FIFOQueue(2, tf.float32, shapes=[])
    fill = q.enqueue_many([[1.0, 2.0]])
    close = q.close()
    take = q.dequeue()
    recorder = _Recorder(tf.constant(0.0))
    taken = []
    with tf.train.MonitoredSession(hooks=[recorder]) as sess:
        sess.run([fill])
        sess.run(close)
        while True:
            taken.append(sess.run(take))  # the third raises OutOfRangeError
    assert taken == [1.0, 2.0]
    assert recorder.calls[-1] == "end"


def test_queue_runners_of_the_graph_start_with_the_session():
    q = tf.FIFOQueue(10, tf.float32, shapes=[])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue(7.0)]))
    take = q.dequeue()  # the session freezes the graph: ops are made before it
    with tf.train.MonitoredSession() as sess:
        assert sess.run(take) == 7.0


def test_a_worker_waits_for_the_chief_and_says_which_variables_on_which_task(caplog):
    with tf.device("/job:localhost/replica:0/task:0"):
        tf.get_variable("weights", [2], initializer=tf.ones_initializer())
    manager = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    with caplog.at_level(logging.INFO, logger="minitf"):
        with pytest.raises(tf.errors.DeadlineExceededError) as raised:
            manager.wait_for_session("", max_wait_secs=0.3)
    assert "Variables not initialized: weights (on /job:localhost/replica:0/task:0)" in str(
        raised.value
    )


def test_a_worker_session_is_ready_soon_after_the_chief_initializes_on_the_ps():
    from minitf.runtime.distributed.launcher import LocalCluster

    with LocalCluster({"ps": 1, "worker": 2}) as cluster:
        with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
            w = tf.get_variable("shared", [], initializer=tf.constant_initializer(4.0))
        ready = tf.report_uninitialized_variables()
        graph = tf.get_default_graph()
        result, started = {}, threading.Event()

        def worker():
            manager = tf.train.SessionManager(ready_op=ready, graph=graph)
            started.set()
            sess = manager.wait_for_session(cluster.target("worker", 1), max_wait_secs=60)
            result["w"] = sess.run(w)
            sess.close()

        thread = threading.Thread(target=worker, daemon=True)
        thread.start()
        assert started.wait(10)
        thread.join(0.3)
        assert thread.is_alive() and not result  # the variable on ps 0 is not initialized
        with tf.Session(cluster.target("worker", 0)) as chief:
            chief.run(w.initializer)
        # TF's worker would sleep recovery_wait_secs (30 s) between looks; this one polls.
        thread.join(10)
        assert not thread.is_alive()
        assert result["w"] == 4.0


def test_the_chief_saves_checkpoints_and_a_new_session_goes_on_from_the_newest(tmp_path):
    w, step, _, train_op = _model()
    saver_hook_steps = []
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path),
        save_checkpoint_steps=2,
        save_checkpoint_secs=None,
        hooks=[tf.train.StopAtStepHook(last_step=5)],
    ) as sess:
        while not sess.should_stop():
            sess.run(train_op)
        saver_hook_steps = [h for h in sess._hooks if isinstance(h, tf.train.CheckpointSaverHook)]
    (saver_hook,) = saver_hook_steps
    assert saver_hook.saved_steps == [0, 2, 4, 5]  # at creation, every 2 steps, at the end
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    assert tf.train.load_variable(str(tmp_path), "w") == pytest.approx(_w_after(5), rel=1e-5)

    tf.reset_default_graph()
    w, step, _, train_op = _model()
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), hooks=[tf.train.StopAtStepHook(last_step=8)]
    ) as sess:
        assert sess.run(step) == 5  # restored, not initialized
        while not sess.should_stop():
            sess.run(train_op)
        assert sess.run(w) == pytest.approx(_w_after(8), rel=1e-5)


def test_recover_session_restores_the_newest_checkpoint_or_says_it_could_not(tmp_path):
    w, step, _, train_op = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train_op)
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    manager = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    sess, restored = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert restored and sess.run(step) == 3
    assert sess.run(w) == pytest.approx(_w_after(3), rel=1e-5)
    sess, restored = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path / "x"))
    assert not restored
    with pytest.raises(ValueError, match="Can not provide both"):
        manager.recover_session(
            "", saver=saver, checkpoint_dir="a", checkpoint_filename_with_path="b"
        )


def test_prepare_session_says_when_nothing_initializes_the_model():
    tf.Variable(1.0)
    manager = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
        manager.prepare_session("")


def test_a_singular_monitored_session_does_not_recover_and_shows_its_raw_session():
    _, step, _, train_op = _model()
    with tf.train.SingularMonitoredSession() as sess:
        sess.run(train_op)
        assert sess.raw_session().run(step) == 1


def test_step_counter_logs_a_rate_and_the_global_step_waiter_lets_a_reached_step_pass(caplog):
    _, step, _, train_op = _model()
    counter = tf.train.StepCounterHook(every_n_steps=2)
    waiter = tf.train.GlobalStepWaiterHook(wait_until_step=0)
    with caplog.at_level(logging.INFO, logger="minitf"):
        with tf.train.MonitoredSession(hooks=[counter, waiter]) as sess:
            for _ in range(5):
                sess.run(train_op)
    assert len(counter.rates) == 2 and all(rate > 0 for rate in counter.rates)
    assert any("global_step/sec" in r.getMessage() for r in caplog.records)
