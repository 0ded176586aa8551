"""Stepping a step one move at a time: on a local session, and across ps and worker processes.

The cluster test steps one whole SyncReplicas global step of the example
script (2 workers, strict tokens) and checks the order of what happens
against the protocol: the accumulator counts 1, then 2 of 2 gradients; only
then does the chief's take_grad run (it was ready, and the stepper
delivered it), emptying it; the update makes the global step 1 before the
tokens are enqueued, and both workers' token dequeues finish after.
"""

import contextlib
import io
import json
import re
import threading

import numpy as np
import pytest

import minitf as tf
from minitf.cluster.task_env import BREAK_ENV, STEPPER_ENV
from minitf.examples import sync_mlp
from minitf.runtime.core.scheduler import RUN
from minitf.runtime.distributed import launcher
from minitf.runtime.distributed.launcher import LocalCluster
from minitf.stepper import HeldScheduler, Stepper, terminal

pytestmark = pytest.mark.timeout(120)


def _queue_step():
    q = tf.FIFOQueue(3, tf.float32, shapes=[], name="q")
    taken = tf.add(q.dequeue(name="take"), 1.0, name="plus_one")
    put = q.enqueue(5.0, name="put")
    return taken, put


def test_a_local_step_waits_for_each_move_and_says_what_a_blocked_op_waits_for():
    taken, put = _queue_step()
    with tf.Session(scheduler=HeldScheduler()) as sess:
        stepper = Stepper.for_session(sess)
        result = {}
        runner = threading.Thread(
            target=lambda: result.update(v=sess.run([taken, put])), daemon=True
        )
        runner.start()
        events = stepper.until("put")  # everything before the enqueue: the dequeue blocks
        assert [e["op"] for e in events] == ["q", "take"]
        (task,) = stepper.state()["tasks"]
        (step,) = task["steps"]
        (waiting,) = step["waiting"]
        assert waiting["name"] == "take"
        waits = waiting["waits_for"]
        assert waits.pop("name").endswith("_q")  # a private queue: _<n>_q
        assert waits == {"kind": "queue", "size": 0, "capacity": 3, "required": 1}
        assert not result  # nothing returned yet: the step is held
        while stepper.next(wait=0.5) is not None:
            pass
        runner.join(10)
    assert not runner.is_alive()
    assert result["v"][0] == 6.0
    # The enqueue makes the waiting dequeue ready; delivering it runs the dequeue
    # (on its own step's thread), and then its value is delivered.
    assert [e["op"] for e in stepper.events] == [
        "q", "take", "put", "put", "take", "take", "plus_one"
    ]  # fmt: skip
    assert [e["move"] for e in stepper.events[2:6]] == ["run", "deliver", "deliver", "deliver"]


def test_a_shuffle_queue_dequeue_says_it_waits_for_more_than_min_after_dequeue():
    from minitf.stepper.describe import describe_state, waits_in_a_word

    q = tf.RandomShuffleQueue(10, 2, tf.float32, shapes=[()], name="q")
    fill = q.enqueue_many([[1.0, 2.0]], name="fill")
    taken = q.dequeue(name="take")
    with tf.Session(scheduler=HeldScheduler()) as sess:
        stepper = Stepper.for_session(sess)

        def run():
            sess.run(fill)
            with contextlib.suppress(tf.errors.CancelledError):  # closed while it waits
                sess.run(taken)

        runner = threading.Thread(target=run, daemon=True)
        runner.start()
        stepper.until("take")
        stepper.next()  # the dequeue runs and waits: 2 elements are not more than 2
        (task,) = stepper.state()["tasks"]
        (waiting,) = [op for step in task["steps"] for op in step["waiting"]]
        assert waits_in_a_word(waiting["waits_for"]) == "2 of 3"
        lines = describe_state(stepper.state())
        assert re.search(
            r"waiting: take — queue _\d+_q holds 2, needs 1 more than min_after_dequeue 2", lines
        )
        assert "capacity 10, min_after_dequeue 2: [" in lines
        sess.close()
        runner.join(10)
    assert not runner.is_alive()


