"""Dutta et al.'s synchronisation policies on a simulated cluster, against their closed forms.

Oracles outside minitf: the order statistics of independent compute times
(Rényi's representation of exponential order statistics), the superposition
of ``n`` Poisson processes, the renewal theorem for steady-state rates, the
counting argument for TF's backup workers, and the policies' updates
recomputed with numpy from the report's record of who was applied when.

Tolerances: where updates are independent (the synchronous policies, the
memoryless ones), four standard errors of the formula's own variance over
the number of updates; where samples are correlated (staleness, steady-state
rates), four standard errors of 20 batch means of the run's own samples.
"""

import math
import threading
import time

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import LocalCluster, delays, policies
from minitf.cluster.simulated import SimulatedCluster

pytestmark = pytest.mark.timeout(120)

LR = 0.1
N = 8  # workers
K = 4


def target(worker: int) -> float:
    """Worker ``worker``'s data: its loss is ``(w - target)^2 / 2``, its gradient ``w - target``."""
    return float(worker + 1)


def make_policy(cls, k: int, n: int):
    """A policy over plain SGD; a hook maker ``(is_chief) -> hook``."""
    base = tf.train.GradientDescentOptimizer(LR)
    opt = cls(base, n) if cls in (policies.FullySync, policies.Async) else cls(base, k, n)
    return opt, opt.make_session_run_hook


def train(cluster, cls, updates: int, k: int = K, n: int = N, make=make_policy) -> dict:
    """Between-graph training of one scalar under a policy; returns the report and final w.

    Also ``last``: what each worker's last ``train_op`` returned (its token, or the
    step its gradient was computed for), set once its session has ended.
    """
    last = {}

    def worker(i):
        with tf.Graph().as_default():
            setter = tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{i}", cluster=cluster.cluster_spec
            )
            with tf.device(setter):
                w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
                loss = tf.multiply(0.5, tf.square(w - target(i)), name="loss")
                global_step = tf.train.get_or_create_global_step()
                opt, hook = make(cls, k, n)
                train_op = opt.minimize(loss, global_step=global_step)
            hooks = [hook(i == 0), tf.train.StopAtStepHook(last_step=updates)]
            with tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", i),
                is_chief=i == 0,
                hooks=hooks,
                save_checkpoint_secs=None,
                log_step_count_steps=None,
            ) as sess:
                while not sess.should_stop():
                    value, _ = sess.run([train_op, loss])
            last[i] = int(value)

    report = cluster.run_workers(worker)
    final = {}

    def read():
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
            with tf.Session(cluster.target("worker", 0)) as sess:
                final["w"] = float(sess.run(w))

    cluster.run_clients(read)
    return {**report, "w": final["w"], "last": [last.get(i) for i in range(n)]}


def harmonic(n: int, power: int = 1) -> float:
    return sum(1 / i**power for i in range(1, n + 1))


def kth_of_n(k: int, n: int, mean: float) -> tuple[float, float]:
    """Mean and variance of the k-th smallest of n Exp(mean) (Rényi)."""
    return (
        mean * (harmonic(n) - harmonic(n - k)),
        mean**2 * (harmonic(n, 2) - harmonic(n - k, 2)),
    )


def time_per_update(report) -> np.ndarray:
    times = np.array([0.0] + [u["time"] for u in report["updates"]])
    return np.diff(times)


def batch_means_bound(samples, batches: int = 20) -> float:
    """Four standard errors of the mean from ``batches`` consecutive batch means."""
    samples = np.asarray(samples, float)
    size = len(samples) // batches
    means = samples[: size * batches].reshape(batches, size).mean(axis=1)
    return 4 * means.std(ddof=1) / math.sqrt(batches)


# -- time per update, exponential compute times ----------------------------------------------


@pytest.mark.parametrize(
    "cls, k, formula",
    [
        (policies.FullySync, N, "E[max of n] = mean * H_n"),
        (policies.KSync, K, "E[X_(K:n)] = mean * (H_n - H_(n-K))"),
        (policies.KAsync, K, "E[X_(K:n)] = mean * (H_n - H_(n-K))"),
    ],
)
def test_k_worker_policies_take_the_kth_order_statistic_per_update(cls, k, formula):
    # FullySync/KSync: every update starts all n afresh. KAsync: the n - K
    # still computing are memoryless, so they too restart as Exp(mean).
    mean, updates = 1.0, 400
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=11, worker_delay=delays.Exponential(mean)
    )
    report = train(cluster, cls, updates, k)
    gaps = time_per_update(report)[:updates]
    expected, variance = kth_of_n(k, N, mean)
    assert abs(gaps.mean() - expected) < 4 * math.sqrt(variance / updates), formula


