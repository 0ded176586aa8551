"""The simulated cluster: the same moves every run, values by hand, time by formula.

Oracles outside minitf: strict synchronous SGD is recomputed with numpy from
the workers' own batches; the virtual time of an update under random worker
delays is checked against the order statistics of those delays (the mean of
the largest of ``n`` exponentials is ``mean * H_n``).
"""

import gc
import math
import os
import zlib

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import delays
from minitf.cluster.simulated import SimulatedCluster

pytestmark = pytest.mark.timeout(120)

FEATURES = 4
W_TRUE = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
LR = 0.1


def batch(worker: int, step: int, size: int = 8):
    """Worker ``worker``'s batch for its ``step``-th step (independent of timing)."""
    rng = np.random.default_rng([worker, step])
    x = rng.normal(size=(size, FEATURES)).astype(np.float32)
    return x, x @ W_TRUE


def sync_training(cluster, workers: int, steps: int, num_tokens: int = -1, log=None):
    """TF1 between-graph SyncReplicas training on ``cluster``; returns each worker's final w."""
    final = {}

    def worker(i):
        with tf.Graph().as_default():
            setter = tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{i}", cluster=cluster.cluster_spec
            )
            with tf.device(setter):
                x = tf.placeholder(tf.float32, [None, FEATURES])
                y = tf.placeholder(tf.float32, [None])
                w = tf.get_variable("w", [FEATURES], initializer=tf.zeros_initializer())
                pred = tf.squeeze(tf.matmul(x, tf.expand_dims(w, 1)), [1])
                loss = tf.reduce_mean(tf.square(pred - y))
                global_step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(
                    tf.train.GradientDescentOptimizer(LR), workers, workers
                )
                train = opt.minimize(loss, global_step=global_step)
            hooks = [
                opt.make_session_run_hook(i == 0, num_tokens=num_tokens),
                tf.train.StopAtStepHook(last_step=steps),
            ]
            with tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", i),
                is_chief=i == 0,
                hooks=hooks,
                save_checkpoint_secs=None,
                log_step_count_steps=None,
            ) as sess:
                local = 0
                while not sess.should_stop():
                    xb, yb = batch(i, local)
                    _, step = sess.run([train, global_step], {x: xb, y: yb})
                    if log is not None:
                        log.append((i, local, step))
                    local += 1
                final[i] = sess.run(w)

    cluster.run_workers(worker)
    return final


def test_the_same_seed_gives_the_same_moves_values_and_times_every_time():
    runs = []
    for _ in range(20):
        cluster = SimulatedCluster(
            {"ps": 1, "worker": 3}, seed=7, worker_delay=delays.Exponential(0.5)
        )
        final = sync_training(cluster, workers=3, steps=8)
        runs.append((cluster.events, cluster.clock.now(), final[0].tobytes()))
    first = runs[0]
    assert len(first[0]) > 1000
    for run in runs[1:]:
        assert run == first


def test_another_seed_gives_other_delays():
    times = []
    for seed in (1, 2):
        cluster = SimulatedCluster(
            {"ps": 1, "worker": 2}, seed=seed, worker_delay=delays.Exponential(1.0)
        )
        sync_training(cluster, workers=2, steps=5)
        times.append(cluster.clock.now())
    assert times[0] != times[1]


def test_strict_sync_applies_the_mean_of_every_workers_gradient_per_step():
    workers, steps = 3, 6
    cluster = SimulatedCluster({"ps": 2, "worker": workers}, seed=0)
    final = sync_training(cluster, workers, steps, num_tokens=0)
    # numpy: w -= lr * mean over workers of d/dw mean((x w - y)^2), worker i's t-th batch.
    w = np.zeros(FEATURES, np.float64)
    for t in range(steps):
        grads = []
        for i in range(workers):
            x, y = (a.astype(np.float64) for a in batch(i, t))
            grads.append(2.0 / len(y) * x.T @ (x @ w - y))
        w -= LR * np.mean(grads, axis=0)
    for i in range(workers):
        np.testing.assert_allclose(final[i], w, rtol=1e-5, atol=1e-6)


def test_an_update_waits_for_the_slowest_worker_on_the_virtual_clock():
    # Strict sync, free ops: every update starts all workers together and ends
    # when the last of their delays has passed.
    cluster = SimulatedCluster(
        {"ps": 1, "worker": 3},
        worker_delay={0: delays.Constant(0.25), 1: delays.Constant(1.5), 2: delays.Constant(0.5)},
    )
    sync_training(cluster, workers=3, steps=10, num_tokens=0)
    assert cluster.clock.now() == pytest.approx(10 * 1.5)


