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
  value, for every product (the pool is the process's, so the last value
  set holds);
* otherwise, a plain session and every ``tf.train.Server`` alike keep the
  pool at one thread, and a large product (`minitf.ops.math.blas_threads.LARGE_PRODUCT`
  multiply-adds or more) takes the process's share of the machine for its
  own call: all the cores for a session or a task alone on its machine,
  ``max(1, cores // tasks)`` when several tasks of a cluster share it (the
  ps tasks counted). A small product gains little from a second thread and,
  on a machine busy with other work, loses a great deal: the thread that
  finishes first spins until the other gets a core back: beside two busy
  processes on two cores, the 784-128-10 MLP's step (batch 64) ran at 375
  steps/s with two threads and 1,525 with one;
* not at all when the process was started with one of the BLAS libraries'
  own variables (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ...), which
  say what the user chose.
"""

from __future__ import annotations

import logging
import os
import socket

from minitf.ops.math import blas_threads
from minitf.runtime.core.config import cores
from minitf.runtime.speedups.shm import is_local_address

logger = logging.getLogger("minitf")

_applied: tuple[int, int | None] | None = None
"""The pool's threads and a large product's that `configure` set last."""

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


def _chosen(asked: int, cluster, job, task, local: bool) -> tuple[int | None, str]:
    """The BLAS threads a large product may use, or None to leave BLAS alone, and why."""
    if asked:
        return asked, "intra_op_parallelism_threads"
    named = [name for name in USER_ENV if name in os.environ]
    if named:
        return None, f"{named[0]} is set"
    if cluster is None and not local:
        return None, "a session of a cluster: its task's server chose"
    n = cores()
    if cluster is None:
        return n, f"a local session: this machine's {n} cores"
    tasks = tasks_on_this_host(cluster, job, task)
    if tasks < 2:
        return n, f"the only task on this machine: its {n} cores"
    return max(1, n // tasks), f"{tasks} tasks share this machine's {n} cores"


def configure(
    config=None, cluster=None, job: str | None = None, task: int = 0, local: bool = False
) -> int | None:
    """Sets this process's BLAS threads for a session's or a task's config.

    Args:
        config: The `ConfigProto` of the session or server, or None.
        cluster: For a ``tf.train.Server``: its `ClusterSpec` (None for a session).
        job: The server's job.
        task: The server's task index.
        local: For a session: True if it runs its steps in this process (no
            target), False if a server's task does (its server chose).

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
    global _applied
    threads, why = _chosen(asked, cluster, job, task, local)
    if threads is None:
        # As they are: the user's variable, or what this process's server chose.
        logger.debug("BLAS threads left as they are: %s", why)
        return None
    pool = threads if asked else 1
    large = threads if pool == 1 and threads > 1 else None
    if _applied == (pool, large):
        return pool  # every session of a process asks the same: set once
    import threadpoolctl

    controller = threadpoolctl.ThreadpoolController().select(user_api="blas")
    if not controller.lib_controllers:
        logger.debug("no BLAS library with a thread pool is loaded: nothing to set")
        return None
    controller.limit(limits=pool)
    libraries = controller.lib_controllers
    _applied = (pool, large)

    def set_threads(n: int) -> None:
        for library in libraries:
            library.set_num_threads(n)

    blas_threads.use(set_threads if large else None, large)
    if large:
        logger.info("BLAS threads: 1, and %d for a large product (%s)", threads, why)
    else:
        logger.info("BLAS threads: %d (%s)", pool, why)
    return pool
