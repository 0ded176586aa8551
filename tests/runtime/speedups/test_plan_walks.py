"""Tests for the walks of minitf.runtime.core.plan: kernels with buffers and fused chains.

Pinned behaviour: from a plan's second run on, the straight walk reuses the
arrays its kernels wrote in the step before (when nothing holds them any
more) and runs ``MatMul`` → bias → ``Relu`` and ``MatMul`` → ``ReluGrad``
chains as one kernel, yet every value is bit for bit what the ops compute one
by one (the expected values below are numpy written out op by op), a value
the caller holds is never written again, the graph, traces and the stepper
still see every op, and a steady training step allocates almost nothing.
"""

import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.core.scheduler import RUN, FifoScheduler

pytestmark = pytest.mark.timeout(120)

N, D, H, C = 16, 64, 32, 5


def _mlp(batch=None, inputs=D, hidden=H, classes=C, seed=0):
    """A relu MLP trained by plain SGD, as TF1 code writes it; returns its pieces."""
    rng = np.random.default_rng(seed)
    w1_val = (rng.standard_normal((inputs, hidden)) * 0.1).astype(np.float32)
    w2_val = (rng.standard_normal((hidden, classes)) * 0.1).astype(np.float32)
    x = tf.placeholder(tf.float32, [batch, inputs], name="x")
    y = tf.placeholder(tf.int64, [batch], name="y")
    w1 = tf.Variable(w1_val, name="w1")
    b1 = tf.Variable(tf.zeros([hidden]), name="b1")
    w2 = tf.Variable(w2_val, name="w2")
    b2 = tf.Variable(tf.zeros([classes]), name="b2")
    hidden_t = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(hidden_t, w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    return x, y, (w1, b1, w2, b2), (w1_val, w2_val), train


def _numpy_training(x, labels, w1, w2, steps, lr=np.float32(0.01)):
    """The MLP's SGD steps in numpy, in the order and with the ufuncs of the graph's ops."""
    w1, w2 = w1.copy(), w2.copy()
    b1, b2 = np.zeros(w1.shape[1], np.float32), np.zeros(w2.shape[1], np.float32)
    lr = np.array(lr, np.float32)
    n = x.shape[0]
    rows = np.arange(n)
    for _ in range(steps):
        relu = np.maximum(x @ w1 + b1, 0)
        logits = relu @ w2 + b2
        shifted = logits - logits.max(axis=-1, keepdims=True)
        exps = np.exp(shifted)
        sums = exps.sum(axis=-1, keepdims=True)
        backprop = exps / sums
        backprop[rows, labels] -= 1
        # d mean / d loss_i = 1 / n, broadcast, then through the cross-entropy.
        per_example = np.ones(n, np.float32) / np.float32(n)
        dlogits = per_example[:, None] * backprop
        db2 = dlogits.sum(axis=(0,), keepdims=True).reshape(-1)
        da = dlogits @ w2.T
        dw2 = relu.T @ dlogits
        dh = da * (relu > 0)
        db1 = dh.sum(axis=(0,), keepdims=True).reshape(-1)
        dw1 = x.T @ dh
        w1, b1 = w1 - dw1 * lr, b1 - db1 * lr
        w2, b2 = w2 - dw2 * lr, b2 - db2 * lr
    return w1, b1, w2, b2


def _batch(seed=1, n=N, inputs=D, classes=C):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((n, inputs)).astype(np.float32),
        rng.integers(0, classes, size=n).astype(np.int64),
    )


def _plan_of(sess):
    (plan,) = [p for p in sess._plans.values() if p.walks is not None and p.walks.chains]
    return plan


def test_training_steps_give_the_bits_of_the_ops_computed_one_by_one():
    x, y, variables, (w1, w2), train = _mlp()
    data, labels = _batch()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        step = sess.make_callable(train, [x, y])
        for _ in range(6):  # the first step walks the plan, the others its walks
            step(data, labels)
        trained = sess.run(list(variables))
    expected = _numpy_training(data, labels, w1, w2, steps=6)
    for got, want in zip(trained, expected):
        assert got.tobytes() == want.tobytes()


def test_the_plan_fuses_the_layers_and_the_relu_gradient_but_the_graph_keeps_its_ops():
    x, y, _, _, train = _mlp()
    init = tf.global_variables_initializer()
    graph = tf.get_default_graph()
    ops_before = [op.name for op in graph.get_operations()]
    data, labels = _batch()
    with tf.Session() as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train, {x: data, y: labels})
        chains = {tuple(op.type for op in c.ops): c.epilogue for c in _plan_of(sess).walks.chains}
    assert chains == {
        ("MatMul", "AddV2", "Relu"): ("BiasAdd", "Relu"),
        ("MatMul", "AddV2"): ("BiasAdd",),
        ("MatMul", "Identity", "ReluGrad"): ("ReluGrad",),
    }
    assert [op.name for op in graph.get_operations()] == ops_before


