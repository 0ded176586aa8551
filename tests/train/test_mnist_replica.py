"""TF's classic ``mnist_replica.py`` on a real local cluster (``minitf launch --ps 1 --workers 2``).

The script (``tests/data/mnist_replica/``) is TF's, with the minitf import
and a synthetic dataset of MNIST's shapes in place of the download. Worker 0
is the chief (`Supervisor` initializes the model), worker 1 waits for it.
The oracle is a formula: before training the softmax is near uniform, so the
validation cross entropy starts near ``n * ln(10)``; trained, it must be far
below.
"""

import math
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "data", "mnist_replica", "mnist_replica.py")
VALIDATION_EXAMPLES = 200
STEPS = 40


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync_replicas"])
def test_mnist_replica_trains_on_a_ps_and_two_workers(sync):
    args = ["--num_gpus", "0", "--train_steps", str(STEPS)] + (["--sync_replicas"] if sync else [])
    command = [sys.executable, "-m", "minitf.cli", "launch", "--ps", "1", "--workers", "2"]
    done = subprocess.run(
        [*command, SCRIPT, "--", *args], capture_output=True, text=True, timeout=100
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "[worker/1] Worker 1: Waiting for session to be initialized..." in out
    final = re.findall(
        r"\[worker/(\d)\] After 40 training step\(s\), validation cross entropy = (\S+)", out
    )
    assert sorted(task for task, _ in final) == ["0", "1"], out[-3000:]
    untrained = VALIDATION_EXAMPLES * math.log(10.0)
    for _, value in final:
        assert float(value) < 0.05 * untrained
    steps = [int(s) for s in re.findall(r"global step: (\d+)\)", out)]
    assert max(steps) >= STEPS
