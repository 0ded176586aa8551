"""tf.train.SyncReplicasOptimizer builds TF 1.15's graph and runs TF's protocol.

Graph tests build a worker's graph under ``replica_device_setter`` and compare
it with what TF builds (shared/spec/tf1_semantics.md §6.2). Protocol tests run
between-graph replicas of a tiny linear model against in-process servers (two
ps tasks, two or three workers). Some drive the chief's ``sync_op`` by hand,
so that every update happens at a known point; others port TF's own
``test2Workers`` and ``test3Workers1Backup`` with the chief's queue runner
running, as the hook starts it. Expected values come from numpy or from TF's
tests.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import SyncRecord
from minitf.runtime.distributed.launcher import free_ports

pytestmark = pytest.mark.timeout(120)

LR = 0.1
W0 = np.array([0.5, -1.0, 2.0], np.float32)
B0 = np.float32(0.25)


def _two_ps_spec(hosts=("a:1", "b:1", "c:1", "d:1"), workers=2):
    hosts = list(hosts)
    return tf.train.ClusterSpec({"ps": hosts[:2], "worker": hosts[2 : 2 + workers]})


def _start_servers(workers: int):
    spec = _two_ps_spec([f"127.0.0.1:{p}" for p in free_ports(2 + workers)], workers)
    counts = {"ps": 2, "worker": workers}
    running = {
        f"{job}{i}": tf.train.Server(spec, job_name=job, task_index=i)
        for job in ("ps", "worker")
        for i in range(counts[job])
    }
    return spec, running


def _servers_while_the_test_runs(workers: int):
    spec, running = _start_servers(workers)
    yield spec, running
    for server in running.values():
        server.stop()


@pytest.fixture
def servers():
    """Two ps tasks and two worker tasks, each an in-process server on a free loopback port."""
    yield from _servers_while_the_test_runs(2)


@pytest.fixture
def three_workers():
    """Two ps tasks and three worker tasks."""
    yield from _servers_while_the_test_runs(3)


def _accumulators(opt):
    return opt._accumulator_list


class Replica:
    """One worker's own graph and session: a linear model ``x·w + b`` trained in sync.

    The loss is ``0.5 * mean((x·w + b - y)^2)``; `linear_grads` is its gradient by hand.
    """

    def __init__(self, spec, server, index, replicas_to_aggregate=2, num_tokens=-1, **kwargs):
        self.index = index
        self.graph = tf.Graph()
        setter = tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{index}", cluster=spec
        )
        with self.graph.as_default(), tf.device(setter):
            self.x = tf.placeholder(tf.float32, [None, 3], name="x")
            self.y = tf.placeholder(tf.float32, [None], name="y")
            self.w = tf.Variable(W0, name="w")  # ps task 0
            self.b = tf.Variable(B0, name="b")  # ps task 1
            prediction = tf.reduce_sum(self.x * self.w, axis=1) + self.b
            loss = 0.5 * tf.reduce_mean(tf.square(prediction - self.y))
            self.global_step = tf.train.get_or_create_global_step()
            self.opt = tf.train.SyncReplicasOptimizer(
                tf.train.GradientDescentOptimizer(LR), replicas_to_aggregate, **kwargs
            )
            self.train_op = self.opt.minimize(loss, global_step=self.global_step)
            self.apply_ops = list(self.train_op.op.inputs[1].op.control_inputs)
            (self.sync_op,) = self.opt.get_chief_queue_runner().enqueue_ops
            self.init_tokens_op = self.opt.get_init_tokens_op(num_tokens)
            self.local_step = self.graph.get_tensor_by_name("sync_rep_local_step:0")
            self.num_accumulated = []
            for accum, device in _accumulators(self.opt):
                with tf.device(device):
                    self.num_accumulated.append(accum.num_accumulated())
            self.init_op = tf.global_variables_initializer()
            self.local_init_op = tf.local_variables_initializer()
        self.sess = tf.Session(server.target, graph=self.graph)

    def start(self):
        """What the chief, or another worker, runs before its first step (no queue runner)."""
        self.sess.run(self.local_init_op)
        if self.index == 0:
            self.sess.run(self.init_op)
            self.sess.run(self.opt.chief_init_op)
            self.sess.run(self.init_tokens_op)
        else:
            self.sess.run(self.opt.local_step_init_op)

    def step(self, batch):
        """One worker step (offer the gradient, take a token); returns the token."""
        feed = {self.x: batch[0], self.y: batch[1]}
        return int(self.sess.run(self.train_op, feed))

    def offer(self, batch):
        """Only the ``apply_grad`` ops of a step: the gradient without the token."""
        self.sess.run(self.apply_ops, {self.x: batch[0], self.y: batch[1]})

    def state(self):
        """(w, b, global step, gradients accumulated in w's and b's accumulators)."""
        w, b, step, counts = self.sess.run([self.w, self.b, self.global_step, self.num_accumulated])
        return w, b, int(step), [int(c) for c in counts]


@pytest.fixture
def replicas(servers):
    """A function making the two replicas (worker 0 is the chief), started."""
    made = []

    def make(**kwargs):
        spec, running = servers
        pair = [Replica(spec, running[f"worker{i}"], i, **kwargs) for i in range(2)]
        made.extend(pair)
        for replica in pair:
            replica.start()
        return pair

    yield make
    for replica in made:
        replica.sess.close()


def batches(seed, n=4):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = rng.normal(size=n).astype(np.float32)
    return x, y


def linear_grads(w, b, batch):
    """The gradient of ``0.5 * mean((x·w + b - y)^2)`` in float64: ``(x^T r / n, mean(r))``."""
    x, y = (np.asarray(a, np.float64) for a in batch)
    r = x @ np.asarray(w, np.float64) + float(b) - y
    return x.T @ r / len(y), r.mean()


def sgd_step(w, b, batches_seen):
    """One synchronous update: the variables minus LR times the mean of the workers' gradients."""
    grads = [linear_grads(w, b, batch) for batch in batches_seen]
    mean_w = np.mean([g[0] for g in grads], axis=0)
    mean_b = np.mean([g[1] for g in grads])
    return w - LR * mean_w, b - LR * mean_b


