"""Every op of every step is a move of the step's execution, chosen by a scheduler.

A scheduler that counts what each move runs (``tests/runtime/core/counted_task.py``)
sees, for every step that ends, exactly the ops of the plans that ran: a
local training step, a SyncReplicas global step across real processes, and
the same on the simulated cluster. The expected counts are the plans' own
sizes (``len(plan.steps)``) — how many moves made them is free (one for a
straight walk, one per op when watched), but no op runs outside a move.
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import LocalCluster, SimulatedCluster
from minitf.examples import trainer
from minitf.runtime.core import config
from minitf.runtime.core.scheduler import RUN, FifoScheduler

from . import counted_task

pytestmark = pytest.mark.timeout(120)


def _mlp():
    rng = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [8, 20])
    y = tf.placeholder(tf.float32, [8, 3])
    w1 = tf.Variable(rng.randn(20, 16).astype(np.float32) * 0.1)
    b1 = tf.Variable(np.zeros(16, np.float32))
    w2 = tf.Variable(rng.randn(16, 3).astype(np.float32) * 0.1)
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feeds = {x: rng.rand(8, 20).astype(np.float32), y: rng.rand(8, 3).astype(np.float32)}
    return train, loss, feeds


@pytest.mark.parametrize("watched", [False, True], ids=["free-running", "op-by-op"])
def test_every_op_of_a_local_training_step_is_run_by_a_move_of_the_scheduler(watched):
    class Counting(counted_task.CountingScheduler):
        observes_ops = watched

    counter = Counting()
    counter.path = os.devnull
    train, loss, feeds = _mlp()
    with tf.Session(scheduler=counter) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train, feeds)
        sess.run(loss, feeds)
    assert counter.steps == 5
    assert counter.moved == counter.planned > 0
    if not watched and config.fast():
        # A local step that never waits is one move: its straight walk.
        assert counter.units == counter.steps


def test_a_watched_step_runs_one_op_per_move_and_the_results_are_those_of_a_free_run():
    class OneByOne(FifoScheduler):
        observes_ops = True

        def __init__(self):
            self.runs = 0

        def next_move(self, execution):
            move = super().next_move(execution)
            if move is not None and move[0] == RUN:
                assert len(execution.units[move[1]].ops) == 1
                self.runs += 1
            return move

    results = {}
    for name, scheduler in (("free", None), ("watched", OneByOne())):
        tf.reset_default_graph()
        train, loss, feeds = _mlp()
        with tf.Session(scheduler=scheduler) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(5):
                sess.run(train, feeds)
            results[name] = sess.run(loss, feeds)
    assert scheduler.runs > 0
    assert results["free"].tobytes() == results["watched"].tobytes()  # bit for bit


def test_every_op_of_a_sync_replicas_global_step_on_real_processes_is_a_move(tmp_path):
    steps = 6
    args = ["--steps", str(steps), "--optimizer", "sgd", "--num_tokens", "0",
            "--step_timeout", "60", "--report_every", "100"]  # fmt: skip
    env = {"MINITF_TEST_COUNTS": str(tmp_path)}
    output = io.StringIO()
    with LocalCluster(
        {"ps": 1, "worker": 2}, script=counted_task.__file__, args=args, env=env, output=output
    ) as cluster:
        assert cluster.wait(90) == 0, output.getvalue()[-800:]
    counts = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    assert set(counts) == {"ps-0", "worker-0", "worker-1"}
    for task, count in counts.items():
        assert count["steps"] > 0, task
        assert count["moved"] == count["planned"], (task, count)
    # The ps ran a part of every worker step and of every chief sync step.
    assert counts["ps-0"]["steps"] >= 2 * steps


def test_every_op_of_a_simulated_sync_replicas_run_is_a_move(tmp_path):
    cluster = SimulatedCluster({"ps": 1, "worker": 2})
    args = ["--train_dir", str(tmp_path), "--train_steps", "4", "--save_steps", "100"]
    cluster.run(trainer.__file__, args)
    runs: dict[tuple[str, int], int] = {}
    for _, _, client, number, kind, _ in cluster.events:
        if kind == "run":
            runs[client, number] = runs.get((client, number), 0) + 1
    completed = cluster.simulation.completed
    assert len(completed) > 8
    for client, number, planned in completed:
        assert runs[client, number] == planned, (client, number)


def test_the_speed_ups_change_no_bit_of_a_training_run():
    # The same script with MINITF_FAST=0 (every op a move, no buffers, no
    # fused kernels) and with the speed-ups on: the same weights, bit for bit.
    script = (
        "import numpy as np, minitf as tf, sys\n"
        "from tests.runtime.core.test_one_core import _mlp\n"
        "train, loss, feeds = _mlp()\n"
        "with tf.Session() as sess:\n"
        "    sess.run(tf.global_variables_initializer())\n"
        "    for _ in range(20):\n"
        "        sess.run(train, feeds)\n"
        "    weights = sess.run(tf.trainable_variables())\n"
        "sys.stdout.write(''.join(w.tobytes().hex() for w in weights))\n"
    )
    root = str(Path(__file__).resolve().parents[3])
    out = {}
    for fast in ("1", "0"):
        env = {**os.environ, "MINITF_FAST": fast, "PYTHONPATH": root}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=90
        )
        assert done.returncode == 0, done.stderr
        out[fast] = done.stdout
    assert out["1"] and out["1"] == out["0"]


@pytest.mark.parametrize(
    ("value", "on"), [("0", False), ("off", False), ("1", True), ("yes", True)]
)
def test_minitf_fast_takes_the_usual_words_for_off_and_on(value, on):
    env = {**os.environ, "MINITF_FAST": value}
    done = subprocess.run(
        [sys.executable, "-c", "from minitf.runtime.core import config; print(config.fast())"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(on)


def test_a_minitf_fast_value_it_does_not_understand_is_named_in_one_warning_and_stays_on():
    env = {**os.environ, "MINITF_FAST": "maybe"}
    done = subprocess.run(
        [sys.executable, "-c", "from minitf.runtime.core import config; print(config.fast())"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "True"
    warning = done.stderr.strip()
    assert "MINITF_FAST='maybe' is not understood: use 0 (off) or 1 (on" in warning
    assert "Traceback" not in warning and len(warning.splitlines()) == 1
