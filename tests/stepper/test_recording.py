"""Recording a real run's schedule and replaying it: the same interleaving, the same values.

A run of TF's trainer on real processes, with TF's default tokens and a slow
worker, is recorded (each task logs every move it makes). Its outcome
depends on how the race went: which worker pushed an extra gradient, whose
was dropped. Replaying the recording makes every task's moves again in the
recorded order, so the checkpoint it ends with is the recorded run's, bit
for bit; and the stepper can walk the recording forwards and back.
"""

import json

import numpy as np
import pytest

import minitf as tf
from minitf.examples import trainer
from minitf.runtime.distributed.launcher import LocalCluster, load_recording
from minitf.stepper.controller import Stepper

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def _record(tmp_path) -> tuple[str, dict]:
    train_dir = tmp_path / "recorded"
    path = str(tmp_path / "run.json")
    args = ["--train_dir", str(train_dir), "--train_steps", "6", "--save_steps", "3"]
    cluster = LocalCluster(
        {"ps": 1, "worker": 2},
        trainer.__file__,
        args,
        env={"MINITF_STRAGGLERS": "1=Constant(0.01)"},
        output=None,
        record=path,
    )
    with cluster:
        assert cluster.wait(120) == 0
    return path, {n: tf.train.load_variable(str(train_dir), n) for n in ("w", "b", "global_step")}


def _retargeted(path: str, tmp_path, name: str) -> tuple[str, str]:
    """The recording, writing its checkpoints elsewhere (same arguments otherwise)."""
    data = load_recording(path)
    train_dir = str(tmp_path / name)
    data["args"][data["args"].index("--train_dir") + 1] = train_dir
    copy = str(tmp_path / f"{name}.json")
    with open(copy, "w") as f:
        json.dump(data, f)
    return copy, train_dir


def test_a_recorded_run_replays_to_the_same_values_and_steps_forwards_and_back(tmp_path):
    path, recorded = _record(tmp_path)
    data = load_recording(path)
    assert set(data["moves"]) == {
        "/job:ps/replica:0/task:0",
        "/job:worker/replica:0/task:0",
        "/job:worker/replica:0/task:1",
    }
    assert all(len(moves) > 50 for moves in data["moves"].values())

    # Replayed whole: the same checkpoint, bit for bit.
    whole, whole_dir = _retargeted(path, tmp_path, "whole")
    stepper = Stepper.replay(whole, moves=None)
    try:
        stepper.continue_()
        assert stepper.wait() == 0
    finally:
        stepper.close()
    for name, value in recorded.items():
        np.testing.assert_array_equal(tf.train.load_variable(whole_dir, name), value)

    # Stepped: each move is the task's next recorded one; back undoes moves.
    stepped, stepped_dir = _retargeted(path, tmp_path, "stepped")
    stepper = Stepper.replay(stepped, moves=0)
    try:
        made = [stepper.next() for _ in range(12)]
        assert all(m is not None for m in made)
        for event in made:
            task_log = data["moves"][event["task"]]
            kind = 0 if event["move"] == "run" else 1
            assert [event["step_id"], kind, event["op"]] in task_log
        stepper.back(5)
        assert len(stepper.events) == 7
        assert stepper.events == made[:7]
        stepper.continue_()
        assert stepper.wait() == 0
    finally:
        stepper.close()
    for name, value in recorded.items():
        np.testing.assert_array_equal(tf.train.load_variable(stepped_dir, name), value)


def test_a_file_that_is_not_a_recording_is_refused_saying_how_to_make_one(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="minitf launch --record"):
        Stepper.replay(str(bad))


