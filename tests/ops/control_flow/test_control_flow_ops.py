"""Specification tests for ``tf.no_op``, ``tf.group``, ``tf.tuple`` and ``with_dependencies``."""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.control_flow import control_flow_ops

pytestmark = pytest.mark.timeout(60)


def _counter(name):
    v = tf.Variable(0.0, name=name)
    return v, v.assign_add(1.0)


def test_no_op_type_and_name():
    op = tf.no_op()
    assert op.type == "NoOp"
    assert op.name == "NoOp"
    assert op.outputs == []
    assert tf.no_op(name="nothing").name == "nothing"
    with tf.Session() as sess:
        assert sess.run(op) is None


def test_group_of_ops_and_tensors_is_a_no_op_depending_on_them():
    v, inc = _counter("v")
    w, inc_w = _counter("w")
    g = tf.group(inc.op, inc_w)
    assert g.type == "NoOp"
    assert g.name == "group_deps"
    assert set(g.control_inputs) == {inc.op, inc_w.op}
    assert g.outputs == []
    with tf.Session() as sess:
        sess.run([v.initializer, w.initializer])
        assert sess.run(g) is None
        sess.run(g)
        assert sess.run([v, w]) == [2.0, 2.0]


def test_group_name_and_empty_group():
    empty = tf.group()
    assert empty.type == "NoOp"
    assert tf.group(tf.no_op(), name="train").name == "train"


def test_group_accepts_nested_lists():
    # TF 1.15 flattens its inputs with nest.flatten.
    v, inc = _counter("v")
    w, inc_w = _counter("w")
    g = tf.group([inc, [inc_w]])
    with tf.Session() as sess:
        sess.run([v.initializer, w.initializer])
        sess.run(g)
        assert sess.run([v, w]) == [1.0, 1.0]


def test_group_rejects_none_with_typeerror():
    with pytest.raises(
        TypeError, match="Expected tf.group\\(\\) expected Tensor arguments not 'None'"
    ):
        tf.group(tf.no_op(), None)


def test_group_rejects_unknown_keywords_with_valueerror():
    with pytest.raises(ValueError, match="Unknown keyword arguments: colour"):
        tf.group(tf.no_op(), colour="red")


def test_group_of_ops_on_one_device_is_placed_on_that_device():
    with tf.device("/job:ps/task:0"):
        a = tf.no_op(name="a")
        b = tf.no_op(name="b")
    g = tf.group(a, b)
    assert tf.DeviceSpec.from_string(g.device) == tf.DeviceSpec.from_string("/job:ps/task:0")


def test_control_dependencies_on_a_group_run_every_member_first():
    v, inc = _counter("v")
    w, inc_w = _counter("w")
    with tf.control_dependencies([tf.group(inc, inc_w)]):
        total = tf.identity(v.read_value() + w.read_value())
    with tf.Session() as sess:
        sess.run([v.initializer, w.initializer])
        assert sess.run(total) == 2.0


def test_tuple_gates_every_output_on_all_inputs():
    v, inc = _counter("v")
    c = tf.constant(5.0)
    gated = tf.tuple([inc, c])
    assert len(gated) == 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(gated[1]) == 5.0  # running the constant also ran the increment
        assert sess.run(v) == 1.0
        assert sess.run(gated[1]) == 5.0
        assert sess.run(v) == 2.0


def test_tuple_keeps_values_and_none_entries():
    a = tf.constant([1.0, 2.0])
    b = tf.constant(3)
    out = tf.tuple([a, None, b])
    assert out[1] is None
    assert out[0].dtype == tf.float32 and out[2].dtype == tf.int32
    with tf.Session() as sess:
        got_a, got_b = sess.run([out[0], out[2]])
    np.testing.assert_array_equal(got_a, [1.0, 2.0])
    assert got_b == 3


def test_tuple_control_inputs_also_gate():
    v, inc = _counter("v")
    c = tf.constant(1.0)
    (out,) = tf.tuple([c], control_inputs=[inc.op])
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(out)
        assert sess.run(v) == 1.0


def test_tuple_of_operations_returns_gated_operations():
    v, inc = _counter("v")
    c = tf.constant(1.0)
    out = tf.tuple([inc.op, c])
    assert isinstance(out[0], tf.Operation)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(out[1])
        assert sess.run(v) == 1.0


def test_tuple_without_tensors_raises_valueerror():
    with pytest.raises(ValueError, match="Must have at least one Tensor"):
        tf.tuple([None])


def test_with_dependencies_runs_the_dependencies_before_reading():
    v = tf.Variable(1.0)
    ref = v.op.outputs[0]  # the variable's reference: read when the consumer runs
    out = control_flow_ops.with_dependencies([v.assign(5.0)], ref)
    assert out.op.name == "control_dependency"
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(out) == 5.0


def test_with_dependencies_orders_side_effects():
    v = tf.Variable(0.0)
    after_add = control_flow_ops.with_dependencies([v.assign_add(10.0)], v.op.outputs[0])
    doubled = tf.assign(v, after_add * 2.0 + 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        # 0 -> +10 -> 10 -> 2 * 10 + 1 = 21: the add ran before the value was read.
        assert sess.run(doubled) == 21.0
        assert sess.run(v) == 21.0


def test_with_dependencies_counts_every_evaluation():
    v, inc = _counter("v")
    out = control_flow_ops.with_dependencies([inc], tf.constant(7.0), name="seven")
    assert out.op.name == "seven"
    with tf.Session() as sess:
        sess.run(v.initializer)
        for _ in range(3):
            assert sess.run(out) == 7.0
        assert sess.run(v) == 3.0


def test_with_dependencies_on_indexed_slices_keeps_the_indices():
    v, inc = _counter("v")
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([3]), tf.constant([5, 2]))
    out = control_flow_ops.with_dependencies([inc], slices)
    assert isinstance(out, tf.IndexedSlices)
    assert out.indices is slices.indices
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(out.values), [[1.0, 2.0]])
        assert sess.run(v) == 1.0


