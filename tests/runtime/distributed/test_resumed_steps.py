"""Steps that hold no thread while they wait: the task's loop makes their moves (`Executor.start`).

A partition with ops that wait — a ps's part of a training step — runs
without a thread of its own: the connection's thread runs it up to the first
op that has to wait. What completes that op — a tensor from another task, an
enqueue of another step — only queues the step for the task's loop (with the
speed-ups, the connection's thread that read the tensor may take the loop's
turn: ``tests/runtime/speedups/test_receiving.py``). Expected values are
computed by hand (numpy); the deadline and the log of a long wait name what
waits, as the dataflow driver's do.

Clusters are in-process servers on loopback ports (``conftest.py``).
"""

import gc
import logging
import threading
import weakref

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.blocking import BlockingResource
from minitf.ops.data_flow.queue_kernels import DEQUEUE
from minitf.runtime.core.executor import _Started

pytestmark = pytest.mark.timeout(60)


def _no_runner_ran(server) -> bool:
    """True if no run of ``server`` went to a runner thread (a runner stays idle for 30 s)."""
    return server._runners.wait_until_idle(0, 0.0)


def _ps_handle(ps) -> int:
    """The handle of the ps partition with ops that wait."""
    handles = [h for h, r in ps.worker._registered.items() if r.plan.segments is not None]
    assert len(handles) == 1
    return handles[0]


def _async_sgd(worker_target: str):
    """SGD on a linear loss: each step moves ``w`` by ``-0.1 x`` (its gradient is ``x``)."""
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.array([1.0, -2.0], np.float32), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [2])
        loss = tf.reduce_sum(w * x)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return w, x, train


def test_a_ps_part_that_waits_for_gradients_runs_without_a_runner_thread(ps_and_worker):
    ps = ps_and_worker["ps"]
    w, x, train = _async_sgd(ps_and_worker["worker"].target)
    x_val = np.array([3.0, 0.5], np.float32)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        for _ in range(20):
            sess.run(train, {x: x_val})
        got = sess.run(w)
    # By hand: w0 - 20 steps * 0.1 * x.
    np.testing.assert_allclose(got, np.array([1.0, -2.0]) - 20 * 0.1 * x_val, rtol=1e-5)
    _ps_handle(ps)
    assert _no_runner_ran(ps)
    assert ps.worker._steps == {}  # every step ended and was forgotten