def test_a_traced_step_and_a_watching_scheduler_still_see_every_op():
    x, y, _, _, train = _mlp()
    data, labels = _batch()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train, {x: data, y: labels})
        plan = _plan_of(sess)
        planned = sorted(op.name for op in plan.ops)
        # A trace also lists the folded constants the step reads, as TF's Consts.
        folded = [op.name for op, _ in plan.folded_frontier]
        metadata = tf.RunMetadata()
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        sess.run(train, {x: data, y: labels}, options=options, run_metadata=metadata)
    traced = sorted(
        n["node_name"] for d in metadata.step_stats["dev_stats"] for n in d["node_stats"]
    )
    assert traced == sorted(planned + folded)
    assert {"MatMul", "add", "Relu", "gradients/Relu_grad/ReluGrad"} <= set(traced)

    class Watching(FifoScheduler):
        observes_ops = True

        def __init__(self):
            self.ran = []

        def next_move(self, execution):
            move = super().next_move(execution)
            if move is not None and move[0] == RUN:
                self.ran.append(execution.steps[move[1]].op.name)
            return move

    watching = Watching()
    with tf.Session(scheduler=watching) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            watching.ran.clear()
            sess.run(train, {x: data, y: labels})
            assert sorted(watching.ran) == planned


def _layer():
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    w = tf.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4), name="w")
    b = tf.Variable(np.array([0.5, -0.5, 0.25, 0.0], np.float32), name="b")
    return x, w, b, tf.nn.relu(tf.matmul(x, w) + b)


def _relu_layer(x, w, b):
    return np.maximum(x @ w + b, 0)


def test_a_bias_updated_between_the_product_and_the_add_is_read_after_the_update():
    x, _, b, _ = _layer()
    w = tf.Variable(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4), name="weights")
    product = tf.matmul(x, w)  # the walk reads the bias's variable before the product
    with tf.control_dependencies([product]):
        bump = tf.assign_add(b, tf.ones([4]))
    with tf.control_dependencies([bump]):
        out = tf.nn.relu(product + b)
    feed = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)
    with tf.Session() as sess:
        sess.run([b.initializer, w.initializer])
        w_val, b_val = sess.run([w, b])
        got = [sess.run(out, {x: feed}) for _ in range(3)]
    for i, value in enumerate(got):
        np.testing.assert_array_equal(value, _relu_layer(feed, w_val, b_val + (i + 1)))


def test_a_value_the_caller_holds_is_never_written_again():
    x, w, b, out = _layer()
    feeds = [np.full((3, 6), v, np.float32) for v in (1.0, -2.0, 3.0, 0.5)]
    with tf.Session() as sess:
        sess.run(b.initializer)
        w_val, b_val = sess.run([w, b])
        results = [sess.run(out, {x: f}) for f in feeds]
    for f, r in zip(feeds, results):
        np.testing.assert_array_equal(r, _relu_layer(f, w_val, b_val))
    assert len({id(r) for r in results}) == len(results)


def test_an_array_is_written_again_once_the_caller_lets_it_go(speedups_on):
    x, _, b, out = _layer()
    feed = np.ones((3, 6), np.float32)
    with tf.Session() as sess:
        sess.run(b.initializer)
        sess.run(out, {x: feed})  # the first run walks the plan without buffers
        second = sess.run(out, {x: feed})
        kept_by_the_plan = weakref.ref(second)
        del second
        third = sess.run(out, {x: feed * 2})
        assert kept_by_the_plan() is third
        held = third
        fourth = sess.run(out, {x: feed})
        assert fourth is not held
        np.testing.assert_array_equal(held, sess.run(out, {x: feed * 2}))


