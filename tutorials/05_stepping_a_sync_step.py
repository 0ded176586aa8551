"""Tutorial 5 — stepping one synchronous global step, op by op, across processes.

Run it: ``.venv/bin/python tutorials/05_stepping_a_sync_step.py [--out DIR]``

It starts the SyncReplicas example (``minitf/examples/sync_mlp.py``) as a
local cluster — one ps and two worker processes — with every task held by
the stepper, lets them run free until the first gradient is about to reach
an accumulator, and from there makes one move at a time until both workers
have their tokens for global step 1. It prints each move that changes what
a student can see (an accumulator's count, the chief's ``take_grad``, the
global step, the token queue) and draws the ps task's held steps at two
moments. Then it goes back a few moves — a new run of the same script,
replayed to the same state — and lets the script finish.

``minitf step`` gives the same moves at a prompt and ``minitf step --web``
as buttons in the browser.
"""

import argparse
import io
from pathlib import Path

from minitf.examples import sync_mlp
from minitf.stepper import Stepper
from minitf.stepper.terminal import describe_event
from minitf.viz import render

PS = "/job:ps/replica:0/task:0"
ACCUMULATOR = "hidden/weights:0/grad_accum"


def seen(state: dict) -> dict:
    """What a student watches: the first accumulator, the global step, the tokens."""
    found = {"global_step": state["global_step"], "count": None, "tokens": None}
    for task in state["tasks"]:
        for r in task["resources"]:
            if r["kind"] == "accumulator" and r["name"] == ACCUMULATOR:
                found["count"] = r["count"]
            if r["kind"] == "queue" and r["name"] == "sync_token_q":
                found["tokens"] = r["size"]
    return found


def draw_ps(stepper: Stepper, out: Path, name: str) -> None:
    """Saves the ps task's held steps, outlined: done, about to move, waiting."""
    pictures = [p for p in stepper.step_pictures() if p["task"] == PS]
    for i, picture in enumerate(pictures):
        files = picture["picture"].save(out / f"{name}_{i}")
        print(f"    picture of ps:0's step {picture['step_id']:x}: {files[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="minitf_out/stepping", help="where pictures go")
    args = parser.parse_args()
    out = Path(args.out)
    output = io.StringIO()  # the tasks' own output (shown if something fails)
    script_args = ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0"]
    print("Starting 1 ps and 2 workers, held until a gradient is about to reach an accumulator")
    stepper = Stepper.launch(
        sync_mlp.__file__,
        {"ps": 1, "worker": 2},
        script_args,
        breaks=["ResourceAccumulatorApplyGradient"],
        output=output,
    )
    try:
        before = seen(stepper.state())
        print(f"  at the breakpoint: {before}")
        drawn_waiting, took, tokens_out = False, False, 0
        while tokens_out < 2:
            event = stepper.next()
            if event is None:
                raise RuntimeError("nothing could move:\n" + output.getvalue()[-2000:])
            now = seen(stepper.state())
            # A take_grad of the chief was waiting: delivered, its accumulator had 2 of 2.
            first_take = not took and "TakeGradient" in event["op"]
            took = took or first_take
            if now != before or first_take:
                print(f"  {len(stepper.events):3d}. {describe_event(event)}")
                print(f"       now {now}")
            if now["count"] == 1 and not drawn_waiting and render.dot_available():
                draw_ps(stepper, out, "ps_one_of_two")  # take_grad waits: 1 of 2 gradients
                drawn_waiting = True
            if event["move"] == "deliver" and event["op"] == "_recv/sync_token_q_Dequeue/0":
                tokens_out += 1  # a worker has its token for the next global step
            before = now
        if render.dot_available():
            draw_ps(stepper, out, "ps_after_update")
        print(f"One global step took {len(stepper.events)} moves on 3 processes.")

        here = seen(stepper.state())
        stepper.back(3)
        print(f"Back 3 moves (the script ran again, replayed): {seen(stepper.state())}")
        for _ in range(3):
            stepper.next()
        assert seen(stepper.state()) == here, "the replayed run went another way"
        print(f"...and forward again to the same state: {here}")
        stepper.continue_()
        code = stepper.wait(120)
        print(f"The script ran to its end (exit code {code}).")
        assert code == 0, output.getvalue()[-2000:]
    finally:
        stepper.close()
        if stepper.cluster is not None:
            stepper.cluster.stop()


if __name__ == "__main__":
    main()
