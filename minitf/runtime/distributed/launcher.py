"""``LocalCluster``: one process per task on this machine, started, watched and torn down.

A TF1 distributed script is written to be started once per task, with its
role on the command line (``--job_name=worker --task_index=1 --ps_hosts=...
--worker_hosts=...``) or in the ``TF_CONFIG`` environment variable (what
Kubeflow's TFJob, Slurm wrappers and cloud trainers set). `LocalCluster` does
that on one machine:

* it picks free loopback ports, one per task, and builds the cluster;
* it starts each task as its own Python process with both forms of its role
  and the cluster's shared secret (``MINITF_CLUSTER_SECRET``);
* it streams every process's output with a ``[job/index]`` prefix;
* when the workers are done it stops the ps tasks (which, as in TF, wait in
  ``server.join()`` forever); if a task fails, on Ctrl-C or when the launcher
  itself exits, it stops them all. Each task also asks the kernel to end it if
  the launcher dies, so no process is left behind.

Without a script, each task process runs just a server (``python -m
minitf.runtime.distributed.task``), and this process can connect sessions to it.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import random
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from minitf.framework import errors
from minitf.platform import formats
from minitf.runtime.distributed.cluster_spec import ClusterSpec
from minitf.runtime.distributed.connect import SECRET_ENV, connect_timeout, connect_with_retry
from minitf.runtime.distributed.step_ids import INCARNATION_ENV, REPLAYABLE
from minitf.runtime.distributed.transport import Channel

STACKS_ENV = "MINITF_STACKS_ON_SIGNAL"
"""Set for every task: it writes each thread's stack to stderr on SIGUSR2 (`dump_stacks`)."""
RECORD_ENV = "MINITF_RECORD"
"""Where a task of a recorded run writes its moves when it exits (`LocalCluster(record=)`)."""

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the launcher's own clean-up still stops the tasks


class _Spawner:
    """The one thread that starts every task process: it lives as long as this process.

    A task asks the kernel to end it when its parent dies; on Linux "parent"
    is the *thread* that started it. A task started from a short-lived
    thread (a stepper page's request going back) would be ended with that
    thread. Started here, a task lives as long as the launcher's process.
    """

    def __init__(self):
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def spawn(self, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="minitf-spawner", daemon=True
                )
                self._thread.start()
        answer: queue.SimpleQueue = queue.SimpleQueue()
        self._requests.put((command, env, answer))
        result = answer.get()
        if isinstance(result, BaseException):
            raise result
        return result

    def _serve(self) -> None:
        while True:
            command, env, answer = self._requests.get()
            try:
                answer.put(
                    subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        env=env,
                        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
                    )
                )
            except BaseException as exc:  # noqa: BLE001 - raised in the caller
                answer.put(exc)


_spawn = _Spawner().spawn


# Ports the kernel hands out for outgoing connections (Linux's default range,
# and the IANA range macOS and Windows use). A task's port chosen from these can
# be taken by any client's connection, or by a client's own retry (TCP's
# self-connect) while the task restarts; `free_ports` chooses outside them.
_EPHEMERAL_DEFAULTS = ((32768, 60999), (49152, 65535))
_LOWEST_PORT = 10000


def _ephemeral_ranges() -> list[tuple[int, int]]:
    ranges = list(_EPHEMERAL_DEFAULTS)
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(field) for field in f.read().split())
        ranges.append((low, high))
    except (OSError, ValueError):
        pass  # not Linux: the defaults stand
    return ranges


PORTS_ENV = "MINITF_PORTS"
"""``LOW-HIGH``: the only ports `free_ports` chooses from (a firewall's open range, say)."""


def _port_range() -> range:
    """The ports to choose from: ``MINITF_PORTS`` if set, else every port from 10000."""
    value = os.environ.get(PORTS_ENV, "").strip()
    if not value:
        return range(_LOWEST_PORT, 65536)
    low, _, high = value.partition("-")
    try:
        first, last = int(low), int(high)
    except ValueError:
        first, last = 0, -1
    if not 1 <= first <= last <= 65535:
        raise ValueError(
            f"{PORTS_ENV}={value!r} is not a range of ports: write LOW-HIGH, "
            "e.g. 20000-20999, with 1 <= LOW <= HIGH <= 65535"
        )
    return range(first, last + 1)


