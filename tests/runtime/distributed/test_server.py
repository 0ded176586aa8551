"""tf.train.Server and tf.Session(target): steps that run across tasks.

Clusters are built in one process, as TF's own tests build them: each
`Server` has its own port, resources and connections, and tasks talk over
the same authenticated TCP transport that separate processes use.
"""

import threading
import time

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed import server as server_lib
from minitf.runtime.distributed.launcher import free_ports

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def cluster():
    """A ps task and two worker tasks on free loopback ports."""
    servers = {}
    ports = free_ports(3)
    spec = tf.train.ClusterSpec(
        {
            "ps": [f"127.0.0.1:{ports[0]}"],
            "worker": [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"],
        }
    )
    servers["ps"] = tf.train.Server(spec, job_name="ps", task_index=0)
    servers["worker0"] = tf.train.Server(spec, job_name="worker", task_index=0)
    servers["worker1"] = tf.train.Server(spec, job_name="worker", task_index=1)
    yield servers
    for server in servers.values():
        server.stop()


def test_local_server_runs_a_session_and_keeps_state_between_sessions():
    server = tf.train.Server.create_local_server()
    try:
        assert server.target.startswith("grpc://")
        v = tf.Variable(1.0, name="v")
        inc = tf.assign_add(v, 2.0)
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            assert sess.run(inc) == 3.0
        with tf.Session(server.target) as sess:  # the variable lives on the server
            assert sess.run(v) == 3.0
    finally:
        server.stop()


def test_variables_on_ps_compute_on_worker(cluster):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [None, 2])
        y = tf.matmul(x, w)
    x_value = np.array([[1.0, 2.0]], np.float32)
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(y, {x: x_value}), x_value @ sess.run(w))


def test_partition_has_one_send_recv_pair_per_crossing_edge(cluster):
    with tf.device("/job:ps/task:0"):
        a = tf.constant(2.0, name="a")
        b = tf.Variable(3.0, name="b")
    with tf.device("/job:worker/task:1"):
        c = a * b.read_value() + a
    ops = tf.get_default_graph().get_operations()
    devices = partition_lib.place(partition_lib_topo(ops), "worker", 0, {"ps": 1, "worker": 2})
    parts = partition_lib.partition(partition_lib_topo(ops), devices, [c], [], [])
    sends = [n for p in parts.values() for n in p.nodes if n.op == "_Send"]
    recvs = [n for p in parts.values() for n in p.nodes if n.op == "_Recv"]
    assert len(sends) == len(recvs) == 2  # a and b's value cross once each
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(b.initializer)
        assert sess.run(c) == 8.0


def partition_lib_topo(ops):
    from minitf.runtime.core.plan import topological_order

    return topological_order(ops, set())


def test_default_device_is_the_session_target_task(cluster):
    v = tf.Variable(5.0, name="v")  # no device: runs on the target's task
    with tf.Session(cluster["worker1"].target) as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 5.0
    found = [n for _, n, _ in cluster["worker1"].resource_mgr.items()]
    assert "v" in found
    assert not [n for _, n, _ in cluster["ps"].resource_mgr.items()]


def test_between_graph_replicas_share_ps_variables_by_name(cluster):
    def build():
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(0, name="counter")
        return counter, tf.assign_add(counter, 1)

    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        c1, inc1 = build()
    with g2.as_default():
        c2, inc2 = build()
    with (
        tf.Session(cluster["worker0"].target, graph=g1) as s1,
        tf.Session(cluster["worker1"].target, graph=g2) as s2,
    ):
        s1.run(c1.initializer)
        for _ in range(3):
            s1.run(inc1)
            s2.run(inc2)
        assert s1.run(c1) == 6 and s2.run(c2) == 6