def test_closing_the_session_cancels_a_held_step_instead_of_leaving_it_parked():
    taken, _ = _queue_step()
    sess = tf.Session(scheduler=HeldScheduler())
    outcome = {}

    def run():
        try:
            sess.run(taken)
        except tf.errors.OpError as exc:
            outcome["error"] = exc

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    assert sess.stepping.settle(10)
    Stepper.for_session(sess).next()  # one move made: the step is parked, held
    sess.close()
    runner.join(10)
    assert not runner.is_alive()
    assert isinstance(outcome["error"], tf.errors.CancelledError)
    assert "held" in outcome["error"].message


def test_a_task_not_started_for_stepping_says_how_to_step_it():
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="under `minitf step`"):
            Stepper.for_session(sess).state()


def _accumulator(state, name):
    for task in state["tasks"]:
        for resource in task["resources"]:
            if resource["kind"] == "accumulator" and resource["name"] == name:
                return resource
    return None


def test_one_sync_replicas_global_step_across_processes_in_the_protocols_order():
    args = ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0", "--step_timeout", "60"]
    env = {STEPPER_ENV: "1", BREAK_ENV: "ResourceAccumulatorApplyGradient"}
    output = io.StringIO()
    cluster = LocalCluster(
        {"ps": 1, "worker": 2}, script=sync_mlp.__file__, args=args, env=env, output=output
    )
    with cluster:
        stepper = Stepper.for_cluster(cluster.cluster_spec)
        stepper.wait_for_break()
        counts, steps, ops = [], [], []
        for _ in range(2000):
            event = stepper.next()
            assert event is not None, output.getvalue()[-2000:]
            state = stepper.state()
            accumulator = _accumulator(state, "hidden/weights:0/grad_accum")
            counts.append(accumulator["count"])
            steps.append(state["global_step"])
            ops.append((event["task"], event["move"], event["op"]))
            worker_tokens = [
                op for op in ops if op[1] == "deliver" and op[2] == "_recv/sync_token_q_Dequeue/0"
            ]
            if len(worker_tokens) == 2:
                break
        stepper.continue_()
        stepper.close()
        assert cluster.wait(60) == 0, output.getvalue()[-2000:]
    changes = [c for i, c in enumerate(counts) if i == 0 or c != counts[i - 1]]
    assert changes[:4] == [0, 1, 2, 0]
    two_of_two = counts.index(2)
    apply_ops = [
        i for i, op in enumerate(ops) if op[2] == "sync_replicas/ResourceAccumulatorApplyGradient"
    ]
    take = ops.index(
        (
            "/job:ps/replica:0/task:0",
            "deliver",
            "sync_replicas/ResourceAccumulatorTakeGradient",
        )
    )
    # Both workers' gradients, then the take; a worker already on its next step may push again.
    assert len(apply_ops) >= 2 and apply_ops[1] < take
    assert take > two_of_two  # the take ran only once the accumulator held 2 of 2
    assert all(i > take for i in apply_ops[2:])
    enqueue = [op[2] for op in ops].index("sync_token_q_EnqueueMany")
    assert steps[enqueue - 1] == 1  # the update made the global step 1 before the tokens
    assert max(i for i, s in enumerate(steps) if s == 0) < enqueue
    dequeues = [i for i, op in enumerate(ops) if op[2] == "sync_token_q_Dequeue"]
    assert len(dequeues) >= 2 and all(i > enqueue for i in dequeues[-2:])
    assert {op[0] for op in ops if op[2] == "_recv/sync_token_q_Dequeue/0"} == {
        "/job:worker/replica:0/task:0",
        "/job:worker/replica:0/task:1",
    }


def test_minitf_step_answers_commands_on_stdin_with_json_lines():
    out = io.StringIO()
    code = terminal.run(
        sync_mlp.__file__,
        1,
        2,
        ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0"],
        ["ResourceAccumulatorApplyGradient"],
        json_mode=True,
        commands=["state", "next ps:0", "until-blocked nobody", "quit"],
        out=out,
    )
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    assert [a["command"] for a in answers] == ["state", "next", "until-blocked", "quit"]
    assert {t["task"] for t in answers[0]["state"]["tasks"]} == {
        "/job:ps/replica:0/task:0",
        "/job:worker/replica:0/task:0",
        "/job:worker/replica:0/task:1",
    }
    assert answers[1]["events"][0]["task"] == "/job:ps/replica:0/task:0"
    assert "no task 'nobody'" in answers[2]["error"]
    np.testing.assert_equal(answers[0]["state"]["global_step"], 0)


