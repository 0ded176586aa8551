"""The synchronous training script builds TF 1.15's SyncReplicasOptimizer graph and trains with it.

Graph tests build a worker's graph under ``replica_device_setter`` and compare
it with what TF builds (shared/spec/tf1_semantics.md §6.2). Protocol tests
run two between-graph replicas of a tiny linear model against in-process
servers (two ps tasks, two workers) and drive the chief's ``sync_op`` by hand,
so that every update happens at a known point; expected values are computed
with numpy. The last tests run the script itself on a `LocalCluster`.
"""

import json
import threading

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import LocalCluster
from minitf.examples import sync_mlp
from minitf.runtime.launcher import free_ports

pytestmark = pytest.mark.timeout(120)

LR = 0.1
W0 = np.array([0.5, -1.0, 2.0], np.float32)
B0 = np.float32(0.25)


def _two_ps_spec(hosts=("a:1", "b:1", "c:1", "d:1")):
    return tf.train.ClusterSpec({"ps": list(hosts[:2]), "worker": list(hosts[2:])})


@pytest.fixture
def servers():
    """Two ps tasks and two worker tasks, each an in-process server on a free loopback port."""
    spec = _two_ps_spec([f"127.0.0.1:{p}" for p in free_ports(4)])
    running = {
        f"{job}{i}": tf.train.Server(spec, job_name=job, task_index=i)
        for job in ("ps", "worker")
        for i in range(2)
    }
    yield spec, running
    for server in running.values():
        server.stop()


class Replica:
    """One worker's own graph and session: a linear model ``x·w + b`` trained in sync.

    The loss is ``0.5 * mean((x·w + b - y)^2)``; `linear_grads` is its gradient by hand.
    """

    def __init__(self, spec, server, index, replicas_to_aggregate=2, **kwargs):
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
            global_step = tf.train.get_or_create_global_step()
            self.sync = sync_mlp.build_sync_graph(
                tf.train.GradientDescentOptimizer(LR),
                loss,
                global_step,
                replicas_to_aggregate,
                **kwargs,
            )
            self.num_accumulated = []
            for accum, device in self.sync["accumulators"]:
                with tf.device(device):
                    self.num_accumulated.append(accum.num_accumulated())
            self.init_op = tf.global_variables_initializer()
            self.local_init_op = tf.local_variables_initializer()
        self.sess = tf.Session(server.target, graph=self.graph)

    def start(self):
        """What the chief, or another worker, runs before its first step."""
        self.sess.run(self.local_init_op)
        if self.index == 0:
            self.sess.run(self.init_op)
            self.sess.run(self.sync["chief_init_op"])
            self.sess.run(self.sync["init_tokens_op"])
        else:
            self.sess.run(self.sync["local_step_init_op"])

    def step(self, batch):
        """One worker step (offer the gradient, take a token); returns the token."""
        feed = {self.x: batch[0], self.y: batch[1]}
        return int(self.sess.run(self.sync["train_op"], feed))

    def offer(self, batch):
        """Only the ``apply_grad`` ops of a step: the gradient without the token."""
        self.sess.run(self.sync["train_ops"], {self.x: batch[0], self.y: batch[1]})

    def state(self):
        """(w, b, global step, gradients accumulated in w's and b's accumulators)."""
        w, b, step, counts = self.sess.run(
            [self.w, self.b, self.sync["global_step"], self.num_accumulated]
        )
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


def _build_on_worker_1(**kwargs):
    setter = tf.train.replica_device_setter(
        worker_device="/job:worker/task:1", cluster=_two_ps_spec()
    )
    with tf.device(setter):
        return sync_mlp.build_sync_model(2, **kwargs)


def test_one_accumulator_per_variable_on_its_ps_task_shared_by_variable_name():
    model = _build_on_worker_1()
    variables = tf.trainable_variables()
    # Round robin over the two ps tasks in creation order (weights, biases, weights, biases).
    assert [v.device for v in variables] == [f"/job:ps/task:{i % 2}" for i in range(4)]
    assert len(model["accumulators"]) == len(variables)
    for (accum, device), var in zip(model["accumulators"], variables):
        op = accum.accumulator_ref.op
        assert device == var.device == op.device
        assert op.type == "ResourceConditionalAccumulator"
        assert op.name.startswith("sync_replicas/conditional_accumulator")
        assert op.get_attr("shared_name") == var.name + "/grad_accum"
        assert op.get_attr("shape") == var.get_shape()
    assert variables[0].name + "/grad_accum" == "hidden/weights:0/grad_accum"


