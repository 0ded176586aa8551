"""``minitf step``: a TF1 script's cluster, stepped from the terminal one op at a time.

The command starts the script as a local cluster (as ``minitf launch``
does) with every task held (`minitf.runtime.scheduler.HeldScheduler`), or
running free until a ``--break`` pattern, then reads commands — typed at a
prompt, or one per line on stdin when it is not a terminal — and answers
each with readable lines, or one JSON line with ``--json``:

===========================  ==================================================
``next [TASK]``              one move (on TASK: ``worker:1``, ``ps:0``)
``until PATTERN``            moves until an op matching PATTERN is about to run
``until-blocked TASK``       moves on TASK until nothing there can move
``step N``                   moves until the global step is N
``state``                    every task's steps and resources
``continue``                 release every task (the script runs to its end)
``quit``                     release every task and stop reading commands
===========================  ==================================================
"""

from __future__ import annotations

import json
import shlex
import sys
import time

from minitf.runtime.launcher import LocalCluster
from minitf.runtime.server import BREAK_ENV, STEPPER_ENV
from minitf.stepper.controller import Stepper

PROMPT = "(minitf step) "


def run(
    script: str,
    ps: int,
    workers: int,
    script_args: list[str],
    breaks: list[str],
    json_mode: bool,
    commands=None,
    out=None,
) -> int:
    """Starts the cluster, answers commands until they end, lets the script finish.

    Args:
        script: The TF1 script every task runs.
        ps, workers: Tasks per job.
        script_args: The script's own arguments.
        breaks: Patterns: run free until an op matching one is about to run.
        json_mode: Answer each command with one JSON line.
        commands: Where commands come from (default: stdin, with a prompt on a terminal).
        out: Where answers go (default: stdout); task output goes to stderr.

    Returns:
        The cluster's exit code (0 when every worker finished).
    """
    out = out or sys.stdout
    env = {STEPPER_ENV: "1", BREAK_ENV: ";".join(breaks)}
    cluster = LocalCluster(
        {"ps": ps, "worker": workers}, script=script, args=script_args, env=env, output=sys.stderr
    )
    with cluster:
        stepper = Stepper.for_cluster(cluster.cluster_spec)
        try:
            if breaks:
                _wait_for_break(stepper)
            for line in _lines(commands):
                answer = execute(stepper, line)
                _print(answer, json_mode, out)
                if answer.get("command") in ("quit", "continue"):
                    break
            else:
                stepper.continue_()
        finally:
            stepper.close()
        return cluster.wait()


def _wait_for_break(stepper: Stepper, timeout: float = 120.0) -> None:
    """Waits until a task stops at a breakpoint, then holds every task."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(t["held"] and t["steps"] for t in stepper.state()["tasks"]):
            stepper.hold()
            return
        time.sleep(0.05)
    raise TimeoutError(f"no breakpoint was reached in {timeout:.0f} s")


def execute(stepper: Stepper, line: str) -> dict:
    """Carries out one command; returns ``{"command", "events", "state" or "error"}``."""
    words = shlex.split(line)
    if not words:
        return {"command": ""}
    command, args = words[0], words[1:]
    answer: dict = {"command": command, "args": args}
    try:
        if command == "next":
            event = stepper.next(args[0] if args else None)
            answer["events"] = [event] if event else []
        elif command == "until":
            answer["events"] = stepper.until(_one(command, args))
        elif command == "until-blocked":
            answer["events"] = stepper.until_blocked(_one(command, args))
        elif command == "step":
            answer["events"] = stepper.step(int(_one(command, args)))
        elif command == "state":
            pass
        elif command in ("continue", "quit"):
            stepper.continue_()
            return answer
        else:
            raise ValueError(
                f"unknown command {command!r}: next [TASK], until PATTERN, until-blocked TASK, "
                "step N, state, continue, quit"
            )
        answer["state"] = stepper.state()
    except (ValueError, IndexError) as exc:
        answer["error"] = str(exc)
    return answer


def _one(command: str, args: list[str]) -> str:
    if len(args) != 1:
        raise ValueError(f"{command} takes one argument, got {len(args)}")
    return args[0]


def _lines(commands):
    if commands is not None:
        yield from commands
        return
    if sys.stdin.isatty():
        try:
            import readline  # noqa: F401 - history and line editing for input()
        except ImportError:
            pass
        while True:
            try:
                yield input(PROMPT)
            except EOFError:
                return
    else:
        yield from sys.stdin


def _print(answer: dict, json_mode: bool, out) -> None:
    if json_mode:
        out.write(json.dumps(answer) + "\n")
        out.flush()
        return
    if "error" in answer:
        out.write(f"error: {answer['error']}\n")
    for event in answer.get("events", []):
        out.write(describe_event(event) + "\n")
    if "state" in answer:
        out.write(describe_state(answer["state"]))
    out.flush()


def describe_event(event: dict) -> str:
    """One move as a line: ``/job:worker/task:1  run  MatMul (MatMul)``."""
    task = event["task"].replace("/replica:0", "")
    return f"{task:<22} {event['move']:<8} {event['op']} ({event['type']})"


def describe_state(state: dict) -> str:
    """The stepper's state as lines a student reads from the back row."""
    lines = [f"global step: {state['global_step']}    moves so far: {state['moves']}"]
    for task in state["tasks"]:
        held = "  (held)" if task["held"] else ""
        lines.append(f"{task['task'].replace('/replica:0', '')}{held}")
        for step in task["steps"]:
            lines.append(f"  step {step['step_id']:x}: {step['done']} of {step['ops']} ops done")
            if step["ready"]:
                lines.append("    ready:   " + ", ".join(op["name"] for op in step["ready"]))
            for op in step["waiting"]:
                lines.append(f"    waiting: {op['name']} — {waits_for_words(op['waits_for'])}")
            if step["arrived"]:
                lines.append("    arrived: " + ", ".join(op["name"] for op in step["arrived"]))
        for resource in task["resources"]:
            if resource["kind"] == "queue":
                lines.append(
                    f"  queue {resource['name']}: {resource['size']} element(s) "
                    f"{resource['values']}"
                )
            elif resource["kind"] == "accumulator":
                lines.append(
                    f"  accumulator {resource['name']}: {resource['count']} gradient(s), "
                    f"step {resource['global_step']}"
                )
    return "\n".join(lines) + "\n"


def waits_for_words(waits: dict) -> str:
    """What a blocked op waits for, in words."""
    kind = waits.get("kind")
    if kind == "queue":
        return f"{waits['name']} holds {waits['size']}, needs {waits.get('required', 1)}"
    if kind == "accumulator":
        return (
            f"{waits['name']} has {waits['count']} of {waits.get('required', '?')} "
            f"gradients for step {waits['global_step']}"
        )
    if kind == "tensor":
        return f"a tensor from {waits['from']} ({waits['key'].rsplit(';', 1)[-1]})"
    return "its completion"