def free_ports(n: int, host: str = "127.0.0.1", rng: random.Random | None = None) -> list[int]:
    """``n`` distinct ports that are free on ``host`` now (for a cluster's addresses).

    The ports are outside the range the kernel picks outgoing connections'
    ports from, so no client connection can hold one while its task is down.
    Another program may still bind one before its task does. Where only some
    ports may be used, ``MINITF_PORTS=LOW-HIGH`` names them.

    Args:
        n: How many ports.
        host: The address to check them on.
        rng: The random order to try ports in (default: a system random source).

    Raises:
        OSError: if ``n`` free ports cannot be found.
        ValueError: if ``MINITF_PORTS`` is not a range of ports.
    """
    rng = rng or random.SystemRandom()
    ephemeral = _ephemeral_ranges()
    allowed = _port_range()
    candidates = [
        port for port in allowed if not any(low <= port <= high for low, high in ephemeral)
    ]
    if not candidates:
        candidates = list(allowed)  # a MINITF_PORTS all in the ephemeral range: the user's choice
    rng.shuffle(candidates)
    ports: list[int] = []
    for port in candidates:
        if len(ports) == n:
            break
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue  # in use, or still in TIME_WAIT from an earlier task
        ports.append(port)
    if len(ports) < n:
        where = f" in {PORTS_ENV}={os.environ[PORTS_ENV]}" if os.environ.get(PORTS_ENV) else ""
        raise OSError(f"found only {len(ports)} of {n} free ports on {host}{where}")
    return ports


LAUNCH_PATIENCE = 60.0
"""Seconds a task this process launched may take to start its server while its process lives."""