def test_mean_time_per_update_is_the_expected_maximum_of_the_workers_delays():
    # E[max of n Exp(mean)] = mean * H_n; Var = mean^2 * sum 1/k^2 (Renyi).
    n, updates, mean = 4, 300, 1.0
    cluster = SimulatedCluster(
        {"ps": 1, "worker": n}, seed=3, worker_delay=delays.Exponential(mean)
    )
    sync_training(cluster, workers=n, steps=updates, num_tokens=0)
    expected = mean * sum(1 / k for k in range(1, n + 1))
    sd = mean * math.sqrt(sum(1 / k**2 for k in range(1, n + 1)) / updates)
    assert abs(cluster.clock.now() / updates - expected) < 4 * sd


def test_ops_cost_virtual_time_one_at_a_time_per_task():
    cluster = SimulatedCluster({"worker": 1}, op_cost={"MatMul": 0.5, "*": 0.0})

    def client():
        with tf.Graph().as_default():
            with tf.device("/job:worker/task:0"):
                a = tf.placeholder(tf.float32, [2, 2])
                b = tf.matmul(a, a)
                c = tf.matmul(a, a)
            with tf.Session(cluster.target("worker", 0)) as sess:
                total = sess.run(b + c, {a: np.ones((2, 2))})
                np.testing.assert_array_equal(total, np.full((2, 2), 4.0))

    cluster.run(client)
    assert cluster.clock.now() == pytest.approx(1.0)  # two products, one after the other


def test_a_cluster_where_nothing_can_move_fails_the_waiting_step_naming_its_wait():
    cluster = SimulatedCluster({"ps": 1, "worker": 1})

    def client():
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                q = tf.FIFOQueue(2, tf.float32, shapes=[], name="tokens")
            with tf.device("/job:worker/task:0"):
                take = q.dequeue(name="take_token")
            with tf.Session(cluster.target("worker", 0)) as sess:
                with pytest.raises(tf.errors.DeadlineExceededError, match="take_token") as info:
                    sess.run(take)
                assert "holds 0, needs 1" in str(info.value)
                sess.run(q.enqueue(3.0))
                assert sess.run(take) == 3.0  # the queue and the session go on

    cluster.run(client)


def test_a_session_outside_the_clusters_clients_is_refused():
    cluster = SimulatedCluster({"worker": 1})
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:0"):
            c = tf.constant(1.0)
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(RuntimeError, match="SimulatedCluster.run"):
                sess.run(c)


def test_the_collector_runs_less_often_while_a_run_goes_on_and_as_before_after_it():
    from minitf.runtime.distributed.simulation import RUN_GC_THRESHOLDS

    before = gc.get_threshold()
    gc.set_threshold(1234, 5, 6)
    try:
        seen = []

        def client():
            seen.append(gc.get_threshold())

        def failing():
            seen.append(gc.get_threshold())
            raise KeyError("boom")

        SimulatedCluster({"worker": 1}).run(client)
        assert seen == [RUN_GC_THRESHOLDS]
        assert gc.get_threshold() == (1234, 5, 6)
        with pytest.raises(KeyError, match="boom"):
            SimulatedCluster({"worker": 1}).run(failing)
        assert seen == [RUN_GC_THRESHOLDS] * 2
        assert gc.get_threshold() == (1234, 5, 6)
    finally:
        gc.set_threshold(*before)


def test_a_client_error_is_raised_by_run():
    cluster = SimulatedCluster({"worker": 2})

    def client():
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        cluster.run(client)


def test_tfs_trainer_script_runs_unchanged_and_strict_sync_ends_as_on_real_processes(tmp_path):
    from minitf.cluster import LocalCluster
    from minitf.examples import trainer

    args = ["--train_steps", "30", "--num_tokens", "0", "--save_steps", "10"]
    sim_dir, real_dir = str(tmp_path / "sim"), str(tmp_path / "real")
    simulated = SimulatedCluster({"ps": 1, "worker": 2})
    simulated.run(trainer.__file__, ["--train_dir", sim_dir, *args])
    with LocalCluster(
        {"ps": 1, "worker": 2}, trainer.__file__, ["--train_dir", real_dir, *args], output=None
    ) as real:
        assert real.wait(90) == 0
    for name in ("w", "b", "global_step"):
        np.testing.assert_allclose(
            tf.train.load_variable(sim_dir, name), tf.train.load_variable(real_dir, name), rtol=1e-6
        )
    assert tf.train.load_variable(sim_dir, "global_step") == 30


