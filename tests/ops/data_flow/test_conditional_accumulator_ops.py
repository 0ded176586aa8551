"""tf.ConditionalAccumulator and tf.SparseConditionalAccumulator (TF 1.x semantics, spec §5).

Expected values are computed by hand with numpy. Threads are joined with
timeouts; a take is known to be waiting when the resource reports it.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.conditional_accumulator_kernels import TAKE, ConditionalAccumulator

pytestmark = pytest.mark.timeout(60)

WAIT = 10.0


def resource(sess, acc) -> ConditionalAccumulator:
    sess.run(acc.num_accumulated())
    found = [r for _, _, r in sess.resource_mgr.items() if r.name.endswith(acc.name)]
    assert len(found) == 1
    return found[0]


def dense(shape=(2,), **kwargs):
    acc = tf.ConditionalAccumulator(tf.float32, shape=list(shape), **kwargs)
    grad = tf.placeholder(tf.float32, list(shape))
    step = tf.placeholder(tf.int64, [])
    return acc, acc.apply_grad(grad, local_step=step), grad, step


# -- construction --------------------------------------------------------------------------


def test_op_types_names_and_static_shapes():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2, 3], name="acc")
    assert acc.accumulator_ref.op.type == "ResourceConditionalAccumulator"
    assert acc.accumulator_ref.dtype == tf.resource
    assert acc.name == "acc" and acc.dtype == tf.float32
    assert acc.take_grad(1).shape.as_list() == [2, 3]
    assert acc.take_grad(1).op.type == "ResourceAccumulatorTakeGradient"
    assert acc.apply_grad(np.zeros((2, 3), np.float32)).type == "ResourceAccumulatorApplyGradient"
    assert acc.num_accumulated().op.name == "ResourceAccumulatorNumAccumulated"  # TF names it so
    assert acc.num_accumulated().dtype == tf.int32
    assert acc.set_global_step(3).type == "ResourceAccumulatorSetGlobalStep"
    sparse = tf.SparseConditionalAccumulator(tf.float32, name="sparse")
    assert sparse.accumulator_ref.op.type == "SparseConditionalAccumulator"
    assert sparse.num_accumulated().op.type == "AccumulatorNumAccumulated"


def test_reduction_type_must_be_mean_or_sum():
    with pytest.raises(ValueError, match="reduction_type"):
        tf.ConditionalAccumulator(tf.float32, reduction_type="MAX")


def test_apply_grad_checks_the_static_shape():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    with pytest.raises(ValueError):
        acc.apply_grad([1.0, 2.0, 3.0])


# -- aggregation ---------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["MEAN", "SUM"])
def test_take_grad_returns_the_mean_or_the_sum(reduction):
    acc, apply, grad, step = dense(reduction_type=reduction)
    grads = [np.array([1.0, 2.0], np.float32), np.array([4.0, -1.0], np.float32)]
    with tf.Session() as sess:
        for g in grads:
            sess.run(apply, {grad: g, step: 0})
        assert sess.run(acc.num_accumulated()) == 2
        got = sess.run(acc.take_grad(2))
        assert sess.run(acc.num_accumulated()) == 0
    expected = (grads[0] + grads[1]) / (2 if reduction == "MEAN" else 1)
    np.testing.assert_allclose(got, expected)


def test_num_required_is_a_minimum_and_all_are_averaged():
    acc, apply, grad, step = dense()
    with tf.Session() as sess:
        for v in (1.0, 2.0, 3.0, 6.0):
            sess.run(apply, {grad: [v, v], step: 0})
        np.testing.assert_allclose(sess.run(acc.take_grad(2)), [3.0, 3.0])


def test_stale_gradients_are_dropped_and_equal_steps_are_fresh():
    acc, apply, grad, step = dense()
    take = acc.take_grad(1)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 1.0], step: 0})
        sess.run(take)  # the accumulator's global step is now 1
        sess.run(apply, {grad: [100.0, 100.0], step: 0})  # stale: 0 < 1
        assert sess.run(acc.num_accumulated()) == 0
        sess.run(apply, {grad: [2.0, 4.0], step: 1})  # fresh: 1 >= 1
        sess.run(apply, {grad: [4.0, 8.0], step: 5})  # fresh: newer
        np.testing.assert_allclose(sess.run(take), [3.0, 6.0])


def test_set_global_step_filters_by_local_step():
    # TF's test: set the step to each of 1000..1004, apply gradients computed at
    # steps 1000..1004 and take: only those with local_step >= the step count.
    acc, apply, grad, step = dense(shape=(1,))
    new_step = tf.placeholder(tf.int64, [])
    set_step = acc.set_global_step(new_step)
    take = acc.take_grad(1)
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    with tf.Session() as sess:
        for ls in range(1000, 1005):
            sess.run(set_step, {new_step: ls})
            for i, v in enumerate(values):
                sess.run(apply, {grad: [v], step: 1000 + i})
            fresh = [v for i, v in enumerate(values) if 1000 + i >= ls]
            np.testing.assert_allclose(sess.run(take), [np.mean(fresh)])


def test_set_global_step_may_go_down():
    acc, apply, grad, step = dense()
    with tf.Session() as sess:
        sess.run(acc.set_global_step(10))
        sess.run(apply, {grad: [1.0, 1.0], step: 5})
        assert sess.run(acc.num_accumulated()) == 0
        sess.run(acc.set_global_step(3))
        sess.run(apply, {grad: [1.0, 1.0], step: 5})
        assert sess.run(acc.num_accumulated()) == 1


def test_taken_values_do_not_change_when_more_gradients_arrive():
    acc, apply, grad, step = dense()
    take = acc.take_grad(1)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 1.0], step: 0})
        first = sess.run(take)
        sess.run(apply, {grad: [5.0, 5.0], step: 1})
        np.testing.assert_allclose(first, [1.0, 1.0])
        np.testing.assert_allclose(sess.run(take), [5.0, 5.0])


def test_shape_errors_at_run_time():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[None])
    grad = tf.placeholder(tf.float32, [None])
    apply = acc.apply_grad(grad)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"expected \[1\], got \[2\]"):
            sess.run(apply, {grad: [1.0, 2.0]})


def test_num_required_must_be_positive():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[1])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be positive, but was 0"):
            sess.run(acc.take_grad(0))


def test_local_step_must_be_a_scalar():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[1])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="local_step must be scalar"):
            sess.run(acc.apply_grad([1.0], local_step=[1, 2]))


# -- waiting -------------------------------------------------------------------------------


def test_take_grad_waits_until_enough_gradients_arrive():
    acc, apply, grad, step = dense()
    result = []
    with tf.Session() as sess:
        res = resource(sess, acc)
        taker = threading.Thread(target=lambda: result.append(sess.run(acc.take_grad(3))))
        taker.start()
        assert res.wait_for_waiting(TAKE, 1, WAIT)
        for v in (1.0, 2.0):
            sess.run(apply, {grad: [v, v], step: 0})
        assert res.num_waiting(TAKE) == 1 and not result  # two are not enough
        sess.run(apply, {grad: [6.0, 6.0], step: 0})
        taker.join(WAIT)
        assert not taker.is_alive()
    np.testing.assert_allclose(result[0], [3.0, 3.0])


def test_take_grad_timeout_leaves_nothing_waiting():
    acc, apply, grad, step = dense()
    with tf.Session() as sess:
        res = resource(sess, acc)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(acc.take_grad(1), options=tf.RunOptions(timeout_in_ms=50))
        assert res.num_waiting(TAKE) == 0
        sess.run(apply, {grad: [2.0, 2.0], step: 0})
        np.testing.assert_allclose(sess.run(acc.take_grad(1)), [2.0, 2.0])


def test_closing_the_session_cancels_a_waiting_take():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[1])
    errors_seen = []
    sess = tf.Session()
    res = resource(sess, acc)

    def take():
        try:
            sess.run(acc.take_grad(1))
        except tf.errors.OpError as exc:
            errors_seen.append(exc)

    taker = threading.Thread(target=take)
    taker.start()
    assert res.wait_for_waiting(TAKE, 1, WAIT)
    sess.close()
    taker.join(WAIT)
    assert isinstance(errors_seen[0], tf.errors.CancelledError)
    assert "TakeGrad operation was cancelled" in str(errors_seen[0])


def test_four_producers_and_one_consumer_aggregate_exactly():
    producers, rounds = 4, 50
    acc = tf.ConditionalAccumulator(tf.float64, shape=[3], reduction_type="SUM")
    grad = tf.placeholder(tf.float64, [3])
    apply, take = acc.apply_grad(grad), acc.take_grad(producers)
    totals = []
    with tf.Session() as sess:
        put = sess.make_callable(apply, [grad])

        def produce(p):
            for r in range(rounds):
                put(np.array([p, r, 1.0]))

        threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
        for t in threads:
            t.start()
        got = []
        while sum(g[2] for g in got) < producers * rounds:
            got.append(sess.run(take))
        for t in threads:
            t.join(WAIT)
        totals = np.sum(got, axis=0)
    expected = [rounds * sum(range(producers)), producers * sum(range(rounds)), producers * rounds]
    np.testing.assert_allclose(totals, expected)


# -- sharing -------------------------------------------------------------------------------


def test_shared_name_is_one_accumulator_and_private_ones_are_not():
    a = tf.ConditionalAccumulator(tf.float32, shape=[1], shared_name="g", name="a")
    b = tf.ConditionalAccumulator(tf.float32, shape=[1], shared_name="g", name="b")
    c = tf.ConditionalAccumulator(tf.float32, shape=[1], name="c")
    with tf.Session() as sess:
        sess.run(a.apply_grad([1.0]))
        assert sess.run(b.num_accumulated()) == 1
        assert sess.run(c.num_accumulated()) == 0


def test_a_shared_accumulator_with_another_shape_fails():
    a = tf.ConditionalAccumulator(tf.float32, shape=[1], shared_name="g", name="a")
    b = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="g", name="b")
    with tf.Session() as sess:
        sess.run(a.num_accumulated())
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shared accumulator"):
            sess.run(b.num_accumulated())


# -- sparse --------------------------------------------------------------------------------


def test_sparse_mean_divides_each_row_by_its_own_count():
    # The spec's example: [0, 1] + [0, 2] -> row 0 averaged over 2, rows 1 and 2 as they are.
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=())
    with tf.Session() as sess:
        sess.run(acc.apply_grad([0, 1], [[0.0, 1.0], [0.0, 2.0]]))
        sess.run(acc.apply_grad([0, 2], [[1.0, 0.0], [3.0, 0.0]]))
        indices, values, shape = sess.run(acc.take_grad(2))
    np.testing.assert_array_equal(indices, [0, 1, 2])
    np.testing.assert_allclose(values, [[0.5, 0.5], [0.0, 2.0], [3.0, 0.0]])
    np.testing.assert_array_equal(shape, [-1, 2])


def test_sparse_sum_adds_duplicate_indices_and_sorts_them():
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[4, 2], reduction_type="SUM")
    with tf.Session() as sess:
        sess.run(acc.apply_grad([3, 1, 3], [[1.0, 1.0], [2.0, 2.0], [5.0, 0.0]]))
        sess.run(acc.apply_grad([1], [[1.0, 1.0]]))
        slices = acc.take_indexed_slices_grad(2)
        indices, values, shape = sess.run([slices.indices, slices.values, slices.dense_shape])
    np.testing.assert_array_equal(indices, [1, 3])
    np.testing.assert_allclose(values, [[3.0, 3.0], [6.0, 1.0]])
    np.testing.assert_array_equal(shape, [4, 2])


def test_sparse_apply_indexed_slices_grad_and_staleness():
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[None, 2])
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([0]), tf.constant([5, 2]))
    with tf.Session() as sess:
        sess.run(acc.set_global_step(2))
        sess.run(acc.apply_indexed_slices_grad(slices, local_step=1))
        assert sess.run(acc.num_accumulated()) == 0
        sess.run(acc.apply_indexed_slices_grad(slices, local_step=2))
        indices, values, shape = sess.run(acc.take_grad(1))
    np.testing.assert_array_equal(indices, [0])
    np.testing.assert_allclose(values, [[1.0, 2.0]])
    np.testing.assert_array_equal(shape, [-1, 2])


@pytest.mark.parametrize(
    "indices, values, grad_shape, message",
    [
        ([[0]], [[1.0, 1.0]], None, "indices should be vector"),
        ([0], 1.0, None, "Values cannot be 0-dimensional"),
        ([0, 1], [[1.0, 1.0]], None, "Expected 2 non-empty input values, got 1"),
        ([0], [[1.0, 1.0]], [3], "expected shape rank at least 2, got 1"),
        ([0], [[1.0, 1.0]], [4, 2], "expected shape dim 0 to be 3, got 4"),
        ([5], [[1.0, 1.0]], None, "index of slice 0 exceeded limits of shape"),
        ([0], [[1.0, 1.0, 1.0]], None, "expected values dim 1 to be 2, got 3"),
    ],
)
def test_sparse_validation_messages(indices, values, grad_shape, message):
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(acc.apply_grad(indices, values, grad_shape))


def test_sparse_values_must_match_what_is_accumulated():
    acc = tf.SparseConditionalAccumulator(tf.float32)
    with tf.Session() as sess:
        sess.run(acc.apply_grad([0], [[1.0, 1.0]]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected values dim 1"):
            sess.run(acc.apply_grad([1], [[1.0, 1.0, 1.0]]))
