"""Lessons: a stepped run that starts the same way every time.

A lesson fixes what a class sees: the script, its arguments, the cluster,
the seed and the breakpoint. It is a small JSON file, or the name of one
that comes with minitf (`BUILT_IN`, in ``minitf/stepper/lessons/``)::

    {
      "format": "minitf-lesson/1",
      "title": "One synchronous global step",
      "script": "minitf.examples.sync_mlp",
      "args": ["--steps", "20", "--optimizer", "sgd", "--num_tokens", "0"],
      "tasks": {"ps": 1, "worker": 2},
      "seed": 0,
      "break": ["ResourceAccumulatorApplyGradient"]
    }

``script`` is a module (``minitf.examples.sync_mlp``) or a path, relative
to the lesson's file. `start` runs a lesson on a simulated cluster
(`minitf.stepper.simulated.SimulatedStepper`): deterministic, ``back`` in a
moment, no wall clock. With ``processes=True`` it runs on real processes
instead, along the simulated run: the tasks make the simulation's moves up
to the breakpoint, and from there every move is the simulation's next, in
its order — the same lesson, move for move, on a real cluster.
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass, field
from typing import TextIO

from minitf.stepper.controller import Stepper
from minitf.stepper.simulated import SimulatedStepper

FORMAT = "minitf-lesson/1"
LESSONS_DIR = os.path.join(os.path.dirname(__file__), "lessons")
_KEYS = {"format", "title", "script", "args", "tasks", "seed", "break", "notes"}


def built_in() -> list[str]:
    """The names of the lessons that come with minitf."""
    return sorted(n[: -len(".json")] for n in os.listdir(LESSONS_DIR) if n.endswith(".json"))


@dataclass
class Lesson:
    """What a stepped run starts from.

    Attributes:
        title: One line for the page and the terminal.
        script: The script's path.
        args: Its own arguments.
        tasks: ``{"ps": 1, "worker": 2}``.
        seed: The simulated cluster's seed.
        breaks: Run free until an op matching one of these is about to move.
        notes: What the class sees at the breakpoint, for the teacher.
    """

    title: str
    script: str
    args: list[str] = field(default_factory=list)
    tasks: dict[str, int] = field(default_factory=lambda: {"ps": 1, "worker": 2})
    seed: int = 0
    breaks: list[str] = field(default_factory=list)
    notes: str = ""


def load(name_or_path: str) -> Lesson:
    """A lesson from its file, or by the name of a built-in one (``sync_replicas``).

    Args:
        name_or_path: A path to a lesson file, or a built-in lesson's name.

    Raises:
        ValueError: naming what is wrong: no such lesson, not a lesson file,
            a field of the wrong kind, a script that is not there.
    """
    path = name_or_path
    if not os.path.isfile(path):
        path = os.path.join(LESSONS_DIR, f"{name_or_path}.json")
        if not os.path.isfile(path):
            raise ValueError(
                f"no lesson {name_or_path!r}: give a lesson file's path, or one of "
                f"{', '.join(built_in())}"
            )
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a lesson file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a lesson file (its format must be {FORMAT!r})")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ValueError(f"{path}: unknown field(s) {unknown}; a lesson has {sorted(_KEYS)}")
    lesson = Lesson(
        title=str(data.get("title", os.path.basename(path))),
        script=_script_path(data.get("script"), os.path.dirname(os.path.abspath(path)), path),
        args=_strings(data.get("args", []), "args", path),
        tasks=_tasks(data.get("tasks", {"ps": 1, "worker": 2}), path),
        seed=_seed(data.get("seed", 0), path),
        breaks=_strings(data.get("break", []), "break", path),
        notes=str(data.get("notes", "")),
    )
    return lesson


def start(lesson: Lesson, processes: bool = False, output: TextIO | None = None) -> Stepper:
    """Starts a lesson, held at its breakpoint; returns its stepper.

    Args:
        lesson: The `Lesson`.
        processes: Run on real processes (a `LocalCluster`) along the
            simulated run, instead of on the simulated cluster.
        output: Where the script's output goes (default: stdout).
    """
    simulated = SimulatedStepper(
        lesson.script, lesson.tasks, lesson.args, lesson.breaks, seed=lesson.seed, output=output
    )
    if not processes:
        return simulated
    # The simulated run, to the breakpoint and then to its end: the moves the
    # processes make, the same every time.
    before = simulated.schedule()
    simulated.continue_()
    simulated.wait()
    moves, order = simulated.recording()
    stepper = Stepper.launch(
        lesson.script, lesson.tasks, lesson.args, output=output, schedule=before
    )
    stepper.follow(moves, order)
    return stepper


def _script_path(script, here: str, path: str) -> str:
    if not isinstance(script, str) or not script:
        raise ValueError(f"{path}: 'script' must name the script (a module or a path)")
    candidate = script if os.path.isabs(script) else os.path.join(here, script)
    if os.path.isfile(candidate):
        return candidate
    try:
        spec = importlib.util.find_spec(script)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise ValueError(f"{path}: no script {script!r} (neither a file beside it nor a module)")
    return spec.origin


def _strings(value, name: str, path: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{path}: {name!r} must be a list of strings, got {value!r}")
    return list(value)


def _tasks(value, path: str) -> dict[str, int]:
    ok = (
        isinstance(value, dict)
        and value.get("worker", 0) >= 1
        and all(isinstance(n, int) and n >= 0 for n in value.values())
    )
    if not ok:
        raise ValueError(
            f'{path}: \'tasks\' must be like {{"ps": 1, "worker": 2}} (at least one worker), '
            f"got {value!r}"
        )
    return {job: n for job, n in value.items() if n}


def _seed(value, path: str) -> int:
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{path}: 'seed' must be a whole number >= 0, got {value!r}")
    return value
