"""Graphviz DOT text for a graph: the whole graph, one task, or a step's partitions.

Only text is produced here (no system dependency; `minitf.viz.render` runs
``dot``). Every view draws the same things:

* clusters per job, task and device, and inside them a dashed cluster per
  name scope (or, with ``collapse=``, one folder node per name scope and task);
* nodes filled and shaped by role (`minitf.viz.graph_data.op_role`), with a
  legend;
* a cluster per ``tf.while_loop`` frame (nested loops nested), its
  ``NextIteration`` → ``Merge`` back edge bold;
* data edges labelled with dtype and shape, control edges dashed, a dotted
  grey line from an op to the op it is colocated with (and an ``@w`` line in
  its label);
* in one task's picture, a dashed stub per tensor that comes from or goes to
  another task, naming the tensor and that task (``peers=True``);
* with ``slide=True``, a layout that fits a 1920x1080 slide
  (`minitf.viz.dot_text.emit`);
* a tooltip per node (shown when the mouse is over it in SVG): the requested
  device, the assigned device and what decided it (``op.device_assignments``);
* outlines for ops a step has done, is running or is blocked in
  (``highlight=``, see `highlight_from_trace`).

In the partitioned view each task's partition is its own cluster and every
``_Send``/``_Recv`` pair (both titled by the tensor they carry) is joined by a
bold edge labelled with its dtype, shape and size.

This module decides what a picture shows; `minitf.viz.dot_text` writes it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable

import numpy as np

from minitf.framework import device as pydev
from minitf.framework import ops
from minitf.runtime.distributed import partition as partition_lib
from minitf.runtime.distributed.partition_loops import CONTROL_LOOP
from minitf.viz.dot_text import (
    PEER,
    Edge,
    Node,
    Slide,
    emit,
    highlight_from_trace,
    place_name,
)
from minitf.viz.graph_data import loop_frames, op_role

__all__ = [
    "graph_dot",
    "task_dot",
    "partitioned_dot",
    "partition_summary",
    "running_steps_dot",
    "smallest_cluster",
    "highlight_from_trace",
]


_UNPLACED = "(assigned when a session runs it)"


def _tensor_label(dtype, shape) -> str:
    """``"float32 [?,3]"`` from a dtype and a `TensorShape` (or None)."""
    name = getattr(dtype, "name", str(dtype))
    if shape is None or shape.ndims is None:
        return f"{name} <unknown>"
    return f"{name} [{','.join('?' if d is None else str(d) for d in shape.as_list())}]"


def _where(device: str) -> tuple[str, str, str]:
    """The ``(job, task, device)`` clusters of a device string ("" where it says nothing)."""
    spec = pydev.DeviceSpec.from_string(device)
    job = spec.job or "(no job)"
    task = "" if spec.task is None else f"task:{spec.task}"
    kind = ""
    if spec.device_type:
        index = "*" if spec.device_index is None else spec.device_index
        kind = f"{spec.device_type.upper()}:{index}"
    return job, task, kind


def _colocated_with(op: ops.Operation) -> list[str]:
    """The ops ``op`` is colocated with, other than itself (``loc:@w`` → ``w``)."""
    own = f"loc:@{op.name}".encode()
    return [g.decode()[len("loc:@") :] for g in op.colocation_groups() if g != own]


def _placement_lines(op: ops.Operation, assigned: str | None) -> list[str]:
    """The tooltip lines saying where ``op`` goes and what decided it."""
    lines = [
        f"requested device: {op.device or '(none)'}",
        f"assigned device: {assigned or _UNPLACED}",
    ]
    chain = op.device_assignments
    if not chain:
        decided = "(not recorded)" if op.device else "nothing: it runs on the session's task"
        return lines + [f"placed by {decided}"]
    lines.append(f"placed by {chain[-1][0]}")
    lines.append("device chain:")
    lines += [f"  {i}. {source} -> {device}" for i, (source, device) in enumerate(chain, 1)]
    return lines


def _op_node(op: ops.Operation, where, assigned: str | None) -> Node:
    colocated = tuple(_colocated_with(op))
    lines = [f"{op.name} ({op.type})", *_placement_lines(op, assigned)]
    if colocated:
        lines.append("colocated with: " + ", ".join(colocated))
    marks = ()
    shared = _shared_name(op)
    if shared:
        # Shared resources are found by this name on their task (the one every
        # replica's graph uses), so it is what a reader looks for.
        lines.append(f"shared_name: {shared}")
        marks = (f"shared: {shared}",)
    tooltip = "\n".join(lines)
    return Node(op.name, op.type, op_role(op.type), where, tooltip, marks, colocated=colocated)


def _shared_name(op: ops.Operation) -> str:
    """The ``shared_name`` of a resource op (a queue, an accumulator), or ""."""
    try:
        value = op.get_attr("shared_name")
    except ValueError:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value or "")


def _colocation_edges(op: ops.Operation, shown: set[str]) -> list[Edge]:
    """Lines from ``op`` to the shown ops it is colocated with."""
    return [Edge(op.name, c, "colocation") for c in _colocated_with(op) if c in shown]


def _op_edges(op: ops.Operation, shown: set[str]) -> list[Edge]:
    """The edges into ``op`` from shown ops, and its colocation lines."""
    edges = [
        Edge(
            t.op.name,
            op.name,
            _data_kind(t.op.type, op.type),
            _tensor_label(t.dtype, t.get_shape()),
        )
        for t in op.inputs
        if t.op.name in shown
    ]
    edges += [Edge(c.name, op.name, "control") for c in op.control_inputs if c.name in shown]
    return edges + _colocation_edges(op, shown)


def _data_kind(source_type: str, target_type: str) -> str:
    """``"back"`` for a loop's back edge (``NextIteration`` → ``Merge``), else ``"data"``."""
    back = source_type in ("NextIteration", "RefNextIteration") and target_type == "Merge"
    return "back" if back else "data"


