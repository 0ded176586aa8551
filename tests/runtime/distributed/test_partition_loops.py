"""A ``tf.while_loop`` split across tasks runs as TF's partitioner makes it run.

TF's ``graph_partition.cc`` (``AddControlFlow``) gives every task that
receives a tensor inside a loop a *control loop* — ``Enter``, ``Merge``,
``Switch``, ``NextIteration`` of a dummy value, driven by the loop's
``LoopCond`` sent to it each iteration — and keys each ``_Send``/``_Recv``
of the loop by frame and iteration. The values here are checked against the
same loop written in Python, the gradients against the one-task result and
finite differences.
"""

import logging
import re
import threading

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.core import config
from minitf.runtime.core.rendezvous import Rendezvous
from minitf.runtime.distributed import partition
from minitf.runtime.distributed.launcher import LocalCluster

pytestmark = pytest.mark.timeout(120)

OPTIONS = tf.RunOptions(timeout_in_ms=30000)
W, V, X = 1.5, 0.5, 0.25
STEPS = 6


@pytest.fixture(scope="module")
def cluster():
    """Three processes: two ps tasks and a worker."""
    with LocalCluster({"ps": 2, "worker": 1}, output=None) as c:
        yield c


def _python_loop(w: float, v: float, x: float) -> float:
    """`_split_loop` in Python, in float64."""
    i, p = 0, 1.0
    while i < STEPS:
        q = p * w + 0.25
        i, p = i + 1, np.sin(q) * v + x * p
    return p


def _split_loop(prefix: str):
    """A loop on the worker whose predicate is on ps 1 and half its body on ps 0.

    Returns ``(initializers, x, p, gradients of p by w, v, x)``.
    """
    with tf.device("/job:ps/task:0"):
        w = tf.get_variable(f"{prefix}_w", initializer=W, use_resource=True)
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(V, name=f"{prefix}_v")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")

        def cond(i, p):
            with tf.device("/job:ps/task:1"):
                return i < STEPS

        def body(i, p):
            with tf.device("/job:ps/task:0"):
                q = p * w.read_value() + tf.constant(0.25)  # a resource read and a constant
            return i + 1, tf.sin(q) * v + x * p

        _, p = tf.while_loop(cond, body, [0, 1.0])
        grads = tf.gradients(p, [w, v, x])
    return [w.initializer, v.initializer], x, p, grads


def _run_split_loop(target: str | None, prefix: str) -> tuple:
    with tf.Graph().as_default():
        inits, x, p, grads = _split_loop(prefix)
        soft = tf.ConfigProto(allow_soft_placement=True)  # one task: every op on it
        with tf.Session(target, config=None if target else soft) as sess:
            sess.run(inits)
            return tuple(sess.run([p, grads], {x: X}, options=OPTIONS))


def _finite_differences() -> list[float]:
    h = 1e-6
    base = [W, V, X]
    grads = []
    for k in range(3):
        up, down = list(base), list(base)
        up[k] += h
        down[k] -= h
        grads.append((_python_loop(*up) - _python_loop(*down)) / (2 * h))
    return grads


def test_a_loop_with_its_predicate_and_half_its_body_on_two_ps_tasks(cluster):
    value, grads = _run_split_loop(cluster.target("worker", 0), "split")
    assert value == pytest.approx(_python_loop(W, V, X), rel=1e-5)
    one_task = _run_split_loop(None, "split")
    np.testing.assert_allclose(value, one_task[0], rtol=1e-6)
    np.testing.assert_allclose(grads, one_task[1], rtol=1e-6)
    np.testing.assert_allclose(grads, _finite_differences(), rtol=1e-3)


def test_a_training_step_through_a_loop_that_reads_a_ps_variable_each_iteration(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.get_variable("train_v", initializer=2.0, use_resource=True)
        with tf.device("/job:worker/task:0"):
            # v.read_value() is an op of the loop on the ps: its value crosses
            # every iteration, and its gradient's stack stays on the ps.
            _, s = tf.while_loop(
                lambda i, s: i < 4, lambda i, s: (i + 1, s * v.read_value() + 1.0), [0, 1.0]
            )
            train = tf.train.GradientDescentOptimizer(0.01).minimize(s)
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.initializer)
            # s = v^4 + v^3 + v^2 + v + 1; ds/dv = 4v^3 + 3v^2 + 2v + 1.
            assert sess.run(s, options=OPTIONS) == 31.0
            sess.run(train, options=OPTIONS)
            new_v = 2.0 - 0.01 * (4 * 8 + 3 * 4 + 2 * 2 + 1)
            assert sess.run(v.read_value()) == pytest.approx(new_v)
            assert sess.run(s, options=OPTIONS) == pytest.approx(
                sum(new_v**k for k in range(5)), rel=1e-6
            )


def test_iterations_running_ahead_never_take_each_others_tensors(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):

            def body(i, total):
                with tf.device("/job:ps/task:0"):
                    term = tf.cast(i, tf.float32) * 3.0  # a different value each iteration
                return i + 1, total + term

            # Up to 10 iterations in flight at once, each sending its own term.
            _, total = tf.while_loop(lambda i, t: i < 100, body, [0, 0.0])
            _, one_at_a_time = tf.while_loop(
                lambda i, t: i < 100, body, [0, 0.0], parallel_iterations=1
            )
        with tf.Session(cluster.target("worker", 0)) as sess:
            assert sess.run([total, one_at_a_time], options=OPTIONS) == [3.0 * 4950] * 2


