"""``GraphDef`` in protobuf's bytes: the graph as TensorBoard's graph dashboard reads it.

minitf exports graphs as JSON (`minitf.framework.meta_graph`); an event
file needs TF's binary ``GraphDef`` instead. Field numbers from
``tensorflow/core/framework/graph.proto``, ``node_def.proto``,
``attr_value.proto`` and ``versions.proto``::

    message GraphDef { repeated NodeDef node = 1; VersionDef versions = 4; }
    message NodeDef { string name = 1; string op = 2; repeated string input = 3;
                      string device = 4; map<string, AttrValue> attr = 5; }
    message AttrValue { oneof value { ListValue list = 1; bytes s = 2; int64 i = 3;
                                      float f = 4; bool b = 5; DataType type = 6;
                                      TensorShapeProto shape = 7; TensorProto tensor = 8; } }
    message ListValue { repeated bytes s = 2; repeated int64 i = 3; repeated float f = 4;
                        repeated bool b = 5; repeated DataType type = 6;
                        repeated TensorShapeProto shape = 7; repeated TensorProto tensor = 8; }
    message VersionDef { int32 producer = 1; int32 min_consumer = 2; }

`graph_def_from_graph` converts a minitf graph, with each op's output
shapes in ``_output_shapes`` as TF's ``as_graph_def(add_shapes=True)`` adds
them. Attr values with no ``AttrValue`` form (``None``, a dict, a Python
callable of a ``py_func``) are left out: TensorBoard only draws the graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.proto_message import (
    BYTES,
    FLOAT,
    INT64,
    Message,
    MessageMapField,
    RepeatedMessage,
    RepeatedScalar,
    SubMessage,
)
from minitf.framework.proto_scalar import BOOL, STRING, ScalarField, single
from minitf.framework.tensor_pb2 import (
    DATA_TYPE,
    TensorProto,
    TensorShapeProto,
    make_shape_proto,
    make_tensor_proto,
)
from minitf.framework.versions import GRAPH_DEF_VERSION

__all__ = ["AttrValue", "GraphDef", "NodeDef", "VersionDef", "graph_def_from_graph"]


class _ListValue(Message):
    """A list attr: one of its lists is used (``s``, ``i``, ``f``, ``b``, ``type``, ...)."""

    FULL_NAME = "tensorflow.AttrValue.ListValue"
    FIELDS = (
        RepeatedScalar("s", 2, BYTES),
        RepeatedScalar("i", 3, INT64),
        RepeatedScalar("f", 4, FLOAT),
        RepeatedScalar("b", 5, BOOL),
        RepeatedScalar("type", 6, INT64),
        RepeatedMessage("shape", 7, TensorShapeProto),
        RepeatedMessage("tensor", 8, TensorProto),
    )


class AttrValue(Message):
    """An attr's value: one of ``list``, ``s``, ``i``, ``f``, ``b``, ``type``, ``shape``,
    ``tensor``."""

    FULL_NAME = "tensorflow.AttrValue"
    ListValue = _ListValue
    FIELDS = (
        SubMessage("list", 1, _ListValue, oneof="value"),
        ScalarField("s", 2, single("bytes"), oneof="value"),
        ScalarField("i", 3, single("int64"), oneof="value"),
        ScalarField("f", 4, single("float"), oneof="value"),
        ScalarField("b", 5, single("bool"), oneof="value"),
        ScalarField("type", 6, DATA_TYPE, oneof="value"),
        SubMessage("shape", 7, TensorShapeProto, oneof="value"),
        SubMessage("tensor", 8, TensorProto, oneof="value"),
    )


class NodeDef(Message):
    """One node: ``name``, ``op``, ``input`` (``"x:1"``, ``"^ctrl"``), ``device``, ``attr``."""

    FULL_NAME = "tensorflow.NodeDef"
    FIELDS = (
        ScalarField("name", 1, single("string")),
        ScalarField("op", 2, single("string")),
        RepeatedScalar("input", 3, STRING),
        ScalarField("device", 4, single("string")),
        MessageMapField("attr", 5, AttrValue),
    )


class VersionDef(Message):
    """The graph format's version: ``producer`` and ``min_consumer``."""

    FULL_NAME = "tensorflow.VersionDef"
    FIELDS = (
        ScalarField("producer", 1, single("int32")),
        ScalarField("min_consumer", 2, single("int32")),
    )


class GraphDef(Message):
    """A graph: its ``node``\\ s and ``versions``."""

    FULL_NAME = "tensorflow.GraphDef"
    FIELDS = (RepeatedMessage("node", 1, NodeDef), SubMessage("versions", 4, VersionDef))


def _kind(value: Any) -> str | None:
    """Which ``AttrValue`` field holds ``value`` (None: none does)."""
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, (int, np.integer)):
        return "i"
    if isinstance(value, (float, np.floating)):
        return "f"
    if isinstance(value, (str, bytes)):
        return "s"
    if isinstance(value, dtypes.DType):
        return "type"
    if isinstance(value, tensor_shape.TensorShape):
        return "shape"
    if isinstance(value, np.ndarray):
        return "tensor"
    return None


def _field_value(kind: str, value: Any) -> Any:
    if kind == "s":
        return value.encode() if isinstance(value, str) else value
    if kind == "type":
        return value.as_datatype_enum
    if kind == "shape":
        return make_shape_proto(None if value.dims is None else value.as_list())
    if kind == "tensor":
        return make_tensor_proto(value)
    return value.item() if isinstance(value, np.generic) else value


def attr_value(value: Any) -> AttrValue | None:
    """``value`` (an op's attr) as an `AttrValue`, or None if it has no such form."""
    if isinstance(value, (list, tuple)):
        kinds = {_kind(v) for v in value}
        if len(kinds) > 1 or None in kinds:
            return None
        listed = AttrValue(list={})
        for kind in kinds:
            getattr(listed.list, kind).extend(_field_value(kind, v) for v in value)
        return listed
    kind = _kind(value)
    if kind is None:
        return None
    try:
        return AttrValue(**{kind: _field_value(kind, value)})
    except (TypeError, ValueError):  # e.g. an array of Python objects that are not strings
        return None


def _node_def(op: ops.Operation) -> NodeDef:
    node_def = op.node_def
    node = NodeDef(name=node_def["name"], op=node_def["op"], input=node_def["input"])
    node.device = node_def["device"] or ""
    for key, value in node_def["attr"].items():
        converted = attr_value(value)
        if converted is not None:
            node.attr[key].CopyFrom(converted)
    if op.outputs:
        shapes = [t.get_shape() for t in op.outputs]
        node.attr["_output_shapes"].CopyFrom(attr_value(shapes))
    return node


def graph_def_from_graph(graph: ops.Graph) -> GraphDef:
    """``graph`` as a `GraphDef` (ops in creation order, output shapes in ``_output_shapes``)."""
    graph_def = GraphDef(versions=VersionDef(producer=GRAPH_DEF_VERSION, min_consumer=0))
    for op in graph.get_operations():
        graph_def.node.append(_node_def(op))
    return graph_def
