"""TF's default tokens let a fast worker run ahead: the K-batch-sync effect, from a seed.

``SyncReplicasOptimizer``'s chief puts ``replicas_to_aggregate`` tokens in
the token queue before the first step (``num_tokens=-1``, TF's default).
Tokens carry no worker's name, so a worker that finishes early can take a
second one and push a second gradient into the same update while a slow
worker is still computing: the update averages two batches of the fast
worker and none of the slow one. The slow worker's gradient then arrives
for an update already taken and is dropped. This is what tensorflow issue
#11753 reports, and what Dutta et al. call K-batch-sync. With
``num_tokens=0`` the first step is a barrier too, and every update averages
one gradient of each worker.

This script runs TF's distributed trainer (``minitf/examples/trainer.py``,
unchanged) on a `minitf.cluster.SimulatedCluster` whose last worker is
slow, once with each token setting, and prints who contributed to each
update. The same seed gives the same lines on every run::

    python -m minitf.examples.tokens --workers 3 --steps 8 --record /tmp/race.json

``--record`` writes the default-tokens run as a recording that
``minitf step --replay FILE`` steps on real processes, the race included.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections import Counter

from minitf.cluster import SimulatedCluster, delays
from minitf.examples import trainer


def run(
    workers: int,
    steps: int,
    num_tokens: int,
    slow: float = 0.05,
    fast: float = 0.01,
    seed: int = 0,
    record: str | None = None,
    out: str | None = None,
) -> dict:
    """One simulated run of TF's trainer, the last worker slow; returns its summary.

    Args:
        workers: Worker tasks (every update waits for this many gradients).
        steps: Global steps to train for.
        num_tokens: The chief's initial tokens: -1 for TF's default, 0 for strict sync.
        slow: The slow worker's delay per step (virtual seconds).
        fast: The mean of the other workers' delays (exponential, seeded).
        seed: Seeds the delays.
        record: A file to record the run to, for ``minitf step --replay``.
        out: A directory for the run's report and plots.

    Returns:
        ``{"num_tokens", "updates", "time_per_update", "batched", "dropped",
        "slow_share", "applied", "lines"}``: ``batched`` counts the updates
        in which one worker gave more than one gradient, ``slow_share`` is
        the slow worker's share of the applied gradients, ``applied`` lists
        each update's workers (once per gradient) and ``lines`` describe each
        update.
    """
    slow_worker = workers - 1
    cluster = SimulatedCluster(
        {"ps": 1, "worker": workers},
        seed=seed,
        worker_delay={slow_worker: delays.Constant(slow), "*": delays.Exponential(fast)},
    )
    with tempfile.TemporaryDirectory() as train_dir:
        args = ["--train_dir", train_dir, "--train_steps", str(steps)]
        args += ["--num_tokens", str(num_tokens), "--save_steps", "1000000"]
        if record is not None:
            # A replay starts the script again, and must find no checkpoint to
            # restore: the recorded run writes to a new directory, removed after it.
            args[1] = tempfile.mkdtemp(prefix="tokens-train-", dir=os.path.dirname(record) or ".")
        try:
            report = cluster.run(trainer.__file__, args, out=out, record=record)
        finally:
            if record is not None:
                shutil.rmtree(args[1], ignore_errors=True)
    updates = report["updates"]
    applied = [worker for update in updates for worker in update["applied"]]
    lines = [
        f"update {n:2d} at {u['time']:.3f} s: applied {u['applied']}"
        + (f", dropped {u['dropped']}" if u["dropped"] else "")
        + ("   <- one worker gave several batches" if _batched(u) else "")
        for n, u in enumerate(updates, 1)
    ]
    return {
        "num_tokens": num_tokens,
        "updates": len(updates),
        "time_per_update": report["time"] / max(1, len(updates)),
        "batched": sum(_batched(u) for u in updates),
        "dropped": sum(len(u["dropped"]) for u in updates),
        "slow_share": applied.count(slow_worker) / max(1, len(applied)),
        "applied": [u["applied"] for u in updates],
        "lines": lines,
    }


def _batched(update: dict) -> bool:
    """Whether one worker gave more than one of the update's gradients."""
    return any(n > 1 for n in Counter(update["applied"]).values())


def main(argv=None) -> list[dict]:
    """Runs both token settings; prints each update and a summary; returns the summaries.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8, help="global steps per run")
    parser.add_argument("--slow", type=float, default=0.05, help="the slow worker's delay (s)")
    parser.add_argument("--fast", type=float, default=0.01, help="the others' mean delay (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", default=None, help="record the default-tokens run here")
    parser.add_argument("--out", default=None, help="directory for reports and plots")
    args = parser.parse_args(argv)
    if args.workers < 2 or args.steps < 1:
        parser.error("--workers must be at least 2 and --steps at least 1")
    results = []
    for num_tokens, title in ((-1, "TF's default tokens"), (0, "num_tokens=0")):
        out = os.path.join(args.out, f"num_tokens_{num_tokens}") if args.out else None
        record = args.record if num_tokens == -1 else None
        result = run(
            args.workers, args.steps, num_tokens, args.slow, args.fast, args.seed, record, out
        )
        results.append(result)
        print(f"{title} (worker {args.workers - 1} is slow):")
        for line in result["lines"]:
            print("  " + line)
        print(
            f"  {result['batched']} of {result['updates']} updates took several batches of one "
            f"worker; {result['dropped']} gradients dropped; the slow worker gave "
            f"{100 * result['slow_share']:.0f} % of the applied gradients; "
            f"{result['time_per_update']:.4f} s per update",
            flush=True,
        )
    if args.record:
        print(f"recorded the default-tokens run: minitf step --replay {args.record}")
    return results


if __name__ == "__main__":
    main()
