"""Every benchmark in one command, and one table of minitf against what it was measured beside.

Runs each script in ``benchmarks/`` (each prints one JSON line), ``--repeats``
times, and prints:

* to stderr, as it goes: which benchmark runs, and how long it took;
* to stdout, a Markdown table: per workload, minitf's figure, the baseline
  measured in the same run (hand-written numpy, raw sockets, memcpy) and, with
  ``--tf-python``, TensorFlow 1.x's, with the ratios and whether the target is
  met. With several repeats each cell is the range, lowest to highest;
* under the table, the *steal* while each benchmark ran: the share of the
  cores' time the hypervisor gave to other machines (``/proc/stat``), the
  first thing to look at when a figure is out of line with other runs;
* then one JSON line with every run's figures and steal, for scripts.

TensorFlow is never imported here: ``--tf-python`` names an interpreter that
has it (a virtualenv outside the repository), and the benchmarks that compare
with TF start their TF side with it, in the same run.

Run::

    .venv/bin/python benchmarks/run_all.py --tf-python /path/to/tf-venv/bin/python --repeats 3

``--only local_overhead transport`` runs some of them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from proc_stat import cpu_ticks, steal_fraction  # this script's directory: benchmarks/

HERE = Path(__file__).resolve().parent


@dataclass
class Benchmark:
    """One script of ``benchmarks/``.

    Attributes:
        name: Its file name without ``.py``.
        args: Arguments it always gets.
        takes_tf: Whether it accepts ``--tf-python``.
    """

    name: str
    args: list[str] = field(default_factory=list)
    takes_tf: bool = False


BENCHMARKS = [
    Benchmark("local_overhead", takes_tf=True),
    Benchmark("transport", takes_tf=True),
    Benchmark("dataflow"),
    # A 500-step window is about 1.3 s of minitf's training: one busy second
    # of the shared machine decides it. Three turns of each configuration on
    # both frameworks, and their medians, as local_overhead alternates three times.
    Benchmark("sync_training", args=["--repeats", "3"], takes_tf=True),
    Benchmark("sync_timeline"),
    Benchmark("checkpoint"),
    Benchmark("tracing"),
    Benchmark("simulated"),
]


@dataclass
class Row:
    """A line of the table: one figure of one benchmark and what it is compared with.

    Attributes:
        workload: What was measured, in words.
        bench: The benchmark's name.
        key: The JSON key of minitf's figure.
        unit: The figure's unit.
        baseline: ``(words, key)`` of the baseline measured in the same run, if any.
        tf_key: The JSON key of TensorFlow's figure from the same run, if any.
        target: The target in words, if there is one.
        met: Whether a run's figures meet the target (given the run's JSON).
        lower_is_better: For times and costs.
    """

    workload: str
    bench: str
    key: str
    unit: str
    baseline: tuple[str, str] | None = None
    tf_key: str | None = None
    target: str = ""
    met: Callable[[dict], bool] | None = None
    lower_is_better: bool = False


def _ratio(a: str, b: str) -> Callable[[dict], float]:
    return lambda r: r[a] / r[b]


ROWS = [
    Row("chain of 100 scalar adds, runs/s", "local_overhead", "chain100_runs_per_s", "runs/s",
        tf_key="tf_chain100_runs_per_s"),
    Row("MLP 784-128-10 SGD step, batch 64", "local_overhead", "mlp_steps_per_s", "steps/s",
        baseline=("its matrix products in numpy", "matmul_limit_steps_per_s"),
        tf_key="tf_mlp_steps_per_s", target="≥ 1.2× TF",
        met=lambda r: r["mlp_steps_per_s"] >= 1.2 * r["tf_mlp_steps_per_s"]),
    Row("MLP step as users write it: sess.run with a feed dict", "local_overhead",
        "mlp_feed_dict_steps_per_s", "steps/s", tf_key="tf_mlp_feed_dict_steps_per_s",
        target="≥ 1.2× TF",
        met=lambda r: r["mlp_feed_dict_steps_per_s"] >= 1.2 * r["tf_mlp_feed_dict_steps_per_s"]),
    Row("MLP step, thread pools left to each framework", "local_overhead",
        "mlp_defaults_steps_per_s", "steps/s", tf_key="tf_mlp_defaults_steps_per_s"),
    Row("MLP step, the whole step in numpy", "local_overhead", "mlp_steps_per_s", "steps/s",
        baseline=("hand-written numpy step", "numpy_mlp_steps_per_s")),
    Row("64 MB variable: assign from a feed, read back", "local_overhead",
        "assign_read_gb_per_s", "GB/s", baseline=("two np.copyto", "numpy_copy_gb_per_s"),
        tf_key="tf_assign_read_gb_per_s"),
    Row("pull 64 MB from a ps process (same host)", "transport", "pull_64mb_gb_per_s", "GB/s",
        baseline=("raw loopback TCP", "raw_tcp_64mb_gb_per_s"), tf_key="tf_pull_64mb_gb_per_s",
        target="≥ 2× TF and ≥ 1.5× raw TCP",
        met=lambda r: r["pull_64mb_gb_per_s"] >= 2 * r["tf_pull_64mb_gb_per_s"]
        and r["pull_64mb_gb_per_s"] >= 1.5 * r["raw_tcp_64mb_gb_per_s"]),
    Row("pull 16 MB from a ps process (same host)", "transport", "pull_16mb_gb_per_s", "GB/s",
        baseline=("raw loopback TCP", "raw_tcp_16mb_gb_per_s"), tf_key="tf_pull_16mb_gb_per_s"),
    Row("fetch a scalar from a ps process", "transport", "scalar_fetch_ms_median", "ms",
        tf_key="tf_scalar_fetch_ms_median", lower_is_better=True),
    Row("1 MB gradients from 4 producers into an accumulator", "dataflow",
        "aggregation_gb_per_s", "GB/s", baseline=("numpy +=", "numpy_add_gb_per_s"),
        target="≥ 50 % of +=",
        met=lambda r: r["aggregation_gb_per_s"] >= 0.5 * r["numpy_add_gb_per_s"]),
    Row("the same, kernels called without a session (fraction of +=)", "dataflow",
        "kernels_only_fraction_of_numpy", "of +="),
    Row("one apply_grad of 16 values through Session.run", "dataflow", "session_apply_us", "µs",
        baseline=("the kernel called directly", "kernel_apply_us"), lower_is_better=True),
    Row("FIFOQueue, one producer and one consumer", "dataflow", "queue_elements_per_s",
        "elements/s", baseline=("Python's queue.Queue", "pyqueue_elements_per_s")),
    Row("SyncReplicas, 1 ps + 2 workers", "sync_training", "minitf_sync_2w_steps_per_s",
        "global steps/s", tf_key="tf_sync_2w_steps_per_s", target="≥ 2× TF (issue 6)",
        met=lambda r: r["minitf_sync_2w_steps_per_s"] >= 2 * r["tf_sync_2w_steps_per_s"]),
    Row("SyncReplicas, CPU per global step", "sync_training", "minitf_sync_2w_cpu_ms_per_step",
        "ms", tf_key="tf_sync_2w_cpu_ms_per_step", target="≤ 0.5× TF (issue 6)",
        met=lambda r: r["minitf_sync_2w_cpu_ms_per_step"] <= 0.5 * r["tf_sync_2w_cpu_ms_per_step"],
        lower_is_better=True),
    Row("SyncReplicas, framework overhead per global step (CPU − 2 × the numpy step)",
        "sync_training", "framework_overhead_ms_per_global_step", "ms",
        tf_key="tf_framework_overhead_ms_per_global_step", target="≤ 1 ms (issue 6)",
        met=lambda r: r["framework_overhead_ms_per_global_step"] <= 1.0, lower_is_better=True),
    Row("SyncReplicas, worker 1's step: its four messages (sent and read)", "sync_timeline",
        "messages_us", "µs", baseline=("the whole step", "worker1_step_us"), lower_is_better=True),
    Row("SyncReplicas, worker 1's step: its forward and backward pass", "sync_timeline",
        "worker_pass_us", "µs", baseline=("the whole numpy step, update included", "numpy_step_us"),
        lower_is_better=True),
    Row("SyncReplicas, launch to first step", "sync_training", "minitf_launch_to_first_step_s",
        "s", tf_key="tf_launch_to_first_step_s", target="< 2 s (issue 6)",
        met=lambda r: r["minitf_launch_to_first_step_s"] < 2.0, lower_is_better=True),
    Row("SyncReplicas, 1 ps + 2 workers, thread pools left to each framework",
        "sync_training", "minitf_sync_2w_defaults_steps_per_s", "global steps/s",
        tf_key="tf_sync_2w_defaults_steps_per_s"),
    Row("async, 1 ps + 2 workers", "sync_training", "minitf_async_2w_steps_per_s",
        "global steps/s", tf_key="tf_async_2w_steps_per_s", target="≥ 2× TF",
        met=lambda r: r["minitf_async_2w_steps_per_s"] >= 2 * r["tf_async_2w_steps_per_s"]),
    Row("async, CPU per global step", "sync_training", "minitf_async_2w_cpu_ms_per_step", "ms",
        tf_key="tf_async_2w_cpu_ms_per_step", target="≤ 0.5× TF",
        met=lambda r: r["minitf_async_2w_cpu_ms_per_step"]
        <= 0.5 * r["tf_async_2w_cpu_ms_per_step"], lower_is_better=True),
    Row("async, 1 ps + 2 workers, thread pools left to each framework", "sync_training",
        "minitf_async_2w_defaults_steps_per_s", "global steps/s",
        tf_key="tf_async_2w_defaults_steps_per_s"),
    Row("Saver.save of 64 MB", "checkpoint", "save_mb_per_s", "MB/s",
        baseline=("np.savez + fsync + rename", "numpy_save_mb_per_s")),
    Row("Saver.restore of 64 MB", "checkpoint", "restore_mb_per_s", "MB/s",
        baseline=("np.load", "numpy_load_mb_per_s")),
    Row("a traced MLP step (FULL_TRACE)", "tracing", "full_trace_steps_per_s", "steps/s",
        baseline=("the same step untraced", "mlp_steps_per_s")),
    Row("simulate 2,000 updates of SyncReplicas(6 of 8), CPU", "simulated", "sync_6_of_8_cpu_s",
        "s", baseline=("the same rules as plain-Python events", "event_model_6_of_8_cpu_s"),
        target="≤ 3 s", met=lambda r: r["sync_6_of_8_cpu_s"] <= 3, lower_is_better=True),
]  # fmt: skip


def run_one(bench: Benchmark, tf_python: str | None, timeout: float) -> dict:
    """Runs one benchmark script; returns its JSON line.

    Args:
        bench: The benchmark.
        tf_python: An interpreter with TensorFlow, passed on if the script takes it.
        timeout: Seconds the script may take.

    Returns:
        The script's figures.

    Raises:
        RuntimeError: if the script fails or prints no JSON line (its output included).
    """
    command = [sys.executable, str(HERE / f"{bench.name}.py"), *bench.args]
    if tf_python and bench.takes_tf:
        command += ["--tf-python", tf_python]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"{bench.name} failed (exit {done.returncode}):\n{done.stdout[-2000:]}"
            f"\n{done.stderr[-4000:]}"
        )
    return json.loads(lines[-1])


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _span(values: list[float], fmt: Callable[[float], str] = _number) -> str:
    low, high = min(values), max(values)
    return fmt(low) if fmt(low) == fmt(high) else f"{fmt(low)}–{fmt(high)}"


def _times(value: float) -> str:
    return f"{value:.2f}×"


def table(runs: dict[str, list[dict]]) -> str:
    """The Markdown table of every row whose benchmark ran.

    Args:
        runs: Per benchmark, the JSON of each of its runs.

    Returns:
        The table, header included.
    """
    lines = [
        "| workload | minitf | baseline, same run | minitf ÷ baseline | TF 1.x, same run "
        "| minitf ÷ TF | target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in ROWS:
        results = [r for r in runs.get(row.bench, []) if row.key in r]
        if not results:
            continue
        mine = _span([r[row.key] for r in results]) + f" {row.unit}"
        base = base_ratio = tf = tf_ratio = met = "—"
        if row.baseline and all(row.baseline[1] in r for r in results):
            words, key = row.baseline
            base = f"{_span([r[key] for r in results])} ({words})"
            base_ratio = _span([_ratio(row.key, key)(r) for r in results], _times)
        if row.tf_key and all(row.tf_key in r for r in results):
            tf = _span([r[row.tf_key] for r in results])
            tf_ratio = _span([_ratio(row.key, row.tf_key)(r) for r in results], _times)
        if row.met is not None:
            try:
                verdicts = [row.met(r) for r in results]
            except KeyError:
                verdicts = []  # a figure the target needs was not measured (no --tf-python)
            if verdicts:
                met = f"{sum(verdicts)} of {len(verdicts)}"
        lines.append(
            f"| {row.workload} | {mine} | {base} | {base_ratio} | {tf} | {tf_ratio} "
            f"| {row.target or '—'} | {met} |"
        )
    return "\n".join(lines)


def steal_line(steal: dict[str, list[float]]) -> str:
    """One line naming the steal while each benchmark ran (the range over its runs).

    Args:
        steal: Per benchmark, the `steal_fraction` of each run.

    Returns:
        The line, or an empty string if nothing was measured.
    """
    parts = [
        f"{name} {_span([100 * value for value in values], lambda v: f'{v:.1f}')} %"
        for name, values in steal.items()
        if values
    ]
    if not parts:
        return ""
    return (
        "Steal (the share of the cores' time the hypervisor gave to other machines, "
        "from /proc/stat) while each benchmark ran: " + ", ".join(parts) + "."
    )


def machine() -> str:
    """One line about this machine: CPU model, cores, Python and numpy."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    import numpy

    return (
        f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {numpy.__version__}"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        The parsed options.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="a Python interpreter with tensorflow installed")
    parser.add_argument("--repeats", type=int, default=1, help="runs of every benchmark")
    parser.add_argument(
        "--only", nargs="+", choices=[b.name for b in BENCHMARKS], help="run just these"
    )
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds one benchmark run may take"
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    if args.tf_python and not Path(args.tf_python).exists():
        parser.error(f"--tf-python {args.tf_python}: no such interpreter")
    return args


def main(argv: list[str] | None = None) -> None:
    """Runs the benchmarks and prints the table and the JSON line.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
    """
    args = parse_args(argv)
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only]
    runs: dict[str, list[dict]] = {}
    steal: dict[str, list[float]] = {}
    started = time.monotonic()
    for repeat in range(args.repeats):
        for i, bench in enumerate(chosen, 1):
            print(
                f"[{repeat + 1}/{args.repeats}] {bench.name} ({i}/{len(chosen)}) ...",
                file=sys.stderr,
                flush=True,
            )
            begun, ticks = time.monotonic(), cpu_ticks()
            runs.setdefault(bench.name, []).append(run_one(bench, args.tf_python, args.timeout))
            stolen = steal_fraction(ticks, cpu_ticks())
            note = ""
            if stolen is not None:
                steal.setdefault(bench.name, []).append(round(stolen, 4))
                note = f", steal {100 * stolen:.1f} %"
            print(f"    {time.monotonic() - begun:.0f} s{note}", file=sys.stderr, flush=True)
    print(f"Machine: {machine()}.")
    print(
        f"{args.repeats} run(s) of each benchmark"
        + (" with TensorFlow side by side" if args.tf_python else "")
        + f", {time.monotonic() - started:.0f} s in all.\n"
    )
    print(table(runs))
    print()
    if steal:
        print(steal_line(steal))
        print()
    print(
        json.dumps(
            {"benchmark": "run_all", "repeats": args.repeats, "runs": runs, "steal_fraction": steal}
        )
    )


if __name__ == "__main__":
    main()
