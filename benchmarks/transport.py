"""The transport between tasks: pulling a variable from a ps process, beside raw sockets and TF.

Prints one JSON line with, for 16 MB and 64 MB float32 variables:

* ``pull_<n>mb_gb_per_s``: ``sess.run(var)`` from a worker (this process)
  with the variable on a ps task in another process on this machine, as
  minitf runs it by default: the tensor crosses through shared memory;
* ``pull_tcp_<n>mb_gb_per_s``: the same with a ps started with
  ``MINITF_SHM=0``: the tensor crosses the TCP connection;
* ``raw_tcp_<n>mb_gb_per_s``: the same bytes sent over a plain loopback TCP
  socket from another process (``sendall`` / ``recv_into`` one reused buffer);
  ``raw_tcp_new_array_<n>mb_gb_per_s``: the same, receiving each message into
  a new array, as a receiver that hands it on must;
* ``memcpy_<n>mb_gb_per_s``: ``np.copyto`` of the same bytes;
* ``tf_pull_<n>mb_gb_per_s`` (with ``--tf-python``): TensorFlow 1.x doing the
  same in this run: a ``tf.distribute.Server`` ps process and a client
  process with the worker's server, pulling the same variables over gRPC;
* ``pull_over_raw_<n>mb``, ``pull_over_tf_<n>mb``: ratios of the above;

``scalar_fetch_ms_median`` (and ``tf_scalar_fetch_ms_median``): the median
of 500 ``sess.run`` of a scalar variable on the ps; ``scalar_fetch_tcp_ps_ms_median``
the same from the ps without shared memory, in alternating rounds: a small
tensor must not pay for shared memory. ``shm_buffers_received``: how many
tensors reached this process through shared memory during the pulls (and
``tcp_ps_shm_buffers_received``, 0, during those from the other ps).

With ``--sweep``, ``sweep_<k>kb_us`` gives the median microseconds of a
pull of ``k`` KB by shared memory (``shm``) and by TCP (``tcp``): where the
first starts to pay is where ``minitf.runtime.speedups.shm.MIN_BYTES`` should be.

Run: ``.venv/bin/python benchmarks/transport.py [--tf-python /work/tfbench/venv/bin/python]``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SIZES_MB = (16, 64)
SWEEP_KB = (16, 32, 64, 128, 256, 512, 1024, 4096)
REPEATS = 8
SCALAR_FETCHES = 500
SCALAR_ROUNDS = 5

_PS_SCRIPT = textwrap.dedent(
    """
    import sys
    import minitf as tf
    from minitf.runtime.speedups import shm
    shm.MIN_BYTES = int(sys.argv[3])
    server = tf.train.Server({"ps": [sys.argv[1]], "worker": [sys.argv[2]]},
                             job_name="ps", task_index=0)
    print("ready", flush=True)
    sys.stdin.read()  # runs until the benchmark closes our stdin
    server.stop()
    """
)

_SENDER_SCRIPT = textwrap.dedent(
    """
    import socket, sys
    import numpy as np
    data = np.ones(int(sys.argv[2]), np.uint8)
    sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    while sock.recv(1):
        sock.sendall(memoryview(data))
    """
)

_TF_PS_SCRIPT = textwrap.dedent(
    """
    import sys
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    server = tf.distribute.Server({"ps": [sys.argv[1]], "worker": [sys.argv[2]]},
                                  job_name="ps", task_index=0)
    print("ready", flush=True)
    sys.stdin.read()
    """
)

_TF_CLIENT_SCRIPT = textwrap.dedent(
    """
    import json, statistics, sys, time
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    ps, worker, repeats, fetches = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    sizes = [int(s) for s in sys.argv[5].split(",")]
    server = tf.distribute.Server({"ps": [ps], "worker": [worker]},
                                  job_name="worker", task_index=0)
    result = {"tf_version": tf.__version__}

    def best_rate(fn, nbytes):
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return nbytes / min(times) / 1e9

    for mb in sizes:
        n = mb * (1 << 20) // 4
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                var = tf.Variable(tf.zeros([n]), name=f"v{mb}")
            with tf.Session(server.target) as sess:
                sess.run(var.initializer)
                pull = sess.make_callable(var)
                result[f"tf_pull_{mb}mb_gb_per_s"] = round(best_rate(pull, n * 4), 2)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            scalar = tf.Variable(1.0, name="scalar")
        with tf.Session(server.target) as sess:
            sess.run(scalar.initializer)
            fetch = sess.make_callable(scalar)
            for _ in range(50):
                fetch()
            times = []
            for _ in range(fetches):
                start = time.perf_counter()
                fetch()
                times.append(time.perf_counter() - start)
    result["tf_scalar_fetch_ms_median"] = round(statistics.median(times) * 1e3, 3)
    print(json.dumps(result), flush=True)
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _best_rate(fn, nbytes: int) -> float:
    fn()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return nbytes / min(times) / 1e9