def test_a_script_run_twice_makes_the_same_moves_and_values(tmp_path):
    from minitf.examples import trainer

    runs = []
    for k in range(2):
        cluster = SimulatedCluster(
            {"ps": 1, "worker": 3}, seed=5, worker_delay=delays.Exponential(0.1)
        )
        train_dir = str(tmp_path / f"run{k}")
        cluster.run(trainer.__file__, ["--train_dir", train_dir, "--train_steps", "20"])
        runs.append((cluster.events, tf.train.load_variable(train_dir, "w").tobytes()))
    assert runs[0] == runs[1]


def test_the_report_tells_each_update_its_time_gradients_and_each_workers_idle_time(tmp_path):
    delay = {0: delays.Constant(0.25), 1: delays.Constant(1.5), 2: delays.Constant(0.5)}
    cluster = SimulatedCluster({"ps": 1, "worker": 3}, worker_delay=delay)
    steps = 4
    sync_training(cluster, workers=3, steps=steps, num_tokens=0)
    report = cluster.report()
    # Strict sync: update k ends when the slowest worker's k-th delay has passed.
    assert [u["global_step"] for u in report["updates"]] == [1, 2, 3, 4]
    assert [u["time"] for u in report["updates"]] == pytest.approx([1.5, 3.0, 4.5, 6.0])
    assert all(sorted(u["applied"]) == [0, 1, 2] and not u["dropped"] for u in report["updates"])
    assert len(report["gradients"]) == 3 * steps
    assert all(g["staleness"] == 0 and not g["dropped"] for g in report["gradients"])
    # Each worker waits out its delay once per step; the rest of the 6 s it is idle.
    for worker, seconds in zip(report["workers"], (0.25, 1.5, 0.5)):
        assert worker["delay_time"] == pytest.approx(steps * seconds)
        assert worker["idle_time"] == pytest.approx(6.0 - steps * seconds)
    paths = cluster.write_report(str(tmp_path))
    assert sorted(paths) == ["idle_time", "report", "staleness", "time_per_update"]
    import json

    with open(paths["report"]) as f:
        assert json.load(f)["updates"][0]["applied"] == report["updates"][0]["applied"]
    for name in ("idle_time", "staleness", "time_per_update"):
        with open(paths[name], "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_script_that_reads_its_role_from_tf_config_sees_its_own_in_its_thread(tmp_path):
    # minitf's async example takes its role from TF_CONFIG when no flag gives it.
    script = tmp_path / "role.py"
    script.write_text(
        "import json, os, sys\n"
        "import minitf as tf\n"
        "config = json.loads(os.environ['TF_CONFIG'])\n"
        "cluster = tf.train.ClusterSpec(config['cluster'])\n"
        "job, index = config['task']['type'], config['task']['index']\n"
        "server = tf.train.Server(cluster, job_name=job, task_index=index)\n"
        "if job == 'ps':\n"
        "    server.join()\n"
        "else:\n"
        "    with tf.device('/job:ps/task:0'):\n"
        "        v = tf.Variable(0.0, name='v')\n"
        "    with tf.Session(server.target) as sess:\n"
        "        if index == 0:\n"
        "            sess.run(v.initializer)\n"
        "        while sess.run(tf.report_uninitialized_variables()).size:\n"
        "            pass\n"
        "        sess.run(tf.assign_add(v, float(index + 1)))\n"
        "        print(f'{job}/{index}', sess.run(v))\n"
    )
    cluster = SimulatedCluster({"ps": 1, "worker": 3})
    assert "TF_CONFIG" not in os.environ
    cluster.run(str(script))
    assert "TF_CONFIG" not in os.environ  # the process's environment is as it was
    events = [e for e in cluster.events if e[5].startswith("AssignAdd")]
    assert [e[2] for e in events] == ["worker:0", "worker:1", "worker:2"]


def test_op_costs_measured_on_this_machine_are_saved_and_drive_the_virtual_clock(tmp_path):
    from minitf.cluster import op_costs

    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [256, 256])
        product = tf.matmul(tf.matmul(x, x), x)
        small = x[0, 0] + 1.0
        table = op_costs.measure([product, small], {x: np.ones((256, 256), np.float32)}, 5, g)
    assert table["MatMul"] > table["AddV2" if "AddV2" in table else "Add"]
    assert set(table) >= {"MatMul", "*"}
    path = str(tmp_path / "costs.json")
    op_costs.save(table, path)
    assert op_costs.load(path) == table
    with pytest.raises(ValueError, match="op_costs.measure"):
        op_costs.load(str(tmp_path / "missing.json"))

    cluster = SimulatedCluster({"worker": 1}, op_cost=path)

    def client():
        with tf.Graph().as_default():
            with tf.device("/job:worker/task:0"):
                a = tf.placeholder(tf.float32, [2, 2])
                b = tf.matmul(tf.matmul(a, a), a)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(b, {a: np.ones((2, 2))})

    cluster.run(client)
    # One task, one op at a time: the clock is the sum of the costs of the ops that ran.
    ran = [e[5] for e in cluster.events if e[4] == "run"]
    matmuls = sum(name.startswith("MatMul") for name in ran)
    assert matmuls == 2
    expected = 2 * table["MatMul"] + (len(ran) - 2) * table["*"]
    assert cluster.clock.now() == pytest.approx(expected)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"tasks": {"worker": 0}}, ValueError, "at least one, per job"),
        ({"tasks": {}}, ValueError, "at least one, per job"),
        ({"tasks": {"worker": "2"}}, ValueError, "whole number of tasks"),
        ({"worker_delay": 0.5}, TypeError, "minitf.cluster.delays model"),
        ({"worker_delay": {"slow": delays.Constant(1.0)}}, TypeError, "by worker index"),
        ({"op_cost": {"MatMul": -1.0}}, TypeError, "seconds >= 0"),
        ({"op_cost": ["MatMul"]}, TypeError, "op_cost must be"),
        ({"loss": 3}, TypeError, "loss must be the name"),
        ({"loss": ["loss", None]}, TypeError, "loss must be the name"),
    ],
    ids=[
        "no-task",
        "no-job",
        "count-text",
        "delay-number",
        "delay-key",
        "cost-neg",
        "cost-list",
        "loss-number",
        "loss-none",
    ],  # fmt: skip
)
def test_a_badly_described_cluster_is_refused_when_it_is_made(kwargs, error, words):
    kwargs = {"tasks": {"worker": 1}, **kwargs}
    with pytest.raises(error, match=words):
        SimulatedCluster(**kwargs)