def _assigned_devices(graph, cluster, default_job, default_task) -> dict:
    """What a session on ``default_job:default_task`` would place each op on, if known."""
    if cluster is None:
        return {}
    return partition_lib.place(graph.get_operations(), default_job, default_task, cluster)


def graph_dot(
    graph: ops.Graph,
    ops_to_show: Iterable[ops.Operation] | None = None,
    highlight: dict | Iterable[str] | None = None,
    collapse: int | str | Collection[str] | None = None,
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
    slide: bool | Slide = False,
) -> str:
    """DOT text of ``graph`` (or of ``ops_to_show``), clustered by job and task.

    With ``cluster``, each op is drawn where a session would place it (its
    requested device, completed by the session's task, or its colocation
    group's); without, where it asked to be.

    Args:
        graph: The graph.
        ops_to_show: Only these ops (default: all).
        highlight: Outlines: ``{op name: "done" | "running" | "blocked"}``, a
            set of op names (all "done"), or a traced step's ``step_stats``.
        collapse: Fold name scopes: a depth (``1`` folds ``layer1/...`` into
            ``layer1``) or a list of scopes.
        cluster: ``{job: number of tasks}``; when given, ops are drawn on the
            device a session on ``default_job``/``default_task`` would assign.
        default_job: That session's job.
        default_task: That session's task index.
        slide: Lay the picture out for a 1920x1080 slide: True, or a
            `minitf.viz.dot_text.Slide` with its rank direction and line width
            (see `minitf.viz.dot_text.emit`).

    Returns:
        The DOT text.

    Raises:
        InvalidArgumentError: if ``cluster`` is given and an op asks for a device
            it does not have (the error a session would raise).
    """
    shown_ops = list(ops_to_show) if ops_to_show is not None else graph.get_operations()
    assigned = _assigned_devices(graph, cluster, default_job, default_task)
    nodes, edges = _nodes_and_edges(shown_ops, assigned)
    return emit(nodes, edges, highlight, collapse, slide)


def _nodes_and_edges(shown_ops, assigned: dict) -> tuple[list[Node], list[Edge]]:
    """A node per op and the edges between them, each op where ``assigned`` (or it) says."""
    shown = {op.name for op in shown_ops}
    frames = loop_frames(shown_ops[0].graph) if shown_ops else {}
    nodes, edges = [], []
    for op in shown_ops:
        node = _op_node(op, _where(assigned.get(op) or op.device), assigned.get(op))
        node.frames = frames.get(op.name, ())
        nodes.append(node)
        edges += _op_edges(op, shown)
    return nodes, edges