def test_shared_queue_is_shared_across_two_sessions_on_a_task(cluster):
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default(), tf.device("/job:ps/task:0"):
        q1 = tf.FIFOQueue(10, tf.int32, shapes=[[]], shared_name="jobs", name="q_one")
        put = q1.enqueue_many([[1, 2, 3]])
    with g2.as_default(), tf.device("/job:ps/task:0"):
        q2 = tf.FIFOQueue(10, tf.int32, shapes=[[]], shared_name="jobs", name="q_two")
        take = q2.dequeue_many(3)
    with tf.Session(cluster["worker0"].target, graph=g1) as s1:
        s1.run(put)
    with tf.Session(cluster["worker1"].target, graph=g2) as s2:
        np.testing.assert_array_equal(s2.run(take), [1, 2, 3])


def test_blocking_dequeue_on_ps_is_woken_by_another_worker(cluster):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32, shared_name="tokens")
    got = []
    with tf.Session(cluster["worker0"].target) as s1, tf.Session(cluster["worker1"].target) as s2:
        waiter = threading.Thread(target=lambda: got.append(s1.run(q.dequeue())))
        waiter.start()
        s2.run(q.enqueue(7.0))
        waiter.join(30)
        assert got == [7.0]


def test_op_errors_on_a_remote_task_keep_their_class_and_op(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="uninitialized")
    with tf.Session(cluster["worker0"].target) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as info:
            sess.run(v)
    assert "uninitialized" in str(info.value)


def test_run_timeout_across_tasks_raises_deadline_exceeded(cluster):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32)
    with tf.Session(cluster["worker0"].target) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=100))


def test_unreachable_task_raises_unavailable_quickly(monkeypatch):
    monkeypatch.setenv("MINITF_CONNECT_TIMEOUT", "0.5")
    port = free_ports(1)[0]
    with pytest.raises(tf.errors.UnavailableError, match="unreachable"):
        tf.Session(f"grpc://127.0.0.1:{port}")


def test_invalid_device_is_reported_with_the_available_ones(cluster):
    with tf.device("/job:ps/task:3"):
        v = tf.constant(1.0, name="far")
    with tf.Session(cluster["worker0"].target) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device"):
            sess.run(v)


def test_partitions_are_registered_once_per_signature(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:0"):
        y = v * 2.0
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        before = cluster["ps"].worker.num_registered_graphs
        for _ in range(5):
            assert sess.run(y) == 2.0
        assert cluster["ps"].worker.num_registered_graphs == before + 1


def test_a_restarted_worker_finds_its_variables_on_the_live_ps(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="kept")
    inc = tf.assign_add(v, 1.0)
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        sess.run(inc)
    spec = cluster["worker0"].cluster
    cluster["worker0"].stop()
    cluster["worker0"] = tf.train.Server(spec, job_name="worker", task_index=0)
    with tf.Session(cluster["worker0"].target) as sess:
        assert sess.run(inc) == 2.0


def test_a_restarted_ps_has_lost_its_state(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="lost")
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
    spec = cluster["ps"].cluster
    cluster["ps"].stop()
    cluster["ps"] = tf.train.Server(spec, job_name="ps", task_index=0)
    with tf.Session(cluster["worker0"].target) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(v)


def test_a_session_registers_its_partitions_again_on_a_restarted_ps(cluster):
    with tf.device("/job:ps/task:0"):
        a = tf.constant(2.0, name="on_ps") * 1.0
    b = a * 3.0
    with tf.Session(cluster["worker0"].target) as sess:
        assert sess.run(b) == 6.0
        spec = cluster["ps"].cluster
        cluster["ps"].stop()
        cluster["ps"] = tf.train.Server(spec, job_name="ps", task_index=0)
        # The same session, no new one: the lost connection fails the run that
        # finds it lost (Unavailable) and the one that makes it again (Aborted),
        # as in TF; a later run registers its partition on the new ps itself.
        failures = []
        for _ in range(3):
            try:
                value = sess.run(b)
                break
            except (tf.errors.UnavailableError, tf.errors.AbortedError) as exc:
                failures.append(type(exc))
        assert value == 6.0
        assert 1 <= len(failures) <= 2
        assert cluster["ps"].worker.num_registered_graphs == 1


def _join_channel_readers(task: str) -> None:
    """Waits until every session's reader of its connection to ``task`` has seen it end."""
    for thread in threading.enumerate():
        if thread.name == f"minitf-channel{task}":
            thread.join(20)
            assert not thread.is_alive()


def test_a_run_on_a_restarted_ps_is_aborted_instead_of_reading_its_lost_state(cluster):
    # A session's first run of a new signature after the ps restarted must not
    # register on the new ps and read its uninitialized variables (TF aborts a
    # run whose task restarted under it): a MonitoredSession would die of that
    # FailedPreconditionError instead of making a new session and waiting for
    # the chief to restore the model.
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="restored_later")
    doubled = v * 2.0
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        spec = cluster["ps"].cluster
        cluster["ps"].stop()
        _join_channel_readers("/job:ps/replica:0/task:0")  # the session knows it lost the ps
        cluster["ps"] = tf.train.Server(spec, job_name="ps", task_index=0)
        with pytest.raises(tf.errors.AbortedError, match="lost and made again"):
            sess.run(doubled)
        # The next run registers again, and finds the new ps's state as it is.
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(doubled)
        sess.run(v.initializer)
        assert sess.run(doubled) == 2.0