def test_nested_split_loops_and_a_split_loop_on_a_branch_not_taken(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(1.5, name="nested_w")
        with tf.device("/job:worker/task:0"):
            flag = tf.placeholder(tf.bool, [])

            def outer(i, s):
                def inner(j, t):
                    with tf.device("/job:ps/task:1"):
                        return j + 1, t + w * tf.cast(j, tf.float32)

                _, t = tf.while_loop(lambda j, t: j < i, inner, [0, s])
                return i + 1, t

            nested = tf.while_loop(lambda i, s: i < 4, outer, [0, 0.0])[1]
            chosen = tf.cond(flag, lambda: nested * 2.0, lambda: tf.constant(-1.0))
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(w.initializer)
            # Outer i = 0..3; inner j = 0..i-1 adds w * j.
            expected = sum(1.5 * j for i in range(4) for j in range(i))
            assert sess.run(nested, options=OPTIONS) == pytest.approx(expected)
            assert sess.run(chosen, {flag: True}, options=OPTIONS) == pytest.approx(2 * expected)
            # Not taken: the loop's tasks learn it is dead, through dead tensors.
            assert sess.run(chosen, {flag: False}, options=OPTIONS) == -1.0


def test_the_simulated_cluster_runs_the_split_loop_alike_with_speed_ups_on_and_off(monkeypatch):
    from minitf.cluster.simulated import SimulatedCluster

    def simulate() -> tuple:
        cluster = SimulatedCluster({"ps": 2, "worker": 1})
        out = {}

        def client():
            out["run"] = _run_split_loop(cluster.target("worker", 0), "sim")

        cluster.run_clients(client)
        return out["run"]

    fast = simulate()
    monkeypatch.setattr(config, "_FAST", False)  # what MINITF_FAST=0 sets
    slow = simulate()
    assert fast[0] == slow[0]
    np.testing.assert_array_equal(fast[1], slow[1])
    assert fast[0] == pytest.approx(_python_loop(W, V, X), rel=1e-5)
    np.testing.assert_allclose(fast[1], _finite_differences(), rtol=1e-3)


def test_processes_with_speed_ups_off_give_the_same_values(monkeypatch):
    monkeypatch.setattr(config, "_FAST", False)
    with LocalCluster({"ps": 2, "worker": 1}, output=None, env={config.FAST_ENV: "0"}) as c:
        slow = _run_split_loop(c.target("worker", 0), "slow")
    monkeypatch.setattr(config, "_FAST", True)
    fast = _run_split_loop(None, "slow")
    assert slow[0] == pytest.approx(fast[0], rel=1e-6)
    np.testing.assert_allclose(slow[1], fast[1], rtol=1e-6)


# -- what the partitioner builds --------------------------------------------------------------


def _partitions(fetches):
    parts, _ = partition.partition_step(fetches, [], [], {"ps": 1, "worker": 1}, "worker", 0)
    return {task.split("/")[1]: {n.name: n for n in p.nodes} for task, p in parts.items()}


def test_each_task_that_receives_in_a_loop_gets_a_control_loop_driven_by_the_loopcond():
    with tf.device("/job:ps/task:0"):
        v = tf.get_variable("v", initializer=2.0, use_resource=True)
    with tf.device("/job:worker/task:0"):
        r = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + v.read_value()), [0, 0.0])
    nodes = _partitions([r[1]])
    for task in ("job:ps", "job:worker"):
        cloop = {n.op: n for name, n in nodes[task].items() if name.startswith("_cloop/")}
        assert sorted(cloop) == ["Const", "Enter", "Merge", "NextIteration", "Switch"]
        assert cloop["Enter"].attrs["frame_name"] == "while/while_context"
        assert cloop["Merge"].inputs == [(cloop["Enter"].name, 0), (cloop["NextIteration"].name, 0)]
        assert cloop["NextIteration"].inputs == [(cloop["Switch"].name, 1)]
        # Every _Recv of a tensor of the loop runs once per iteration: after the Merge.
        in_loop = [n for n in nodes[task].values()
                   if n.op == "_Recv" and ";while/" in n.attrs["tensor_name"]]  # fmt: skip
        assert in_loop and all(n.control_inputs == [cloop["Merge"].name] for n in in_loop)
    # The ps's Switch reads the worker's LoopCond, sent every iteration.
    pred, _ = nodes["job:ps"]["_cloop/while/while_context/Switch"].inputs[1]
    assert nodes["job:ps"][pred].attrs["tensor_name"].endswith(";while/LoopCond:0")
    assert nodes["job:worker"]["_cloop/while/while_context/Switch"].inputs[1] == (
        "while/LoopCond",
        0,
    )


