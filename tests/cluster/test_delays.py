"""Straggler delay models, and a straggling worker on a real cluster.

The models' draws are checked against their formulas (means, minimums) and
against numpy's own samplers seeded the same way; the cluster test makes one
backup worker slow with a constant delay and expects, exactly, that every
update applies the two fast workers and drops the slow one's gradient.
"""

import math

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import SyncRecord, delays
from tests.train.test_sync_replicas_optimizer import (
    Replica,
    _start_servers,
    batches,
    join_all,
    run_in_threads,
)

pytestmark = pytest.mark.timeout(60)


def test_constant_is_always_its_value():
    rng = np.random.default_rng(0)
    assert [delays.Constant(0.25)(rng) for _ in range(3)] == [0.25] * 3
    assert delays.Constant(0.25).mean == 0.25


def test_exponential_draws_numpys_exponential_with_that_mean():
    model = delays.Exponential(0.02)
    draws = [model(np.random.default_rng(5)) for _ in range(3)]
    assert draws == [np.random.default_rng(5).exponential(0.02)] * 3
    rng = np.random.default_rng(1)
    sample = np.array([model(rng) for _ in range(20000)])
    assert abs(sample.mean() - 0.02) < 0.001  # 5 standard errors: 0.02 / sqrt(20000) * 5


def test_shifted_exponential_never_goes_below_its_shift():
    model = delays.ShiftedExponential(0.01, 0.005)
    rng = np.random.default_rng(2)
    sample = np.array([model(rng) for _ in range(20000)])
    assert sample.min() >= 0.01
    assert abs(sample.mean() - 0.015) < 0.0003
    assert model.mean == pytest.approx(0.015)


def test_pareto_has_its_scale_as_minimum_and_shape_times_scale_over_shape_minus_one_as_mean():
    model = delays.Pareto(3.0, 0.01)
    rng = np.random.default_rng(3)
    sample = np.array([model(rng) for _ in range(50000)])
    assert sample.min() >= 0.01
    assert model.mean == pytest.approx(3.0 * 0.01 / 2.0)
    assert abs(sample.mean() - model.mean) < 0.0005
    assert delays.Pareto(1.0, 0.01).mean == math.inf


def test_bad_parameters_say_which_model_and_what_was_expected():
    finite = "must be a finite number of seconds >= 0, got"
    with pytest.raises(ValueError, match=f"Constant: seconds {finite} -1"):
        delays.Constant(-1)
    with pytest.raises(ValueError, match=f"Exponential: mean {finite} inf"):
        delays.Exponential(math.inf)  # a step that never ends: refused, not a hang
    with pytest.raises(ValueError, match="Pareto: shape must be positive"):
        delays.Pareto(0, 1)
    with pytest.raises(ValueError, match=r"not a delay model: 'Gauss\(1\)'; expected one of"):
        delays.parse_model("Gauss(1)")
    with pytest.raises(ValueError, match="Exponential: wrong number of arguments"):
        delays.parse_model("Exponential(1, 2)")
    with pytest.raises(ValueError, match="arguments must be numbers"):
        delays.parse_model("Constant(fast)")
    with pytest.raises(ValueError, match="expected entries like '1=Constant"):
        delays.parse("worker1=Constant(1)")


def test_the_environment_says_which_worker_is_slow_and_star_means_the_others():
    env = {delays.ENV: "*=Exponential(0.01); 2=Constant(0.5)", delays.SEED_ENV: "7"}
    assert delays.for_task("ps", 0, env) is None
    assert repr(delays.for_task("worker", 2, env).model) == "Constant(0.5)"
    assert repr(delays.for_task("worker", 0, env).model) == "Exponential(0.01)"
    assert delays.for_task("worker", 0, {delays.ENV: "1=Constant(1)"}) is None
    assert delays.for_task("worker", 0, {}) is None


def test_each_worker_has_its_own_stream_and_the_same_seed_gives_the_same_delays():
    model = delays.Exponential(0.01)
    first = [delays.Straggler(model, 1, seed=4).next_delay() for _ in range(1)]
    again = delays.Straggler(model, 1, seed=4)
    other = delays.Straggler(model, 2, seed=4)
    assert again.next_delay() == first[0]
    assert other.next_delay() != first[0]
    expected = np.random.default_rng([4, 1]).exponential(0.01)
    assert delays.Straggler(model, 1, seed=4).next_delay() == expected


@pytest.fixture
def slow_backup(monkeypatch):
    """Two ps and three workers; worker 2 waits 0.4 s before it computes its gradients."""
    monkeypatch.setenv(delays.ENV, "2=Constant(0.4)")
    spec, running = _start_servers(3)
    yield spec, running
    for server in running.values():
        server.stop()


def test_a_slow_backup_worker_is_dropped_from_every_update_and_its_wait_is_traced(slow_backup):
    spec, running = slow_backup
    assert running["worker2"].straggler is not None and running["worker0"].straggler is None
    replicas = [
        Replica(spec, running[f"worker{i}"], i, total_num_replicas=3, num_tokens=0)
        for i in range(3)
    ]
    for replica in replicas:
        replica.start()
    chief = replicas[0]
    coord = tf.train.Coordinator()
    chief.opt.get_chief_queue_runner().create_threads(chief.sess, coord, daemon=True, start=True)
    try:
        for k in range(1, 4):
            threads, tokens, errors = run_in_threads(
                *[(r.step, batches(10 * k + r.index)) for r in replicas]
            )
            join_all(threads, errors)
            # Three tokens per update: the two fast workers got update k's;
            # worker 2 pushed after update k and left with one of them too.
            assert tokens == [k, k, k]
        metadata = tf.RunMetadata()
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=5000)
        slow = replicas[2]
        fast_steps = run_in_threads(*[(r.step, batches(50 + r.index)) for r in replicas[:2]])
        slow.sess.run(
            slow.train_op, {slow.x: batches(52)[0], slow.y: batches(52)[1]}, options, metadata
        )
        join_all(fast_steps[0], fast_steps[2])
        record = SyncRecord(chief.sess).refresh()
    finally:
        coord.request_stop()
        for replica in replicas:
            replica.sess.close()
        coord.join(stop_grace_period_secs=10)
    for update in record.updates:
        update["applied"].sort()
    assert record.updates == [
        {"global_step": k, "applied": [0, 1], "extra": [], "dropped": [2], "cancelled": []}
        for k in range(1, 5)
    ]
    assert record.dropped_per_worker() == {2: 4}
    assert record.applied_per_worker() == {0: 4, 1: 4}
    waits = [
        node
        for dev in metadata.step_stats.dev_stats
        for node in dev.node_stats
        if node.node_name == "straggler_delay"
    ]
    assert len(waits) == 1 and waits[0]["op"] == "StragglerDelay"
    assert waits[0]["op_end_rel_micros"] >= 400_000
    assert waits[0]["waited_on"] == {"kind": "straggler", "seconds": 0.4}
