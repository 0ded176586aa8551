"""``framework/ops.py``, where TF keeps `Graph`, `Operation` and `Tensor`: the graph's front door.

TF1 code and TF's own modules import the graph from here
(``from tensorflow.python.framework import ops``), so minitf's does too:
this module re-exports the graph's classes and functions, which live one
concept per module —

- `minitf.framework.tensor`: `Tensor`;
- `minitf.framework.operation`: `Operation`;
- `minitf.framework.graph`: `Graph`, `get_default_graph`, `reset_default_graph`;
- `minitf.framework.name_scope`, `minitf.framework.device_stack`,
  `minitf.framework.colocation`, `minitf.framework.control_dependencies`:
  the construction context a graph applies to every new op;
- `minitf.framework.graph_collections`: the graph's collections;
- `minitf.framework.graph_elements`: finding a tensor or op by name;
- `minitf.framework.tensor_conversion`: `convert_to_tensor` and its registry;
- `minitf.framework.default_session`: the default session (``Tensor.eval``);

— and it holds TF's module-level functions over the default graph:
``tf.name_scope``, ``tf.device``, ``tf.colocate_with``,
``tf.control_dependencies`` and the collection functions.
"""

# ruff: noqa: F401 - the graph's names are re-exported here, where TF readers look for them

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from minitf.framework import device as pydev
from minitf.framework.default_session import (
    SessionInterface,
    default_session,
    get_default_session,
)
from minitf.framework.graph import Graph, get_default_graph, reset_default_graph
from minitf.framework.op_registry import (
    NotDifferentiable,
    RegisterGradient,
    get_kernel_def,
    no_gradient,
)
from minitf.framework.operation import Operation
from minitf.framework.tensor import Tensor
from minitf.framework.tensor_conversion import (
    convert_n_to_tensor,
    convert_to_tensor,
    convert_to_tensor_or_indexed_slices,
    internal_convert_to_tensor,
    register_tensor_conversion_function,
)


def _graph_elements(values) -> list:
    found = []
    for v in values or ():
        if type(v) is Tensor:  # the common case, without looking for a conversion
            found.append(v)
            continue
        conv = getattr(v, "_as_graph_element", None)
        if conv is not None and callable(conv):
            v = conv()
        if isinstance(v, (Tensor, Operation)):
            found.append(v)
        elif type(v).__name__ == "IndexedSlices":
            found.append(v.values)
    return found


def _get_graph_from_inputs(values) -> Graph:
    """Returns the graph of the graph elements in ``values`` (default graph if none).

    Raises:
        ValueError: if the elements come from different graphs.
    """
    if get_default_graph().building_function:
        # As TF: a function's graph takes the outer graph's tensors in (captures them).
        return get_default_graph()
    graph = None
    first = None
    for elem in _graph_elements(values):
        if graph is None:
            graph, first = elem.graph, elem
        elif elem.graph is not graph:
            raise ValueError(f"{elem} must be from the same graph as {first}.")
    return graph if graph is not None else get_default_graph()


def name_scope(
    name: str | None, default_name: str | None = None, values: list | None = None
) -> contextlib.AbstractContextManager[str]:
    """Opens a name scope in the graph of ``values`` (TF1's ``tf.name_scope``).

    Enters the graph of ``values`` (or the default graph) and opens
    ``name`` (``default_name`` if ``name`` is None) in it; yields the scope
    string with a trailing ``/``.

    Args:
        name: The scope name (see `Graph.name_scope`).
        default_name: The name to use if ``name`` is None.
        values: The tensors passed to the op function; their graph is entered.

    Raises:
        ValueError: if ``values`` are given but neither ``name`` nor
            ``default_name``, if ``values`` come from different graphs, or if
            the name is not a valid scope name.
    """
    return _NameScopeBlock(name, default_name, values)


class _NameScopeBlock:
    """The block `name_scope` opens (a class: every op constructor opens one)."""

    __slots__ = ("_args", "_as_default", "_scope")

    def __init__(self, name: str | None, default_name: str | None, values: list | None):
        self._args = (name, default_name, values)

    def __enter__(self) -> str:
        name, default_name, values = self._args
        scope_name = default_name if name is None else name
        if scope_name is None and values is not None:
            raise ValueError(
                f"At least one of name ({name}) and default_name ({default_name}) must be provided."
            )
        graph = _get_graph_from_inputs(values)
        self._as_default = graph.as_default()
        self._scope = graph.name_scope(scope_name)
        self._as_default.__enter__()
        try:
            return self._scope.__enter__()
        except BaseException:
            self._as_default.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info) -> None:
        self._scope.__exit__(*exc_info)
        self._as_default.__exit__(*exc_info)


def device(device_name_or_function: str | pydev.DeviceSpec | Callable | None):
    """``tf.device``: a context manager for the default graph's device stack.

    Args:
        device_name_or_function: A device string, `DeviceSpec`, device function
            or None; see `Graph.device`.
    """
    return get_default_graph().device(device_name_or_function)


def colocate_with(op: Any, ignore_existing: bool = False):
    """``tf.colocate_with``: places new ops in the block with ``op``.

    Args:
        op: The op (or tensor, or variable) to colocate with; see
            `Graph.colocate_with`.
        ignore_existing: Whether to drop the enclosing colocations.
    """
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs: Iterable[Operation | Tensor] | None):
    """``tf.control_dependencies``: new ops in the block depend on ``control_inputs``.

    Args:
        control_inputs: The ops or tensors to depend on, or None to clear the
            enclosing control dependencies; see `Graph.control_dependencies`.
    """
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name: str, value: Any) -> None:
    """Adds ``value`` to collection ``name`` of the default graph.

    Args:
        name: The collection's key.
        value: The value to add.
    """
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: str | Iterable[str], value: Any) -> None:
    """Adds ``value`` to each of the collections ``names`` of the default graph.

    Args:
        names: A collection key, or an iterable of them.
        value: The value to add.
    """
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list:
    """Returns a copy of collection ``key`` of the default graph.

    Args:
        key: The collection's key, e.g. ``tf.GraphKeys.GLOBAL_VARIABLES``.
        scope: If given, keep only the items whose ``name`` ``re.match``
            matches it.
    """
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    """Returns collection ``key`` of the default graph (mutable).

    Args:
        key: The collection's key; an empty collection is created if needed.
    """
    return get_default_graph().get_collection_ref(key)