def test_steps_from_two_clients_at_once_each_apply_once(ps_and_worker):
    # Two sessions in two threads bump one counter on the ps through a
    # tensor each sends it: every run adds exactly its own value.
    with tf.device("/job:ps/task:0"):
        total = tf.Variable(0.0, name="total")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [])
        doubled = x * 2.0
    with tf.device("/job:ps/task:0"):
        bump = tf.assign_add(total, doubled)
    runs = 50
    errors = []

    def client(value: float):
        try:
            with tf.Session(ps_and_worker["worker"].target) as sess:
                for _ in range(runs):
                    sess.run(bump.op, {x: value})
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(total.initializer)
        threads = [threading.Thread(target=client, args=(v,)) for v in (1.0, 10.0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(50)
        assert not errors
        assert sess.run(total) == runs * 2 * (1.0 + 10.0)
    assert _no_runner_ran(ps_and_worker["ps"])


def test_a_dequeue_on_the_ps_goes_on_when_another_clients_enqueue_comes(ps_and_worker):
    # One client's run waits on the ps for an element; another client's
    # enqueue completes it, and the first run's value is the element plus 1.
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(4, tf.float32, shapes=[], shared_name="handoff", name="handoff")
        taken = q.dequeue() + 1.0
        x = tf.placeholder(tf.float32, [])
        put = q.enqueue(x * 2.0)
    with tf.device("/job:worker/task:0"):
        out = taken * 10.0
    target = ps_and_worker["worker"].target
    got, errors = [], []

    def consumer():
        try:
            with tf.Session(target) as sess:
                got.append(sess.run(out, options=tf.RunOptions(timeout_in_ms=20000)))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with tf.Session(target) as sess:
        assert sess.run(q.size()) == 0  # the queue now exists on the ps
        [queue] = [
            r for _, name, r in ps_and_worker["ps"].worker.resource_mgr.items() if name == "handoff"
        ]
        thread = threading.Thread(target=consumer)
        thread.start()
        assert queue.wait_for_waiting(DEQUEUE, 1, 20)  # the consumer's dequeue waits on the ps
        sess.run(put, {x: 3.5})
    thread.join(20)
    assert not errors
    assert got == [(3.5 * 2.0 + 1.0) * 10.0]
    assert _no_runner_ran(ps_and_worker["ps"])


def _registered_ps_part(ps_and_worker):
    """Runs async SGD once, so the ps has its partition; returns the ps server and handle."""
    w, x, train = _async_sgd(ps_and_worker["worker"].target)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        sess.run(train, {x: np.array([1.0, 1.0], np.float32)})
    ps = ps_and_worker["ps"]
    return ps, _ps_handle(ps)


def _start(ps, handle, step_id: int, timeout_ms: int) -> tuple[threading.Event, list]:
    ended, outcome = threading.Event(), []

    def done(values, error):
        outcome.append((values, error))
        ended.set()

    assert ps.worker.start_graph(handle, step_id, [], timeout_ms, done)
    return ended, outcome


def test_a_resumed_step_past_its_deadline_names_the_tensor_it_waits_for(ps_and_worker):
    ps, handle = _registered_ps_part(ps_and_worker)
    # No worker sends this step's gradient: the ps part waits until its deadline.
    ended, outcome = _start(ps, handle, step_id=1 << 40, timeout_ms=200)
    assert ended.wait(20)
    [(values, error)] = outcome
    assert values is None
    assert isinstance(error, tf.errors.DeadlineExceededError)
    assert "the run's deadline passed" in str(error)
    assert "waits for a tensor from /job:worker/replica:0/task:0 (gradients/" in str(error)
    assert ps.worker._steps == {}


def test_an_aborted_resumed_step_ends_with_the_abort_error(ps_and_worker):
    ps, handle = _registered_ps_part(ps_and_worker)
    step_id = (1 << 40) + 1
    ended, outcome = _start(ps, handle, step_id, timeout_ms=0)
    assert not ended.is_set()  # it waits for its gradient
    ps.worker.abort_step(step_id, tf.errors.AbortedError(None, None, "the worker went away"))
    assert ended.wait(20)
    [(values, error)] = outcome
    assert isinstance(error, tf.errors.AbortedError)
    assert "the worker went away" in str(error)
    assert ps.worker._steps == {}


def test_a_resumed_step_that_waits_long_says_what_for(ps_and_worker):
    ps, handle = _registered_ps_part(ps_and_worker)
    ps.worker._executor.wait_log_secs = 0.05
    ps.worker._executor._watch = None  # a new watch, with the short interval
    step_id = (1 << 40) + 2
    logged, lines = threading.Event(), []

    class Seen(logging.Handler):
        def emit(self, record):
            if "has waited" in record.getMessage():
                lines.append(record.getMessage())
                logged.set()

    seen = Seen()
    logging.getLogger("minitf").addHandler(seen)
    try:
        ended, _ = _start(ps, handle, step_id, timeout_ms=0)
        assert logged.wait(20)
    finally:
        logging.getLogger("minitf").removeHandler(seen)
        ps.worker.abort_step(step_id, tf.errors.CancelledError(None, None, "test over"))
    assert ended.wait(20)
    assert f"step {step_id:x} has waited" in lines[0]
    assert "waits for a tensor from /job:worker/replica:0/task:0" in lines[0]


def test_a_traced_step_still_runs_on_a_runner(ps_and_worker):
    w, x, train = _async_sgd(ps_and_worker["worker"].target)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        metadata = tf.RunMetadata()
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        sess.run(train, {x: [1.0, 1.0]}, options=options, run_metadata=metadata)
    ps_nodes = [
        node
        for dev in metadata.step_stats["dev_stats"]
        if dev["device"].startswith("/job:ps")
        for node in dev["node_stats"]
    ]
    assert {n["node_name"] for n in ps_nodes} >= {"w"}
    assert ps_and_worker["ps"]._runners.wait_until_idle(1, 10)


def test_a_step_a_kernel_completes_goes_on_after_that_kernels_own_step(ps_and_worker, monkeypatch):
    # As SyncReplicas' chief and a worker: the chief's part waits for a
    # gradient (q1), then puts a token (q2); the worker's part pushes its
    # gradient, then waits for a token. The worker's push completes the
    # chief's wait, but the chief goes on only once the worker's part has
    # run what it could: its token dequeue waits before the token comes,
    # or a second worker could take that token first.
    with tf.device("/job:ps/task:0"):
        q1 = tf.FIFOQueue(4, tf.float32, shapes=[], shared_name="grads", name="grads")
        q2 = tf.FIFOQueue(4, tf.float32, shapes=[], shared_name="tokens", name="tokens")
        taken = q1.dequeue()
        put_token = q2.enqueue(taken + 100.0)
        x = tf.placeholder(tf.float32, [])
        push = q1.enqueue(x)
        with tf.control_dependencies([push]):
            token = q2.dequeue()
    with tf.device("/job:worker/task:0"):
        got_token = token * 1.0
    target = ps_and_worker["worker"].target
    resources = ps_and_worker["ps"].worker.resource_mgr
    with tf.Session(target) as sess:
        assert sess.run(q1.size()) == 0 and sess.run(q2.size()) == 0  # both queues exist
        names = {id(r): name for _, name, r in resources.items() if name in ("grads", "tokens")}
        attempts = []
        original = BlockingResource.try_attempt

        def recorded(self, direction, *args, **kwargs):
            if id(self) in names:
                attempts.append((names[id(self)], "dequeue" if direction == DEQUEUE else "enqueue"))
            return original(self, direction, *args, **kwargs)

        monkeypatch.setattr(BlockingResource, "try_attempt", recorded)
        chief_done = threading.Event()
        errors = []

        def chief():
            try:
                with tf.Session(target) as chief_sess:
                    chief_sess.run(put_token)
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)
            chief_done.set()

        thread = threading.Thread(target=chief)
        thread.start()
        [grads] = [r for _, name, r in resources.items() if name == "grads"]
        assert grads.wait_for_waiting(DEQUEUE, 1, 20), errors  # the chief waits for a gradient
        assert sess.run(got_token, {x: 2.5}) == 102.5
        assert chief_done.wait(20)
        thread.join(20)
    assert not errors
    assert attempts == [
        ("grads", "dequeue"),  # the chief waits
        ("grads", "enqueue"),  # the worker's push completes that wait ...
        ("tokens", "dequeue"),  # ... and the worker's own dequeue starts first
        ("tokens", "enqueue"),  # then the chief goes on and puts the token
    ]


class _Freed:
    """Counts the resumed steps made while it counts, and those of them freed since."""

    def __init__(self):
        self.made = 0
        self.freed = 0
        self.counting = False
        self.changed = threading.Condition()

    def made_one(self, run: _Started) -> None:
        if self.counting:
            self.made += 1
            weakref.finalize(run, self.freed_one)

    def freed_one(self) -> None:
        with self.changed:
            self.freed += 1
            self.changed.notify_all()

    def all_freed(self, timeout: float) -> bool:
        """Whether every counted step is freed within ``timeout`` (the collector is off)."""
        with self.changed:
            return self.changed.wait_for(lambda: self.freed == self.made, timeout)


def test_a_resumed_step_is_freed_when_it_ends_not_by_the_collector(ps_and_worker, monkeypatch):
    # A step in a reference cycle would keep its gradients alive until the
    # garbage collector runs; freed at once, their memory is what the next
    # step allocates, still in the cache. The thread that ends a step on the
    # ps may still be returning from it when the client has its reply, so
    # the check waits (bounded) for each step to be freed, with the
    # collector off: a step in a cycle would never be.
    freed = _Freed()
    made = _Started.__init__

    def counted(self, *args, **kwargs):
        made(self, *args, **kwargs)
        freed.made_one(self)

    monkeypatch.setattr(_Started, "__init__", counted)
    w, x, train = _async_sgd(ps_and_worker["worker"].target)
    x_val = np.array([3.0, 0.5], np.float32)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        sess.run(train, {x: x_val})
        gc.collect()
        gc.disable()
        try:
            freed.counting = True
            for _ in range(10):
                sess.run(train, {x: x_val})
            freed.counting = False
            all_freed = freed.all_freed(timeout=20)
            left = freed.made - freed.freed
        finally:
            gc.enable()
        got = sess.run(w)
    np.testing.assert_allclose(got, np.array([1.0, -2.0]) - 11 * 0.1 * x_val, rtol=1e-5)  # by hand
    assert freed.made >= 10  # the ps part of every step is resumed
    assert all_freed, f"{left} of {freed.made} resumed steps not freed without the collector"


@pytest.mark.parametrize("trace", [False, True])
def test_a_tensor_the_ps_parts_last_ops_send_to_the_client_comes_with_the_reply(
    speedups_on, ps_and_worker, monkeypatch, trace
):
    # The ps's part ends by sending the dequeued element to the worker, whose
    # session runs its own part in its process: the element travels with
    # the ps's reply (delivered by the thread that reads replies) instead of
    # in a message of its own (delivered by the worker's connection thread).
    # A traced run keeps the message of its own.
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(4, tf.float32, shapes=[], shared_name="carried", name="carried")
        taken = q.dequeue() + 1.0
        put = q.enqueue(3.5)
    with tf.device("/job:worker/task:0"):
        out = taken * 10.0
    worker = ps_and_worker["worker"].worker
    delivered_by = []
    deliver = type(worker).deliver_tensor

    def recording(self, step_id, key, value):
        if self is worker:
            delivered_by.append(threading.current_thread().name)
        return deliver(self, step_id, key, value)

    monkeypatch.setattr(type(worker), "deliver_tensor", recording)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) if trace else None
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(put)
        got = sess.run(out, options=options, run_metadata=tf.RunMetadata() if trace else None)
    assert got == (3.5 + 1.0) * 10.0  # by hand
    assert len(delivered_by) == 1
    reader = "minitf-conn" if trace else "minitf-channel"
    assert delivered_by[0].startswith(reader), delivered_by


