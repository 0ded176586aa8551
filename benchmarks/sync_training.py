"""Synchronous data-parallel training across processes: minitf beside TensorFlow 1.x.

Every task of a cluster is its own process on 127.0.0.1, running
``benchmarks/sync_training_task.py``: the same TF1 script on both frameworks
(a 784-128-10 MLP, batch 64 per worker, ``GradientDescentOptimizer(0.1)``,
variables on the ps through ``replica_device_setter``, wrapped in
``SyncReplicasOptimizer`` with R = N = the number of workers and strict
synchronisation, ``num_tokens=0``). Configurations, each run ``--repeats``
times (the median is reported):

* ``sync_2w``: 1 ps + 2 workers, the headline;
* ``sync_1w`` and ``sync_4w``: 1 ps + 1 and 4 workers (scaling);
* ``async_2w``: 1 ps + 2 workers, plain asynchronous ``minimize``;
* ``sync_2w_defaults`` and ``async_2w_defaults``: the headline and
  ``async_2w`` as a script that sets no thread pool runs them: no
  ``ConfigProto`` and no BLAS variable, each framework choosing its own
  threads (the others run with the settings below).

Each configuration runs on minitf and right after it on TensorFlow, then
the next configuration: the machine may be shared, and its speed drifts by
±20 % over minutes, so the two figures of a ratio are taken as close in
time as they can be.

For each, with ``<fw>`` ``minitf`` or ``tf``:

* ``<fw>_<config>_steps_per_s``: global steps per second over the measured
  window (``--steps`` global steps after ``--warmup``), timed by the chief
  with ``time.perf_counter``;
* ``<fw>_<config>_cpu_ms_per_step``: CPU time (user + system, from
  ``/proc/<pid>/stat``) of *all* the cluster's processes, the ps included,
  over the same window, per global step. The driver reads it when it
  receives the chief's ``WINDOW_START`` and ``WINDOW_END`` lines;
  ``..._cpu_ms_per_step_by_task`` splits the headline's among the tasks;
* ``<fw>_launch_to_first_step_s`` (headline): from starting the first
  process to the chief's first completed training step — interpreter and
  framework start-up, servers, graph construction, initialization;
* ``<fw>_<config>_steal_fraction_by_turn``: per turn, the share of the
  machine's CPU time over the window that went to *steal* (``/proc/stat``):
  time the hypervisor gave the cores to other machines, which the cluster
  loses without seeing.

The baseline measured in the same run is the model's own compute:
``numpy_step_ms``, one worker's step written by hand in numpy (forward,
backward, SGD update of the same MLP, float32 ``np.matmul``). A global step
of sync training with W workers computes W of them, so
``framework_overhead_ms_per_global_step`` is the headline's CPU per global
step minus 2 × ``numpy_step_ms``: the cost of the framework, the transport
and the synchronisation protocol. ``steps_per_s_vs_tf`` and
``cpu_per_step_vs_tf`` compare the headline with TensorFlow's.

Targets: at least 2× TensorFlow's global steps per second, at most 0.5× its
CPU per global step, under 2 s from launch to the first step, and at most
1 ms of framework overhead per global step above the model's own compute.

Every task but those of the ``*_defaults`` configurations gets one thread per op pool
(``ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)``,
passed to the server and the session) and BLAS pinned to one thread
(``OPENBLAS_NUM_THREADS=1``). Progress and a per-run line with each task's
CPU go to stderr; stdout gets one JSON line.

Run minitf alone::

    .venv/bin/python benchmarks/sync_training.py

With TensorFlow (tensorflow-cpu, in its own virtualenv)::

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu numpy
    .venv/bin/python benchmarks/sync_training.py --tf-python /tmp/tfvenv/bin/python
"""

from __future__ import annotations

import os

BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _var in BLAS_ENV:  # the tasks inherit the pin; the *_defaults runs take it out
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import queue  # noqa: E402
import secrets  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from proc_stat import cpu_ticks, steal_fraction  # noqa: E402 - this script's directory

from minitf.runtime.distributed.launcher import free_ports  # noqa: E402
from minitf.runtime.speedups.intra_op import USER_ENV  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TASK_SCRIPT = Path(__file__).resolve().with_name("sync_training_task.py")
CONFIGS = (("sync", 2, False), ("sync", 1, False), ("sync", 4, False), ("async", 2, False))
CONFIGS += (("sync", 2, True), ("async", 2, True))  # True: each framework's own threads
HEADLINE = ("sync", 2, False)
CLK_TCK = os.sysconf("SC_CLK_TCK")
EXIT_GRACE_S = 20.0
_PR_SET_PDEATHSIG = 1


