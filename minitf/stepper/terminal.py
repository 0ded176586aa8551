"""``minitf step``: a TF1 script, stepped from the terminal (or a browser) one op at a time.

With ``--ps``/``--workers`` the command starts the script as a local cluster
(as ``minitf launch`` does; with ``--simulate``, as a simulated cluster in
this process, `minitf.stepper.simulated`) with every task held
(`minitf.runtime.core.held_scheduler.HeldScheduler`); without them it runs the script
in this process and holds the script's own local sessions. Either way the
tasks run free until a ``--break`` pattern when there is one. Then it reads
commands — typed at a prompt, or one per line on stdin when it is not a
terminal — and answers each with readable lines, or one JSON line with
``--json``; with ``--web`` a page in the browser takes the commands instead
(`minitf.stepper.web`).

===========================  ==================================================
``next [TASK]``              one move (on TASK: ``worker:1``, ``ps:0``)
``event [TASK]``             moves until a dataflow event: a send or receive,
                             an apply_grad or take_grad, an enqueue or
                             dequeue, an assign or update
``until PATTERN``            moves until an op matching PATTERN is about to move
``until iteration N [of L]``  moves until iteration N of a loop (of loop L,
                             ``while``) starts: its first move is next
``until-blocked TASK``       moves on TASK until nothing there can move
``step N``                   moves until the global step is N
``back [N]``                 undo the last N moves (1): the run is replayed
``state``                    every task's steps and resources
``continue``                 release every task (the script runs to its end)
``quit``                     release every task and stop reading commands
===========================  ==================================================
"""

from __future__ import annotations

import contextlib
import json
import runpy
import sys
import threading
import traceback
from collections.abc import Iterable
from typing import TextIO

from minitf.runtime.core import config, held_scheduler
from minitf.stepper import lessons
from minitf.stepper.commands import execute
from minitf.stepper.controller import Stepper
from minitf.stepper.describe import describe_brief, describe_event, describe_state
from minitf.stepper.simulated import SimulatedStepper

PROMPT = "(minitf step) "


def run(
    script: str,
    ps: int | None,
    workers: int | None,
    script_args: list[str],
    breaks: list[str],
    json_mode: bool,
    commands: Iterable[str] | None = None,
    out: TextIO | None = None,
    web: bool = False,
    replay: str | None = None,
    simulate: bool = False,
    seed: int = 0,
    lesson: str | None = None,
    processes: bool = False,
    verbose: bool = False,
) -> int:
    """Starts the script held, answers commands until they end, lets the script finish.

    Args:
        script: The TF1 script.
        ps: How many ps tasks the local cluster starts (None: 1). When both
            ``ps`` and ``workers`` are None, no cluster is started: the script
            runs here and its local sessions are stepped.
        workers: How many worker tasks it starts (None: 2).
        script_args: The script's own arguments.
        breaks: Patterns: run free until an op matching one is about to run.
        json_mode: Answer each command with one JSON line.
        commands: Where commands come from (default: stdin, with a prompt on a terminal).
        out: Where answers go (default: stdout); the script's output goes to stderr.
        web: Serve the stepper's page instead of reading commands (`minitf.stepper.web`).
        replay: A recording to step along instead of ``script`` (`Stepper.replay`).
        simulate: Run the cluster simulated in this process (`SimulatedStepper`).
        seed: The simulated cluster's seed.
        lesson: A lesson (a file, or a built-in one's name) that gives the
            script, its arguments, the cluster, the seed and the breakpoint
            (`minitf.stepper.lessons`); the other arguments are then ignored.
        processes: Run the lesson on real processes along its simulated run.
        verbose: After each move, print the whole state, not one line.

    Returns:
        The script's exit code (0 when every worker finished).
    """
    out = out or sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        if lesson is not None:
            chosen = lessons.load(lesson)
            if not json_mode:
                out.write(f"{chosen.title}\n{chosen.notes}\n".replace("\n\n", "\n"))
            stepper = lessons.start(chosen, processes=processes, output=sys.stderr)
            script_run = _ScriptCluster(None, None, None, None, stepper)
            script = chosen.title
        elif replay is not None:
            script_run = _ScriptCluster.replaying(replay)
            script = replay
        elif ps is None and workers is None:
            script_run = _ScriptHere(script, script_args, breaks)
        else:
            tasks = {"ps": 1 if ps is None else ps, "worker": 2 if workers is None else workers}
            simulated = None
            if simulate:
                simulated = SimulatedStepper(
                    script, tasks, script_args, breaks, seed=seed, output=sys.stderr
                )
            script_run = _ScriptCluster(script, tasks, script_args, breaks, simulated)
        try:
            stepper = script_run.stepper
            if web:
                from minitf.stepper import web as web_lib

                web_lib.serve(stepper, script_run.exit_code, title=script, out=out)
            else:
                _answer(stepper, commands, json_mode, out, verbose)
            stepper.continue_()
        finally:
            script_run.stepper.close()
        return script_run.wait()