def test_minitf_launch_records_and_minitf_step_replays_from_the_command_line(tmp_path):
    import io
    import subprocess
    import sys

    from minitf.stepper import terminal

    path, train_dir = str(tmp_path / "run.json"), str(tmp_path / "train")
    command = [
        sys.executable, "-m", "minitf.cli", "launch", "--workers", "2", "--record", path,
        trainer.__file__, "--", "--train_dir", train_dir, "--train_steps", "4",
        "--save_steps", "2",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    recorded = tf.train.load_variable(train_dir, "w")
    replay, replay_dir = _retargeted(path, tmp_path, "replayed")
    out = io.StringIO()
    code = terminal.run(
        None, None, None, [], [], json_mode=True,
        commands=["next", "next", "back 1", "state", "quit"], out=out, replay=replay,
    )  # fmt: skip
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    assert [a["command"] for a in answers] == ["next", "next", "back", "state", "quit"]
    np.testing.assert_array_equal(tf.train.load_variable(replay_dir, "w"), recorded)


def test_minitf_step_takes_a_script_or_a_recording_not_both_nor_neither(tmp_path, capsys):
    from minitf import cli

    assert cli.main(["step"]) == 2
    assert "give a SCRIPT or --replay FILE" in capsys.readouterr().err
    assert cli.main(["step", "--replay", str(tmp_path / "none.json")]) == 2
    assert "no such recording" in capsys.readouterr().err


def _simulate(tmp_path, record: str) -> dict:
    """TF's trainer on a simulated cluster whose slow worker's gradients are dropped."""
    from minitf.cluster import SimulatedCluster, delays

    train_dir = str(tmp_path / "simulated")
    cluster = SimulatedCluster(
        {"ps": 1, "worker": 3},
        seed=0,
        worker_delay={2: delays.Constant(0.05), "*": delays.Exponential(0.01)},
    )
    report = cluster.run(
        trainer.__file__,
        ["--train_dir", train_dir, "--train_steps", "5", "--save_steps", "5"],
        record=record,
    )
    assert sum(len(u["dropped"]) for u in report["updates"]) > 0  # a race was decided
    return {n: tf.train.load_variable(train_dir, n) for n in ("w", "b", "global_step")}


def test_a_simulated_run_replays_on_real_tasks_to_the_same_values_stepped_and_back(tmp_path):
    # The simulated moves are written as a real run's recording: real
    # processes, held, make them in the same order and end with the
    # simulated run's checkpoint, bit for bit — the dropped gradients too.
    path = str(tmp_path / "simulated.json")
    simulated = _simulate(tmp_path, path)
    data = load_recording(path)
    replay, replay_dir = _retargeted(path, tmp_path, "replayed")
    stepper = Stepper.replay(replay, moves=0)
    try:
        made = [stepper.next() for _ in range(10)]
        for event in made:
            kind = 0 if event["move"] == "run" else 1
            assert [event["step_id"], kind, event["op"]] in data["moves"][event["task"]]
        stepper.back(4)
        assert stepper.events == made[:6]
        assert not stepper.recording_done
        stepper.continue_()
        assert stepper.wait() == 0
    finally:
        stepper.close()
    for name, value in simulated.items():
        np.testing.assert_array_equal(tf.train.load_variable(replay_dir, name), value)


def test_minitf_launch_simulate_records_and_minitf_step_replays_to_the_end(tmp_path):
    import io
    import subprocess
    import sys

    from minitf.stepper import terminal

    path, train_dir = str(tmp_path / "run.json"), str(tmp_path / "train")
    out_dir = str(tmp_path / "report")
    command = [
        sys.executable, "-m", "minitf.cli", "launch", "--simulate", "--workers", "3",
        "--straggler", "2=Constant(0.05);*=Exponential(0.01)", "--seed", "0",
        "--record", path, "--out", out_dir,
        trainer.__file__, "--", "--train_dir", train_dir, "--train_steps", "4",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "minitf step --replay" in done.stdout
    with open(f"{out_dir}/report.json") as f:
        assert len(json.load(f)["updates"]) == 4
    recorded = tf.train.load_variable(train_dir, "w")
    replay, replay_dir = _retargeted(path, tmp_path, "replayed")
    total = sum(len(moves) for moves in load_recording(replay)["moves"].values())
    out = io.StringIO()
    # `step 1000` never comes: it makes every recorded move, the workers'
    # scripts end, and the stepper says so instead of waiting.
    code = terminal.run(
        None, None, None, [], [], json_mode=True,
        commands=["next", "step 1000", "state", "quit"], out=out, replay=replay,
    )  # fmt: skip
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    assert not [a for a in answers if "error" in a], answers
    assert len(answers[0]["events"]) + len(answers[1]["events"]) == total
    assert "moves are all made" in answers[1]["note"]
    ended = {t["task"] for t in answers[2]["state"]["tasks"] if t.get("ended")}
    assert {f"/job:worker/replica:0/task:{i}" for i in range(3)} <= ended
    np.testing.assert_array_equal(tf.train.load_variable(replay_dir, "w"), recorded)
