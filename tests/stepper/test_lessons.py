"""Lessons: the same start and the same moves every time, simulated or on real processes.

The expected state at the built-in lesson's breakpoint is TF's: with
``num_tokens=0`` nothing is in ``sync_token_q`` until the first update,
every accumulator holds 0 of 2 gradients for global step 0 when the first
``apply_grad`` is about to run, and the global step is 0.
"""

import io
import json
import subprocess
import sys

import pytest

from minitf.stepper import SimulatedStepper, lessons

pytestmark = pytest.mark.timeout(180)

PS = "/job:ps/replica:0/task:0"


def _key(event: dict) -> tuple:
    return (event["task"], event["move"], event["op"])


def test_the_built_in_lesson_starts_at_tf_s_state_before_the_first_apply_grad():
    lesson = lessons.load("sync_replicas")
    assert lesson.tasks == {"ps": 1, "worker": 2}
    stepper = lessons.start(lesson, output=io.StringIO())
    try:
        assert isinstance(stepper, SimulatedStepper)
        state = stepper.state()
        (ps,) = [t for t in state["tasks"] if t["task"] == PS]
        resources = {r["name"]: r for r in ps["resources"]}
        accumulators = [r for r in resources.values() if r["kind"] == "accumulator"]
        assert len(accumulators) == 4
        assert all(a["count"] == 0 and a["global_step"] == 0 for a in accumulators)
        assert resources["sync_token_q"]["size"] == 0  # num_tokens=0: none until an update
        assert state["global_step"] == 0
        assert state["candidates"][0]["type"] == "ResourceAccumulatorApplyGradient"
    finally:
        stepper.close()


def test_a_lesson_makes_the_same_first_ten_moves_twice_and_on_real_processes():
    lesson = lessons.load("sync_replicas")
    runs = []
    for _ in range(2):
        stepper = lessons.start(lesson, output=io.StringIO())
        try:
            runs.append([_key(stepper.next()) for _ in range(10)])
        finally:
            stepper.close()
    assert runs[0] == runs[1]
    output = io.StringIO()
    real = lessons.start(lesson, processes=True, output=output)
    try:
        assert [_key(real.next()) for _ in range(10)] == runs[0]
        real.continue_()
        assert real.wait(120) == 0, output.getvalue()[-2000:]
    finally:
        real.close()
        if real.cluster is not None:
            real.cluster.stop()


@pytest.mark.parametrize(
    "content, words",
    [
        ("not json", "is not a lesson file"),
        ('{"format": "other"}', "format must be"),
        ('{"format": "minitf-lesson/1", "script": "x.py"}', "no script 'x.py'"),
        ('{"format": "minitf-lesson/1", "script": "minitf.examples.sync_mlp", "tasks": '
         '{"ps": 1}}', "at least one worker"),
        ('{"format": "minitf-lesson/1", "script": "minitf.examples.sync_mlp", "seed": -5}',
         "'seed' must be a whole number >= 0"),
        ('{"format": "minitf-lesson/1", "script": "minitf.examples.sync_mlp", "brake": "x"}',
         "unknown field(s) ['brake']"),
    ],
)  # fmt: skip
def test_a_bad_lesson_file_says_what_is_wrong(tmp_path, content, words):
    path = tmp_path / "lesson.json"
    path.write_text(content)
    with pytest.raises(ValueError) as info:
        lessons.load(str(path))
    assert words in str(info.value)


def test_an_unknown_lesson_names_the_built_in_ones():
    with pytest.raises(ValueError, match="sync_replicas"):
        lessons.load("no_such_lesson")


def test_minitf_step_lesson_from_the_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "step", "--lesson", "sync_replicas", "--json"],
        input="next\nback 1\nnext\ncontinue\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["command"] for a in answers] == ["next", "back", "next", "continue"]
    assert answers[0]["events"] == answers[2]["events"]
    assert answers[1]["state"]["moves"] == 0
    bad = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "step", "--lesson", "no_such_lesson"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "no lesson 'no_such_lesson'" in bad.stderr


# The moves a step of data flow is made of, by op type (what `event` stops after).
DATAFLOW_TYPES = {
    "_Send", "_Recv", "ResourceAccumulatorApplyGradient", "ResourceAccumulatorTakeGradient",
    "ResourceAccumulatorSetGlobalStep", "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
    "QueueDequeueManyV2", "Assign", "AssignAdd", "ApplyGradientDescent",
}  # fmt: skip


def test_the_event_granularity_runs_the_ops_between_two_dataflow_events_together():
    lesson = lessons.load("sync_replicas")
    one_by_one = lessons.start(lesson, output=io.StringIO())
    try:
        singles = [one_by_one.next() for _ in range(120)]
    finally:
        one_by_one.close()
    stepper = lessons.start(lesson, output=io.StringIO())
    try:
        made = []
        while len(made) < 100:
            moves = stepper.next_event()
            assert moves
            kinds = [m["type"] in DATAFLOW_TYPES for m in moves]
            # The ops before an event run together; the event ends the command (its
            # delivery too, when an op that waited has its completion at once).
            if len(moves) > 1 and moves[-1]["move"] == "deliver" and kinds[-2]:
                assert moves[-1]["op"] == moves[-2]["op"]
                kinds = kinds[:-1]
            assert kinds[-1] and not any(kinds[:-1]), [m["op"] for m in moves]
            made += moves
        # The same moves in the same order as one at a time: only the grouping differs.
        assert [_key(m) for m in made] == [_key(m) for m in singles[: len(made)]]
    finally:
        stepper.close()


def test_the_overview_draws_every_op_of_every_held_step_in_one_picture():
    lesson = lessons.load("sync_replicas")
    stepper = lessons.start(lesson, output=io.StringIO())
    try:
        state = stepper.state()
        text, boxes = stepper.overview(state)
        held = {
            f"{task['task'].split('/job:')[1].split('/')[0]}:{task['task'][-1]}|{step['step_id']:x}"
            for task in state["tasks"]
            for step in task["steps"]
        }
        expected = sum(step["ops"] for task in state["tasks"] for step in task["steps"])
        assert len(boxes) == expected  # every op of every held step has a box
        assert {key.rsplit("|", 1)[0] for key in boxes} == held
        for box in set(boxes.values()):
            assert json.dumps(box) in text  # each box is drawn, under its DOT id
        assert text.count("->") > len(set(boxes.values())) // 2  # edges, Send to Recv
    finally:
        stepper.close()


def test_event_on_a_task_says_what_is_wrong_in_one_line_and_moves_nothing():
    from minitf.stepper.commands import execute

    stepper = lessons.start(lessons.load("sync_replicas"), output=io.StringIO())
    try:
        moves = stepper.state()["moves"]
        answer = execute(stepper, "event worker:1")  # a simulation moves in virtual-time order
        assert "virtual-time order" in answer["error"] and "\n" not in answer["error"]
        assert "unknown command" in execute(stepper, "events")["error"]
        assert stepper.state()["moves"] == moves
    finally:
        stepper.close()
