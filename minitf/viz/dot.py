"""Graphviz DOT text for a graph: the whole graph, one task, or a step's partitions.

Only text is produced here (no system dependency; `minitf.viz.render` runs
``dot``). Every view draws the same things:

* clusters per job, task and device, and inside them a dashed cluster per
  name scope (or, with ``collapse=``, one folder node per name scope and task);
* nodes filled by role (`minitf.viz.graph_data.op_role`), with a legend;
* data edges labelled with dtype and shape, control edges dashed, a dotted
  grey line from an op to the op it is colocated with (and an ``@w`` line in
  its label);
* a tooltip per node (shown when the mouse is over it in SVG): the requested
  device, the assigned device and what decided it (``op.device_assignments``);
* outlines for ops a step has done, is running or is blocked in
  (``highlight=``, see `highlight_from_trace`).

In the partitioned view each task's partition is its own cluster and every
``_Send``/``_Recv`` pair (both titled by the tensor they carry) is joined by a
bold edge labelled with its dtype, shape and size.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from minitf.framework import device as pydev
from minitf.framework import ops
from minitf.runtime import partition as partition_lib
from minitf.runtime.plan import prune, topological_order
from minitf.viz.graph_data import ROLE_COLORS, op_role

_HIGHLIGHTS = {
    "done": ', penwidth=3, color="#2a9d8f"',
    "running": ', penwidth=3, color="#e63946"',
    "blocked": ', penwidth=3, style="filled,dashed", color="#6a4c93"',
}
_STRENGTH = {"done": 1, "running": 2, "blocked": 3}

_EDGE_STYLES = {
    "data": "",
    "control": "style=dashed",
    "sendrecv": 'style=bold, penwidth=2, color="#219ebc", fontcolor="#023047"',
    # Drawn from the op colocated with to the colocated op, without weight: a
    # constraint=false line here is routed in zigzags across the scope clusters.
    "colocation": "style=dotted, color=grey55, dir=none, weight=0, minlen=0",
}

_CLUSTER_STYLES = {
    "job": 'style="rounded,filled"; fillcolor="#f1f3f5"; color="#adb5bd"; fontsize=18;',
    "task": 'style="rounded,filled"; fillcolor="#ffffff"; color="#495057"; fontsize=15;',
    "device": "style=rounded; color=grey70; fontcolor=grey40; fontsize=11;",
    "scope": 'style="dashed,rounded"; color=grey60; fontcolor=grey35; fontsize=11;',
}

_HEADER = [
    "digraph minitf {",
    "rankdir=TB; compound=true; newrank=true; nodesep=0.3; ranksep=0.45;",
    "fontname=Helvetica; fontsize=14; labeljust=l;",
    'node [fontname=Helvetica, fontsize=12, margin="0.12,0.04"];',
    "edge [fontname=Helvetica, fontsize=10, color=grey30];",
]

_UNPLACED = "(assigned when a session runs it)"
_ROLE_PRIORITY = ("variable", "accumulator", "queue", "update", "sendrecv", "init", "feed")
_NEVER_COLLAPSED = ("_send/", "_recv/", "_feed/")
_MAX_EDGE_LABELS = 3
_WRAP = 28


@dataclass
class _Node:
    """One box of a picture: an op, a partition node or a folded name scope.

    ``kind`` is the op type (or "(n ops)"), ``where`` its ``(job, task, device)``
    clusters, ``marks`` extra label lines, ``state`` its highlight, ``id`` its
    DOT name once folded, and ``title`` replaces its name in the label (nodes
    that partitioning added are titled by the tensor they carry). Edges name
    it by ``key``: its name, unless that repeats in another partition.
    """

    name: str
    kind: str
    role: str
    where: tuple[str, str, str]
    tooltip: str
    marks: tuple[str, ...] = ()
    state: str | None = None
    folded: bool = False
    id: str = ""
    title: str = ""
    key: str = ""

    def __post_init__(self):
        self.key = self.key or self.name


@dataclass(frozen=True)
class _Edge:
    """An edge between node keys; ``kind`` is a key of ``_EDGE_STYLES``."""

    source: str
    target: str
    kind: str
    label: str = ""


@dataclass
class _Cluster:
    """A job, task, device or name-scope cluster, and what it holds."""

    id: str
    label: str
    kind: str
    scope: str = ""
    nodes: list[_Node] = field(default_factory=list)
    children: dict[str, _Cluster] = field(default_factory=dict)


def _quote(text: str) -> str:
    """``text`` as a DOT string: quotes and backslashes escaped, newlines as ``\\n``."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


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


