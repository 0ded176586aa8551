"""The paper's EASGD rules against closed forms derived from their update equations.

Oracle: each worker's loss is ``h (x − target_i)² / 2``, so its gradient
``h (x − target_i)`` is exact and deterministic, and a round (synchronous) or
a worker's step (asynchronous, round robin) is an affine map of the state
``(x_1 … x_p, x̃, 1)``. The maps below are written from Zhang, Choromanska
and LeCun's equations, in float64 and without minitf; a run of ``n`` rounds
is compared with the ``n``-th matrix power of the map (or of the product of
one period's maps). With dyadic parameters the first rounds are exact in
float32 and compared bit for bit; longer runs to float32 rounding.
"""

import threading

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import SimulatedCluster, policies
from tests.cluster.test_policies import real_cluster  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(60)


# -- the oracle: affine maps of (x_1 .. x_p, x̃, 1) --------------------------------------------


def sync_round(p: int, eta: float, h: float, alpha: float, targets) -> np.ndarray:
    """x_i ← x_i − ηh(x_i − t_i) − α(x_i − x̃);  x̃ ← x̃ + α Σ (x_i − x̃)."""
    m = np.zeros((p + 2, p + 2))
    for i in range(p):
        m[i, i] = 1 - eta * h - alpha
        m[i, p] = alpha
        m[i, p + 1] = eta * h * targets[i]
        m[p, i] = alpha
    m[p, p] = 1 - p * alpha
    m[p + 1, p + 1] = 1
    return m


def async_step(p: int, i: int, pulls: bool, eta: float, h: float, alpha: float, target):
    """Algorithm 1, worker i: x = x_i; [x_i −= α(x − x̃); x̃ += α(x − x̃)]; x_i −= ηh(x − t)."""
    m = np.eye(p + 2)
    m[i, i] = 1 - eta * h
    m[i, p + 1] = eta * h * target
    if pulls:
        m[i, i] -= alpha
        m[i, p] = alpha
        m[p, i] = alpha
        m[p, p] = 1 - alpha
    return m


def closed_form(period_map: np.ndarray, start: np.ndarray, periods: int) -> np.ndarray:
    """The state after ``periods`` applications of the map: ``M^n s_0``."""
    return np.linalg.matrix_power(period_map, periods) @ start


def start_state(p: int, x0: float) -> np.ndarray:
    """x_i = x̃ = x0 (the paper starts every copy at the center)."""
    return np.append(np.full(p + 1, x0), 1.0)


# -- building a worker ---------------------------------------------------------------------


def build(cluster_spec, index, make_opt, target, h, x0):
    """Worker ``index``'s graph: its copy ``w``, the center, and the policy's train op."""
    device = f"/job:worker/task:{index}"
    getter = policies.EASGDCustomGetter(device)
    setter = tf.train.replica_device_setter(worker_device=device, cluster=cluster_spec)
    with tf.device(setter), tf.variable_scope("", custom_getter=getter):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(x0))
        loss = tf.multiply(0.5 * h, tf.square(w - target), name="loss")
        global_step = tf.train.get_or_create_global_step()
        opt = make_opt(getter)
        train_op = opt.minimize(loss, global_step=global_step)
    return {
        "w": w,
        "center": getter.center_of(w),
        "global_step": global_step,
        "train_op": train_op,
        "opt": opt,
    }


def train_together(cluster, p, make_opt, targets, h, x0, steps):
    """Each worker in its own client, in a monitored session; each one's reads after every step."""
    history = {}

    def worker(i):
        with tf.Graph().as_default():
            built = build(cluster.cluster_spec, i, make_opt, targets[i], h, x0)
            reads = [built["w"], built["center"], built["global_step"]]
            hooks = [built["opt"].make_session_run_hook(i == 0)]
            with tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", i),
                is_chief=i == 0,
                hooks=hooks,
                save_checkpoint_secs=None,
                log_step_count_steps=None,
            ) as sess:
                history[i] = [sess.run(reads)]
                for _ in range(steps):
                    sess.run(built["train_op"])
                    history[i].append(sess.run(reads))

    cluster.run_workers(worker)
    return [np.array(history[i], np.float64) for i in range(p)]


def sync_policy(p, eta, alpha):
    return lambda getter: policies.SyncEASGD(
        tf.train.GradientDescentOptimizer(eta), p, getter, moving_rate=alpha
    )


