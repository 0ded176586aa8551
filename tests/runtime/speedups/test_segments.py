"""Segmented walks: a step with ops that wait runs straight between their completions.

The expected values are computed by hand (numpy); the structure expected of
the segments is the rule of `minitf.runtime.speedups.segments.Segments`: an op runs in the
segment of the waiting ops (``_Recv`` s, dequeues, ``take_grad`` s) it
depends on.
"""

import threading

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _plans(server):
    return [registered.plan for registered in server.worker._registered.values()]


def test_async_sgd_on_a_ps_sends_first_and_updates_when_the_gradient_comes(ps_and_worker):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.array([1.0, -2.0], np.float32), name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [2])
        loss = tf.reduce_sum(tf.square(w * x))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    x_val = np.array([3.0, 0.5], np.float32)
    expected = np.array([1.0, -2.0], np.float32)
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(w.initializer)
        for _ in range(3):
            sess.run(train, {x: x_val})
            # d/dw sum((w x)^2) = 2 w x^2, by hand
            expected = expected - np.float32(0.1) * (np.float32(2) * expected * x_val * x_val)
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-6)
    ps_plan = [p for p in _plans(ps_and_worker["ps"]) if p.segments is not None][-1]
    (first_mask, first, _), (grad_mask, after, _) = ps_plan.segments.order
    everything = (1 << len(ps_plan.segments.waits)) - 1
    assert (first_mask, grad_mask) == (0, everything)
    # w leaves before the gradient can come back; the update waits for it.
    assert [e[5].type for e in first if e[5].type == "_Send"] == ["_Send"]
    assert [e[5].type for e in after] == ["ApplyGradientDescent"]


def test_a_tensor_that_goes_out_and_back_in_one_step_does_not_wait_for_itself(ps_and_worker):
    # worker: y = 2 p (from the ps), sent to the ps; ps: z = y + 10, sent back;
    # worker: out = z * p. The worker's second segment needs z, which the ps
    # can only send once the first segment's y has left.
    with tf.device("/job:ps/task:0"):
        p = tf.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="p")
    with tf.device("/job:worker/task:0"):
        y = p.value() * 2.0
    with tf.device("/job:ps/task:0"):
        z = y + 10.0
    with tf.device("/job:worker/task:0"):
        out = z * p.value()
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(p.initializer)
        got = sess.run(out, options=tf.RunOptions(timeout_in_ms=20000))
    p_val = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(got, (p_val * 2 + 10) * p_val)
    worker_plan = [q for q in _plans(ps_and_worker["worker"]) if q.segments is not None][-1]
    masks = [mask for mask, _, _ in worker_plan.segments.order]
    assert len(worker_plan.segments.waits) == 2
    assert masks == sorted(masks, key=int.bit_count)  # subsets first
    assert len(masks) == 2  # y's segment (p), then out's (p and z)


def test_a_step_waits_for_a_tensor_that_only_orders_it(ps_and_worker):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="counter")
        bump = tf.assign_add(v, 1.0)
    with tf.device("/job:worker/task:0"), tf.control_dependencies([bump]):
        after = tf.constant(5.0) * 2.0
    with tf.Session(ps_and_worker["worker"].target) as sess:
        sess.run(v.initializer)
        for _ in range(3):
            assert sess.run(after) == 10.0
        assert sess.run(v) == 3.0
    worker_plan = [q for q in _plans(ps_and_worker["worker"]) if q.segments is not None][-1]
    assert len(worker_plan.segments.waits) == 1


def test_a_segmented_step_past_its_deadline_names_the_tensor_it_waits_for(ps_and_worker):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(1, tf.float32, shapes=[], name="empty_q")
        taken = q.dequeue()  # nobody enqueues: the ps waits
    with tf.device("/job:worker/task:0"):
        out = taken + 1.0
    with tf.Session(ps_and_worker["worker"].target) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError) as raised:
            sess.run(out, options=tf.RunOptions(timeout_in_ms=300))
    assert "empty_q" in str(raised.value) or "waits for" in str(raised.value)


def _mlp_steps(target: str | None, steps: int) -> list[np.ndarray]:
    """Trains a 6-16-3 MLP (variables on the ps, the model on the worker); returns its weights."""
    rng = np.random.default_rng(5)
    x_val = rng.standard_normal((32, 6)).astype(np.float32)
    y_val = rng.integers(0, 3, 32)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0" if target else None):
            w1 = tf.Variable(rng.standard_normal((6, 16)).astype(np.float32), name="w1")
            b1 = tf.Variable(np.zeros(16, np.float32), name="b1")
            w2 = tf.Variable(rng.standard_normal((16, 3)).astype(np.float32), name="w2")
        with tf.device("/job:worker/task:0" if target else None):
            x = tf.placeholder(tf.float32, [None, 6])
            y = tf.placeholder(tf.int64, [None])
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(hidden, w2)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
            train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(target or "", graph=graph) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run(train, {x: x_val, y: y_val})
        return sess.run([w1, b1, w2])


def test_a_segmented_model_with_buffers_and_fused_kernels_trains_as_a_local_session(ps_and_worker):
    local = _mlp_steps(None, 6)
    remote = _mlp_steps(ps_and_worker["worker"].target, 6)
    for a, b in zip(local, remote):
        np.testing.assert_array_equal(a, b)  # bit for bit
    worker_plan = [q for q in _plans(ps_and_worker["worker"]) if q.segments is not None][-1]
    # A segment with nothing to buffer or fuse has no walks (None).
    chains = [c for _, _, walks in worker_plan.segments.order if walks for c in walks.chains]
    fused = [[op.type for op in chain.ops] for chain in chains]
    assert ["MatMul", "AddV2", "Relu"] in fused or ["MatMul", "Add", "Relu"] in fused


def test_a_local_dequeue_that_waits_runs_the_ops_after_it_when_the_enqueue_comes():
    q = tf.FIFOQueue(4, tf.float32, shapes=[2], name="q")
    item = tf.placeholder(tf.float32, [2])
    enqueue = q.enqueue(item)
    scale = tf.placeholder(tf.float32, [2])
    before = scale * 2.0  # pure, read only after the dequeue: it sinks to its reader's segment
    pair = q.dequeue_many(2)
    out = tf.reduce_sum(pair * before, axis=0)
    results, started = [], threading.Event()
    with tf.Session() as sess:

        def consume():
            started.set()
            results.append(sess.run(out, {scale: [1.0, 10.0]}))

        consumer = threading.Thread(target=consume)
        consumer.start()
        assert started.wait(10)
        sess.run(enqueue, {item: [1.0, 2.0]})
        sess.run(enqueue, {item: [3.0, 4.0]})
        consumer.join(30)
        plan = next(p for p in sess._plans.values() if pair.op in p.ops)
    # ([1, 2] + [3, 4]) * [2, 20], by hand
    np.testing.assert_array_equal(results[0], [8.0, 120.0])
    (first, ran_first, _), (after, ran_after, _) = plan.segments.order
    assert (first, after) == (0, 1)
    assert [entry[5].type for entry in ran_first] == ["FIFOQueueV2"]  # what the dequeue reads
    assert {before.op, out.op} <= {entry[5] for entry in ran_after}
    assert [plan.steps[i].op.type for i, _, _ in plan.segments.waits] == ["QueueDequeueManyV2"]