def run_in_threads(*calls):
    """Runs each ``(fn, arg)`` in its own thread; returns results once all have joined."""
    results, errors = [None] * len(calls), []

    def call(i, fn, arg):
        try:
            results[i] = fn(arg)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i, *c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    return threads, results, errors


def join_all(threads, errors):
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


# -- the graph ---------------------------------------------------------------------------------


def _build_on_worker_1(replicas_to_aggregate=2, total_num_replicas=None, num_workers=2):
    """A two-layer MLP (4 variables) under the device setter of worker 1 of a 2-ps cluster."""
    from minitf.examples.async_mlp import build_mlp

    setter = tf.train.replica_device_setter(
        worker_device="/job:worker/task:1", cluster=_two_ps_spec()
    )
    with tf.device(setter):
        model = build_mlp()
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.AdamOptimizer(0.01), replicas_to_aggregate, total_num_replicas
        )
        train_op = opt.minimize(model["loss"], global_step=global_step)
    return opt, train_op, global_step


def _upstream(op, seen=None) -> set:
    """Every op ``op`` depends on, through data and control edges."""
    seen = set() if seen is None else seen
    for dep in list(op.control_inputs) + [t.op for t in op.inputs]:
        if dep not in seen:
            seen.add(dep)
            _upstream(dep, seen)
    return seen


def test_the_class_is_tf_train_sync_replicas_optimizer_with_tfs_defaults():
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 3)
    assert isinstance(opt, tf.train.Optimizer)
    assert opt.get_name() == "sync_replicas"
    assert (opt._replicas_to_aggregate, opt._total_num_replicas) == (3, 3)
    assert not hasattr(opt, "get_clean_up_op")  # only the pre-1.1 optimizer had it


