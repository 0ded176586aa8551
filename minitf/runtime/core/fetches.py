"""Turning ``Session.run``'s ``fetches`` argument into graph elements and back.

``fetches`` may be one graph element or any nesting of lists, tuples,
namedtuples and dicts. `FetchMapper` flattens it to a list of unique tensors
and a list of target ops, and rebuilds the same structure from the values.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from minitf.framework import ops
from minitf.framework.sparse_tensor import SparseTensor, SparseTensorValue

IndexedSlicesValue = collections.namedtuple(
    "IndexedSlicesValue", ["values", "indices", "dense_shape"]
)
IndexedSlicesValue.__doc__ = """What ``Session.run`` returns for a fetched `IndexedSlices`.

Attributes:
    values: The rows, a numpy array.
    indices: Their indices in the first dimension, a numpy array.
    dense_shape: The dense shape, or None if the `IndexedSlices` has none.
"""


class FetchMapper:
    """Flattens a fetch structure; rebuilds it from the fetched values.

    Args:
        graph: The session's graph.
        fetches: The ``fetches`` argument of ``Session.run``.

    Raises:
        TypeError: for a fetch of an unsupported type (or None).
        ValueError: for a fetch that is not an element of ``graph``.
    """

    def __init__(self, graph: ops.Graph, fetches):
        self._graph = graph
        self.tensors: list[ops.Tensor] = []
        self.ops: list[ops.Operation] = []
        self._tensor_index: dict[ops.Tensor, int] = {}
        self._build = self._map(fetches)

    def build(self, values: list[Any]):
        """Returns the fetched values in the structure of ``fetches``.

        Args:
            values: The value of each of `tensors`, in order (ops fetch None).
        """
        return self._build(values)

    def _map(self, fetch) -> Callable[[list], Any]:
        if fetch is None:
            raise TypeError(f"Fetch argument None has invalid type {type(None)}")
        if isinstance(fetch, Mapping):
            builders = [(k, self._map(v)) for k, v in fetch.items()]
            kind = type(fetch)
            return lambda vals: _make_mapping(kind, [(k, b(vals)) for k, b in builders])
        if isinstance(fetch, (list, tuple)):
            builders = [self._map(f) for f in fetch]
            if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
                kind = type(fetch)
                return lambda vals: kind(*[b(vals) for b in builders])
            kind = type(fetch)
            return lambda vals: kind([b(vals) for b in builders])
        if type(fetch).__name__ == "IndexedSlices":
            parts = [fetch.values, fetch.indices]
            if fetch.dense_shape is not None:
                parts.append(fetch.dense_shape)
            builders = [self._map(p) for p in parts]
            return lambda vals: IndexedSlicesValue(
                *[b(vals) for b in builders], *([None] if len(builders) == 2 else [])
            )
        if isinstance(fetch, SparseTensor):
            builders = [self._map(p) for p in (fetch.indices, fetch.values, fetch.dense_shape)]
            return lambda vals: SparseTensorValue(*[b(vals) for b in builders])
        return self._map_element(fetch)

    def _map_element(self, fetch) -> Callable[[list], Any]:
        try:
            element = self._graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(
                f"Fetch argument {fetch!r} has invalid type {type(fetch)!r}, must be a string "
                f"or Tensor. ({e})"
            ) from None
        except (ValueError, KeyError) as e:
            raise ValueError(
                f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e.args[0]})"
            ) from None
        if not self._graph.is_fetchable(element):
            op = element.op if isinstance(element, ops.Tensor) else element
            raise ValueError(f"Operation {op.name!r} has been marked as not fetchable.")
        if isinstance(element, ops.Operation):
            if element not in self.ops:
                self.ops.append(element)
            return lambda vals: None
        index = self._tensor_index.get(element)
        if index is None:
            index = len(self.tensors)
            self._tensor_index[element] = index
            self.tensors.append(element)
        return lambda vals: vals[index]


def _make_mapping(kind, items):
    try:
        return kind(items)
    except TypeError:
        # e.g. defaultdict, whose first constructor argument is the factory.
        result = kind.__new__(kind)
        result.__init__()
        result.update(items)
        return result


def client_values(results: list) -> list:
    """What the caller receives of a step's fetched values (`client_value` of each)."""
    return [client_value(v) for v in results] if results else results


def client_value(value):
    """What the caller receives: a numpy value it may own and change."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value


def mapper_key(fetches) -> Any:
    """What a session keeps the `FetchMapper` of ``fetches`` under, or None if it keeps none.

    A training loop fetches the same structure every step; a mapper depends
    only on it (and on the graph's version, which the session adds).
    """
    return _structure_key(fetches, _cached_fetch_types())


_CACHED_FETCH_TYPES: frozenset = frozenset()


def _structure_key(fetches, cached: frozenset):
    """A key telling ``fetches`` apart from any other structure, or None if it is not kept.

    Kept: graph elements of the ``cached`` types, alone or nested in plain
    lists, tuples and dicts (a dict's keys with their types, in order).
    """
    kind = type(fetches)
    if kind in cached:
        return fetches
    if kind is dict:
        parts = [(type(k), k, _structure_key(v, cached)) for k, v in fetches.items()]
        kept = all(part[2] is not None for part in parts)
    elif kind is list or kind is tuple:
        parts = [_structure_key(f, cached) for f in fetches]
        kept = all(part is not None for part in parts)
    else:
        return None
    return (kind, tuple(parts)) if kept else None


def _cached_fetch_types() -> frozenset:
    """Fetches whose `FetchMapper` a session keeps (alone, or in plain lists, tuples and dicts).

    Tensors, ops, names and variables (a training loop fetches its global step).
    """
    global _CACHED_FETCH_TYPES
    if not _CACHED_FETCH_TYPES:
        from minitf.ops.state import variables  # the ops layer is above the runtime

        _CACHED_FETCH_TYPES = frozenset(
            {ops.Tensor, ops.Operation, str, variables.Variable, variables.ResourceVariable}
        )
    return _CACHED_FETCH_TYPES