def task_dot(
    graph: ops.Graph,
    task: str,
    highlight: dict | Iterable[str] | None = None,
    collapse: int | str | Collection[str] | None = None,
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
    peers: bool = False,
    slide: bool | Slide = False,
) -> str:
    """DOT text of the ops of one task (``"/job:ps/task:0"``).

    Args:
        graph: The graph.
        task: The task (a job alone shows all of its tasks).
        highlight: Outlines, as in `graph_dot`.
        collapse: Name scopes to fold, as in `graph_dot`.
        cluster: As in `graph_dot`: when given, the ops a session on
            ``default_job``/``default_task`` would place on ``task``; without,
            the ops that ask for it.
        default_job: That session's job.
        default_task: That session's task index.
        peers: Also draw where the task's edges to other tasks lead: a dashed
            stub per tensor that comes from another task (``from
            /job:worker/task:0``) and per tensor and task it goes to, named by
            the tensor (``^op`` for a control edge). `minitf.viz.pictures`
            draws them.
        slide: As in `graph_dot`.

    Returns:
        The DOT text.
    """
    want = pydev.DeviceSpec.from_string(task)
    assigned = _assigned_devices(graph, cluster, default_job, default_task)
    shown = []
    for op in graph.get_operations():
        spec = pydev.DeviceSpec.from_string(assigned.get(op) or op.device)
        if spec.job == want.job and (want.task is None or spec.task == want.task):
            shown.append(op)
    nodes, edges = _nodes_and_edges(shown, assigned)
    if peers:
        stubs, stub_edges = _peer_stubs(shown, assigned)
        nodes, edges = nodes + stubs, edges + stub_edges
    return emit(nodes, edges, highlight, collapse, slide)


def _task_of(op: ops.Operation, assigned: dict) -> str:
    """``/job:worker/task:0``: the task an op is drawn on (its job alone if it names no task)."""
    job, task, _ = _where(assigned.get(op) or op.device)
    return place_name((job, task, ""))


def _peer_stubs(shown, assigned: dict) -> tuple[list[Node], list[Edge]]:
    """Stubs for the edges between ``shown`` ops and ops of other tasks, and those edges.

    One stub per other task and direction (``from /job:worker/task:0``, ``to
    ...``), with a row per tensor (``^op`` for a control edge) that crosses;
    each edge ends at its tensor's row.
    """
    names = {op.name for op in shown}
    rows: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)  # stub: {text: port}
    tips: dict[tuple[str, str], list[str]] = defaultdict(list)
    edges = []

    def port(direction: str, peer: str, text: str, tip: str) -> tuple[str, str]:
        found = rows[direction, peer]
        if text not in found:
            found[text] = f"p{len(found)}"
            tips[direction, peer].append(tip)
        return f"{direction} {peer}", found[text]

    waiting = defaultdict(list)  # op -> the ops with a control edge from it
    for consumer in shown[0].graph.get_operations() if shown else []:
        for c in consumer.control_inputs:
            waiting[c].append(consumer)
    for op in shown:
        for t in op.inputs:
            if t.op.name not in names:
                peer = _task_of(t.op, assigned)
                key, row = port("from", peer, t.name, f"{t.name} ({t.op.type}) -> {op.name}")
                label = _tensor_label(t.dtype, t.get_shape())
                edges.append(Edge(key, op.name, "peer", label, source_port=row))
        for c in op.control_inputs:
            if c.name not in names:
                peer = _task_of(c, assigned)
                key, row = port("from", peer, "^" + c.name, f"^{c.name} ({c.type}) -> {op.name}")
                edges.append(Edge(key, op.name, "peer_control", source_port=row))
        for t in op.outputs:
            for consumer in t.consumers():
                if consumer.name not in names:
                    peer = _task_of(consumer, assigned)
                    key, row = port("to", peer, t.name, f"{t.name} -> {consumer.name}")
                    label = _tensor_label(t.dtype, t.get_shape())
                    edges.append(Edge(op.name, key, "peer", label, target_port=row))
        for consumer in waiting[op]:
            if consumer.name not in names:
                peer = _task_of(consumer, assigned)
                key, row = port("to", peer, "^" + op.name, f"^{op.name} -> {consumer.name}")
                edges.append(Edge(op.name, key, "peer_control", target_port=row))
    stubs = []
    for (direction, peer), found in rows.items():
        tooltip = "\n".join([f"{direction} {peer}:", *tips[direction, peer]])
        stubs.append(
            Node(
                f"{direction} {peer}",
                "",
                PEER,
                ("", "", ""),
                tooltip,
                title=f"{direction} {peer}",
                rows=tuple((p, t) for t, p in found.items()),
            )  # fmt: skip
        )
    return stubs, edges


