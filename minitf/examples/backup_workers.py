"""Backup workers on a simulated cluster: time per update against gradients dropped.

Chen et al. ("Revisiting Distributed Synchronous SGD", 2016) run synchronous
SGD with ``b`` backup workers: each update takes the first ``N - b``
gradients of ``N`` workers and drops the rest. Updates stop waiting for the
slowest workers, so they come faster; the price is the gradients dropped.

This script runs TF's distributed trainer (``minitf/examples/trainer.py``,
unchanged) on a `minitf.cluster.SimulatedCluster` of ``--workers`` workers
whose steps take a shifted-exponential time, once per number of backups,
and prints, per run, the mean virtual time per update and the fraction of
gradients dropped. The same seed gives the same table on every run::

    python -m minitf.examples.backup_workers --workers 20 --steps 60 --out /tmp/backups

With ``--out``, it also writes each run's report and plots, and
``tradeoff.png``: both quantities against the number of backups.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

from minitf.cluster import SimulatedCluster, delays
from minitf.examples import trainer


def run(workers: int, backups: int, steps: int, seed: int, out: str | None = None) -> dict:
    """One simulated run with ``backups`` backup workers; returns its summary.

    Args:
        workers: How many worker tasks.
        backups: How many of them are backups: R = workers - backups.
        steps: Global steps to train.
        seed: Seeds the delay draws.
        out: A directory for the run's report and plots, or None.
    """
    cluster = SimulatedCluster(
        {"ps": 1, "worker": workers},
        seed=seed,
        worker_delay=delays.ShiftedExponential(shift=0.1, mean=0.1),
    )
    with tempfile.TemporaryDirectory() as train_dir:
        args = ["--train_dir", train_dir, "--train_steps", str(steps)]
        args += ["--replicas_to_aggregate", str(workers - backups), "--save_steps", "1000000"]
        report = cluster.run(trainer.__file__, args, out=out)
    updates, gradients = report["updates"], report["gradients"]
    return {
        "backups": backups,
        "time_per_update": report["time"] / len(updates),
        "dropped_fraction": sum(g["dropped"] for g in gradients) / len(gradients),
        "updates": len(updates),
    }


def main(argv=None) -> list[dict]:
    """Runs the sweep; prints one line per run and returns the summaries.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--backups", default="0,1,2,4,8", help="comma-separated counts")
    parser.add_argument("--steps", type=int, default=60, help="global steps per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="directory for reports and plots")
    args = parser.parse_args(argv)
    results = []
    for backups in [int(b) for b in args.backups.split(",")]:
        out = os.path.join(args.out, f"backups_{backups}") if args.out else None
        result = run(args.workers, backups, args.steps, args.seed, out)
        results.append(result)
        print(
            f"{backups:2d} backups: {result['time_per_update']:.4f} s per update, "
            f"{100 * result['dropped_fraction']:5.1f} % of gradients dropped",
            flush=True,
        )
    if args.out:
        with open(os.path.join(args.out, "tradeoff.json"), "w") as f:
            json.dump(results, f, indent=1)
        _plot(results, args.workers, os.path.join(args.out, "tradeoff.png"))
    return results


def _plot(results: list[dict], workers: int, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backups = [r["backups"] for r in results]
    fig, left = plt.subplots(figsize=(8, 4.5), dpi=120)
    left.plot(backups, [r["time_per_update"] for r in results], "o-", color="#0072B2")
    left.set_xlabel(f"backup workers (of {workers})")
    left.set_ylabel("virtual seconds per update", color="#0072B2")
    right = left.twinx()
    right.plot(backups, [100 * r["dropped_fraction"] for r in results], "s--", color="#D55E00")
    right.set_ylabel("% of gradients dropped", color="#D55E00")
    left.set_title("Backup workers: faster updates, more gradients dropped")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
