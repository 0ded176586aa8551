"""Specification tests for ``tf.while_loop``: the graph TF1 builds, and how the loop runs.

Many are ports of TF's ``control_flow_ops_py_test.py`` (``testWhile_1``,
``testWhileShapeInference``, ...) with TF's expected values; the rest are
checked against the same loop written in plain Python.
"""

import collections
import threading

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def test_while_1_counts_to_ten_thousand():
    # TF's testWhile_1.
    n = tf.constant(0)
    r = tf.while_loop(
        lambda x: tf.less(x, 10000), lambda x: tf.add(x, 1), [n], parallel_iterations=20
    )
    with tf.Session() as sess:
        assert sess.run(r) == 10000


def test_the_graph_is_tf1s_enter_merge_switch_loopcond_nextiteration_exit():
    x = tf.constant(2.0)
    i, a = tf.while_loop(
        lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [tf.constant(0), tf.constant(1.0)]
    )
    g = tf.get_default_graph()
    types = {op.name: op.type for op in g.get_operations()}
    expected = {
        "while/Enter": "Enter", "while/Enter_1": "Enter", "while/Merge": "Merge",
        "while/Merge_1": "Merge", "while/Less": "Less", "while/LoopCond": "LoopCond",
        "while/Switch": "Switch", "while/Switch_1": "Switch", "while/Identity": "Identity",
        "while/Identity_1": "Identity", "while/add": "AddV2", "while/mul": "Mul",
        "while/mul/Enter": "Enter", "while/NextIteration": "NextIteration",
        "while/NextIteration_1": "NextIteration", "while/Exit": "Exit", "while/Exit_1": "Exit",
    }  # fmt: skip
    for name, op_type in expected.items():
        assert types[name] == op_type
    assert (i.name, a.name) == ("while/Exit:0", "while/Exit_1:0")
    enter = g.get_operation_by_name("while/Enter")
    assert enter.get_attr("frame_name") == "while/while_context"
    assert enter.get_attr("is_constant") is False
    assert enter.get_attr("parallel_iterations") == 10
    captured = g.get_operation_by_name("while/mul/Enter")
    assert captured.get_attr("is_constant") is True
    assert [t.name for t in captured.inputs] == [x.name]
    merge = g.get_operation_by_name("while/Merge")
    assert [t.name for t in merge.inputs] == ["while/Enter:0", "while/NextIteration:0"]
    # Constants in the loop run once per iteration: they hang on the pivot.
    assert [c.name for c in g.get_operation_by_name("while/Less/y").control_inputs] == [
        "while/Merge"
    ]
    assert [c.name for c in g.get_operation_by_name("while/add/y").control_inputs] == [
        "while/Identity"
    ]
    (context,) = tf.get_collection(tf.GraphKeys.WHILE_CONTEXT)
    assert context.name == "while/while_context"
    with tf.Session() as sess:
        assert sess.run([i, a]) == [3, 8.0]


def test_tensors_captured_from_outside_enter_as_constants_seen_by_every_iteration():
    n = tf.placeholder(tf.int32, [])
    step = tf.placeholder(tf.float32, [])
    _, total = tf.while_loop(
        lambda i, s: i < n, lambda i, s: (i + 1, s + step * tf.cast(i, tf.float32)), [0, 0.0]
    )
    with tf.Session() as sess:
        for count, value in [(5, 2.0), (0, 3.0), (1, 1.5)]:
            assert sess.run(total, {n: count, step: value}) == value * sum(range(count))


def test_nested_loops_run_a_frame_per_outer_iteration():
    def outer_body(i, acc):
        _, inner = tf.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j), [0, 0])
        return i + 1, acc + inner

    r = tf.while_loop(lambda i, acc: i < 6, outer_body, [0, 0])
    expected = sum(sum(range(i)) for i in range(6))
    with tf.Session() as sess:
        assert sess.run(r) == (6, expected)


def test_cond_inside_a_loop():
    def body(i, a):
        return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: a + i, lambda: a - i)

    r = tf.while_loop(lambda i, a: i < 7, body, [0, 0])
    a = 0
    for i in range(7):
        a = a + i if i % 2 == 0 else a - i
    with tf.Session() as sess:
        assert sess.run(r) == (7, a)


def test_a_loop_on_a_cond_branch_not_taken_is_dead_and_does_nothing():
    p = tf.placeholder(tf.bool, [])
    v = tf.Variable(0)

    def loop():
        return tf.while_loop(lambda i: i < 10, lambda i: i + tf.assign_add(v, 1), [0])

    r = tf.cond(p, loop, lambda: tf.constant(-1))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r, {p: False}) == -1
        assert sess.run(v) == 0
        assert sess.run(r, {p: True}) == 1 + 2 + 3 + 4  # i: 1, 3, 6, 10
        assert sess.run(v) == 4


