"""Tests for minitf.runtime.core.executor: the straight walk, the dataflow loop and their errors.

Pinned TF1 behaviour: a failing kernel surfaces as the TF error class with
``.op`` naming the op, a blocked step fails with DeadlineExceededError once
the run's ``timeout_in_ms`` passes, and closing a session cancels its steps.
Test-only op types (``Test*``) are registered below with their kernels.
"""

import gc
import os
import subprocess
import sys
import threading
import time
import warnings
import zlib

import numpy as np
import pytest

import minitf as tf
from minitf.framework import errors
from minitf.framework.op_registry import get_kernel_def, register_compute, register_kernel
from minitf.runtime.core import config, pipeline
from minitf.runtime.core.execution import StepExecution, as_op_error
from minitf.runtime.core.executor import Executor
from minitf.runtime.core.plan import KernelInfo
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.core.scheduler import DELIVER, RUN, FifoScheduler
from minitf.runtime.core.step_context import CancellationManager, StepContext
from minitf.runtime.speedups.receiving import receiving

from .held_steps import GATE, GATE_REACHED, HELD, THREADS, start_held, start_held_twice

pytestmark = pytest.mark.timeout(60)

# Per-op events set by the test kernels (keyed by op name).
_STARTED: dict[str, threading.Event] = {}
_CANCELLED: dict[str, threading.Event] = {}


def _register_test_kernels():
    if get_kernel_def("TestNeverDone") is not None:
        return

    @register_kernel("TestNeverDone", is_async=True)
    def _never_done(op):
        """An async kernel that never calls ``done`` (it only records cancellation)."""
        name = op.name

        def compute(ctx, done):
            _STARTED.setdefault(name, threading.Event()).set()
            ctx.cancellation.register(_CANCELLED.setdefault(name, threading.Event()).set)

        return compute

    @register_kernel("TestBlockUntilCancelled", is_async=True)
    def _block_until_cancelled(op):
        """An async kernel that finishes only when its step is cancelled."""
        name = op.name

        def compute(ctx, done):
            def cancel():
                done(errors.CancelledError(None, None, "TestBlockUntilCancelled was cancelled"))

            if ctx.cancellation.register(cancel) is None:
                cancel()
            _STARTED.setdefault(name, threading.Event()).set()

        return compute

    @register_compute("TestAsyncAddOne", is_async=True)
    def _async_add_one(ctx, done, x):
        """Completes from another thread with ``x + 1``."""
        threading.Thread(target=lambda: done(np.asarray(x + 1, dtype=x.dtype))).start()

    @register_compute("TestAsyncFail", is_async=True)
    def _async_fail(ctx, done, x):
        """Completes from another thread with a ValueError."""
        threading.Thread(target=lambda: done(ValueError("async kernel failed"))).start()

    @register_compute("TestAsyncRaisesNow", is_async=True)
    def _async_raises_now(ctx, done, x):
        """Fails synchronously, before arranging any completion."""
        raise ValueError("rejected before starting")

    @register_compute("TestRaise", stateful=True)
    def _raise(ctx, x):
        """Raises the exception class named by the (string) value of its input."""
        kind = x.item().decode() if isinstance(x, np.ndarray) else str(x)
        if kind == "value":
            raise ValueError("bad value")
        if kind == "runtime":
            raise RuntimeError("internal trouble")
        raise errors.OutOfRangeError(None, None, "nothing left")


_register_test_kernels()


def _test_op(op_type, inputs=(), name=None):
    """Creates a one-output float32 scalar op of a test type."""
    graph = tf.get_default_graph()
    return graph.create_op(op_type, list(inputs), [tf.float32], name=name, shapes=[[]]).outputs[0]


def _kernel_for(op):
    kernel_def = get_kernel_def(op.type)
    return KernelInfo(kernel_def.builder(op), kernel_def.is_async, kernel_def.stateful)


def _ctx(deadline=None):
    return StepContext(ResourceMgr(), deadline=deadline)


class _RecordingScheduler(FifoScheduler):
    """FIFO order, remembering the ops it ran (``picked``) and delivered (``delivered``)."""

    def __init__(self):
        self.picked = []
        self.delivered = []
        self.ops_run = []

    def next_move(self, execution):
        move = super().next_move(execution)
        if move is not None:
            kind, i = move
            unit = execution.units[i]
            (self.picked if kind == RUN else self.delivered).append(unit.op.name)
            if kind == RUN:
                self.ops_run.extend(op.name for op in unit.ops)
        return move