def test_in_graph_replication_runs_ops_on_several_workers(cluster):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable([1.0, 2.0], name="w")
    towers = []
    for i in range(2):
        with tf.device(f"/job:worker/task:{i}"):
            towers.append(w * float(i + 1))
    total = tf.add_n(towers)
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(total), [3.0, 6.0])


def test_a_peer_with_another_secret_is_refused_and_logged(cluster, caplog):
    from minitf.runtime.distributed.connect import parse_address
    from minitf.runtime.distributed.wire import Wire

    address = parse_address(cluster["ps"].target[len("grpc://") :])
    with caplog.at_level("WARNING", logger="minitf"):
        with pytest.raises(Exception, match="digest"):
            Wire.connect(address, b"not the cluster secret", timeout=5)
        with tf.Session(cluster["worker0"].target) as sess:  # the task still serves
            assert sess.run(tf.constant(1.0)) == 1.0
    assert any("authentication failed" in r.getMessage() for r in caplog.records)


def test_control_dependencies_cross_tasks(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="ctrl")
        bump = tf.assign_add(v, 1.0)
    with tf.device("/job:worker/task:1"), tf.control_dependencies([bump]):
        after = tf.constant(5.0) * 2.0
    with tf.Session(cluster["worker0"].target) as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 10.0
        assert sess.run(v) == 1.0


def test_a_model_on_two_ps_and_two_workers_matches_a_local_session():
    ports = free_ports(4)
    spec = tf.train.ClusterSpec(
        {
            "ps": [f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[1]}"],
            "worker": [f"127.0.0.1:{ports[2]}", f"127.0.0.1:{ports[3]}"],
        }
    )
    servers = [
        tf.train.Server(spec, job_name=job, task_index=i)
        for job in ("ps", "worker")
        for i in range(2)
    ]
    x_value = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
    y_value = np.random.default_rng(1).integers(0, 3, 8)

    def build():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 5])
        y = tf.placeholder(tf.int64, [None])
        w1 = tf.get_variable("w1", [5, 4])
        w2 = tf.get_variable("w2", [4, 3])
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        return x, y, loss, train

    def run(target, device_fn):
        graph = tf.Graph()
        with graph.as_default(), tf.device(device_fn):
            x, y, loss, train = build()
            with tf.Session(target) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(5):
                    sess.run(train, {x: x_value, y: y_value})
                return sess.run(loss, {x: x_value, y: y_value}), graph

    try:
        setter = tf.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:1")
        distributed, graph = run(servers[2].target, setter)
        placed = {op.name: op.device for op in graph.get_operations()}
        assert placed["w1"] == "/job:ps/task:0" and placed["w2"] == "/job:ps/task:1"
        assert placed["MatMul"] == "/job:worker/task:1"
        local, _ = run("", None)
        np.testing.assert_allclose(distributed, local, rtol=1e-6)
    finally:
        for server in servers:
            server.stop()