def test_in_a_notebook_the_stepper_shows_its_state_and_a_picture_of_what_ran_and_waits():
    taken, put = _queue_step()
    with tf.Session(scheduler=HeldScheduler()) as sess:
        stepper = Stepper.for_session(sess)
        runner = threading.Thread(target=lambda: sess.run([taken, put]), daemon=True)
        runner.start()
        stepper.until("put")
        marks = stepper.highlight()
        assert marks == {"q": "done", "take": "blocked", "put": "running"}
        html_text = stepper._repr_html_()
        assert "waiting: take" in html_text and "holds 0, needs 1" in html_text
        dot = stepper.picture().source
        for name, color in (("take", "#6a4c93"), ("put", "#e63946"), ("q", "#2a9d8f")):
            line = next(l for l in dot.splitlines() if l.lstrip().startswith(f'"{name}"'))
            assert color in line
        stepper.continue_()
        runner.join(10)
        assert not runner.is_alive()


def test_a_task_whose_stepper_goes_away_releases_its_held_steps():
    from minitf.runtime.distributed.launcher import free_ports

    (port,) = free_ports(1)
    spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{port}"]})
    server = tf.train.Server(spec, job_name="worker", task_index=0, scheduler=HeldScheduler())
    try:
        taken, put = _queue_step()
        sess = tf.Session(server.target)
        result = {}
        runner = threading.Thread(
            target=lambda: result.update(v=sess.run([taken, put])), daemon=True
        )
        runner.start()
        stepper = Stepper.for_cluster(spec)
        assert stepper.next() is not None  # the step is held: it moves when told to
        assert not result
        stepper.close()  # the controller is gone: nobody would ever move it again
        runner.join(30)
        assert not runner.is_alive()
        assert result["v"][0] == 6.0
        sess.close()
    finally:
        server.stop()


def test_a_move_that_is_not_possible_now_is_refused_naming_the_op():
    taken, put = _queue_step()
    scheduler = HeldScheduler()
    with tf.Session(scheduler=scheduler) as sess:
        stepper = Stepper.for_session(sess)
        runner = threading.Thread(target=lambda: sess.run([taken, put]), daemon=True)
        runner.start()
        stepper.until("put")  # `take` waits; `put` is ready
        ((step_id, execution),) = scheduler.executions().items()
        take = next(i for i, s in enumerate(execution.steps) if s.op.name == "take")
        with pytest.raises(ValueError, match="cannot run take in step"):
            scheduler.grant(step_id, (RUN, take))
        with pytest.raises(ValueError, match="no step 999 is running here"):
            scheduler.grant(999, (RUN, take))
        stepper.continue_()
        runner.join(10)
        assert not runner.is_alive()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["step", "no_such_script.py"], "minitf step: no such script: no_such_script.py"),
        (["step", "--workers", "0", __file__], "--workers must be at least 1"),
        (["step", "--ps", "-1", __file__], "--ps at least 0"),
    ],
)
def test_minitf_step_says_what_is_wrong_with_its_arguments(argv, message, capsys):
    from minitf import cli

    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


SYNC_ARGS = ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0", "--step_timeout", "60"]


def _held_still(state: dict) -> dict:
    """What must be equal at one point of two runs: resources, and the steps under way.

    A step that has made no move yet is left out: whether its client has sent
    it at this instant is a matter of time, and it has changed nothing.
    """
    return {
        "global_step": state["global_step"],
        "tasks": [
            {**task, "steps": [s for s in task["steps"] if s["done"]]} for task in state["tasks"]
        ],
    }


def test_back_replays_the_run_to_an_identical_state():
    output = io.StringIO()
    stepper = Stepper.launch(
        sync_mlp.__file__,
        {"ps": 1, "worker": 2},
        SYNC_ARGS,
        breaks=["ResourceAccumulatorApplyGradient"],
        output=output,
    )
    try:
        for _ in range(6):
            assert stepper.next() is not None, output.getvalue()[-2000:]
        before = stepper.state(limit=10**6)
        made = [stepper.next() for _ in range(8)]
        assert all(made) and stepper.state(limit=10**6) != before
        first_pid = stepper.cluster.pid("ps", 0)
        remaining = stepper.back(8)
        assert stepper.cluster.pid("ps", 0) != first_pid  # a new run, not an undo log
        assert len(remaining) == 6
        assert _held_still(stepper.state(limit=10**6)) == _held_still(before)
        # The replayed run goes on exactly as the first one did.
        assert [stepper.next() for _ in range(8)] == made
        stepper.continue_()
        assert stepper.wait(60) == 0, output.getvalue()[-2000:]
    finally:
        stepper.close()
        if stepper.cluster is not None:
            stepper.cluster.stop()