# -- the two loops -------------------------------------------------------------------------


def _mixed_graph():
    p = tf.placeholder(tf.float32, shape=[None], name="p")
    q = tf.placeholder(tf.float32, shape=[2, 2], name="q")
    flat = tf.reshape(q, [-1], name="flat")
    total = tf.add(flat, tf.identity(p, name="pid"), name="total")
    shaped = tf.reshape(total, tf.shape(q), name="shaped")
    both = tf.add(shaped, tf.constant(1.0), name="both")
    return [p, q], [shaped, both, tf.shape(flat, name="flat_shape")]


@pytest.mark.parametrize("fold_constants", [True, False])
def test_dataflow_loop_and_straight_walk_give_identical_results(fold_constants):
    feeds, fetches = _mixed_graph()
    plan = pipeline.build_plan(fetches, [], feeds, _kernel_for, fold_constants=fold_constants)
    values = [
        np.array([1.0, 2.0, 3.0, 4.0], np.float32),
        np.arange(4, dtype=np.float32).reshape(2, 2),
    ]
    straight = Executor().run(plan, _ctx(), values)
    scheduler = _RecordingScheduler()
    dataflow = Executor(scheduler=scheduler, observe_ops=True).run(plan, _ctx(), values)
    expected_shaped = np.array([[1.0, 3.0], [5.0, 7.0]], np.float32)
    np.testing.assert_array_equal(straight[0], expected_shaped)
    np.testing.assert_array_equal(straight[1], expected_shaped + 1.0)
    np.testing.assert_array_equal(straight[2], [4])
    for a, b in zip(straight, dataflow):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    assert sorted(scheduler.picked) == sorted(op.name for op in plan.ops)


def test_a_plan_that_never_waits_is_one_move_of_the_scheduler_that_runs_every_op():
    feeds, fetches = _mixed_graph()
    plan = pipeline.build_plan(fetches, [], feeds, _kernel_for)
    scheduler = _RecordingScheduler()
    values = [np.ones(4, np.float32), np.ones((2, 2), np.float32)]
    Executor(scheduler=scheduler).run(plan, _ctx(), values)
    # With the speed-ups off (MINITF_FAST=0) every op is a move of its own.
    assert len(scheduler.picked) == (1 if config.fast() else len(plan.steps))
    assert sorted(scheduler.ops_run) == sorted(op.name for op in plan.ops)


def test_dataflow_loop_runs_every_op_after_its_predecessors():
    a = tf.constant(1.0, name="a")
    gate = tf.no_op(name="gate")
    first = tf.identity(a, name="first")
    first.op._add_control_input(gate)
    second = tf.add(first, first, name="second")
    plan = pipeline.build_plan([second], [], [], _kernel_for, fold_constants=False)
    scheduler = _RecordingScheduler()
    out = Executor(scheduler=scheduler, observe_ops=True).run(plan, _ctx(), [])
    assert out == [2.0]
    order = scheduler.picked
    assert order.index("gate") < order.index("first") < order.index("second")
    assert order.index("a") < order.index("first")


def test_async_kernel_completing_on_another_thread():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    bumped = _test_op("TestAsyncAddOne", [p], name="bumped")
    out = tf.add(bumped, bumped, name="out")
    with tf.Session() as sess:
        assert sess.run(out, {p: 1.5}) == 5.0
        assert sess.run([bumped, out], {p: 0.0}) == [1.0, 2.0]


def test_plan_with_an_async_kernel_uses_the_dataflow_loop():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    bumped = _test_op("TestAsyncAddOne", [p], name="bumped")
    plan = pipeline.build_plan([bumped], [], [p], _kernel_for)
    assert plan.has_async
    scheduler = _RecordingScheduler()
    out = Executor(scheduler=scheduler).run(plan, _ctx(), [np.float32(2.0)])
    assert out == [3.0]
    assert scheduler.picked == ["bumped"]


