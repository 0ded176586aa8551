"""Stepping a ``tf.while_loop``: every move names its iteration, ``until iteration N``, ``back``.

The loop of these tests is ``i = 0; while i < 5: i = i + 1``: its body runs
in iterations 0 to 4 of its frame, and iteration 5 only tests the condition
(5 < 5 is false) and leaves. Counted by hand from the ops `tf.while_loop`
builds (docs/loops.md): the constant ``0`` is folded into the plan, so the
step's first move is the ``Enter``; then each iteration that goes round
makes ten moves — ``Merge``, the condition's constant ``Less/y`` and
``Less``, ``LoopCond``, ``Switch``, the ``Exit`` (dead: the loop goes on),
``Identity``, the body's constant ``add/y`` and ``add``, and
``NextIteration``, which starts the next iteration. Iteration 5 makes the
same ten moves: its ``Exit`` is live, and the body's ops move dead.
"""

import threading

import pytest

import minitf as tf
from minitf.stepper import HeldScheduler, Stepper
from minitf.stepper.commands import execute
from minitf.stepper.describe import (
    describe_event,
    describe_state,
    waits_for_words,
    waits_in_a_word,
)

pytestmark = pytest.mark.timeout(60)

FRAME = "while/while_context"
PER_ITERATION = {
    "while/Merge", "while/Less/y", "while/Less", "while/LoopCond", "while/Switch",
    "while/Exit", "while/Identity", "while/add/y", "while/add", "while/NextIteration",
}  # fmt: skip


def _loop():
    return tf.while_loop(lambda i: i < 5, lambda i: i + 1, [tf.constant(0)])


class _Held:
    """A session whose run of ``fetch`` is held, in a thread, with its stepper."""

    def __init__(self, fetch):
        self.session = tf.Session(scheduler=HeldScheduler())
        self.stepper = Stepper.for_session(self.session)
        self.result = {}
        self._thread = threading.Thread(
            target=lambda: self.result.update(value=self.session.run(fetch)), daemon=True
        )
        self._thread.start()

    def finish(self):
        while self.stepper.next(wait=0.5) is not None:
            pass
        self._thread.join(10)
        self.session.close()
        return self.result["value"]


def _iteration(event):
    frames = event["frames"]
    return frames[-1][1] if frames else None


def test_every_move_of_a_loop_names_its_frame_and_iteration():
    held = _Held(_loop())
    assert held.finish() == 5
    events = held.stepper.events
    assert events[0]["op"] == "while/Enter" and events[0]["frames"] == []  # the Enter runs outside
    adds = [e for e in events if e["op"] == "while/add"]
    # 5 body iterations, and the last that leaves, where the body's ops move dead.
    assert [e["frames"] for e in adds] == [[[FRAME, n]] for n in range(6)]
    assert len(events) == 1 + 6 * len(PER_ITERATION)
    line = describe_event(adds[2])
    assert line.endswith("while/add (AddV2), iteration 2 of frame while")


def test_until_iteration_stops_before_the_first_move_of_that_iteration():
    held = _Held(_loop())
    made = held.stepper.until_iteration(3)
    assert len(made) == 1 + 3 * len(PER_ITERATION)  # the Enter, then iterations 0, 1, 2
    for n in range(3):
        assert {e["op"] for e in made if _iteration(e) == n} == PER_ITERATION
    (candidate, *_) = held.stepper.state()["candidates"]
    assert (candidate["op"], candidate["frames"]) == ("while/Merge", [[FRAME, 3]])
    assert "while/Merge (iteration 3 of frame while)" in describe_state(held.stepper.state())
    # Already there: nothing moves; "of while" names the loop.
    assert held.stepper.until_iteration(3, "while") == []
    answer = execute(held.stepper, "until iteration 5 of while")
    assert len(answer["events"]) == 2 * len(PER_ITERATION)
    assert held.finish() == 5


def test_until_iteration_refuses_a_loop_that_is_not_there():
    held = _Held(_loop())
    answer = execute(held.stepper, "until iteration 2 of whiel")
    assert "no loop 'whiel': the loops are while" in answer["error"]
    assert "until iteration takes N" in execute(held.stepper, "until iteration two")["error"]
    assert held.finish() == 5


def test_a_nested_loop_says_the_outer_iteration_too():
    def outer_body(i, total):
        inner = tf.while_loop(lambda j, t: j < 2, lambda j, t: (j + 1, t + 1), [0, total])
        return i + 1, inner[1]

    result = tf.while_loop(lambda i, t: i < 3, outer_body, [tf.constant(0), tf.constant(0)])
    held = _Held(result[1])
    made = held.stepper.until_iteration(1, "while/while")
    frames = held.stepper.state()["candidates"][0]["frames"]
    assert frames == [[FRAME, 0], ["while/while/while_context", 1]]
    assert all(_iteration(e) == 0 for e in made if len(e["frames"]) == 2)
    line = describe_event({**made[-1], "frames": frames})
    assert line.endswith("iteration 1 of frame while/while, in iteration 0 of frame while")
    assert held.finish() == 6  # 3 outer iterations, each adding 1 twice


@pytest.mark.timeout(120)
def test_back_over_a_loop_on_processes_replays_to_an_identical_state():
    import io

    from minitf.stepper import lessons

    lesson = lessons.load("while_loop")
    output = io.StringIO()
    stepper = Stepper.launch(lesson.script, lesson.tasks, lesson.args, breaks=lesson.breaks,
                             output=output)  # fmt: skip
    try:
        stepper.until_iteration(2)
        before = stepper.state(limit=10**6)
        made = stepper.until_iteration(4)
        assert {e["frames"][-1][1] for e in made if e["frames"]} == {2, 3}
        stepper.back(len(made))
        assert stepper.state(limit=10**6) == before
        assert stepper.until_iteration(4) == made  # the same moves, in the same iterations
        stepper.continue_()
        assert stepper.wait(60) == 0, output.getvalue()[-2000:]
        assert "x 32.0" in output.getvalue()
    finally:
        stepper.close()
        if stepper.cluster is not None:
            stepper.cluster.stop()


def test_a_tensor_waited_for_in_a_loop_is_named_with_its_iteration():
    # What waits_for gives for a _Recv waiting in iteration 2 of a loop nested in
    # iteration 1 of another (its key ends with the frames and iterations, as sent).
    ps = "/job:ps/replica:0/task:0"
    waits = {
        "kind": "tensor",
        "key": f"{ps};/job:worker/replica:0/task:0;while/while/read:0;"
        "while/while_context:1|while/while/while_context:2",
        "tensor": "while/while/read:0",
        "from": ps,
        "frames": [["while/while_context", 1], ["while/while/while_context", 2]],
    }
    where = "iteration 2 of frame while/while, in iteration 1 of frame while"
    assert waits_in_a_word(waits) == f"no tensor yet ({where})"
    assert waits_for_words(waits) == f"a tensor from {ps} (while/while/read:0) in {where}"
    outside = {"kind": "tensor", "key": "a;b;read:0", "tensor": "read:0", "from": ps}
    assert waits_in_a_word(outside) == "no tensor yet"
    assert waits_for_words(outside) == f"a tensor from {ps} (read:0)"
