"""Tracing steps: FULL_TRACE on a cluster, kernel notes, clock offsets and the Tracer span."""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.core import step_stats
from minitf.runtime.distributed import server as server_lib
from minitf.runtime.distributed import worker as worker_lib
from minitf.viz import Tracer
from tests.ops.data_flow.queue_helpers import queue_resource
from tests.runtime.distributed.test_server import cluster  # noqa: F401 - the fixture

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _nodes(stats, device=None):
    return [n for d in stats["dev_stats"] if device in (None, d["device"]) for n in d["node_stats"]]


def _end(node):
    return node["all_start_micros"] + node["all_end_rel_micros"]


def _ps_model():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.arange(6, dtype=np.float32), name="v")
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="q")
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(v * 2.0, name="total")
        enqueue = q.enqueue(total)
    with tf.device("/job:worker/task:1"):
        taken = tf.identity(q.dequeue(), name="taken")
    return v, q, total, enqueue, taken


def test_full_trace_on_a_cluster_has_one_device_per_task_it_touched(cluster):  # noqa: F811
    v, _, total, _, _ = _ps_model()
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        md = tf.RunMetadata()
        assert sess.run(total, options=FULL, run_metadata=md) == 2 * sum(range(6))
    devices = [d["device"] for d in md.step_stats["dev_stats"]]
    assert devices == sorted([PS, W0])
    names = {n["node_name"] for n in _nodes(md.step_stats, W0)}
    assert {"mul", "total"} <= names


def test_every_send_has_its_recv_with_the_bytes_of_the_tensor(cluster):  # noqa: F811
    v, _, _, enqueue, taken = _ps_model()
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        md = tf.RunMetadata()
        sess.run([taken, enqueue], options=FULL, run_metadata=md)
    nodes = _nodes(md.step_stats)
    sends = {n["transfer"]["key"]: n for n in nodes if n["op"] == "_Send"}
    recvs = {n["transfer"]["key"]: n for n in nodes if n["op"] == "_Recv"}
    assert sends and set(sends) == set(recvs)
    for key, send in sends.items():
        recv = recvs[key]
        assert send["step_id"] == recv["step_id"]
        assert send["transfer"]["bytes"] == recv["transfer"]["bytes"]
        assert recv["transfer"]["peer"] == key.split(";")[0]
        assert _end(recv) >= send["all_start_micros"]  # one clock: it cannot arrive before
    # v/read (6 float32 values) goes from the ps to worker 0: 24 bytes, by numpy's count.
    read = next(s for k, s in sends.items() if k.endswith(";v/read:0"))
    assert read["transfer"]["bytes"] == np.zeros(6, np.float32).nbytes


def test_a_dequeue_that_waits_notes_the_queue_and_the_element_it_took(cluster):  # noqa: F811
    _, q, _, enqueue, taken = _ps_model()
    with tf.Session(cluster["worker1"].target) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(q.size())  # creates the queue on the ps, so that we can watch it
        md = tf.RunMetadata()
        result = {}
        thread = threading.Thread(
            target=lambda: result.setdefault("v", sess.run(taken, options=FULL, run_metadata=md))
        )
        thread.start()
        queue = cluster["ps"].resource_mgr.lookup("", "q")
        assert queue.wait_for_waiting(1, 1, timeout=10)  # the dequeue is blocked on the ps
        sess.run(enqueue)
        thread.join(10)
    assert result["v"] == 2 * sum(range(6))
    (deq,) = [n for n in _nodes(md.step_stats, PS) if n["op"] == "QueueDequeueV2"]
    assert deq["wait_micros"] > 0 and deq["asynchronous"]
    assert deq["waited_on"] == {"kind": "queue", "name": "q", "size": 0, "capacity": 10}
    assert deq["elements"] == {"queue": "q", "direction": "dequeue", "ids": [0]}


def test_queue_element_ids_follow_fifo_order_and_survive_a_put_back():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    enq3 = q.enqueue_many([[1.0, 2.0, 3.0]])
    deq2 = q.dequeue_many(2)
    deq1 = q.dequeue()
    with tf.Session() as sess:
        sess.run(enq3)
        # A dequeue_many(5) that times out puts its 3 elements back (ids 0, 1, 2).
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue_many(5), options=tf.RunOptions(timeout_in_ms=50))
        traced = {}
        for name, op in [("deq2", deq2), ("deq1", deq1), ("enq3", enq3)]:
            md = tf.RunMetadata()
            sess.run(op, options=FULL, run_metadata=md)
            traced[name] = {n["op"]: n for n in _nodes(md.step_stats)}
    assert traced["deq2"]["QueueDequeueManyV2"]["elements"]["ids"] == [0, 1]
    assert traced["deq1"]["QueueDequeueV2"]["elements"]["ids"] == [2]
    assert traced["enq3"]["QueueEnqueueManyV2"]["elements"] == {
        "queue": traced["enq3"]["QueueEnqueueManyV2"]["elements"]["queue"],
        "direction": "enqueue",
        "ids": [3, 4, 5],
    }


