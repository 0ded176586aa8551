"""Graphviz DOT text for a graph: the whole graph, one task, or a step's partitions.

Only text is produced here (no system dependency): clusters per job and
task, nodes filled by role (`minitf.viz.graph_data.op_role`) with a legend,
data edges labelled with dtype and shape, control edges dashed. In the
partitioned view each task's partition is its own cluster and every
``_Send``/``_Recv`` pair is joined by a bold edge labelled with the tensor and
its size.
"""

from __future__ import annotations

from collections import defaultdict

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


def _quote(text: str) -> str:
    # Backslashes are kept: "\n" in a label is DOT's line break.
    return '"' + str(text).replace('"', '\\"') + '"'


def _shape_label(dtype: str, shape) -> str:
    if shape is None:
        return f"{dtype} <unknown>"
    return f"{dtype} [{','.join('?' if d is None else str(d) for d in shape)}]"


def _node_line(name: str, op_type: str, role: str, tooltip: str, highlight) -> str:
    fill = ROLE_COLORS.get(role, "#ffffff")
    extra = ""
    if highlight and name in highlight:
        state = highlight[name]
        extra = _HIGHLIGHTS.get(state, "")
    label = _quote(name + "\\n" + op_type)  # a DOT line break between name and type
    return (
        f"{_quote(name)} [label={label}, shape=box, "
        f'style=filled, fillcolor="{fill}", tooltip={_quote(tooltip)}{extra}];'
    )


def _legend() -> list[str]:
    lines = ['subgraph "cluster_legend" {', 'label="roles"; fontsize=10;']
    for role, color in ROLE_COLORS.items():
        lines.append(
            f'"legend_{role}" [label="{role}", shape=box, style=filled, fillcolor="{color}"];'
        )
    lines.append("}")
    return lines


def _task_key(device: str) -> tuple[str, str]:
    spec = pydev.DeviceSpec.from_string(device)
    job = spec.job or "(no job)"
    task = "" if spec.task is None else f"task:{spec.task}"
    return job, task


def _clustered(nodes_by_task: dict, extra_lines: list[str]) -> str:
    lines = [
        "digraph minitf {",
        "rankdir=TB; compound=true; fontname=Helvetica;",
        "node [fontname=Helvetica, fontsize=10]; edge [fontname=Helvetica, fontsize=8];",
    ]
    by_job = defaultdict(dict)
    for (job, task), node_lines in nodes_by_task.items():
        by_job[job][task] = node_lines
    for job, tasks in sorted(by_job.items()):
        lines.append(f"subgraph {_quote('cluster_' + job)} {{ label={_quote('/job:' + job)};")
        for task, node_lines in sorted(tasks.items()):
            if task:
                lines.append(f"subgraph {_quote('cluster_' + job + '_' + task)} {{")
                lines.append(f"label={_quote(task)};")
            lines.extend(node_lines)
            if task:
                lines.append("}")
        lines.append("}")
    lines.extend(extra_lines)
    lines.extend(_legend())
    lines.append("}")
    return "\n".join(lines) + "\n"


_ROLE_PRIORITY = ("variable", "accumulator", "queue", "update", "sendrecv", "init", "feed")
_NEVER_COLLAPSED = ("_send/", "_recv/", "_feed/")


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


def _emit(nodes, edges, highlight=None, collapse=None) -> str:
    """DOT text from ``nodes`` ``(name, type, role, task key, tooltip)`` and
    ``edges`` ``(source, target, attributes)``, with name scopes folded by ``collapse``."""
    groups: dict[str, dict] = {}
    placed = defaultdict(list)
    where = {}
    for name, op_type, role, key, tooltip in nodes:
        group = _group_of(name, collapse)
        if group is None:
            where[name] = name
            placed[key].append(_node_line(name, op_type, role, tooltip, highlight))
            continue
        where[name] = group
        entry = groups.setdefault((group, key), {"count": 0, "roles": set()})
        entry["count"] += 1
        entry["roles"].add(role)
    for (group, key), entry in groups.items():
        role = next((r for r in _ROLE_PRIORITY if r in entry["roles"]), "compute")
        label = f"{group}/ ({entry['count']} ops)"
        placed[key].append(
            _node_line(group, label, role, f"name scope {group}, folded", None).replace(
                "shape=box", "shape=folder"
            )
        )
    lines, seen = [], set()
    for source, target, attrs in edges:
        a, b = where.get(source, source), where.get(target, target)
        if a == b or (a, b, attrs) in seen:
            continue
        seen.add((a, b, attrs))
        lines.append(f"{_quote(a)} -> {_quote(b)}{attrs};")
    return _clustered(placed, lines)


