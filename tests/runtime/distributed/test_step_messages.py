"""Fewer messages per step: the local worker, batched sends and reused runner threads.

* A session whose target is a server in its own process runs that task's
  partition with a direct call (TF's master calls its local worker without
  gRPC), with the same copies the wire would make.
* An untraced step's tensors for one task leave in one message per burst of
  ready ops.
* A server keeps the threads that run partitions that may wait.

Clusters are in-process servers on loopback ports, as in ``test_server.py``.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.core.step_context import StepContext
from minitf.runtime.distributed import connect
from minitf.runtime.distributed.peers import Peers
from minitf.runtime.distributed.runners import Runners

pytestmark = pytest.mark.timeout(60)


def _traced(sess, fetches, feed_dict=None):
    metadata = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    value = sess.run(fetches, feed_dict, options=options, run_metadata=metadata)
    nodes = {}
    for dev in metadata.step_stats["dev_stats"]:
        for node in dev["node_stats"]:
            nodes[node["node_name"]] = (dev["device"], node)
    return value, nodes


# -- the local worker ---------------------------------------------------------------------


def test_the_session_task_runs_its_partition_on_the_calling_thread(ps_and_worker):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [1, 2])
        y = tf.matmul(x, w, name="y")
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        value, nodes = _traced(sess, y, {x: [[1.0, 1.0]]})
    np.testing.assert_array_equal(value, [[4.0, 6.0]])  # [1, 1] @ w by hand
    device, node = nodes["y"]
    assert device.startswith("/job:worker/replica:0/task:0")
    assert node["thread_id"] == threading.get_ident()
    ps_threads = {n["thread_id"] for d, n in nodes.values() if d.startswith("/job:ps")}
    assert threading.get_ident() not in ps_threads


def test_a_fetched_variable_and_a_fed_array_stay_the_callers_own(ps_and_worker):
    with tf.device("/job:worker/task:0"):
        v = tf.Variable(np.zeros(3, np.float32), name="v")
        new = tf.placeholder(tf.float32, [3])
        assign = tf.assign(v, new)
        doubled = new * 2.0
    fed = np.array([1.0, 2.0, 3.0], np.float32)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(v.initializer)
        sess.run(assign, {new: fed})
        fed[:] = -1.0  # the variable keeps what was fed
        got = sess.run(v)
        np.testing.assert_array_equal(got, [1.0, 2.0, 3.0])
        got[:] = 7.0  # changing the fetched array changes nothing on the task
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        again = np.array([5.0, 6.0, 7.0], np.float32)
        np.testing.assert_array_equal(sess.run(doubled, {new: again}), [10.0, 12.0, 14.0])
        np.testing.assert_array_equal(again, [5.0, 6.0, 7.0])


def test_a_failing_remote_part_ends_the_local_part_waiting_for_its_tensor(ps_and_worker):
    with tf.device("/job:ps/task:0"):
        a = tf.placeholder(tf.float32, None)
        b = tf.placeholder(tf.float32, None)
        bad = tf.matmul(a, b, name="bad")
    with tf.device("/job:worker/task:0"):
        out = tf.identity(bad * 2.0)  # waits for bad's tensor from the ps
    options = tf.RunOptions(timeout_in_ms=30000)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        # Not DeadlineExceededError after 30 s: the ps's own error, at once.
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
            sess.run(out, {a: np.ones((2, 3)), b: np.ones((4, 5))}, options=options)


def test_a_stopped_server_is_no_longer_called_in_process():
    server = tf.train.Server.create_local_server()
    address = server.target[len("grpc://") :]
    assert connect.in_process_worker(address) is server.worker
    server.stop()
    assert connect.in_process_worker(address) is None


# -- batched sends --------------------------------------------------------------------------


def _three_tensors_to_the_worker():
    with tf.device("/job:ps/task:0"):
        parts = [tf.Variable(float(i + 1), name=f"part{i}") for i in range(3)]
    with tf.device("/job:worker/task:0"):
        total = tf.add_n([p.value() for p in parts])
    return parts, total


def _spy_on_sends(monkeypatch) -> list:
    sent = []
    single, batch = Peers.send_tensor, Peers.send_tensors

    def send_tensor(self, task, step_id, key, value):
        sent.append((task, [key]))
        return single(self, task, step_id, key, value)

    def send_tensors(self, task, step_id, items):
        if len(items) > 1:
            sent.append((task, [key for key, _ in items]))
        return batch(self, task, step_id, items)

    monkeypatch.setattr(Peers, "send_tensor", send_tensor)
    monkeypatch.setattr(Peers, "send_tensors", send_tensors)
    return sent


def test_a_steps_tensors_for_one_task_leave_in_one_message(speedups_on, ps_and_worker, monkeypatch):
    parts, total = _three_tensors_to_the_worker()
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run([p.initializer for p in parts])
        sent = _spy_on_sends(monkeypatch)
        assert sess.run(total) == 6.0  # 1 + 2 + 3
    assert len(sent) == 1
    task, keys = sent[0]
    assert task == "/job:worker/replica:0/task:0"
    assert len(keys) == 3


def test_a_traced_step_sends_each_tensor_at_once(ps_and_worker, monkeypatch):
    parts, total = _three_tensors_to_the_worker()
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run([p.initializer for p in parts])
        sent = _spy_on_sends(monkeypatch)
        value, nodes = _traced(sess, total)
    assert value == 6.0
    assert [len(keys) for _, keys in sent] == [1, 1, 1]
    transfers = [n["transfer"] for _, n in nodes.values() if "transfer" in n]
    assert sorted(t["direction"] for t in transfers) == ["recv"] * 3 + ["send"] * 3


def test_a_batch_that_cannot_be_sent_fails_naming_its_first_send():
    class Down:
        def send_tensors(self, task, step_id, items):
            raise tf.errors.UnavailableError(None, None, f"{task} is down")

    with tf.Graph().as_default() as g:
        first = g.create_op("NoOp", [], [], name="first_send")
        second = g.create_op("NoOp", [], [], name="second_send")
    ctx = StepContext(None, step_id=7, transport=Down())
    ctx.outbox = {}
    ctx.post("/job:worker/replica:0/task:0", "a", np.float32(1), first)
    ctx.post("/job:worker/replica:0/task:0", "b", np.float32(2), second)
    with pytest.raises(tf.errors.UnavailableError, match="is down") as raised:
        ctx.flush_outbox()
    assert raised.value.op is first
    assert ctx.outbox == {}  # nothing is sent twice


# -- runner threads -------------------------------------------------------------------------


def test_a_runner_that_finished_runs_the_next_partition():
    runners = Runners("test-runner")
    threads, done = [], [threading.Event(), threading.Event()]
    for event in done:
        runners.start(lambda e=event: (threads.append(threading.current_thread()), e.set()))
        assert event.wait(10)
        assert runners.wait_until_idle(1, 10)
    assert threads[0] is threads[1]


def test_runs_that_wait_on_each_other_each_get_a_runner():
    runners = Runners("test-runner")
    first_waits, second_ran, first_done = threading.Event(), threading.Event(), threading.Event()

    def first():
        first_waits.set()
        assert second_ran.wait(10)  # never ends if the second run waits for this runner
        first_done.set()

    runners.start(first)
    assert first_waits.wait(10)
    runners.start(second_ran.set)
    assert first_done.wait(10)


def test_an_idle_runner_ends():
    runners = Runners("test-runner")
    runners.IDLE_SECONDS = 0.05
    started, ran = [], threading.Event()
    runners.start(lambda: (started.append(threading.current_thread()), ran.set()))
    assert ran.wait(10)
    started[0].join(10)
    assert not started[0].is_alive()
    assert runners.wait_until_idle(0, 1)