@pytest.mark.parametrize("kind", ["shuffle", "priority"])
def test_queues_that_do_not_take_the_oldest_note_the_ids_of_what_they_took(kind):
    # The n-th element enqueued has id n, and here its value is n too: the ids
    # a dequeue notes must be the values it returns, whatever order it takes.
    if kind == "shuffle":
        q = tf.RandomShuffleQueue(10, 0, tf.int32, shapes=[[]], seed=3)
        fill = q.enqueue_many([[0, 1, 2, 3, 4]])
    else:
        q = tf.PriorityQueue(10, tf.int32, shapes=[[]])
        fill = q.enqueue_many(([4, 0, 3, 1, 2], [0, 1, 2, 3, 4]))
    with tf.Session() as sess:
        sess.run(fill)
        for op in (q.dequeue_many(3), q.dequeue()):
            md = tf.RunMetadata()
            value = sess.run(op, options=FULL, run_metadata=md)
            value = value[-1] if kind == "priority" else value
            (node,) = [n for n in _nodes(md.step_stats) if n["op"].startswith("QueueDequeue")]
            assert node["elements"]["ids"] == np.ravel(value).tolist()


def test_apply_grad_notes_the_count_and_a_stale_gradient():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    apply_fresh = acc.apply_grad([1.0, 2.0], local_step=0)
    apply_stale = acc.apply_grad([1.0, 2.0], local_step=-1)
    take = acc.take_grad(1)
    with tf.Session() as sess:
        notes = []
        for op in (apply_fresh, apply_stale, take):
            md = tf.RunMetadata()
            sess.run(op, options=FULL, run_metadata=md)
            notes.append({n["op"]: n for n in _nodes(md.step_stats)})
    fresh = notes[0]["ResourceAccumulatorApplyGradient"]["accumulated"]
    stale = notes[1]["ResourceAccumulatorApplyGradient"]["accumulated"]
    assert (fresh["count"], fresh["stale"]) == (1, False)
    assert (stale["count"], stale["stale"]) == (1, True)  # dropped: still one gradient
    assert "waited_on" not in notes[2]["ResourceAccumulatorTakeGradient"]  # it did not wait


def test_a_task_with_another_clock_is_put_on_the_clients_clock(cluster, monkeypatch):  # noqa: F811
    # Every server of this process reports a clock 5 s ahead, as a task on a
    # machine whose clock is off would; the trace must come back on ours.
    skew = 5_000_000

    class Skewed:
        Recorders = step_stats.Recorders

        @staticmethod
        def wall_micros(perf_ns=None):
            return step_stats.wall_micros(perf_ns) + skew

        @staticmethod
        def step_nodes(plan, start_ns, step_id, events):
            return step_stats.shift(step_stats.step_nodes(plan, start_ns, step_id, events), skew)

    monkeypatch.setattr(worker_lib, "step_stats", Skewed)
    v, _, total, _, _ = _ps_model()
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        md = tf.RunMetadata()
        before = step_stats.wall_micros()
        sess.run(total, options=FULL, run_metadata=md)
        after = step_stats.wall_micros()
    for node in _nodes(md.step_stats):
        assert before - 2000 <= node["all_start_micros"] <= after + 2000


