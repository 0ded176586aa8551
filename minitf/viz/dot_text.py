"""How pictures become DOT text: boxes, edges, clusters, folded scopes and highlights.

`minitf.viz.dot` decides what a picture shows — which ops, on which task, with
which tooltip — as `Node` and `Edge` records; `emit` turns them into DOT:

* clusters per job, task and device, and a dashed cluster per name scope;
* with ``collapse=``, one folder box per name scope and task (Send/Recv and
  feeds are never folded), edges merged and relabelled;
* nodes filled by role (`minitf.viz.graph_data.ROLE_COLORS`), with a legend;
* outlines for ops done, running or blocked (``highlight=``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from minitf.viz.graph_data import ROLE_COLORS

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
    # A control edge between tasks drawn as one edge (``sendrecv="edges"``).
    "sendrecv_control": 'style="bold,dashed", penwidth=2, color="#219ebc", fontcolor="#023047"',
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

_ROLE_PRIORITY = ("variable", "accumulator", "queue", "update", "sendrecv", "init", "feed")

NEVER_COLLAPSED = ("_send/", "_recv/", "_feed/")

_MAX_EDGE_LABELS = 3

_WRAP = 28


@dataclass
class Node:
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
class Edge:
    """An edge between node keys; ``kind`` is a key of ``_EDGE_STYLES``."""

    source: str
    target: str
    kind: str
    label: str = ""


@dataclass
class Cluster:
    """A job, task, device or name-scope cluster, and what it holds."""

    id: str
    label: str
    kind: str
    scope: str = ""
    nodes: list[Node] = field(default_factory=list)
    children: dict[str, Cluster] = field(default_factory=dict)


def quote(text: str) -> str:
    """``text`` as a DOT string: quotes and backslashes escaped, newlines as ``\\n``."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def place_name(where: tuple[str, str, str]) -> str:
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


def _group_of(name: str, collapse) -> str | None:
    """The name scope ``name`` is folded into, or None to keep the op as it is.

    ``collapse`` is a depth (fold everything below that many name-scope levels)
    or a list of scopes to fold into one node each.
    """
    if collapse is None or name.startswith(NEVER_COLLAPSED):
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


def _folded_node(group: str, where, members: list[Node], highlight: dict) -> Node:
    """One folder node standing for ``members``, the ops of name scope ``group`` on one task."""
    roles = {m.role for m in members}
    role = next((r for r in _ROLE_PRIORITY if r in roles), "compute")
    counts = Counter(m.kind for m in members)
    lines = [f"name scope {group}/ on {place_name(where)}, folded: {len(members)} ops"]
    lines += [f"  {kind} x {n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    state = _strongest(highlight.get(m.name) for m in members)
    kind = f"({len(members)} ops)"
    return Node(group, kind, role, where, "\n".join(lines), state=state, folded=True)


def _fold(nodes: list[Node], highlight: dict, collapse) -> tuple[list[Node], dict[str, str]]:
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
        folded.id = f"{group} on {place_name(where)}" if ambiguous else group
        kept.append(folded)
        drawn_as.update((m.key, folded.id) for m in group_nodes)
    return kept, drawn_as


def _merge_edges(edges: list[Edge], drawn_as: dict[str, str], folded: set[str]) -> list[Edge]:
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
        merged.append(Edge(a, b, kind, "\n".join(found)))
    return merged


def _scope_parent(node: Node) -> str:
    """The name scope a drawn node sits in (a folded scope sits in its parent).

    Nodes that partitioning added sit outside the name scopes, on their device.
    """
    return "" if node.title else node.name.rpartition("/")[0]


def _cluster_tree(nodes: list[Node]) -> Cluster:
    """Job → task → device → name-scope clusters holding the nodes."""
    root = Cluster("root", "", "root")
    for node in nodes:
        job, task, device = node.where
        where = root.children.setdefault(
            job, Cluster("cluster_" + job, place_name((job, "", "")), "job")
        )
        for kind, key in (("task", task), ("device", device)):
            if key:
                label = place_name(node.where[:2] + ("",)) if kind == "task" else key
                child = Cluster(f"{where.id}_{key}", label, kind)
                where = where.children.setdefault(key, child)
        scope = ""
        for part in filter(None, _scope_parent(node).split("/")):
            scope = f"{scope}/{part}" if scope else part
            child = Cluster(f"{where.id}/{part}", part + "/", "scope", scope)
            where = where.children.setdefault(part, child)
        where.nodes.append(node)
    return root


def _size(cluster: Cluster) -> int:
    return len(cluster.nodes) + sum(_size(c) for c in cluster.children.values())


def _simplify(cluster: Cluster) -> None:
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


def _node_line(node: Node, scope: str) -> str:
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
        f"{quote(node.id)} [label={quote(label)}, shape={shape}, style=filled, "
        f'fillcolor="{fill}", tooltip={quote(node.tooltip)}{extra}];'
    )


def _cluster_lines(cluster: Cluster) -> list[str]:
    lines = [f"subgraph {quote(cluster.id)} {{", f"label={quote(cluster.label)};"]
    lines.append(_CLUSTER_STYLES[cluster.kind])
    lines += [_node_line(node, cluster.scope) for node in cluster.nodes]
    for key in sorted(cluster.children):
        lines += _cluster_lines(cluster.children[key])
    return lines + ["}"]


def _edge_line(edge: Edge) -> str:
    attrs = [_EDGE_STYLES[edge.kind]] if _EDGE_STYLES[edge.kind] else []
    if edge.label:
        attrs.append(f"label={quote(edge.label)}")
    attr_text = f" [{', '.join(attrs)}]" if attrs else ""
    return f"{quote(edge.source)} -> {quote(edge.target)}{attr_text};"


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


def emit(nodes: list[Node], edges: list[Edge], highlight=None, collapse=None) -> str:
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
