"""The demo trains the spiral classifier on a local ps/worker cluster and writes its outputs."""

import argparse
import json

import numpy as np
import pytest

from minitf import demo
from minitf.viz import render

pytestmark = pytest.mark.timeout(120)


def test_spirals_are_balanced_and_on_the_unit_disc():
    features, labels = demo.make_spirals(3000, seed=0)
    assert features.shape == (3000, 2) and features.dtype == np.float32
    assert np.all(np.linalg.norm(features, axis=1) <= 1.0 + 1e-6)
    counts = np.bincount(labels, minlength=demo.NUM_CLASSES)
    assert counts.min() > 900  # about a third each


def test_demo_trains_on_a_cluster_and_writes_its_outputs(tmp_path, capsys):
    args = argparse.Namespace(steps=600, out=str(tmp_path), ps=1, workers=2)
    assert demo.main(args) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    # A linear model cannot separate three spiral arms (about 1/3 to 1/2 accuracy);
    # the MLP trained by the two workers must.
    assert metrics["test_accuracy"] > 0.85
    assert metrics["global_steps"] >= 600
    # Both workers trained, and every global step is one worker's step.
    local = metrics["local_steps"]
    assert sorted(local) == ["0", "1"] and all(v > 0 for v in local.values())
    assert sum(local.values()) == metrics["global_steps"]
    assert sorted(metrics["cluster"]) == ["ps", "worker"]
    out = capsys.readouterr().out
    assert "test accuracy" in out and str(tmp_path / "metrics.json") in out
    # The pictures of what ran: the chief's graph three ways, and a traced span.
    for name in ("whole", "ps_task0", "worker_task0", "partitioned"):  # the chief's graph
        assert (tmp_path / "graphs" / f"{name}.dot").stat().st_size > 0
        if render.dot_available():
            assert (tmp_path / "graphs" / f"{name}.svg").stat().st_size > 0
    assert str(tmp_path / "graphs" / "partitioned.svg") in out or not render.dot_available()
    trace = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    processes = {e["args"]["name"] for e in trace if e.get("name") == "process_name"}
    assert processes == {
        "/job:ps/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:1/device:CPU:0",
    }
    # Both workers' updates reached the ps while the span was recorded.
    updates = [e for e in trace if e["ph"] == "X" and e["name"] == "ApplyAdam"]
    assert len(updates) >= 4  # 4 variables, at least one step
    assert (tmp_path / "trace_timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_rejects_a_non_positive_step_count(tmp_path):
    with pytest.raises(SystemExit, match="--steps must be positive"):
        demo.main(argparse.Namespace(steps=0, out=str(tmp_path)))


def test_sync_demo_trains_exactly_to_the_step_and_draws_the_chiefs_step(tmp_path, capsys):
    args = argparse.Namespace(steps=60, out=str(tmp_path), ps=1, workers=2, sync=True)
    assert demo.main(args) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["global_steps"] == 60  # synchronous: the last update is exactly the target
    # Every update averages 2 gradients; the 2 initial tokens let 2 more steps through.
    assert sum(metrics["local_steps"].values()) == 2 * 60 + 2
    chief = (tmp_path / "graphs" / "partitioned_chief.dot").read_text()
    assert "sync_token_q" in chief and "grad_accum" in chief
    trace = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    takes = [e for e in trace if e["ph"] == "X" and e["name"] == "ResourceAccumulatorTakeGradient"]
    assert takes and all(e["args"]["waited_on"]["kind"] == "accumulator" for e in takes if
                         "waited_on" in e["args"])  # fmt: skip