def test_token_and_dummy_queues_live_with_the_global_step():
    model = _build_on_worker_1()
    global_step = model["global_step"]
    assert global_step.device == "/job:ps/task:0"  # the fifth variable in the round robin
    tokens = model["sync_token_queue"].queue_ref.op
    dummy = model["dummy_queue"].queue_ref.op
    assert (tokens.name, tokens.get_attr("shared_name"), tokens.get_attr("capacity")) == (
        "sync_token_q",
        "sync_token_q",
        -1,
    )
    assert tokens.get_attr("component_types") == [tf.int64]
    assert (dummy.name, dummy.get_attr("shared_name"), dummy.get_attr("capacity")) == (
        "dummy_queue",
        "dummy_queue",
        1,
    )
    assert dummy.get_attr("component_types") == [tf.int32]
    assert tokens.device == dummy.device == global_step.device
    assert model["sync_op"].type == "QueueEnqueueManyV2"
    assert model["sync_op"].device == global_step.device
    assert model["chief_queue_runner"].queue is model["dummy_queue"]
    assert model["chief_queue_runner"].enqueue_ops == [model["sync_op"]]


def test_local_step_is_a_local_variable_on_the_worker_even_under_the_device_setter():
    model = _build_on_worker_1()
    local_step = model["local_step"]
    assert local_step.name == "sync_rep_local_step:0"
    assert local_step.device == "/job:worker/task:1"
    assert local_step in tf.local_variables()
    assert local_step not in tf.global_variables()
    assert local_step.dtype.base_dtype == tf.int64  # the global step's dtype
    init = model["local_step_init_op"].op
    assert init.type == "Assign" and init.device == "/job:worker/task:1"


def test_a_worker_step_offers_every_gradient_then_takes_a_token():
    model = _build_on_worker_1()
    train_op = model["train_op"].op
    assert train_op.type == "Assign" and train_op.device == "/job:worker/task:1"
    dequeue = train_op.inputs[1].op
    assert dequeue.name == "sync_token_q_Dequeue"
    assert dequeue.device == model["global_step"].device
    applies = set(model["train_ops"])
    assert len(applies) == 4 and set(dequeue.control_inputs) == applies
    for apply_op, (_, device) in zip(model["train_ops"], model["accumulators"]):
        assert apply_op.type == "ResourceAccumulatorApplyGradient"
        assert apply_op.device == device


def test_chief_init_sets_every_accumulator_step_on_its_device():
    model = _build_on_worker_1()
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
    assert [op.device for op in set_steps] == [d for _, d in model["accumulators"]]

    def upstream(op, seen):
        for dep in list(op.control_inputs) + [t.op for t in op.inputs]:
            if dep not in seen:
                seen.add(dep)
                upstream(dep, seen)
        return seen

    reached = upstream(model["chief_init_op"], set())
    assert set(set_steps) <= reached
    assert model["local_step_init_op"].op in reached


def test_tokens_per_step_is_the_larger_of_workers_and_replicas_to_aggregate():
    for replicas, total, expected in [(2, None, 2), (2, 3, 3), (3, 1, 3)]:
        with tf.Graph().as_default():
            model = sync_mlp.build_sync_model(2, replicas, total)
            assert model["tokens_per_step"] == expected


def test_bad_arguments_raise_what_tf_raises():
    v = tf.Variable(1.0, name="v")
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="Must supply at least one variable"):
        sync_mlp.apply_gradients_in_sync(opt, [], global_step, 2)
    with pytest.raises(ValueError, match="Global step is required to check staleness"):
        sync_mlp.apply_gradients_in_sync(opt, [(tf.constant(1.0), v)], None, 2)
    with pytest.raises(ValueError, match="Unknown grad type!"):
        sync_mlp.apply_gradients_in_sync(opt, [(np.float32(1.0), v)], global_step, 2)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        sync_mlp.build_sync_model(2, optimizer="rmsprop")


def test_init_tokens_default_to_replicas_to_aggregate_and_must_cover_the_first_update():
    v = tf.Variable(1.0, name="v")
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.GradientDescentOptimizer(0.1)
    # K-batch: 3 gradients per update from 2 workers needs at least one initial token.
    sync = sync_mlp.apply_gradients_in_sync(opt, [(v * 2.0, v)], global_step, 3, 2)
    with pytest.raises(ValueError, match=r"Too few tokens .*: 0 \(given\) vs 1 \(needed\)"):
        sync_mlp.init_tokens_op(sync, num_tokens=0)
    assert sync_mlp.init_tokens_op(sync, num_tokens=1).type == "QueueEnqueueManyV2"
    default = sync_mlp.init_tokens_op(sync)
    size = sync["sync_token_queue"].size()
    with tf.Session() as sess:
        sess.run(global_step.initializer)
        sess.run(default)
        assert sess.run(size) == 3  # R tokens
    backups = sync_mlp.apply_gradients_in_sync(opt, [(v * 2.0, v)], global_step, 2, 3)
    assert sync_mlp.init_tokens_op(backups, num_tokens=0).name == "no_init_tokens"