def test_tracer_on_a_local_session_records_steps_from_every_thread():
    x = tf.placeholder(tf.float32, [])
    y = tf.square(x, name="y")
    with tf.Session() as sess:
        with Tracer(sess) as tracer:
            threads = [threading.Thread(target=sess.run, args=(y, {x: i})) for i in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
        sess.run(y, {x: 1.0})  # after the span: not recorded
    ys = [n for n in _nodes(tracer.step_stats) if n["node_name"] == "y"]
    assert len(ys) == 3 and len({n["step_id"] for n in ys}) == 3


def test_tracer_on_a_cluster_records_other_clients_steps_and_writes_a_trace(
    cluster,  # noqa: F811
    tmp_path,
):
    v, _, total, _, _ = _ps_model()
    other_graph = tf.Graph()
    with other_graph.as_default(), tf.device("/job:ps/task:0"):
        other_v = tf.Variable(np.arange(6, dtype=np.float32), name="v")
        bump = tf.assign_add(other_v, tf.ones([6]), name="bump")
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        with tf.Session(cluster["worker1"].target, graph=other_graph) as other:
            with Tracer(sess, tmp_path / "trace.json") as tracer:
                sess.run(total)
                other.run(bump)  # another client's step on the ps
                sess.run(total)
    ps_ops = [n["node_name"] for n in _nodes(tracer.step_stats, PS)]
    assert ps_ops.count("bump") == 1 and ps_ops.count("v/read") == 2
    assert (tmp_path / "trace.json").stat().st_size > 0
    assert tracer.dropped == 0


def test_tracer_needs_a_session_and_a_start():
    with pytest.raises(TypeError, match="tf.Session"):
        Tracer(object())
    with tf.Session() as sess, pytest.raises(RuntimeError, match="not recording"):
        Tracer(sess).stop()


def test_a_full_recording_counts_what_it_dropped():
    recorders = step_stats.Recorders(limit=3)
    rid = recorders.start()
    recorders.record([{"n": 1}, {"n": 2}])
    recorders.record([{"n": 3}, {"n": 4}, {"n": 5}])
    assert recorders.stop(rid) == ([{"n": 1}, {"n": 2}, {"n": 3}], 2)
    assert not recorders.active


def test_a_task_gone_before_the_tracer_stops_is_left_out_with_a_warning(
    cluster,  # noqa: F811
    caplog,
    monkeypatch,
):
    # The worker's server waits for the tracer before it stops; not for long here.
    monkeypatch.setattr(server_lib, "RECORDING_PATIENCE_SECS", 0.5)
    v, _, total, _, _ = _ps_model()
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        tracer = Tracer(sess).start()
        sess.run(total)
        cluster["worker1"].stop()  # a worker that finished and exited
        with caplog.at_level("WARNING", logger="minitf"):
            stats = tracer.stop()
    assert [d["device"] for d in stats["dev_stats"]] == [PS, W0]
    assert "/job:worker/replica:0/task:1" in caplog.text and "lost" in caplog.text


def test_step_stats_read_as_tf_code_reads_the_protocol_buffer(cluster):  # noqa: F811
    v, _, total, _, _ = _ps_model()
    md = tf.RunMetadata()
    assert len(md.step_stats.dev_stats) == 0  # an empty StepStats before a traced run
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        sess.run(total, options=FULL, run_metadata=md)
    timings = {}
    for dev_stats in md.step_stats.dev_stats:
        for node_stats in dev_stats.node_stats:
            timings[(dev_stats.device, node_stats.node_name)] = node_stats.all_end_rel_micros
    assert (W0, "total") in timings and (PS, "v/read") in timings
    with pytest.raises(AttributeError, match="not set"):
        md.step_stats.dev_stats[0].no_such_field  # noqa: B018


def test_a_recording_whose_client_is_gone_is_closed(cluster):  # noqa: F811
    v, _, total, _, _ = _ps_model()
    sess = tf.Session(cluster["worker0"].target)
    sess.run(v.initializer)
    Tracer(sess).start()  # never stopped: its process "dies" with the session's connections
    assert cluster["ps"].recorders.active
    sess.close()
    # The ps notices the closed connection and closes the recording.
    assert cluster["ps"].recorders.wait_until_inactive(timeout=10)


def test_each_iteration_of_a_waiting_op_in_a_loop_keeps_its_own_notes():
    # Three iterations' dequeues wait at once (the loop's counter does not wait
    # for them); each one's node says what it waited on and which element it took.
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]], name="q")
    _, total = tf.while_loop(
        lambda i, s: i < 3, lambda i, s: (i + 1, s + q.dequeue()), [0, 0.0], parallel_iterations=10
    )
    with tf.Session() as sess:
        queue = queue_resource(sess, q)
        md = tf.RunMetadata()
        result = {}
        thread = threading.Thread(
            target=lambda: result.setdefault("v", sess.run(total, options=FULL, run_metadata=md))
        )
        thread.start()
        assert queue.wait_for_waiting(1, 3, timeout=10)  # all three dequeues wait
        sess.run(q.enqueue_many([[1.0, 2.0, 4.0]]))
        thread.join(10)
    assert result["v"] == 7.0
    dequeues = [n for n in _nodes(md.step_stats) if n["op"] == "QueueDequeueV2"]
    assert sorted(n["iteration"] for n in dequeues) == [0, 1, 2]
    for node in dequeues:
        assert node["waited_on"] == {"kind": "queue", "name": queue.name, "size": 0, "capacity": 10}
    # The queue hands out ids 0, 1, 2 in the order the dequeues began to wait.
    assert sorted(n["elements"]["ids"][0] for n in dequeues) == [0, 1, 2]
