"""A server's role and defaults: which task it is, and what it gets when not told.

`resolve_role` reads a task's cluster, job and index from `Server`'s
arguments as TF does; `set_task_defaults` installs how a server made
without them gets a scheduler and a straggler (what ``minitf step`` and
``minitf launch`` want of a TF1 script's own ``tf.train.Server``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.runtime.core.scheduler import Scheduler
from minitf.runtime.distributed.cluster_spec import ClusterSpec


class TaskDefaults:
    """How this process's servers get a scheduler and a straggler they were not given."""

    scheduler: Callable[[str, int], Scheduler | None] | None = None
    straggler: Callable[[str, int], Any] | None = None


def set_task_defaults(
    scheduler: Callable[[str, int], Scheduler | None] | None = None,
    straggler: Callable[[str, int], Any] | None = None,
) -> None:
    """Installs how a `Server` made in this process without them gets a scheduler and a straggler.

    A TF1 script makes its own ``tf.train.Server``; what the command that
    started it wants (a stepper's held scheduler, a straggler's delays)
    reaches that server through these functions. The runtime reads no
    environment for them: ``import minitf`` installs
    `minitf.cluster.task_env`'s, which read what ``minitf step``,
    ``minitf launch`` and `LocalCluster` set.

    Args:
        scheduler: ``scheduler(job, task_index)`` → a
            `minitf.runtime.core.scheduler.Scheduler`, or None for the free-running one.
        straggler: ``straggler(job, task_index)`` → the task's straggler (an
            object whose ``next_delay()`` gives a step's delay in seconds, as a
            `minitf.cluster.delays.Straggler`), or None.
    """
    TaskDefaults.scheduler = scheduler
    TaskDefaults.straggler = straggler


def resolve_role(
    server_or_cluster_def: ClusterSpec | dict,
    job_name: str | None,
    task_index: int | None,
    protocol: str | None = None,
) -> tuple[ClusterSpec, str, int]:
    """``(ClusterSpec, job, task index)`` of a server, from `Server`'s arguments.

    Args:
        server_or_cluster_def: As for `Server`.
        job_name: As for `Server`.
        task_index: As for `Server`.
        protocol: As for `Server`.

    Raises:
        ValueError: if the job or task is missing or ambiguous, or the protocol unknown.
    """
    if isinstance(server_or_cluster_def, dict) and "cluster" in server_or_cluster_def:
        job_name = job_name or server_or_cluster_def.get("job_name")
        if task_index is None:
            task_index = server_or_cluster_def.get("task_index")
        server_or_cluster_def = server_or_cluster_def["cluster"]
    cluster = ClusterSpec(server_or_cluster_def)
    if job_name is None:
        if len(cluster.jobs) != 1:
            raise ValueError("Must specify an explicit `job_name`.")
        job_name = cluster.jobs[0]
    if task_index is None:
        indices = cluster.task_indices(job_name)
        if len(indices) != 1:
            raise ValueError("Must specify an explicit `task_index`.")
        task_index = indices[0]
    if protocol not in (None, "grpc", "minitf"):
        raise ValueError(f"Unsupported protocol {protocol!r}: minitf servers speak 'grpc'.")
    return cluster, job_name, int(task_index)
