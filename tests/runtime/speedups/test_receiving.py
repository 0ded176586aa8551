"""A connection's reader that delivers a message takes its task loop's turn (`receiving`).

Held steps (``tests/runtime/core/held_steps.py``) say which thread made
their moves after their waiting op completed; the ps of an in-process
cluster (``conftest.py``) says whether its loop's thread was ever needed.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.core import config
from minitf.runtime.core.executor import Executor
from minitf.runtime.speedups.receiving import receiving

from ..core.held_steps import GATE, GATE_REACHED, HELD, THREADS, start_held
from ..distributed.test_resumed_steps import _async_sgd

pytestmark = pytest.mark.timeout(60)
LOOP_THREAD = "minitf-loop /job:test/task:0"


def _one_held_at_the_gate(executor):
    """Two held steps; the first goes on, on the loop's thread, up to the gate, where it is held.

    Returns:
        Where each step's end goes, and the second step's completion.
    """
    GATE.clear()
    GATE_REACHED.clear()
    gated, later = start_held(executor, gate=True), start_held(executor)
    done_gated, done_later = HELD.get(timeout=10), HELD.get(timeout=10)
    threading.Thread(target=done_gated, args=(np.float32(2.0),)).start()
    assert GATE_REACHED.wait(10)  # the loop's thread has a turn, held at the gate
    return gated, later, done_later


def test_a_step_a_received_message_lets_go_on_goes_on_on_the_receiving_thread_after_it(
    speedups_on,
):
    ended = start_held(Executor(task="/job:test/task:0"))
    done = HELD.get(timeout=10)
    with receiving():
        done(np.float32(2.0))
        assert ended.empty()  # not while the message is being delivered
    assert ended.get_nowait() == ([2.0], None)  # the loop was idle: this thread took its turn
    assert THREADS[-1] == threading.current_thread().name


def test_while_another_thread_has_the_loops_turn_a_received_step_waits_for_that_thread(
    speedups_on,
):
    gated, later, done_later = _one_held_at_the_gate(Executor(task="/job:test/task:0"))
    with receiving():
        done_later(np.float32(3.0))
    assert later.empty()  # this thread did not take a turn another thread had
    GATE.set()
    assert gated.get(timeout=10) == ([2.0], None)
    assert later.get(timeout=10) == ([3.0], None)
    assert THREADS[-2:] == [LOOP_THREAD, LOOP_THREAD]


def test_with_two_inter_op_threads_a_received_step_takes_the_second_turn(speedups_on):
    executor = Executor(task="/job:test/task:0", inter_op_threads=2)
    gated, later, done_later = _one_held_at_the_gate(executor)
    with receiving():
        done_later(np.float32(3.0))
    assert later.get_nowait() == ([3.0], None)  # moved here, while the other turn is held
    assert THREADS[-1] == threading.current_thread().name
    GATE.set()
    assert gated.get(timeout=10) == ([2.0], None)
    assert THREADS[-1] == LOOP_THREAD


def test_with_the_speed_ups_off_the_loops_thread_takes_a_received_step_up(monkeypatch):
    monkeypatch.setattr(config, "_FAST", False)
    ended = start_held(Executor(task="/job:test/task:0"))
    done = HELD.get(timeout=10)
    with receiving():
        done(np.float32(2.0))
    assert ended.get(timeout=10) == ([2.0], None)
    assert THREADS[-1] == LOOP_THREAD


def test_a_ps_part_goes_on_on_the_thread_that_read_its_gradients_not_the_loops(
    speedups_on, ps_and_worker
):
    # One client, one step at a time: the thread that reads the request
    # starts the step, the one that reads its gradients takes it up again;
    # the loop's own thread is never woken.
    w, x, train = _async_sgd(ps_and_worker["worker"].target)
    x_val = np.array([3.0, 0.5], np.float32)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        for _ in range(10):
            sess.run(train, {x: x_val})
        got = sess.run(w)
    np.testing.assert_allclose(got, np.array([1.0, -2.0]) - 10 * 0.1 * x_val, rtol=1e-5)  # by hand
    loop = ps_and_worker["ps"].worker._executor._loop
    assert loop is not None and not loop._thread_running