def smallest_cluster(
    ops_: Iterable[ops.Operation], default_job: str = "worker", default_task: int = 0
) -> dict[str, int]:
    """``{job: number of tasks}``: the smallest cluster the ops' devices and the session fit in.

    A real cluster may have more tasks; that changes nothing for these ops.

    Args:
        ops_: The ops.
        default_job: The session's job.
        default_task: The session's task index.

    Returns:
        The number of tasks of each job.
    """
    tasks = {default_job: default_task + 1}
    for op in ops_:
        spec = pydev.DeviceSpec.from_string(op.device)
        if spec.job:
            tasks[spec.job] = max(tasks.get(spec.job, 0), (spec.task or 0) + 1)
    return tasks


def _step_partitions(fetches, targets, feeds, cluster, default_job, default_task) -> dict:
    """``{task: Partition}`` of one step, placed as a session on the default task would."""
    if cluster is None:
        cluster = lambda ops_: smallest_cluster(ops_, default_job, default_task)  # noqa: E731
    parts, _ = partition_lib.partition_step(
        fetches, targets, feeds, cluster, default_job, default_task
    )
    return parts


def partition_summary(
    fetches: Iterable[ops.Tensor],
    targets: Iterable[ops.Operation] = (),
    feeds: Iterable[ops.Tensor] = (),
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
) -> dict:
    """How a step splits: ``{"tasks": {task: number of nodes}, "sendrecv_pairs": n}``.

    Args:
        fetches: The tensors the step fetches.
        targets: The ops the step runs.
        feeds: The tensors the step feeds.
        cluster: ``{job: number of tasks}`` (default: from the ops' devices).
        default_job: The session's job.
        default_task: The session's task index.

    Returns:
        The number of nodes of each task's partition and of Send/Recv pairs.
    """
    parts = _step_partitions(
        list(fetches), list(targets), list(feeds), cluster, default_job, default_task
    )
    sends = sum(n.op == partition_lib.SEND for p in parts.values() for n in p.nodes)
    return {"tasks": {t: len(p.nodes) for t, p in parts.items()}, "sendrecv_pairs": sends}


def _added_node_tooltip(node, feeds: dict[str, str]) -> str:
    """The tooltip of a node that partitioning added (no op of the graph has its name)."""
    lines = [f"{node.name} ({node.op})", "added by partitioning", f"device: {node.device}"]
    if node.op == partition_lib.SEND:
        lines.append(f"sends to {node.attrs['recv_task']}")
    elif node.op == partition_lib.RECV:
        lines.append(f"receives from {node.attrs['send_task']}")
    elif node.name.startswith(CONTROL_LOOP):
        lines.append("a copy of its loop's control: it runs once per iteration of the loop")
    else:
        lines.append(f"holds the value the client feeds for {feeds.get(node.name, '?')}")
    if "tensor_name" in node.attrs:
        lines.append(f"rendezvous key: {node.attrs['tensor_name']}")
    return "\n".join(lines)


def _added_node_title(node, feeds: dict[str, str]) -> str:
    """What a Send, Recv or feed node carries: ``"w1/read:0"`` (``"^w1/Assign"`` for control)."""
    if "tensor_name" in node.attrs:
        return node.attrs["tensor_name"].rsplit(";", 1)[-1]
    if node.name.startswith(CONTROL_LOOP):
        return "control loop"
    return feeds.get(node.name, node.name) + " (fed)"


def _partition_keys(parts: dict) -> dict[tuple[str, str], str]:
    """A unique name per ``(task, node name)``: ``_recv/`` and ``_feed/`` names repeat."""
    counts = Counter(node.name for part in parts.values() for node in part.nodes)
    keys = {}
    for task, part in parts.items():
        for node in part.nodes:
            where = place_name(_where(node.device))
            keys[(task, node.name)] = (
                node.name if counts[node.name] == 1 else f"{node.name} on {where}"
            )
    return keys


def _partition_node(node, key: str, graph_ops: dict, feeds: dict) -> Node:
    where = _where(node.device)
    op = graph_ops.get(node.name)
    if op is not None and op.type == node.op:
        return _op_node(op, where, node.device)
    tooltip = _added_node_tooltip(node, feeds)
    title = _added_node_title(node, feeds)
    detail = ""
    if node.op == partition_lib.SEND:
        detail = "to " + place_name(_where(node.attrs["recv_task"])[:2] + ("",))
    elif node.op == partition_lib.RECV:
        detail = "from " + place_name(_where(node.attrs["send_task"])[:2] + ("",))
    role = op_role(node.op)
    return Node(node.name, node.op, role, where, tooltip, title=title, key=key, detail=detail)