def test_loop_vars_keep_their_nested_structure():
    Pair = collections.namedtuple("Pair", ["a", "b"])
    loop_vars = (tf.constant(0), Pair(tf.constant(1), [tf.constant(2.0)]))

    def body(i, pair):
        return i + 1, Pair(pair.a * 2, [pair.b[0] + 1.0])

    i, pair = tf.while_loop(lambda i, pair: i < 4, body, loop_vars)
    assert isinstance(pair, Pair) and isinstance(pair.b, list)
    with tf.Session() as sess:
        assert sess.run([i, pair.a, pair.b[0]]) == [4, 16, 6.0]


def test_one_loop_var_comes_back_alone_unless_return_same_structure():
    r = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0])
    assert isinstance(r, tf.Tensor)
    (r2,) = tf.while_loop(lambda i: i < 3, lambda i: (i + 1,), [0], return_same_structure=True)
    with tf.Session() as sess:
        assert sess.run([r, r2]) == [3, 3]


def test_maximum_iterations_stops_the_loop():
    r = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=7)
    a, b = tf.while_loop(
        lambda a, b: a < 100, lambda a, b: (a + 1, b * 2), [0, 1], maximum_iterations=5
    )
    with tf.Session() as sess:
        assert sess.run(r) == 7
        assert sess.run([a, b]) == [5, 32]


def test_shape_invariants_let_a_loop_var_grow():
    # TF's testWhileShapeInference: concat grows the vector each iteration.
    i0 = tf.constant(0)
    m0 = tf.ones([2, 2])
    c = lambda i, m: i < 3  # noqa: E731
    b = lambda i, m: (i + 1, tf.concat([m, m], axis=0))  # noqa: E731
    r = tf.while_loop(c, b, [i0, m0], [i0.get_shape(), tf.TensorShape([None, 2])])
    assert r[1].get_shape().as_list() == [None, 2]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(r[1]), np.ones([16, 2]))
    with pytest.raises(ValueError) as info:
        tf.while_loop(c, b, [i0, m0])
    assert str(info.value) == (
        "Input tensor 'ones:0' enters the loop with shape (2, 2), but has shape (4, 2) after "
        "one iteration. To allow the shape to vary across iterations, use the "
        "`shape_invariants` argument of tf.while_loop to specify a less-specific shape."
    )


def test_a_shape_invariant_must_fit_the_initial_shape():
    with pytest.raises(ValueError, match="The shape invariant specified for Const:0 is not"):
        tf.while_loop(
            lambda i: tf.size(i) < 3,
            lambda i: i,
            [tf.constant([1, 2])],
            shape_invariants=[tf.TensorShape([3])],
        )


def test_parallel_iterations_bounds_how_many_iterations_run_ahead():
    # Each iteration's body waits on a queue; the condition only counts. With
    # parallel_iterations=2, at most two iterations can be running, so the
    # counter loop cannot run ahead to the end before any dequeue happens.
    q = tf.FIFOQueue(100, tf.float32, shapes=[])
    counted = tf.Variable(0)

    def body(i, s):
        with tf.control_dependencies([tf.assign_add(counted, 1)]):
            return i + 1, s + q.dequeue()

    r = tf.while_loop(lambda i, s: i < 5, body, [0, 0.0], parallel_iterations=2)
    with tf.Session() as sess:
        sess.run(counted.initializer)
        result = {}
        worker = threading.Thread(target=lambda: result.update(r=sess.run(r)))
        worker.start()
        sess.run(q.enqueue(1.0))
        worker.join(0.3)
        assert worker.is_alive()  # blocked in a later iteration's dequeue
        assert sess.run(counted) <= 3
        sess.run(q.enqueue_many([[2.0, 3.0, 4.0, 5.0]]))
        worker.join(10)
        assert result["r"] == (5, 15.0)
        assert sess.run(counted) == 5


def test_a_blocking_dequeue_in_the_body_waits_and_the_loop_goes_on():
    q = tf.FIFOQueue(10, tf.int32, shapes=[])
    r = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + q.dequeue()), [0, 0])
    with tf.Session() as sess:
        result = {}
        worker = threading.Thread(target=lambda: result.update(r=sess.run(r)))
        worker.start()
        for value in (10, 20, 30):
            sess.run(q.enqueue(value))
        worker.join(10)
        assert result["r"] == (3, 60)


def test_a_dequeue_from_a_closed_queue_in_the_loop_fails_the_step():
    q = tf.FIFOQueue(10, tf.int32, shapes=[])
    r = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + q.dequeue()), [0, 0])
    with tf.Session() as sess:
        sess.run(q.enqueue(1))
        sess.run(q.close())
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(r)


def test_a_body_that_updates_a_variable_runs_once_per_iteration():
    v = tf.Variable(0.0)
    r = tf.while_loop(
        lambda i: i < 4, lambda i: i + tf.cast(tf.assign_add(v, 1.0) > 0, tf.int32), [0]
    )
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r) == 4
        assert sess.run(v) == 4.0


def test_control_dependencies_around_the_loop_gate_its_enters():
    v = tf.Variable(1)
    with tf.control_dependencies([tf.assign(v, 5)]):
        r = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [0])
    enter = tf.get_default_graph().get_operation_by_name("while/Enter")
    assert [c.type for c in enter.control_inputs] == ["Assign"]
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(r) == 3
        assert sess.run(v) == 5