@pytest.mark.parametrize("cls, k", [(policies.KBatchSync, K), (policies.KBatchAsync, K)])
def test_k_batch_policies_wait_for_k_of_a_superposed_poisson_process(cls, k):
    # Every worker always computes; each completion is the first of n
    # Exp(mean) clocks: Exp(mean / n), so K of them take K * mean / n, variance K (mean / n)^2.
    mean, updates = 1.0, 400
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=12, worker_delay=delays.Exponential(mean)
    )
    report = train(cluster, cls, updates, k)
    gaps = time_per_update(report)[:updates]
    assert abs(gaps.mean() - k * mean / N) < 4 * math.sqrt(k / updates) * mean / N


def test_async_updates_come_every_mean_over_n_and_are_n_minus_one_steps_stale():
    mean, updates = 1.0, 1600
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=13, worker_delay=delays.Exponential(mean)
    )
    report = train(cluster, policies.Async, updates)
    gaps = time_per_update(report)[:updates]
    assert abs(gaps.mean() - mean / N) < 4 * math.sqrt(1 / updates) * mean / N
    staleness = [g["staleness"] for g in report["gradients"]]
    assert not any(g["dropped"] for g in report["gradients"])
    # The other n - 1 workers finish once each, on average, while one computes.
    assert abs(np.mean(staleness) - (N - 1)) < batch_means_bound(staleness)


# -- shifted-exponential compute times ---------------------------------------------------------


def test_k_sync_with_shifted_exponential_times_takes_the_shift_plus_the_kth_statistic():
    shift, mean, updates = 0.5, 1.0, 400
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=14, worker_delay=delays.ShiftedExponential(shift, mean)
    )
    report = train(cluster, policies.KSync, updates)
    gaps = time_per_update(report)[:updates]
    expected, variance = kth_of_n(K, N, mean)
    assert abs(gaps.mean() - (shift + expected)) < 4 * math.sqrt(variance / updates)


@pytest.mark.parametrize("cls, k", [(policies.KBatchAsync, K), (policies.Async, 1)])
def test_k_batch_async_in_steady_state_makes_an_update_per_k_mean_times_over_n(cls, k):
    # Renewal theorem: each worker finishes 1 / E[X] gradients per second,
    # whatever the distribution; staleness: the others' (n - 1) E[X] / E[X]
    # completions while one computes, an update per K of them.
    shift, mean = 0.5, 1.0
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=15, worker_delay=delays.ShiftedExponential(shift, mean)
    )
    updates = 1600 // k
    report = train(cluster, cls, updates, k)
    gaps = time_per_update(report)[:updates]
    expected = k * (shift + mean) / N
    assert abs(gaps.mean() - expected) < batch_means_bound(gaps) + 0.02 * expected
    staleness = [g["staleness"] for g in report["gradients"]]
    assert abs(np.mean(staleness) - (N - 1) / k) < batch_means_bound(staleness) + 0.05


# -- what each policy keeps, drops and cancels -------------------------------------------------


def test_k_sync_cancels_the_n_minus_k_slowest_each_update_and_drops_nothing_it_computed():
    updates = 100
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=16, worker_delay=delays.Exponential(1.0)
    )
    report = train(cluster, policies.KSync, updates)
    for update in report["updates"][:updates]:
        assert len(update["applied"]) == K and len(set(update["applied"])) == K
        assert update["dropped"] == []
    for update in report["updates"][: updates - 1]:
        assert sorted(update["cancelled"] + update["applied"]) == list(range(N))
    assert not any(g["cancelled"] and not g["dropped"] for g in report["gradients"])


