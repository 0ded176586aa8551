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
            items = [(k, *self._child(v)) for k, v in fetch.items()]
            kind = type(fetch)
            if kind is dict:  # a hooked session's fetches: no `_make_mapping` call
                return lambda vals: {k: _value(vals, s, b) for k, s, b in items}
            return lambda vals: _make_mapping(kind, [(k, _value(vals, s, b)) for k, s, b in items])
        if isinstance(fetch, (list, tuple)):
            children = [self._child(f) for f in fetch]
            kind = type(fetch)
            if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
                return lambda vals: kind(*[_value(vals, s, b) for s, b in children])
            if all(b is None for _, b in children):
                # Graph elements only (``[train_op, loss]``): one call rebuilds it.
                slots = [s for s, _ in children]
                if kind is list:
                    return lambda vals: [None if s is None else vals[s] for s in slots]
                return lambda vals: kind([None if s is None else vals[s] for s in slots])
            return lambda vals: kind([_value(vals, s, b) for s, b in children])
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
        index = self._slot(fetch)
        return (lambda vals: None) if index is None else (lambda vals: vals[index])

    def _child(self, fetch) -> tuple[int | None, Callable[[list], Any] | None]:
        """``(slot, None)`` for a graph element (its value's index, None for an op), else
        ``(None, builder)``: what `_value` reads a nested fetch's value from."""
        if fetch is None or isinstance(fetch, (Mapping, list, tuple, SparseTensor)):
            return None, self._map(fetch)
        if type(fetch).__name__ == "IndexedSlices":
            return None, self._map(fetch)
        return self._slot(fetch), None

    def _slot(self, fetch) -> int | None:
        """Maps one graph element: the index of its value, or None for an op."""
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
            return None
        index = self._tensor_index.get(element)
        if index is None:
            index = len(self.tensors)
            self._tensor_index[element] = index
            self.tensors.append(element)
        return index


def _value(vals: list, slot: int | None, builder):
    """A nested fetch's value: its builder's, or the value at its slot (None for an op)."""
    if builder is not None:
        return builder(vals)
    return None if slot is None else vals[slot]


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


class MapperCache:
    """The `FetchMapper` s a session keeps: one per fetch structure and graph version.

    A training loop fetches the same structure every step; a mapper depends
    only on it and on the graph (whose version counts every change). Kept:
    graph elements (tensors, ops, names, variables) alone or nested in plain
    lists, tuples and dicts.

    Args:
        graph: The session's graph.
    """

    def __init__(self, graph: ops.Graph):
        self._graph = graph
        self._mappers: dict[tuple, FetchMapper] = {}

    def get(self, fetches) -> FetchMapper | None:
        """The kept mapper of ``fetches`` at the graph's version, or None."""
        key = _structure_key(fetches, _CACHED_FETCH_TYPES or _cached_fetch_types())
        return None if key is None else self._mappers.get((key, self._graph.version))

    def make(self, fetches) -> FetchMapper:
        """A new mapper of ``fetches``, kept if its structure is (see `FetchMapper` for errors)."""
        mapper = FetchMapper(self._graph, fetches)
        key = _structure_key(fetches, _cached_fetch_types())
        if key is not None:
            if len(self._mappers) >= 64:
                self._mappers.clear()
            self._mappers[(key, self._graph.version)] = mapper
        return mapper


_CACHED_FETCH_TYPES: frozenset = frozenset()


def _structure_key(fetches, cached: frozenset):
    """A key telling ``fetches`` apart from any other structure, or None if it is not kept.

    Kept: graph elements of the ``cached`` types, alone or nested in plain
    lists, tuples and dicts (a dict's keys with their types, in order).
    Elements are taken in place, without a call each: this runs every step.
    """
    kind = type(fetches)
    if kind in cached:
        return fetches
    parts = []
    if kind is dict:
        for k, v in fetches.items():
            part = v if type(v) in cached else _structure_key(v, cached)
            if part is None:
                return None
            parts.append((type(k), k, part))
    elif kind is list or kind is tuple:
        for f in fetches:
            part = f if type(f) in cached else _structure_key(f, cached)
            if part is None:
                return None
            parts.append(part)
    else:
        return None
    return kind, tuple(parts)


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