def async_policy(eta, alpha, tau):
    return lambda getter: policies.AsyncEASGD(
        tf.train.GradientDescentOptimizer(eta), getter, moving_rate=alpha, communication_period=tau
    )


# -- synchronous EASGD -------------------------------------------------------------------------


def test_sync_easgd_rounds_follow_the_matrix_powers_of_the_papers_round():
    p, eta, h, alpha, x0, rounds = 4, 0.25, 1.0, 0.125, 0.5, 12
    targets = [1.0, 2.0, 3.0, 4.0]
    cluster = SimulatedCluster({"ps": 1, "worker": p})
    history = train_together(cluster, p, sync_policy(p, eta, alpha), targets, h, x0, rounds)
    round_map = sync_round(p, eta, h, alpha, targets)
    for r in range(rounds + 1):
        expected = closed_form(round_map, start_state(p, x0), r)
        copies = [history[i][r][0] for i in range(p)]
        centers = {history[i][r][1] for i in range(p)}
        assert len(centers) == 1  # every worker sees the center of the same round
        assert all(history[i][r][2] == r for i in range(p))  # the global step counts rounds
        if r <= 3:  # dyadic values, still exact in float32
            assert copies == list(expected[:p]) and centers == {expected[p]}
        np.testing.assert_allclose([*copies, *centers], expected[: p + 1], rtol=2e-6)


def test_a_fast_worker_waits_for_the_round_instead_of_pushing_twice():
    # Worker 0 computes in no time, the others take a second per step: with one
    # shared token queue worker 0 could take two tokens of a round.
    from minitf.cluster import delays

    p, eta, h, alpha, x0, rounds = 3, 0.5, 1.0, 0.25, 0.0, 5
    targets = [1.0, 2.0, 4.0]
    cluster = SimulatedCluster(
        {"ps": 1, "worker": p},
        worker_delay={0: delays.Constant(0.0), "*": delays.Constant(1.0)},
    )
    history = train_together(cluster, p, sync_policy(p, eta, alpha), targets, h, x0, rounds)
    expected = closed_form(sync_round(p, eta, h, alpha, targets), start_state(p, x0), rounds)
    np.testing.assert_allclose(
        [*(history[i][-1][0] for i in range(p)), history[0][-1][1]], expected[: p + 1], rtol=2e-6
    )


# -- asynchronous EASGD (Algorithm 1) ---------------------------------------------------------


@pytest.mark.parametrize("tau", [1, 3])
def test_async_easgd_one_worker_pulls_on_steps_0_tau_2tau_before_its_gradient_step(tau):
    eta, h, alpha, x0, target, steps = 0.25, 1.0, 0.5, 2.0, 1.0, 9
    cluster = SimulatedCluster({"ps": 1, "worker": 1})
    (history,) = train_together(cluster, 1, async_policy(eta, alpha, tau), [target], h, x0, steps)
    state = start_state(1, x0)
    # Worker 0 alone; the center is fixed at x0 between pulls, starting at 0.
    for t in range(steps):
        state = async_step(1, 0, t % tau == 0, eta, h, alpha, target) @ state
        np.testing.assert_allclose(history[t + 1][:2], state[:2], rtol=1e-6)
        assert history[t + 1][2] == t // tau + 1  # one global step per pull
    if tau == 1:  # dyadic: the first steps bit for bit
        first = async_step(1, 0, True, eta, h, alpha, target) @ start_state(1, x0)
        assert list(history[1][:2]) == list(first[:2])


def test_async_easgd_two_workers_in_turn_follow_the_closed_form_of_one_period():
    p, eta, h, alpha, tau, x0, periods = 2, 0.25, 1.0, 0.25, 2, 0.0, 4
    targets = [1.0, -3.0]
    cluster = SimulatedCluster({"ps": 1, "worker": p})
    reads = []

    def client():
        workers, sessions = [], []
        for i in range(p):
            graph = tf.Graph()
            with graph.as_default():
                workers.append(
                    build(cluster.cluster_spec, i, async_policy(eta, alpha, tau), targets[i], h, x0)
                )
                init = [tf.global_variables_initializer()] if i == 0 else []
                init.append(tf.local_variables_initializer())
                hook = workers[-1]["opt"].make_session_run_hook(i == 0)
                hook.begin()
            sessions.append(tf.Session(cluster.target("worker", i), graph=graph))
            sessions[-1].run(init)
            hook.after_create_session(sessions[-1], None)
        for _ in range(periods * tau):
            for worker, sess in zip(workers, sessions):  # round robin: 0, 1, 0, 1, ...
                sess.run(worker["train_op"])
        reads.extend(sess.run([w["w"], w["center"]]) for w, sess in zip(workers, sessions))
        for sess in sessions:
            sess.close()

    cluster.run_clients(client)
    one_period = np.eye(p + 2)
    for t in range(tau):
        for i in range(p):
            one_period = async_step(p, i, t == 0, eta, h, alpha, targets[i]) @ one_period
    expected = closed_form(one_period, start_state(p, x0), periods)
    copies = [reads[i][0] for i in range(p)]
    assert reads[0][1] == reads[1][1]
    np.testing.assert_allclose([*copies, reads[0][1]], expected[: p + 1], rtol=1e-6)