def test_k_batch_sync_lets_a_fast_worker_give_several_gradients_to_one_update():
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N},
        seed=17,
        worker_delay={0: delays.Constant(0.1), "*": delays.Constant(1.0)},
    )
    report = train(cluster, policies.KBatchSync, 20)
    # Worker 0 finishes 4 gradients (at 0.1 .. 0.4 s) before anyone else finishes one.
    for update in report["updates"][:20]:
        assert update["applied"] == [0] * K
        assert update["extra"] == [0] * (K - 1)


def test_tfs_backup_workers_drop_b_of_n_gradients_in_the_long_run():
    # SyncReplicasOptimizer(R = n - b, N = n), num_tokens=0: each update
    # releases n tokens and each token lets one gradient be pushed; R of
    # them are applied, so b/n are dropped, up to the n pushes of the first
    # step and the n still in flight at the end (a bound, not a variance).
    n, b, updates = N, 2, 300
    cluster = SimulatedCluster(
        {"ps": 1, "worker": n}, seed=18, worker_delay=delays.Exponential(1.0)
    )

    def backups(cls, k, n):
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR), k, n)
        return opt, lambda is_chief: opt.make_session_run_hook(is_chief, num_tokens=0)

    report = train(cluster, None, updates, n - b, n, make=backups)
    gradients = report["gradients"]
    dropped = sum(g["dropped"] for g in gradients) / len(gradients)
    assert abs(dropped - b / n) <= 2 * n / len(gradients)


# -- the values: each update recomputed with numpy from the record ----------------------------


@pytest.mark.parametrize(
    "cls", [policies.KSync, policies.KBatchSync, policies.Async, policies.KAsync]
)
def test_each_update_applies_the_mean_of_its_gradients_at_the_variables_they_saw(cls):
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=19, worker_delay=delays.Exponential(1.0)
    )
    report = train(cluster, cls, 60)
    history = [0.0]  # w after each update
    accepted = [g for g in report["gradients"] if not g["dropped"]]
    for update in report["updates"]:
        taken, accepted = accepted[: len(update["applied"])], accepted[len(update["applied"]) :]
        assert [g["worker"] for g in taken] == update["applied"]
        grads = [history[g["local_step"]] - target(g["worker"]) for g in taken]
        history.append(history[-1] - LR * float(np.mean(grads)))
    assert report["w"] == pytest.approx(history[-1], rel=1e-5)
    # The loss each run fetched is its own gradient's: (w at its local step - target)^2 / 2.
    for worker in range(N):
        pushed = [g for g in report["gradients"] if g["worker"] == worker]
        losses = [entry for entry in report["loss"] if entry["worker"] == worker]
        assert len(losses) == len(pushed) > 0
        for gradient, loss in zip(pushed, losses):
            w = history[gradient["local_step"]]
            expected = 0.5 * (w - target(worker)) ** 2  # float32 w: about 1e-6 absolute
            assert loss["value"] == pytest.approx(expected, rel=1e-4, abs=1e-5)
            assert loss["time"] >= gradient["time"]
    if cls in (policies.KSync, policies.KBatchSync):
        assert all(g["staleness"] == 0 for g in report["gradients"] if not g["dropped"])


# -- every run ends ----------------------------------------------------------------------------

