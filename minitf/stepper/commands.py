"""The stepper's commands, shared by its faces: ``next``, ``until``, ``step``, ``back``, ...

`execute` carries out one command line on a `Stepper` and returns its
answer as a dict; the terminal (`minitf.stepper.terminal`) prints it, the
browser page (`minitf.stepper.web`) sends it as JSON. The commands are
listed in `minitf.stepper.terminal`.
"""

from __future__ import annotations

import shlex

from minitf.framework import errors
from minitf.stepper.controller import Stepper

COMMANDS = (
    "next [TASK], event [TASK], until PATTERN, until iteration N [of LOOP], until-blocked TASK, "
    "step N, back [N], state, continue, quit"
)


def execute(stepper: Stepper, line: str) -> dict:
    """Carries out one command; returns its answer.

    The answer is ``{"command", "args", "events", "note", "state" or "error"}``.
    ``note`` is there only when stepping a recording whose moves are all made.

    Args:
        stepper: The stepper.
        line: The command line, e.g. ``until take_grad``.
    """
    words = shlex.split(line)
    if not words:
        return {"command": ""}
    command, args = words[0], words[1:]
    answer: dict = {"command": command, "args": args}
    try:
        if command == "next":
            event = stepper.next(args[0] if args else None)
            answer["events"] = [event] if event else []
        elif command == "event":
            answer["events"] = stepper.next_event(args[0] if args else None)
        elif command == "until" and args[:1] == ["iteration"]:
            answer["events"] = stepper.until_iteration(*_iteration_args(args[1:]))
        elif command == "until":
            answer["events"] = stepper.until(_one(command, args))
        elif command == "until-blocked":
            answer["events"] = stepper.until_blocked(_one(command, args))
        elif command == "step":
            answer["events"] = stepper.step(int(_one(command, args)))
        elif command == "back":
            stepper.back(int(args[0]) if args else 1)
        elif command == "state":
            pass
        elif command in ("continue", "quit"):
            stepper.continue_()
            return answer
        else:
            raise ValueError(f"unknown command {command!r}: {COMMANDS}")
        if command in ("next", "event", "until", "step") and stepper.recording_done:
            answer["note"] = "the recording's moves are all made: `continue` lets the run finish"
        answer["state"] = stepper.state()
    except (ValueError, IndexError, errors.OpError) as exc:
        answer["error"] = exc.message if isinstance(exc, errors.OpError) else str(exc)
    return answer


def _iteration_args(args: list[str]) -> tuple[int, str | None]:
    """``N`` or ``N of LOOP`` (after ``until iteration``) as ``(N, LOOP or None)``."""
    if len(args) == 1 or (len(args) == 3 and args[1] == "of"):
        try:
            return int(args[0]), args[2] if len(args) == 3 else None
        except ValueError:
            pass
    raise ValueError(
        f"until iteration takes N or N of LOOP (until iteration 3 of while), got {args}"
    )


def _one(command: str, args: list[str]) -> str:
    if len(args) != 1:
        raise ValueError(f"{command} takes one argument, got {len(args)}")
    return args[0]