def test_one_accumulator_per_variable_on_its_ps_task_shared_by_variable_name():
    opt, _, _ = _build_on_worker_1()
    variables = tf.trainable_variables()
    # Round robin over the two ps tasks in creation order (weights, biases, weights, biases).
    assert [v.device for v in variables] == [f"/job:ps/task:{i % 2}" for i in range(4)]
    assert len(_accumulators(opt)) == len(variables)
    for (accum, device), var in zip(_accumulators(opt), variables):
        op = accum.accumulator_ref.op
        assert device == var.device == op.device
        assert op.type == "ResourceConditionalAccumulator"
        assert op.name.startswith("sync_replicas/conditional_accumulator")
        assert op.get_attr("shared_name") == var.name + "/grad_accum"
        assert op.get_attr("shape") == var.get_shape()
    assert variables[0].name + "/grad_accum" == "hidden/weights:0/grad_accum"


def test_token_and_dummy_queues_live_with_the_global_step():
    opt, _, global_step = _build_on_worker_1()
    assert global_step.device == "/job:ps/task:0"  # the fifth variable in the round robin
    graph = tf.get_default_graph()
    tokens = graph.get_operation_by_name("sync_token_q")
    dummy = graph.get_operation_by_name("dummy_queue")
    assert (tokens.get_attr("shared_name"), tokens.get_attr("capacity")) == ("sync_token_q", -1)
    assert tokens.get_attr("component_types") == [tf.int64]
    assert (dummy.get_attr("shared_name"), dummy.get_attr("capacity")) == ("dummy_queue", 1)
    assert dummy.get_attr("component_types") == [tf.int32]
    assert tokens.device == dummy.device == global_step.device
    runner = opt.get_chief_queue_runner()
    (sync_op,) = runner.enqueue_ops
    assert sync_op.type == "QueueEnqueueManyV2" and sync_op.device == global_step.device
    assert runner.queue.queue_ref.op is dummy  # TF 1.15: a stopped chief never closes the tokens


def test_sync_op_fills_the_tokens_from_the_global_step_after_the_update():
    opt, _, global_step = _build_on_worker_1()
    (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
    fill = sync_op.inputs[1].op
    assert fill.type == "Fill" and fill.inputs[1] is global_step.value()
    # The control dependency sits on the Fill's `dims` (TF's rule: an op whose
    # input was made inside the block is ordered through that input).
    updates = [op for op in _upstream(fill) if op.type == "AssignAdd"]
    assert [op.inputs[0].op for op in updates] == [global_step.op]


def test_local_step_is_a_local_variable_on_the_worker_even_under_the_device_setter():
    opt, _, _ = _build_on_worker_1()
    local_step = opt._local_step
    assert local_step.name == "sync_rep_local_step:0"
    assert local_step.device == "/job:worker/task:1"
    assert local_step in tf.local_variables()
    assert local_step not in tf.global_variables()
    assert local_step.dtype.base_dtype == tf.int64  # the global step's dtype
    init = opt.local_step_init_op.op
    assert init.type == "Assign" and init.device == "/job:worker/task:1"


def test_a_worker_step_offers_every_gradient_then_takes_a_token():
    opt, train_op, global_step = _build_on_worker_1()
    assert train_op.op.type == "Assign" and train_op.op.device == "/job:worker/task:1"
    dequeue = train_op.op.inputs[1].op
    assert dequeue.name == "sync_token_q_Dequeue"
    assert dequeue.device == global_step.device
    applies = list(dequeue.control_inputs)
    assert len(applies) == 4
    for apply_op, (_, device) in zip(applies, _accumulators(opt)):
        assert apply_op.type == "ResourceAccumulatorApplyGradient"
        assert apply_op.device == device


def test_chief_init_sets_every_accumulator_step_on_its_device():
    opt, _, _ = _build_on_worker_1()
    set_steps = [
        op
        for op in tf.get_default_graph().get_operations()
        if op.type == "ResourceAccumulatorSetGlobalStep"
    ]
    assert [op.name for op in set_steps] == [
        "sync_replicas/SetGlobalStep",
        "sync_replicas/SetGlobalStep_1",
        "sync_replicas/SetGlobalStep_2",
        "sync_replicas/SetGlobalStep_3",
    ]
    assert [op.device for op in set_steps] == [d for _, d in _accumulators(opt)]

    reached = _upstream(opt.chief_init_op)
    assert set(set_steps) <= reached
    assert opt.local_step_init_op.op in reached


def test_tokens_per_step_is_the_larger_of_workers_and_replicas_to_aggregate():
    for replicas, total, expected in [(2, None, 2), (2, 3, 3), (3, 1, 3)]:
        inner = tf.train.GradientDescentOptimizer(0.1)
        opt = tf.train.SyncReplicasOptimizer(inner, replicas, total)
        assert opt._tokens_per_step == expected


def test_a_none_gradient_passes_through_without_an_accumulator():
    v, u = tf.Variable(1.0, name="v"), tf.Variable(2.0, name="u")
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
    opt.apply_gradients([(v * 2.0, v), (None, u)], global_step=global_step)
    assert [a.accumulator_ref.op.get_attr("shared_name") for a, _ in _accumulators(opt)] == [
        "v:0/grad_accum"
    ]


def test_a_sparse_gradient_gets_a_sparse_accumulator():
    v = tf.Variable([[3.0], [4.0]], name="v_sparse")
    global_step = tf.train.get_or_create_global_step()
    grad = tf.IndexedSlices(tf.constant([[0.1]]), tf.constant([1]), tf.constant([2, 1]))
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
    opt.apply_gradients([(grad, v)], global_step=global_step)
    ((accum, _),) = _accumulators(opt)
    op = accum.accumulator_ref.op
    assert op.type == "SparseConditionalAccumulator"
    assert op.get_attr("shared_name") == "v_sparse:0/grad_accum"


def test_bad_arguments_raise_what_tf_raises():
    v = tf.Variable(1.0, name="v")
    global_step = tf.train.get_or_create_global_step()

    def new():
        return tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)

    with pytest.raises(ValueError, match="Must supply at least one variable"):
        new().apply_gradients([], global_step)
    with pytest.raises(ValueError, match="Global step is required to check staleness"):
        new().apply_gradients([(tf.constant(1.0), v)], None)
    with pytest.raises(ValueError, match="Unknown grad type!"):
        new().apply_gradients([(np.float32(1.0), v)], global_step)
    opt = new()
    with pytest.raises(ValueError, match=r"Should be called after apply_gradients\(\)"):
        opt.get_chief_queue_runner()
    with pytest.raises(ValueError, match=r"get_init_tokens_op\(\) should be called after"):
        opt.get_init_tokens_op()
    hook = opt.make_session_run_hook(is_chief=True)  # making it early is fine ...
    with pytest.raises(ValueError, match="apply_gradient should be called before using the hook"):
        hook.begin()  # ... using it is not
    opt.apply_gradients([(v * 2.0, v)], global_step)
    with pytest.raises(ValueError, match="already called"):
        opt.apply_gradients([(v * 2.0, v)], global_step)