ENDS = [(policies.FullySync, N), (policies.Async, 1)] + [
    (cls, k)
    for cls in (policies.KSync, policies.KBatchSync, policies.KAsync, policies.KBatchAsync)
    for k in (1, N // 2 + 1, N)
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("cls, k", ENDS, ids=[f"{c.__name__}-k{k}" for c, k in ENDS])
def test_every_policy_ends_for_k_of_1_half_plus_one_and_n(cls, k):
    # After the last update the n - k workers not in it still push. K-async
    # releases only the k workers of an update, so for k > n/2 no further
    # update can come (fewer than k gradients are left): the workers' ends
    # must release them. Each policy's definition gives the rest.
    updates = 6
    cluster = SimulatedCluster(
        {"ps": 1, "worker": N}, seed=20, worker_delay=delays.Exponential(1.0)
    )
    report = train(cluster, cls, updates, k)
    assert None not in report["last"]  # every worker's session ended
    per_update = {policies.FullySync: N, policies.Async: 1}.get(cls, k)
    distinct = cls in (policies.FullySync, policies.KSync, policies.KAsync)
    assert len(report["updates"]) >= updates
    for update in report["updates"][:updates]:
        assert len(update["applied"]) == per_update
        assert not distinct or len(set(update["applied"])) == per_update
    if cls in (policies.FullySync, policies.KSync):
        # n tokens per update, every worker one gradient per update (the late ones cancelled).
        assert len(report["updates"]) == updates
        assert len(report["gradients"]) == updates * N
        assert report["last"] == [updates] * N
    if cls is policies.KAsync and 2 * k > N:
        # The k of the last update took its tokens; the n - k others pushed once
        # more, were kept and never applied, and were released with the final step.
        assert len(report["updates"]) == updates
        assert len(report["gradients"]) == updates * k + (N - k)
        assert not any(g["dropped"] for g in report["gradients"])
        assert report["last"] == [updates] * N


@pytest.mark.parametrize("cls", [policies.KSync, policies.KAsync])
def test_a_run_that_ends_without_the_release_makes_the_same_updates_with_it(cls, monkeypatch):
    # With seed 19 and 60 updates the K = 4 runs end on their own (the chief's queue runner
    # outlives the last workers' pushes); the ends' release must change nothing.
    def run():
        cluster = SimulatedCluster(
            {"ps": 1, "worker": N}, seed=19, worker_delay=delays.Exponential(1.0)
        )
        report = train(cluster, cls, 60)
        return {key: value for key, value in report.items() if key != "moves"}

    with_release = run()
    monkeypatch.setattr(policies._PolicyHook, "end", lambda self, session: None)
    assert run() == with_release


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda opt: policies.KSync(opt, 5, 4), ValueError, "k=5 gradients from distinct"),
        (lambda opt: policies.KAsync(opt, 0, 4), ValueError, "k must be a positive integer"),
        (lambda opt: policies.Async(opt, 2.5), ValueError, "num_workers must be a positive"),
        (lambda opt: policies.FullySync("sgd", 4), TypeError, "opt must be a tf.train optimizer"),
    ],
)
def test_a_policy_is_refused_when_made_with_bad_arguments(make, error, words):
    with pytest.raises(error, match=words):
        make(tf.train.GradientDescentOptimizer(0.1))


def test_a_policy_needs_a_global_step_and_one_apply_gradients():
    with tf.Graph().as_default():
        w = tf.Variable(1.0)
        opt = policies.KSync(tf.train.GradientDescentOptimizer(0.1), 1, 2)
        with pytest.raises(ValueError, match="Global step is required"):
            opt.minimize(w * w)
        opt.minimize(w * w, global_step=tf.train.get_or_create_global_step())
        with pytest.raises(ValueError, match="already called"):
            opt.minimize(w * w, global_step=tf.train.get_or_create_global_step())


# -- on real processes' transport: no cancelling, so K-sync is TF's backup workers ----------


@pytest.fixture
def real_cluster():
    """One ps and two workers, each an in-process server on a free loopback port."""
    from minitf.runtime.distributed.launcher import free_ports

    hosts = [f"127.0.0.1:{p}" for p in free_ports(3)]
    spec = tf.train.ClusterSpec({"ps": hosts[:1], "worker": hosts[1:]})
    servers = [tf.train.Server(spec, job_name="ps", task_index=0)]
    servers += [tf.train.Server(spec, job_name="worker", task_index=i) for i in range(2)]
    yield spec, servers
    for server in servers:
        server.stop()


class _RealWorker:
    """One worker's graph and session on a real cluster; the chief's update made by hand."""

    def __init__(self, spec, server, index, cls):
        self.graph = tf.Graph()
        setter = tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{index}", cluster=spec
        )
        with self.graph.as_default(), tf.device(setter):
            self.w = tf.get_variable("w", [], initializer=tf.constant_initializer(1.0))
            global_step = tf.train.get_or_create_global_step()
            self.opt = cls(tf.train.GradientDescentOptimizer(LR), 1, 2)
            self.train_op = self.opt.minimize(
                0.5 * tf.square(self.w - target(index)), global_step=global_step
            )
            (self.update_op,) = self.opt.get_chief_queue_runner().enqueue_ops
            (accum, device), *_ = self.opt._accumulators
            with tf.device(device):
                self.count = accum.num_accumulated()
            self.init = tf.global_variables_initializer()
            self.local_init = tf.local_variables_initializer()
        self.sess = tf.Session(server.target, graph=self.graph)

    def step_in_thread(self):
        done = {}
        thread = threading.Thread(
            target=lambda: done.setdefault("token", self.sess.run(self.train_op))
        )
        thread.start()
        return thread, done