def test_non_positive_replicas_to_aggregate_fails_in_the_chief_step_as_in_tf():
    # TF does not check the number when building; take_grad's kernel rejects it.
    v = tf.Variable(1.0, name="v")
    global_step = tf.train.get_or_create_global_step()
    sync = sync_mlp.build_sync_graph(tf.train.GradientDescentOptimizer(0.1), v * v, global_step, 0)
    assert sync["init_tokens_op"].name == "no_init_tokens"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="num_required must be positive, but was 0"
        ):
            sess.run(sync["sync_op"])


# -- the protocol ------------------------------------------------------------------------------


def test_one_update_is_the_variable_minus_lr_times_the_mean_of_the_two_gradients(replicas):
    chief, worker = replicas()
    batch0, batch1 = batches(0), batches(1)
    assert chief.step(batch0) == 0  # the initial tokens carry global step 0
    assert worker.step(batch1) == 0
    chief.sess.run(chief.sync["sync_op"])
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
        chief.sess.run(chief.sync["sync_op"], options=tf.RunOptions(timeout_in_ms=200))
    assert chief.state()[2:] == (0, [1, 1])
    worker.step(batches(1))
    chief.sess.run(chief.sync["sync_op"])
    assert chief.state()[2:] == (1, [0, 0])


def test_tokens_follow_tf_test2workers_and_each_update_takes_two_gradients(replicas):
    chief, worker = replicas()
    # Round 1 exits on the two initial tokens; the update releases two tokens "1".
    assert [chief.step(batches(10)), worker.step(batches(11))] == [0, 0]
    chief.sess.run(chief.sync["sync_op"])
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
        chief.sess.run(chief.sync["sync_op"])
        join_all(threads, errors)
        w, b, step, counts = worker.state()
        assert tokens == [k, k] and step == k and counts == [0, 0]
        if k == 2:  # the first real update after the dropped round uses round 3's batches
            expected_w, expected_b = sgd_step(w1, b1, round_batches)
            np.testing.assert_allclose(w, expected_w, rtol=1e-5)
            np.testing.assert_allclose(b, expected_b, rtol=1e-5)


def test_a_gradient_older_than_the_accumulator_step_is_not_counted(replicas):
    chief, worker = replicas()
    # The chief (re)starts at global step 5: its init sets the accumulators to 5.
    chief.sync["global_step"].load(5, chief.sess)
    chief.sess.run(chief.sync["chief_init_op"])
    worker.sess.run(worker.local_init_op)  # the worker's local step is back to 0
    worker.offer(batches(0))
    assert worker.state()[3] == [0, 0]  # local step 0 < 5: dropped
    worker.sess.run(worker.sync["local_step_init_op"])
    worker.offer(batches(1))
    assert worker.state()[3] == [1, 1]  # local step 5 >= 5: counted


# -- the script --------------------------------------------------------------------------------


class Lines:
    """Collects a LocalCluster's output lines."""

    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.extend(text.splitlines())

    def flush(self):
        pass

    def reports(self):
        return [json.loads(line.split(" ", 1)[1]) for line in self.lines if " {" in line]


@pytest.mark.parametrize(
    "workers, extra",
    [(2, []), (3, ["--replicas_to_aggregate", "2"])],
    ids=["two-workers", "one-backup-worker"],
)
def test_script_trains_to_exactly_the_target_global_step_and_every_worker_exits(workers, extra):
    steps = 40
    output = Lines()
    args = ["--steps", str(steps), "--report_every", "10", "--step_timeout", "30", *extra]
    cluster = LocalCluster(
        {"ps": 1, "worker": workers}, script=sync_mlp.__file__, args=args, output=output
    )
    with cluster:
        assert cluster.wait(90) == 0, "\n".join(output.lines[-30:])
    reports = sorted(output.reports(), key=lambda r: r["worker"])
    assert [r["worker"] for r in reports] == list(range(workers))
    assert all(r["global_step"] == steps for r in reports)
    # Each worker step takes one token: R initial ones, then N per update, and
    # the workers stop on the last N (they carry the target global step).
    replicas = 2
    assert sum(r["local_steps"] for r in reports) == replicas + workers * steps
    before, after = reports[0]["eval_loss"]
    assert after < 0.9 * before