def test_slots_and_variables_are_the_inner_optimizers():
    v = tf.Variable([1.0, 2.0], name="v")
    global_step = tf.train.get_or_create_global_step()
    inner = tf.train.MomentumOptimizer(0.1, 0.9)
    opt = tf.train.SyncReplicasOptimizer(inner, 2)
    opt.minimize(tf.reduce_sum(v * v), global_step=global_step)
    assert opt.get_slot_names() == inner.get_slot_names() == ["momentum"]
    assert opt.get_slot(v, "momentum") is inner.get_slot(v, "momentum")
    assert opt.variables() == inner.variables()
    assert opt._local_step not in opt.variables()


def test_init_tokens_default_to_replicas_to_aggregate_and_must_cover_the_first_update():
    v = tf.Variable(1.0, name="v")
    global_step = tf.train.get_or_create_global_step()
    # K-batch: 3 gradients per update from 2 workers needs at least one initial token.
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 3, 2)
    opt.apply_gradients([(v * 2.0, v)], global_step)
    with pytest.raises(ValueError, match=r"Too few tokens .*: 0 \(given\) vs 1 \(needed\)"):
        opt.get_init_tokens_op(num_tokens=0)
    assert opt.get_init_tokens_op(num_tokens=1).type == "QueueEnqueueManyV2"
    default = opt.get_init_tokens_op()
    size = opt._sync_token_queue.size()
    with tf.Session() as sess:
        sess.run(global_step.initializer)
        sess.run(default)
        assert sess.run(size) == 3  # R tokens
    backups = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 3)
    backups.apply_gradients([(v * 2.0, v)], global_step)
    assert backups.get_init_tokens_op(num_tokens=0).name == "no_init_tokens"


