"""Ops that a step reaches only through control edges are not computed (TF's Grappler).

TF's dependency optimizer turns a side-effect-free op whose outputs nothing in
the pruned graph reads into a ``NoOp`` before the step runs. The expected
behaviour in these tests is TF 1.x's, checked with ``tf.compat.v1``: a failing
``MatMul`` reached only through ``tf.control_dependencies`` does not fail the
run, the same op fetched does, and an unfed placeholder still fails it.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.core.graph_optimizer import unread_ops

pytestmark = pytest.mark.timeout(60)


def _plan_of(sess):
    """The plan of the session's last new run signature."""
    return list(sess._plans.values())[-1]


def _unread_names(plan) -> set[str]:
    return {s.op.name for s in plan.steps if s.unread}


def test_a_failing_op_reached_only_by_a_control_edge_does_not_fail_the_run():
    a = tf.placeholder(tf.float32, None)
    b = tf.placeholder(tf.float32, None)
    bad = tf.matmul(a, b, name="bad")
    with tf.control_dependencies([bad]):
        out = tf.identity(tf.constant(3.0))
    feeds = {a: np.ones((2, 3)), b: np.ones((4, 5))}  # 3 != 4: the product cannot be made
    with tf.Session() as sess:
        assert sess.run(out, feeds) == 3.0
        assert _unread_names(_plan_of(sess)) == {"bad"}
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
            sess.run(bad, feeds)
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
            sess.run(bad.op, feeds)  # a target is run, as TF keeps its fetch nodes


def test_a_chain_of_pure_ops_under_a_control_edge_is_not_computed():
    a = tf.placeholder(tf.float32, None)
    b = tf.placeholder(tf.float32, None)
    product = tf.matmul(a, b, name="product")
    total = tf.reduce_sum(product, name="total")
    with tf.control_dependencies([total]):
        out = tf.identity(tf.constant(3.0))
    with tf.Session() as sess:
        assert sess.run(out, {a: np.ones((2, 3)), b: np.ones((4, 5))}) == 3.0
        assert {"product", "total"} <= _unread_names(_plan_of(sess))


def test_an_unfed_placeholder_reached_by_a_control_edge_still_fails():
    p = tf.placeholder(tf.float32, [], name="p")
    with tf.control_dependencies([p]):
        out = tf.identity(tf.constant(3.0))
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="must feed"):
        sess.run(out)


def test_minimize_does_not_compute_the_input_gradient_and_trains_as_numpy():
    rng = np.random.default_rng(3)
    x_val = rng.standard_normal((8, 5)).astype(np.float32)
    w_val = rng.standard_normal((5, 2)).astype(np.float32)
    target = rng.standard_normal((8, 2)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 5])
    w = tf.Variable(w_val)
    loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - target))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)  # GATE_OP
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: x_val})
        # Gating reaches d(loss)/dx and d(loss)/d(target) through control edges only.
        assert _unread_names(_plan_of(sess)) == {
            "gradients/MatMul_grad/MatMul",
            "gradients/sub_grad/Neg",
        }
        got = sess.run(w)
    grad = x_val.T @ (np.float32(2) * (x_val @ w_val - target))
    np.testing.assert_allclose(got, w_val - np.float32(0.01) * grad, rtol=1e-5, atol=1e-6)


def test_a_traced_step_lists_the_op_and_says_it_was_not_computed():
    a = tf.placeholder(tf.float32, None)
    bad = tf.matmul(a, a, name="bad")
    with tf.control_dependencies([bad]):
        out = tf.identity(tf.constant(3.0))
    metadata = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session() as sess:
        sess.run(out, {a: np.ones((2, 3))}, options=options, run_metadata=metadata)
    nodes = {n["node_name"]: n for d in metadata.step_stats["dev_stats"] for n in d["node_stats"]}
    assert nodes["bad"]["not_computed"] == "nothing in the step reads its outputs"
    assert "not_computed" not in nodes[out.op.name]


def test_the_rule_op_by_op():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [2], name="a")
        read_twice = tf.identity(a, name="read_twice")
        used = tf.negative(read_twice, name="used")
        unused = tf.square(read_twice, name="unused")
        fed = tf.abs(a, name="fed")  # its output is fed: nothing reads it from the op
        reader_of_fed = tf.sign(fed, name="reader_of_fed")
        with tf.control_dependencies([unused, reader_of_fed]):
            out = tf.identity(used, name="out")
    order = [g.get_operation_by_name(n) for n in ("a", "read_twice", "used", "unused", "fed")]
    order += [reader_of_fed.op, out.op]
    kernels = {op: _pure() for op in order}
    kernels[order[0]] = _pure()  # a placeholder is never skipped, whatever its kernel
    got = unread_ops(order, kernels, [out], [], {fed})
    assert {op.name for op in got} == {"unused", "reader_of_fed", "fed"}


def _pure():
    from minitf.runtime.core.plan import KernelInfo

    return KernelInfo(lambda ctx, *args: None, is_async=False, stateful=False)
