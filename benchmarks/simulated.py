"""The simulated cluster's speed: CPU seconds per run, beside an event model with no graph.

Prints one JSON line. Every figure is CPU seconds of this process
(``time.process_time``), so a busy machine slows it less than wall time:

* ``sync_6_of_8_cpu_s``: TF's distributed trainer (``minitf/examples/trainer.py``,
  a ``tf.app.flags`` script with ``MonitoredTrainingSession``), run by
  `minitf.cluster.SimulatedCluster.run` on 1 ps and 8 workers with
  ``SyncReplicasOptimizer(6, 8)``, ``num_tokens=0`` and ``Exponential(1)``
  compute times, for ``--updates`` global steps (2,000); beside it its
  virtual seconds per update and the fraction of gradients dropped;
* ``event_model_6_of_8_cpu_s``: the same run as a plain-Python event model
  (`event_model`): the same delay draws, the same token queue and the same
  accumulator rule (a gradient counts if its local step is the global step,
  an update takes ``R``, releases ``N`` tokens), no graph, no session; its
  time per update and dropped fraction should be the simulator's;
* ``simulator_over_event_model``: how far the simulator is from it;
* ``local_loop_cpu_s``: a floor for the same work: the trainer's own training
  loop (its model, ``MonitoredTrainingSession`` with its hooks, its batches)
  on a local session with no cluster, run as many times as the 6-of-8 run's
  workers ran steps (``local_loop_runs``); ``sync_6_of_8_over_local_loop`` is
  what the cluster costs on top (the partitions on two tasks, the tensors
  between them, the accumulators, the tokens and the chief's sync steps);
* ``policies_cpu_s``: each of Dutta et al.'s policies
  (`minitf.cluster.policies`, k = 4 of 8), as ``python -m
  minitf.examples.policies`` runs them, for ``--policy-updates`` updates
  (500);
* ``sync_100_cpu_s``: the trainer on 100 workers, ``SyncReplicasOptimizer(75, 100)``,
  for ``--updates-100`` updates (1,000), and its event model's.

``outputs`` holds what the runs computed (virtual time per update, dropped
gradients, final weights): the same on every run of the same code, and
unchanged by a change that only makes the simulator faster.

The process pins itself to one CPU and BLAS to one thread.

Run: ``.venv/bin/python benchmarks/simulated.py`` (``--updates 200
--policy-updates 50 --updates-100 20`` for a quick look; ``--mlp`` adds the
older figure: 100 workers × 100 steps of a 784-128-10 MLP, wall seconds).
"""

from __future__ import annotations

import argparse
import collections
import heapq
import io
import json
import os
import sys
import tempfile
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
from minitf.cluster import delays  # noqa: E402
from minitf.cluster.simulated import SimulatedCluster  # noqa: E402
from minitf.examples import policies as policies_example  # noqa: E402
from minitf.examples import trainer  # noqa: E402

BATCH = 64
POLICIES = ("FullySync", "KSync", "KBatchSync", "Async", "KAsync", "KBatchAsync")


def sync_trainer(workers: int, aggregate: int, updates: int, seed: int = 0) -> dict:
    """The trainer script on a simulated cluster, strict tokens; CPU seconds and its outputs."""
    cluster = SimulatedCluster(
        {"ps": 1, "worker": workers}, seed=seed, worker_delay=delays.Exponential(1.0)
    )
    with tempfile.TemporaryDirectory() as train_dir:
        args = ["--train_dir", train_dir, "--train_steps", str(updates), "--num_tokens", "0"]
        args += ["--replicas_to_aggregate", str(aggregate), "--save_steps", "1000000"]
        start = time.process_time()
        report = cluster.run(trainer.__file__, args, output=io.StringIO())
        cpu = time.process_time() - start
    taken = report["updates"][:updates]
    gradients = report["gradients"]
    return {
        "cpu_s": cpu,
        "time_per_update": taken[-1]["time"] / len(taken),
        "dropped_fraction": sum(g["dropped"] for g in gradients) / len(gradients),
        "update_times": [u["time"] for u in taken],
        "dropped": sum(g["dropped"] for g in gradients),
        "weights": final_weights(cluster),
        "moves": report["moves"],
        "worker_steps": len(gradients),
    }


