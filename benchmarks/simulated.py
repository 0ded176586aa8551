"""The simulated cluster's speed: how long simulating a big synchronous run takes here.

Prints one JSON line:

* ``mlp_wall_s``: wall seconds to simulate ``--steps`` global steps (100) of
  SyncReplicas training of the 784-128-10 MLP, batch 64, with 2 ps tasks and
  ``--workers`` workers (100), each worker running TF1's between-graph loop;
* ``mlp_moves`` and ``mlp_moves_per_s``: the simulated moves (ops run and
  completions delivered) and how many the simulator makes per wall second;
* ``mlp_numpy_s``: the same run's arithmetic done directly with numpy (each
  worker's forward and backward pass per global step, and the averaged
  update), measured in this run: the floor any simulator of it must pay;
* ``mlp_over_numpy``: the ratio of the two;
* ``scalar_wall_s`` / ``scalar_moves_per_s``: 1,000 global steps of 8
  workers on a one-variable model (``--scalar-steps``), the size of the
  policy experiments.

Every figure is on one core: the script pins itself to one CPU and BLAS to
one thread. Each worker feeds one batch, drawn once, as the numpy floor
does, so neither side times a random number generator.

Run: ``.venv/bin/python benchmarks/simulated.py`` (``--workers 10 --steps 10``
for a quick look).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

# The target is for one core: BLAS gets one thread and the process one CPU
# (set before numpy loads its BLAS).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import minitf as tf  # noqa: E402
from minitf.cluster.simulated import SimulatedCluster  # noqa: E402

BATCH = 64


def sync_run(workers: int, steps: int, build, batch) -> tuple[float, int]:
    """Simulates TF1 between-graph SyncReplicas training; returns (wall seconds, moves).

    ``build()`` makes the model's loss and its feeds under the device setter;
    ``batch(rng, feeds)`` gives a worker's feed dict (drawn once per worker).
    """
    cluster = SimulatedCluster({"ps": 2, "worker": workers}, seed=0)

    def worker(i):
        rng = np.random.default_rng(i)
        with tf.Graph().as_default():
            setter = tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{i}", cluster=cluster.cluster_spec
            )
            with tf.device(setter):
                loss, feeds = build()
                global_step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(
                    tf.train.GradientDescentOptimizer(0.1), workers, workers
                )
                train = opt.minimize(loss, global_step=global_step)
            hooks = [opt.make_session_run_hook(i == 0), tf.train.StopAtStepHook(last_step=steps)]
            with tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", i),
                is_chief=i == 0,
                hooks=hooks,
                save_checkpoint_secs=None,
                log_step_count_steps=None,
            ) as sess:
                # One batch per worker, drawn once, as the numpy floor does: the
                # figure is the simulator's, not the random number generator's.
                fixed = batch(rng, feeds)
                while not sess.should_stop():
                    sess.run(train, fixed)

    start = time.perf_counter()
    cluster.run_workers(worker)
    return time.perf_counter() - start, len(cluster.events)


def mlp_model():
    x = tf.placeholder(tf.float32, [None, 784])
    y = tf.placeholder(tf.int64, [None])
    w1 = tf.get_variable("w1", [784, 128])
    b1 = tf.get_variable("b1", [128], initializer=tf.zeros_initializer())
    w2 = tf.get_variable("w2", [128, 10])
    b2 = tf.get_variable("b2", [10], initializer=tf.zeros_initializer())
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return loss, (x, y)


def mlp_batch(rng, feeds):
    x, y = feeds
    return {x: rng.normal(size=(BATCH, 784)).astype(np.float32), y: rng.integers(0, 10, BATCH)}


def scalar_model():
    v = tf.get_variable("v", [], initializer=tf.ones_initializer())
    return tf.square(v - 3.0), ()


def mlp_numpy(workers: int, steps: int) -> float:
    """The run's arithmetic: every worker's forward and backward pass, then the mean update."""
    rng = np.random.default_rng(0)
    w1 = rng.normal(size=(784, 128)).astype(np.float32) * 0.05
    b1 = np.zeros(128, np.float32)
    w2 = rng.normal(size=(128, 10)).astype(np.float32) * 0.05
    b2 = np.zeros(10, np.float32)
    data = [
        (rng.normal(size=(BATCH, 784)).astype(np.float32), rng.integers(0, 10, BATCH))
        for _ in range(workers)
    ]
    start = time.perf_counter()
    for _ in range(steps):
        grads = [np.zeros_like(p) for p in (w1, b1, w2, b2)]
        for x, y in data:
            h = np.maximum(x @ w1 + b1, 0)
            z = h @ w2 + b2
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(BATCH), y] -= 1
            dz = p / BATCH
            dh = (dz @ w2.T) * (h > 0)
            for g, d in zip(grads, (x.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0))):
                g += d
        for p, g in zip((w1, b1, w2, b2), grads):
            p -= 0.1 * g / workers
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--scalar-steps", type=int, default=1000)
    args = parser.parse_args()
    mlp_wall, mlp_moves = sync_run(args.workers, args.steps, mlp_model, mlp_batch)
    numpy_s = mlp_numpy(args.workers, args.steps)
    scalar_wall, scalar_moves = sync_run(8, args.scalar_steps, scalar_model, lambda rng, f: {})
    print(
        json.dumps(
            {
                "workers": args.workers,
                "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                "steps": args.steps,
                "mlp_wall_s": round(mlp_wall, 2),
                "mlp_moves": mlp_moves,
                "mlp_moves_per_s": round(mlp_moves / mlp_wall),
                "mlp_numpy_s": round(numpy_s, 3),
                "mlp_over_numpy": round(mlp_wall / numpy_s, 1),
                "scalar_steps": args.scalar_steps,
                "scalar_wall_s": round(scalar_wall, 2),
                "scalar_moves_per_s": round(scalar_moves / scalar_wall),
            }
        )
    )


if __name__ == "__main__":
    main()