def test_async_sgd_from_two_workers_equals_a_serial_replay_of_its_updates(cluster):
    # Each worker applies w -= lr * (w_read - target) with its own stale read.
    # Fetching the gradient in the same run as the update records exactly
    # what was applied; replaying the recorded updates in global-step order
    # must give the final variable. float64 and lr = 1/2 keep every value a
    # short binary fraction, so the replay is exact.
    steps_per_worker, lr = 20, 0.5
    w0 = np.array([8.0, -4.0, 2.0])
    target = np.array([1.0, 3.0, -5.0])
    records, errors_seen = [], []

    def worker(index):
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(w0, name="w")
                step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
            with tf.device(f"/job:worker/task:{index}"):
                loss = 0.5 * tf.reduce_sum(tf.square(w - target))
                opt = tf.train.GradientDescentOptimizer(lr)
                ((grad, _),) = opt.compute_gradients(loss, [w])
                train = opt.apply_gradients([(grad, w)], global_step=step)
            with tf.Session(cluster[f"worker{index}"].target) as sess:
                if index == 0:
                    sess.run([w.initializer, step.initializer])
                    ready.set()
                assert ready.wait(30)
                for _ in range(steps_per_worker):
                    # The step op's own output is the global step it produced.
                    s, g = sess.run([train.outputs[0], grad])
                    records.append((int(s), g))
                return sess.run(w)

    ready = threading.Event()
    finals = {}

    def run(i):
        try:
            finals[i] = worker(i)
        except Exception as exc:  # noqa: BLE001
            errors_seen.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors_seen == [] and len(records) == 2 * steps_per_worker
    replay = w0.copy()
    for _, g in sorted(records, key=lambda r: r[0]):
        replay = replay - lr * g
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(w0, name="w")
    with tf.Session(cluster["worker0"].target) as sess:
        np.testing.assert_array_equal(sess.run(w), replay)
    assert sorted(r[0] for r in records) == list(range(1, 2 * steps_per_worker + 1))


def test_server_needs_a_job_and_task_it_can_find():
    two_jobs = {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}
    with pytest.raises(ValueError, match="job_name"):
        tf.train.Server(two_jobs, start=False)
    with pytest.raises(ValueError, match="task_index"):
        tf.train.Server(two_jobs, job_name="worker", start=False)
    with pytest.raises(ValueError):
        tf.train.Server(two_jobs, job_name="chief", task_index=0, start=False)
    with pytest.raises(ValueError):
        tf.train.Server(two_jobs, job_name="worker", task_index=5, start=False)
    with pytest.raises(TypeError):
        tf.train.Server(["127.0.0.1:1"], start=False)
    server = tf.train.Server(two_jobs, job_name="worker", task_index=1, start=False)
    assert server.server_def["job_name"] == "worker" and server.server_def["task_index"] == 1
    assert server.target == "grpc://127.0.0.1:3"


def test_closing_a_session_cancels_its_blocked_step_on_the_ps(cluster):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="closing")
    sess = tf.Session(cluster["worker0"].target)
    sess.run(q.size())  # the queue exists on the ps
    queue = cluster["ps"].resource_mgr.lookup("", "closing")
    errors_seen = []

    def blocked():
        try:
            sess.run(q.dequeue())
        except tf.errors.OpError as exc:
            errors_seen.append(exc)

    waiter = threading.Thread(target=blocked)
    waiter.start()
    assert queue.wait_for_waiting(1, 1, timeout=10)
    sess.close()
    waiter.join(10)
    assert [type(e) for e in errors_seen] == [tf.errors.CancelledError]
    assert queue.wait_for_waiting(1, 0, timeout=10)  # the dequeue left the ps too
    with tf.Session(cluster["worker1"].target) as other:
        other.run(q.enqueue(5.0))
        assert other.run(q.dequeue()) == 5.0  # nobody else took it


def test_a_port_in_use_says_which_task_wanted_it(monkeypatch):
    # A server tries a port in use again for a while; the refusal is the same sooner.
    monkeypatch.setattr(server_lib, "LISTEN_PATIENCE_SECS", 0.5)
    import socket

    taken = socket.create_server(("127.0.0.1", 0))
    try:
        port = taken.getsockname()[1]
        spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{port}"]})
        with pytest.raises(tf.errors.UnavailableError) as raised:
            tf.train.Server(spec, job_name="ps", task_index=0)
        assert f"/job:ps/replica:0/task:0 cannot listen on 127.0.0.1:{port}" in str(raised.value)
        assert f"port {port} is in use" in str(raised.value)
    finally:
        taken.close()