def _place_name(where: tuple[str, str, str]) -> str:
    """``("ps", "task:0", "CPU:0")`` → ``"/job:ps/task:0/device:CPU:0"``."""
    job, task, device = where
    parts = [] if job == "(no job)" else ["/job:" + job]
    parts += ["/" + task] if task else []
    parts += ["/device:" + device] if device else []
    return "".join(parts) or "(no device requested)"


def highlight_from_trace(step_stats: dict, running=(), blocked=()) -> dict[str, str]:
    """A ``highlight=`` dict from a traced step: every op it ran is "done".

    Args:
        step_stats: ``run_metadata.step_stats`` (or a `minitf.viz.Tracer`'s), the
            format of `minitf.runtime.step_stats`.
        running: Names of ops to mark "running" instead.
        blocked: Names of ops to mark "blocked" instead.

    Returns:
        ``{op name: "done" | "running" | "blocked"}``.
    """
    states = {}
    for dev in step_stats.get("dev_stats", []):
        for stats in dev.get("node_stats", []):
            states[stats["node_name"]] = "done"
    states.update(dict.fromkeys(running, "running"))
    states.update(dict.fromkeys(blocked, "blocked"))
    return states


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


def _op_node(op: ops.Operation, where, assigned: str | None) -> _Node:
    colocated = _colocated_with(op)
    lines = [f"{op.name} ({op.type})", *_placement_lines(op, assigned)]
    if colocated:
        lines.append("colocated with: " + ", ".join(colocated))
    marks = tuple("@" + name for name in colocated)
    shared = _shared_name(op)
    if shared:
        # Shared resources are found by this name on their task (the one every
        # replica's graph uses), so it is what a reader looks for.
        lines.append(f"shared_name: {shared}")
        marks = (f"shared: {shared}", *marks)
    return _Node(op.name, op.type, op_role(op.type), where, "\n".join(lines), marks)


def _shared_name(op: ops.Operation) -> str:
    """The ``shared_name`` of a resource op (a queue, an accumulator), or ""."""
    try:
        value = op.get_attr("shared_name")
    except ValueError:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value or "")


def _colocation_edges(op: ops.Operation, shown: set[str]) -> list[_Edge]:
    """Lines from ``op`` to the shown ops it is colocated with."""
    return [_Edge(op.name, c, "colocation") for c in _colocated_with(op) if c in shown]


def _op_edges(op: ops.Operation, shown: set[str]) -> list[_Edge]:
    """The edges into ``op`` from shown ops, and its colocation lines."""
    edges = [
        _Edge(t.op.name, op.name, "data", _tensor_label(t.dtype, t.get_shape()))
        for t in op.inputs
        if t.op.name in shown
    ]
    edges += [_Edge(c.name, op.name, "control") for c in op.control_inputs if c.name in shown]
    return edges + _colocation_edges(op, shown)


def _assigned_devices(graph, cluster, default_job, default_task) -> dict:
    """What a session on ``default_job:default_task`` would place each op on, if known."""
    if cluster is None:
        return {}
    return partition_lib.place(graph.get_operations(), default_job, default_task, cluster)


