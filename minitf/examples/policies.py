"""Synchronisation policies side by side on a simulated cluster: time per update, waste, staleness.

Runs the same between-graph training, a one-weight linear regression, under
each policy of `minitf.cluster.policies` and under TF's own backup workers
(`tf.train.SyncReplicasOptimizer` with ``R = K`` of ``N = n``), on ``n``
simulated workers whose gradients take a shifted-exponential time. It
prints one line per policy: virtual seconds per update (beside the closed
form where there is one), gradients applied, dropped and cancelled, and the
mean staleness of the applied ones. The same seed gives the same table::

    python -m minitf.examples.policies --workers 8 --k 4 --steps 200 --out /tmp/policies

With ``--out``, it also writes each run's report and plots, and
``loss.png``: every policy's loss against virtual time, on one set of axes.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

import minitf as tf
from minitf.cluster import SimulatedCluster, delays, policies

W_TRUE = 2.0
LR = 0.05
POLICIES = ("FullySync", "KSync", "KBatchSync", "Async", "KAsync", "KBatchAsync", "TF backups")


def batch(worker: int, step: int, size: int = 16):
    """Worker ``worker``'s batch for its ``step``-th run (independent of timing).

    Args:
        worker: The worker's index.
        step: How many runs the worker has made.
        size: The batch size.
    """
    rng = np.random.default_rng([worker, step])
    x = rng.normal(size=size).astype(np.float32)
    return x, (W_TRUE * x + 0.5 * rng.normal(size=size)).astype(np.float32)


def make_optimizer(policy: str, k: int, n: int):
    """The policy's optimizer and its hook maker ``(is_chief) -> hook``.

    Args:
        policy: One of `POLICIES`.
        k: Gradients per update (R for TF's backups).
        n: How many workers.
    """
    base = tf.train.GradientDescentOptimizer(LR)
    if policy == "TF backups":
        opt = tf.train.SyncReplicasOptimizer(base, k, n)
        return opt, lambda is_chief: opt.make_session_run_hook(is_chief, num_tokens=0)
    cls = getattr(policies, policy)
    opt = cls(base, n) if cls in (policies.FullySync, policies.Async) else cls(base, k, n)
    return opt, opt.make_session_run_hook


def formula(policy: str, k: int, n: int, shift: float, mean: float) -> float | None:
    """The closed-form mean virtual seconds per update, where there is one.

    Args:
        policy: One of `POLICIES`.
        k: Gradients per update.
        n: How many workers.
        shift: The seconds every gradient takes.
        mean: The mean of the exponential rest of it.
    """

    def harmonic(m):
        return sum(1 / i for i in range(1, m + 1))

    if policy == "FullySync":
        return shift + mean * harmonic(n)
    if policy == "KSync":
        return shift + mean * (harmonic(n) - harmonic(n - k))
    if policy in ("KBatchAsync", "Async"):
        return (1 if policy == "Async" else k) * (shift + mean) / n  # steady state
    if shift == 0 and policy in ("KAsync", "KBatchSync"):
        return mean * (harmonic(n) - harmonic(n - k)) if policy == "KAsync" else k * mean / n
    return None


def run(policy: str, workers: int, k: int, steps: int, seed: int, shift: float, mean: float,
        out: str | None = None) -> dict:  # fmt: skip
    """One simulated run under ``policy``; returns its summary and loss curve.

    Args:
        policy: One of `POLICIES`.
        workers: How many workers.
        k: Gradients per update.
        steps: Global steps per run.
        seed: Seeds the delay draws.
        shift: The seconds every gradient takes.
        mean: The mean of the exponential rest of it.
        out: A directory for the run's report and plots, or None.
    """
    cluster = SimulatedCluster(
        {"ps": 1, "worker": workers},
        seed=seed,
        worker_delay=delays.ShiftedExponential(shift=shift, mean=mean),
    )

    def worker(i):
        with tf.Graph().as_default():
            setter = tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{i}", cluster=cluster.cluster_spec
            )
            with tf.device(setter):
                x = tf.placeholder(tf.float32, [None])
                y = tf.placeholder(tf.float32, [None])
                w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
                loss = tf.reduce_mean(tf.square(w * x - y), name="loss")
                global_step = tf.train.get_or_create_global_step()
                opt, hook = make_optimizer(policy, k, workers)
                train_op = opt.minimize(loss, global_step=global_step)
            hooks = [hook(i == 0), tf.train.StopAtStepHook(last_step=steps)]
            with tf.train.MonitoredTrainingSession(
                master=cluster.target("worker", i), is_chief=i == 0, hooks=hooks,
                save_checkpoint_secs=None, log_step_count_steps=None,
            ) as sess:  # fmt: skip
                local = 0
                while not sess.should_stop():
                    xb, yb = batch(i, local)
                    sess.run([train_op, loss], {x: xb, y: yb})
                    local += 1

    report = cluster.run_workers(worker, out=out)
    updates, gradients = report["updates"][:steps], report["gradients"]
    applied = [g for g in gradients if not g["dropped"]]
    return {
        "policy": policy,
        "time_per_update": updates[-1]["time"] / len(updates),
        "formula": formula(policy, k, workers, shift, mean),
        "applied": len(applied),
        "dropped": sum(g["dropped"] and not g["cancelled"] for g in gradients),
        "cancelled": sum(g["cancelled"] for g in gradients),
        "staleness": float(np.mean([g["staleness"] for g in applied])) if applied else 0.0,
        "loss": [(e["time"], e["value"]) for e in report["loss"]],
    }


def describe(result: dict) -> str:
    """One line of the table.

    Args:
        result: What `run` returned.
    """
    known = result["formula"]
    formula_text = f"(formula {known:.4f})" if known is not None else " " * 16
    return (
        f"{result['policy']:>11}: {result['time_per_update']:.4f} s per update {formula_text}  "
        f"applied {result['applied']:5d}  dropped {result['dropped']:4d}  "
        f"cancelled {result['cancelled']:4d}  staleness {result['staleness']:5.2f}"
    )


def main(argv=None) -> list[dict]:
    """Runs every policy; prints one line each and returns the summaries.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--k", type=int, default=4, help="gradients per update (R for TF)")
    parser.add_argument("--steps", type=int, default=200, help="global steps per run")
    parser.add_argument("--shift", type=float, default=0.5, help="seconds every gradient takes")
    parser.add_argument("--mean", type=float, default=1.0, help="mean of the exponential rest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated")
    parser.add_argument("--out", default=None, help="directory for reports and plots")
    args = parser.parse_args(argv)
    results = []
    for policy in [p.strip() for p in args.policies.split(",")]:
        if policy not in POLICIES:
            parser.error(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
        out = os.path.join(args.out, policy.replace(" ", "_")) if args.out else None
        result = run(policy, args.workers, args.k, args.steps, args.seed, args.shift, args.mean,
                     out)  # fmt: skip
        results.append(result)
        print(describe(result), flush=True)
    if args.out:
        with open(os.path.join(args.out, "policies.json"), "w") as f:
            json.dump(results, f, indent=1)
        _plot(results, args, os.path.join(args.out, "loss.png"))
    return results


def _plot(results: list[dict], args, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    styles = ["-", "--", "-.", ":", "-", "--", "-."]
    for result, style in zip(results, styles):
        points = sorted(result["loss"])
        times = np.array([t for t, _ in points])
        values = np.array([v for _, v in points])
        window = max(1, len(values) // 40)  # a moving mean: each batch's loss is noisy
        smooth = np.convolve(values, np.ones(window) / window, mode="valid")
        ax.plot(times[window - 1 :], smooth, style, label=result["policy"], linewidth=1.5)
    ends = sorted(max(t for t, _ in r["loss"]) for r in results if r["loss"])
    if ends:
        ax.set_xlim(0, ends[len(ends) // 2])  # the median run's end: the slowest would squash it
    ax.set_yscale("log")
    ax.set_xlabel("virtual seconds")
    ax.set_ylabel("batch loss (moving mean)")
    ax.set_title(
        f"{args.workers} workers, K = {args.k}, gradient time "
        f"ShiftedExponential({args.shift:g}, {args.mean:g})"
    )
    ax.legend(ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
