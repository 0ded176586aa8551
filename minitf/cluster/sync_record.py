"""Who contributed to which update: the record of a synchronous (SyncReplicas) run.

Every accumulator remembers, in order, each gradient pushed to it (by which
task, computed at which local step, when the accumulator was at which step,
kept or dropped) and each ``take_grad``. One accumulator is enough to tell the
story of a run, since every worker step pushes to all of them. `SyncRecord`
reads that history from the tasks a session reaches — as often as you like,
fetching only what is new — and turns it into what a teacher asks about:

* ``updates``: one entry per global step: which workers' gradients were
  ``applied``, which came as ``extra`` batches (a worker that contributed
  twice to one update, the K-batch-sync effect), which were ``dropped``
  as stale (computed for this update but pushed after it was taken), and,
  on a simulated cluster whose policy cancels in-flight work, which were
  ``cancelled``;
* ``gradients``: one entry per pushed gradient, with its ``staleness``;
* `dropped_per_worker` / `applied_per_worker`: the run's totals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from minitf.runtime.distributed.partition import parse_task

if TYPE_CHECKING:
    from minitf.runtime.core.session import BaseSession


class SyncRecord:
    """The per-update record of the SyncReplicas run that ``session`` can see.

    Args:
        session: A session on the cluster (any task's target), or a local one.
        accumulator: The shared name of the accumulator to follow (default:
            the first by name on the first task that has one).
    """

    def __init__(self, session: BaseSession, accumulator: str | None = None):
        self._session = session
        self._name = accumulator
        self._task: str | None = None
        self._events = 0
        self.gradients: list[dict] = []
        self.updates: list[dict] = []
        self._pending: list[int] = []  # workers of the accepted pushes since the last take

    def refresh(self) -> SyncRecord:
        """Reads what happened since the last call; returns self."""
        since = {self._task: {self._name: self._events}} if self._task else None
        # Accumulators live with the variables, on the ps tasks (workers may have exited).
        for task, states in sorted(self._session.accumulators(since, job="ps").items()):
            if self._task is not None and task != self._task:
                continue
            for state in sorted(states, key=lambda s: s["name"]):
                if self._task is None and (self._name is None or state["name"] == self._name):
                    self._task, self._name = task, state["name"]
                if (task, state["name"]) == (self._task, self._name):
                    self._read(state["history"])
                    self._events = state["events"]
        return self

    @classmethod
    def of_history(
        cls, task: str, accumulator: str, timed_history: Iterable[tuple[tuple, float, bool]]
    ) -> SyncRecord:
        """The record of an accumulator's history given as ``(event, time, cancelled)``.

        Each gradient and update also gets its ``time`` (what a simulated
        cluster's virtual clock read when it happened). A gradient pushed by
        a computation the cluster cancelled (``cancelled`` true: a policy
        that cancels in-flight work, `minitf.cluster.policies`) is marked
        ``cancelled`` and listed under its update's ``cancelled``, not
        ``dropped``.

        Args:
            task: The accumulator's task.
            accumulator: Its shared name.
            timed_history: Its history as ``(event, time, cancelled)`` triples.
        """
        record = cls(None, accumulator)
        record._task = task
        for event, time, cancelled in timed_history:
            gradients, updates = len(record.gradients), len(record.updates)
            record._read([event], cancelled)
            for entry in record.gradients[gradients:] + record.updates[updates:]:
                entry["time"] = time
        return record

    def _read(self, history: list[tuple], cancelled: bool = False) -> None:
        for event in history:
            if event[0] == "push":
                _, client, local_step, step, accepted = event
                self._push(worker_index(client), local_step, step, accepted, cancelled)
            elif event[0] == "take":
                self._take(event[1], event[2])

    def _push(
        self, worker: int, local_step: int, step: int, accepted: bool, cancelled: bool
    ) -> None:
        self.gradients.append(
            {
                "worker": worker,
                "local_step": local_step,
                "global_step": step,
                "staleness": step - local_step,
                "dropped": not accepted,
                "cancelled": cancelled,
            }
        )
        if accepted:
            self._pending.append(worker)
        else:
            # Computed for update local_step + 1, which had been taken already.
            update = self._update(local_step + 1)
            if update is not None:
                update["cancelled" if cancelled else "dropped"].append(worker)

    def _take(self, new_step: int, count: int) -> None:
        applied, self._pending = self._pending[-count:], []
        repeats = Counter(applied)
        self.updates.append(
            {
                "global_step": new_step,
                "applied": applied,
                "extra": sorted(w for w, n in repeats.items() for _ in range(n - 1)),
                "dropped": [],
                "cancelled": [],
            }
        )

    def _update(self, global_step: int) -> dict | None:
        for update in reversed(self.updates):
            if update["global_step"] == global_step:
                return update
            if update["global_step"] < global_step:
                return None
        return None

    def dropped_per_worker(self) -> dict[int, int]:
        """How many of each worker's gradients were dropped as stale (cancelled ones apart)."""
        dropped = (g["worker"] for g in self.gradients if g["dropped"] and not g["cancelled"])
        return dict(sorted(Counter(dropped).items()))

    def applied_per_worker(self) -> dict[int, int]:
        """How many of each worker's gradients went into an update."""
        return dict(sorted(Counter(w for u in self.updates for w in u["applied"]).items()))

    def as_dict(self) -> dict:
        """The record as JSON-ready data."""
        return {
            "accumulator": self._name,
            "task": self._task,
            "updates": self.updates,
            "gradients": self.gradients,
        }


def worker_index(task: str) -> int:
    """The task index of a task name (``/job:worker/replica:0/task:2`` → 2).

    Args:
        task: A task name.
    """
    return parse_task(task)[1]


def describe(update: dict) -> str:
    """One line for one update: who was applied, who came twice, who was dropped.

    Args:
        update: One of the record's ``updates``.
    """

    def names(workers):
        return ", ".join(f"w{w}" for w in workers) or "-"

    text = f"global step {update['global_step']:5d}: applied {names(update['applied'])}"
    if update["extra"]:
        text += f" (extra batches: {names(update['extra'])})"
    if update["dropped"]:
        text += f"; dropped as stale: {names(update['dropped'])}"
    return text