def _partition_edges(part, keys: dict, graph_ops: dict, shown: set[str]) -> list[Edge]:
    """The data, control and colocation edges inside one partition."""
    producers = {node.name: node for node in part.nodes}
    edges = []
    for node in part.nodes:
        key = keys[(part.task, node.name)]
        for src, index in node.inputs:
            label = _tensor_label(producers[src].dtypes[index], producers[src].shapes[index])
            kind = _data_kind(producers[src].op, node.op)
            edges.append(Edge(keys[(part.task, src)], key, kind, label))
        edges += [Edge(keys[(part.task, c)], key, "control") for c in node.control_inputs]
        op = graph_ops.get(node.name)
        edges += _colocation_edges(op, shown) if op is not None else []
    return edges


def _sendrecv_edge(send: str, recv_key: str, tensor_name: str, dtype, shape) -> Edge:
    """The bold edge of a Send/Recv pair: dtype, shape and size (both ends name the tensor)."""
    if tensor_name.rsplit(";", 1)[-1].startswith("^"):
        return Edge(send, recv_key, "sendrecv", "control")
    label = _tensor_label(dtype, shape)
    if shape.is_fully_defined():
        label += f"\n{int(np.prod(shape.as_list())) * dtype.size} bytes"
    return Edge(send, recv_key, "sendrecv", label)


def partitioned_dot(
    graph: ops.Graph,
    fetches: Iterable[ops.Tensor],
    targets: Iterable[ops.Operation] = (),
    feeds: Iterable[ops.Tensor] = (),
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
    collapse: int | str | Collection[str] | None = None,
    highlight: dict | Iterable[str] | None = None,
    sendrecv: str = "nodes",
    slide: bool | Slide = False,
) -> str:
    """DOT text of the partitions one step would run on a cluster, with Send/Recv pairs.

    Args:
        graph: The graph (ops are looked up by name for their tooltips).
        fetches: The tensors the step fetches.
        targets: The ops the step runs.
        feeds: The tensors the step feeds.
        cluster: ``{job: number of tasks}`` (default: from the ops' devices).
        default_job: The session's job.
        default_task: The session's task index.
        collapse: Fold name scopes (as in `graph_dot`); Send/Recv ops stay visible.
        highlight: ``{node name: state}`` outlines (as in `graph_dot`).
        sendrecv: ``"nodes"`` draws each ``_Send`` and ``_Recv`` in its
            partition, joined by a bold edge; ``"edges"`` draws each pair as
            one bold edge from the producer to the consumers, labelled alike —
            half the boxes, for a projector.
        slide: As in `graph_dot`.

    Returns:
        The DOT text.

    Raises:
        ValueError: for another ``sendrecv``.
    """
    if sendrecv not in ("nodes", "edges"):
        raise ValueError(f"sendrecv must be 'nodes' or 'edges', got {sendrecv!r}")
    parts = _step_partitions(
        list(fetches), list(targets), list(feeds), cluster, default_job, default_task
    )
    graph_ops = {op.name: op for op in graph.get_operations()}
    frames = loop_frames(graph)
    keys = _partition_keys(parts)
    feeds_by_name = dict(f for part in parts.values() for f in part.feeds)
    shown = set(graph_ops) & {name for _, name in keys}
    nodes, edges, sends, recvs = [], [], [], {}
    for task, part in parts.items():
        for node in part.nodes:
            drawn = _partition_node(node, keys[(task, node.name)], graph_ops, feeds_by_name)
            drawn.frames = frames.get(node.name, ()) if node.name in graph_ops else ()
            nodes.append(drawn)
            if node.op == partition_lib.SEND:
                sends.append((keys[(task, node.name)], node))
            elif node.op == partition_lib.RECV:
                recvs[node.attrs["tensor_name"]] = (keys[(task, node.name)], node)
        edges += _partition_edges(part, keys, graph_ops, shown)
    for send_key, send in sends:
        recv_key, recv = recvs[send.attrs["tensor_name"]]
        edges.append(
            _sendrecv_edge(
                send_key, recv_key, recv.attrs["tensor_name"], recv.dtypes[0], recv.shapes[0]
            )
        )
    if sendrecv == "edges":
        nodes, edges = _transfers_as_edges(nodes, edges)
    return emit(nodes, edges, highlight, collapse, slide)


