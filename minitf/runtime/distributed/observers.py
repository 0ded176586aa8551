"""What a master answers besides running steps: the cluster's tasks, accumulators and traces.

`minitf.runtime.distributed.master.Master` has these methods; they are for
observers (a `Tracer`, a stepper's page, `SyncRecord`), not for the step.
"""

from __future__ import annotations

import logging

from minitf.framework import errors
from minitf.runtime.core import step_stats
from minitf.runtime.distributed import partition as partition_lib

logger = logging.getLogger("minitf")


class Observers:
    """The master's calls for observers, through its transport (``self._transport``)."""

    _transport: object
    _clock_offsets: dict[str, int]

    def devices(self) -> list[str]:
        """Every device of the cluster (each task's one CPU)."""
        return [partition_lib.full_device_of(task) for task in self.tasks()]

    def clock_offset(self, task: str) -> int:
        """Microseconds to add to ``task``'s clock to read it on this process's clock.

        Measured once per task, NTP-style: of three round trips, the one with
        the shortest round trip time gives ``(send + receive) / 2 - task's time``.
        On one machine it is about zero; across machines it lines traces up.

        Args:
            task: The task's name.
        """
        offset = self._clock_offsets.get(task)
        if offset is None:
            best = None
            for _ in range(3):
                sent = step_stats.wall_micros()
                remote = self._transport.request(task, "clock", timeout=10.0)
                received = step_stats.wall_micros()
                if best is None or received - sent < best[0]:
                    best = (received - sent, (sent + received) // 2 - remote)
            offset = self._clock_offsets[task] = best[1]
        return offset

    def tasks(self) -> list[str]:
        """Every task of the cluster (``/job:ps/replica:0/task:0``, ...)."""
        return [
            f"/job:{job}/replica:0/task:{i}"
            for job in self.cluster.jobs
            for i in self.cluster.task_indices(job)
        ]

    def accumulators(self, since: dict | None = None, job: str | None = None) -> dict:
        """Every task's accumulators (only ``job``'s tasks if given), by task name.

        Args:
            since: ``{task: {shared name: event number}}``: only newer history.
            job: Only the tasks of this job, or None for all.
        """
        since = since or {}
        return {
            task: self._transport.request(task, "accumulators", since.get(task), timeout=10.0)
            for task in self.tasks()
            if job is None or task.startswith(f"/job:{job}/")
        }

    def start_recording(self) -> dict[str, int]:
        """Has every task record every step it runs, whoever runs it; returns the recording ids.

        Each task's clock offset is measured now, while every task is there.
        """
        recordings = {}
        for task in self.tasks():
            self.clock_offset(task)
            recordings[task] = self._transport.request(task, "trace_start", timeout=10.0)
        return recordings

    def stop_recording(self, recordings: dict[str, int]) -> tuple[dict, int]:
        """Ends the recordings; returns their step stats (this process's clock) and drops.

        A task that has gone since (a worker that finished and exited) took its
        recording with it: its ops are left out, with a warning, and the other
        tasks' are returned.

        Args:
            recordings: What `start_recording` returned: ``{task: recording id}``.
        """
        per_task, dropped, gone = {}, 0, []
        for task, rid in recordings.items():
            try:
                nodes, lost = self._transport.request(
                    task, "trace_stop", rid, timeout=30.0, connect_timeout=2.0
                )
            except errors.UnavailableError:
                gone.append(task)
                continue
            per_task[partition_lib.full_device_of(task)] = step_stats.shift(
                nodes, self.clock_offset(task)
            )
            dropped += lost
        if gone:
            logger.warning(
                "The recordings of %s are lost: the tasks are gone. A task waits at exit "
                "for a Tracer that records it (RECORDING_PATIENCE_SECS); stop the Tracer "
                "sooner, or before killing its tasks.",
                ", ".join(gone),
            )
        return step_stats.build(per_task), dropped
