"""Placement honours colocation groups, as TF's placer does (spec §2.2)."""

import pytest

import minitf as tf
from minitf.runtime.core.plan import prune, topological_order
from minitf.runtime.distributed import partition

pytestmark = pytest.mark.timeout(60)

TASKS = {"ps": 2, "worker": 1}


def _placed(targets):
    step = topological_order(prune([], targets, []), set())
    return step, partition.place(step, "worker", 0, TASKS)


def test_an_initializer_built_from_a_callable_goes_with_its_variable():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        tf.get_variable("a", [3], initializer=tf.zeros_initializer())  # ps task 0
        b = tf.get_variable("b", [3], initializer=tf.ones_initializer())  # ps task 1
    init = tf.global_variables_initializer()
    zeros = tf.get_default_graph().get_operation_by_name("b/Initializer/ones")
    assert zeros.device == ""  # built under tf.device(None), with b's colocation group only
    step, devices = _placed([init])
    assert devices[zeros] == devices[b.op] == "/job:ps/replica:0/task:1/device:CPU:0"
    # So initializing sends no initial value from the worker to the ps: no crossing
    # edge but the init group's control edges from the ps tasks to the worker.
    parts = partition.partition(step, devices, [], [init], [])
    sends = [n for p in parts.values() for n in p.nodes if n.op == partition.SEND]
    assert all(n.attrs["tensor_name"].split(";")[-1].startswith("^") for n in sends)


def test_an_op_colocated_with_an_op_placed_later_still_follows_it():
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(1.0, name="v")
    with tf.colocate_with(v.op):
        follower = tf.identity(2.0, name="follower")
    # Inside the block the op took v's device and group at creation.
    assert follower.op.device == "/job:ps/task:1"
    step, devices = _placed([follower.op])
    assert devices[follower.op] == "/job:ps/replica:0/task:1/device:CPU:0"