def graph_dot(graph: ops.Graph, ops_to_show=None, highlight=None, collapse=None) -> str:
    """DOT text of ``graph`` (or of ``ops_to_show``), clustered by requested job and task.

    Args:
        graph: The graph.
        ops_to_show: Only these ops (default: all).
        highlight: ``{op name: "done" | "running" | "blocked"}`` outlines.
        collapse: Fold name scopes: a depth (``1`` folds ``layer1/...`` into
            ``layer1``) or a list of scopes.
    """
    shown = list(ops_to_show) if ops_to_show is not None else graph.get_operations()
    names = {op.name for op in shown}
    nodes, edges = [], []
    for op in shown:
        tooltip = f"requested device: {op.device or '(none)'}"
        nodes.append((op.name, op.type, op_role(op.type), _task_key(op.device), tooltip))
        for t in op.inputs:
            if t.op.name in names:
                shape = t.get_shape()
                label = _shape_label(t.dtype.name, None if shape.ndims is None else shape.as_list())
                edges.append((t.op.name, op.name, f" [label={_quote(label)}]"))
        for c in op.control_inputs:
            if c.name in names:
                edges.append((c.name, op.name, " [style=dashed]"))
    return _emit(nodes, edges, highlight, collapse)


def task_dot(graph: ops.Graph, task: str, highlight=None, collapse=None) -> str:
    """DOT text of the ops whose requested device names ``task`` (``"/job:ps/task:0"``)."""
    want = pydev.DeviceSpec.from_string(task)
    shown = []
    for op in graph.get_operations():
        spec = pydev.DeviceSpec.from_string(op.device)
        if spec.job == want.job and (want.task is None or spec.task == want.task):
            shown.append(op)
    return graph_dot(graph, shown, highlight, collapse)


def partitioned_dot(
    graph: ops.Graph,
    fetches,
    targets=(),
    feeds=(),
    cluster=None,
    default_job: str = "worker",
    default_task: int = 0,
    collapse=None,
) -> str:
    """DOT text of the partitions one step would run on a cluster, with Send/Recv pairs.

    Args:
        graph: The graph.
        fetches, targets, feeds: The step (tensors, ops, fed tensors).
        cluster: ``{job: number of tasks}`` (default: from the ops' devices).
        default_job, default_task: The session's task.
        collapse: Fold name scopes (as in `graph_dot`); Send/Recv ops stay visible.
    """
    del graph
    fetches, targets, feeds = list(fetches), list(targets), list(feeds)
    step_ops = topological_order(prune(fetches, targets, feeds), set(feeds))
    if cluster is None:
        cluster = {default_job: default_task + 1}
        for op in step_ops:
            spec = pydev.DeviceSpec.from_string(op.device)
            if spec.job:
                cluster[spec.job] = max(cluster.get(spec.job, 0), (spec.task or 0) + 1)
    devices = partition_lib.place(step_ops, default_job, default_task, cluster)
    parts = partition_lib.partition(step_ops, devices, fetches, targets, feeds)
    nodes, edges, sends, recvs = [], [], {}, {}
    for task, part in parts.items():
        key = _task_key(task)
        for node in part.nodes:
            tooltip = f"assigned device: {node.device}"
            nodes.append((node.name, node.op, op_role(node.op), key, tooltip))
            for src, _ in node.inputs:
                edges.append((src, node.name, ""))
            for src in node.control_inputs:
                edges.append((src, node.name, " [style=dashed]"))
            if node.op == partition_lib.SEND:
                sends[node.attrs["tensor_name"]] = node
            elif node.op == partition_lib.RECV:
                recvs[node.attrs["tensor_name"]] = node
    for rkey, send in sends.items():
        recv = recvs[rkey]
        tensor = rkey.rsplit(";", 1)[-1]
        label = tensor
        if recv.shapes and recv.shapes[0].is_fully_defined():
            size = int(np.prod(recv.shapes[0].as_list())) * recv.dtypes[0].size
            label = f"{tensor}\\n{size} bytes"
        attrs = f' [style=bold, color="#219ebc", label={_quote(label)}]'
        edges.append((send.name, recv.name, attrs))
    return _emit(nodes, edges, None, collapse)