def test_a_missing_script_or_task_is_named_before_anything_runs(tmp_path):
    cluster = SimulatedCluster({"worker": 1})
    with pytest.raises(FileNotFoundError, match="no such script: .*missing.py"):
        cluster.run(str(tmp_path / "missing.py"))
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        cluster.target("ps", 0)
    assert cluster.events == []  # nothing ran


def test_measuring_op_costs_needs_at_least_one_step():
    from minitf.cluster import op_costs

    with pytest.raises(ValueError, match="at least one step, not 0"):
        op_costs.measure(tf.constant(1.0), steps=0)


def test_the_schedule_has_the_ids_real_tasks_give_and_offers_where_a_held_task_makes_them():
    # The step ids are those a real master gives with the replayable
    # incarnation: 24 bits of crc32("<task>#replayable"), 10 of the session's
    # number, 10 of crc32 of the run's signature, 18 counting its runs. A
    # dequeue that waits is, on a held task, offered to its step once an
    # enqueue makes it possible, and its step runs it as a move (delivering
    # the offer) right after that enqueue; its result is delivered later.
    cluster = SimulatedCluster({"ps": 1, "worker": 2})
    with tf.Graph().as_default() as graph:
        with tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(1, tf.float32, shapes=[], shared_name="q", name="q")
        with tf.device("/job:worker/task:0"):
            taken = q.dequeue(name="take") + 1.0
        with tf.device("/job:worker/task:1"):
            put = q.enqueue(5.0, name="put")
    got = {}

    def taker():
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            got["taken"] = sess.run(taken)

    def putter():
        with tf.Session(cluster.target("worker", 1), graph=graph) as sess:
            sess.run(put)

    cluster.run_clients(taker, putter)
    assert got["taken"] == 6.0
    schedule = cluster.schedule()

    def first_id(task, signature):
        client = zlib.crc32(f"{task}#replayable".encode()) & 0xFFFFFF
        slot = zlib.crc32(signature.encode()) & 0x3FF
        return client << 38 | slot << 18 | 1

    taker_id = first_id("/job:worker/replica:0/task:0", f"{taken.name}||")
    putter_id = first_id("/job:worker/replica:0/task:1", "|put|")
    ps = [(step, kind, op) for step, kind, op in schedule["/job:ps/replica:0/task:0"]]
    assert {step for step, _, _ in ps} == {taker_id, putter_id}
    run_take = ps.index((taker_id, 0, "take"))
    run_put = ps.index((putter_id, 0, "put"))
    assert run_take < run_put
    # The offer is delivered right after the enqueue; the result after that.
    assert ps[run_put + 1] == (taker_id, 1, "take")
    assert ps.count((taker_id, 1, "take")) == 2


def test_a_recording_needs_a_script_not_a_function(tmp_path):
    cluster = SimulatedCluster({"worker": 1})
    with pytest.raises(ValueError, match="needs a script's path"):
        cluster.run(lambda: None, record=str(tmp_path / "run.json"))
