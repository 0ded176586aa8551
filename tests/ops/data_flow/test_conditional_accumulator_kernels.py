"""The dense accumulator's partial sums: adds outside the lock, TF's bookkeeping inside it.

An apply is counted under the accumulator's lock (`start_apply`), added
without it (`add`) and then finished (`finish_apply`); a take that happens
while an add is still running completes when that add is done. The tests that
need an apply to stop half way drive those three parts themselves, in the
order the test chooses; the others run real ``apply_grad`` ops on many
threads. Expected values come from numpy, with integer-valued gradients where
the result must be exact whatever the order of the additions.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.blocking import Offer
from minitf.ops.data_flow.conditional_accumulator_kernels import TAKE, ConditionalAccumulator

pytestmark = pytest.mark.timeout(60)

WAIT = 10.0


def resource(sess, acc) -> ConditionalAccumulator:
    sess.run(acc.num_accumulated())
    found = [r for _, _, r in sess.resource_mgr.items() if r.name.endswith(acc.name)]
    assert len(found) == 1
    return found[0]


def begin(res: ConditionalAccumulator, grad, local_step=0):
    """An apply stopped after its bookkeeping: counted, not yet added."""
    value, owned = res.convert(grad)
    with res.lock:
        held = res.start_apply(local_step, value.shape)
    return held, value, owned


def end(res: ConditionalAccumulator, held, value, owned) -> None:
    """The rest of the apply `begin` started: the add, then what waits on it may move."""
    res.add(held, value, owned)
    with res.lock:
        res.finish_apply(held)
        finished = res.flush_locked()
    res.finish(finished)


def join(threads) -> None:
    for t in threads:
        t.join(WAIT)
        assert not t.is_alive()


def test_a_take_waits_for_a_gradient_that_is_still_being_added():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[3], reduction_type="SUM")
    grad = tf.placeholder(tf.float32, [3])
    step = tf.placeholder(tf.int64, [])
    apply = acc.apply_grad(grad, local_step=step)
    g1, g2, g3 = (np.array(v, np.float32) for v in ([1, 2, 3], [10, 20, 30], [100, 200, 300]))
    result = []
    with tf.Session() as sess:
        res = resource(sess, acc)
        sess.run(apply, {grad: g1, step: 0})
        held, value, owned = begin(res, g2)  # counted: 2 gradients, one half way
        assert sess.run(acc.num_accumulated()) == 2
        taker = threading.Thread(target=lambda: result.append(sess.run(acc.take_grad(2))))
        taker.start()
        assert res.wait_for_waiting(TAKE, 1, WAIT)
        # The take has happened, as in TF: the count is back to 0 and the global
        # step is 1, so a gradient computed at step 0 is now stale ...
        assert sess.run(acc.num_accumulated()) == 0
        sess.run(apply, {grad: g3, step: 0})
        assert sess.run(acc.num_accumulated()) == 0
        # ... but it has not been handed out: g2 is not in yet.
        assert res.num_waiting(TAKE) == 1 and not result
        end(res, held, value, owned)
        join([taker])
        sess.run(apply, {grad: g3, step: 1})
        np.testing.assert_array_equal(sess.run(acc.take_grad(1)), g3)
    np.testing.assert_array_equal(result[0], g1 + g2)


def test_a_gradient_counted_before_a_take_is_in_that_take_not_the_next():
    acc = tf.ConditionalAccumulator(tf.float64, shape=[2])  # MEAN
    with tf.Session() as sess:
        res = resource(sess, acc)
        held, value, owned = begin(res, np.array([4.0, 8.0]))
        finished = []
        res.try_attempt(TAKE, None, finished.append, res.run_take, "cancelled", 1,
                        ready=res.take_ready)  # fmt: skip
        assert not finished and res.global_step == 1
        later, later_value, later_owned = begin(res, np.array([1.0, 1.0]), local_step=1)
        end(res, later, later_value, later_owned)
        assert not finished  # the take still waits for its own gradient only
        end(res, held, value, owned)
        assert len(finished) == 1
        np.testing.assert_array_equal(finished[0].value(), [4.0, 8.0])
        np.testing.assert_array_equal(sess.run(acc.take_grad(1)), [1.0, 1.0])


def test_adds_running_at_once_use_separate_partial_sums_and_the_take_adds_them():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[4], reduction_type="SUM")
    grads = [np.arange(4, dtype=np.float32) * k for k in (1, 3, 5)]
    with tf.Session() as sess:
        res = resource(sess, acc)
        res.max_partial_sums = 2
        first, second, third = (begin(res, g) for g in grads)
        assert first[0][1] is not second[0][1]  # two adds at once: two partial sums
        assert third[0][1] in (first[0][1], second[0][1])  # no more than two
        for held in (second, third, first):  # any order
            end(res, *held)
        assert sess.run(acc.num_accumulated()) == 3
        np.testing.assert_array_equal(sess.run(acc.take_grad(3)), grads[0] + grads[1] + grads[2])


def test_four_adds_running_at_once_get_four_partial_sums_whatever_the_cores():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[3], reduction_type="SUM")
    grads = [np.full(3, 2.0**k, np.float32) for k in range(5)]
    with tf.Session() as sess:
        res = resource(sess, acc)
        held = [begin(res, g) for g in grads]
        partials = [h[0][1] for h in held]
        assert len({id(p) for p in partials[:4]}) == 4
        assert partials[4] in partials[:4]  # the fifth waits its turn on one of them
        for h in reversed(held):
            end(res, *h)
        np.testing.assert_array_equal(sess.run(acc.take_grad(5)), np.sum(grads, axis=0))


def test_with_one_partial_sum_adds_running_at_once_take_turns():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], reduction_type="SUM")
    with tf.Session() as sess:
        res = resource(sess, acc)
        res.max_partial_sums = 1
        first, second = begin(res, np.ones(2, np.float32)), begin(res, np.full(2, 2, np.float32))
        assert first[0][1] is second[0][1]
        end(res, *second)
        end(res, *first)
        np.testing.assert_array_equal(sess.run(acc.take_grad(2)), [3.0, 3.0])


def test_one_producer_at_a_time_sums_in_order_bit_for_bit():
    # Random floats: a different order of additions would round differently.
    rng = np.random.default_rng(7)
    grads = [rng.standard_normal(1000).astype(np.float32) for _ in range(20)]
    for reduction in ("SUM", "MEAN"):
        acc = tf.ConditionalAccumulator(tf.float32, shape=[1000], reduction_type=reduction)
        grad = tf.placeholder(tf.float32, [1000])
        with tf.Session() as sess:
            apply = sess.make_callable(acc.apply_grad(grad), [grad])
            for g in grads:
                apply(g)
            got = sess.run(acc.take_grad(len(grads)))
        expected = grads[0].copy()
        for g in grads[1:]:
            expected += g
        if reduction == "MEAN":
            expected /= np.float32(len(grads))
        np.testing.assert_array_equal(got, expected)


def test_the_callers_array_is_never_kept():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[3], reduction_type="SUM")
    grad = tf.placeholder(tf.float32, [3])
    mine = np.array([1.0, 2.0, 3.0], np.float32)
    with tf.Session() as sess:
        sess.run(acc.apply_grad(grad), {grad: mine})
        mine[:] = 100.0
        first = sess.run(acc.take_grad(1))
        np.testing.assert_array_equal(first, [1.0, 2.0, 3.0])
        sess.run(acc.apply_grad(grad, local_step=1), {grad: mine})
        first[:] = -1.0  # the taken array is the caller's now
        np.testing.assert_array_equal(sess.run(acc.take_grad(1)), [100.0, 100.0, 100.0])
    np.testing.assert_array_equal(mine, [100.0, 100.0, 100.0])


def test_a_gradient_of_another_dtype_is_converted_and_added():
    res = ConditionalAccumulator("acc", tf.float32, [2], "SUM")
    held = begin(res, np.array([0.1, 0.2]))  # float64, as a kernel upstream might give
    end(res, *held)
    held = begin(res, [1, 2])
    end(res, *held)
    finished = []
    res.try_attempt(TAKE, None, finished.append, res.run_take, "cancelled", 2)
    total = finished[0].value()
    assert total.dtype == np.float32
    np.testing.assert_array_equal(total, np.float32([0.1, 0.2]) + np.float32([1, 2]))


def test_shapes_are_checked_while_another_gradient_is_being_added():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[None], reduction_type="SUM")
    grad = tf.placeholder(tf.float32, [None])
    apply = acc.apply_grad(grad)
    with tf.Session() as sess:
        res = resource(sess, acc)
        held = begin(res, np.ones(3, np.float32))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"expected \[3\], got \[2\]"):
            sess.run(apply, {grad: [1.0, 2.0]})
        assert sess.run(acc.num_accumulated()) == 1
        end(res, *held)
        np.testing.assert_array_equal(sess.run(acc.take_grad(1)), [1.0, 1.0, 1.0])


def test_a_held_step_is_offered_the_take_only_when_its_adds_are_done():
    class HeldStep:  # what a stepper's held step looks like to a resource
        defer_attempts = True
        cancellation = None

    res = ConditionalAccumulator("acc", tf.float32, [2], "SUM")
    end(res, *begin(res, np.ones(2, np.float32)))
    held = begin(res, np.full(2, 5, np.float32))
    arrived = []
    res.try_attempt(TAKE, HeldStep(), arrived.append, res.run_take, "cancelled", 2,
                    ready=res.take_ready)  # fmt: skip
    assert len(arrived) == 1 and isinstance(arrived[0], Offer)  # 2 of 2: ready
    arrived.pop().run_offered_attempt()  # the take happens, its result is not in yet
    assert not arrived and res.counter == 0 and res.global_step == 1
    end(res, *held)
    assert len(arrived) == 1 and isinstance(arrived[0], Offer)  # offered again
    arrived.pop().run_offered_attempt()
    np.testing.assert_array_equal(arrived[0].value(), [6.0, 6.0])


def test_a_take_whose_step_ends_while_its_gradients_are_added_has_still_happened():
    # As when TF's take completes and its step then fails: the step moved on.
    acc = tf.ConditionalAccumulator(tf.float32, shape=[1])
    grad = tf.placeholder(tf.float32, [1])
    with tf.Session() as sess:
        res = resource(sess, acc)
        held = begin(res, np.ones(1, np.float32))
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(acc.take_grad(1), options=tf.RunOptions(timeout_in_ms=50))
        assert res.num_waiting(TAKE) == 0 and res.global_step == 1
        end(res, *held)
        sess.run(acc.apply_grad(grad, local_step=1), {grad: [7.0]})
        np.testing.assert_array_equal(sess.run(acc.take_grad(1)), [7.0])


def test_many_threads_with_stale_gradients_mixed_in_take_the_mean_of_the_fresh_ones():
    producers, per_producer, size = 8, 6, 50_000  # large enough for numpy to drop the GIL
    acc = tf.ConditionalAccumulator(tf.float32, shape=[size])  # MEAN
    grad = tf.placeholder(tf.float32, [size])
    step = tf.placeholder(tf.int64, [])
    rng = np.random.default_rng(3)
    # Integer values: any order of additions gives the same sum, exactly.
    grads = rng.integers(-50, 50, size=(producers, per_producer, size)).astype(np.float32)
    steps = rng.integers(3, 8, size=(producers, per_producer))  # fresh iff >= 5
    with tf.Session() as sess:
        put = sess.make_callable(acc.apply_grad(grad, local_step=step), [grad, step])
        sess.run(acc.set_global_step(5))
        start = threading.Barrier(producers)

        def produce(p):
            start.wait(WAIT)
            for i in range(per_producer):
                put(grads[p, i], steps[p, i])

        threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
        for t in threads:
            t.start()
        join(threads)
        fresh = grads[steps >= 5]
        assert 0 < len(fresh) < producers * per_producer
        assert sess.run(acc.num_accumulated()) == len(fresh)
        got = sess.run(acc.take_grad(len(fresh)))
    np.testing.assert_array_equal(got, np.mean(fresh, axis=0))


def test_producers_and_a_taker_running_at_once_lose_and_split_no_gradient():
    producers, per_producer, size = 4, 30, 100_000
    acc = tf.ConditionalAccumulator(tf.float32, shape=[size], reduction_type="SUM")
    grad = tf.placeholder(tf.float32, [size])
    required = tf.placeholder(tf.int32, [])
    rng = np.random.default_rng(5)
    grads = rng.integers(0, 8, size=(producers, size)).astype(np.float32)
    grads[:, : producers + 1] = 0.0
    grads[:, 0] = 1.0  # counts the gradients in a take
    grads[np.arange(producers), 1 + np.arange(producers)] = 1.0  # counts each producer's
    with tf.Session() as sess:
        put = sess.make_callable(acc.apply_grad(grad, local_step=1 << 40), [grad])
        take = sess.make_callable(acc.take_grad(required), [required])

        def produce(p):
            for _ in range(per_producer):
                put(grads[p])

        threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
        for t in threads:
            t.start()
        taken, count, total = [], 0, producers * per_producer
        while count < total:
            taken.append(take(min(producers, total - count)))
            count += int(taken[-1][0])
        join(threads)
    assert count == total
    for got in taken:  # whole gradients only: so many of each producer's, nothing else
        per = got[1 : producers + 1]
        expected = (per.astype(np.float64) @ grads.astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.sum(taken, axis=0), per_producer * grads.sum(axis=0))