def test_non_positive_replicas_to_aggregate_fails_in_the_chief_step_as_in_tf():
    # TF does not check the number when building; take_grad's kernel rejects it.
    v = tf.Variable(1.0, name="v")
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 0)
    opt.minimize(v * v, global_step=global_step)
    assert opt.get_init_tokens_op().name == "no_init_tokens"
    (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="num_required must be positive, but was 0"
        ):
            sess.run(sync_op)


# -- the protocol, one move at a time ----------------------------------------------------------


def test_one_update_is_the_variable_minus_lr_times_the_mean_of_the_two_gradients(replicas):
    chief, worker = replicas()
    batch0, batch1 = batches(0), batches(1)
    assert chief.step(batch0) == 0  # the initial tokens carry global step 0
    assert worker.step(batch1) == 0
    chief.sess.run(chief.sync_op)
    w, b, step, counts = worker.state()
    expected_w, expected_b = sgd_step(W0, B0, [batch0, batch1])
    np.testing.assert_allclose(w, expected_w, rtol=1e-5)
    np.testing.assert_allclose(b, expected_b, rtol=1e-5)
    assert step == 1 and counts == [0, 0]


def test_one_gradient_does_not_make_an_update_the_second_does(replicas):
    chief, worker = replicas()
    chief.step(batches(0))
    assert chief.state()[2:] == (0, [1, 1])
    with pytest.raises(tf.errors.DeadlineExceededError):
        chief.sess.run(chief.sync_op, options=tf.RunOptions(timeout_in_ms=200))
    assert chief.state()[2:] == (0, [1, 1])
    worker.step(batches(1))
    chief.sess.run(chief.sync_op)
    assert chief.state()[2:] == (1, [0, 0])


def test_default_tokens_waste_the_second_round_as_tf_test2workers_says(replicas):
    chief, worker = replicas()
    # Round 1 exits on the two initial tokens; the update releases two tokens "1".
    assert [chief.step(batches(10)), worker.step(batches(11))] == [0, 0]
    chief.sess.run(chief.sync_op)
    w1, b1, step, counts = chief.state()
    assert (step, counts) == (1, [0, 0])
    # Round 2: the local steps are still 0, older than the accumulators' step 1:
    # both gradients are dropped and no update is possible; the tokens say 1.
    assert [chief.step(batches(20)), worker.step(batches(21))] == [1, 1]
    w, b, step, counts = chief.state()
    assert (step, counts) == (1, [0, 0])
    np.testing.assert_array_equal(w, w1)
    # Rounds 3 to 5: both workers wait for a token until the chief's update,
    # which waits for both gradients; each update is one global step.
    for k in (2, 3, 4):
        round_batches = [batches(10 * k + 10), batches(10 * k + 11)]
        threads, tokens, errors = run_in_threads(
            (chief.step, round_batches[0]), (worker.step, round_batches[1])
        )
        chief.sess.run(chief.sync_op)
        join_all(threads, errors)
        w, b, step, counts = worker.state()
        assert tokens == [k, k] and step == k and counts == [0, 0]
        if k == 2:  # the first real update after the dropped round uses round 3's batches
            expected_w, expected_b = sgd_step(w1, b1, round_batches)
            np.testing.assert_allclose(w, expected_w, rtol=1e-5)
            np.testing.assert_allclose(b, expected_b, rtol=1e-5)


def test_no_initial_tokens_is_strict_sync_and_wastes_no_gradient(replicas):
    chief, worker = replicas(num_tokens=0)
    w, b = W0.astype(np.float64), np.float64(B0)
    for k in (1, 2, 3):
        round_batches = [batches(10 * k), batches(10 * k + 1)]
        threads, tokens, errors = run_in_threads(
            (chief.step, round_batches[0]), (worker.step, round_batches[1])
        )
        chief.sess.run(chief.sync_op)
        join_all(threads, errors)
        w, b = sgd_step(w, b, round_batches)
        got_w, got_b, step, counts = chief.state()
        assert tokens == [k, k] and step == k and counts == [0, 0]
        np.testing.assert_allclose(got_w, w, rtol=1e-5)
        np.testing.assert_allclose(got_b, b, rtol=1e-5)