def _trained_variables(state: dict) -> dict:
    return {
        r["name"]: np.asarray(r["value"])
        for task in state["tasks"]
        for r in task["resources"]
        if r["kind"] == "variable" and r.get("initialized")
    }


def test_the_same_schedule_replayed_gives_identical_values():
    output = io.StringIO()
    first = Stepper.launch(
        sync_mlp.__file__, {"ps": 1, "worker": 2}, SYNC_ARGS, breaks=["sync_token_q_Dequeue"],
        output=output,
    )  # fmt: skip
    try:
        first.step(1)  # one synchronous update, in whatever order the moves come
        values = _trained_variables(first.state(limit=10**6))
        schedule = first.schedule()
    finally:
        first.close()
        first.cluster.stop()
    # An independent check that the update happened: SGD moved the weights away
    # from the chief's seeded initial values, and the global step is 1.
    assert values["global_step"] == 1
    assert set(values) >= {"hidden/weights", "logits/weights", "hidden/biases"}
    assert np.abs(values["hidden/biases"]).sum() > 0  # zeros before the first update
    again = Stepper.launch(
        sync_mlp.__file__, {"ps": 1, "worker": 2}, SYNC_ARGS, schedule=schedule, output=output
    )
    try:
        replayed = _trained_variables(again.state(limit=10**6))
        again.continue_()
        assert again.wait(60) == 0, output.getvalue()[-2000:]
    finally:
        again.close()
        again.cluster.stop()
    assert replayed.keys() == values.keys()
    for name, value in values.items():
        np.testing.assert_array_equal(replayed[name], value, err_msg=name)


@pytest.mark.parametrize(
    "pattern, stops_at",
    [
        ("take", ("take", "QueueDequeueV2")),  # part of a name
        ("QueueEnqueueV2", ("put", "QueueEnqueueV2")),  # a type
        ("localhost:0", ("q", "FIFOQueueV2")),  # a task: its first op
    ],
)
def test_a_breakpoint_names_an_op_by_name_type_or_task(pattern, stops_at):
    taken, put = _queue_step()
    scheduler = HeldScheduler(held=False, task="/job:localhost/replica:0/task:0")
    scheduler.set_breakpoints([pattern])
    with tf.Session(scheduler=scheduler) as sess:
        runner = threading.Thread(target=lambda: sess.run([taken, put]), daemon=True)
        runner.start()
        stepper = Stepper.for_session(sess)
        stepper.wait_for_break(30)
        (task,) = stepper.state()["tasks"]
        assert task["held"]
        (step,) = task["steps"]
        candidates = [(op["name"], op["type"]) for op in step["ready"]]
        assert stops_at in candidates
        stepper.continue_()
        runner.join(10)
        assert not runner.is_alive()


def test_a_breakpoint_on_a_device_stops_that_task_only(tmp_path):
    output = io.StringIO()
    stepper = Stepper.launch(
        sync_mlp.__file__, {"ps": 1, "worker": 2}, SYNC_ARGS, breaks=["ps:0"], output=output
    )
    try:
        state = stepper.state()
        stopped = [t["task"] for t in state["tasks"] if t["steps"] and t["steps"][0]["ready"]]
        assert "/job:ps/replica:0/task:0" in stopped
        stepper.continue_()
        assert stepper.wait(60) == 0, output.getvalue()[-2000:]
    finally:
        stepper.close()


LOCAL_SCRIPT = """
import sys
import minitf as tf

q = tf.FIFOQueue(3, tf.float32, shapes=[], name="q")
taken = tf.add(q.dequeue(name="take"), float(sys.argv[1]), name="plus")
put = q.enqueue(5.0, name="put")
with tf.Session() as sess:
    print("result", sess.run([taken, put])[0])
"""