def test_async_easgd_workers_racing_keep_the_sum_of_copies_and_center_that_pulls_conserve():
    # A pull moves x_i by −diff and x̃ by +diff, whoever else pulls meanwhile:
    # with a linear loss g_i x, only the gradient steps change Σ x_i + x̃, by −η g_i each.
    from minitf.cluster import delays

    p, eta, alpha, tau, steps, x0 = 4, 0.125, 0.25, 2, 9, 1.0
    slopes = [1.0, -2.0, 0.5, 4.0]
    cluster = SimulatedCluster({"ps": 1, "worker": p}, seed=3, worker_delay=delays.Exponential(1.0))
    finals = {}

    def worker(i):
        with tf.Graph().as_default():
            device = f"/job:worker/task:{i}"
            getter = policies.EASGDCustomGetter(device)
            setter = tf.train.replica_device_setter(
                worker_device=device, cluster=cluster.cluster_spec
            )
            with tf.device(setter), tf.variable_scope("", custom_getter=getter):
                w = tf.get_variable("w", [], initializer=tf.constant_initializer(x0))
                global_step = tf.train.get_or_create_global_step()
                opt = async_policy(eta, alpha, tau)(getter)
                train_op = opt.minimize(tf.multiply(slopes[i], w, name="loss"), global_step)
            with tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", i), is_chief=i == 0,
                hooks=[opt.make_session_run_hook(i == 0)],
                save_checkpoint_secs=None, log_step_count_steps=None,
            ) as sess:  # fmt: skip
                for _ in range(steps):
                    sess.run(train_op)
                finals[i] = sess.run(w)

    report = cluster.run_workers(worker)
    reads = {}

    def read():
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                center = tf.get_variable("global_center_variable/w", [])
                global_step = tf.train.get_or_create_global_step()
            with tf.Session(cluster.target("worker", 0)) as sess:
                reads["center"], reads["step"] = sess.run([center, global_step])

    cluster.run_clients(read)
    assert report["time"] > 0  # the delays made the workers race
    expected = (p + 1) * x0 - eta * steps * sum(slopes)
    assert sum(finals.values()) + reads["center"] == pytest.approx(expected, rel=1e-6)
    assert reads["step"] == p * len(range(0, steps, tau))  # one global step per pull


# -- the stability boundary --------------------------------------------------------------------


def full_round_matrix(p, eta_h, alpha):
    return sync_round(p, eta_h, 1.0, alpha, [0.0] * p)[: p + 1, : p + 1]


@pytest.mark.parametrize("p", [1, 2, 4, 16])
@pytest.mark.parametrize("eta_h", [0.1, 0.5, 1.0, 1.9])
def test_the_documented_boundary_is_where_the_rounds_eigenvalues_leave_the_unit_circle(p, eta_h):
    boundary = policies.sync_stability_boundary(eta_h, p)
    for alpha in np.linspace(0.01, 2, 200) * boundary:
        radius = max(abs(np.linalg.eigvals(full_round_matrix(p, eta_h, alpha))))
        if abs(alpha - boundary) > 1e-9:
            assert (radius < 1) == (alpha < boundary), (alpha, radius)
    # At the boundary itself an eigenvalue is −1.
    eigenvalues = np.linalg.eigvals(full_round_matrix(p, eta_h, boundary))
    assert np.min(np.abs(eigenvalues + 1)) < 1e-9