def test_a_gradient_older_than_the_accumulator_step_is_not_counted(replicas):
    chief, worker = replicas()
    # The chief (re)starts at global step 5: its init sets the accumulators to 5.
    chief.global_step.load(5, chief.sess)
    chief.sess.run(chief.opt.chief_init_op)
    worker.sess.run(worker.local_init_op)  # the worker's local step is back to 0
    worker.offer(batches(0))
    assert worker.state()[3] == [0, 0]  # local step 0 < 5: dropped
    worker.sess.run(worker.opt.local_step_init_op)
    worker.offer(batches(1))
    assert worker.state()[3] == [1, 1]  # local step 5 >= 5: counted


def _scalar_model(replicas_to_aggregate, total_num_replicas, **kwargs):
    """One variable whose gradient is fed: ``opt.apply_gradients([(g, v)])`` in a local session."""
    v = tf.Variable(10.0, name="v")
    g = tf.placeholder(tf.float32, [], name="g")
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(
        tf.train.GradientDescentOptimizer(1.0), replicas_to_aggregate, total_num_replicas, **kwargs
    )
    train_op = opt.apply_gradients([(g, v)], global_step=global_step)
    (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
    return v, g, global_step, opt, train_op, sync_op


def test_one_worker_aggregating_two_computes_two_batches_per_update():
    # K-batch (N < R): 1 worker, R = 2, the default 2 initial tokens "0".
    v, g, global_step, opt, train_op, sync_op = _scalar_model(2, 1)
    accumulated = _accumulators(opt)[0][0].num_accumulated()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.local_variables_initializer())
        sess.run(opt.chief_init_op)
        sess.run(opt.get_init_tokens_op())
        assert [sess.run(train_op, {g: 1.0}), sess.run(train_op, {g: 3.0})] == [0, 0]
        sess.run(sync_op)
        assert sess.run([v, global_step]) == [10.0 - (1.0 + 3.0) / 2, 1]
        # Run 3 computed against step 0 (its token said 0): dropped.
        assert sess.run(train_op, {g: 100.0}) == 1
        assert sess.run(accumulated) == 0
        assert sess.run(train_op, {g: 5.0}) == 1
        # Run 5's gradient completes update 2, and its token can only come from it.
        threads, tokens, errors = run_in_threads((lambda x: sess.run(train_op, {g: x}), 7.0))
        sess.run(sync_op)  # waits for run 5's gradient
        join_all(threads, errors)
        assert tokens == [2]
        assert sess.run([v, global_step]) == [8.0 - (5.0 + 7.0) / 2, 2]
        # One worker, two batches per update: the second is an extra batch.
        assert SyncRecord(sess).refresh().updates == [
            {"global_step": 1, "applied": [0, 0], "extra": [0], "dropped": [0], "cancelled": []},
            {"global_step": 2, "applied": [0, 0], "extra": [0], "dropped": [], "cancelled": []},
        ]


def test_the_chief_applies_the_moving_averages_after_each_update():
    decay = 0.5
    ema = tf.train.ExponentialMovingAverage(decay)
    v = tf.Variable(10.0, name="v")
    g = tf.placeholder(tf.float32, [], name="g")
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(
        tf.train.GradientDescentOptimizer(1.0),
        1,
        variable_averages=ema,
        variables_to_average=[v],
    )
    train_op = opt.apply_gradients([(g, v)], global_step=global_step)
    (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
    shadow = ema.average(v)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.local_variables_initializer())
        sess.run(opt.chief_init_op)
        sess.run(opt.get_init_tokens_op(num_tokens=0))
        expected_v, expected_shadow = 10.0, 10.0
        for k, grad in enumerate([2.0, 4.0, 1.0], start=1):
            threads, tokens, errors = run_in_threads((lambda x: sess.run(train_op, {g: x}), grad))
            sess.run(sync_op)
            join_all(threads, errors)
            expected_v -= grad
            expected_shadow = decay * expected_shadow + (1 - decay) * expected_v
            assert tokens == [k]
            assert sess.run([v, shadow, global_step]) == [expected_v, expected_shadow, k]