def test_speed_ups_on_and_off_give_the_same_result(monkeypatch):
    from minitf.runtime.core import config

    def build():
        g = tf.Graph()
        with g.as_default():
            x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
            w = tf.constant(np.full((3, 3), 0.5, dtype=np.float32))
            _, y = tf.while_loop(
                lambda i, y: i < 5, lambda i, y: (i + 1, tf.tanh(tf.matmul(y, w))), [0, x]
            )
            y = tf.matmul(y, w) + 1.0
            with tf.Session() as sess:
                return sess.run(y)

    fast = build()
    monkeypatch.setattr(config, "_FAST", False)  # what MINITF_FAST=0 sets
    slow = build()
    np.testing.assert_array_equal(fast, slow)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.full((3, 3), 0.5, dtype=np.float32)
    for _ in range(5):
        y = np.tanh(y @ w)
    y = y @ w + 1.0
    np.testing.assert_allclose(fast, y, rtol=1e-6)


def test_errors_name_what_is_wrong():
    with pytest.raises(TypeError, match="'cond' must be callable."):
        tf.while_loop(1, lambda i: i, [1])
    with pytest.raises(TypeError, match="'body' must be callable."):
        tf.while_loop(lambda i: i < 1, 1, [1])
    with pytest.raises(TypeError, match="'parallel_iterations' must be a positive integer."):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [1], parallel_iterations=0)
    with pytest.raises(ValueError, match="'loop_vars' must be provided."):
        tf.while_loop(lambda: True, lambda: 1, [])
    with pytest.raises(
        TypeError,
        match="Input 'input' of 'LoopCond' Op has type int32 that does not match expected "
        "type of bool.",
    ):
        tf.while_loop(lambda i: i, lambda i: i + 1, [tf.constant(0)])
    with pytest.raises(
        ValueError, match=r"Shape must be rank 0 but is rank 1 for 'while_\d/LoopCond'"
    ):
        tf.while_loop(lambda i: tf.less(i, 3), lambda i: i + 1, [tf.constant([0, 1])])
    with pytest.raises(
        ValueError, match="The two structures don't have the same nested structure."
    ):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), [tf.constant(0), tf.constant(1)])
    with pytest.raises(
        ValueError, match="The two structures don't have the same nested structure."
    ):
        tf.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1, (j,)), [0, 1])


def test_a_tensor_inside_the_loop_cannot_be_used_outside_it():
    tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
    inner = tf.get_default_graph().get_tensor_by_name("while/add:0")
    with pytest.raises(ValueError) as info:
        tf.add(inner, 1)
    assert str(info.value) == (
        "Cannot use 'while/add' as input to 'Add' because 'while/add' is in a while loop. "
        "See info log for more details."
    )
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="'while/add' has been marked as not fetchable"):
            sess.run(inner)


@pytest.mark.timeout(120)
def test_a_loop_on_a_worker_reads_a_variable_on_the_ps_and_sends_its_result_back():
    from minitf.runtime.distributed.launcher import LocalCluster

    with LocalCluster({"ps": 1, "worker": 1}) as cluster:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(1.5, name="w")
            n = tf.Variable(4, name="n")
        with tf.device("/job:worker/task:0"):
            # w's value and n cross into the loop; the loop runs on the worker.
            _, power = tf.while_loop(lambda i, p: i < n, lambda i, p: (i + 1, p * w), [0, 1.0])
            (grad,) = tf.gradients(power, w)
        with tf.device("/job:ps/task:0"):
            doubled = power * 2.0  # the loop's result crosses back to the ps
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run([w.initializer, n.initializer])
            options = tf.RunOptions(timeout_in_ms=20000)
            assert sess.run(doubled, options=options) == 2 * 1.5**4
            assert sess.run(grad, options=options) == pytest.approx(4 * 1.5**3)
            # A loop on the ps, in the same step as the worker's.
            with tf.device("/job:ps/task:0"):
                on_ps = tf.while_loop(lambda i: i < n, lambda i: i + 1, [0])
            assert sess.run([on_ps, doubled], options=options) == [4, 2 * 1.5**4]


def test_a_loop_runs_in_a_simulated_cluster():
    from minitf.cluster.simulated import SimulatedCluster

    cluster = SimulatedCluster({"ps": 1, "worker": 1})
    out = {}

    def client():
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(1.5, name="w")
            with tf.device("/job:worker/task:0"):
                _, p = tf.while_loop(lambda i, p: i < 4, lambda i, p: (i + 1, p * w), [0, 1.0])
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(w.initializer)
                out["p"] = sess.run(p)

    cluster.run_clients(client)
    assert out["p"] == 1.5**4


def test_variable_made_in_the_body_is_made_outside_the_loop():
    # TF builds a variable in an init scope, which leaves the loop's context:
    # one variable, initialized once, read by the loop through an Enter.
    def body(i, total):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(1.5))
        return i + 1, total + w

    _, total = tf.while_loop(lambda i, t: i < 4, body, [0, tf.constant(0.0)])
    (w,) = tf.global_variables()
    assert w.op._control_flow_context is None
    assert w.initializer._control_flow_context is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(total) == 6.0