def test_steps_of_one_plan_on_several_threads_never_share_a_buffer():
    x, w, b, out = _layer()
    errors = []
    with tf.Session() as sess:
        sess.run(b.initializer)
        w_val, b_val = sess.run([w, b])
        run = sess.make_callable(out, [x])

        def worker(value):
            feed = np.full((64, 6), value, np.float32)
            want = _relu_layer(feed, w_val, b_val)
            try:
                for _ in range(300):
                    np.testing.assert_array_equal(run(feed), want)
            except AssertionError as e:
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(v,)) for v in (1.0, -1.0, 2.0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_a_chain_whose_kernel_declines_its_inputs_runs_op_by_op_after_the_chains_before_it():
    x, w, b, first = _layer()
    # ReluGrad of a product, with features that broadcast to a larger shape:
    # numpy's kernel takes them, the fused kernel (which writes in place) cannot.
    features = tf.placeholder(tf.float32, name="features")
    product = tf.matmul(x, w, name="product")
    masked = (
        tf.get_default_graph()
        .create_op("ReluGrad", [product, features], [tf.float32], name="masked")
        .outputs[0]
    )
    total = tf.reduce_sum(first) + tf.reduce_sum(masked)
    a = np.linspace(-1, 1, 18, dtype=np.float32).reshape(3, 6)
    f = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    with tf.Session() as sess:
        sess.run(b.initializer)
        w_val, b_val = sess.run([w, b])
        for _ in range(3):
            got_first, got_masked, got_total = sess.run([first, masked, total], {x: a, features: f})
        chains = [[op.name for op in c.ops] for c in _plan_of(sess).walks.chains]
    assert ["product", "masked"] in chains
    want_first = _relu_layer(a, w_val, b_val)
    want_masked = (a @ w_val) * (f > 0)
    np.testing.assert_array_equal(got_first, want_first)
    np.testing.assert_array_equal(got_masked, want_masked)
    assert got_total == np.float32(want_first.sum()) + np.float32(want_masked.sum())


def test_a_bias_of_the_wrong_size_fails_in_every_run_with_the_error_of_the_add():
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    w = tf.constant(np.ones((6, 4), np.float32))
    bias = tf.placeholder(tf.float32, [None], name="bias")
    out = tf.nn.relu(tf.add(tf.matmul(x, w), bias, name="biased"))
    feed = {x: np.ones((2, 6), np.float32)}
    with tf.Session() as sess:
        for _ in range(2):
            sess.run(out, {**feed, bias: np.zeros(4, np.float32)})
        for _ in range(2):
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(out, {**feed, bias: np.zeros(3, np.float32)})
            assert info.value.op.name == "biased"
        np.testing.assert_array_equal(
            sess.run(out, {**feed, bias: np.ones(4, np.float32)}), np.full((2, 4), 7.0)
        )


def test_a_steady_training_step_allocates_no_more_than_one_numpy_iteration_buffer(speedups_on):
    # The benchmark's MLP (784-128-10, batch 64). Walked without buffers, a
    # step holds every value it computes until it ends: about 1.6 MB (the
    # 200 KB input gradient, the 400 KB weight gradient and the update's
    # 400 KB product among them). With buffers, what a step still allocates is
    # what numpy allocates inside a ufunc — one 8192-element iteration buffer
    # (32 KB of float32) for the broadcast bias adds and the boolean cast of
    # ReluGrad's mask, one at a time — the small results of the shape
    # arithmetic of the mean's gradient (tens of bytes each), the softmax's
    # 64×10 values, and Python objects (arrays' headers, tuples, the step's
    # context). 64 KB bounds that with room to spare, and is 25 times less than
    # the step without buffers.
    x, y, _, _, train = _mlp(inputs=784, hidden=128, classes=10)
    data, labels = _batch(n=64, inputs=784, classes=10)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        step = sess.make_callable(train, [x, y])
        for _ in range(5):
            step(data, labels)
        tracemalloc.start()
        try:
            peaks = []
            for _ in range(5):
                tracemalloc.reset_peak()
                start = tracemalloc.get_traced_memory()[0]
                step(data, labels)
                peaks.append(tracemalloc.get_traced_memory()[1] - start)
        finally:
            tracemalloc.stop()
    assert min(peaks) < 64 * 1024, peaks


def test_a_plan_that_keeps_no_buffers_and_fuses_nothing_keeps_no_walks_and_still_runs():
    # A scalar chain: every output is below the size worth a buffer, and no
    # matmul is there to fuse, so each walk would be the plan itself.
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float32, [])
        out = (a + 1.0) * 3.0 - 2.0
        big = tf.placeholder(tf.float32, [4096])
        doubled = big * 2.0
        with tf.Session() as sess:
            run_small = sess.make_callable(out, [a])
            run_big = sess.make_callable(doubled, [big])
            for value in (np.float32(0.5), np.float32(-4.0)):
                assert run_small(value) == (value + np.float32(1)) * np.float32(3) - np.float32(2)
            values = np.arange(4096, dtype=np.float32)
            for _ in range(3):  # a buffer is kept from the second run on
                np.testing.assert_array_equal(run_big(values), values * np.float32(2))
            walks = {tuple(op.name for op in p.ops): p.walks for p in sess._plans.values()}
    small = next(w for names, w in walks.items() if out.op.name in names)
    large = next(w for names, w in walks.items() if doubled.op.name in names)
    assert small is None
    assert large is not None  # a 16 KB output is worth a buffer