def test_the_hook_refuses_a_model_whose_variables_are_not_initialized():
    v, g, global_step, opt, train_op, sync_op = _scalar_model(1, 1)
    hook = opt.make_session_run_hook(is_chief=False)
    hook.begin()
    with tf.Session() as sess:
        with pytest.raises(RuntimeError) as info:
            hook.after_create_session(sess, tf.train.Coordinator())
    message = str(info.value)
    assert message.startswith(
        "Init operations did not make model ready for SyncReplicasOptimizer local_init. "
        "Init op: Assign"
    )
    assert "Variables not initialized: v, global_step" in message


# -- TF's own tests, ported: the chief's queue runner running, as the hook starts it ------------


def assert_all_close(actual, desired):
    """TF's ``assertAllClose``: rtol = atol = 1e-6."""
    np.testing.assert_allclose(actual, desired, rtol=1e-6, atol=1e-6)


class TFWorker:
    """A worker of TF's ``get_workers``: constant gradients, a sparse variable, the hook.

    Worker ``i`` pushes ``0.1 + 0.2 i`` for ``v0``, ``0.9 + 0.2 i`` for ``v1``
    and the same as ``v0`` for row 1 of ``v_sparse``; the inner optimizer is
    gradient descent with learning rate 2.
    """

    def __init__(self, server, index, replicas_to_aggregate, num_workers):
        self.graph = tf.Graph()
        with self.graph.as_default():
            with tf.device("/job:ps/task:0"):
                self.global_step = tf.Variable(0, name="global_step", trainable=False)
                self.v0 = tf.Variable(0.0, name="v0")
            with tf.device("/job:ps/task:1"):
                self.v1 = tf.Variable(1.0, name="v1")
                self.v_sparse = tf.Variable([[3.0], [4.0]], name="v_sparse")
            with tf.device(f"/job:worker/task:{index}"):
                grads_0 = tf.constant(0.1 + index * 0.2)
                grads_1 = tf.constant(0.9 + index * 0.2)
                grads_sparse = tf.IndexedSlices(
                    tf.constant([0.1 + index * 0.2], shape=[1, 1]),
                    tf.constant([1]),
                    tf.constant([2, 1]),
                )
                opt = tf.train.SyncReplicasOptimizer(
                    tf.train.GradientDescentOptimizer(2.0),
                    replicas_to_aggregate=replicas_to_aggregate,
                    total_num_replicas=num_workers,
                )
                self.train_op = opt.apply_gradients(
                    zip([grads_0, grads_1, grads_sparse], [self.v0, self.v1, self.v_sparse]),
                    global_step=self.global_step,
                )
                hook = opt.make_session_run_hook(index == 0, num_tokens=num_workers)
            hook.begin()
            self.local_step = self.graph.get_tensor_by_name("sync_rep_local_step:0")
            init_op = tf.global_variables_initializer()
            local_init_op = tf.local_variables_initializer()
        # What MonitoredTrainingSession does for the chief (workers start after it).
        self.sess = tf.Session(server.target, graph=self.graph)
        self.coord = tf.train.Coordinator()
        if index == 0:
            self.sess.run(init_op)
        self.sess.run(local_init_op)
        hook.after_create_session(self.sess, self.coord)

    def run(self, _=None):
        self.sess.run(self.train_op)

    def close(self):
        self.coord.request_stop()
        self.sess.close()
        self.coord.join(stop_grace_period_secs=10)


def _until_global_step(worker, step):
    """Reads the global step until the chief's queue runner has made ``step`` (bounded)."""
    for _ in range(20000):
        if worker.sess.run(worker.global_step) == step:
            return
    raise AssertionError(f"global step never reached {step}")


@pytest.fixture
def tf_workers():
    made = []

    def make(running, num_workers, replicas_to_aggregate):
        for i in range(num_workers):
            made.append(TFWorker(running[f"worker{i}"], i, replicas_to_aggregate, num_workers))
        return made

    yield make
    for worker in reversed(made):
        worker.close()


