"""The benchmarks' runs with nothing set: no ConfigProto and no BLAS variable.

The scripts pin BLAS to one thread when they are imported, so each check
runs them in a fresh interpreter, and what they report is compared with
what a session chooses, read through threadpoolctl, independently of minitf.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.benchmarks.conftest import BENCHMARKS

pytestmark = pytest.mark.timeout(120)

BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS")
NUMPY_DEFAULT = (
    "import json, numpy, threadpoolctl; print(json.dumps([p['num_threads'] for p in "
    "threadpoolctl.threadpool_info() if p['user_api'] == 'blas']))"
)


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in BLAS_ENV}


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=100, env=_clean_env()
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_local_mlp_with_nothing_set_runs_on_the_threads_a_session_chooses():
    # No BLAS variable and no ConfigProto: the session keeps the pool at one
    # thread (the MLP's products are small), whatever numpy alone would use.
    figures = json.loads(
        _run(str(BENCHMARKS / "local_overhead.py"), "--framework", "minitf", "--defaults")
    )
    assert figures["mlp_steps_per_s"] > 0
    assert figures["blas_threads"] == [1]
    assert json.loads(_run("-c", NUMPY_DEFAULT)) != [0]  # numpy's BLAS has a pool to set


def test_the_cluster_with_nothing_set_gives_its_tasks_no_blas_variable():
    script = (
        f"import json, sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import sync_training as s\n"
        "def names(defaults):\n"
        "    env = s.Cluster('minitf', sys.executable, 'sync', 2, 1, 1, defaults)._env()\n"
        "    return sorted(k for k in s.BLAS_ENV if k in env)\n"
        "print(json.dumps({'pinned': names(False), 'defaults': names(True)}))"
    )
    names = json.loads(_run("-c", script))
    assert names == {"pinned": sorted(BLAS_ENV[:3]), "defaults": []}


def test_defaults_without_a_framework_is_refused_at_once():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "local_overhead.py"), "--defaults"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_clean_env(),
    )
    assert done.returncode == 2
    assert "--defaults measures one framework's MLP: give --framework too" in done.stderr