class LocalCluster:
    """Starts a cluster of local task processes.

    Args:
        tasks: ``{"ps": 2, "worker": 3}``: how many tasks per job.
        script: The TF1-style script every task runs; None runs a bare server.
        args: Extra arguments passed to the script after its role arguments.
        host: The address to bind (loopback by default).
        env: Extra environment variables for the tasks.
        output: Where task output goes (``sys.stdout``); None discards it.
        record: A file to record the run's schedule to: every task logs each
            move it makes, and `wait` writes them all there when the workers
            are done. ``minitf step --replay FILE`` (`Stepper.replay`) makes
            the same moves again, with the same values.

    Raises:
        ValueError: if a job has fewer than one task.

    Example::

        with LocalCluster({"ps": 1, "worker": 2}) as cluster:
            with tf.Session(cluster.target("worker", 0)) as sess:
                ...
    """

    def __init__(
        self,
        tasks: dict[str, int],
        script: str | None = None,
        args: Sequence[str] = (),
        host: str = "127.0.0.1",
        env: dict[str, str] | None = None,
        output: TextIO | None = sys.stdout,
        record: str | None = None,
    ):
        if not tasks or any(int(n) < 1 for n in tasks.values()):
            raise ValueError(f"LocalCluster needs at least one task per job: {tasks}")
        ports = iter(free_ports(sum(tasks.values()), host))
        self.cluster_spec = ClusterSpec(
            {job: [f"{host}:{next(ports)}" for _ in range(n)] for job, n in tasks.items()}
        )
        self.script = script
        self.args = list(args)
        self.secret = os.environ.get(SECRET_ENV) or secrets.token_hex(16)
        self._env = dict(env or {})
        self.record = record
        self._record_dir = tempfile.mkdtemp(prefix="minitf-record-") if record else None
        if record:
            # One incarnation for all: the replay's step ids are the recorded ones.
            self._env[INCARNATION_ENV] = REPLAYABLE
        self._output = output
        self._procs: dict[tuple[str, int], subprocess.Popen] = {}
        self._pumps: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a task restarted
        self._restarting: set[tuple[str, int]] = set()
        self._write_lock = threading.Lock()

    # -- starting ----------------------------------------------------------------------------

    def start(self, jobs: Sequence[str] | None = None) -> LocalCluster:
        """Starts the task processes of ``jobs`` (default: every job; ps tasks first).

        Starting the ps tasks first and the workers later lets this process
        connect to the ps before any worker trains (the demo's observer does).

        Args:
            jobs: The jobs to start, or None for all.

        Raises:
            ValueError: for a job the cluster does not have, or one already started.
        """
        known = self.cluster_spec.jobs
        chosen = list(known) if jobs is None else list(jobs)
        unknown = [job for job in chosen if job not in known]
        with self._lock:
            started = sorted({job for job, _ in self._procs if job in chosen})
        if unknown or started:
            raise ValueError(
                f"cannot start jobs {unknown or started}: the cluster has {sorted(known)}"
                + (f", and {started} already started" if started else "")
            )
        atexit.register(self.stop)
        # Sessions made in this process must share the tasks' secret.
        os.environ[SECRET_ENV] = self.secret
        for job in sorted(chosen, key=lambda j: (j != "ps", j)):
            for index in self.cluster_spec.task_indices(job):
                self._start_task(job, index)
        if not self.script:
            # Tasks that only serve: a session made next finds them listening,
            # however long a loaded machine takes to start them.
            for job in chosen:
                for index in self.cluster_spec.task_indices(job):
                    self.connect(job, index).close()
        return self

    def connect(self, job: str, index: int, patience: float | None = None):
        """A connection to a task this cluster started, once its server listens.

        Starting a task is importing minitf and running its script up to its
        server: on a loaded machine that takes longer than a session's 10 s
        (`minitf.runtime.distributed.connect.connect_timeout`). The wait goes
        on while the process lives, for up to ``patience`` seconds.

        Args:
            job: The task's job.
            index: The task's index.
            patience: The longest wait, in seconds (`LAUNCH_PATIENCE` if None).

        Raises:
            FailedPreconditionError: at once, if the process exits first.
            UnavailableError: if it is still not listening after ``patience``.
        """
        address = self.cluster_spec.task_address(job, index)
        name = f"/job:{job}/replica:0/task:{index}"
        if patience is None:
            patience = LAUNCH_PATIENCE
        deadline = time.monotonic() + max(connect_timeout(), patience)
        while True:
            try:
                return connect_with_retry(address, name, 0.5)
            except errors.UnavailableError:
                code = self.wait_task(job, index)
                if code is not None:
                    raise errors.FailedPreconditionError(
                        None,
                        None,
                        f"the script exited on {job}:{index} (exit code {code}) before its "
                        "server started: its output is above",
                    ) from None
                if time.monotonic() > deadline:
                    raise

    def _start_task(self, job: str, index: int) -> None:
        command = [sys.executable, "-u"]
        command += [self.script] if self.script else ["-m", "minitf.runtime.distributed.task"]
        command += self.role_arguments(job, index) + self.args
        env = {**os.environ, **self._env, SECRET_ENV: self.secret, STACKS_ENV: "1"}
        if self._record_dir is not None:
            env[RECORD_ENV] = self._moves_file(job, index)
        env["TF_CONFIG"] = json.dumps(
            {"cluster": self.cluster_spec.as_dict(), "task": {"type": job, "index": index}}
        )
        proc = _spawn(command, env)
        with self._lock:
            self._procs[(job, index)] = proc
        pump = threading.Thread(target=self._pump, args=(f"[{job}/{index}] ", proc), daemon=True)
        pump.start()
        self._pumps.append(pump)

    def role_arguments(self, job: str, index: int) -> list[str]:
        """The TF1 command-line arguments of one task.

        Args:
            job: The task's job.
            index: The task's index.
        """
        spec = self.cluster_spec.as_dict()
        hosts = {j: ",".join(spec[j]) for j in spec}
        args = [f"--job_name={job}", f"--task_index={index}"]
        args += [f"--{j}_hosts={hosts[j]}" for j in sorted(hosts)]
        return args

    def _pump(self, prefix: str, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            if self._output is not None:
                with self._write_lock:
                    self._output.write(prefix + line.decode(errors="replace"))
                    self._output.flush()

    # -- using ---------------------------------------------------------------------------

    def target(self, job: str, index: int = 0) -> str:
        """The session target of one task.

        Args:
            job: The task's job.
            index: The task's index.
        """
        return "grpc://" + self.cluster_spec.task_address(job, index)

    def pid(self, job: str, index: int) -> int:
        """The process id of one task.

        Args:
            job: The task's job.
            index: The task's index.
        """
        return self._procs[(job, index)].pid

    def dump_stacks(self, timeout: float = 5.0) -> None:
        """Has every running task write where each of its threads is to its output.

        The lines come through the task's output as the rest of it does (with
        its ``[job/index]`` prefix): what a run that does not end waits on.

        Args:
            timeout: Seconds to wait for the tasks' pumps to pass the lines on.
        """
        with self._lock:
            running = [proc for proc in self._procs.values() if proc.poll() is None]
        for proc in running:
            try:
                os.kill(proc.pid, signal.SIGUSR2)
            except ProcessLookupError:
                pass  # it has just ended
        threading.Event().wait(timeout)  # the lines are on their way through the pumps

    def restart(
        self, job: str, index: int, sig: int = signal.SIGKILL, while_down: Callable | None = None
    ) -> int:
        """Kills one task with ``sig`` (SIGKILL: it dies on the spot) and starts it again.

        The new process has the task's role and address, as a task restarted by
        a cluster manager would. `wait` follows the new process.

        Args:
            job: The task's job.
            index: The task's index.
            sig: The signal that ends it.
            while_down: Called once it is dead, before it starts again.

        Returns:
            The exit code of the killed process.
        """
        key = (job, index)
        with self._changed:
            proc = self._procs[key]
            self._restarting.add(key)
        try:
            if proc.poll() is None:
                proc.send_signal(sig)
            code = proc.wait()
            if while_down is not None:
                while_down()
            self._start_task(job, index)
        finally:
            with self._changed:
                self._restarting.discard(key)
                self._changed.notify_all()
        return code

    def wait_task(self, job: str, index: int, timeout: float = 0.0) -> int | None:
        """One task's exit code, waiting up to ``timeout`` seconds for it; None if it runs.

        Args:
            job: The task's job.
            index: The task's index.
            timeout: Seconds to wait; 0 only looks.
        """
        with self._lock:
            proc = self._procs[(job, index)]
        try:
            return proc.wait(timeout) if timeout > 0 else proc.poll()
        except subprocess.TimeoutExpired:
            return None

    def poll(self) -> dict[tuple[str, int], int | None]:
        """Each task's exit code, None while it runs."""
        with self._lock:
            return {key: proc.poll() for key, proc in self._procs.items()}

    def wait(self, timeout: float | None = None) -> int:
        """Waits for every non-ps task to exit, then stops the ps tasks.

        Args:
            timeout: Seconds to wait, or None for no limit.

        Returns:
            0 if every waited-for task succeeded, else the first non-zero exit code.
            A failing task stops the whole cluster at once.

        Raises:
            subprocess.TimeoutExpired: if the tasks are not done in ``timeout`` seconds.
        """
        waited = [key for key in self._procs if key[0] != "ps"] or list(self._procs)
        done = threading.Event()
        codes: dict[tuple[str, int], int] = {}

        def watch(key):
            while True:
                with self._lock:
                    proc = self._procs[key]
                code = proc.wait()
                with self._changed:
                    self._changed.wait_for(lambda: key not in self._restarting)
                    if self._procs[key] is proc:
                        break
                # restarted: watch the new process
            codes[key] = code
            if code != 0 or len(codes) == len(waited):
                done.set()

        watchers = [threading.Thread(target=watch, args=(k,), daemon=True) for k in waited]
        for w in watchers:
            w.start()
        if not done.wait(timeout):
            raise subprocess.TimeoutExpired(self.script or "cluster", timeout)
        if self.record is not None:
            self.save_recording(self.record)
        self.stop()
        for pump in self._pumps:
            pump.join(5)
        failed = [codes[k] for k in waited if codes.get(k)]
        return failed[0] if failed else 0

    def save_recording(self, path: str) -> None:
        """Writes every task's moves so far, and how to start the run again, to ``path``.

        A task still running (a ps) is asked for its moves; one that ended
        left them in a file at its exit.

        Args:
            path: The file to write.

        Raises:
            FailedPreconditionError: if a task's moves cannot be had (it was killed).
        """
        moves = {}
        for (job, index), proc in sorted(self._procs.items()):
            task = f"/job:{job}/replica:0/task:{index}"
            if proc.poll() is None:
                address = self.cluster_spec.task_address(job, index)
                channel = Channel(connect_with_retry(address, task), task)
                try:
                    moves[task] = channel.request(lambda c: ("stepper_log", c, 0), 30.0)
                finally:
                    channel.close()
                continue
            try:
                with open(self._moves_file(job, index)) as f:
                    moves[task] = json.load(f)
            except OSError as exc:
                raise errors.FailedPreconditionError(
                    None,
                    None,
                    f"{task} left no record of its moves (it exited with {proc.returncode}): {exc}",
                ) from None
        tasks = {job: self.cluster_spec.num_tasks(job) for job in self.cluster_spec.jobs}
        write_recording(path, self.script, tasks, self.args, moves)

    def _moves_file(self, job: str, index: int) -> str:
        return os.path.join(self._record_dir, f"{job}-{index}.json")

    def stop(self, grace: float = 5.0) -> None:
        """Stops every task process: SIGTERM, then SIGKILL after ``grace`` seconds.

        Args:
            grace: Seconds each task has to exit after SIGTERM.
        """
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(grace)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


RECORDING_FORMAT = "minitf-recording/1"


def write_recording(
    path: str, script: str | None, tasks: dict[str, int], args: Sequence[str], moves: dict
) -> None:
    """Writes a recording: how to start the run again, and each task's moves in order.

    Args:
        path: The file.
        script: The script every task ran.
        tasks: ``{"ps": 1, "worker": 2}``.
        args: The script's own arguments.
        moves: ``{task name: [(step id, RUN or DELIVER, op name), ...]}``.
    """
    recording = {
        "format": RECORDING_FORMAT,
        "script": os.path.abspath(script) if script else None,
        "tasks": dict(tasks),
        "args": list(args),
        "moves": {task: [list(m) for m in log] for task, log in moves.items()},
    }
    with open(path, "w") as f:
        json.dump(recording, f)


def load_recording(path: str) -> dict:
    """A recording `write_recording` wrote (a `LocalCluster`'s or a `SimulatedCluster`'s).

    Args:
        path: The file.

    Raises:
        ValueError: if the file is not one.
    """
    return formats.load(
        path,
        RECORDING_FORMAT,
        "a minitf recording",
        "record one with `minitf launch --record FILE ...`",
    )


def launch(
    script: str, tasks: dict[str, int], args: Sequence[str] = (), record: str | None = None
) -> int:
    """Runs ``script`` as a local cluster until its workers finish; returns the exit code.

    Ctrl-C (or SIGTERM) stops every task. With ``record``, the run's
    schedule is written there (`LocalCluster`).

    Args:
        script: The TF1-style script every task runs.
        tasks: ``{"ps": 1, "worker": 2}``: how many tasks per job.
        args: Extra arguments passed to the script after its role arguments.
        record: A file to record the run's schedule to, or None.
    """
    cluster = LocalCluster(tasks, script=script, args=args, record=record)

    def on_signal(signum, frame):
        # Stopped once, below, whatever comes next: a handler that stopped the
        # cluster itself would run again inside that stop at a second Ctrl-C.
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        cluster.start()
        return cluster.wait()
    finally:
        cluster.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