def graph_dot(
    graph: ops.Graph,
    ops_to_show=None,
    highlight=None,
    collapse=None,
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
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
        default_job, default_task: That session's task.

    Raises:
        InvalidArgumentError: if ``cluster`` is given and an op asks for a device
            it does not have (the error a session would raise).
    """
    shown_ops = list(ops_to_show) if ops_to_show is not None else graph.get_operations()
    shown = {op.name for op in shown_ops}
    assigned = _assigned_devices(graph, cluster, default_job, default_task)
    nodes, edges = [], []
    for op in shown_ops:
        nodes.append(_op_node(op, _where(assigned.get(op) or op.device), assigned.get(op)))
        edges += _op_edges(op, shown)
    return _emit(nodes, edges, highlight, collapse)


def task_dot(
    graph: ops.Graph,
    task: str,
    highlight=None,
    collapse=None,
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
) -> str:
    """DOT text of the ops of one task (``"/job:ps/task:0"``).

    Args:
        graph: The graph.
        task: The task (a job alone shows all of its tasks).
        highlight, collapse: As in `graph_dot`.
        cluster: As in `graph_dot`: when given, the ops a session on
            ``default_job``/``default_task`` would place on ``task``; without,
            the ops that ask for it.
        default_job, default_task: That session's task.
    """
    want = pydev.DeviceSpec.from_string(task)
    assigned = _assigned_devices(graph, cluster, default_job, default_task)
    shown = []
    for op in graph.get_operations():
        spec = pydev.DeviceSpec.from_string(assigned.get(op) or op.device)
        if spec.job == want.job and (want.task is None or spec.task == want.task):
            shown.append(op)
    return graph_dot(graph, shown, highlight, collapse, cluster, default_job, default_task)


def _step_partitions(fetches, targets, feeds, cluster, default_job, default_task) -> dict:
    """``{task: Partition}`` of one step, placed as a session on the default task would."""
    step_ops = topological_order(prune(fetches, targets, feeds), set(feeds))
    if cluster is None:
        cluster = {default_job: default_task + 1}
        for op in step_ops:
            spec = pydev.DeviceSpec.from_string(op.device)
            if spec.job:
                cluster[spec.job] = max(cluster.get(spec.job, 0), (spec.task or 0) + 1)
    devices = partition_lib.place(step_ops, default_job, default_task, cluster)
    return partition_lib.partition(step_ops, devices, fetches, targets, feeds)


def partition_summary(
    fetches,
    targets=(),
    feeds=(),
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
) -> dict:
    """How a step splits: ``{"tasks": {task: number of nodes}, "sendrecv_pairs": n}``.

    The arguments are those of `partitioned_dot` (without the graph).
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
    else:
        lines.append(f"holds the value the client feeds for {feeds.get(node.name, '?')}")
    if "tensor_name" in node.attrs:
        lines.append(f"rendezvous key: {node.attrs['tensor_name']}")
    return "\n".join(lines)


def _added_node_title(node, feeds: dict[str, str]) -> str:
    """What a Send, Recv or feed node carries: ``"w1/read:0"`` (``"^w1/Assign"`` for control)."""
    if "tensor_name" in node.attrs:
        return node.attrs["tensor_name"].rsplit(";", 1)[-1]
    return feeds.get(node.name, node.name) + " (fed)"


def _partition_keys(parts: dict) -> dict[tuple[str, str], str]:
    """A unique name per ``(task, node name)``: ``_recv/`` and ``_feed/`` names repeat."""
    counts = Counter(node.name for part in parts.values() for node in part.nodes)
    keys = {}
    for task, part in parts.items():
        for node in part.nodes:
            where = _place_name(_where(node.device))
            keys[(task, node.name)] = (
                node.name if counts[node.name] == 1 else f"{node.name} on {where}"
            )
    return keys


def _partition_node(node, key: str, graph_ops: dict, feeds: dict) -> _Node:
    where = _where(node.device)
    op = graph_ops.get(node.name)
    if op is not None and op.type == node.op:
        return _op_node(op, where, node.device)
    tooltip = _added_node_tooltip(node, feeds)
    title = _added_node_title(node, feeds)
    return _Node(node.name, node.op, op_role(node.op), where, tooltip, title=title, key=key)


def _partition_edges(part, keys: dict, graph_ops: dict, shown: set[str]) -> list[_Edge]:
    """The data, control and colocation edges inside one partition."""
    producers = {node.name: node for node in part.nodes}
    edges = []
    for node in part.nodes:
        key = keys[(part.task, node.name)]
        for src, index in node.inputs:
            label = _tensor_label(producers[src].dtypes[index], producers[src].shapes[index])
            edges.append(_Edge(keys[(part.task, src)], key, "data", label))
        edges += [_Edge(keys[(part.task, c)], key, "control") for c in node.control_inputs]
        op = graph_ops.get(node.name)
        edges += _colocation_edges(op, shown) if op is not None else []
    return edges


def _sendrecv_edge(send: str, recv_key: str, recv) -> _Edge:
    """The bold edge of a Send/Recv pair: dtype, shape and size (both ends name the tensor)."""
    if recv.attrs["tensor_name"].rsplit(";", 1)[-1].startswith("^"):
        return _Edge(send, recv_key, "sendrecv", "control")
    dtype, shape = recv.dtypes[0], recv.shapes[0]
    label = _tensor_label(dtype, shape)
    if shape.is_fully_defined():
        label += f"\n{int(np.prod(shape.as_list())) * dtype.size} bytes"
    return _Edge(send, recv_key, "sendrecv", label)


def partitioned_dot(
    graph: ops.Graph,
    fetches,
    targets=(),
    feeds=(),
    cluster: dict[str, int] | None = None,
    default_job: str = "worker",
    default_task: int = 0,
    collapse=None,
    highlight=None,
) -> str:
    """DOT text of the partitions one step would run on a cluster, with Send/Recv pairs.

    Args:
        graph: The graph (ops are looked up by name for their tooltips).
        fetches, targets, feeds: The step (tensors, ops, fed tensors).
        cluster: ``{job: number of tasks}`` (default: from the ops' devices).
        default_job, default_task: The session's task.
        collapse: Fold name scopes (as in `graph_dot`); Send/Recv ops stay visible.
        highlight: ``{node name: state}`` outlines (as in `graph_dot`).
    """
    parts = _step_partitions(
        list(fetches), list(targets), list(feeds), cluster, default_job, default_task
    )
    graph_ops = {op.name: op for op in graph.get_operations()}
    keys = _partition_keys(parts)
    feeds_by_name = dict(f for part in parts.values() for f in part.feeds)
    shown = set(graph_ops) & {name for _, name in keys}
    nodes, edges, sends, recvs = [], [], [], {}
    for task, part in parts.items():
        for node in part.nodes:
            nodes.append(_partition_node(node, keys[(task, node.name)], graph_ops, feeds_by_name))
            if node.op == partition_lib.SEND:
                sends.append((keys[(task, node.name)], node))
            elif node.op == partition_lib.RECV:
                recvs[node.attrs["tensor_name"]] = (keys[(task, node.name)], node)
        edges += _partition_edges(part, keys, graph_ops, shown)
    for send_key, send in sends:
        recv_key, recv = recvs[send.attrs["tensor_name"]]
        edges.append(_sendrecv_edge(send_key, recv_key, recv))
    return _emit(nodes, edges, highlight, collapse)


def _group_of(name: str, collapse) -> str | None:
    """The name scope ``name`` is folded into, or None to keep the op as it is.

    ``collapse`` is a depth (fold everything below that many name-scope levels)
    or a list of scopes to fold into one node each.
    """
    if collapse is None or name.startswith(_NEVER_COLLAPSED):
        return None
    if isinstance(collapse, int):
        parts = name.split("/")
        return "/".join(parts[:collapse]) if len(parts) > collapse else None
    for scope in collapse:
        if name.startswith(scope.rstrip("/") + "/"):
            return scope.rstrip("/")
    return None


def _strongest(states) -> str | None:
    return max((s for s in states if s in _STRENGTH), key=_STRENGTH.get, default=None)


def _folded_node(group: str, where, members: list[_Node], highlight: dict) -> _Node:
    """One folder node standing for ``members``, the ops of name scope ``group`` on one task."""
    roles = {m.role for m in members}
    role = next((r for r in _ROLE_PRIORITY if r in roles), "compute")
    counts = Counter(m.kind for m in members)
    lines = [f"name scope {group}/ on {_place_name(where)}, folded: {len(members)} ops"]
    lines += [f"  {kind} x {n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    state = _strongest(highlight.get(m.name) for m in members)
    kind = f"({len(members)} ops)"
    return _Node(group, kind, role, where, "\n".join(lines), state=state, folded=True)


def _fold(nodes: list[_Node], highlight: dict, collapse) -> tuple[list[_Node], dict[str, str]]:
    """The nodes after folding, and the node id each node key is drawn as.

    A name scope with a single op on a task is drawn as that op.
    """
    kept, members = [], defaultdict(list)
    for node in nodes:
        group = _group_of(node.name, collapse)
        if group is None:
            kept.append(node)
        else:
            members[(group, node.where)].append(node)
    for key in [key for key, group_nodes in members.items() if len(group_nodes) == 1]:
        kept += members.pop(key)
    for node in kept:
        node.id, node.state = node.key, highlight.get(node.name)
    drawn_as = {node.key: node.id for node in kept}
    places = Counter(group for group, _ in members)
    for (group, where), group_nodes in members.items():
        folded = _folded_node(group, where, group_nodes, highlight)
        ambiguous = places[group] > 1 or group in drawn_as
        folded.id = f"{group} on {_place_name(where)}" if ambiguous else group
        kept.append(folded)
        drawn_as.update((m.key, folded.id) for m in group_nodes)
    return kept, drawn_as


def _merge_edges(edges: list[_Edge], drawn_as: dict[str, str], folded: set[str]) -> list[_Edge]:
    """Edges between drawn nodes: self-loops dropped, parallel edges of one kind merged.

    Merged data edges list their distinct dtype/shape labels (at most a few). A
    colocation line is only drawn between two ops that no other edge joins
    already and that are not folded: the ``@`` mark in the label says the rest.
    """
    labels: dict[tuple[str, str, str], list[str]] = {}
    for edge in edges:
        a, b = drawn_as.get(edge.source), drawn_as.get(edge.target)
        if a is not None and b is not None and a != b:
            seen = labels.setdefault((a, b, edge.kind), [])
            if edge.label and edge.label not in seen:
                seen.append(edge.label)
    linked = {frozenset((a, b)) for a, b, kind in labels if kind != "colocation"}
    merged = []
    for (a, b, kind), found in labels.items():
        if kind == "colocation" and (frozenset((a, b)) in linked or {a, b} & folded):
            continue
        if len(found) > _MAX_EDGE_LABELS:
            found = found[: _MAX_EDGE_LABELS - 1] + [f"+{len(found) - _MAX_EDGE_LABELS + 1} more"]
        if kind == "colocation":
            linked.add(frozenset((a, b)))
            a, b = b, a
        merged.append(_Edge(a, b, kind, "\n".join(found)))
    return merged


def _scope_parent(node: _Node) -> str:
    """The name scope a drawn node sits in (a folded scope sits in its parent).

    Nodes that partitioning added sit outside the name scopes, on their device.
    """
    return "" if node.title else node.name.rpartition("/")[0]


def _cluster_tree(nodes: list[_Node]) -> _Cluster:
    """Job → task → device → name-scope clusters holding the nodes."""
    root = _Cluster("root", "", "root")
    for node in nodes:
        job, task, device = node.where
        where = root.children.setdefault(
            job, _Cluster("cluster_" + job, _place_name((job, "", "")), "job")
        )
        for kind, key in (("task", task), ("device", device)):
            if key:
                label = _place_name(node.where[:2] + ("",)) if kind == "task" else key
                child = _Cluster(f"{where.id}_{key}", label, kind)
                where = where.children.setdefault(key, child)
        scope = ""
        for part in filter(None, _scope_parent(node).split("/")):
            scope = f"{scope}/{part}" if scope else part
            child = _Cluster(f"{where.id}/{part}", part + "/", "scope", scope)
            where = where.children.setdefault(part, child)
        where.nodes.append(node)
    return root


def _size(cluster: _Cluster) -> int:
    return len(cluster.nodes) + sum(_size(c) for c in cluster.children.values())


def _simplify(cluster: _Cluster) -> None:
    """Dissolves scope clusters of one node and joins scope chains with nothing in between."""
    for key, child in list(cluster.children.items()):
        _simplify(child)
        if child.kind != "scope":
            continue
        if _size(child) < 2:
            del cluster.children[key]
            cluster.nodes += child.nodes  # its own sub-scopes were dissolved already
        elif not child.nodes and len(child.children) == 1:
            (only,) = child.children.values()
            only.label = child.label + only.label
            cluster.children[key] = only


def _wrap(name: str, width: int = _WRAP) -> str:
    """Breaks a long name after its ``/`` so that boxes stay narrow."""
    lines = [""]
    for part in name.split("/"):
        piece = part if not lines[-1] else "/" + part
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines[-1] += "/"
            lines.append(part)
        else:
            lines[-1] += piece
    return "\n".join(lines)


def _node_line(node: _Node, scope: str) -> str:
    """A node statement; its label is its name relative to the scope cluster it is drawn in.

    The label's lines: the name (or title), the op type unless the name says it
    already, and the marks (``@w`` for colocation).
    """
    name = node.name[len(scope) + 1 :] if scope else node.name
    name = node.title or (name + "/" if node.folded else name)
    kind = [] if name.rsplit("/", 1)[-1] == node.kind else [node.kind]
    label = "\n".join([_wrap(name), *kind, *node.marks])
    fill = ROLE_COLORS.get(node.role, "#ffffff")
    shape = "folder" if node.folded else "box"
    extra = _HIGHLIGHTS.get(node.state, "") if node.state else ""
    return (
        f"{_quote(node.id)} [label={_quote(label)}, shape={shape}, style=filled, "
        f'fillcolor="{fill}", tooltip={_quote(node.tooltip)}{extra}];'
    )


def _cluster_lines(cluster: _Cluster) -> list[str]:
    lines = [f"subgraph {_quote(cluster.id)} {{", f"label={_quote(cluster.label)};"]
    lines.append(_CLUSTER_STYLES[cluster.kind])
    lines += [_node_line(node, cluster.scope) for node in cluster.nodes]
    for key in sorted(cluster.children):
        lines += _cluster_lines(cluster.children[key])
    return lines + ["}"]


def _edge_line(edge: _Edge) -> str:
    attrs = [_EDGE_STYLES[edge.kind]] if _EDGE_STYLES[edge.kind] else []
    if edge.label:
        attrs.append(f"label={_quote(edge.label)}")
    attr_text = f" [{', '.join(attrs)}]" if attrs else ""
    return f"{_quote(edge.source)} -> {_quote(edge.target)}{attr_text};"


def _legend(states: set[str]) -> list[str]:
    """A cluster of sample boxes: one per role, one per highlight state in use."""
    lines = ['subgraph "cluster_legend" {', 'label="legend"; fontsize=12; color=grey70;']
    for role, color in ROLE_COLORS.items():
        lines.append(
            f'"legend_{role}" [label="{role}", shape=box, style=filled, fillcolor="{color}"];'
        )
    for state in sorted(states, key=_STRENGTH.get):
        lines.append(
            f'"legend_{state}" [label="{state}", shape=box, style=filled, '
            f'fillcolor="#ffffff"{_HIGHLIGHTS[state]}];'
        )
    return lines + ["}"]


def _highlight_states(highlight) -> dict[str, str]:
    """``highlight=`` as ``{op name: state}``: a dict, op names (all "done") or a trace.

    Raises:
        ValueError: for a state other than "done", "running" or "blocked".
    """
    if not highlight:
        return {}
    if isinstance(highlight, dict) and "dev_stats" in highlight:
        return highlight_from_trace(highlight)
    if not isinstance(highlight, dict):
        return dict.fromkeys(highlight, "done")
    for name, state in highlight.items():
        if state not in _HIGHLIGHTS:
            raise ValueError(f"highlight[{name!r}] is {state!r}: use one of {sorted(_HIGHLIGHTS)}")
    return highlight


def _collapse_arg(collapse):
    """``collapse=`` checked: None, a depth of at least 1, or scope names (one string is one).

    Raises:
        ValueError: for a depth below 1.
        TypeError: for anything else.
    """
    if collapse is None or isinstance(collapse, list):
        return collapse
    if isinstance(collapse, bool) or not isinstance(collapse, (int, str, tuple, set)):
        raise TypeError(
            f"collapse must be a depth (int) or name scopes (a list of str), got {collapse!r}"
        )
    if isinstance(collapse, int):
        if collapse < 1:
            raise ValueError(f"collapse depth must be at least 1, got {collapse}")
        return collapse
    return [collapse] if isinstance(collapse, str) else list(collapse)


def _emit(nodes: list[_Node], edges: list[_Edge], highlight=None, collapse=None) -> str:
    """DOT text: ``nodes`` in their clusters (name scopes folded by ``collapse``) and ``edges``."""
    highlight = _highlight_states(highlight)
    collapse = _collapse_arg(collapse)
    drawn, drawn_as = _fold(nodes, highlight, collapse)
    root = _cluster_tree(drawn)
    _simplify(root)
    lines = list(_HEADER) + [_node_line(node, "") for node in root.nodes]
    for key in sorted(root.children):
        lines += _cluster_lines(root.children[key])
    lines += [
        _edge_line(edge)
        for edge in _merge_edges(edges, drawn_as, {n.id for n in drawn if n.folded})
    ]
    lines += _legend({node.state for node in drawn if node.state in _STRENGTH})
    return "\n".join(lines + ["}"]) + "\n"