def test_minitf_step_without_a_cluster_steps_the_scripts_local_sessions(tmp_path, capfd):
    script = tmp_path / "local_queue.py"
    script.write_text(LOCAL_SCRIPT)
    out = io.StringIO()
    code = terminal.run(
        str(script), None, None, ["2"], ["take"], json_mode=True,
        commands=["state", "next", "next", "back", "continue"], out=out,
    )  # fmt: skip
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    (task,) = answers[0]["state"]["tasks"]
    assert task["task"] == "/job:localhost/replica:0/task:0"
    assert [op["name"] for op in task["steps"][0]["ready"]] == ["take", "put"]
    assert [e["op"] for e in answers[1]["events"] + answers[2]["events"]] == ["take", "put"]
    assert "back re-runs the script" in answers[3]["error"]  # not a cluster it started
    assert "result 7.0" in capfd.readouterr().err  # the script's output: 5 + 2


def test_a_launch_whose_tasks_cannot_be_reached_stops_their_processes(tmp_path, monkeypatch):
    # A script that never starts its server: connecting fails, and the
    # stepper must not leave the processes it started running.
    from minitf.framework import errors
    from minitf.stepper import controller

    script = tmp_path / "no_server.py"
    script.write_text("import time\ntime.sleep(120)\n")
    monkeypatch.setenv("MINITF_CONNECT_TIMEOUT", "1")
    monkeypatch.setattr(launcher, "LAUNCH_PATIENCE", 1.0)  # the process lives: no longer wait
    started = []

    class Recorded(LocalCluster):
        def start(self):
            started.append(self)
            return super().start()

    monkeypatch.setattr(controller, "LocalCluster", Recorded)
    with pytest.raises(errors.UnavailableError, match="unreachable"):
        Stepper.launch(str(script), {"ps": 1, "worker": 1})
    (cluster,) = started
    assert all(code is not None for code in cluster.poll().values())  # every process has exited


class _EndingTask:
    """A worker whose script ends while the stepper asks it for its state."""

    name = "/job:worker/replica:0/task:0"

    def __init__(self, states: int):
        self.exited = False
        self._states = states  # the states it answers before it ends

    def call(self, method, *args, timeout=30.0):
        if method == "state":
            self.exited = self._states == 0  # it exits under the call: its connection resets
            self._states -= 1
        if self.exited:
            raise tf.errors.UnavailableError(None, None, f"lost the connection to {self.name}")
        if method == "state":
            return {"task": self.name, "held": True, "steps": [], "resources": []}
        return {"settle": True, "moves": 3}[method]


class _ClusterOf:
    def __init__(self, task):
        self._task = task

    def wait_task(self, job, index, timeout):
        return 0 if self._task.exited else None

    def stop(self):
        pass


@pytest.mark.parametrize("states", [0, 1, 2])
def test_a_worker_whose_script_ends_between_two_questions_is_shown_ended_not_an_error(states):
    task = _EndingTask(states)
    stepper = Stepper([task], settle_timeout=1.0)
    stepper.cluster = _ClusterOf(task)
    # Alive when the stepper lists the live tasks, gone when it asks for a state.
    assert stepper.step(1000, wait=0.2) == []
    assert stepper.state()["tasks"] == [
        {"task": task.name, "held": False, "ended": True, "steps": [], "resources": []}
    ]


def test_a_cluster_held_longer_than_its_step_timeout_goes_on_and_finishes():
    # Held at the breakpoint for longer than the script's --step_timeout and
    # --init_timeout: the time a class looks at the picture is no step's wait.
    output = io.StringIO()
    args = ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0",
            "--step_timeout", "0.3", "--init_timeout", "0.3"]  # fmt: skip
    stepper = Stepper.launch(
        sync_mlp.__file__, {"ps": 1, "worker": 2}, args,
        breaks=["ResourceAccumulatorApplyGradient"], output=output,
    )  # fmt: skip
    try:
        threading.Event().wait(1.0)  # the class looks at the breakpoint, past both timeouts
        for _ in range(3):
            assert stepper.next() is not None, output.getvalue()[-2000:]
        threading.Event().wait(0.5)
        stepper.continue_()
        assert stepper.wait(60) == 0, output.getvalue()[-2000:]
        assert "no token" not in output.getvalue()
    finally:
        stepper.close()
        if stepper.cluster is not None:
            stepper.cluster.stop()