def test_tensors_for_the_ps_go_on_the_sessions_connection_and_on_their_own_once_it_closes(
    ps_and_worker,
):
    # A worker script's session holds a connection to the ps; the worker's
    # server sends its tensors for the ps on it, behind the run request,
    # instead of opening a second connection. When that session closes,
    # another session's steps still get their tensors through.
    w, x, train = _async_sgd(ps_and_worker["worker"].target)
    x_val = np.array([3.0, 0.5], np.float32)
    target = ps_and_worker["worker"].target
    peers = ps_and_worker["worker"]._peers
    ps = "/job:ps/replica:0/task:0"
    first = tf.Session(target)
    first.run(w.initializer)
    first.run(train, {x: x_val})
    assert ps not in peers._wires  # the gradient went on the session's connection
    second = tf.Session(target)
    second.run(train, {x: x_val})
    second.close()  # the connection the server last shared goes away
    first.run(train, {x: x_val})  # its gradient goes on the server's own connection
    assert ps in peers._wires
    got = first.run(w)
    first.close()
    np.testing.assert_allclose(got, np.array([1.0, -2.0]) - 3 * 0.1 * x_val, rtol=1e-5)  # by hand


class _BreakingChannel:
    """A session's channel whose connection breaks under the next send (its session closing)."""

    lost = False

    class wire:  # noqa: N801 - stands in for the channel's Wire
        sends = 0

        @classmethod
        def send(cls, message):
            cls.sends += 1
            raise BrokenPipeError(32, "Broken pipe")


def test_a_tensor_whose_session_connection_breaks_under_it_goes_on_the_servers_own(
    ps_and_worker,
):
    # Two sessions in two threads: one closes while the worker's server is
    # sending the other's gradient on the connection it shared. The gradient
    # must still arrive, once.
    w, x, train = _async_sgd(ps_and_worker["worker"].target)
    x_val = np.array([3.0, 0.5], np.float32)
    peers = ps_and_worker["worker"]._peers
    ps = "/job:ps/replica:0/task:0"
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        peers.share(ps, _BreakingChannel())
        sess.run(train, {x: x_val})
        assert _BreakingChannel.wire.sends == 1
        assert ps in peers._wires  # the server's own connection took it
        assert not isinstance(peers._shared.get(ps), _BreakingChannel)
        got = sess.run(w)
    np.testing.assert_allclose(got, np.array([1.0, -2.0]) - 0.1 * x_val, rtol=1e-5)  # by hand