@pytest.mark.parametrize("cls, stale_kept", [(policies.KSync, False), (policies.KAsync, True)])
def test_on_a_real_cluster_a_late_gradient_is_dropped_by_k_sync_and_kept_by_k_async(
    real_cluster, cls, stale_kept
):
    spec, servers = real_cluster
    chief, other = (_RealWorker(spec, servers[1 + i], i, cls) for i in range(2))
    chief.sess.run([chief.init, chief.local_init, chief.opt.chief_init_op])
    other.sess.run([other.local_init, other.opt.local_step_init_op])
    w0 = 1.0
    # The chief's gradient (w0 - 1) is pushed; its step waits for a token.
    thread, done = chief.step_in_thread()
    chief.sess.run(chief.update_op)  # k = 1: takes it, w1 = w0 - lr (w0 - 1), tokens out
    thread.join(30)
    assert not thread.is_alive() and done["token"] == 1
    w1 = w0 - LR * (w0 - target(0))
    assert chief.sess.run(chief.w) == pytest.approx(w1)
    # The other worker's step reads w1, but its local step is still 0: one update late.
    thread, done = other.step_in_thread()
    if stale_kept:
        # KAsync keeps it (computed at w1, one step stale) and the worker waits for a token.
        chief.sess.run(chief.update_op)
        thread.join(30)
        assert not thread.is_alive() and done["token"] == 2
        assert chief.sess.run(chief.w) == pytest.approx(w1 - LR * (w1 - target(1)), rel=1e-6)
    else:
        # KSync drops it, as TF drops a backup worker's, and a token from update 1 is waiting.
        thread.join(30)
        assert not thread.is_alive() and done["token"] == 1
        assert chief.sess.run(chief.count) == 0
        assert chief.sess.run(chief.w) == pytest.approx(w1)


# -- on real processes: K-async with k > n/2 ends --------------------------------------------


@pytest.mark.timeout(180)
def test_k_async_with_k_over_half_of_n_ends_on_a_cluster_of_processes():
    # 3 workers, k = 2: after the last update one worker is left out of it,
    # and its gradient alone can never make another. Every gradient is 2
    # (loss 2w), so each update, the mean of its gradients, takes LR * 2 off w
    # whoever sent them: after `updates` of them w is that many steps from 0.
    n, k, updates = 3, 2, 4
    ended, failures = {}, []

    def worker(cluster, i):
        try:
            with tf.Graph().as_default():
                setter = tf.train.replica_device_setter(
                    worker_device=f"/job:worker/task:{i}", cluster=cluster.cluster_spec
                )
                with tf.device(setter):
                    w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
                    global_step = tf.train.get_or_create_global_step()
                    opt = policies.KAsync(tf.train.GradientDescentOptimizer(LR), k, n)
                    train_op = opt.minimize(2.0 * w, global_step=global_step)
                hooks = [
                    opt.make_session_run_hook(i == 0),
                    tf.train.StopAtStepHook(last_step=updates),
                ]
                with tf.train.MonitoredTrainingSession(
                    master=cluster.target("worker", i), is_chief=i == 0, hooks=hooks,
                    save_checkpoint_secs=None, log_step_count_steps=None,
                ) as sess:  # fmt: skip
                    while not sess.should_stop():
                        sess.run(train_op)
            ended[i] = True
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    with LocalCluster({"ps": 1, "worker": n}, output=None) as cluster:
        threads = [
            threading.Thread(target=worker, args=(cluster, i), daemon=True) for i in range(n)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        assert failures == [] and not any(thread.is_alive() for thread in threads)
        assert sorted(ended) == list(range(n))
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
                global_step = tf.train.get_or_create_global_step()
            with tf.Session(cluster.target("worker", 0)) as sess:
                final_w, final_step = sess.run([w, global_step])
    expected = np.float32(0.0)
    for _ in range(updates):
        expected = np.float32(expected - np.float32(LR) * np.float32(2.0))
    assert final_step == updates
    assert final_w == expected
