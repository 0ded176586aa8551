"""Per-task resource managers (TF's ``ResourceMgr``).

State — variables, queues, accumulators — is not kept in Python objects of
the graph. It lives in the resource manager of the task that runs the op,
found by ``(container, name)``. Two graphs (or two sessions) that name the
same resource on the same task therefore share it; this is how
between-graph replicas find the variables on a parameter server by name.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from minitf.framework import errors

DEFAULT_CONTAINER = "localhost"
_NO_RESOURCES: dict = {}  # what a container that does not exist holds (never written)


class ResourceMgr:
    """A thread-safe map ``(container, name) -> resource`` owned by one task.

    Args:
        default_container: The container used when an op's ``container`` attribute is empty.
    """

    def __init__(self, default_container: str = DEFAULT_CONTAINER):
        self._default_container = default_container
        self._lock = threading.Lock()
        self._containers: dict[str, dict[str, Any]] = {}
        # Changes whenever a resource is added or removed: an observer that
        # keeps a list of them knows when to look again.
        self.changes = 0

    @property
    def default_container(self) -> str:
        """The container used when an op's ``container`` attribute is empty."""
        return self._default_container

    def _container(self, container: str) -> str:
        return container or self._default_container

    def lookup(self, container: str, name: str) -> Any | None:
        """Returns the resource ``(container, name)`` or None.

        Args:
            container: The container (empty: the default container).
            name: The resource's name in it.
        """
        with self._lock:
            return self._containers.get(self._container(container), {}).get(name)

    def lookup_or_create(self, container: str, name: str, creator: Callable[[], Any]) -> Any:
        """Returns the resource, creating it with ``creator()`` if it does not exist.

        Args:
            container: The container (empty: the default container).
            name: The resource's name in it.
            creator: Called with no arguments to make the resource.
        """
        # The common case, a resource that exists, needs no lock: dict reads are
        # atomic, and resources are only added under the lock. It runs for
        # every stateful op of every step, so it calls nothing of its own.
        key = container or self._default_container
        found = self._containers.get(key, _NO_RESOURCES).get(name)
        if found is not None:
            return found
        with self._lock:
            resources = self._containers.setdefault(key, {})
            resource = resources.get(name)
            if resource is None:
                resource = creator()
                resources[name] = resource
                self.changes += 1
            return resource

    def create(self, container: str, name: str, resource: Any) -> None:
        """Adds a new resource.

        Args:
            container: The container (empty: the default container).
            name: The resource's name in it.
            resource: The resource.

        Raises:
            AlreadyExistsError: if ``(container, name)`` already exists.
        """
        key = self._container(container)
        with self._lock:
            resources = self._containers.setdefault(key, {})
            if name in resources:
                raise errors.AlreadyExistsError(None, None, f"Resource {key}/{name} already exists")
            resources[name] = resource
            self.changes += 1

    def delete(self, container: str, name: str) -> None:
        """Removes a resource.

        Args:
            container: The container (empty: the default container).
            name: The resource's name in it.

        Raises:
            NotFoundError: if it does not exist.
        """
        key = self._container(container)
        with self._lock:
            if name not in self._containers.get(key, {}):
                raise errors.NotFoundError(None, None, f"Resource {key}/{name} does not exist.")
            del self._containers[key][name]
            self.changes += 1

    def cleanup(self, container: str) -> None:
        """Removes every resource of ``container`` (``tf.Session.reset`` does this).

        Args:
            container: The container (empty: the default container).
        """
        with self._lock:
            self._containers.pop(self._container(container), None)
            self.changes += 1

    def clear(self) -> None:
        """Removes every resource."""
        with self._lock:
            self._containers.clear()
            self.changes += 1

    def items(self) -> list[tuple[str, str, Any]]:
        """A snapshot of ``(container, name, resource)`` triples, for inspection."""
        with self._lock:
            return [(c, n, r) for c, rs in self._containers.items() for n, r in rs.items()]

    def accumulators(self, since: dict[str, int] | None = None) -> list[dict]:
        """What every accumulator of this task holds and has seen.

        Args:
            since: ``{shared name: event number}``: return each accumulator's
                history from that event on (default: all it remembers).

        Returns:
            One dict per accumulator: ``name``, ``global_step``, ``count``,
            ``events`` (how many history entries it has made in all) and
            ``history`` (`minitf.ops.data_flow.conditional_accumulator_kernels`).
        """
        since = since or {}
        states = []
        for _, name, resource in self.items():
            history = getattr(resource, "history", None)
            if history is None:
                continue
            with resource.lock:
                first = resource.events - len(history)
                start = max(since.get(name, 0) - first, 0)
                states.append(
                    {
                        "name": name,
                        "global_step": resource.global_step,
                        "count": resource.counter,
                        "events": resource.events,
                        "history": list(itertools.islice(history, start, None)),
                    }
                )
        return states

    def describe(self, limit: int = 16) -> list[dict]:
        """Every resource of this task as data: what a stepper shows between moves.

        Queues give their size, capacity and first ``limit`` elements;
        accumulators their count, global step and how many stale gradients
        they dropped so far; variables their value (or
        only their shape when they hold more than ``limit`` numbers).

        Args:
            limit: The most queue elements, or variable elements, to show.
        """
        described = []
        for container, name, resource in self.items():
            entry = {"container": container, "name": name}
            with resource.lock:
                if hasattr(resource, "contents_locked"):
                    entry.update(resource.state_locked(), closed=resource.closed)
                    entry["values"] = [
                        _plain(e[0] if len(e) == 1 else list(e))
                        for e in resource.contents_locked(limit)
                    ]
                elif hasattr(resource, "history"):
                    entry.update(resource.state_locked(), dropped=resource.dropped)
                elif hasattr(resource, "is_initialized"):
                    entry.update(kind="variable", initialized=resource.is_initialized)
                    if resource.is_initialized:
                        value = resource.value
                        entry["shape"] = list(value.shape)
                        if value.size <= limit:
                            entry["value"] = _plain(value)
                else:
                    entry["kind"] = type(resource).__name__
            entry["name"] = name
            described.append(entry)
        return sorted(described, key=lambda e: (e["kind"], e["name"]))


def _plain(value: Any) -> Any:
    """A numpy value as JSON-ready Python data."""
    tolist = getattr(value, "tolist", None)
    if tolist is not None:
        value = tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value
