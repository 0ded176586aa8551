"""Graph elements: the `Tensor` or `Operation` that an object or a name denotes in a graph.

``Session.run`` fetches, ``feed_dict`` keys, ``graph.get_tensor_by_name`` and
control inputs all go through `Graph.as_graph_element`: an op is named
``"name"``, a tensor ``"name:index"``, and an object with an
``_as_graph_element()`` method (a `Variable`) stands for what it returns. The
errors and their messages are TF's.
"""

from __future__ import annotations

from typing import Any

from minitf.framework.operation import Operation
from minitf.framework.tensor import Tensor


def find_element(
    graph, ops_by_name: dict[str, Operation], obj: Any, allow_tensor: bool, allow_operation: bool
) -> Tensor | Operation:
    """The Tensor or Operation of ``graph`` that ``obj`` (an object or a name) denotes.

    Args:
        graph: The graph to look in.
        ops_by_name: Its ops by name.
        obj: A `Tensor`, an `Operation`, their name, or an object with an
            ``_as_graph_element()`` method.
        allow_tensor: Whether ``obj`` may denote a Tensor.
        allow_operation: Whether ``obj`` may denote an Operation.

    Raises:
        TypeError: if ``obj`` cannot be converted to an allowed element.
        ValueError: if ``obj`` belongs to another graph, or a name is malformed.
        KeyError: if a name does not exist in the graph.
    """
    types_str = " or ".join(
        t for t, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok
    )
    conv = getattr(obj, "_as_graph_element", None)
    if conv is not None and callable(conv):
        obj = conv()
    if isinstance(obj, str):
        return _element_by_name(ops_by_name, obj, allow_tensor, allow_operation, types_str)
    if isinstance(obj, Tensor) and allow_tensor:
        if obj.graph is not graph:
            raise ValueError(f"Tensor {obj} is not an element of this graph.")
        return obj
    if isinstance(obj, Operation) and allow_operation:
        if obj.graph is not graph:
            raise ValueError(f"Operation {obj} is not an element of this graph.")
        return obj
    raise TypeError(f"Can not convert a {type(obj).__name__} into a {types_str}.")


def _element_by_name(ops_by_name, name, allow_tensor, allow_operation, types_str):
    if ":" in name and allow_tensor:
        return _tensor_by_name(ops_by_name, name)
    if ":" in name:
        raise ValueError(f"Name {name!r} appears to refer to a Tensor, not a {types_str}.")
    if not allow_operation:
        if name in ops_by_name:
            raise ValueError(
                f"The name {name!r} refers to an Operation, not a {types_str}. Tensor names "
                'must be of the form "<op_name>:<output_index>".'
            )
        raise ValueError(
            f"The name {name!r} looks like an (invalid) Operation name, not a {types_str}. "
            'Tensor names must be of the form "<op_name>:<output_index>".'
        )
    if name not in ops_by_name:
        raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
    return ops_by_name[name]


def _tensor_by_name(ops_by_name, name: str) -> Tensor:
    op_name, _, index = name.rpartition(":")
    try:
        out_n = int(index)
    except ValueError:
        raise ValueError(
            f"The name {name!r} looks a like a Tensor name, but is not a valid one. "
            'Tensor names must be of the form "<op_name>:<output_index>".'
        ) from None
    if op_name not in ops_by_name:
        raise KeyError(
            f"The name {name!r} refers to a Tensor which does not exist. "
            f"The operation, {op_name!r}, does not exist in the graph."
        )
    outputs = ops_by_name[op_name].outputs
    if out_n >= len(outputs):
        raise KeyError(
            f"The name {name!r} refers to a Tensor which does not exist. The operation, "
            f"{op_name!r}, exists but only has {len(outputs)} outputs."
        )
    return outputs[out_n]