def test_a_host_that_does_not_resolve_fails_at_once_naming_it():
    import time

    start = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError, match="'nohost.invalid' does not resolve"):
        with tf.Session("grpc://nohost.invalid:2222") as sess:
            sess.run(tf.constant(1.0) * 2.0)
    assert time.monotonic() - start < 5.0  # not the 10 s of retries for a task starting up


def test_a_kernel_that_breaks_its_float_dtype_is_named_where_its_tensor_leaves_the_task(cluster):
    from minitf.framework.op_registry import get_kernel_def, register_kernel

    if get_kernel_def("TestWrongFloat") is None:

        @register_kernel("TestWrongFloat")
        def _wrong_float(op):
            """Declares float32 and returns float64, as a buggy kernel might."""
            return lambda ctx, x: np.asarray(x, dtype=np.float64)

    with tf.device("/job:worker/task:0"):
        x = tf.constant([1.0, 2.0])
        bad = (
            tf.get_default_graph()
            .create_op("TestWrongFloat", [x], [tf.float32], name="widened", shapes=[[2]])
            .outputs[0]
        )
    with tf.device("/job:ps/task:0"):
        total = tf.reduce_sum(bad)
    with tf.Session(cluster["worker0"].target) as sess:
        with pytest.raises(tf.errors.InternalError, match="'widened' produced float64"):
            sess.run(total)
        assert sess.run(tf.reduce_sum(x)) == 3.0  # the session stays usable


def test_a_queue_without_a_shared_name_lives_as_long_as_its_session_across_run_signatures():
    # TF keeps one kernel per stateful op and session (OpSegment): every run
    # of the session, whatever it fetches, sees the same private queue; a
    # new session gets a new one.
    server = tf.train.Server.create_local_server()
    try:
        q = tf.FIFOQueue(2, tf.float32, shapes=[], name="tokens")
        with tf.Session(server.target) as sess:
            sess.run(q.enqueue(3.0))
            assert sess.run(q.size()) == 1
            assert sess.run(q.dequeue()) == 3.0
            sess.run(q.enqueue(4.0))
        with tf.Session(server.target) as sess:
            assert sess.run(q.size()) == 0
    finally:
        server.stop()


def _received(server, step_id: int, key: str, timeout: float = 10.0):
    """The value the task's rendezvous got for ``key`` in step ``step_id`` (waits for it)."""
    from minitf.runtime.core.step_context import StepContext

    got, arrived = [], threading.Event()
    server.rendezvous.recv(
        step_id, key, StepContext(None), lambda v: (got.append(v), arrived.set())
    )
    assert arrived.wait(timeout), f"{key} never arrived"
    return got[0]


def test_a_send_to_a_task_that_went_away_fails_at_once_and_reaches_it_once_back(
    cluster, monkeypatch
):
    # A retry would wait this long: a thread that sends carries other steps too.
    monkeypatch.setenv("MINITF_CONNECT_TIMEOUT", "30")
    peers, ps = cluster["worker0"]._peers, "/job:ps/replica:0/task:0"
    peers.send_tensor(ps, 1, "before", np.arange(3.0))
    np.testing.assert_array_equal(_received(cluster["ps"], 1, "before"), [0.0, 1.0, 2.0])
    spec = cluster["ps"].cluster
    cluster["ps"].stop()
    started = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError, match=r"lost the connection to /job:ps/"):
        peers.send_tensor(ps, 2, "while_down", np.arange(3.0))
    assert time.monotonic() - started < 5.0
    cluster["ps"] = tf.train.Server(spec, job_name="ps", task_index=0)
    peers.send_tensor(ps, 3, "after", np.ones(2))
    np.testing.assert_array_equal(_received(cluster["ps"], 3, "after"), [1.0, 1.0])