def local_loop(runs: int) -> float:
    """CPU seconds of ``runs`` steps of the trainer's training loop on a local session.

    The trainer's model, batches and ``MonitoredTrainingSession`` hooks (a
    ``StopAtStepHook``, the checkpoint and step-counter hooks with the
    trainer's settings), plain gradient descent: a worker's own loop with no
    cluster, the least a simulated worker step can cost.
    """
    with tf.Graph().as_default(), tempfile.TemporaryDirectory() as train_dir:
        x = tf.placeholder(tf.float32, [None, trainer.FEATURES], name="x")
        y = tf.placeholder(tf.float32, [None], name="y")
        w = tf.get_variable("w", [trainer.FEATURES], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
        prediction = tf.squeeze(tf.matmul(x, tf.expand_dims(w, 1)), [1]) + b
        loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
        data = trainer.batches(0)
        with tf.train.MonitoredTrainingSession(
            checkpoint_dir=train_dir, hooks=[tf.train.StopAtStepHook(last_step=runs + 1)],
            save_checkpoint_steps=1000000, save_checkpoint_secs=None, log_step_count_steps=50,
        ) as sess:  # fmt: skip
            start = time.process_time()
            for _ in range(runs):
                batch_x, batch_y = next(data)
                sess.run([train_op, global_step, loss], {x: batch_x, y: batch_y})
            return time.process_time() - start


def final_weights(cluster: SimulatedCluster) -> list[float]:
    """The trainer's ``w`` and ``b`` on the ps task after the run."""
    final = {}

    def read():
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.get_variable("w", [trainer.FEATURES], initializer=tf.zeros_initializer())
                b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
            with tf.Session(cluster.target("worker", 0)) as sess:
                final["w"] = sess.run([w, b])

    cluster.run_clients(read)
    w, b = final["w"]
    return [float(v) for v in w] + [float(b)]


def event_model(workers: int, aggregate: int, updates: int, seed: int = 0) -> dict:
    """SyncReplicas with ``num_tokens=0`` as events in plain Python: no graph, no session.

    Each worker draws its compute time from its own stream (as the
    simulation does), pushes a gradient stamped with its local step, then
    takes a token (first come, first served), whose value is its next local
    step. The accumulator counts a gradient whose stamp is the global step
    and drops an older one; at ``aggregate`` counted it makes an update and
    releases ``workers`` tokens of the new step.
    """
    model = delays.Exponential(1.0)
    start = time.process_time()
    rngs = [np.random.default_rng([seed, i]) for i in range(workers)]
    finishing = [(model(rngs[i]), i, 0) for i in range(workers)]  # (time, worker, stamp)
    heapq.heapify(finishing)
    tokens: collections.deque[int] = collections.deque()
    waiting: collections.deque[int] = collections.deque()
    global_step = counted = dropped = pushed = 0
    update_times = []
    while len(update_times) < updates:
        now, worker, stamp = heapq.heappop(finishing)
        pushed += 1
        if stamp == global_step:
            counted += 1
            if counted == aggregate:
                global_step, counted = global_step + 1, 0
                update_times.append(now)
                tokens.extend([global_step] * workers)
        else:
            dropped += 1
        waiting.append(worker)
        while waiting and tokens:
            i = waiting.popleft()
            heapq.heappush(finishing, (now + model(rngs[i]), i, tokens.popleft()))
    return {
        "cpu_s": time.process_time() - start,
        "time_per_update": update_times[-1] / len(update_times),
        "dropped_fraction": dropped / pushed,
        "update_times": update_times,
    }


def policy_run(policy: str, updates: int) -> dict:
    """One policy as ``python -m minitf.examples.policies`` runs it (8 workers, k = 4)."""
    start = time.process_time()
    result = policies_example.run(policy, 8, 4, updates, 0, 0.5, 1.0)
    return {
        "cpu_s": time.process_time() - start,
        "time_per_update": result["time_per_update"],
        "counts": [result["applied"], result["dropped"], result["cancelled"]],
        "losses": [value for _, value in result["loss"]],
    }


def fingerprint(values) -> str:
    """A short digest of a list of floats, exact to the bit."""
    import hashlib

    return hashlib.sha256(np.asarray(values, np.float64).tobytes()).hexdigest()[:16]


# -- the older figure: 100 workers x 100 steps of an MLP, wall seconds -----------------------


def mlp_run(workers: int, steps: int) -> float:
    """Simulates SyncReplicas training of a 784-128-10 MLP; returns wall seconds."""
    cluster = SimulatedCluster({"ps": 2, "worker": workers}, seed=0)

    def worker(i):
        rng = np.random.default_rng(i)
        with tf.Graph().as_default():
            setter = tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{i}", cluster=cluster.cluster_spec
            )
            with tf.device(setter):
                x = tf.placeholder(tf.float32, [None, 784])
                y = tf.placeholder(tf.int64, [None])
                w1 = tf.get_variable("w1", [784, 128])
                b1 = tf.get_variable("b1", [128], initializer=tf.zeros_initializer())
                w2 = tf.get_variable("w2", [128, 10])
                b2 = tf.get_variable("b2", [10], initializer=tf.zeros_initializer())
                logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
                )
                global_step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(
                    tf.train.GradientDescentOptimizer(0.1), workers, workers
                )
                train = opt.minimize(loss, global_step=global_step)
            hooks = [opt.make_session_run_hook(i == 0), tf.train.StopAtStepHook(last_step=steps)]
            with tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", i), is_chief=i == 0, hooks=hooks,
                save_checkpoint_secs=None, log_step_count_steps=None,
            ) as sess:  # fmt: skip
                fixed = {
                    x: rng.normal(size=(BATCH, 784)).astype(np.float32),
                    y: rng.integers(0, 10, BATCH),
                }
                while not sess.should_stop():
                    sess.run(train, fixed)

    start = time.perf_counter()
    cluster.run_workers(worker)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--updates", type=int, default=2000, help="updates of the 6-of-8 run")
    parser.add_argument("--policy-updates", type=int, default=500, help="updates per policy")
    parser.add_argument("--updates-100", type=int, default=1000, help="updates of 100 workers")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated")
    parser.add_argument("--mlp", action="store_true", help="also the MLP's 100 x 100 figure")
    args = parser.parse_args()
    sync = sync_trainer(8, 6, args.updates)
    events = event_model(8, 6, args.updates)
    line = {
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "updates": args.updates,
        "sync_6_of_8_cpu_s": round(sync["cpu_s"], 2),
        "sync_6_of_8_time_per_update": round(sync["time_per_update"], 4),
        "sync_6_of_8_dropped": round(sync["dropped_fraction"], 4),
        "event_model_6_of_8_cpu_s": round(events["cpu_s"], 4),
        "event_model_time_per_update": round(events["time_per_update"], 4),
        "event_model_dropped": round(events["dropped_fraction"], 4),
        "simulator_over_event_model": round(sync["cpu_s"] / events["cpu_s"]),
    }
    line["local_loop_runs"] = sync["worker_steps"]
    line["local_loop_cpu_s"] = round(local_loop(sync["worker_steps"]), 2)
    line["sync_6_of_8_over_local_loop"] = round(sync["cpu_s"] / line["local_loop_cpu_s"], 2)
    outputs = {
        "sync_6_of_8": [
            fingerprint(sync["update_times"]),
            sync["dropped"],
            fingerprint(sync["weights"]),
        ],
        "event_model_6_of_8": fingerprint(events["update_times"]),
    }
    line["policy_updates"] = args.policy_updates
    line["policies_cpu_s"] = {}
    for policy in [p for p in args.policies.split(",") if p]:
        result = policy_run(policy, args.policy_updates)
        line["policies_cpu_s"][policy] = round(result["cpu_s"], 2)
        outputs[policy] = [
            round(result["time_per_update"], 6),
            result["counts"],
            fingerprint(result["losses"]),
        ]
    if args.updates_100:
        hundred = sync_trainer(100, 75, args.updates_100)
        events_100 = event_model(100, 75, args.updates_100)
        line["updates_100"] = args.updates_100
        line["sync_100_cpu_s"] = round(hundred["cpu_s"], 2)
        line["sync_100_time_per_update"] = round(hundred["time_per_update"], 4)
        line["event_model_100_cpu_s"] = round(events_100["cpu_s"], 4)
        line["event_model_100_time_per_update"] = round(events_100["time_per_update"], 4)
        outputs["sync_100"] = [
            fingerprint(hundred["update_times"]), hundred["dropped"],
            fingerprint(hundred["weights"]),
        ]  # fmt: skip
    if args.mlp:
        line["mlp_wall_s"] = round(mlp_run(100, 100), 2)
    line["outputs"] = outputs
    print(json.dumps(line))


if __name__ == "__main__":
    main()
