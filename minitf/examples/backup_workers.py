"""Backup workers on a simulated cluster: time per update against gradients dropped.

Chen et al. ("Revisiting Distributed Synchronous SGD", 2016) run synchronous
SGD with ``b`` backup workers: each update takes the first ``N - b``
gradients of ``N`` workers and drops the rest. Updates stop waiting for the
slowest workers, so they come faster; the price is the gradients dropped.

This script runs TF's distributed trainer (``minitf/examples/trainer.py``,
unchanged) on a `minitf.cluster.SimulatedCluster` of ``--workers`` workers
whose steps take a shifted-exponential time, once per number of backups,
and prints, per run, the mean virtual time per update, beside the
order-statistics prediction, and the fraction of gradients dropped. The
same seed gives the same table on every run::

    python -m minitf.examples.backup_workers --workers 20 --steps 60 --out /tmp/backups

With ``--out``, it also writes each run's report and plots, and
``tradeoff.png``: both quantities against the number of backups. Chen et
al.'s curve, 100 workers and 0 to 20 backups, 21 runs of 20 updates each,
two at a time::

    python -m minitf.examples.backup_workers --workers 100 --backups 0-20 --steps 20 \\
        --no-reports --jobs 2 --out /tmp/curve

The prediction is that of independent steps: an update waits for the
``N - b``-th fastest of ``N`` fresh compute times, ``shift + mean * (H_N -
H_b)`` (`predicted_time_per_update`). The runs come out slower: a worker
whose gradient is dropped still finishes it before it takes a token, so
it starts the next step late.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
from collections.abc import Iterator

from minitf.cluster import SimulatedCluster, delays
from minitf.examples import trainer

SHIFT = 0.1  # seconds every step takes
MEAN = 0.1  # the mean of the exponential rest of it


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
        worker_delay=delays.ShiftedExponential(shift=SHIFT, mean=MEAN),
    )
    with tempfile.TemporaryDirectory() as train_dir:
        args = ["--train_dir", train_dir, "--train_steps", str(steps)]
        args += ["--replicas_to_aggregate", str(workers - backups), "--save_steps", "1000000"]
        # The trainers' own last lines ("worker 7: stopped at ...") are not the table's.
        report = cluster.run(trainer.__file__, args, out=out, output=io.StringIO())
    updates, gradients = report["updates"][:steps], report["gradients"]
    return {
        "backups": backups,
        "time_per_update": updates[-1]["time"] / len(updates),
        "predicted": predicted_time_per_update(workers, backups),
        "dropped_fraction": sum(g["dropped"] for g in gradients) / len(gradients),
        "updates": len(updates),
    }


def predicted_time_per_update(workers: int, backups: int) -> float:
    """The order-statistics prediction: the ``(N - b)``-th fastest of ``N`` fresh step times.

    For ``shift + Exponential(mean)`` times, the ``k``-th smallest of ``N``
    has mean ``shift + mean * (H_N - H_(N - k))`` (Rényi), here with
    ``k = N - b``.

    Args:
        workers: ``N``.
        backups: ``b``.
    """

    def harmonic(m: int) -> float:
        return sum(1 / i for i in range(1, m + 1))

    return SHIFT + MEAN * (harmonic(workers) - harmonic(backups))


def parse_backups(text: str) -> list[int]:
    """``"0,1,2"`` or ``"0-20"`` (or both, ``"0-4,8"``) as a list of backup counts.

    Args:
        text: The ``--backups`` argument.
    """
    counts = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        counts += range(int(first), int(last or first) + 1)
    return counts


def main(argv=None) -> list[dict]:
    """Runs the sweep; prints one line per run and returns the summaries.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--backups", default="0,1,2,4,8", help="counts: 0,1,2 or 0-20")
    parser.add_argument("--steps", type=int, default=60, help="global steps per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="directory for reports and plots")
    parser.add_argument(
        "--no-reports", action="store_true", help="with --out, only the trade-off, no run reports"
    )
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, in processes")
    args = parser.parse_args(argv)
    results = []
    for result in _runs(args):
        results.append(result)
        print(
            f"{result['backups']:2d} backups: {result['time_per_update']:.4f} s per update "
            f"(predicted {result['predicted']:.4f}), "
            f"{100 * result['dropped_fraction']:5.1f} % of gradients dropped",
            flush=True,
        )
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "tradeoff.json"), "w") as f:
            json.dump(results, f, indent=1)
        _plot(results, args.workers, os.path.join(args.out, "tradeoff.png"))
    return results


def _runs(args) -> Iterator[dict]:
    """Each backup count's run, in order: here, or ``args.jobs`` at a time in processes.

    Each run is a whole simulated cluster of its own, seeded alike: where it
    runs changes nothing in its numbers.
    """
    runs = [
        (args.workers, backups, args.steps, args.seed,
         os.path.join(args.out, f"backups_{backups}") if args.out and not args.no_reports else None)
        for backups in parse_backups(args.backups)
    ]  # fmt: skip
    if args.jobs <= 1:
        for arguments in runs:
            yield run(*arguments)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # By the module's own name: run as ``python -m``, this module is ``__main__``,
    # which a process running a script makes its own.
    from minitf.examples.backup_workers import run as by_name

    context = multiprocessing.get_context("spawn")  # no threads of this process copied
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        yield from pool.map(by_name, *zip(*runs))


def _plot(results: list[dict], workers: int, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backups = [r["backups"] for r in results]
    updates = results[0]["updates"]
    fig, left = plt.subplots(figsize=(8, 4.5), dpi=120)
    left.plot(backups, [r["time_per_update"] for r in results], "o-", color="#0072B2",
              label=f"SyncReplicas on the simulated cluster ({updates} updates a run)")  # fmt: skip
    left.plot(backups, [r["predicted"] for r in results], ":", color="#0072B2",
              label="order statistics: shift + mean (H_N - H_b)")  # fmt: skip
    left.set_xlabel(f"backup workers b (of N = {workers})")
    left.set_ylabel("virtual seconds per update", color="#0072B2")
    left.set_ylim(bottom=0)
    left.legend(loc="upper center")
    left.xaxis.get_major_locator().set_params(integer=True)
    right = left.twinx()
    right.plot(backups, [100 * r["dropped_fraction"] for r in results], "s--", color="#D55E00")
    right.set_ylabel("% of gradients dropped", color="#D55E00")
    left.set_title("Backup workers: faster updates, more gradients dropped")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
