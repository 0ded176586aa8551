"""Faults survived: a chief, a ps task or a worker killed with SIGKILL mid-run and restarted.

Each test runs TF's distributed trainer (``minitf/examples/trainer.py``:
MonitoredTrainingSession, SyncReplicasOptimizer, StopAtStepHook and
checkpoints) as real processes and kills a task once a checkpoint exists.
The oracles are outside minitf: the script must exit 0 at the last step, the
chief must say it restored the newest checkpoint, and the weights must be
those of the data's generating formula (y = x . w_true + 1).
"""

import re
import subprocess
import sys
import time

import numpy as np
import pytest

import minitf as tf
from minitf.examples import trainer
from minitf.runtime.distributed.launcher import LocalCluster
from tests.faults.support import WatchedOutput

pytestmark = pytest.mark.timeout(150)

STEPS = 300


def _step_of(checkpoint: str | None) -> int:
    return -1 if checkpoint is None else int(checkpoint.rsplit("-", 1)[1])


def _wait_for_checkpoint(train_dir: str, at_least: int, cluster, timeout: float = 60) -> int:
    """Polls the checkpoint state (written by another process) until it reaches ``at_least``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        step = _step_of(tf.train.latest_checkpoint(train_dir))
        if step >= at_least:
            return step
        if any(code not in (None, 0, -9) for code in cluster.poll().values()):
            break  # a task failed (-9 is the one this test killed)
        time.sleep(0.01)  # the chief writes it; nothing here can be waited on instead
    raise AssertionError(f"no checkpoint at step {at_least} in {timeout} s")


def _run_with_a_fault(tmp_path, job: str, index: int, workers=2, replicas=None, while_down=None):
    train_dir = str(tmp_path / "train")
    args = ["--train_dir", train_dir, "--train_steps", str(STEPS), "--save_steps", "20"]
    if replicas:
        args += ["--replicas_to_aggregate", str(replicas)]
    output = WatchedOutput()
    cluster = LocalCluster(
        {"ps": 1, "worker": workers}, script=trainer.__file__, args=args, output=output
    )
    with cluster:
        killed_at = _wait_for_checkpoint(train_dir, 60, cluster)
        mark = len(output.getvalue())
        down = None if while_down is None else (lambda: while_down(cluster, train_dir))
        assert cluster.restart(job, index, while_down=down) == -9
        try:
            code = cluster.wait(90)
        except subprocess.TimeoutExpired:
            stacks_from = len(output.getvalue())
            cluster.dump_stacks()  # where each task's threads wait, for the failure's message
            lines = output.getvalue()[:stacks_from].splitlines()
            tails = [
                "\n".join([line for line in lines if line.startswith(f"[{task}]")][-15:])
                for task in ("ps/0", "worker/0", "worker/1")
            ]
            stacks = output.getvalue()[stacks_from:]
            pytest.fail("the cluster did not finish:\n" + "\n".join(tails) + "\n" + stacks)
    text = output.getvalue()
    assert code == 0, text[-3000:]
    return train_dir, killed_at, text[mark:], text


def _assert_trained(train_dir: str):
    assert _step_of(tf.train.latest_checkpoint(train_dir)) == STEPS
    np.testing.assert_allclose(tf.train.load_variable(train_dir, "w"), trainer.W_TRUE, atol=1e-3)
    np.testing.assert_allclose(tf.train.load_variable(train_dir, "b"), 1.0, atol=1e-3)


def _restored_steps(text: str) -> list[int]:
    return [int(s) for s in re.findall(r"\[worker/0\].*Restoring parameters from .*-(\d+)", text)]


def test_a_chief_killed_mid_run_restarts_from_its_newest_checkpoint(tmp_path):
    train_dir, killed_at, after, _ = _run_with_a_fault(tmp_path, "worker", 0)
    restored = _restored_steps(after)
    assert restored and restored[0] >= killed_at  # nothing lost but the steps since it
    _assert_trained(train_dir)


def test_a_ps_task_killed_mid_run_is_restored_by_the_chief_and_training_goes_on(tmp_path):
    train_dir, killed_at, after, _ = _run_with_a_fault(tmp_path, "ps", 0)
    # The workers' steps failed (the ps was lost), their monitored sessions made
    # new ones, and the chief put the checkpoint's values on the new ps.
    restored = _restored_steps(after)
    assert restored and restored[0] >= killed_at
    _assert_trained(train_dir)


def test_a_worker_killed_with_a_backup_rejoins_and_the_others_never_stop(tmp_path):
    progress = {}

    def while_down(cluster, train_dir):
        # 3 workers, 2 gradients per update: the two left keep the global step moving.
        start = _step_of(tf.train.latest_checkpoint(train_dir))
        progress["reached"] = _wait_for_checkpoint(train_dir, start + 40, cluster)
        progress["start"] = start

    train_dir, _, after, _ = _run_with_a_fault(
        tmp_path, "worker", 2, workers=3, replicas=2, while_down=while_down
    )
    assert progress["reached"] >= progress["start"] + 40
    assert "[worker/2] worker 2: stopped at global step" in after  # it rejoined and finished
    _assert_trained(train_dir)


def test_tfs_distributed_trainer_runs_unchanged_through_minitf_launch(tmp_path):
    train_dir = str(tmp_path / "train")
    command = [
        sys.executable, "-m", "minitf.cli", "launch", "--ps", "1", "--workers", "2",
        trainer.__file__, "--", "--train_dir", train_dir, "--train_steps", "150",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[worker/1] worker 1: stopped at global step 150" in done.stdout
    assert _step_of(tf.train.latest_checkpoint(train_dir)) == 150
    # y = x . w_true + 1 with unit-variance features: gradient descent converges to it.
    np.testing.assert_allclose(tf.train.load_variable(train_dir, "w"), trainer.W_TRUE, atol=1e-3)