def test_an_inner_control_loop_enters_from_the_outer_one():
    with tf.device("/job:worker/task:0"):

        def outer(i):
            def inner(j):
                with tf.device("/job:ps/task:0"):
                    return j + 1

            return tf.while_loop(lambda j: j < i, inner, [i]) + 1

        r = tf.while_loop(lambda i: i < 3, outer, [0])
    ps = _partitions([r])["job:ps"]
    enter = ps["_cloop/while/while/while_context/Enter"]
    assert enter.inputs == [("_cloop/while/while_context/Merge", 0)]
    assert "_cloop/while/while/while_context/Const" not in ps


def test_a_tensor_sent_in_a_loop_is_keyed_by_frame_and_iteration(ps_and_worker, monkeypatch):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(2.0, name="v")
    with tf.device("/job:worker/task:0"):
        r = tf.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, s + v.read_value()), [0, 0.0])
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(v.initializer)
        keys = []
        send = Rendezvous.send

        def spy(self, step_id, key, value):
            keys.append(key)
            return send(self, step_id, key, value)

        monkeypatch.setattr(Rendezvous, "send", spy)
        assert sess.run(r[1], options=OPTIONS) == 4.0
    worker = "/job:worker/replica:0/task:0/device:CPU:0"
    ps = "/job:ps/replica:0/task:0/device:CPU:0"
    # The predicate reaches the ps in iterations 0, 1 and 2 (false: the loop ends);
    # the read comes back in each of them (dead in the last).
    assert sorted(k for k in keys if "LoopCond" in k) == [
        f"{worker};{ps};while/LoopCond:0;while/while_context:{n}" for n in range(3)
    ]
    assert sorted(k for k in keys if ";while/read:0" in k) == [
        f"{ps};{worker};while/read:0;while/while_context:{n}" for n in range(3)
    ]


def test_every_tensor_a_loop_sends_is_taken_even_on_a_branch_not_taken(ps_and_worker, monkeypatch):
    # On a branch not taken the loop's first iteration still runs on both
    # tasks, dead: the ps sends its dead read, and the worker's _Recv (its
    # control loop's Merge is alive) takes it. Nothing is left behind.
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(2.0, name="v")
    with tf.device("/job:worker/task:0"):
        flag = tf.placeholder(tf.bool, [])
        loop = lambda: tf.while_loop(  # noqa: E731
            lambda i, s: i < 2, lambda i, s: (i + 1, s + v.read_value()), [0, 0.0]
        )[1]
        r = tf.cond(flag, loop, lambda: tf.constant(-1.0))
    sent, taken = [], []
    send, recv = Rendezvous.send, Rendezvous.recv

    def spy_send(self, step_id, key, value):
        sent.append(key)
        return send(self, step_id, key, value)

    def spy_recv(self, step_id, key, ctx, done):
        taken.append(key)
        return recv(self, step_id, key, ctx, done)

    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(v.initializer)
        monkeypatch.setattr(Rendezvous, "send", spy_send)
        monkeypatch.setattr(Rendezvous, "recv", spy_recv)
        assert sess.run(r, {flag: False}, options=OPTIONS) == -1.0
        assert any(";cond/while/read:0;" in key for key in sent)
        assert sorted(sent) == sorted(taken)
        assert sess.run(r, {flag: True}, options=OPTIONS) == 4.0
        assert sorted(sent) == sorted(taken)


def test_a_recv_waiting_in_a_loop_says_which_iteration_it_waits_in(ps_and_worker):
    # The ps's queue holds two elements: iterations 0 and 1 take them, and in
    # iteration 2 the dequeue waits on the ps, so the worker's _Recv of its
    # value waits there too (one iteration at a time: parallel_iterations=1).
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="loop_q", name="loop_q")
    with tf.device("/job:worker/task:0"):
        _, total = tf.while_loop(
            lambda i, s: i < 4,
            lambda i, s: (i + 1, s + q.dequeue()),
            [0, 0.0],
            parallel_iterations=1,
        )
    executor = ps_and_worker["worker"].worker._executor
    executor.wait_log_secs = 0.05
    executor._watch = None  # a new watch, with the short interval
    lines, logged = [], threading.Event()

    class Seen(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if "has waited" in message and "tensor from" in message:
                lines.append(message)
                # On a loaded machine the ps may answer iterations 0 and 1 late
                # too; only iteration 2's wait lasts until the test ends it.
                if "in iteration 2 " in message:
                    logged.set()

    seen = Seen()
    logging.getLogger("minitf").addHandler(seen)
    result = {}
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(q.enqueue_many([[1.0, 2.0]]))
        run = threading.Thread(
            target=lambda: result.setdefault("v", sess.run(total, options=OPTIONS))
        )
        run.start()
        try:
            assert logged.wait(20)
        finally:
            logging.getLogger("minitf").removeHandler(seen)
            sess.run(q.enqueue_many([[4.0, 8.0]]))
            run.join(20)
    ps = "/job:ps/replica:0/task:0"
    waiting = f"waits for a tensor from {ps} (while/loop_q_Dequeue:0) in iteration 2 of frame while"
    assert waiting in lines[-1]
    assert all(re.search(r"in iteration [0-2] of frame while$", line) for line in lines)
    assert result["v"] == 15.0