def _transfers_as_edges(nodes: list[Node], edges: list[Edge]) -> tuple[list, list]:
    """Each Send -> Recv pair replaced by edges from the producer to the consumers."""
    pairs = {e.source: e for e in edges if e.kind == "sendrecv"}
    recv_of = {e.target: e for e in pairs.values()}
    into = {}
    for e in edges:
        if e.target in pairs:
            into.setdefault(e.target, []).append(e)
    kept = [e for e in edges if e.source not in recv_of and e.target not in pairs
            and e.kind != "sendrecv"]  # fmt: skip
    for e in edges:
        pair = recv_of.get(e.source)
        if pair is None:
            continue
        for sent in into.get(pair.source, []):
            kind = "sendrecv" if e.kind == "data" else "sendrecv_control"
            kept.append(Edge(sent.source, e.target, kind, pair.label))
    moved = set(pairs) | set(recv_of)
    return [n for n in nodes if n.key not in moved], kept


def running_steps_dot(parts: list[dict], slide: bool | Slide = True) -> tuple[str, dict[str, str]]:
    """One picture of steps running on several tasks, each ``_Send`` joined to its ``_Recv``.

    The stepper's overview: a cluster per task and, where a task runs more
    than one step, a cluster per step in it. Each part is one step's
    partition on one task (the ops a task sends as ``step_graph``); parts of
    one step share its id, which pairs a ``_Send`` with the ``_Recv`` of the
    same tensor on another task.

    Args:
        parts: ``{"task", "label", "step_id", "graph", "ops", "prefix"}`` per
            step and task: the task's full name, the step's cluster label, its
            id, the `Graph` its ops were rebuilt in, the names of the step's
            own ops, and what each op's key starts with (keys must not repeat
            across parts).
        slide: As in `graph_dot` (True: scopes that only compute folded,
            repeated ops drawn as one box, a Send beside its Recv).

    Returns:
        ``(DOT text, {key: DOT id})``: the picture, and the box each op's key
        (its part's ``prefix`` + its name) is drawn in.
    """
    nodes, edges, sends, recvs = [], [], [], {}
    several = Counter(part["task"] for part in parts)
    for part in parts:
        job, task, _ = _where(part["task"])
        where = (job, task, part["label"] if several[part["task"]] > 1 else "")
        prefix, graph = part["prefix"], part["graph"]
        frames = loop_frames(graph)
        own = [graph.get_operation_by_name(name) for name in part["ops"]]
        shown = {op.name for op in own}
        for op in own:
            key = prefix + op.name
            if op.type in (partition_lib.SEND, partition_lib.RECV):
                nodes.append(_transfer_node(op, key, where))
                tensor = (part["step_id"], op.get_attr("tensor_name"))
                if op.type == partition_lib.SEND:
                    sends.append((key, tensor))
                else:
                    recvs[tensor] = (key, op)
            else:
                node = _op_node(op, where, op.device)
                node.key, node.frames = key, frames.get(op.name, ())
                nodes.append(node)
            for edge in _op_edges(op, shown):
                if edge.kind != "colocation":
                    edges.append(Edge(prefix + edge.source, key, edge.kind, edge.label))
    for send_key, tensor in sends:
        if tensor in recvs:
            recv_key, recv = recvs[tensor]
            out = recv.outputs[0]
            edges.append(_sendrecv_edge(send_key, recv_key, tensor[1], out.dtype, out.get_shape()))
    boxes: dict[str, str] = {}
    return emit(nodes, edges, slide=slide, boxes=boxes), boxes


def _transfer_node(op: ops.Operation, key: str, where) -> Node:
    """A ``_Send`` or ``_Recv`` rebuilt on its task: titled by the tensor it carries."""
    tensor = op.get_attr("tensor_name")
    title = tensor.rsplit(";", 1)[-1]
    if op.type == partition_lib.SEND:
        detail = "to " + place_name(_where(op.get_attr("recv_task"))[:2] + ("",))
    else:
        detail = "from " + place_name(_where(op.get_attr("send_task"))[:2] + ("",))
    tooltip = f"{op.name} ({op.type})\ncarries {title}\n{detail}"
    return Node(op.name, op.type, op_role(op.type), where, tooltip, title=title, key=key,
                detail=detail)  # fmt: skip