class _LastFirstScheduler(FifoScheduler):
    """Runs the most recently readied op first and delivers nothing until no op can run."""

    def __init__(self):
        self.moves = []

    def next_move(self, execution):
        if execution.ready:
            move = (RUN, execution.ready[-1])
        elif execution.arrived:
            move = (DELIVER, execution.arrived[-1])
        else:
            return None
        self.moves.append((move[0], execution.steps[move[1]].op.name))
        return move


def _two_waits():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    first = _test_op("TestAsyncAddOne", [p], name="first")
    second = _test_op("TestAsyncAddOne", [tf.multiply(p, 10.0, name="tenfold")], name="second")
    return p, [tf.add(first, second, name="sum"), first, second]


def test_the_scheduler_chooses_which_completion_is_delivered_too():
    p, fetches = _two_waits()
    plan = pipeline.build_plan(fetches, [], [p], _kernel_for)
    scheduler = _RecordingScheduler()
    out = Executor(scheduler=scheduler).run(plan, _ctx(), [np.float32(1.0)])
    assert out == [2.0 + 11.0, 2.0, 11.0]  # (1 + 1) + (10 + 1)
    assert sorted(scheduler.delivered) == ["first", "second"]
    assert scheduler.picked[-1] == "sum"  # it can only run once both were delivered


def test_any_order_the_scheduler_chooses_gives_the_same_values():
    p, fetches = _two_waits()
    plan = pipeline.build_plan(fetches, [], [p], _kernel_for)
    fifo = Executor().run(plan, _ctx(), [np.float32(2.0)])
    scheduler = _LastFirstScheduler()
    last_first = Executor(scheduler=scheduler).run(plan, _ctx(), [np.float32(2.0)])
    assert fifo == last_first == [3.0 + 21.0, 3.0, 21.0]
    kinds = [kind for kind, _ in scheduler.moves]
    # Every op ran before any completion was delivered, except what needed one.
    assert kinds[: kinds.index(DELIVER)].count(RUN) == len(plan.steps) - 1


