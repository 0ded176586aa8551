"""``tf.train.ClusterSpec``: the jobs of a cluster and the addresses of their tasks.

A cluster is a set of named *jobs* (``"ps"``, ``"worker"``, ``"chief"``...), each
a set of *tasks* numbered from 0. A task is one process, reached at a
``host:port`` address. TF1 writes a cluster three ways, and `ClusterSpec`
accepts all of them:

* a dict of address lists, ``{"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]}``;
* a dict of sparse ``{task index: address}`` dicts, for a process that only
  needs to know some of its peers, ``{"worker": {1: "w1:2222"}}``;
* a ``ClusterDef`` (in TF a protocol buffer; here the small `ClusterDef`
  dataclass below, or any object with the same ``job`` / ``name`` / ``tasks``
  fields, such as TF's own proto).

`cluster_from_tf_config` reads the ``TF_CONFIG`` JSON that cluster managers
(and ``minitf launch``) give each process: the cluster, plus this task's job
and index.

TF source: ``tensorflow/python/training/server_lib.py`` (``ClusterSpec``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterDef", "ClusterSpec", "JobDef", "cluster_from_tf_config"]


@dataclass
class JobDef:
    """One job of a `ClusterDef`: its name and its tasks.

    Attributes:
      name: The job name.
      tasks: Task index -> ``host:port`` address.
    """

    name: str
    tasks: dict[int, str] = field(default_factory=dict)


@dataclass
class ClusterDef:
    """A plain-data stand-in for TF's ``ClusterDef`` proto: jobs sorted by name.

    Attributes:
      job: The jobs, one `JobDef` each.
    """

    job: list[JobDef] = field(default_factory=list)


def _as_text(value: Any, what: str) -> str:
    # TF stores names and addresses with `compat.as_bytes`, which takes str or bytes.
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} {value!r} must be bytes or unicode")


def _job_tasks_from_dict(job_name: Any, tasks: Any) -> dict[int, Any]:
    if isinstance(tasks, (list, tuple)):
        return dict(enumerate(tasks))
    if isinstance(tasks, dict):
        return {_task_index(job_name, i): address for i, address in tasks.items()}
    raise TypeError(
        f"The tasks for job {job_name!r} must be a list or a dictionary from integers to strings."
    )


def _task_index(job_name: Any, index: Any) -> int:
    # TF converts with a bare int(): the same error class, naming the job and the index.
    try:
        return int(index)
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"Task index {index!r} of job {job_name!r} is not an integer: a job's tasks are a "
            "list of addresses or a dictionary from task indices (integers) to addresses"
        ) from None


def _check_address(job_name: str, index: int, address) -> None:
    """A task's address must be ``host:port``, the port from 0 to 65535 (minitf checks early).

    Raises:
        ValueError: naming the job, the task and the address.
    """
    text = address.decode() if isinstance(address, bytes) else str(address)
    host, colon, port = text.rpartition(":")
    if colon and host and port.isdigit() and int(port) <= 65535:
        return
    problem = (
        f"port {port} is not from 0 to 65535"
        if colon and host and port.isdigit()
        else "it is not 'host:port'"
    )
    raise ValueError(
        f"Invalid address {text!r} for /job:{job_name}/task:{index} in the cluster spec: "
        f"{problem} (like 'localhost:2222')"
    )


def _is_cluster_def(obj: Any) -> bool:
    # Duck-typed so that TF's own ClusterDef proto is accepted as well.
    return isinstance(obj, ClusterDef) or (
        not isinstance(obj, (dict, str, bytes)) and hasattr(obj, "job")
    )


class ClusterSpec:
    """Represents a cluster as a set of tasks, organized into jobs.

    Example:
      >>> cluster = ClusterSpec({"ps": ["ps0:2222"], "worker": {1: "worker1:2222"}})
      >>> cluster.num_tasks("worker"), cluster.task_address("worker", 1)
      (1, 'worker1:2222')
      >>> cluster.as_dict()
      {'ps': ['ps0:2222'], 'worker': {1: 'worker1:2222'}}

    Two specs are equal when they hold the same tasks at the same addresses,
    whichever way they were written. An empty spec is falsy.
    """

    def __init__(self, cluster: dict | ClusterSpec | ClusterDef) -> None:
        """Creates a `ClusterSpec`.

        Args:
          cluster: A dict mapping job names to (i) a list of network addresses or
            (ii) a dict from integer task indices to addresses; another
            `ClusterSpec`; or a `ClusterDef`.

        Raises:
          TypeError: If `cluster` is none of these, if a job's tasks are neither a
            list nor a dict, or if a job name or address is not a string.
          ValueError: If a sparse task index is not convertible to `int`.
        """
        if isinstance(cluster, dict):
            self._cluster_spec = {
                job_name: _job_tasks_from_dict(job_name, tasks)
                for job_name, tasks in cluster.items()
            }
            self._cluster_def = self._make_cluster_def()
            for job_name, tasks in self._cluster_spec.items():
                for index, address in tasks.items():
                    _check_address(job_name, index, address)
        elif isinstance(cluster, ClusterSpec) or _is_cluster_def(cluster):
            # Like TF, a spec built from another spec or a ClusterDef lists its
            # jobs in ClusterDef order, i.e. sorted by name.
            cluster_def = cluster.as_cluster_def() if isinstance(cluster, ClusterSpec) else cluster
            self._cluster_spec = {
                job.name: {int(i): address for i, address in job.tasks.items()}
                for job in cluster_def.job
            }
            self._cluster_def = self._make_cluster_def(sort=False)
        else:
            raise TypeError(
                "`cluster` must be a dictionary mapping one or more job names to lists of "
                "network addresses, or a `ClusterDef` protocol buffer"
            )

    def _make_cluster_def(self, sort: bool = True) -> ClusterDef:
        """Builds the `ClusterDef` (jobs and tasks sorted, as TF does for determinism).

        Raises:
          TypeError: If a job name or a task address is not str or bytes.
        """
        jobs = sorted(self._cluster_spec.items()) if sort else self._cluster_spec.items()
        cluster_def = ClusterDef()
        for job_name, tasks in jobs:
            name = _as_text(job_name, "Job name")
            addresses = {i: _as_text(a, "Task address") for i, a in sorted(tasks.items())}
            cluster_def.job.append(JobDef(name=name, tasks=addresses))
        return cluster_def

    def _job(self, job_name: str) -> dict[int, Any]:
        try:
            return self._cluster_spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    @property
    def jobs(self) -> list[str]:
        """The job names of this cluster."""
        return list(self._cluster_spec)

    def num_tasks(self, job_name: str) -> int:
        """Returns the number of tasks defined in `job_name`.

        Args:
            job_name: The name of a job of this cluster.

        Raises:
          ValueError: If `job_name` does not name a job in this cluster.
        """
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """Returns the sorted task indices defined in `job_name`.

        Args:
            job_name: The name of a job of this cluster.

        Raises:
          ValueError: If `job_name` does not name a job in this cluster.
        """
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """Returns the address of task `task_index` of `job_name`.

        Args:
            job_name: The name of a job of this cluster.
            task_index: The index of a task of that job.

        Raises:
          ValueError: If `job_name` does not name a job in this cluster, or the job
            has no task `task_index`.
        """
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """Returns the addresses of `job_name` as a list indexed by task index.

        For a sparse job the missing indices hold None, so the list length is
        not the number of tasks (use `num_tasks` for that).

        Args:
            job_name: The name of a job of this cluster.

        Raises:
          ValueError: If `job_name` does not name a job in this cluster, or (as in
            TF, which takes the max of no indices) the job has no tasks.
        """
        job = self._job(job_name)
        if not job:
            raise ValueError(f"Job {job_name!r} has no tasks")
        addresses: list[str | None] = [None] * (max(job) + 1)
        for i, address in job.items():
            addresses[i] = address
        return addresses

    def as_dict(self) -> dict[str, list[str | None] | dict[int, str]]:
        """Returns the jobs as a dict: a list for a dense job, a dict for a sparse one.

        A job whose task indices are exactly ``0..n-1`` gives its list of
        addresses; any other job gives ``{task index: address}`` (``{}`` for a
        job without tasks).
        """
        out: dict[str, Any] = {}
        for job_name in self.jobs:
            indices = self.task_indices(job_name)
            if not indices:
                out[job_name] = {}
            elif max(indices) + 1 == len(indices):
                out[job_name] = self.job_tasks(job_name)
            else:
                out[job_name] = {i: self.task_address(job_name, i) for i in indices}
        return out

    def as_cluster_def(self) -> ClusterDef:
        """Returns this cluster as a `ClusterDef` (a fresh copy)."""
        return ClusterDef(
            job=[JobDef(name=job.name, tasks=dict(job.tasks)) for job in self._cluster_def.job]
        )

    def __bool__(self) -> bool:
        return bool(self._cluster_spec)

    # As in TF, a spec also compares with the {job: {index: address}} dict it holds.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterSpec):
            other = other._cluster_spec
        return self._cluster_spec == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # mutable-content equality, as in TF

    def __repr__(self) -> str:
        jobs = self.as_dict()
        items = ", ".join(f"{name!r}: {jobs[name]!r}" for name in sorted(jobs))
        return f"ClusterSpec({{{items}}})"


def _task_index_from_tf_config(index: Any) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, str)):
        raise ValueError(f"TF_CONFIG 'task' 'index' must be an integer, got {index!r}")
    try:
        value = int(index)
    except ValueError:
        raise ValueError(f"TF_CONFIG 'task' 'index' must be an integer, got {index!r}") from None
    if value < 0:
        raise ValueError(f"TF_CONFIG 'task' 'index' must be >= 0, got {value}")
    return value


def _load_tf_config(tf_config: str | dict) -> dict:
    if isinstance(tf_config, (str, bytes)):
        if not tf_config.strip():
            return {}
        try:
            tf_config = json.loads(tf_config)
        except json.JSONDecodeError as e:
            raise ValueError(f"TF_CONFIG is not valid JSON: {e}") from None
    if not isinstance(tf_config, dict):
        raise ValueError(
            f"TF_CONFIG must be a JSON object with 'cluster' and 'task' keys, got {tf_config!r}"
        )
    return tf_config


def cluster_from_tf_config(tf_config: str | dict) -> tuple[ClusterSpec, str | None, int | None]:
    """Parses a ``TF_CONFIG`` value into the cluster and this task's job and index.

    The format is the one TF's cluster resolvers and estimators read::

        {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"],
                     "ps": ["host2:2222"]},
         "task": {"type": "worker", "index": 0}}

    Sparse jobs may use string keys (``{"worker": {"1": "host1:2222"}}``), since
    JSON object keys are strings. Other top-level keys (``"environment"``,
    ``"rpc_layer"``) are ignored.

    Args:
      tf_config: The JSON string (as found in the ``TF_CONFIG`` environment
        variable) or the already decoded dict. An empty string means no config.

    Returns:
      ``(cluster, job_name, task_index)``: an empty `ClusterSpec` when there is no
      ``"cluster"``; ``job_name`` is the task ``"type"`` and ``task_index`` its
      ``"index"``, each None when not given. An ``"evaluator"`` task may be absent
      from the cluster, as in TF, where the evaluator runs outside it.

    Raises:
      ValueError: If the JSON does not parse, is not an object, the cluster or
        task is malformed, or the task names a job or index the cluster lacks.
    """
    config = _load_tf_config(tf_config)
    cluster_value = config.get("cluster", {})
    if not isinstance(cluster_value, dict):
        raise ValueError(f"TF_CONFIG 'cluster' must be an object, got {cluster_value!r}")
    try:
        cluster = ClusterSpec(cluster_value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"TF_CONFIG 'cluster' is malformed: {e}") from None

    task = config.get("task", {})
    if not isinstance(task, dict):
        raise ValueError(f"TF_CONFIG 'task' must be an object, got {task!r}")
    job_name = task.get("type")
    if job_name is not None and not isinstance(job_name, str):
        raise ValueError(f"TF_CONFIG 'task' 'type' must be a string, got {job_name!r}")
    index = task.get("index")
    task_index = None if index is None else _task_index_from_tf_config(index)

    if job_name is not None and cluster and job_name != "evaluator":
        if job_name not in cluster.jobs:
            raise ValueError(
                f"TF_CONFIG task type {job_name!r} is not a job of the cluster "
                f"(jobs: {sorted(cluster.jobs)})"
            )
        if task_index is not None and task_index not in cluster.task_indices(job_name):
            raise ValueError(
                f"TF_CONFIG task index {task_index} is not a task of job {job_name!r} "
                f"(indices: {cluster.task_indices(job_name)})"
            )
    return cluster, job_name, task_index


def server_def(cluster: ClusterSpec, job: str, task: int) -> dict:
    """A ``ServerDef``-like dict: the cluster, the job and task, the protocol."""
    return {"cluster": cluster.as_dict(), "job_name": job, "task_index": task, "protocol": "grpc"}
