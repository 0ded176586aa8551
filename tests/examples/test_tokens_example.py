"""The K-batch-sync effect of TF's default tokens (tensorflow#11753), on a simulated cluster.

The oracle is TF's documented token mechanism: with ``num_tokens=-1`` the
chief queues ``replicas_to_aggregate`` tokens that any worker may take, so
a fast worker can push several gradients into one update and a slow
worker's gradient can arrive too late; with ``num_tokens=0`` each update
takes exactly one gradient of every worker and none is dropped.
"""

import os

import pytest

from minitf.examples import tokens
from minitf.runtime.distributed.launcher import load_recording

pytestmark = pytest.mark.timeout(120)


def test_default_tokens_let_a_fast_worker_batch_and_strict_sync_does_not(tmp_path, capsys):
    record = str(tmp_path / "race.json")
    default, strict = tokens.main(["--workers", "3", "--steps", "6", "--record", record])
    first = capsys.readouterr().out
    # TF's default: one worker's several batches in one update; the slow
    # worker (2) gives less than its third, and stale gradients are dropped.
    assert default["batched"] >= 1
    assert any(max(a.count(w) for w in set(a)) > 1 for a in default["applied"])
    assert default["dropped"] >= 1
    assert default["slow_share"] < 1 / 3
    # Strict sync: every update is one gradient of each worker.
    assert strict["batched"] == 0 and strict["dropped"] == 0
    assert all(sorted(a) == [0, 1, 2] for a in strict["applied"])
    assert strict["updates"] == 6
    # The slow worker sets the pace: each strict update waits for its 0.05 s.
    assert strict["time_per_update"] == pytest.approx(0.05, rel=1e-6)
    # The default-tokens run is a recording the stepper can open; the
    # checkpoints of the recorded run are gone, so a replay initializes.
    data = load_recording(record)
    assert data["script"].endswith("trainer.py") and "--num_tokens" in data["args"]
    assert not os.path.exists(data["args"][data["args"].index("--train_dir") + 1])
    # The same seed, the same lines.
    tokens.main(["--workers", "3", "--steps", "6"])
    again = capsys.readouterr().out
    assert again.splitlines() == first.splitlines()[:-1]  # less the line naming the recording


def test_bad_arguments_are_refused_with_a_usage_message(capsys):
    with pytest.raises(SystemExit):
        tokens.main(["--workers", "1"])
    assert "--workers must be at least 2" in capsys.readouterr().err