def test_tf_test2workers(servers, tf_workers):
    _, running = servers
    w0, w1 = tf_workers(running, 2, 2)
    assert w0.sess.run([w0.v0, w0.v1, w0.local_step]) == [0.0, 1.0, 0]
    assert w1.sess.run([w1.global_step, w1.local_step]) == [0, 0]
    assert_all_close(w1.sess.run(w1.v_sparse), [[3.0], [4.0]])
    # Two initial tokens: each worker can run one step alone.
    w0.run()
    w1.run()
    _until_global_step(w1, 1)
    assert_all_close(w1.sess.run(w1.v0), 0 - (0.1 + 0.3) / 2 * 2.0)
    assert_all_close(w1.sess.run(w1.v1), 1 - (0.9 + 1.1) / 2 * 2.0)
    assert_all_close(w1.sess.run(w1.v_sparse), [[3.0], [4.0 - (0.1 + 0.3) / 2 * 2.0]])
    # The initial tokens carried 0: the next round is computed against step 0 and wasted.
    assert [w0.sess.run(w0.local_step), w1.sess.run(w1.local_step)] == [0, 0]
    w0.run()
    w1.run()
    assert w1.sess.run(w1.global_step) == 1
    assert [w0.sess.run(w0.local_step), w1.sess.run(w1.local_step)] == [1, 1]
    assert_all_close(w1.sess.run(w1.v0), 0 - (0.1 + 0.3) / 2 * 2.0)
    # No tokens left: the two workers must run together.
    threads, _, errors = run_in_threads((w0.run, None), (w1.run, None))
    join_all(threads, errors)
    assert w1.sess.run(w1.global_step) == 2
    assert_all_close(w1.sess.run(w1.v0), 0 - 2 * (0.1 + 0.3) / 2 * 2.0)
    assert_all_close(w1.sess.run(w1.v1), 1 - 2 * (0.9 + 1.1) / 2 * 2.0)


def test_tf_test3workers1backup(three_workers, tf_workers):
    _, running = three_workers
    w0, w1, w2 = tf_workers(running, 3, 2)
    assert w1.sess.run([w1.global_step, w1.local_step]) == [0, 0]
    # Workers 0 and 2 finish first: their two gradients make the update.
    w0.run()
    w2.run()
    _until_global_step(w1, 1)
    assert_all_close(w1.sess.run(w1.v0), 0 - (0.1 + 0.5) / 2 * 2.0)
    assert_all_close(w1.sess.run(w1.v1), 1 - (0.9 + 1.3) / 2 * 2.0)
    # Worker 1 is late: its gradient is stale and dropped; so is everyone's next.
    w1.run()
    w0.run()
    w1.run()
    w2.run()
    assert w1.sess.run([w1.global_step, w1.local_step]) == [1, 1]
    thread_0, _, errors_0 = run_in_threads((w0.run, None))
    assert w1.sess.run(w1.global_step) == 1  # worker 0 alone cannot make an update
    thread_1, _, errors_1 = run_in_threads((w1.run, None))
    join_all(thread_1 + thread_0, errors_0 + errors_1)
    assert w1.sess.run(w1.global_step) == 2
    assert_all_close(w1.sess.run(w1.v0), -0.6 - (0.1 + 0.3) / 2 * 2.0)
    assert_all_close(w1.sess.run(w1.v1), -1.2 - (0.9 + 1.1) / 2 * 2.0)
    # Who counted, as the accumulators on the ps saw it: update 1 took workers
    # 0 and 2; worker 1's late gradient and the next round of all three were
    # computed for update 1 and dropped; update 2 took workers 0 and 1.
    record = SyncRecord(w1.sess).refresh()
    for update in record.updates:  # the order of arrival within a round is not fixed
        update["applied"].sort()
    assert record.updates == [
        {
            "global_step": 1,
            "applied": [0, 2],
            "extra": [],
            "dropped": [1, 0, 1, 2],
            "cancelled": [],
        },
        {"global_step": 2, "applied": [0, 1], "extra": [], "dropped": [], "cancelled": []},
    ]
    assert record.dropped_per_worker() == {0: 1, 1: 2, 2: 1}
    assert [g["staleness"] for g in record.gradients] == [0, 0, 1, 1, 1, 1, 0, 0]