# -- tf.cond -------------------------------------------------------------------------------


def test_cond_runs_only_the_branch_pred_picks():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(2.0)
    result = tf.cond(p, lambda: x * 3.0, lambda: x + 1.0)
    with tf.Session() as sess:
        assert sess.run(result, {p: True}) == 6.0
        assert sess.run(result, {p: False}) == 3.0


def test_the_branch_not_taken_changes_nothing_and_does_not_wait():
    p = tf.placeholder(tf.bool, [])
    v = tf.Variable(0.0)
    q = tf.FIFOQueue(1, tf.float32, shapes=[])
    # The true branch dequeues from an empty queue: taken, it would wait forever.
    taken = tf.cond(p, lambda: q.dequeue() + tf.assign_add(v, 10.0), lambda: tf.assign_add(v, 1.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(taken, {p: False}) == 1.0
        assert sess.run(taken, {p: False}) == 2.0
        assert sess.run(v) == 2.0  # the true branch's assign_add never ran
        sess.run(q.enqueue(5.0))
        assert sess.run(taken, {p: True}) == 17.0  # 5 + (2 + 10)


def test_cond_of_ops_gives_a_tensor_ready_once_the_op_ran():
    p = tf.placeholder(tf.bool, [])
    v = tf.Variable(0.0)
    update = tf.cond(p, lambda: tf.assign_add(v, 1.0).op, tf.no_op)
    with tf.Session() as sess:
        sess.run(v.initializer)
        for pick in (True, False, True, True):
            sess.run(update, {p: pick})
        assert sess.run(v) == 3.0


def test_cond_keeps_the_structure_of_the_branches_results():
    p = tf.placeholder(tf.bool, [])
    a, b = tf.constant(1.0), tf.constant(2.0)
    out = tf.cond(p, lambda: {"x": a, "y": [b, a]}, lambda: {"x": b, "y": [a, b]})
    with tf.Session() as sess:
        assert sess.run(out, {p: True}) == {"x": 1.0, "y": [2.0, 1.0]}
        assert sess.run(out, {p: False}) == {"x": 2.0, "y": [1.0, 2.0]}
    single = tf.cond(p, lambda: [a], lambda: [b])
    assert isinstance(single, tf.Tensor)  # one result, not strict: unwrapped
    assert isinstance(tf.cond(p, lambda: [a], lambda: [b], strict=True), list)


def test_cond_says_what_is_wrong_with_its_arguments():
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(TypeError, match="true_fn must be callable"):
        tf.cond(p, 1.0, lambda: 1.0)
    with pytest.raises(TypeError, match="pred must be a bool"):
        tf.cond(tf.constant(1.0), lambda: 1.0, lambda: 2.0)
    with pytest.raises(ValueError, match="same number of results"):
        tf.cond(p, lambda: [1.0, 2.0], lambda: 1.0)


def test_fetching_a_tensor_of_the_branch_not_taken_is_an_error():
    p = tf.placeholder(tf.bool, [])
    inside = []

    def branch():
        inside.append(tf.constant(4.0) * 2.0)
        return inside[0]

    tf.cond(p, branch, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        assert sess.run(inside[0], {p: True}) == 8.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not have value"):
            sess.run(inside[0], {p: False})


def test_a_constant_pred_is_not_folded_away():
    a = tf.Variable(1.0)
    out = tf.cond(tf.constant(False), lambda: tf.assign_add(a, 5.0), lambda: tf.identity(a))
    with tf.Session() as sess:
        sess.run(a.initializer)
        assert sess.run(out) == 1.0
        assert sess.run(a) == 1.0


def test_a_branch_on_another_task_is_dead_there_too():
    from minitf.runtime.distributed.launcher import LocalCluster

    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(0.0, name="counter")
            q = tf.FIFOQueue(1, tf.float32, shapes=[], shared_name="q")
        p = tf.placeholder(tf.bool, [])
        with tf.device("/job:worker/task:0"):
            # Taken, the ps would wait on the empty queue; not taken, it must not.
            step = tf.cond(
                p,
                lambda: tf.group(tf.assign_add(v, q.dequeue())),
                lambda: tf.group(tf.assign_add(v, 1.0)),
            )
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.initializer)
            for _ in range(3):
                sess.run(step, {p: False}, options=tf.RunOptions(timeout_in_ms=20000))
            assert sess.run(v) == 3.0
            sess.run(q.enqueue(10.0))
            sess.run(step, {p: True}, options=tf.RunOptions(timeout_in_ms=20000))
            assert sess.run(v) == 13.0


def test_gradients_go_through_the_branch_taken():
    # d(3x)/dx = 3 when p, d(x + 1)/dx = 1 otherwise.
    p = tf.placeholder(tf.bool, [])
    x = tf.Variable(2.0)
    out = tf.cond(p, lambda: x * 3.0, lambda: x + 1.0)
    (grad,) = tf.gradients(out, [x])
    with tf.Session() as sess:
        sess.run(x.initializer)
        assert sess.run(grad, {p: True}) == 3.0
        assert sess.run(grad, {p: False}) == 1.0
