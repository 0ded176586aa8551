"""The demo trains the spiral classifier on a local ps/worker cluster and writes its outputs."""

import argparse
import json

import numpy as np
import pytest

from minitf import demo

pytestmark = pytest.mark.timeout(120)


def test_spirals_are_balanced_and_on_the_unit_disc():
    features, labels = demo.make_spirals(3000, seed=0)
    assert features.shape == (3000, 2) and features.dtype == np.float32
    assert np.all(np.linalg.norm(features, axis=1) <= 1.0 + 1e-6)
    counts = np.bincount(labels, minlength=demo.NUM_CLASSES)
    assert counts.min() > 900  # about a third each


def test_demo_trains_on_a_cluster_and_writes_its_outputs(tmp_path, capsys, graphviz):
    args = argparse.Namespace(steps=600, out=str(tmp_path), ps=1, workers=2, mode="async")
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
        assert (tmp_path / "graphs" / f"{name}.svg").stat().st_size > 0  # ./run test has dot
    assert str(tmp_path / "graphs" / "partitioned.svg") in out
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


@pytest.mark.parametrize(
    "flags, message",
    [
        ({"steps": 0}, "--steps must be positive, got 0"),
        ({"workers": 0}, "--workers must be at least 1, got 0"),
        ({"ps": 0}, r"--ps must be at least 1 \(the variables live there\), got 0"),
        ({"replicas_to_aggregate": 0}, "--replicas_to_aggregate must be at least 1, got 0"),
        ({"straggler": "3=Constant(1)"}, "--straggler names worker 3, but there are 3 workers"),
        ({"straggler": "1=Gauss(1)"}, r"--straggler: not a delay model: 'Gauss\(1\)'"),
        ({"mode": "fast"}, "--mode must be sync or async, got 'fast'"),
    ],
)
def test_demo_rejects_bad_flags_in_one_line_before_anything_starts(tmp_path, flags, message):
    args = argparse.Namespace(**{"steps": 10, "out": str(tmp_path / "out"), **flags})
    with pytest.raises(SystemExit, match="^minitf demo: " + message) as info:
        demo.main(args)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()  # nothing started


def test_demo_trains_in_sync_by_default_with_a_backup_and_counts_every_gradient(tmp_path, capsys):
    # Worker 2 waits 30 ms per step: it is the late one, whose gradients are dropped.
    # (Long enough that a loaded machine's demo still traces while all three run.)
    args = argparse.Namespace(steps=150, out=str(tmp_path), straggler="2=Constant(0.03)")
    assert demo.main(args) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert (metrics["mode"], metrics["workers"], metrics["replicas_to_aggregate"]) == ("sync", 3, 2)
    assert metrics["global_steps"] == 150
    applied, dropped = metrics["applied"], metrics["dropped"]
    # At least two gradients per update: take_grad(2) averages every fresh one
    # there when it runs, and a third can be in by then (as in TF).
    record = json.loads((tmp_path / "sync_record.json").read_text())
    assert all(len(u["applied"]) >= 2 for u in record["updates"])
    assert sum(applied.values()) == sum(len(u["applied"]) for u in record["updates"])
    # Every step a worker ran pushed one gradient, applied or dropped.
    steps = metrics["local_steps"]
    for w in ("0", "1", "2"):
        assert applied.get(w, 0) + dropped.get(w, 0) == steps[w]
    # The slow worker runs fewer steps and gets fewer gradients in. (The fast
    # ones may lose more: tokens are anonymous, so they take the slow one's and
    # run ahead with a stale local step, as in TF.)
    assert steps["2"] < min(steps["0"], steps["1"])
    assert applied.get("2", 0) < min(applied["0"], applied["1"])
    assert [u["global_step"] for u in record["updates"]] == list(range(1, 151))
    out = capsys.readouterr().out
    assert "SyncReplicasOptimizer, 2 of 3 gradients per update (1 backup worker)" in out
    assert "worker 2:" in out and "dropped" in out
    # The straggler's waits are in the trace of the same run.
    trace = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    waits = [e for e in trace if e["ph"] == "X" and e["name"] == "StragglerDelay"]
    assert waits and all(e["dur"] >= 30_000 for e in waits)


def test_sync_demo_trains_exactly_to_the_step_and_draws_the_chiefs_step(tmp_path, capsys):
    args = argparse.Namespace(
        steps=60, out=str(tmp_path), ps=1, workers=2, sync=True, replicas_to_aggregate=2
    )
    assert demo.main(args) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["global_steps"] == 60  # synchronous: the last update is exactly the target
    # Each update releases 2 tokens and there were 2 initial ones: one token per
    # step, but for the last update's token of a worker that never trained (on a
    # loaded machine its process may start after the other has made every update).
    idle = sum(1 for steps in metrics["local_steps"].values() if steps == 0)
    assert sum(metrics["local_steps"].values()) == 2 * 60 + 2 - idle
    # Every step pushed a gradient, applied (at least 2 per update) or dropped.
    applied, dropped = metrics["applied"], metrics["dropped"]
    assert sum(applied.values()) >= 2 * 60
    for worker, steps in metrics["local_steps"].items():
        assert applied.get(worker, 0) + dropped.get(worker, 0) == steps
    chief = (tmp_path / "graphs" / "partitioned_chief.dot").read_text()
    assert "sync_token_q" in chief and "grad_accum" in chief
    trace = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    takes = [e for e in trace if e["ph"] == "X" and e["name"] == "ResourceAccumulatorTakeGradient"]
    assert takes and all(e["args"]["waited_on"]["kind"] == "accumulator" for e in takes if
                         "waited_on" in e["args"])  # fmt: skip
