"""The threads inside one op: numpy's BLAS threads (`minitf.runtime.speedups.intra_op`).

Each check runs in a fresh interpreter, since the BLAS pool is the
process's. The script reads numpy's BLAS threads (through threadpoolctl,
independently of minitf) before and after it makes a server or a session,
and the tests compare the two with what TF1's config asks for or with the
machine's cores shared among the cluster's tasks on it.
"""

import json
import os
import socket
import subprocess
import sys

import pytest
import threadpoolctl

import minitf as tf

pytestmark = pytest.mark.timeout(60)

SCRIPT = """
import json, sys
import threadpoolctl

def blas_threads():
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]

import minitf as tf

from minitf.ops.math import blas_threads as products

kind, spec, threads = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
config = tf.ConfigProto(intra_op_parallelism_threads=threads) if threads else None
before = blas_threads()
if kind == "server":
    tf.train.Server(tf.train.ClusterSpec(spec), "worker", 0, config=config, start=False)
else:
    tf.Session(config=config).close()
print(json.dumps({"before": before, "after": blas_threads(),
                  "large": products.large_product_threads()}))
"""

LOCAL_3 = {"ps": ["localhost:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}
ELSEWHERE = {"ps": ["10.255.0.1:2222"], "worker": ["127.0.0.1:2223", "10.255.0.2:2224"]}
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _threads(kind: str, spec: dict | None = None, threads: int = 0, **env) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, json.dumps(spec or {}), str(threads)],
        capture_output=True,
        text=True,
        timeout=50,
        env={**base, **env},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["before"], "numpy's BLAS has no thread pool that threadpoolctl can see"
    return result


def _large(share: int):
    """What a large product gets: its share, or None when that is the pool's one thread."""
    return share if share > 1 else None


def test_tasks_on_one_machine_share_its_cores_for_a_large_product():
    result = _threads("server", LOCAL_3)
    # ps on "localhost" and two workers on 127.0.0.1: three tasks on this machine.
    assert result["after"] == [1]  # small products: one thread
    assert result["large"] == _large(max(1, _cores() // 3))


def test_the_only_task_on_its_machine_gives_a_large_product_every_core():
    result = _threads("server", ELSEWHERE)
    assert result["after"] == [1]
    assert result["large"] == _large(_cores())


def test_a_variable_the_user_set_is_left_alone():
    result = _threads("server", LOCAL_3, OPENBLAS_NUM_THREADS="2")
    assert result["after"] == result["before"] and result["large"] is None
    result = _threads("session", OPENBLAS_NUM_THREADS="2")
    assert result["after"] == result["before"] and result["large"] is None


def test_a_config_sets_the_threads_of_every_product_of_a_server_and_of_a_session():
    for kind, spec in (("server", ELSEWHERE), ("server", LOCAL_3), ("session", None)):
        result = _threads(kind, spec, threads=3)
        assert result["after"] == [3] and result["large"] is None


def test_a_plain_session_runs_small_products_on_one_thread_and_large_ones_on_every_core():
    result = _threads("session")
    assert result["after"] == [1]
    assert result["large"] == _large(_cores())


PRODUCTS = """
import json, threading
import numpy as np
import threadpoolctl
import minitf as tf
from minitf.ops.math import blas_threads as products

def pool():
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]

with tf.Session() as sess:
    pass  # the session set the pool
seen = []
real_set = products._set_threads
products.use(lambda n: (seen.append(n), real_set(n)), products.large_product_threads())
rng = np.random.default_rng(0)
small_a, small_b = rng.random((64, 784)), rng.random((784, 128))
large_a, large_b = rng.random((256, 256)), rng.random((256, 256))
ok_small = np.allclose(products.matmul(small_a, small_b), small_a @ small_b)
after_small = list(seen)
ok_large = np.allclose(products.matmul(large_a, large_b), large_a @ large_b)
print(json.dumps({"small": after_small, "large": seen[len(after_small):], "pool": pool(),
                  "ok": ok_small and ok_large}))
"""


def test_a_large_product_takes_the_share_for_its_call_and_gives_it_back():
    # 64x784 by 784x128 (the MLP's, 6.4M multiply-adds) stays on the pool's one
    # thread; 256x256 by 256x256 (2^24) takes every core, then one again.
    base = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    done = subprocess.run(
        [sys.executable, "-c", PRODUCTS], capture_output=True, text=True, timeout=50, env=base
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] and result["small"] == [] and result["pool"] == [1]
    assert result["large"] == ([_cores(), 1] if _cores() > 1 else [])


def test_a_bad_value_is_refused_before_anything_changes():
    before = threadpoolctl.threadpool_info()
    with pytest.raises(ValueError, match="intra_op_parallelism_threads .* not -1"):
        tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=-1))
    with pytest.raises(ValueError, match="intra_op_parallelism_threads .* not -2"):
        tf.train.Server(
            tf.train.ClusterSpec(LOCAL_3),
            "worker",
            0,
            config=tf.ConfigProto(intra_op_parallelism_threads=-2),
            start=False,
        )
    with pytest.raises(TypeError, match="1.5 has type float"):
        tf.ConfigProto(intra_op_parallelism_threads=1.5)
    config = tf.ConfigProto()
    config.intra_op_parallelism_threads = "2"  # set after construction: not checked there
    with pytest.raises(TypeError, match="must be an int .* str '2'"):
        tf.Session(config=config)
    assert threadpoolctl.threadpool_info() == before


def test_which_tasks_count_as_this_machines():
    from minitf.runtime.speedups.intra_op import tasks_on_this_host

    me = socket.gethostname()
    spec = tf.train.ClusterSpec(
        {
            "ps": [f"{me}:2222", "10.255.0.1:2222"],
            "worker": ["[::1]:2223", "localhost:2224", "10.255.0.1:2225", "10.255.0.2:2226"],
        }
    )
    # This machine by its name, IPv6 loopback and localhost: three tasks.
    assert tasks_on_this_host(spec, "worker", 0) == 3
    assert tasks_on_this_host(spec, "ps", 0) == 3
    # Another machine's tasks are counted by its name: two on 10.255.0.1.
    assert tasks_on_this_host(spec, "ps", 1) == 2
    assert tasks_on_this_host(spec, "worker", 3) == 1


def _an_address_of_this_machine() -> str:
    """A non-loopback IPv4 address of this machine, from the kernel's table of local routes."""
    with open("/proc/net/fib_trie") as table:
        lines = table.read().splitlines()
    found = {
        previous.split()[-1]
        for previous, line in zip(lines, lines[1:])
        if "/32 host LOCAL" in line and not previous.split()[-1].startswith("127.")
    }
    return sorted(found)[0] if found else "127.0.0.2"  # a loopback alias at worst


def test_a_task_named_by_an_address_of_this_machine_counts_with_its_loopback_tasks():
    from minitf.runtime.speedups.intra_op import tasks_on_this_host

    mine = _an_address_of_this_machine()
    spec = tf.train.ClusterSpec(
        {"ps": [f"{mine}:2222"], "worker": ["localhost:2223", "127.0.0.1:2224", "10.255.0.1:1"]}
    )
    # Whichever name it is given, this machine holds the first three tasks.
    assert tasks_on_this_host(spec, "ps", 0) == 3
    assert tasks_on_this_host(spec, "worker", 0) == 3
    assert tasks_on_this_host(spec, "worker", 2) == 1


LAUNCHED = """
import sys
import numpy as np
import threadpoolctl
import minitf as tf

flags = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
spec = tf.train.ClusterSpec(
    {"ps": flags["ps_hosts"].split(","), "worker": flags["worker_hosts"].split(",")}
)
server = tf.train.Server(spec, flags["job_name"], int(flags["task_index"]))
if flags["job_name"] == "ps":
    server.join()
threads = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
print("blas", threads)
"""


def test_the_tasks_of_minitf_launch_share_the_cores(tmp_path):
    script = tmp_path / "task.py"
    script.write_text(LAUNCHED)
    base = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "launch", "--ps", "1", "--workers", "2", str(script)],
        capture_output=True,
        text=True,
        timeout=50,
        env=base,
    )
    assert done.returncode == 0, done.stderr
    expected = f"blas [{max(1, _cores() // 3)}]"
    assert f"[worker/0] {expected}" in done.stdout, done.stdout
    assert f"[worker/1] {expected}" in done.stdout, done.stdout


def test_a_session_of_a_cluster_keeps_what_its_tasks_server_chose():
    # A worker process: its server chose (one thread, every core for a large
    # product: the only task on its machine); its session to that server
    # changes nothing.
    script = (
        "import json, minitf as tf\n"
        "from minitf.runtime.speedups import intra_op\n"
        "from minitf.ops.math import blas_threads as products\n"
        f"spec = tf.train.ClusterSpec({ELSEWHERE!r})\n"
        "intra_op.configure(None, spec, 'worker', 0)\n"
        "chosen = products.large_product_threads()\n"
        "intra_op.configure(None, local=False)\n"
        "print(json.dumps([chosen, products.large_product_threads()]))\n"
    )
    base = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=50, env=base
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [_large(_cores())] * 2
