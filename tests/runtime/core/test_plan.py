"""Tests for minitf.runtime.core.plan: pruning, ordering, slots and plan caching.

TF1 semantics pinned here: a run executes only what its fetches and targets
need (following data and control edges), a fed tensor cuts its producer off,
and every op runs after its data and control predecessors.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.framework.op_registry import get_kernel_def, register_compute
from minitf.runtime.core import pipeline
from minitf.runtime.core import plan as plan_lib
from minitf.runtime.core import session as session_lib
from minitf.runtime.core.plan import KernelInfo

pytestmark = pytest.mark.timeout(60)


def _kernel_for(op):
    kernel_def = get_kernel_def(op.type)
    return KernelInfo(kernel_def.builder(op), kernel_def.is_async, kernel_def.stateful)


def _names(ops):
    return [op.name for op in ops]


# -- pruning -------------------------------------------------------------------------------


def test_prune_keeps_only_what_the_fetches_need():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    y = tf.add(a, b, name="y")
    tf.identity(y, name="unused_consumer")
    tf.constant(3.0, name="unrelated")
    assert sorted(_names(plan_lib.prune([y], [], []))) == ["a", "b", "y"]


def test_prune_follows_control_edges_and_targets():
    gate = tf.no_op(name="gate")
    with tf.control_dependencies([gate]):
        c = tf.constant(1.0, name="c")
    target = tf.no_op(name="target")
    assert sorted(_names(plan_lib.prune([c], [], []))) == ["c", "gate"]
    assert _names(plan_lib.prune([], [target], [])) == ["target"]


def test_prune_cuts_at_fed_tensors():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    mid = tf.identity(p, name="mid")
    out = tf.identity(mid, name="out")
    assert _names(plan_lib.prune([out], [], [mid])) == ["out"]
    assert _names(plan_lib.prune([mid], [], [mid])) == []


def test_pruned_ops_do_not_run():
    v = tf.Variable(0.0)
    bump = tf.assign_add(v, 1.0)
    tf.placeholder(tf.float32, shape=[], name="never_fed")
    y = tf.constant(2.0) + 1.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 3.0
        assert sess.run(v) == 0.0
        sess.run(bump)
        assert sess.run(v) == 1.0


def test_control_dependencies_pull_ops_into_the_run():
    v = tf.Variable(0.0)
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):
        y = tf.identity(tf.constant(5.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 5.0
        assert sess.run(y) == 5.0
        assert sess.run(v) == 2.0


def test_group_runs_all_its_inputs():
    v = tf.Variable(0.0)
    w = tf.Variable(0.0)
    both = tf.group(tf.assign_add(v, 1.0), tf.assign_add(w, 2.0))
    with tf.Session() as sess:
        sess.run([v.initializer, w.initializer])
        sess.run(both)
        assert sess.run([v, w]) == [1.0, 2.0]


# -- ordering ------------------------------------------------------------------------------


def test_topological_order_respects_data_edges():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    c = tf.identity(b, name="c")
    order = plan_lib.topological_order([c.op, b.op, a.op], set())
    assert _names(order) == ["a", "b", "c"]


def test_topological_order_respects_control_edges_against_creation_order():
    late_consumer = tf.no_op(name="created_first")
    producer = tf.no_op(name="created_second")
    late_consumer._add_control_input(producer)
    order = plan_lib.topological_order([late_consumer, producer], set())
    assert _names(order) == ["created_second", "created_first"]


def test_topological_order_ignores_edges_from_fed_tensors():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    mid = tf.identity(p, name="mid")
    out = tf.identity(mid, name="out")
    order = plan_lib.topological_order([out.op], {mid})
    assert _names(order) == ["out"]


def test_topological_order_of_a_cycle_raises_invalid_argument():
    a = tf.no_op(name="a")
    b = tf.no_op(name="b")
    a._add_control_input(b)
    b._add_control_input(a)
    with pytest.raises(tf.errors.InvalidArgumentError, match="cycle"):
        plan_lib.topological_order([a, b], set())


def test_run_with_a_control_edge_added_after_creation_runs_in_dependency_order():
    v = tf.Variable(1.0)
    add_ten = tf.assign_add(v, 10.0)
    set_three = tf.assign(v, 3.0)
    # add_ten was created first; make it wait for set_three: 3 + 10, not 11 then 3.
    add_ten.op._add_control_input(set_three.op)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(add_ten.op)
        assert sess.run(v) == 13.0


# -- plan structure ------------------------------------------------------------------------


def test_build_plan_steps_are_ordered_and_wired():
    p = tf.placeholder(tf.float32, shape=[2], name="p")
    a = tf.identity(p, name="a")
    b = tf.add(a, a, name="b")
    plan = pipeline.build_plan([b], [], [p], _kernel_for, fold_constants=False)
    assert _names(plan.ops) == ["a", "b"]
    index = {step.op: i for i, step in enumerate(plan.steps)}
    for i, step in enumerate(plan.steps):
        preds = {t.op for t in step.op.inputs if t.op in index}
        assert step.num_predecessors == len(preds)
        for j in step.successors:
            assert j > i
    assert plan.steps[0].successors == (1,)
    assert not plan.has_async
    assert len(plan.feed_slots) == 1
    assert len(plan.fetch_slots) == 1
    assert plan.steps[0].in_slots == plan.feed_slots
    assert plan.steps[1].in_slots == (plan.steps[0].out_slots[0],) * 2
    assert plan.fetch_slots == plan.steps[1].out_slots


def test_plan_successors_are_every_consumer_once_in_plan_order():
    # Inputs listed against creation order, one producer read twice, a control edge.
    p = tf.placeholder(tf.float32, shape=[2], name="p")
    a = tf.identity(p, name="a")
    b = tf.negative(p, name="b")
    c = tf.abs(p, name="c")
    d = tf.add_n([c, b, a, c], name="d")
    with tf.control_dependencies([b.op]):
        e = tf.identity(a, name="e")
    plan = pipeline.build_plan([d, e], [], [p], _kernel_for, fold_constants=False)
    assert _names(plan.ops) == ["a", "b", "c", "e", "d"]  # e is ready before d (Kahn's)
    ops = plan.ops
    for step in plan.steps:
        waits_for = {t.op for t in step.op.inputs} | set(step.op.control_inputs)
        assert step.num_predecessors == len(waits_for & set(ops))
        readers = [j for j, other in enumerate(ops) if step.op in {t.op for t in other.inputs}]
        controlled = [j for j, other in enumerate(ops) if step.op in other.control_inputs]
        assert step.successors == tuple(sorted(set(readers + controlled)))
    assert plan.steps[1].successors == (3, 4)  # b: orders e, read by d


def test_every_tensor_gets_its_own_slot():
    a = tf.constant(1.0)
    b = tf.identity(a)
    c = tf.add(a, b)
    plan = pipeline.build_plan([c], [], [], _kernel_for, fold_constants=False)
    out_slots = [s for step in plan.steps for s in step.out_slots]
    assert len(set(out_slots)) == len(out_slots) == 3
    assert plan.num_slots == 3


def test_fed_output_of_a_running_op_keeps_the_fed_value():
    first, second = tf.unstack(tf.constant([1.0, 2.0]))
    total = first + second
    with tf.Session() as sess:
        assert sess.run(total) == 3.0
        assert sess.run(total, {first: 10.0}) == 12.0
        assert sess.run([first, total], {first: 10.0}) == [10.0, 12.0]


def test_plan_ops_never_include_fed_producers():
    p = tf.placeholder(tf.float32, shape=[], name="p")
    out = tf.identity(p, name="out")
    plan = pipeline.build_plan([out], [], [p], _kernel_for)
    assert _names(plan.ops) == ["out"]


# -- caching -------------------------------------------------------------------------------


def test_same_signature_reuses_the_same_plan_object():
    p = tf.placeholder(tf.float32, shape=[])
    y = p + 1.0
    with tf.Session() as sess:
        first = sess._plan([y], [], [p])
        second = sess._plan([y], [], [p])
        other = sess._plan([y], [], [])
    assert first is second
    assert other is not first


def test_repeated_runs_build_the_plan_once(monkeypatch):
    calls = []
    real_build = session_lib.build_plan

    def counting_build(*args, **kwargs):
        calls.append(args)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(session_lib, "build_plan", counting_build)
    p = tf.placeholder(tf.float32, shape=[])
    y = p + 1.0
    with tf.Session() as sess:
        for i in range(5):
            assert sess.run(y, {p: float(i)}) == i + 1.0
        assert len(calls) == 1
        sess.run([y, p], {p: 1.0})
        assert len(calls) == 2


def test_graph_changes_give_a_new_plan_with_the_new_ops():
    v = tf.Variable(0.0)
    a = tf.constant(1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = sess._plan([a], [], [])
        bump = tf.assign_add(v, 1.0)
        a.op._add_control_input(bump.op)
        after = sess._plan([a], [], [])
        assert after is not before
        assert sess.run(a) == 1.0
        assert sess.run(v) == 1.0


def test_kernels_are_built_once_per_op_and_session():
    a = tf.constant(np.arange(3, dtype=np.float32))
    y = tf.identity(a)
    with tf.Session() as sess:
        sess.run(y)
        kernel = sess._kernel(y.op)
        sess.run([y, a])
        assert sess._kernel(y.op) is kernel


# -- constant folding ----------------------------------------------------------------------

_FAILING_PURE = "TestPlanFailingPure"
if get_kernel_def(_FAILING_PURE) is None:

    @register_compute(_FAILING_PURE)
    def _failing_pure_kernel(ctx, x):
        raise ValueError("this kernel always fails")


def test_constant_subgraphs_are_folded_out_of_the_steps():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    c = tf.add(a, b, name="c")
    plan = pipeline.build_plan([c], [], [], _kernel_for)
    assert plan.steps == ()
    assert set(plan.folded_ops) == {a.op, b.op, c.op}
    with tf.Session() as sess:
        assert sess.run(c) == 2.0


def test_the_shape_of_a_statically_known_tensor_is_folded_and_its_only_reader_goes_unread():
    # TF's Grappler materializes Shape/Size/Rank of fully defined shapes; the
    # mean of a [3]-vector has shape [], so its Shape is the empty int32 vector,
    # the product of its entries 1, and nothing then reads the mean.
    x = tf.placeholder(tf.float32, [3], name="x")
    mean = tf.reduce_mean(x * 2.0, name="mean")
    shape, size, rank = tf.shape(mean), tf.size(x * 2.0), tf.rank(x * 2.0)
    count = tf.reduce_prod(shape, name="count")
    plan = pipeline.build_plan([count, size, rank], [], [x], _kernel_for)
    assert {shape.op, count.op, size.op, rank.op} <= set(plan.folded_ops)
    assert mean.op in {s.op for s in plan.steps if s.unread}
    with tf.Session() as sess:
        got = sess.run([shape, count, size, rank], {x: np.ones(3, np.float32)})
    np.testing.assert_array_equal(got[0], np.zeros(0, np.int32))
    assert got[0].dtype == np.int32 and got[1:] == [1, 3, 1]


def test_the_shape_of_a_tensor_with_an_unknown_dimension_runs_with_the_step():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    known = tf.placeholder(tf.float32, [4], name="known")
    shape_of_x, shape_of_feed = tf.shape(x * 2.0), tf.shape(known)
    plan = pipeline.build_plan([shape_of_x, shape_of_feed], [], [x, known], _kernel_for)
    assert shape_of_x.op in plan.ops and shape_of_feed.op in plan.ops
    with tf.Session() as sess:
        for rows in (1, 5):
            got = sess.run(shape_of_x, {x: np.ones((rows, 2), np.float32)})
            np.testing.assert_array_equal(got, [rows, 2])


def test_stateful_ops_and_their_consumers_are_not_folded():
    v = tf.Variable(2.0, name="v")
    y = tf.add(v.value(), tf.constant(1.0, name="one"), name="y")
    plan = pipeline.build_plan([y], [], [], _kernel_for)
    assert v.op in plan.ops
    assert y.op in plan.ops
    assert y.op not in plan.folded_ops


def test_ops_with_control_inputs_are_not_folded():
    a = tf.constant(1.0, name="a")
    gate = tf.no_op(name="gate")
    with tf.control_dependencies([gate]):
        d = tf.identity(a, name="d")
    plan = pipeline.build_plan([d], [], [], _kernel_for)
    assert _names(plan.ops) == ["gate", "d"]


def test_an_unfed_placeholder_with_a_default_folds_and_a_trace_shows_the_constant():
    # TF 1.x's session folds a placeholder with a default that the run does
    # not feed, and what it feeds; its trace then lists one Const in place of
    # the folded subgraph. Fed, the placeholder's consumers run.
    d = tf.placeholder_with_default(tf.constant(2.0, name="two"), [], name="d")
    y = tf.multiply(d, 3.0, name="y")
    plan = pipeline.build_plan([y], [], [], _kernel_for)
    assert _names(plan.ops) == []
    assert {op.name for op, _ in plan.folded_frontier} == {"y"}
    full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session() as sess:
        unfed, fed = tf.RunMetadata(), tf.RunMetadata()
        assert sess.run(y, options=full, run_metadata=unfed) == 6.0
        assert sess.run(y, {d: 5.0}, options=full, run_metadata=fed) == 15.0
    (node,) = [n for s in unfed.step_stats.dev_stats for n in s.node_stats]
    assert (node.node_name, node.op, node.folded_from) == ("y", "Const", "Mul")
    assert node.output_bytes == 4  # one float32
    assert node.timeline_label == "y = Const()"
    assert {(n.node_name, n.op) for s in fed.step_stats.dev_stats for n in s.node_stats} == {
        ("y/y", "Const"),
        ("y", "Mul"),
    }


def test_a_fed_constant_is_replaced_by_the_fed_value():
    c = tf.constant(1.0, name="c")
    y = c + 1.0
    with tf.Session() as sess:
        assert sess.run(y) == 2.0
        assert sess.run(y, {c: 5.0}) == 6.0
        assert sess.run(y) == 2.0


def test_a_kernel_error_while_folding_surfaces_when_the_op_runs():
    c = tf.constant(1.0)
    bad = tf.get_default_graph().create_op(
        _FAILING_PURE, [c], [tf.float32], name="bad", shapes=[[]]
    )
    plan = pipeline.build_plan([bad.outputs[0]], [], [], _kernel_for)
    assert bad in plan.ops
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="this kernel always fails"
        ) as info:
            sess.run(bad.outputs[0])
    assert info.value.op is bad


def test_fetched_folded_values_are_writable_copies():
    c = tf.identity(tf.constant([1.0, 2.0]))
    with tf.Session() as sess:
        first = sess.run(c)
        first[0] = 50.0
        np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])


# -- reads of ref variables: the consumer sees the value when it runs (TF1 aliasing) ------------


def test_a_read_forwarded_by_identity_is_seen_by_its_consumer_when_the_consumer_runs():
    # The read runs first (it has no inputs to wait for); the Mul waits for a
    # dequeue that only succeeds after the assign. TF1's `read` Identity
    # forwards the variable's buffer and Assign writes into it, so the Mul
    # sees 5.0; a snapshot taken by the read would give 1.0.
    v = tf.Variable(1.0)
    q = tf.FIFOQueue(1, tf.float32, shapes=[])
    assign = tf.assign(v, 5.0)
    with tf.control_dependencies([assign]):
        enqueue = q.enqueue(1.0)
    y = v.value() * q.dequeue()
    with tf.Session() as sess:
        sess.run(v.initializer)
        _, value = sess.run([enqueue, y])
    assert value == 5.0


def test_fill_after_an_update_carries_the_new_global_step():
    # What SyncReplicasOptimizer's sync_op relies on: fill([n], global_step)
    # under a control dependency on the update sees the incremented step.
    global_step = tf.Variable(0, dtype=tf.int64)
    update = tf.assign_add(global_step, tf.constant(1, tf.int64))
    with tf.control_dependencies([update]):
        tokens = tf.fill([3], global_step)
    with tf.Session() as sess:
        sess.run(global_step.initializer)
        first = sess.run(tokens)
        second = sess.run(tokens)
    np.testing.assert_array_equal(first, [1, 1, 1])
    np.testing.assert_array_equal(second, [2, 2, 2])


def test_a_consumer_under_control_dependencies_reads_after_the_assign():
    # The TF1 idiom: a read made outside the block, consumed inside it.
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        y = v * 10.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 20.0
        assert sess.run(y) == 30.0


def test_fetched_values_are_copies_that_later_steps_do_not_change():
    v = tf.Variable([1.0, 2.0])
    inc = tf.assign_add(v, [1.0, 1.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        via_identity = sess.run(tf.identity(v))
        sess.run(inc)
        before[0] = 100.0  # the caller owns what it fetched
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
    np.testing.assert_array_equal(via_identity, [1.0, 2.0])


def test_reads_variable_follows_identity_chains_only():
    v = tf.Variable([1.0])
    assert plan_lib.reads_variable(v._ref())
    assert plan_lib.reads_variable(v.value())
    assert plan_lib.reads_variable(tf.identity(tf.identity(v)))
    assert not plan_lib.reads_variable(v * 1.0)
    assert not plan_lib.reads_variable(v.read_value() * 1.0)


def test_a_read_of_an_uninitialized_variable_fails_at_the_read():
    v = tf.Variable([1.0], name="weights")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value weights"):
            sess.run(tf.identity(v) + 1.0)


def test_an_op_is_isolated_only_if_it_touches_nothing_but_its_inputs_and_outputs():
    # Isolated: a stateless, non-blocking kernel, not Switch or Merge, that
    # reads no variable. Its place among other ops' runs changes no value.
    v = tf.Variable(np.ones([2, 2], np.float32), name="v")
    p = tf.placeholder(tf.float32, [2, 2], name="p")
    product = tf.matmul(p, p, name="product")
    through_read = tf.add(v.read_value(), p, name="through_read")  # reads v when it runs
    q = tf.FIFOQueue(2, tf.float32, shapes=[], name="q")
    taken = q.dequeue(name="taken")
    chosen = tf.cond(p[0, 0] > 0, lambda: p * 2.0, lambda: p * 3.0)
    bump = tf.assign_add(v, p, name="bump")
    plan = pipeline.build_plan(
        [product, through_read, taken, chosen, bump], [], [p], _kernel_for, fold_constants=False
    )
    isolated = {step.op.name: step.isolated for step in plan.steps}
    types = {step.op.name: step.op.type for step in plan.steps}
    assert isolated["product"] is True
    assert isolated["through_read"] is False  # its input is the variable's buffer
    assert isolated["v"] is False  # the variable op: state
    assert isolated["taken"] is False  # waits on the queue
    assert isolated["bump"] is False  # writes the variable
    control_flow = [n for n, t in types.items() if t in ("Switch", "Merge")]
    assert control_flow and not any(isolated[n] for n in control_flow)
    assert isolated["cond/mul"] is True  # inside a branch, still only its inputs


def test_a_fed_placeholder_that_is_only_a_control_input_is_not_run():
    # TF's FeedInputs moves a fed Placeholder's control edges to the feed:
    # the op waits for nothing, and the placeholder itself never runs.
    b = tf.placeholder(tf.float32, [])
    s = tf.constant(3.0)
    with tf.control_dependencies([b]):
        y = s * 2
    with tf.Session() as sess:
        assert sess.run(y, {b: 1.0}) == 6.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value"):
            sess.run(y)  # unfed, it runs, and fails as in TF