def log(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # the driver's own clean-up still ends the tasks


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime: fields 14, 15


def _exit_status(proc: subprocess.Popen) -> int | None:
    """The exit code of a process that has ended, None while it runs; does not reap it.

    A reaped process's ``/proc`` entry is gone, so the CPU snapshots could no
    longer read it.
    """
    if proc.returncode is not None:  # already reaped
        return proc.returncode
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return proc.poll()
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def busy_cores(seconds: float = 1.0) -> float:
    """Cores the whole machine kept busy over ``seconds`` (other programs skew the figures)."""
    before = cpu_ticks()
    time.sleep(seconds)
    after = cpu_ticks()
    idle = (after[3] + after[4]) - (before[3] + before[4])  # idle + iowait
    busy = 1.0 - idle / max(1, sum(after) - sum(before))
    return busy * (os.cpu_count() or 1)


def numpy_step_ms(seconds: float = 1.0) -> float:
    """Milliseconds per step of the MLP written by hand in numpy (best of three rounds)."""
    rng = np.random.default_rng(0)
    x = rng.random((64, 784), dtype=np.float32)
    labels = rng.integers(0, 10, size=64)
    w1 = (rng.standard_normal((784, 128)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((128, 10)) * 0.05).astype(np.float32)
    b1, b2 = np.zeros(128, np.float32), np.zeros(10, np.float32)
    lr = np.float32(0.1)
    rows = np.arange(64)

    def step():
        nonlocal w1, w2, b1, b2
        h = np.matmul(x, w1) + b1
        a = np.maximum(h, 0)
        logits = np.matmul(a, w2) + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        probs = exp / exp.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(exp.sum(axis=1)) - shifted[rows, labels])
        dlogits = probs
        dlogits[rows, labels] -= 1
        dlogits /= np.float32(64)
        dw2 = np.matmul(a.T, dlogits)
        db2 = dlogits.sum(axis=0)
        dh = np.matmul(dlogits, w2.T) * (h > 0)
        dw1 = np.matmul(x.T, dh)
        db1 = dh.sum(axis=0)
        # (GATE_OP gating reaches the input's gradient, dh @ w1.T, through a
        # control edge only: neither TF nor minitf computes it.)
        w1, w2 = w1 - lr * dw1, w2 - lr * dw2
        b1, b2 = b1 - lr * db1, b2 - lr * db2
        return loss

    for _ in range(20):
        step()
    best = float("inf")
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while n < 20 or time.perf_counter() - start < seconds / 3:
            step()
            n += 1
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e3


class Cluster:
    """One cluster of task processes, started in ``__enter__`` and all killed in ``__exit__``.

    Args:
        framework: ``"minitf"`` or ``"tf"``.
        python: The interpreter the tasks run.
        mode: ``"sync"`` or ``"async"``.
        workers: Worker tasks (there is one ps task).
        warmup: Global steps before the measured window.
        steps: Global steps in the window.
        defaults: Leave the thread pools to each framework: no ``ConfigProto``
            and no BLAS variable in the tasks' environment.
    """

    def __init__(
        self, framework: str, python: str, mode: str, workers: int, warmup, steps, defaults=False
    ):
        ports = free_ports(1 + workers)
        self.ps_hosts = f"127.0.0.1:{ports[0]}"
        self.worker_hosts = ",".join(f"127.0.0.1:{p}" for p in ports[1:])
        self.framework, self.python, self.mode = framework, python, mode
        self.warmup, self.steps, self.defaults = warmup, steps, defaults
        self.tasks = [("ps", 0)] + [("worker", i) for i in range(workers)]
        self.procs: dict[tuple[str, int], subprocess.Popen] = {}
        self._logs = tempfile.TemporaryDirectory(prefix="sync_training_")
        self.lines: queue.Queue = queue.Queue()
        self.started_at = 0.0

    def _env(self) -> dict:
        env = dict(os.environ)
        if self.defaults:
            for name in USER_ENV:  # the pins above, and any other BLAS variable
                env.pop(name, None)
        if self.framework == "minitf":
            env["MINITF_CLUSTER_SECRET"] = secrets.token_hex(16)  # one secret per cluster
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        else:
            env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        return env

    def __enter__(self) -> Cluster:
        env = self._env()
        self.started_at = time.perf_counter()
        try:
            for job, index in self.tasks:
                command = [self.python, "-u", str(TASK_SCRIPT), f"--framework={self.framework}"]
                command += [f"--job_name={job}", f"--task_index={index}"]
                command += [f"--ps_hosts={self.ps_hosts}", f"--worker_hosts={self.worker_hosts}"]
                command += [f"--mode={self.mode}", f"--warmup={self.warmup}"]
                command += [f"--steps={self.steps}"] + (["--defaults"] if self.defaults else [])
                chief = (job, index) == ("worker", 0)
                with open(self._log_path(job, index), "wb") as err:
                    self.procs[(job, index)] = subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE if chief else err,
                        stderr=err,
                        env=env,
                        preexec_fn=_die_with_parent,
                    )
            chief = self.procs[("worker", 0)]
            threading.Thread(target=self._pump, args=(chief,), daemon=True).start()
        except BaseException:
            self.kill()
            self._logs.cleanup()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.kill()
        self._logs.cleanup()

    def _log_path(self, job: str, index: int) -> str:
        return os.path.join(self._logs.name, f"{job}{index}.log")

    def _pump(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self.lines.put((time.perf_counter(), line.decode(errors="replace").strip()))
        self.lines.put((time.perf_counter(), None))

    def kill(self) -> None:
        """Kills every task process still running, by its pid, and reaps it."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            proc.wait()
            if proc.stdout:
                proc.stdout.close()

    def cpu(self) -> dict[str, float]:
        """CPU seconds of each task so far."""
        return {f"{job}{index}": cpu_seconds(p.pid) for (job, index), p in self.procs.items()}

    def failure(self, why: str) -> RuntimeError:
        """An error naming ``why``, with the end of every task's stderr."""
        parts = [why]
        for job, index in self.tasks:
            with open(self._log_path(job, index), errors="replace") as f:
                tail = f.read()[-1500:].strip()
            status = _exit_status(self.procs[(job, index)])
            parts.append(f"--- {job}{index} (exit {status}):\n{tail}")
        return RuntimeError("\n".join(parts))

    def check_alive(self) -> None:
        """Raises if a ps task ended, or a worker ended with an error."""
        for (job, index), proc in self.procs.items():
            status = _exit_status(proc)
            if status is not None and (job == "ps" or status != 0):
                raise self.failure(f"{job}{index} exited with status {status}")

    def measure(self, timeout: float) -> dict:
        """Follows the chief's lines to the end of the window; returns the run's figures.

        Raises:
            RuntimeError: if a task fails, the chief ends early or ``timeout`` passes.
        """
        deadline = time.monotonic() + timeout
        marks: dict = {}
        while "end" not in marks:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.failure(f"no WINDOW_END within {timeout} s")
            try:
                received, line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                self.check_alive()
                continue
            if line is None:
                raise self.failure("the chief ended before WINDOW_END")
            kind, *fields = line.split()
            if kind == "FIRST_STEP":
                marks["first"] = received - self.started_at
            elif kind == "WINDOW_START":
                marks["cpu0"], marks["ticks0"] = self.cpu(), cpu_ticks()
                marks["start"] = (float(fields[0]), int(fields[1]))
            elif kind == "WINDOW_END":
                marks["cpu1"], marks["ticks1"] = self.cpu(), cpu_ticks()
                marks["end"] = (float(fields[0]), int(fields[1]))
        self._wait_for_workers(deadline)
        (t0, step0), (t1, step1) = marks["start"], marks["end"]
        global_steps = step1 - step0
        by_task = {
            task: (marks["cpu1"][task] - marks["cpu0"][task]) * 1e3 / global_steps
            for task in marks["cpu0"]
        }
        return {
            "steps_per_s": global_steps / (t1 - t0),
            "cpu_ms_per_step": sum(by_task.values()),
            "cpu_ms_per_step_by_task": by_task,
            "launch_to_first_step_s": marks["first"],
            "steal_fraction": steal_fraction(marks["ticks0"], marks["ticks1"]),
        }

    def _wait_for_workers(self, deadline: float) -> None:
        """Waits for the workers to exit; one that does not, or fails, is reported."""
        for (job, index), proc in self.procs.items():
            if job != "worker":
                continue
            try:
                status = proc.wait(max(1.0, min(EXIT_GRACE_S, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                log(f"  warning: {job}{index} still running after the window; killed")
                continue
            if status != 0:
                log(f"  warning: {job}{index} exited with status {status}")


def run_config(framework, python, mode, workers, args, defaults=False) -> dict:
    """Runs one configuration once and returns its figures."""
    with Cluster(framework, python, mode, workers, args.warmup, args.steps, defaults) as cluster:
        result = cluster.measure(args.timeout)
    split = ", ".join(f"{t} {ms:.2f}" for t, ms in result["cpu_ms_per_step_by_task"].items())
    label = f"{mode} {workers}w" + (" at defaults" if defaults else "")
    log(
        f"  {framework} {label}: {result['steps_per_s']:.1f} global steps/s, "
        f"{result['cpu_ms_per_step']:.2f} CPU ms/step ({split}), "
        f"first step after {result['launch_to_first_step_s']:.2f} s, "
        f"steal {100 * result['steal_fraction']:.1f} %"
    )
    return result


def tf_version(python: str) -> str:
    """The TensorFlow version of an interpreter."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    out = subprocess.run(
        [python, "-c", "import tensorflow as t; print(t.__version__)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def parse_args(argv=None) -> argparse.Namespace:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="a Python interpreter with tensorflow installed")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each configuration")
    parser.add_argument("--warmup", type=int, default=20, help="global steps before the window")
    parser.add_argument("--steps", type=int, default=500, help="global steps measured")
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds one configuration may take"
    )
    return parser.parse_args(argv)


def _round(value: float, digits: int = 3) -> float:
    return round(value, digits)


def main(argv=None) -> None:
    """Measures the baseline, every configuration on each framework, and prints the JSON line."""
    args = parse_args(argv)
    frameworks = [("minitf", sys.executable)]
    result: dict = {"benchmark": "sync_training", "warmup": args.warmup, "steps": args.steps}
    if args.tf_python:
        result["tf_version"] = tf_version(args.tf_python)
        frameworks.append(("tf", args.tf_python))
    busy = busy_cores()
    if busy > 0.1:
        log(f"warning: other programs keep {busy:.1f} cores busy; the figures will be skewed")
    log("numpy baseline")
    step_ms = numpy_step_ms()
    runs: dict[tuple, list[dict]] = {}
    for repeat in range(args.repeats):
        log(f"repeat {repeat + 1}/{args.repeats}")
        # Each configuration on one framework and at once on the other: the two
        # figures of a ratio come from the same minute of a shared machine.
        for mode, workers, defaults in CONFIGS:
            for framework, python in frameworks:
                runs.setdefault((framework, mode, workers, defaults), []).append(
                    run_config(framework, python, mode, workers, args, defaults)
                )

    for (framework, mode, workers, defaults), results in runs.items():
        prefix = f"{framework}_{mode}_{workers}w" + ("_defaults" if defaults else "")
        for key in ("steps_per_s", "cpu_ms_per_step"):
            result[f"{prefix}_{key}"] = _round(statistics.median(r[key] for r in results))
        result[f"{prefix}_steal_fraction_by_turn"] = [
            _round(r["steal_fraction"], 4) for r in results
        ]
        if (mode, workers, defaults) == HEADLINE:
            result[f"{prefix}_cpu_ms_per_step_by_task"] = {
                task: _round(statistics.median(r["cpu_ms_per_step_by_task"][task] for r in results))
                for task in results[0]["cpu_ms_per_step_by_task"]
            }
            result[f"{framework}_launch_to_first_step_s"] = _round(
                statistics.median(r["launch_to_first_step_s"] for r in results)
            )
    result["numpy_step_ms"] = _round(step_ms)
    for framework, _ in frameworks:
        own = 2 * step_ms
        overhead = result[f"{framework}_sync_2w_cpu_ms_per_step"] - own
        name = "framework_overhead_ms_per_global_step"
        result[name if framework == "minitf" else f"tf_{name}"] = _round(overhead)
    targets = {
        "launch_to_first_step_under_2s": result["minitf_launch_to_first_step_s"] < 2.0,
        "overhead_at_most_1ms": result["framework_overhead_ms_per_global_step"] <= 1.0,
    }
    if args.tf_python:
        speed = result["minitf_sync_2w_steps_per_s"] / result["tf_sync_2w_steps_per_s"]
        cpu = result["minitf_sync_2w_cpu_ms_per_step"] / result["tf_sync_2w_cpu_ms_per_step"]
        result["steps_per_s_vs_tf"] = _round(speed)
        result["cpu_per_step_vs_tf"] = _round(cpu)
        targets["steps_per_s_at_least_2x_tf"] = speed >= 2.0
        targets["cpu_per_step_at_most_half_tf"] = cpu <= 0.5
    result["targets_met"] = targets
    print(json.dumps(result))


if __name__ == "__main__":
    main()