class _ListInbox(list):
    """A driver's own inbox (`StepExecution.gather`): ``all_in`` is set once ``n`` have come."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.all_in = threading.Event()

    def put(self, item):
        self.append(item)
        if len(self) == self.n:
            self.all_in.set()


def test_a_driver_may_gather_the_completions_itself_and_take_them_in_in_arrival_order():
    p, fetches = _two_waits()
    plan = pipeline.build_plan(fetches, [], [p], _kernel_for)
    execution = StepExecution(plan, _ctx(), [np.float32(1.0)], by_op=True)
    inbox = _ListInbox(2)
    execution.gather(inbox)
    while execution.ready:
        execution.run_op(execution.ready[0])
    assert inbox.all_in.wait(10)
    assert not execution.arrived  # nothing is taken in until the driver takes it
    execution.take(list(inbox))
    assert list(execution.arrived) == [i for i, _, _ in inbox]
    assert sorted(execution.steps[i].op.name for i in execution.arrived) == ["first", "second"]
    while execution.arrived:
        execution.deliver(execution.arrived[0])
        while execution.ready:
            execution.run_op(execution.ready[0])
    assert execution.finished
    assert execution.fetches() == [2.0 + 11.0, 2.0, 11.0]  # (1 + 1) + (10 + 1)


def test_a_session_takes_a_scheduler_for_its_steps():
    p, fetches = _two_waits()
    scheduler = _RecordingScheduler()
    with tf.Session(scheduler=scheduler) as sess:
        assert sess.run(fetches[0], {p: 0.0}) == 1.0 + 1.0
    assert scheduler.picked[-1] == "sum" and sorted(scheduler.delivered) == ["first", "second"]


def test_the_deadline_error_names_the_ops_still_waiting():
    stuck = _test_op("TestNeverDone", name="stuck_named")
    plan = pipeline.build_plan([stuck], [], [], _kernel_for)
    with pytest.raises(
        tf.errors.DeadlineExceededError,
        match="Timed out waiting for notification .*: stuck_named waits for its completion",
    ):
        Executor().run(plan, _ctx(deadline=time.monotonic() + 0.05), [])


def test_a_completion_made_on_another_thread_only_queues_its_step_for_the_loops_thread():
    executor = Executor(task="/job:test/task:0")
    ended = start_held(executor)
    done = HELD.get(timeout=10)
    completing = threading.Thread(target=done, args=(np.float32(2.0),), name="completing")
    completing.start()
    completing.join(10)
    assert ended.get(timeout=10) == ([2.0], None)
    assert THREADS[-1] == "minitf-loop /job:test/task:0"


def test_a_step_moves_on_one_thread_at_a_time_even_with_threads_to_spare(speedups_on):
    # Two inter-op threads: a completion that comes while the step moves on
    # one of them (held at the gate) makes that thread go on with the step;
    # the thread that made it, though it could take a turn, does not.
    executor = Executor(task="/job:test/task:0", inter_op_threads=2)
    GATE.clear()
    GATE_REACHED.clear()
    ended = start_held_twice(executor)
    done_first, done_second = HELD.get(timeout=10), HELD.get(timeout=10)
    threading.Thread(target=done_first, args=(np.float32(2.0),)).start()
    assert GATE_REACHED.wait(10)  # the loop's thread moves the step, held at the gate
    before = len(THREADS)
    with receiving():
        done_second(np.float32(3.0))
    assert ended.empty() and len(THREADS) == before  # nothing moved on this thread
    GATE.set()
    assert ended.get(timeout=10) == ([2.0, 3.0], None)
    assert THREADS[-2:] == ["minitf-loop /job:test/task:0"] * 2


def test_a_servers_inter_op_threads_are_its_configs():
    assert config.inter_op_threads(tf.ConfigProto(inter_op_parallelism_threads=3)) == 3
    assert config.inter_op_threads(tf.ConfigProto(inter_op_parallelism_threads=-1)) == 1
    assert config.inter_op_threads(None) == len(os.sched_getaffinity(0))  # TF's 0: the cores
    server = tf.train.Server.create_local_server(
        tf.ConfigProto(inter_op_parallelism_threads=3), start=False
    )
    assert server.worker._executor._loop._max_turns == 3


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("observe_ops", [False, True])
def test_kernel_error_surfaces_as_invalid_argument_with_the_op(observe_ops):
    p = tf.placeholder(tf.float32, shape=[None], name="p")
    r = tf.reshape(p, [2, 2], name="r")
    plan = pipeline.build_plan([r], [], [p], _kernel_for)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        Executor(observe_ops=observe_ops).run(plan, _ctx(), [np.ones(3, np.float32)])
    assert info.value.op is r.op


def test_kernel_error_through_a_session_names_the_op():
    p = tf.placeholder(tf.float32, shape=[None], name="p")
    r = tf.reshape(p, [2, 2], name="r")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(r, {p: [1.0, 2.0, 3.0]})
        assert info.value.op is r.op
        np.testing.assert_array_equal(sess.run(r, {p: [1.0, 2.0, 3.0, 4.0]}), [[1, 2], [3, 4]])


@pytest.mark.parametrize(
    "kind, error_class",
    [
        ("value", tf.errors.InvalidArgumentError),
        ("runtime", tf.errors.InternalError),
        ("range", tf.errors.OutOfRangeError),
    ],
)
@pytest.mark.parametrize("observe_ops", [False, True])
def test_python_exceptions_map_to_tf_classes_with_the_op(kind, error_class, observe_ops):
    k = tf.placeholder(tf.string, shape=[], name="kind")
    raised = tf.get_default_graph().create_op("TestRaise", [k], [], name="raiser")
    plan = pipeline.build_plan([], [raised], [k], _kernel_for)
    with pytest.raises(error_class) as info:
        Executor(observe_ops=observe_ops).run(plan, _ctx(), [np.array(kind.encode())])
    assert info.value.op is raised
    assert type(info.value) is error_class


def test_async_kernel_error_surfaces_with_the_op():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    failed = _test_op("TestAsyncFail", [p], name="failed")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="async kernel failed") as info:
            sess.run(failed, {p: 1.0})
    assert info.value.op is failed.op


def test_async_kernel_raising_synchronously_surfaces_as_a_tf_error_with_the_op():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    rejected = _test_op("TestAsyncRaisesNow", [p], name="rejected")
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="rejected before starting"
        ) as info:
            sess.run(rejected, {p: 1.0})
    assert info.value.op is rejected.op


def test_as_op_error_keeps_op_errors_and_fills_in_the_op():
    op = tf.no_op(name="culprit")
    original = tf.errors.AbortedError(None, None, "aborted")
    assert as_op_error(original, op) is original
    assert original.op is op
    other_op = tf.no_op(name="other")
    named = tf.errors.AbortedError(None, other_op, "aborted")
    assert as_op_error(named, op).op is other_op
    wrapped = as_op_error(IndexError("out of bounds"), op)
    assert type(wrapped) is tf.errors.InvalidArgumentError
    assert wrapped.op is op
    assert "culprit" in wrapped.message
    assert type(as_op_error(MemoryError(), op)) is tf.errors.InternalError


# -- deadlines and cancellation ------------------------------------------------------------


def test_run_timeout_raises_deadline_exceeded_quickly():
    stuck = _test_op("TestNeverDone", name="stuck")
    with tf.Session() as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(stuck, options=tf.RunOptions(timeout_in_ms=50))
        elapsed = time.monotonic() - start
    assert elapsed < 5.0
    assert _CANCELLED["stuck"].is_set()


def test_config_operation_timeout_applies_to_every_run():
    stuck = _test_op("TestNeverDone", name="stuck_config")
    config = tf.ConfigProto(operation_timeout_in_ms=50)
    with tf.Session(config=config) as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(stuck)
        assert time.monotonic() - start < 5.0


def test_executor_deadline_with_a_direct_plan():
    stuck = _test_op("TestNeverDone", name="stuck_direct")
    plan = pipeline.build_plan([stuck], [], [], _kernel_for)
    ctx = _ctx(deadline=time.monotonic() + 0.05)
    with pytest.raises(tf.errors.DeadlineExceededError):
        Executor().run(plan, ctx, [])
    assert ctx.cancellation.is_cancelled


def test_closing_the_session_cancels_a_blocked_run():
    blocked = _test_op("TestBlockUntilCancelled", name="blocked")
    sess = tf.Session()
    outcome = {}

    def run():
        try:
            sess.run(blocked)
        except Exception as e:  # noqa: BLE001 - handed back to the test thread
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert _STARTED.setdefault("blocked", threading.Event()).wait(timeout=10)
    finally:
        sess.close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), tf.errors.CancelledError)
    assert outcome["error"].op is blocked.op


def test_cancellation_manager_calls_callbacks_once_and_refuses_late_ones():
    manager = CancellationManager()
    calls = []
    token = manager.register(lambda: calls.append("a"))
    dropped = manager.register(lambda: calls.append("b"))
    manager.deregister(dropped)
    assert token is not None
    assert not manager.is_cancelled
    manager.start_cancel()
    manager.start_cancel()
    assert manager.is_cancelled
    assert calls == ["a"]
    assert manager.register(lambda: calls.append("late")) is None


def test_step_ids_are_unique():
    ids = {_ctx().step_id for _ in range(10)}
    assert len(ids) == 10


def test_cluster_step_ids_are_the_task_the_session_and_a_count_not_random(monkeypatch):
    # 24 bits of the client task's name and incarnation, 10 of the session's
    # number for that task in this process, 28 counting steps: with one
    # incarnation, the same runs give the same ids.
    from minitf.runtime.distributed import step_ids

    monkeypatch.setenv("MINITF_INCARNATION", "lecture")
    task = "/job:worker/replica:0/task:77"
    first, second = step_ids._step_base(task), step_ids._step_base(task)
    expected = (zlib.crc32(f"{task}#lecture".encode()) & 0xFFFFFF) << 38
    assert first == expected
    assert second == expected | 1 << 28


def test_a_restarted_task_counts_step_ids_no_earlier_process_of_it_used():
    # Without a fixed incarnation each process draws its own, so a task
    # restarted mid-step never reuses the ids its dead process has pending.
    script = (
        "from minitf.runtime.distributed import step_ids; "
        "print(step_ids._step_base('/job:worker/task:0'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "MINITF_INCARNATION"}
    bases = {
        subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    assert len(bases) == 2


def test_a_step_that_waits_says_which_op_waits_for_what_every_interval(monkeypatch, caplog):
    monkeypatch.setenv("MINITF_WAIT_LOG_SECS", "0.1")
    q = tf.FIFOQueue(3, tf.float32, shapes=[], name="tokens")
    take = q.dequeue(name="take_token")
    with tf.Session() as sess, caplog.at_level("WARNING", logger="minitf"):
        result = {}
        runner = threading.Thread(target=lambda: result.update(v=sess.run(take)), daemon=True)
        runner.start()
        deadline = time.monotonic() + 10
        while len(caplog.records) < 2 and time.monotonic() < deadline:
            runner.join(0.05)  # the waiting step logs from its own thread
        sess.run(q.enqueue(4.0))
        runner.join(10)
    assert result["v"] == 4.0
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) >= 2  # once per interval, not once
    assert lines[0].startswith("/job:localhost/replica:0/task:0: step ")
    assert "take_token waits for queue" in lines[0] and "holds 0, needs 1" in lines[0]


def _live(cls) -> list:
    """The instances of ``cls`` still in memory, reachable or not (the collector is off)."""
    return [o for o in gc.get_objects() if isinstance(o, cls)]


def test_a_step_with_a_waiting_op_is_freed_when_it_ends_not_by_the_collector():
    # A take's result is freed as soon as its caller drops it: were the step
    # left in a reference cycle, its arrays would wait for the garbage
    # collector and their memory would come back cold.
    acc = tf.ConditionalAccumulator(tf.float32, shape=[4], reduction_type="SUM")
    g = tf.placeholder(tf.float32, [4])
    apply = acc.apply_grad(g, local_step=100)  # fresh for every take below
    take = acc.take_grad(2)
    grads = [np.arange(4, dtype=np.float32), np.full(4, 0.5, np.float32)]
    with tf.Session() as sess:
        gc.collect()
        gc.disable()
        try:
            before = {id(o) for o in _live(StepExecution)}  # other tests' may still be held
            for _ in range(3):
                for grad in grads:
                    sess.run(apply, {g: grad})
                taken = sess.run(take)
                np.testing.assert_allclose(taken, grads[0] + grads[1])  # by hand
            left = [o for o in _live(StepExecution) if id(o) not in before]
        finally:
            gc.enable()
    assert left == []


@pytest.mark.parametrize("driver", ["straight", "segmented", "dataflow", "failing"])
def test_a_step_never_warns_about_inf_or_nan_and_leaves_the_callers_float_errors_as_they_were(
    driver,
):
    # TF's kernels compute log(0) = -inf and 0/0 = nan without a word; the
    # caller's own numpy keeps the error handling it chose.
    x = tf.placeholder(tf.float32, [2])
    quotient = tf.log(x) / x
    if driver == "straight":
        fetch, feed = quotient, {x: np.array([0.0, 1.0], np.float32)}
    else:
        q = tf.FIFOQueue(2, tf.float32, shapes=[2])
        dequeued = q.dequeue()
        fetch = dequeued * tf.log(dequeued) if driver != "dataflow" else None
        feed = None
    with tf.Session() as sess:
        if driver != "straight":
            sess.run(q.enqueue(np.array([0.0, 2.0], np.float32)))
        if driver == "dataflow":  # a tf.cond takes the dataflow driver
            fetch = tf.cond(tf.constant(True), lambda: dequeued / 0.0, lambda: dequeued)
        with np.errstate(divide="raise", invalid="raise", over="raise"):
            before = np.geterr()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                if driver == "failing":
                    z = tf.placeholder(tf.float32)  # no static shape: the kernel fails
                    with pytest.raises(tf.errors.InvalidArgumentError):
                        sess.run(tf.reshape(tf.log(z), [3]), {z: np.zeros(2, np.float32)})
                    got = None
                else:
                    got = sess.run(fetch, feed)
            after = np.geterr()
            with pytest.raises(FloatingPointError):  # the caller's choice still holds
                np.log(np.float32(0.0))
    assert after == before
    if driver == "straight":
        assert np.isneginf(got[0]) and got[1] == 0.0  # log(0)/0 = -inf, log(1)/1 = 0
    elif driver == "segmented":
        assert np.isnan(got[0]) and got[1] == pytest.approx(2 * np.log(2.0))  # 0*-inf = nan
    elif driver == "dataflow":
        assert np.isnan(got[0]) and np.isposinf(got[1])  # 0/0 = nan, 2/0 = inf