@pytest.mark.parametrize("alpha, converges", [(0.36, True), (0.39, False)])
def test_sync_easgd_converges_just_below_the_boundary_and_diverges_just_above(alpha, converges):
    p, eta, h, x0, rounds = 4, 0.5, 1.0, 1.0, 60
    assert policies.sync_stability_boundary(eta * h, p) == 0.375
    cluster = SimulatedCluster({"ps": 1, "worker": p})
    history = train_together(cluster, p, sync_policy(p, eta, alpha), [0.0] * p, h, x0, rounds)
    round_map = sync_round(p, eta, h, alpha, [0.0] * p)
    for r in (20, 40, rounds):
        expected = closed_form(round_map, start_state(p, x0), r)
        np.testing.assert_allclose(history[0][r][:2], expected[[0, p]], rtol=1e-5, atol=1e-7)
    # From x = x̃ = 1, 60 rounds: the mode at the spectral radius 0.926 (α = 0.36)
    # or 1.074 (α = 0.39) ends near 0.002 or 16.
    size = np.abs(history[0][-1][:2]).max()
    assert size < 0.01 if converges else size > 10


# -- real processes ----------------------------------------------------------------------------


def test_sync_easgd_on_real_servers_makes_the_same_rounds(real_cluster):  # noqa: F811
    spec, servers = real_cluster
    p, eta, h, alpha, x0, rounds = 2, 0.25, 1.0, 0.25, 0.0, 6
    targets = [1.0, 3.0]
    finals, errors = {}, []

    def worker(i):
        try:
            with tf.Graph().as_default():
                built = build(spec, i, sync_policy(p, eta, alpha), targets[i], h, x0)
                hooks = [built["opt"].make_session_run_hook(i == 0)]
                with tf.train.MonitoredTrainingSession(
                    master=servers[1 + i].target, is_chief=i == 0, hooks=hooks,
                    save_checkpoint_secs=None, log_step_count_steps=None,
                ) as sess:  # fmt: skip
                    for _ in range(rounds):
                        sess.run(built["train_op"])
                    finals[i] = sess.run([built["w"], built["center"]])
        except Exception as exc:  # reported by the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(p)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors and not any(t.is_alive() for t in threads), errors
    expected = closed_form(sync_round(p, eta, h, alpha, targets), start_state(p, x0), rounds)
    assert finals[0][1] == finals[1][1]
    np.testing.assert_allclose([finals[0][0], finals[1][0], finals[0][1]], expected[:3], rtol=1e-6)


# -- bad input ---------------------------------------------------------------------------------


def _getter():
    return policies.EASGDCustomGetter("/job:worker/task:0")


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda sgd: policies.SyncEASGD(sgd, 0, _getter(), 0.1), ValueError, "num_workers must"),
        (
            lambda sgd: policies.SyncEASGD(sgd, 2, _getter(), 0.1, worker_index=2),
            ValueError,
            r"worker_index must be in \[0, num_workers=2\)",
        ),  # fmt: skip
        (lambda sgd: policies.SyncEASGD("sgd", 2, _getter(), 0.1), TypeError, "opt must be"),
        (lambda sgd: policies.AsyncEASGD(sgd, object(), 0.1), TypeError, "ea_custom_getter"),
        (lambda sgd: policies.AsyncEASGD(sgd, _getter(), "0.1"), TypeError, "moving_rate must"),
        (lambda sgd: policies.AsyncEASGD(sgd, _getter(), 0.1, 0), ValueError, "communication_p"),
        (lambda sgd: policies.sync_stability_boundary(2.0, 4), ValueError, "0 < eta_h < 2"),
    ],
)
def test_easgd_is_refused_when_made_with_bad_arguments(make, error, words):
    with tf.Graph().as_default(), pytest.raises(error, match=words):
        make(tf.train.GradientDescentOptimizer(0.1))


def test_a_variable_without_a_center_a_missing_global_step_and_a_second_call_are_refused():
    with tf.Graph().as_default():
        getter = _getter()
        plain = tf.Variable(1.0, name="plain")
        with tf.variable_scope("", custom_getter=getter):
            w = tf.get_variable("w", [], initializer=tf.ones_initializer())
        opt = policies.AsyncEASGD(tf.train.GradientDescentOptimizer(0.1), getter, 0.1)
        with pytest.raises(ValueError, match="'plain' has no center"):
            opt.minimize(plain * plain, global_step=tf.train.get_or_create_global_step())
        with pytest.raises(ValueError, match="global_step is required"):
            opt.minimize(w * w)
        with pytest.raises(ValueError, match="should be called before using the hook"):
            opt.make_session_run_hook(True).begin()
        opt.minimize(w * w, global_step=tf.train.get_or_create_global_step())
        with pytest.raises(ValueError, match="already called"):
            opt.minimize(w * w, global_step=tf.train.get_or_create_global_step())
