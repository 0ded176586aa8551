"""Steps that wait: what each waiting op waits for, a step's deadline, the log of a long wait.

`waits_of` says what a waiting op waits for — a queue's size, an
accumulator's count, a tensor from another task — and `describe_wait` says
it in words a student reads from the back row. The executor's `Watch`
thread fails a started step when its deadline passes and logs the steps
that have waited long (``MINITF_WAIT_LOG_SECS``).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import os
import threading

from minitf.framework import errors
from minitf.runtime.core import config
from minitf.runtime.core.frames import iteration_words, rendezvous_key

logger = logging.getLogger("minitf")


def waits_of(step, vals: list, frames: tuple = (), frame_iter: str = "") -> dict:
    """What the waiting op of ``step`` waits for (see `StepExecution.waits_for`).

    Args:
        step: The op's `minitf.runtime.core.plan.PlanStep`.
        vals: The step's value slots (its inputs: a queue, an accumulator).
        frames: In a loop, the frames and iterations the op waits in,
            outermost first (`minitf.runtime.core.frames.Frames.where`).
        frame_iter: In a loop, that iteration's `minitf.runtime.core.frames.Iteration.key`.
    """
    op = step.op
    if op.type == "_Recv":
        return _tensor_waits(op, frames, frame_iter)
    resource = vals[step.in_slots[0]] if step.in_slots else None
    state_locked = getattr(resource, "state_locked", None)
    if state_locked is None:
        return {"kind": "completion"}
    with resource.lock:
        state = dict(state_locked())
    if "Dequeue" in op.type:
        state["required"] = int(vals[step.in_slots[1]]) if len(step.in_slots) > 1 else 1
    elif "TakeGradient" in op.type:
        state["required"] = int(vals[step.in_slots[1]])
    return state


def _tensor_waits(op, frames: tuple, frame_iter: str) -> dict:
    """What a ``_Recv`` waits for: the key it waits on (in a loop: its iteration's), the sender."""
    key = op.get_attr("tensor_name")
    waits = {
        "kind": "tensor",
        "key": rendezvous_key(key, frame_iter),
        "tensor": key.rsplit(";", 1)[-1],
        "from": op.get_attr("send_task"),
    }
    if frames:  # the same _Recv waits once per iteration: this is one of them
        waits["frames"] = [list(f) for f in frames]
    return waits


def describe_wait(waits: dict) -> str:
    """What a waiting op waits for, in words (from `StepExecution.waits_for`).

    Args:
        waits: What `StepExecution.waits_for` returned.
    """
    kind = waits.get("kind")
    if kind == "queue":
        needs = f"needs {waits.get('required', 1)}"
        if waits.get("min_after_dequeue") and not waits.get("closed"):
            # An open RandomShuffleQueue keeps min_after_dequeue elements back.
            needs += f" more than min_after_dequeue {waits['min_after_dequeue']}"
        return f"queue {waits['name']} holds {waits['size']}, {needs}"
    if kind == "accumulator":
        return (
            f"accumulator {waits['name']} has {waits['count']} of {waits.get('required', '?')} "
            f"gradients for global step {waits['global_step']}"
        )
    if kind == "tensor":
        where = iteration_words(waits.get("frames") or [])
        return f"a tensor from {waits['from']} ({waits['tensor']})" + (
            f" in {where}" if where else ""
        )
    return "its completion"


class Watch:
    """The thread that watches an executor's started steps while they wait.

    A step is added when it first waits and removed when it ends. The
    thread wakes at a step's deadline, and every ``interval`` seconds to log
    the steps that have waited that long: never once per step, which would
    cost a thread switch per step.

    Args:
        clock: Where time is read.
        interval: Seconds between two logs of a waiting step (0: never).
    """

    def __init__(self, clock, interval: float):
        self._clock = clock
        self._interval = interval
        self._lock = threading.Condition(threading.Lock())
        self._runs: dict = {}
        self._deadlines: list[tuple] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, run) -> None:
        """Watches ``run`` until `remove`."""
        deadline = run.ctx.deadline
        with self._lock:
            self._runs[run] = None
            if deadline is not None:
                heapq.heappush(self._deadlines, (deadline, next(self._order), run))
                if self._deadlines[0][2] is run:
                    self._lock.notify()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="minitf-watch", daemon=True
                )
                self._thread.start()

    def remove(self, run) -> None:
        """Stops watching ``run`` (it has ended)."""
        with self._lock:
            self._runs.pop(run, None)

    def _serve(self) -> None:
        clock, interval, deadlines = self._clock, self._interval, self._deadlines
        next_log = clock.now() + interval if interval else None
        while True:
            with self._lock:
                while True:
                    now = clock.now()
                    first = deadlines[0][0] if deadlines else None
                    when = min(t for t in (first, next_log, math.inf) if t is not None)
                    if when <= now:
                        break
                    self._lock.wait(None if when == math.inf else when - now)
                expired = []
                while deadlines and deadlines[0][0] <= now:
                    expired.append(heapq.heappop(deadlines)[2])
                logged = []
                if next_log is not None and next_log <= now:
                    logged = list(self._runs)
                    next_log = now + interval
            for run in expired:
                again = run.expire(now)
                if again is not None:
                    with self._lock:
                        heapq.heappush(deadlines, (again, next(self._order), run))
            for run in logged:
                run.log(now)


WAIT_LOG_ENV = "MINITF_WAIT_LOG_SECS"
"""Seconds between two log lines about a step that waits (default 5; 0: never)."""


def wait_log_secs() -> float:
    """``MINITF_WAIT_LOG_SECS``, or 5; 0 (no log) where a stepper holds the steps."""
    if not config.deadlines_apply():
        return 0.0
    return float(os.environ.get(WAIT_LOG_ENV, "5"))


def _waits(execution, limit: int = 5) -> str:
    """Each op still waiting (at most ``limit``) and what for, in words."""
    waiting = sorted(execution.waiting, key=lambda i: execution.steps[i].op.name)
    described = []
    for i in waiting[:limit]:
        try:
            what = describe_wait(execution.waits_for(i))
        except Exception:  # noqa: BLE001 - saying what waits must not fail the step
            what = "its completion"
        described.append(f"{execution.steps[i].op.name} waits for {what}")
    more = f"; and {len(waiting) - limit} more" if len(waiting) > limit else ""
    return "; ".join(described) + more


def log_waiting(task: str, execution, waited: float) -> None:
    """A step that waits says so: which ops, on which task, for what, for how long."""
    logger.warning(
        "%s: step %x has waited %.1f s: %s",
        task or "this process",
        execution.ctx.step_id,
        waited,
        _waits(execution),
    )


def deadline_error(execution) -> errors.DeadlineExceededError:
    """TF's text, then each op still waiting and what for (the run's deadline passed)."""
    waiting = sorted(execution.waiting, key=lambda i: execution.steps[i].op.name)
    first = execution.steps[waiting[0]].op if waiting else None
    return errors.DeadlineExceededError(
        first.node_def if first is not None else None,
        first,
        "Timed out waiting for notification (the run's deadline passed): " + _waits(execution),
    )
