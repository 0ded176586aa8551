"""Threads inside one op: the BLAS threads behind a matrix product.

TF runs the inside of an op such as ``MatMul`` on a pool of
``ConfigProto.intra_op_parallelism_threads`` threads, 0 meaning "the system
picks". A minitf kernel is numpy, and numpy hands a matrix product to its
BLAS (OpenBLAS in numpy's wheels), which keeps a pool of its own, one thread
per core, and whose idle threads spin a while before they sleep. One process
on a machine gains from that pool. Several task processes on one machine,
the way a class runs a cluster on a laptop, do not: each process's BLAS
threads spin for cores the other tasks need, and on two cores a 1 ps + 2
workers cluster trained six to thirteen times slower than with one BLAS
thread per task (``docs/distributed.md`` has the measurement).

`configure` sets the process's BLAS threads, through ``threadpoolctl``:

* to ``intra_op_parallelism_threads`` when a `ConfigProto` gives a positive
  value (the pool is the process's, so the last value set holds);
* when a ``tf.train.Server`` starts with the default 0, and several tasks of
  its cluster are on this machine, to this machine's cores shared among
  them: ``max(1, cores // tasks)``, the ps tasks counted;
* otherwise not at all: one task on a machine, or a plain local session,
  keeps numpy's default, as does a process started with one of the BLAS
  libraries' own variables (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``,
  ...), which say what the user chose.
"""

from __future__ import annotations

import logging
import os
import socket

from minitf.runtime.speedups.shm import is_local_address

logger = logging.getLogger("minitf")

USER_ENV = (
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
"""Variables by which a user sets the BLAS threads; `configure` leaves those alone."""

_LOCAL_NAMES = {"localhost", ""}


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _host(address: str) -> str:
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return host.strip("[]").lower()


def _this_machine(host: str) -> bool:
    # An address is this machine's as the wire decides it for shared memory.
    return host in _LOCAL_NAMES or host == socket.gethostname().lower() or is_local_address(host)


def tasks_on_this_host(cluster, job: str, task: int) -> int:
    """How many tasks of ``cluster`` share the machine of ``job``'s task ``task``.

    A task is on the same machine when its host is the same name, or when
    both name this machine (``localhost``, its host name, or an address it
    has: loopback or one it can bind).

    Args:
        cluster: The `ClusterSpec`.
        job: This task's job.
        task: This task's index.

    Returns:
        The number of tasks, this one included.
    """
    mine = _host(cluster.task_address(job, task))
    here = _this_machine(mine)
    hosts = [
        _host(cluster.task_address(name, index))
        for name in cluster.jobs
        for index in cluster.task_indices(name)
    ]
    return sum(1 for host in hosts if host == mine or (here and _this_machine(host)))


def _chosen(asked: int, cluster, job, task) -> tuple[int | None, str]:
    """The number of BLAS threads to set, or None, and why."""
    if asked:
        return asked, "intra_op_parallelism_threads"
    if cluster is None:
        return None, "no cluster"
    named = [name for name in USER_ENV if name in os.environ]
    if named:
        return None, f"{named[0]} is set"
    tasks = tasks_on_this_host(cluster, job, task)
    if tasks < 2:
        return None, "the only task on this machine"
    n = cores()
    return max(1, n // tasks), f"{tasks} tasks share this machine's {n} cores"


def configure(config=None, cluster=None, job: str | None = None, task: int = 0) -> int | None:
    """Sets this process's BLAS threads for a session's or a task's config.

    Args:
        config: The `ConfigProto` of the session or server, or None.
        cluster: For a ``tf.train.Server``: its `ClusterSpec` (None for a session).
        job: The server's job.
        task: The server's task index.

    Returns:
        The number of threads set, or None where nothing was changed (see
        the module's docstring), or where numpy's BLAS cannot be reached.

    Raises:
        TypeError: if ``intra_op_parallelism_threads`` is not an int.
        ValueError: if it is negative (TF's thread pool aborts the process).
    """
    asked = getattr(config, "intra_op_parallelism_threads", 0)
    if isinstance(asked, bool) or not isinstance(asked, int):
        raise TypeError(
            "ConfigProto.intra_op_parallelism_threads must be an int (0: minitf picks), "
            f"not {type(asked).__name__} {asked!r}"
        )
    if asked < 0:
        raise ValueError(
            "ConfigProto.intra_op_parallelism_threads must be 0 (minitf picks) or a "
            f"number of threads, not {asked}"
        )
    threads, why = _chosen(asked, cluster, job, task)
    if threads is None:
        logger.debug("BLAS threads left as they are: %s", why)
        return None
    import threadpoolctl

    limited = threadpoolctl.threadpool_limits(limits=threads, user_api="blas")
    if not limited.get_original_num_threads().get("blas"):
        logger.debug("no BLAS library with a thread pool is loaded: nothing to set")
        return None
    logger.info("BLAS threads: %d (%s)", threads, why)
    return threads
