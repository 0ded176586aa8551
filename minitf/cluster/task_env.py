"""What a task process takes from its environment: its scheduler and its straggler delays.

A TF1 script builds its own ``tf.train.Server(cluster, job_name=...,
task_index=...)``; the commands that start it say how that task should run
through environment variables, read here when the server is made:

- ``MINITF_STEPPER`` (``minitf step``): every step waits for the stepper's
  moves, running free until one of the ``;``-separated patterns of
  ``MINITF_STEPPER_BREAK`` when there are some (a `HeldScheduler`);
- ``MINITF_RECORD`` (``LocalCluster(record=...)``): the steps run free but
  every move is logged, and written to that file when the process exits;
- ``MINITF_STRAGGLERS`` (``minitf launch``, ``minitf demo --straggler``):
  a worker's per-step delays (`minitf.cluster.delays.for_task`).

The runtime reads none of these: `install` gives
`minitf.runtime.distributed.task_defaults.set_task_defaults` the function that does, and
``import minitf`` calls it.
"""

from __future__ import annotations

import atexit
import faulthandler
import json
import os
import signal

from minitf.cluster import delays
from minitf.runtime.core import config
from minitf.runtime.core.held_scheduler import HeldScheduler
from minitf.runtime.core.scheduler import Scheduler
from minitf.runtime.distributed import task_defaults
from minitf.runtime.distributed.launcher import RECORD_ENV, STACKS_ENV

STEPPER_ENV = "MINITF_STEPPER"
"""Set by `minitf step`: servers hold every step for the stepper's moves."""
BREAK_ENV = "MINITF_STEPPER_BREAK"
"""Set by `minitf step --break`: ';'-separated patterns; steps run free until one."""


def scheduler_for(job: str, index: int) -> Scheduler | None:
    """The scheduler ``MINITF_STEPPER`` or ``MINITF_RECORD`` asks for, for task ``job:index``.

    Args:
        job: The task's job.
        index: The task's index.
    """
    task_name = f"/job:{job}/replica:0/task:{index}"
    if os.environ.get(STEPPER_ENV):
        # Started by `minitf step`: every step waits for the stepper's moves,
        # free-running until a breakpoint when there are some.
        breakpoints = [b for b in os.environ.get(BREAK_ENV, "").split(";") if b]
        scheduler = HeldScheduler(held=not breakpoints, task=task_name)
        scheduler.set_breakpoints(breakpoints)
        return scheduler
    if os.environ.get(RECORD_ENV):
        # Started by LocalCluster(record=...): free-running, every move logged.
        scheduler = HeldScheduler(held=False, task=task_name)
        atexit.register(_write_moves, os.environ[RECORD_ENV], scheduler)
        return scheduler
    return None


def _write_moves(path: str, scheduler: HeldScheduler) -> None:
    """Writes a task's logged moves as JSON (at exit, for a recording)."""
    with open(path, "w") as f:
        json.dump([list(move) for move in scheduler.log], f)


def install() -> None:
    """Makes the servers of this process take their defaults from the environment.

    Under ``minitf step`` no wall-clock deadline applies in the process
    (`minitf.runtime.core.config.hold_the_clock`): a class may look at a
    breakpoint for as long as it likes.
    """
    task_defaults.set_task_defaults(scheduler=scheduler_for, straggler=delays.for_task)
    if os.environ.get(STEPPER_ENV):
        config.hold_the_clock()
    if os.environ.get(STACKS_ENV):
        # A task that a launcher started says, on SIGUSR2, where each of its
        # threads is (`LocalCluster.dump_stacks`): what a hung run waits on.
        faulthandler.register(signal.SIGUSR2, all_threads=True)
