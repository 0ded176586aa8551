"""A graph as plain data: what renderers, exports and the teaching UI read.

`graph_to_dict` turns a `Graph` into JSON-able nodes and edges, each op with
its type, requested device, colocation groups, name scope and *role* — the
part it plays in parameter-server training, which the pictures colour and
shape by (`ROLE_COLORS`, `ROLE_SHAPES`):

========== ===========================================================
role       ops
========== ===========================================================
variable   ``VariableV2``, ``VarHandleOp`` (the state a ps holds)
accumulator the conditional accumulators and their ops
queue      ``FIFOQueueV2`` (and the other queues) and the queue ops
init       assignments of a whole value (``Assign``: a variable's initializer)
update     changes of a value: optimizer apply ops (``ApplyGradientDescent``,
           ...) and increments (``AssignAdd``: the global step's ``+1``)
sendrecv   ``_Send`` / ``_Recv`` (in partitioned graphs)
feed       placeholders
compute    everything else
========== ===========================================================

`to_networkx` gives the same as a ``networkx.DiGraph``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minitf.framework import ops

if TYPE_CHECKING:
    import networkx as nx

OKABE_ITO = (
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#009E73",  # bluish green
    "#F0E442",  # yellow
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#000000",  # black
)
"""Okabe and Ito's colour-blind-safe palette (https://jfly.uni-koeln.de/color/)."""

# Each role has a colour of the palette and a shape of its own, so that a
# picture still reads in greyscale or to a reader who cannot tell two hues apart.
ROLE_COLORS = {
    "variable": "#E69F00",
    "accumulator": "#CC79A7",
    "queue": "#F0E442",
    "init": "#009E73",
    "update": "#D55E00",
    "sendrecv": "#56B4E9",
    "feed": "#0072B2",
    "compute": "#FFFFFF",
}
"""The fill colour of each role, shared by the graph pictures and the timeline picture."""

ROLE_SHAPES = {
    "variable": "cylinder",
    "accumulator": "box3d",
    "queue": "component",
    "init": "note",
    "update": "hexagon",
    "sendrecv": "cds",
    "feed": "invhouse",
    "compute": "box",
}
"""The Graphviz node shape of each role in the graph pictures."""

ROLE_TEXT_COLORS = {"feed": "#FFFFFF"}
"""The text colour on a role's fill where black would be hard to read (default black)."""

_VARIABLE_OPS = {"VariableV2", "Variable", "VarHandleOp"}
_QUEUE_OPS = {
    "FIFOQueueV2",
    "RandomShuffleQueueV2",
    "PaddingFIFOQueueV2",
    "PriorityQueueV2",
    "QueueEnqueueV2",
    "QueueEnqueueManyV2",
    "QueueDequeueV2",
    "QueueDequeueManyV2",
    "QueueDequeueUpToV2",
    "QueueCloseV2",
    "QueueSizeV2",
    "QueueIsClosedV2",
}
_INIT_OPS = {"Assign", "AssignVariableOp"}
# An increment changes a value, as an optimizer's apply does: the global
# step's `AssignAdd` is part of each update, not of the initialization.
_INCREMENT_OPS = {"AssignAdd", "AssignSub", "AssignAddVariableOp", "AssignSubVariableOp"}


def op_role(op_type: str) -> str:
    """The role of an op type, for colour and shape (see the module docstring).

    Args:
        op_type: The op's type, such as ``"ApplyAdam"``.

    Returns:
        A key of `ROLE_COLORS` and `ROLE_SHAPES`.
    """
    if op_type in _VARIABLE_OPS:
        return "variable"
    if "Accumulator" in op_type:
        return "accumulator"
    if op_type in _QUEUE_OPS:
        return "queue"
    if op_type in ("_Send", "_Recv"):
        return "sendrecv"
    if op_type in ("Placeholder", "PlaceholderWithDefault"):
        return "feed"
    if op_type.startswith(("Apply", "ResourceApply", "SparseApply", "ResourceSparseApply")):
        return "update"
    if op_type in _INCREMENT_OPS:
        return "update"
    if op_type in _INIT_OPS:
        return "init"
    return "compute"


def _tensor_desc(t: ops.Tensor) -> dict:
    shape = t.get_shape()
    return {
        "name": t.name,
        "dtype": t.dtype.name,
        "shape": None if shape.ndims is None else shape.as_list(),
    }


