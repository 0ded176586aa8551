"""The stepper's answers in words: a move as a line, the state as lines a class reads.

The terminal prints them, the browser page shows a blocked op's wait in
them, and a notebook shows the state as them (`Stepper._repr_html_`).
"""

from __future__ import annotations

from minitf.runtime.core.frames import iteration_words, loop_name
from minitf.runtime.core.watch import describe_wait

__all__ = ["describe_event", "describe_iteration", "describe_state", "loop_name"]

describe_iteration = iteration_words


def describe_event(event: dict) -> str:
    """One move as a line: ``/job:worker/task:1  run  MatMul (MatMul)``.

    A move in a ``tf.while_loop`` says its iteration: ``while/add (AddV2),
    iteration 2 of frame while``.

    Args:
        event: One of `Stepper.events`.
    """
    task = event["task"].replace("/replica:0", "")
    # Delivering an offer runs the op that waited (a take_grad takes its gradients
    # now); the op's outputs reach its step in a later delivery.
    move = "finish" if event.get("offer") else event["move"]
    where = describe_iteration(event.get("frames") or [])
    return f"{task:<22} {move:<8} {event['op']} ({event['type']})" + (f", {where}" if where else "")


def describe_brief(state: dict) -> str:
    """The state in one line after a move: the global step, the moves, and the next move.

    Args:
        state: A `Stepper.state`.
    """
    line = f"global step {state['global_step']} · {state['moves']} moves"
    candidates = state.get("candidates") or []
    if candidates:
        line += " · next: " + describe_event(candidates[0]).strip()
    return line + "\n"


def describe_state(state: dict) -> str:
    """The stepper's state as lines a student reads from the back row.

    Args:
        state: A `Stepper.state`.
    """
    lines = [f"global step: {state['global_step']}    moves so far: {state['moves']}"]
    required = required_gradients(state)
    for task in state["tasks"]:
        held = "  (ended)" if task.get("ended") else "  (held)" if task["held"] else ""
        lines.append(f"{task['task'].replace('/replica:0', '')}{held}")
        for step in task["steps"]:
            lines.append(f"  step {step['step_id']:x}: {_done_words(step)}")
            if step["ready"]:
                lines.append("    ready:   " + ", ".join(_op_words(op) for op in step["ready"]))
            for op in step["waiting"]:
                words = waits_for_words(op["waits_for"])
                lines.append(f"    waiting: {_op_words(op)} — {words}")
            if step["arrived"]:
                lines.append("    arrived: " + ", ".join(_op_words(op) for op in step["arrived"]))
        for resource in task["resources"]:
            if resource["kind"] == "queue":
                capacity = resource.get("capacity", -1)
                room = "unbounded" if capacity is None or capacity < 0 else f"capacity {capacity}"
                if resource.get("min_after_dequeue"):
                    room += f", min_after_dequeue {resource['min_after_dequeue']}"
                lines.append(
                    f"  queue {resource['name']}: {resource['size']} element(s), {room}: "
                    f"{resource['values']}"
                )
            elif resource["kind"] == "accumulator":
                of = required.get(resource["name"])
                count = f"{resource['count']} of {of}" if of else f"{resource['count']}"
                lines.append(
                    f"  accumulator {resource['name']}: {count} gradient(s) for step "
                    f"{resource['global_step']}"
                )
    return "\n".join(lines) + "\n"


def _done_words(step: dict) -> str:
    """``12 of 28 ops done``; with a loop, whose ops run once per iteration, the runs."""
    if step.get("loops"):
        return f"{step['done']} op runs of its {step['ops']} ops (a loop's run once per iteration)"
    return f"{step['done']} of {step['ops']} ops done"


def _op_words(op: dict) -> str:
    """An op of a step's state: its name, and its iteration if it is in a loop."""
    where = describe_iteration(op.get("frames") or [])
    return f"{op['name']} ({where})" if where else op["name"]


def required_gradients(state: dict) -> dict[str, int]:
    """How many gradients each accumulator's waiting ``take_grad`` needs, by accumulator name.

    Args:
        state: A `Stepper.state`.
    """
    found = {}
    for task in state["tasks"]:
        for step in task["steps"]:
            for op in step["waiting"]:
                waits = op.get("waits_for") or {}
                if waits.get("kind") == "accumulator" and waits.get("required"):
                    found[waits["name"]] = waits["required"]
    return found


def waits_for_words(waits: dict) -> str:
    """What a blocked op waits for, in words.

    Args:
        waits: An op's ``waits_for`` from the state.
    """
    return describe_wait(waits)


def waits_in_a_word(waits: dict) -> str:
    """What a blocked op waits for, in a word or two: the page writes it beside the op's box.

    Args:
        waits: An op's ``waits_for`` from the state.
    """
    kind = waits.get("kind")
    if kind == "queue":
        required = waits.get("required", 1)
        if not waits.get("closed"):
            required += waits.get("min_after_dequeue", 0)  # a shuffle queue keeps these back
        return "empty" if not waits["size"] else f"{waits['size']} of {required}"
    if kind == "accumulator":
        return f"{waits['count']} of {waits.get('required', '?')}"
    if kind == "tensor":
        where = describe_iteration(waits.get("frames") or [])
        return f"no tensor yet ({where})" if where else "no tensor yet"
    return "waits"