def bench_raw_tcp(nbytes: int, fresh: bool = False) -> float:
    """GB/s of ``nbytes`` sent by another process over loopback TCP, received into memory."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    sender = subprocess.Popen([sys.executable, "-c", _SENDER_SCRIPT, str(port), str(nbytes)])
    try:
        conn, _ = server.accept()
        buffer = np.empty(nbytes, np.uint8)
        view = memoryview(buffer)

        def pull():
            nonlocal view
            if fresh:  # a new array per message, as a receiver that hands it on must
                view = memoryview(np.empty(nbytes, np.uint8))
            conn.sendall(b"x")
            got = 0
            while got < nbytes:
                got += conn.recv_into(view[got:])

        rate = _best_rate(pull, nbytes)
        conn.close()
    finally:
        server.close()
        try:
            sender.wait(30)
        finally:
            if sender.poll() is None:
                sender.kill()
                sender.wait()
    return rate


def bench_memcpy(nbytes: int) -> float:
    """GB/s of ``np.copyto`` of ``nbytes`` between two warm arrays."""
    src = np.ones(nbytes, np.uint8)
    dst = np.empty_like(src)
    return _best_rate(lambda: np.copyto(dst, src), nbytes)


class _Process:
    """A task process that prints ``ready`` and runs until its stdin closes."""

    def __init__(self, argv: list[str], env: dict):
        self._log = tempfile.TemporaryFile("w+")  # its chatter, shown only if it fails
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
            env=env,
        )  # fmt: skip
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            self.proc.wait()
            self._log.seek(0)
            chatter = self._log.read()[-3000:]
            self.stop()
            raise RuntimeError(f"{argv[0]} did not start: {line!r}\n{chatter}")

    def stop(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._log.close()


def _minitf_ps(ps_address: str, worker_address: str, shm: bool, min_bytes: int) -> _Process:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    env["MINITF_SHM"] = "1" if shm else "0"
    argv = [sys.executable, "-c", _PS_SCRIPT, ps_address, worker_address, str(min_bytes)]
    return _Process(argv, env)


class MinitfCluster:
    """A minitf ps task in another process and a worker task in this one.

    Args:
        shm: Whether the ps may use shared memory (else it runs with ``MINITF_SHM=0``).
        min_bytes: The ps's `minitf.runtime.speedups.shm.MIN_BYTES`.
    """

    def __init__(self, shm: bool, min_bytes: int):
        import minitf as tf

        self.tf = tf
        ps_address, worker_address = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
        self.ps = _minitf_ps(ps_address, worker_address, shm, min_bytes)
        cluster = {"ps": [ps_address], "worker": [worker_address]}
        try:
            self.worker = tf.train.Server(cluster, job_name="worker", task_index=0)
        except BaseException:
            self.ps.stop()
            raise
        self._sessions = []

    def puller(self, name: str, shape: list[int]):
        """A callable that pulls a float32 variable of ``shape`` from the ps (in a new session)."""
        tf = self.tf
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                var = tf.Variable(tf.zeros(shape), name=name)
            sess = tf.Session(self.worker.target, graph=graph)
            sess.run(var.initializer)
        self._sessions.append(sess)
        return sess.make_callable(var)

    def close(self) -> None:
        """Closes the sessions and stops both tasks."""
        try:
            for sess in self._sessions:
                sess.close()
            self.worker.stop()
        finally:
            self.ps.stop()


def _latencies_ms(fetch, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        fetch()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def bench_minitf() -> dict:
    """Pulls from minitf ps processes, one with shared memory and one without.

    The scalar fetches of the two alternate in rounds, so that both see the
    same machine: what the other engineers' programs take changes by the second.
    """
    from minitf.runtime.speedups import shm as shm_lib

    result: dict = {}
    clusters = {}
    try:
        for path in ("shm", "tcp"):
            clusters[path] = MinitfCluster(path == "shm", shm_lib.MIN_BYTES)
        for path, cluster in clusters.items():
            before = shm_lib.transfers.snapshot().get("shm_received", 0)
            for mb in SIZES_MB:
                pull = cluster.puller(f"v{mb}", [(mb << 20) // 4])
                result[(path, mb)] = _best_rate(pull, mb << 20)
            result[(path, "shm_received")] = (
                shm_lib.transfers.snapshot().get("shm_received", 0) - before
            )
        fetchers = {path: cluster.puller("scalar", []) for path, cluster in clusters.items()}
        times: dict[str, list[float]] = {path: [] for path in fetchers}
        for fetch in fetchers.values():
            _latencies_ms(fetch, 50)  # warm-up
        for _ in range(SCALAR_ROUNDS):
            for path, fetch in fetchers.items():
                times[path] += _latencies_ms(fetch, SCALAR_FETCHES // SCALAR_ROUNDS)
        for path in fetchers:
            result[(path, "scalar_ms")] = statistics.median(times[path])
    finally:
        for cluster in clusters.values():
            cluster.close()
    return result


def bench_sweep() -> dict:
    """Median µs of pulls of each `SWEEP_KB` size, by shared memory (forced) and by TCP."""
    result = {}
    clusters = {}
    try:
        for path in ("shm", "tcp"):
            clusters[path] = MinitfCluster(path == "shm", 1)
        for kb in SWEEP_KB:
            pullers = {path: c.puller(f"v{kb}", [(kb << 10) // 4]) for path, c in clusters.items()}
            times: dict[str, list[float]] = {path: [] for path in pullers}
            for pull in pullers.values():
                _latencies_ms(pull, 20)
            for _ in range(4):
                for path, pull in pullers.items():
                    times[path] += _latencies_ms(pull, 50)
            result[f"sweep_{kb}kb_us"] = {
                path: round(statistics.median(t) * 1e3, 1) for path, t in times.items()
            }
    finally:
        for cluster in clusters.values():
            cluster.close()
    return result


def bench_tf(tf_python: str) -> dict:
    """TensorFlow's figures from its own ps and client processes, run now."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    ps_address, worker_address = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    ps = _Process([tf_python, "-c", _TF_PS_SCRIPT, ps_address, worker_address], env)
    try:
        sizes = ",".join(str(mb) for mb in SIZES_MB)
        argv = [tf_python, "-c", _TF_CLIENT_SCRIPT, ps_address, worker_address]
        argv += [str(REPEATS), str(SCALAR_FETCHES), sizes]
        client = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        if client.returncode != 0:
            raise RuntimeError(f"the TensorFlow client failed:\n{client.stderr[-3000:]}")
        return json.loads(client.stdout.strip().splitlines()[-1])
    finally:
        ps.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="a Python with TensorFlow, to measure TF in this run")
    parser.add_argument("--sweep", action="store_true", help="also time small pulls both ways")
    args = parser.parse_args()
    os.environ.setdefault("MINITF_CLUSTER_SECRET", secrets.token_hex(16))

    result: dict = {"benchmark": "transport"}
    minitf = bench_minitf()
    tf_result = bench_tf(args.tf_python) if args.tf_python else {}
    for mb in SIZES_MB:
        raw = bench_raw_tcp(mb << 20)
        shared = minitf[("shm", mb)]
        result[f"pull_{mb}mb_gb_per_s"] = round(shared, 2)
        result[f"pull_tcp_{mb}mb_gb_per_s"] = round(minitf[("tcp", mb)], 2)
        result[f"raw_tcp_{mb}mb_gb_per_s"] = round(raw, 2)
        result[f"raw_tcp_new_array_{mb}mb_gb_per_s"] = round(bench_raw_tcp(mb << 20, True), 2)
        result[f"memcpy_{mb}mb_gb_per_s"] = round(bench_memcpy(mb << 20), 2)
        result[f"pull_over_raw_{mb}mb"] = round(shared / raw, 3)
        if tf_result:
            tf_rate = tf_result[f"tf_pull_{mb}mb_gb_per_s"]
            result[f"tf_pull_{mb}mb_gb_per_s"] = tf_rate
            result[f"pull_over_tf_{mb}mb"] = round(shared / tf_rate, 2)
    result["scalar_fetch_ms_median"] = round(minitf[("shm", "scalar_ms")], 3)
    result["scalar_fetch_tcp_ps_ms_median"] = round(minitf[("tcp", "scalar_ms")], 3)
    result["shm_buffers_received"] = minitf[("shm", "shm_received")]
    result["tcp_ps_shm_buffers_received"] = minitf[("tcp", "shm_received")]
    if tf_result:
        result["tf_scalar_fetch_ms_median"] = tf_result["tf_scalar_fetch_ms_median"]
        result["tf_version"] = tf_result["tf_version"]
    if args.sweep:
        result.update(bench_sweep())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
