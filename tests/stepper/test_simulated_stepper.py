"""Stepping `examples/sync_mlp.py` on a simulated cluster: next, until, back, continue.

The expected moves come from a free run of the same script on a simulated
cluster (no stepper): a stepped run must make exactly its moves, in its
order. The expected states at the breakpoint come from TF's
`SyncReplicasOptimizer` semantics: before the first ``apply_grad`` nothing
is accumulated, the global step is 0 and the chief has put
``replicas_to_aggregate`` tokens in ``sync_token_q``.
"""

import contextlib
import io
import json
import subprocess
import sys
import time

import pytest

from minitf.cluster import SimulatedCluster
from minitf.examples import sync_mlp
from minitf.stepper import SimulatedStepper

pytestmark = pytest.mark.timeout(120)

TASKS = {"ps": 1, "worker": 2}
ARGS = ["--steps", "2", "--report_variables"]
PS = "/job:ps/replica:0/task:0"


def _free_run() -> tuple[list, list[dict]]:
    """The moves and the reports of the same run, free-running."""
    out = io.StringIO()
    cluster = SimulatedCluster(TASKS)
    # Op by op, as a stepper watches it (free, a step's straight walks are one move each).
    cluster.simulation.by_op = True
    with contextlib.redirect_stdout(out):
        cluster.run(sync_mlp.__file__, ARGS)
    return cluster.events, _reports(out.getvalue())


def _reports(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _ps_resources(state: dict) -> dict[str, dict]:
    (ps,) = [t for t in state["tasks"] if t["task"] == PS]
    return {r["name"]: r for r in ps["resources"]}


def _key(event) -> tuple:
    if isinstance(event, dict):
        return (event["task"], event["move"], event["op"])
    _, task, _, _, move, op = event
    return (task, move, op)


@pytest.fixture(scope="module")
def free_run():
    return _free_run()


def test_the_breakpoint_state_is_tf_s_before_the_first_apply_grad(free_run):
    stepper = SimulatedStepper(sync_mlp.__file__, TASKS, ARGS, breaks=["ApplyGradient"])
    try:
        state = stepper.state()
        (candidate,) = state["candidates"]
        assert candidate["type"] == "ResourceAccumulatorApplyGradient"
        assert candidate["task"] == PS
        resources = _ps_resources(state)
        accumulators = [r for r in resources.values() if r["kind"] == "accumulator"]
        assert len(accumulators) == 4  # hidden and logits, weights and biases
        assert all(a["count"] == 0 and a["global_step"] == 0 for a in accumulators)
        assert resources["sync_token_q"]["size"] == 2  # replicas_to_aggregate tokens
        assert state["global_step"] == 0
        # The moves made free before the breakpoint are the free run's.
        events, _ = free_run
        assert _key(events[stepper._base]) == _key(candidate)
    finally:
        stepper.close()


def test_next_and_until_make_the_free_run_s_moves_in_its_order(free_run):
    events, _ = free_run
    stepper = SimulatedStepper(sync_mlp.__file__, TASKS, ARGS, breaks=["ApplyGradient"])
    try:
        base = stepper._base
        made = [stepper.next() for _ in range(5)]
        made += stepper.until("TakeGradient")
        assert [_key(e) for e in made] == [_key(e) for e in events[base : base + len(made)]]
        # until stops before the first matching move of the free run after the start.
        first = next(n for n in range(base + 5, len(events)) if "TakeGradient" in events[n][5])
        assert base + len(made) == first
        assert stepper.state()["candidates"][0]["op"] == events[first][5]
    finally:
        stepper.close()


def test_back_re_simulates_to_the_same_state_quickly():
    stepper = SimulatedStepper(sync_mlp.__file__, TASKS, ARGS, breaks=["ApplyGradient"])
    try:
        start = stepper.state()
        stepper.next()
        stepper.next()
        middle = stepper.state()
        stepper.step(1)  # one whole global step of 1 ps + 2 workers
        assert stepper.state()["global_step"] == 1
        after = len(stepper.events)
        stepper.back(after - 2)
        assert len(stepper.events) == 2
        assert stepper.state() == middle
        cpu = time.process_time()
        wall = time.monotonic()
        stepper.back(2)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        assert stepper.state() == start
        # Going back over a global step re-runs the script's start and the
        # step's moves in this process: well under half a second of work.
        assert cpu < 0.5, (cpu, wall)
        with pytest.raises(ValueError, match="cannot go back 1 move"):
            stepper.back(1)
    finally:
        stepper.close()


def test_continue_ends_the_run_as_the_free_run_ends(free_run):
    _, expected = free_run
    out = io.StringIO()
    stepper = SimulatedStepper(sync_mlp.__file__, TASKS, ARGS, breaks=["ApplyGradient"], output=out)
    stepper.until("TakeGradient")
    stepper.back(3)
    stepper.continue_()
    assert stepper.wait(60) == 0
    reports = _reports(out.getvalue())
    assert sorted(reports, key=lambda r: r["worker"]) == sorted(expected, key=lambda r: r["worker"])
    chief = next(r for r in reports if r["worker"] == 0)
    assert chief["global_step"] == 2


def test_a_task_cannot_be_chosen_and_a_mistyped_script_fails_at_once():
    stepper = SimulatedStepper(sync_mlp.__file__, TASKS, ARGS, breaks=["ApplyGradient"])
    try:
        with pytest.raises(ValueError, match="virtual-time order"):
            stepper.next("worker:1")
    finally:
        stepper.close()
    with pytest.raises(FileNotFoundError):
        SimulatedStepper("no_such_script.py", TASKS)


def test_minitf_step_simulate_from_the_command_line():
    commands = "until TakeGradient\nback 2\nnext\ncontinue\n"
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "step", "--simulate", "--ps", "1", "--workers", "2",
         "--break", "ApplyGradient", "--json", sync_mlp.__file__, "--", "--steps", "2"],
        input=commands, capture_output=True, text=True, timeout=100,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["command"] for a in answers] == ["until", "back", "next", "continue"]
    moves = len(answers[0]["events"])
    assert answers[1]["state"]["moves"] == moves - 2
    assert answers[2]["state"]["moves"] == moves - 1
    assert "error" not in "".join(json.dumps(a) for a in answers)


def test_a_mistyped_until_is_refused_at_once_and_an_ended_run_says_so():
    stepper = SimulatedStepper(sync_mlp.__file__, TASKS, ARGS, breaks=["ApplyGradient"])
    try:
        before = stepper.state()
        with pytest.raises(ValueError, match="no op or task matches 'TakeGradeint'") as info:
            stepper.until("TakeGradeint")
        assert "did you mean" in str(info.value) and "TakeGradient" in str(info.value)
        assert stepper.state() == before  # nothing moved
        stepper.until("worker:1")  # a task is a pattern too
        stepper.continue_()
        assert stepper.wait(60) == 0
        with pytest.raises(ValueError, match="the script has ended"):
            stepper.next()
    finally:
        stepper.close()
