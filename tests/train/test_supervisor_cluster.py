"""`tf.train.Supervisor` on a real local cluster: a ps task and two worker processes.

The script (``tests/data/supervisor/sv_trainer.py``) makes worker 0 the
chief. Oracles: the non-chief is still waiting (its log says which variables
it waits for) while the chief is held at its gate; once the chief has
initialized, the non-chief sees the chief's ``init_fn`` value (7, not the
initial 0); and a chief killed at step 25 and started again resumes at the
step of its newest checkpoint (20), not at the ps's 25.
"""

import os
import threading

import pytest

import minitf as tf
from minitf.runtime.distributed.launcher import LocalCluster
from tests.faults.support import WatchedOutput

pytestmark = pytest.mark.timeout(90)

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "data", "supervisor", "sv_trainer.py")


def _open_gate(path: str) -> threading.Thread:
    """Writes to the chief's named pipe (opening blocks until the chief reads), in a thread."""

    def write():
        with open(path, "w") as gate:
            gate.write("go")

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _failed(cluster):
    def check():
        failed = {k: c for k, c in cluster.poll().items() if c not in (None, 0, -9)}
        assert not failed, f"tasks failed: {failed}"

    return check


def test_non_chief_waits_for_the_chief_and_a_restarted_chief_restores(tmp_path):
    logdir, gate = str(tmp_path / "logdir"), str(tmp_path / "gate")
    os.mkfifo(gate)
    output = WatchedOutput()
    args = ["--logdir", logdir, "--gate", gate, "--train_steps", "30", "--pause_at", "25"]
    cluster = LocalCluster({"ps": 1, "worker": 2}, script=SCRIPT, args=args, output=output)
    with cluster:
        check = _failed(cluster)
        output.wait_for(r"\[worker/0\] chief waits for the gate", check=check)
        output.wait_for(r"\[worker/1\].*Waiting \d+ s so far for the chief: .*w", check=check)
        assert "[worker/1] task 1 ready" not in output.getvalue()
        _open_gate(gate)
        output.wait_for(r"\[worker/1\] task 1 ready at step \d+ with w 7\.0", check=check)
        output.wait_for(r"\[worker/0\] paused at step 25", check=check)
        assert tf.train.latest_checkpoint(logdir).endswith("model.ckpt-20")
        mark = output.mark()
        assert cluster.restart("worker", 0, while_down=lambda: _open_gate(gate)) == -9
        output.wait_for(r"\[worker/0\] task 0 ready at step 20 with w 7\.0", mark, check=check)
        assert cluster.wait(60) == 0, output.getvalue()[-3000:]
    assert tf.train.latest_checkpoint(logdir) is not None
    assert tf.train.load_variable(logdir, "global_step") >= 30
