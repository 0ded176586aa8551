"""The ops SyncReplicasOptimizer, replica_device_setter and the optimizer build: TF's names.

Names are what students see in every picture and type after ``until``. The
file ``data/tf_sync_replicas_ops.json`` was written by TensorFlow itself: it
holds a program (an MLP on two ps and two workers, TF1's ref variables,
``SyncReplicasOptimizer`` with its chief hook) and the name, type and device
of every op TF built for it. The test runs the same program on minitf.

Two kinds of op are left out of the comparison, because they are what other
functions build inside: the ops of a gradient function (``gradients/...``) and
of ``boolean_mask`` under ``report_uninitialized_variables``, and the
``Shape`` inside ``sparse_softmax_cross_entropy_with_logits``.

One difference is TF's own: the file was written by TF 2.x, whose chief
queue runner runs on ``sync_token_q``; TF 1.15 (``sync_replicas_optimizer.py``,
the TF1 that minitf reproduces) gives it a ``dummy_queue`` instead, "because
the queue runner doesn't automatically reopen it once it closed queues in
PS devices", so its two close ops are ``dummy_queue_Close`` and
``dummy_queue_Close_1``.
"""

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

RECORDED = json.loads((Path(__file__).parent / "data" / "tf_sync_replicas_ops.json").read_text())

LEFT_OUT = ("gradients/", "report_uninitialized_variables/boolean_mask/")
INSIDE_OTHER_FUNCTIONS = {"SparseSoftmaxCrossEntropyWithLogits/Shape"}

# TF 1.15's chief queue runner: a dummy queue on the global step's device, and its closes.
TF1_QUEUE_RUNNER = {
    "sync_token_q_Close": None,
    "sync_token_q_Close_1": None,
    "dummy_queue": ("FIFOQueueV2", "/job:ps/task:0"),
    "dummy_queue_Close": ("QueueCloseV2", "/job:ps/task:0"),
    "dummy_queue_Close_1": ("QueueCloseV2", "/job:ps/task:0"),
}


def _compared(ops: list) -> dict:
    """``{name: (type, job and task)}`` of the ops compared (a device's type is TF's detail)."""
    kept = {}
    for name, kind, device in ops:
        if name.startswith(LEFT_OUT) or name in INSIDE_OTHER_FUNCTIONS:
            continue
        kept[name] = (kind, device.split("/device:")[0])
    return kept


def _minitf_ops() -> list:
    out = io.StringIO()
    argv = sys.argv
    sys.argv = ["tf_sync_replicas_ops", "minitf"]
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(RECORDED["program"], "tf_sync_replicas_ops", "exec"), {"__name__": "x"})
    finally:
        sys.argv = argv
    return json.loads(out.getvalue())


def test_sync_replicas_builds_tf_s_ops_under_tf_s_names_types_and_devices():
    expected = _compared(RECORDED["ops"])
    for name, replaced in TF1_QUEUE_RUNNER.items():
        if replaced is None:
            del expected[name]
        else:
            expected[name] = replaced
    found = _compared(_minitf_ops())
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    assert not missing and not extra, f"missing: {missing}\nnot in TF: {extra}"
    differ = {n: (expected[n], found[n]) for n in expected if expected[n] != found[n]}
    assert not differ
    # The order TF made them in, too: the numbers in _1, _2, ... follow it.
    tf_names = [n for n, _, _ in RECORDED["ops"]]
    assert [n for n in found if n in set(tf_names)] == [n for n in tf_names if n in found]
