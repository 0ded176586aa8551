"""``tf.train.replica_device_setter``: place variables on ps tasks, the rest on the worker.

In between-graph replication every worker builds the same graph under::

    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        ...

The returned *device function* is called for each new op (innermost
``tf.device`` scopes first, so it sees what they chose in ``op.device``). Ops
whose type is a parameter-server op (variables, hash tables, accumulators —
`STANDARD_PS_OPS`) go to ``ps_device`` with a task picked by a *placement
strategy*; every other op goes to ``worker_device``. In both cases the op's own
device fields win, field by field (`DeviceSpec.make_merged_spec`).

A strategy is any callable ``op -> ps task index``. The default is round
robin; `GreedyLoadBalancingStrategy` (with `byte_size_load_fn`) and
`RandomStrategy` are TF 1.15's ``tf.contrib.training`` strategies (defined in
``device_setter_strategies.py``, re-exported here).

TF sources: ``tensorflow/python/training/device_setter.py`` and
``tensorflow/contrib/training/python/training/device_setter.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from minitf.framework.device import DeviceSpec
from minitf.runtime.distributed.cluster_spec import ClusterDef, ClusterSpec

# The TF 1.15 contrib strategies live in their own module; they are re-exported here.
from minitf.train.device_setter_strategies import (
    GreedyLoadBalancingStrategy,
    RandomStrategy,
    byte_size_load_fn,
)

__all__ = [
    "STANDARD_PS_OPS",
    "GreedyLoadBalancingStrategy",
    "RandomStrategy",
    "byte_size_load_fn",
    "replica_device_setter",
]

logger = logging.getLogger("minitf")

# The op types placed on ps tasks by default (TF 1.15's list; TF 2.x adds
# "DecisionTreeResource"). Matching is on `op.type`.
STANDARD_PS_OPS = (
    "Variable",
    "VariableV2",
    "AutoReloadVariable",
    "MutableHashTable",
    "MutableHashTableV2",
    "MutableHashTableOfTensors",
    "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable",
    "MutableDenseHashTableV2",
    "VarHandleOp",
    "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp",
    "ResourceConditionalAccumulator",
)


class _RoundRobinStrategy:
    """The default strategy: ps tasks 0, 1, ..., num_tasks - 1, 0, 1, ..."""

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op: Any) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class _ReplicaDeviceChooser:
    """Holds the setter's settings; `device_function` is what `tf.device` calls."""

    def __init__(
        self,
        ps_tasks: int,
        ps_device: str,
        worker_device: str,
        merge_devices: bool,
        ps_ops: Iterable[str],
        ps_strategy: Callable[[Any], int],
    ) -> None:
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def __repr__(self) -> str:
        # How pictures name the device function that placed an op.
        return (
            f"replica_device_setter(ps_tasks={self._ps_tasks}, ps_device={self._ps_device!r}, "
            f"worker_device={self._worker_device!r})"
        )

    def device_function(self, op: Any) -> str:
        """Chooses the device of `op` (an `Operation`; only `device`, `type` are read).

        Args:
          op: The new op, with `op.device` as set by inner device scopes.

        Returns:
          The canonical device string for the op.
        """
        # Without merging, a device set by an inner scope is kept as is. Past this
        # point either merging is on or op.device is empty, so merging is safe.
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            return self._ps_placement(op, current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string()

    def _ps_placement(self, op: Any, current: DeviceSpec) -> DeviceSpec:
        ps = DeviceSpec.from_string(self._ps_device)
        # A task is chosen only when the op stays in the ps job. The strategy is
        # consulted even if the op already pins a task (that task still wins
        # below, but round robin advances); ops pinned to another job never
        # consume a slot.
        if ps.job and (not current.job or current.job == ps.job):
            ps = ps.replace(task=self._ps_strategy(op))
        return ps.make_merged_spec(current)


def _ps_task_count(cluster: Any, ps_device: str) -> int | None:
    """The number of tasks of `ps_device`'s job in `cluster`, or None if it has none."""
    jobs = (cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)).as_dict()
    ps_job = DeviceSpec.from_string(ps_device).job
    if ps_job not in jobs or jobs[ps_job] is None:
        return None
    return len(jobs[ps_job])


def replica_device_setter(
    ps_tasks: int = 0,
    ps_device: str = "/job:ps",
    worker_device: str = "/job:worker",
    merge_devices: bool = True,
    cluster: ClusterSpec | dict | ClusterDef | None = None,
    ps_ops: Iterable[str] | None = None,
    ps_strategy: Callable[[Any], int] | None = None,
) -> Callable[[Any], str] | None:
    """Returns a device function for building a replica's graph.

    Example::

        cluster = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]}
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            v1 = tf.Variable(1.0)  # /job:ps/task:0
            v2 = tf.Variable(2.0)  # /job:ps/task:1
            y = v1 + v2  # /job:worker

    Args:
      ps_tasks: Number of ps tasks; ignored if `cluster` is given.
      ps_device: Device of the ps job; ``""`` means no ps placement. Without a
        job (e.g. ``"/cpu:0"``) no task is ever assigned.
      worker_device: Device of the worker job; ``""`` means no worker placement.
      merge_devices: If True, the chosen device only fills fields the op has not
        set. If False, an op that already has a device keeps it unchanged.
      cluster: A `ClusterSpec`, a dict accepted by it or a `ClusterDef`. The
        number of tasks of `ps_device`'s job becomes `ps_tasks`.
      ps_ops: Op types to place on ps tasks; defaults to `STANDARD_PS_OPS`.
      ps_strategy: Callable ``op -> ps task index``; defaults to round robin over
        the ps tasks.

    Returns:
      A function to pass to `tf.device`, or None when there are no ps tasks
      (``ps_tasks == 0``, or `cluster` has no ps job). Note that
      ``tf.device(None)`` then *resets* the outer device scopes.

    Raises:
      TypeError: If `cluster` is not a dict, `ClusterSpec` or `ClusterDef`, or
        `ps_strategy` is not callable.
    """
    if cluster is not None:
        ps_tasks = _ps_task_count(cluster, ps_device)
        if ps_tasks is None:
            return None
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        logger.warning(
            "DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter"
        )
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(
        ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy
    )
    return chooser.device_function