class _ScriptCluster:
    """The script as a local cluster of held task processes."""

    def __init__(self, script, tasks, script_args, breaks, stepper=None):
        self.stepper = stepper or Stepper.launch(
            script, tasks, script_args, breaks, output=sys.stderr
        )

    @classmethod
    def replaying(cls, recording: str):
        """A recorded run started again, held at its start (`Stepper.replay`)."""
        return cls(None, None, None, None, Stepper.replay(recording, output=sys.stderr))

    def exit_code(self) -> int | None:
        """The script's exit code once every worker ended, else None."""
        if isinstance(self.stepper, SimulatedStepper):
            return self.stepper.exit_code()
        codes = [c for (job, _), c in self.stepper.cluster.poll().items() if job != "ps"]
        if any(c is None for c in codes):
            return None
        return next((c for c in codes if c), 0)

    def wait(self) -> int:
        return self.stepper.wait()


class _ScriptHere:
    """The script run in this process: its local sessions are the stepper's tasks."""

    def __init__(self, script, script_args, breaks):
        config.hold_the_clock()  # a held session has no wall-clock deadline
        sessions = held_scheduler.hold_local_sessions(breaks)
        self._code: int | None = None
        self._thread = threading.Thread(
            target=self._main, args=(script, script_args), name="minitf step: script", daemon=True
        )
        self._thread.start()
        self.stepper = Stepper.for_local_sessions(sessions)
        self.stepper.ended_when = lambda: not self._thread.is_alive()
        if breaks:
            self.stepper.wait_for_break()

    def _main(self, script: str, script_args: list[str]) -> None:
        argv, sys.argv = sys.argv, [script, *script_args]
        try:
            runpy.run_path(script, run_name="__main__")
            self._code = 0
        except SystemExit as exc:
            self._code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BaseException:  # the script's own error: shown as a script run shows it
            traceback.print_exc()
            self._code = 1
        finally:
            sys.argv = argv

    def exit_code(self) -> int | None:
        return None if self._thread.is_alive() else self._code

    def wait(self) -> int:
        self._thread.join()
        held_scheduler.release_local_sessions()
        config.release_the_clock()
        return self._code if self._code is not None else 1


def _answer(stepper: Stepper, commands, json_mode: bool, out, verbose: bool = False) -> None:
    for line in _lines(commands):
        answer = execute(stepper, line)
        _print(answer, json_mode, out, verbose)
        if answer.get("command") in ("quit", "continue"):
            return


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


def _print(answer: dict, json_mode: bool, out, verbose: bool = False) -> None:
    if json_mode:
        out.write(json.dumps(answer) + "\n")
        out.flush()
        return
    if "error" in answer:
        out.write(f"error: {answer['error']}\n")
    for event in answer.get("events", []):
        out.write(describe_event(event) + "\n")
    if "note" in answer:
        out.write(f"{answer['note']}\n")
    if "state" in answer:
        # After a move, one line; the whole state when asked for (`state`, --verbose).
        full = verbose or answer.get("command") == "state"
        out.write((describe_state if full else describe_brief)(answer["state"]))
    out.flush()
