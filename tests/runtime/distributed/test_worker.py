"""A task's Worker runs registered partitions through plain method calls, no transport needed.

The server carries these calls over TCP; here they are made directly, as an
in-process transport (the simulated cluster) will make them.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.core.plan import prune, topological_order
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.worker import Worker

pytestmark = pytest.mark.timeout(30)

TASK = "/job:worker/replica:0/task:0"


def _register(worker, fetches, targets, feeds):
    """Places and partitions one step for a one-task cluster; registers its partition."""
    ops = topological_order(prune(fetches, targets, feeds), set(feeds))
    devices = partition_lib.place(ops, "worker", 0, {"worker": 1}, False)
    parts = partition_lib.partition(ops, devices, fetches, targets, feeds)
    (part,) = parts.values()
    part.client = TASK
    return worker.register_graph(part)


def test_a_worker_keeps_state_between_steps_and_runs_them_by_method_call():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        v = tf.Variable([1.0, 2.0], name="v")
        y = tf.add(x, v, name="y")
        bump = tf.assign_add(v, [10.0, 10.0])
    worker = Worker(TASK)
    init = _register(worker, [], [v.initializer], [])
    add = _register(worker, [y], [], [x])
    step = _register(worker, [], [bump.op], [])
    assert worker.num_registered_graphs == 3
    assert worker.run_graph(init, 1, [], 0, False) == ([], None)
    worker.run_graph(step, 2, [], 0, False)
    values, stats = worker.run_graph(add, 3, [np.array([0.5, 0.5], np.float32)], 0, True)
    np.testing.assert_array_equal(values[0], [11.5, 12.5])
    assert {s["node_name"] for s in stats} >= {"y"}


def test_an_unknown_handle_is_an_aborted_step_naming_the_task():
    with pytest.raises(tf.errors.AbortedError, match=f"{TASK} lost graph 7"):
        Worker(TASK).run_graph(7, 1, [], 0, False)


def test_a_handle_of_a_replaced_worker_is_lost_not_another_partition():
    # A restarted task is a new Worker: the handle a client kept from the
    # old one must not name what another client registered on the new one.
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(1.0, name="v")
        doubled = tf.multiply(v, 2.0, name="doubled")
    old, new = Worker(TASK), Worker(TASK)
    stale = _register(old, [doubled], [], [])
    _register(new, [], [v.initializer], [])
    fresh = _register(new, [doubled], [], [])
    assert stale != fresh
    with pytest.raises(tf.errors.AbortedError, match=f"{TASK} lost graph {stale}"):
        new.run_graph(stale, 1, [], 0, False)


def test_an_aborted_step_fails_when_it_arrives():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(1.0, name="v")
    worker = Worker(TASK)
    handle = _register(worker, [], [v.initializer], [])
    worker.abort_step(5, tf.errors.CancelledError(None, None, "Session was closed."))
    with pytest.raises(tf.errors.CancelledError, match="Session was closed"):
        worker.run_graph(handle, 5, [], 0, False)
