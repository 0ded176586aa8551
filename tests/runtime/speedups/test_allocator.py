"""A task's process keeps the memory its steps free (`minitf.runtime.speedups.allocator`).

Each check runs in a fresh interpreter: whether malloc keeps freed memory is
a property of the process, and this one may have started a server already.
The workload is a step's pattern: four 1 MiB arrays filled and then freed,
five times. glibc's defaults give the freed heap back each time, so every
round touches about 1,024 fresh pages; kept, only the first round does.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)

ROUNDS = """
import json, resource, sys
import numpy as np
from minitf.runtime.speedups import allocator

kept = allocator.keep_freed_memory() if sys.argv[1] == "keep" else False
faults = []
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = []
    for _ in range(4):
        block = np.empty(1 << 20, np.uint8)
        block.fill(1)
        blocks.append(block)
    del blocks, block
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"kept": kept, "faults": faults}))
"""

PAGES_PER_ROUND = 4 * (1 << 20) // os.sysconf("SC_PAGE_SIZE")


def _run_rounds(mode: str, **env) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-c", ROUNDS, mode],
        capture_output=True,
        text=True,
        timeout=50,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return done


def _rounds(mode: str, **env) -> dict:
    return json.loads(_run_rounds(mode, **env).stdout)


def _glibc() -> bool:
    return os.confstr("CS_GNU_LIBC_VERSION") is not None


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's malloc's")
def test_kept_memory_is_reused_without_touching_fresh_pages():
    kept = _rounds("keep")
    assert kept["kept"] is True
    # The first round grows the heap; the later ones reuse it.
    assert kept["faults"][0] >= PAGES_PER_ROUND // 2
    assert max(kept["faults"][1:]) < PAGES_PER_ROUND // 10, kept
    # The same rounds with glibc's defaults fault on every round: the check can fail.
    plain = _rounds("plain")
    assert min(plain["faults"][1:]) >= PAGES_PER_ROUND // 2, plain


def test_the_environment_can_leave_malloc_as_it_is():
    assert _rounds("keep", MINITF_KEEP_FREED_MEMORY="0")["kept"] is False
    assert _rounds("keep", MINITF_KEEP_FREED_MEMORY="Off")["kept"] is False
    # glibc's own tuning, given at start, wins over ours.
    assert _rounds("keep", MALLOC_TRIM_THRESHOLD_="131072")["kept"] is False


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's malloc's")
def test_a_value_it_does_not_understand_is_named_in_a_warning_and_memory_is_kept():
    done = _run_rounds("keep", MINITF_KEEP_FREED_MEMORY="maybe")
    assert json.loads(done.stdout)["kept"] is True
    assert "MINITF_KEEP_FREED_MEMORY='maybe' is not understood: use 0 (off) or 1 (on" in (
        done.stderr
    )


SERVER = """
import minitf as tf
from minitf.runtime.speedups import allocator

before = allocator._applied
server = tf.train.Server.create_local_server()
print(before, allocator._applied)
server.stop()
"""


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's malloc's")
def test_a_server_that_starts_keeps_its_freed_memory():
    done = subprocess.run(
        [sys.executable, "-c", SERVER], capture_output=True, text=True, timeout=50
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "True"]