def graph_to_dict(graph: ops.Graph) -> dict:
    """The graph as JSON-able data: ``{"nodes": [...], "edges": [...]}``.

    A node: ``name``, ``type``, ``role``, ``device`` (requested), ``scope``
    (its name scope, "" at the top), ``colocation`` (groups other than its
    own) and ``outputs`` (name, dtype, shape). An edge: ``source``,
    ``target``, ``kind`` (``"data"`` or ``"control"``) and, for data edges,
    the ``tensor`` with its dtype and shape.

    Args:
        graph: The graph.

    Returns:
        The JSON-able dict.
    """
    nodes, edges = [], []
    for op in graph.get_operations():
        own = f"loc:@{op.name}".encode()
        nodes.append(
            {
                "name": op.name,
                "type": op.type,
                "role": op_role(op.type),
                "device": op.device,
                "scope": op.name.rpartition("/")[0],
                "colocation": [g.decode() for g in op.colocation_groups() if g != own],
                "outputs": [_tensor_desc(t) for t in op.outputs],
            }
        )
        for t in op.inputs:
            edges.append(
                {"source": t.op.name, "target": op.name, "kind": "data", **_tensor_desc(t)}
            )
        for c in op.control_inputs:
            edges.append({"source": c.name, "target": op.name, "kind": "control"})
    return {"nodes": nodes, "edges": edges}


def to_networkx(graph: ops.Graph) -> nx.DiGraph:
    """The graph as a ``networkx.DiGraph``: op attributes on nodes, tensors on edges.

    Several edges between two ops (two outputs used, or data plus control)
    are merged into one, listing every tensor in ``tensors``.

    Args:
        graph: The graph.

    Returns:
        The ``networkx.DiGraph``.
    """
    import networkx as nx

    data = graph_to_dict(graph)
    g = nx.DiGraph()
    for node in data["nodes"]:
        g.add_node(node["name"], **{k: v for k, v in node.items() if k != "name"})
    for edge in data["edges"]:
        key = (edge["source"], edge["target"])
        if g.has_edge(*key):
            attrs = g.edges[key]
        else:
            g.add_edge(*key, kinds=[], tensors=[])
            attrs = g.edges[key]
        if edge["kind"] not in attrs["kinds"]:
            attrs["kinds"].append(edge["kind"])
        if edge["kind"] == "data":
            attrs["tensors"].append(
                {"name": edge["name"], "dtype": edge["dtype"], "shape": edge["shape"]}
            )
    return g


LOOP_CONTROL_TYPES = frozenset(
    {"Enter", "RefEnter", "Merge", "Switch", "LoopCond", "NextIteration", "RefNextIteration",
     "Exit", "RefExit"}
)  # fmt: skip
"""The op types that wire a ``tf.while_loop``'s cycle: a picture never folds them into a scope."""


def loop_frames(graph: ops.Graph) -> dict[str, tuple[tuple[str, int], ...]]:
    """The loop frames each op of ``graph`` is drawn in: ``{op name: ((frame, parallel), ...)}``.

    Worked out from the dataflow, as TF's executor does (so it also holds for
    a partition rebuilt on its task, whose ops have no ``WhileContext``):
    an op is in the frame of its inputs; an ``Enter``'s consumers are in its
    ``frame_name``, a child of the ``Enter``'s own frame; an ``Exit``'s are
    in the parent frame. A picture draws an ``Enter`` in the frame it enters,
    beside the ``Exit`` that leaves it. Frames are outermost first, each with
    its ``parallel_iterations``; an op outside every loop has ``()``.

    Args:
        graph: The graph.
    """
    operations = graph.get_operations()
    consumers: dict[str, list[ops.Operation]] = {}
    for op in operations:
        for source in [t.op for t in op.inputs] + list(op.control_inputs):
            consumers.setdefault(source.name, []).append(op)
    frame_of: dict[str, tuple] = {}
    queue = [op for op in operations if not op.inputs and not op.control_inputs]
    for op in queue:
        frame_of[op.name] = ()
    while queue:
        op = queue.pop()
        out = _frames_after(op, frame_of[op.name])
        for consumer in consumers.get(op.name, []):
            if consumer.name not in frame_of:
                frame_of[consumer.name] = out
                queue.append(consumer)
    return {
        name: _frames_after(graph.get_operation_by_name(name), frames)
        if graph.get_operation_by_name(name).type in ("Enter", "RefEnter")
        else frames
        for name, frames in frame_of.items()
    }


def _frames_after(op: ops.Operation, frames: tuple) -> tuple:
    """The frames ``op``'s outputs are in, when ``op`` runs in ``frames``."""
    if op.type in ("Enter", "RefEnter"):
        return (*frames, (op.get_attr("frame_name"), op.get_attr("parallel_iterations")))
    if op.type in ("Exit", "RefExit"):
        return frames[:-1]
    return frames
