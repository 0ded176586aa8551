"""The synchronous training script trains with tf.train.SyncReplicasOptimizer on a LocalCluster.

The optimizer itself is tested in tests/train/test_sync_replicas_optimizer.py;
these tests run the script as users do, one process per task.
"""

import json

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import LocalCluster
from minitf.examples import sync_mlp

pytestmark = pytest.mark.timeout(120)


def test_build_sync_model_names_the_two_steps_and_checks_the_optimizer_name():
    model = sync_mlp.build_sync_model(3, replicas_to_aggregate=2)
    assert isinstance(model["opt"], tf.train.SyncReplicasOptimizer)
    assert tf.get_collection(sync_mlp.WORKER_STEP) == [model["train_op"]]
    assert tf.get_collection(sync_mlp.CHIEF_STEP) == [model["sync_op"]]
    assert (model["opt"]._replicas_to_aggregate, model["opt"]._total_num_replicas) == (2, 3)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        sync_mlp.build_sync_model(2, optimizer="rmsprop")


# -- the script --------------------------------------------------------------------------------


class Lines:
    """Collects a LocalCluster's output lines."""

    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.extend(text.splitlines())

    def flush(self):
        pass

    def reports(self):
        return [json.loads(line.split(" ", 1)[1]) for line in self.lines if " {" in line]


@pytest.mark.parametrize(
    "workers, extra",
    [(2, []), (3, ["--replicas_to_aggregate", "2"])],
    ids=["two-workers", "one-backup-worker"],
)
def test_script_trains_to_exactly_the_target_global_step_and_every_worker_exits(workers, extra):
    steps = 40
    output = Lines()
    args = ["--steps", str(steps), "--report_every", "10", "--step_timeout", "30", *extra]
    cluster = LocalCluster(
        {"ps": 1, "worker": workers}, script=sync_mlp.__file__, args=args, output=output
    )
    with cluster:
        assert cluster.wait(90) == 0, "\n".join(output.lines[-30:])
    reports = sorted(output.reports(), key=lambda r: r["worker"])
    assert [r["worker"] for r in reports] == list(range(workers))
    assert all(r["global_step"] == steps for r in reports)
    # Each worker step takes one token: R initial ones, then N per update, and
    # the workers stop on the last N (they carry the target global step). Any
    # worker's gradients count towards an update, so the chief can make every
    # update alone; a worker slow to start (a busy machine) may then find the
    # target reached, make no step, and leave its last token in the queue.
    replicas = 2
    late = sum(r["local_steps"] == 0 for r in reports)
    assert late < workers
    assert sum(r["local_steps"] for r in reports) == replicas + workers * steps - late
    before, after = reports[0]["eval_loss"]
    assert after < 0.9 * before


def _mlp_grads(params: dict, x: np.ndarray, y: np.ndarray) -> dict:
    """The gradient of the MLP's mean softmax cross-entropy, by hand, in float64."""
    w1, b1 = params["hidden/weights"], params["hidden/biases"]
    w2, b2 = params["logits/weights"], params["logits/biases"]
    pre = x @ w1 + b1
    h = np.maximum(pre, 0.0)
    logits = h @ w2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    d_logits = p.copy()
    d_logits[np.arange(len(y)), y] -= 1.0
    d_logits /= len(y)
    d_pre = (d_logits @ w2.T) * (pre > 0)
    return {
        "hidden/weights": x.T @ d_pre,
        "hidden/biases": d_pre.sum(axis=0),
        "logits/weights": h.T @ d_logits,
        "logits/biases": d_logits.sum(axis=0),
    }


def test_strict_sync_over_processes_equals_sgd_on_the_mean_of_the_workers_gradients():
    steps, workers, lr, batch_size = 12, 2, 0.5, 16
    output = Lines()
    args = [
        "--steps", str(steps), "--num_tokens", "0", "--optimizer", "sgd",
        "--learning_rate", str(lr), "--batch_size", str(batch_size), "--report_variables",
        "--step_timeout", "30",
    ]  # fmt: skip
    cluster = LocalCluster(
        {"ps": 1, "worker": workers}, script=sync_mlp.__file__, args=args, output=output
    )
    with cluster:
        assert cluster.wait(90) == 0, "\n".join(output.lines[-30:])
    reports = sorted(output.reports(), key=lambda r: r["worker"])
    # Strict sync wastes nothing: every worker runs exactly one step per update.
    assert [r["local_steps"] for r in reports] == [steps] * workers
    params = {k: np.array(v, np.float64) for k, v in reports[0]["initial"].items()}
    data = sync_mlp.make_spirals(3000, seed=0)
    streams = [sync_mlp.worker_batches(i, data, batch_size) for i in range(workers)]
    for _ in range(steps):
        grads = [_mlp_grads(params, x.astype(np.float64), y) for x, y in map(next, streams)]
        for name in params:
            params[name] = params[name] - lr * np.mean([g[name] for g in grads], axis=0)
    for name, value in reports[0]["final"].items():
        np.testing.assert_allclose(value, params[name], rtol=2e-5, atol=2e-6, err_msg=name)
