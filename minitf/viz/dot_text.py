"""How pictures become DOT text: boxes, edges, clusters, folded scopes and highlights.

`minitf.viz.dot` decides what a picture shows — which ops, on which task, with
which tooltip — as `Node` and `Edge` records; `emit` turns them into DOT:

* clusters per job, task and device, and a dashed cluster per name scope;
* with ``collapse=``, one folder box per name scope and task (Send/Recv and
  feeds are never folded), edges merged and relabelled;
* nodes filled and shaped by role (`minitf.viz.graph_data.ROLE_COLORS` and
  ``ROLE_SHAPES``), with a legend showing both;
* labels that are unique in the picture and name the variable or scope an op
  belongs to (``hidden/MatMul`` and ``logits/MatMul``, ``global_step/read``);
* stubs for edges to ops drawn in another picture (another task's);
* outlines for ops done, running or blocked (``highlight=``);
* with ``slide=True``, a layout for a 1920x1080 slide (`SLIDE_SIZE`): bigger
  text, narrower boxes, no dtype labels on edges inside a task, and repeated
  structures (``conditional_accumulator_1``, ``_2``, ...) folded into one box
  marked ``x4``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from minitf.runtime.core.frames import loop_name
from minitf.viz.graph_data import (
    LOOP_CONTROL_TYPES,
    ROLE_COLORS,
    ROLE_SHAPES,
    ROLE_TEXT_COLORS,
)

_HIGHLIGHTS = {
    "done": ', penwidth=3, color="#2a9d8f"',
    "running": ', penwidth=3, color="#e63946"',
    "blocked": ', penwidth=3, style="filled,dashed", color="#6a4c93"',
}

_STRENGTH = {"done": 1, "running": 2, "blocked": 3}

_TRANSFER = 'color="#0072B2", fontcolor="#003A5C"'
_EDGE_STYLES = {
    "data": "",
    "control": "style=dashed",
    "sendrecv": f"style=bold, penwidth=2, {_TRANSFER}",
    # A control edge between tasks drawn as one edge (``sendrecv="edges"``).
    "sendrecv_control": f'style="bold,dashed", penwidth=2, {_TRANSFER}',
    # To or from a stub standing for an op of another task (`PEER`).
    "peer": f"penwidth=1.5, {_TRANSFER}",
    "peer_control": f"style=dashed, penwidth=1.5, {_TRANSFER}",
    # A loop's NextIteration -> Merge: bold, and no constraint on the layout, so
    # that the loop is drawn top-down with the edge going back up.
    "back": 'style=bold, penwidth=2.5, color="#D55E00", fontcolor="#A04000", constraint=false',
    # Drawn from the op colocated with to the colocated op, without weight: a
    # constraint=false line here is routed in zigzags across the scope clusters.
    "colocation": "style=dotted, color=grey55, dir=none, weight=0, minlen=0",
}

_CLUSTER_STYLES = {
    "job": 'style="rounded,filled"; fillcolor="#f1f3f5"; color="#adb5bd"; fontsize=18;',
    "task": 'style="rounded,filled"; fillcolor="#ffffff"; color="#495057"; fontsize=15;',
    "device": "style=rounded; color=grey70; fontcolor=grey40; fontsize=11;",
    "scope": 'style="dashed,rounded"; color=grey60; fontcolor=grey35; fontsize=11;',
    "frame": (
        'style="rounded,filled,bold"; fillcolor="#FFF6E0"; color="#E69F00"; penwidth=2; '
        'fontcolor="#7A4E00"; fontsize=13;'
    ),
    # A loop nested in a loop: white on the outer loop's tint.
    "inner_frame": (
        'style="rounded,filled,bold"; fillcolor="#FFFFFF"; color="#E69F00"; penwidth=2; '
        'fontcolor="#7A4E00"; fontsize=13;'
    ),
}

_HEADER = [
    "compound=true; newrank=true; nodesep=0.3; ranksep=0.45;",
    "fontname=Helvetica; fontsize=14; labeljust=l;",
    'node [fontname=Helvetica, fontsize=12, margin="0.12,0.04"];',
    "edge [fontname=Helvetica, fontsize=10, color=grey30];",
]

SLIDE_SIZE = (1920, 1080)
"""A slide's size in pixels: `emit` with ``slide=True`` fits its picture in it."""
SLIDE_DPI = 100
"""The resolution a slide picture is drawn at: its DOT sizes are in inches of it."""
SLIDE_FONT_PT = 14
"""The size of a slide picture's node text, before Graphviz scales the picture to fit."""

_SLIDE_HEADER = [
    # A pixel less than the slide: Graphviz rounds the picture's size up.
    f'size="{(SLIDE_SIZE[0] - 1) / SLIDE_DPI},{(SLIDE_SIZE[1] - 1) / SLIDE_DPI}"; dpi={SLIDE_DPI};',
    "compound=true; newrank=true; nodesep=0.15; ranksep=0.3; pad=0.1;",
    "fontname=Helvetica; fontsize=20; labeljust=l;",
    f'node [fontname=Helvetica, fontsize={SLIDE_FONT_PT}, margin="0.08,0.03"];',
    "edge [fontname=Helvetica, fontsize=13, color=grey30, arrowsize=0.8];",
]

_SLIDE_CLUSTER_FONT = {
    "job": 22,
    "task": 20,
    "device": 14,
    "scope": 15,
    "frame": 17,
    "inner_frame": 17,
}

PEER = "peer"
"""The role of a stub node: an op of another task that an edge of the picture leads to."""

_ROLE_PRIORITY = ("variable", "accumulator", "queue", "update", "sendrecv", "init", "feed")

NEVER_COLLAPSED = ("_send/", "_recv/", "_feed/")

_MAX_EDGE_LABELS = 3

_WRAP = 28

# A number the ops of a repeated structure differ by: ``conditional_accumulator_2``,
# ``SetGlobalStep_2``, ``num_required_2`` are the third of each.
_REPEAT_NUMBER = re.compile(r"_\d+(?=$|[_/:])")


@dataclass
class Node:
    """One box of a picture: an op, a partition node or a folded name scope.

    Attributes:
        name: The op's or node's name (a folded scope's: the scope).
        kind: The op type, or ``"(n ops)"`` for a folded scope.
        role: Its role (`minitf.viz.graph_data.op_role`, or `PEER` for a stub),
            which sets its fill and shape.
        where: Its ``(job, task, device)`` clusters ("" where it says nothing).
        tooltip: The text shown when the mouse is over it in SVG.
        marks: Extra label lines.
        state: Its highlight: "done", "running", "blocked" or None.
        folded: Whether it stands for a folded name scope.
        id: Its DOT name, set when the picture is folded.
        title: Replaces its name in the label (nodes that partitioning added
            are titled by the tensor they carry).
        key: How edges name it: its name, unless that repeats in another
            partition.
        colocated: The ops it is colocated with (an ``@op`` line each, when
            that op is in the picture).
        detail: A line that tells it from a node labelled alike (a Send's
            destination).
        repeats: How many alike ops it stands for in a slide.
        rows: A stub's ``(port, text)`` rows: one per tensor that an edge
            brings to the port.
        holds_op: Whether a folded scope holds the op it is named after (a
            variable and its helpers, on a slide); it is then drawn in that
            op's shape.
        frames: The ``tf.while_loop`` frames it is drawn in, outermost
            first: ``(frame name, parallel_iterations)`` each
            (`minitf.viz.graph_data.loop_frames`).
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
    colocated: tuple[str, ...] = ()
    detail: str = ""
    repeats: int = 1
    rows: tuple[tuple[str, str], ...] = ()
    holds_op: bool = False
    frames: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):
        self.key = self.key or self.name


@dataclass(frozen=True)
class Slide:
    """How a picture is laid out for a slide (`SLIDE_SIZE`).

    Attributes:
        rankdir: Graphviz's rank direction: ``"TB"`` (top to bottom) or ``"LR"``.
        wrap: The most characters on a line of a label; narrower boxes make
            a wide picture fit, wider ones a tall one.
        fit: Scale the picture down to `SLIDE_SIZE` if it is larger; False
            leaves it at its natural size (a page that zooms and pans it).
    """

    rankdir: str = "TB"
    wrap: int = 18
    fit: bool = True

    def __post_init__(self):
        if self.rankdir not in ("TB", "LR"):
            raise ValueError(f"rankdir must be 'TB' or 'LR', got {self.rankdir!r}")


@dataclass(frozen=True)
class Edge:
    """An edge between node keys.

    Attributes:
        source: The key of the node it leaves.
        target: The key of the node it enters.
        kind: How it is drawn: ``"data"``, ``"back"`` (a loop's
            ``NextIteration`` → ``Merge``), ``"control"``, ``"sendrecv"``,
            ``"sendrecv_control"``, ``"peer"``, ``"peer_control"`` or
            ``"colocation"``.
        label: The text on it ("" for none).
        source_port: The row of a stub (`PEER`) node it leaves ("" for none).
        target_port: The row of a stub (`PEER`) node it enters ("" for none).
    """

    source: str
    target: str
    kind: str
    label: str = ""
    source_port: str = ""
    target_port: str = ""


@dataclass
class Cluster:
    """A job, task, device, loop-frame or name-scope cluster, and what it holds.

    Attributes:
        id: Its DOT name (``cluster_<job>...``).
        label: The text drawn on it.
        kind: ``"root"``, ``"job"``, ``"task"``, ``"device"``, ``"frame"`` (a
            loop's; ``"inner_frame"`` in a loop's frame) or ``"scope"``.
        scope: A name-scope cluster's full scope, a frame's loop's name
            scope ("" for the others).
        nodes: The nodes directly inside it.
        children: The clusters inside it, by their key.
    """

    id: str
    label: str
    kind: str
    scope: str = ""
    nodes: list[Node] = field(default_factory=list)
    children: dict[str, Cluster] = field(default_factory=dict)


def quote(text: str) -> str:
    """``text`` as a DOT string: quotes and backslashes escaped, newlines as ``\\n``.

    Args:
        text: Any text (``str()`` of it is quoted).

    Returns:
        The quoted string, quotes included.
    """
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def place_name(where: tuple[str, str, str]) -> str:
    """``("ps", "task:0", "CPU:0")`` → ``"/job:ps/task:0/device:CPU:0"``.

    Args:
        where: A node's ``(job, task, device)`` clusters ("" where it says nothing).

    Returns:
        The device string, or ``"(no device requested)"``.
    """
    job, task, device = where
    parts = [] if job == "(no job)" else ["/job:" + job]
    parts += ["/" + task] if task else []
    parts += ["/device:" + device] if device else []
    return "".join(parts) or "(no device requested)"


def highlight_from_trace(
    step_stats: dict, running: Iterable[str] = (), blocked: Iterable[str] = ()
) -> dict[str, str]:
    """A ``highlight=`` dict from a traced step: every op it ran is "done".

    Args:
        step_stats: ``run_metadata.step_stats`` (or a `minitf.viz.Tracer`'s), the
            format of `minitf.runtime.core.step_stats`.
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
    """One folder node standing for ``members``, the ops of name scope ``group`` on one task.

    A scope that holds the op it is named after (a variable and its helpers)
    takes that op's role; another takes the most telling role of its ops.
    """
    roles = {m.role for m in members}
    own = [m for m in members if m.name == group]
    role = own[0].role if own else next((r for r in _ROLE_PRIORITY if r in roles), "compute")
    counts = Counter(m.kind for m in members)
    lines = [f"name scope {group}/ on {place_name(where)}, folded: {len(members)} ops"]
    lines += [f"  {kind} x {n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    state = _strongest(highlight.get(m.name) for m in members)
    kind = f"({len(members)} ops)"
    tooltip = "\n".join(lines)
    return Node(group, kind, role, where, tooltip, state=state, folded=True, holds_op=bool(own))


def _compute_scopes(nodes: list[Node], collapse) -> set[tuple[str, tuple]]:
    """``(scope, where)`` of the top-level name scopes that only compute on a task.

    A slide folds them (``hidden/`` on the worker: its MatMul, add and Relu):
    what it is about is where the variables, transfers, accumulators and
    queues are. A scope holding one of those stays open.
    """
    roles = defaultdict(set)
    for node in nodes:
        top = _compute_scope(node)
        if top is None or node.title or node.role == PEER:
            continue
        if _group_of(node.name, collapse) is None:
            roles[top, node.where].add(node.role)
    return {key for key, found in roles.items() if found == {"compute"}}


def _compute_scope(node: Node) -> str | None:
    """The scope a slide folds ``node`` into if that scope only computes, or None.

    The top name scope (``hidden`` of ``hidden/MatMul``); in a loop, the
    scope under the loop's (``while/dense`` of ``while/dense/MatMul``): the
    loop's own ops and its frame stay in sight.
    """
    if node.frames:
        if node.kind in LOOP_CONTROL_TYPES:
            return None
        prefix = loop_name(node.frames[-1][0]) + "/"
        if not node.name.startswith(prefix):
            return None
        rest = node.name[len(prefix) :].split("/")
        return prefix + rest[0] if len(rest) > 1 else None
    return node.name.split("/")[0] if "/" in node.name else None


def _fold(
    nodes: list[Node], highlight: dict, collapse, slide: bool = False
) -> tuple[list[Node], dict[str, str]]:
    """The nodes after folding, and the node id each node key is drawn as.

    A name scope with a single op on a task is drawn as that op. On a slide,
    scopes that only compute are folded too (`_compute_scopes`), and an op
    named like a folded scope (a variable, whose helpers are folded) goes in it.
    """
    compute = _compute_scopes(nodes, collapse) if slide else set()
    # On a slide a variable joins its helpers' box: one box per variable, not two.
    scopes = {s.rstrip("/") for s in collapse} if slide and isinstance(collapse, list) else set()
    kept, members = [], defaultdict(list)
    for node in nodes:
        group = None if node.role == PEER else _group_of(node.name, collapse)
        if group is None and node.name in scopes and node.role != PEER:
            group = node.name
        top = _compute_scope(node)
        if group is None and (top, node.where) in compute and node.name != top:
            group = top
        if node.frames and node.kind in LOOP_CONTROL_TYPES:
            group = None  # a loop's own ops stay in sight: they are its structure
        if group is None:
            kept.append(node)
        else:
            members[(group, node.where, node.frames)].append(node)
    for key in [key for key, group_nodes in members.items() if len(group_nodes) == 1]:
        kept += members.pop(key)
    for node in kept:
        node.id, node.state = node.key, highlight.get(node.name)
    drawn_as = {node.key: node.id for node in kept}
    places = Counter(group for group, _, _ in members)
    in_frames = Counter((group, where) for group, where, _ in members)
    for (group, where, frames), group_nodes in members.items():
        folded = _folded_node(group, where, group_nodes, highlight)
        folded.frames = frames
        ambiguous = places[group] > 1 or group in drawn_as
        folded.id = f"{group} on {place_name(where)}" if ambiguous else group
        if in_frames[group, where] > 1:  # a scope with ops in a loop and outside it
            folded.id += f" in {frames[-1][0]}" if frames else " outside its loops"
        kept.append(folded)
        drawn_as.update((m.key, folded.id) for m in group_nodes)
    return kept, drawn_as


def _canonical(name: str) -> str:
    """``name`` without the numbers that tell repeated ops apart (``acc_2_Take`` → ``acc_Take``)."""
    return _REPEAT_NUMBER.sub("", name)


def _pattern(texts: list[str]) -> str:
    """One line for lines that differ: their common start and end around a ``*``.

    The common parts end at a separator, so ``@hidden/weights`` and
    ``@logits/biases`` give ``@*``, not ``@*s``.
    """
    if len(set(texts)) == 1:
        return texts[0]
    head = texts[0]
    for text in texts[1:]:
        while not text.startswith(head):
            head = head[:-1]
    tail = texts[0]
    for text in texts[1:]:
        while not text.endswith(tail):
            tail = tail[1:]
    head = head[: max((head.rfind(c) + 1 for c in " /:_@"), default=0)]
    tail = tail[min((i for i, c in enumerate(tail) if c in " /:_"), default=len(tail)) :]
    return f"{head}*{tail}"


def _signature(node_id: str, edges: list[Edge], drawn_as: dict, names: dict) -> frozenset:
    """The edges of a drawn node, each as (direction, kind, other node's name without numbers)."""
    found = set()
    for edge in edges:
        a, b = drawn_as.get(edge.source), drawn_as.get(edge.target)
        if a is None or b is None or a == b or edge.kind == "colocation":
            continue
        if a == node_id:
            found.add(("out", edge.kind, _canonical(names[b])))
        if b == node_id:
            found.add(("in", edge.kind, _canonical(names[a])))
    return frozenset(found)


def _fold_repeats(
    drawn: list[Node], drawn_as: dict[str, str], edges: list[Edge]
) -> tuple[list[Node], dict[str, str]]:
    """Ops repeated with a number in their name, on one task, drawn as one box each.

    Two drawn nodes are alike when their names differ only by such numbers
    (``ResourceAccumulatorTakeGradient_1``), they are of one kind, role
    and place, and their edges lead to alike nodes: the four accumulators of
    a two-layer model become one accumulator ``x4`` with one take, one apply
    and one ``SetGlobalStep``. ``Mean`` (the loss) and ``Mean_1`` (the
    accuracy) read different inputs and stay apart.
    """
    names = {node.id: node.title or node.name for node in drawn}
    groups = defaultdict(list)
    for node in drawn:
        signature = _signature(node.id, edges, drawn_as, names)
        key = (_canonical(names[node.id]), node.kind, node.role, node.where, node.folded,
               bool(node.title), signature, node.frames)  # fmt: skip
        groups[key].append(node)
    kept, merged_into = [], {}
    for members in groups.values():
        if len(members) == 1:
            kept += members
            continue
        first = members[0]
        canonical = _canonical(names[first.id])
        marks = tuple(_pattern(list(m)) for m in zip(*(n.marks for n in members)))
        if len({len(n.marks) for n in members}) > 1:
            marks = first.marks
        lines = [f"{len(members)} alike ops drawn as one:"] + [f"  {names[n.id]}" for n in members]
        node = Node(
            canonical if not first.title else first.name,
            first.kind,
            first.role,
            first.where,
            "\n".join(lines + ["", first.tooltip]),
            marks=marks,
            state=_strongest(n.state for n in members),
            folded=first.folded,
            title=canonical if first.title else "",
            repeats=len(members),
            frames=first.frames,
        )
        node.id = f"{canonical} x{len(members)} on {place_name(first.where)}"
        kept.append(node)
        merged_into.update((n.id, node.id) for n in members)
    return kept, {key: merged_into.get(i, i) for key, i in drawn_as.items()}


def _merge_edges(edges: list[Edge], drawn_as: dict[str, str], folded: set[str]) -> list[Edge]:
    """Edges between drawn nodes: self-loops dropped, parallel edges of one kind merged.

    Merged data edges list their distinct dtype/shape labels (at most a few). A
    colocation line is only drawn between two ops that no other edge joins
    already and that are not folded: the ``@`` mark in the label says the rest.
    """
    labels: dict[tuple[str, str, str, str, str], list[str]] = {}
    for edge in edges:
        a, b = drawn_as.get(edge.source), drawn_as.get(edge.target)
        if a is not None and b is not None and a != b:
            key = (a, b, edge.kind, edge.source_port, edge.target_port)
            seen = labels.setdefault(key, [])
            if edge.label and edge.label not in seen:
                seen.append(edge.label)
    linked = {frozenset(key[:2]) for key in labels if key[2] != "colocation"}
    merged = []
    for (a, b, kind, a_port, b_port), found in labels.items():
        if kind == "colocation" and (frozenset((a, b)) in linked or {a, b} & folded):
            continue
        if len(found) > _MAX_EDGE_LABELS:
            found = found[: _MAX_EDGE_LABELS - 1] + [f"+{len(found) - _MAX_EDGE_LABELS + 1} more"]
        if kind == "colocation":
            linked.add(frozenset((a, b)))
            a, b = b, a
        merged.append(Edge(a, b, kind, "\n".join(found), a_port, b_port))
    return merged


def _scope_parent(node: Node) -> str:
    """The name scope a drawn node sits in (a folded scope sits in its parent).

    Nodes that partitioning added sit outside the name scopes, on their device.
    """
    return "" if node.title else node.name.rpartition("/")[0]


# The size that `minitf.viz.dot` writes on a Send/Recv edge ("float32 [3]\n12 bytes").
_BYTES = re.compile(r"(\d+) bytes$")


def _sizes_into_receivers(drawn: list[Node], drawn_as: dict, edges: list[Edge]) -> list[Edge]:
    """Writes each Send/Recv pair's dtype, shape and size in its ``_Recv`` box (a slide).

    A labelled edge makes Graphviz leave room for a label between every two
    ranks of the picture; in the box it costs one line. A box standing for
    several pairs (`_merge_transfers`) says how many tensors and bytes.

    Returns:
        The Send/Recv edges, whose labels the boxes now show.
    """
    receivers = {node.id: node for node in drawn if node.title}
    moved, labels = [], defaultdict(list)
    for edge in edges:
        target = drawn_as.get(edge.target)
        if edge.kind == "sendrecv" and target in receivers:
            labels[target].append(edge.label)
            moved.append(edge)
    for target, found in labels.items():
        sizes = [_BYTES.search(label) for label in found]
        if len(found) == 1:
            line = found[0].replace("\n", ", ")
        elif set(found) == {"control"}:
            line = f"{len(found)} control signals"
        elif all(sizes):
            line = f"{len(found)} tensors, {sum(int(m.group(1)) for m in sizes)} bytes"
        else:
            line = f"{len(found)} tensors"
        receivers[target].marks = (*receivers[target].marks, line)
    return moved


def _merge_transfers(
    drawn: list[Node], drawn_as: dict[str, str], edges: list[Edge]
) -> tuple[list[Node], dict[str, str]]:
    """Send/Recv pairs between the same boxes drawn as one pair (a slide).

    The four gradients a worker's folded ``gradients/`` sends to the ps's
    ``Adam/`` become one pair titled ``gradients/*/control_dependency_1:0``,
    ``x4``; a pair whose ends lead elsewhere (each variable's read) stays.
    """
    by_id = {node.id: node for node in drawn}

    def ends(node_id: str, inward: bool) -> frozenset:
        found = set()
        for edge in edges:
            a, b = drawn_as.get(edge.source), drawn_as.get(edge.target)
            if edge.kind != "sendrecv" and (b if inward else a) == node_id:
                found.add((a if inward else b, edge.kind))
        return frozenset(found)

    groups = defaultdict(list)
    for edge in edges:
        send, recv = drawn_as.get(edge.source), drawn_as.get(edge.target)
        if edge.kind == "sendrecv" and by_id[send].title and by_id[recv].title:
            key = (ends(send, True), ends(recv, False), by_id[send].where, by_id[recv].where,
                   edge.label == "control")  # fmt: skip
            groups[key].append((by_id[send], by_id[recv]))
    merged_into = {}
    for pairs in groups.values():
        if len(pairs) < 2:
            continue
        for members in zip(*pairs):  # the Sends, then the Recvs
            first = members[0]
            title = _pattern([m.title for m in members])
            lines = [f"{len(members)} {first.kind} ops drawn as one:"]
            node = Node(
                first.name, first.kind, first.role, first.where,
                "\n".join(lines + [f"  {m.title}" for m in members]),
                state=_strongest(m.state for m in members), title=title, repeats=len(members),
                detail=first.detail,
            )  # fmt: skip
            node.id = f"{title} x{len(members)} {first.kind} on {place_name(first.where)}"
            drawn.append(node)
            merged_into.update((m.id, node.id) for m in members)
    drawn = [node for node in drawn if node.id not in merged_into]
    return drawn, {key: merged_into.get(i, i) for key, i in drawn_as.items()}


def _slide_edge(edge: Edge, moved: list[Edge]) -> Edge:
    """An edge as a slide draws it: no labels, except a transfer's that no box shows.

    The dtype and shape of every edge inside a task are detail for the full
    picture; a Send/Recv pair's are in its ``_Recv`` (`_sizes_into_receivers`).
    """
    keep = edge.kind.startswith("sendrecv") and edge not in moved
    label = edge.label.replace("\n", ", ") if keep else ""
    return Edge(edge.source, edge.target, edge.kind, label, edge.source_port, edge.target_port)


def _several_devices(nodes: list[Node]) -> bool:
    """Whether a task of the picture has ops on more than one device."""
    devices = defaultdict(set)
    for node in nodes:
        devices[node.where[:2]].add(node.where[2])
    return any(len(found) > 1 for found in devices.values())


def _cluster_tree(nodes: list[Node], devices: bool = True) -> Cluster:
    """Job → task → device → name-scope clusters holding the nodes.

    Without ``devices`` a task's ops sit in its cluster directly (a slide does
    that when every task has one device).
    """
    root = Cluster("root", "", "root")
    for node in nodes:
        if node.role == PEER:  # outside every task: the edge to it leaves this one
            root.nodes.append(node)
            continue
        job, task, device = node.where
        where = root.children.setdefault(
            job, Cluster("cluster_" + job, place_name((job, "", "")), "job")
        )
        for kind, key in (("task", task), ("device", device if devices else "")):
            if key:
                label = place_name(node.where[:2] + ("",)) if kind == "task" else key
                child = Cluster(f"{where.id}_{key}", label, kind)
                where = where.children.setdefault(key, child)
        scope = ""
        for depth, (frame, parallel) in enumerate(node.frames):
            scope = loop_name(frame)
            kind = "inner_frame" if depth % 2 else "frame"
            child = Cluster(f"{where.id}/frame:{frame}", frame_label(frame, parallel), kind, scope)
            where = where.children.setdefault("frame:" + frame, child)
        parent = _scope_parent(node)
        if scope and parent.startswith(scope + "/"):
            parts, parent = parent[len(scope) + 1 :].split("/"), scope
        elif scope == parent:
            parts = []
        else:  # an op of the loop named outside the loop's scope
            parts, scope = parent.split("/"), ""
        for part in filter(None, parts):
            scope = f"{scope}/{part}" if scope else part
            child = Cluster(f"{where.id}/{part}", part + "/", "scope", scope)
            where = where.children.setdefault(part, child)
        where.nodes.append(node)
    return root


BACK_EDGE_LABEL = "next iteration"
"""The first line of a loop's back edge's label (``NextIteration`` → ``Merge``)."""


def frame_label(frame: str, parallel_iterations: int) -> str:
    """A loop frame cluster's label: ``while (frame while/while_context, parallel_iterations 10)``.

    Args:
        frame: The frame's name.
        parallel_iterations: How many of its iterations may run at once.
    """
    return f"{loop_name(frame)} (frame {frame}, parallel_iterations {parallel_iterations})"


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
    trailing = name.endswith("/")
    for part in name.rstrip("/").split("/") if trailing else name.split("/"):
        piece = part if not lines[-1] else "/" + part
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines[-1] += "/"
            lines.append(part)
        else:
            lines[-1] += piece
    return "\n".join(lines) + ("/" if trailing else "")


def _wrap_words(text: str, width: int) -> str:
    """Breaks a long line after ``/`` or ``_`` and between CamelCase words.

    ``ResourceAccumulatorApplyGradient`` gives ``ResourceAccumulator`` and
    ``ApplyGradient``; a slide's boxes stay narrow however long the op type.
    """
    if len(text) <= width:
        return text
    pieces = re.findall(r"[^/_]*[/_]|[^/_]+$", text)
    words = []
    for piece in pieces:
        words += re.findall(r"[A-Z]*[^A-Z]*", piece)[:-1] if len(piece) > width else [piece]
    lines = [""]
    for word in filter(None, words):
        if lines[-1] and len(lines[-1]) + len(word) > width:
            lines.append(word)
        else:
            lines[-1] += word
    return "\n".join(lines)


def _owner(name: str, variables: set[str]) -> str | None:
    """The variable whose helper ``name`` is (``w/read``, ``w/Adam``), itself if a variable."""
    while name:
        if name in variables:
            return name
        name = name.rpartition("/")[0]
    return None


@dataclass
class _Label:
    """What a node's label says: its name from part ``start`` on, and extra lines."""

    node: Node
    start: int
    extra: list[str] = field(default_factory=list)

    @property
    def parts(self) -> list[str]:
        return self.node.name.split("/")

    @property
    def name(self) -> str:
        if self.node.title:
            return self.node.title
        name = "/".join(self.parts[self.start :])
        return name + "/" if self.node.folded else name

    @property
    def kind(self) -> list[str]:
        """The op type, unless the name says it already."""
        # "ResourceAccumulatorTakeGradient_1" says its type too (TF numbers alike names).
        last = re.sub(r"_(\d+|\*)$", "", self.name.rsplit("/", 1)[-1])
        if not self.node.kind or last == self.node.kind:
            return []
        return [self.node.kind]

    def identity(self) -> tuple:
        return (self.name, self.node.repeats, *self.kind, *self.extra)

    @property
    def can_lengthen(self) -> bool:
        return not self.node.title and self.start > 0


def _tell_apart(group: list[_Label]) -> bool:
    """Makes labels that read alike say more; False if they say all they can.

    More of their names first (only those that have more to say: ``MatMul``
    at the top stays, ``hidden/MatMul`` drawn as ``MatMul`` in ``hidden/``
    says ``hidden/MatMul``); then, or at once for boxes of one name on two
    tasks, what tells them apart, if it does: a Send's destination, a Recv's
    source, the task.
    """
    same_op = len({(label.node.title, label.node.name) for label in group}) == 1
    longer = [] if same_op else [label for label in group if label.can_lengthen]
    for label in longer:
        label.start -= 1
    if longer:
        return True
    for line_of in (
        lambda label: label.node.detail,
        lambda label: "on " + place_name(label.node.where[:2] + ("",)),
    ):
        lines = [line_of(label) for label in group]
        new = all(line and line not in label.extra for label, line in zip(group, lines))
        if new and len(set(lines)) > 1:
            for label, line in zip(group, lines):
                label.extra.append(line)
            return True
    return False


def _labels(root: Cluster, nodes: list[Node]) -> dict[str, _Label]:
    """Each drawn node's label: unique in the picture, naming its variable.

    A label starts as the node's name relative to the name-scope cluster it is
    drawn in. A variable's helper keeps the variable's name (``global_step/read``,
    not ``read``), and labels that would read alike say more until they differ:
    more of the name (``hidden/MatMul``, ``logits/MatMul``), then what tells the
    nodes apart (a Send's destination, the task).
    """
    variables = {n.name for n in nodes if n.role == "variable"}
    labels = {}

    def walk(cluster: Cluster) -> None:
        depth = len(cluster.scope.split("/")) if cluster.scope else 0
        for node in cluster.nodes:
            owner = _owner(node.name, variables)
            start = depth if owner in (None, node.name) else min(depth, owner.count("/"))
            if cluster.scope and not node.name.startswith(cluster.scope + "/"):
                start = 0  # in a loop's frame, named outside the loop's scope
            labels[node.id] = _Label(node, min(start, node.name.count("/")))
        for child in cluster.children.values():
            walk(child)

    walk(root)
    while True:
        alike = defaultdict(list)
        for label in labels.values():
            alike[label.identity()].append(label)
        clashes = [group for group in alike.values() if len(group) > 1]
        if not any([_tell_apart(group) for group in clashes]):
            break
    for group in clashes:  # alike in every way: number them
        for number, label in enumerate(group[1:], 2):
            label.extra.append(f"({number})")
    return labels


def _node_line(node: Node, label: _Label, shown: set[str], slide: Slide | None) -> str:
    """A node statement: its label, its role's shape and fill, its tooltip and highlight.

    The label's lines: the name (or title, ``x4`` when it stands for repeated
    ops), the op type unless the name says it already, the marks, an ``@op``
    line per op it is colocated with that the picture shows, and what tells
    it from a node labelled alike.
    """
    width = slide.wrap if slide else _WRAP
    name = "\n".join(_wrap_words(line, width) for line in _wrap(label.name, width).split("\n"))
    if node.repeats > 1:
        name += f" x{node.repeats}"
    kind = [_wrap_words(k, width) if slide else k for k in label.kind]
    marks = [_wrap(m, width) if slide else m for m in node.marks]
    if not slide:  # on a slide the dotted line says it
        marks += ["@" + c for c in node.colocated if c in shown]
    text = "\n".join([name, *label.extra, *kind, *marks])
    extra = _HIGHLIGHTS.get(node.state, "") if node.state else ""
    if node.role == PEER:
        return _stub_line(node, label, width)
    fill = ROLE_COLORS.get(node.role, "#FFFFFF")
    shape = "folder" if node.folded and not node.holds_op else ROLE_SHAPES.get(node.role, "box")
    font = ROLE_TEXT_COLORS.get(node.role)
    font_attr = f', fontcolor="{font}"' if font else ""
    return (
        f"{quote(node.id)} [label={quote(text)}, shape={shape}, style=filled, "
        f'fillcolor="{fill}"{font_attr}, tooltip={quote(node.tooltip)}{extra}];'
    )


def _cluster_lines(cluster: Cluster, lines_of, slide: Slide | None) -> list[str]:
    lines = [f"subgraph {quote(cluster.id)} {{", f"label={quote(cluster.label)};"]
    lines.append(_CLUSTER_STYLES[cluster.kind])
    if slide:
        lines.append(f"fontsize={_SLIDE_CLUSTER_FONT[cluster.kind]};")
    lines += [lines_of(node) for node in cluster.nodes]
    for key in sorted(cluster.children):
        lines += _cluster_lines(cluster.children[key], lines_of, slide)
    return lines + ["}"]


def _edge_line(edge: Edge) -> str:
    attrs = [_EDGE_STYLES[edge.kind]] if _EDGE_STYLES[edge.kind] else []
    label = edge.label
    if edge.kind == "back":
        label = "\n".join(filter(None, [BACK_EDGE_LABEL, label]))
    if label:
        attrs.append(f"label={quote(label)}")
    attr_text = f" [{', '.join(attrs)}]" if attrs else ""
    source = quote(edge.source) + (f":{quote(edge.source_port)}" if edge.source_port else "")
    target = quote(edge.target) + (f":{quote(edge.target_port)}" if edge.target_port else "")
    return f"{source} -> {target}{attr_text};"


def _html(text: str) -> str:
    """``text`` for an HTML-like Graphviz label: escaped, lines broken with ``<br/>``."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace('"', "&quot;").replace("\n", '<br align="left"/>')


def _stub_line(node: Node, label: _Label, width: int) -> str:
    """A stub: a dashed table headed by the other task, a row (and port) per tensor."""
    head = "\n".join([label.name, *label.extra])
    rows = [f'<tr><td align="left"><font color="grey25">{_html(head)}</font></td></tr>']
    for port, text in node.rows:
        wrapped = _wrap(text, width)
        cell = _html(wrapped) + ('<br align="left"/>' if "\n" in wrapped else "")
        rows.append(f'<tr><td port="{port}" align="left">{cell}</td></tr>')
    table = (
        '<table border="1" cellborder="0" cellspacing="0" cellpadding="2" '
        f'style="rounded,dashed" color="grey40">{"".join(rows)}</table>'
    )
    return f"{quote(node.id)} [shape=plain, label=<{table}>, tooltip={quote(node.tooltip)}];"


def _legend(
    states: set[str], folded: bool, peers: bool, slide: Slide | None, loops: bool = False
) -> list[str]:
    """A cluster of sample boxes: each role in its shape and fill, and the other marks in use.

    The other marks: a folded scope, a stub for another task's op, a loop's
    frame, and each highlight state drawn. On a slide the samples stand in
    two columns.
    """
    font = 14 if slide else 12
    lines = [
        'subgraph "cluster_legend" {',
        f'label="legend"; fontsize={font}; color=grey70; style=rounded;',
        f"node [fontsize={font}];",
    ]
    names = []
    for role, color in ROLE_COLORS.items():
        text = ROLE_TEXT_COLORS.get(role)
        font_attr = f', fontcolor="{text}"' if text else ""
        lines.append(
            f'"legend_{role}" [label="{role}", shape={ROLE_SHAPES[role]}, style=filled, '
            f'fillcolor="{color}"{font_attr}];'
        )
        names.append(f"legend_{role}")
    if folded:
        lines.append('"legend_folded" [label="folded scope", shape=folder];')
        names.append("legend_folded")
    if peers:
        lines.append(
            '"legend_peer" [label="op on another task", shape=box, style="rounded,dashed", '
            "color=grey40];"
        )
        names.append("legend_peer")
    if loops:
        lines.append(
            '"legend_frame" [label="loop frame", shape=box, style="rounded,filled,bold", '
            'fillcolor="#FFF6E0", color="#E69F00", penwidth=2];'
        )
        names.append("legend_frame")
    for state in sorted(states, key=_STRENGTH.get):
        lines.append(
            f'"legend_{state}" [label="{state}", shape=box, style=filled, '
            f'fillcolor="#ffffff"{_HIGHLIGHTS[state]}];'
        )
        names.append(f"legend_{state}")
    if slide:  # in two columns: a row of ten samples is as wide as a task
        lines += [f'"{a}" -> "{b}" [style=invis];' for a, b in zip(names, names[2:])]
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


def emit(
    nodes: list[Node],
    edges: list[Edge],
    highlight: dict | Iterable[str] | None = None,
    collapse: int | str | Collection[str] | None = None,
    slide: bool | Slide = False,
    boxes: dict[str, str] | None = None,
) -> str:
    """DOT text: ``nodes`` in their clusters (name scopes folded by ``collapse``) and ``edges``.

    Args:
        nodes: The boxes, as `Node` records.
        edges: The edges between their keys.
        highlight: Outlines (see `minitf.viz.dot.graph_dot`).
        collapse: Name scopes to fold: a depth or a list of scopes.
        slide: Lay the picture out for a slide (`SLIDE_SIZE`), as a `Slide`
            says (True: ``Slide()``): bigger text, narrower boxes, repeated
            structures folded, each variable one box, scopes that only
            compute folded, a Send beside its Recv, dtype labels only on
            edges between tasks, and scaled down to fit if it is still larger.
        boxes: If given, filled with ``{node key: DOT id}``: the box each node
            is drawn in (a folded scope, a merged pair or a repeated op is one
            box for several nodes; an SVG names a box by its id, its ``<title>``).

    Returns:
        The DOT text.

    Raises:
        ValueError: for a state other than "done", "running" or "blocked", or
            a ``collapse`` depth below 1.
        TypeError: for a ``collapse`` that is neither a depth nor name scopes.
    """
    layout = Slide() if slide is True else slide or None
    highlight = _highlight_states(highlight)
    collapse = _collapse_arg(collapse)
    drawn, drawn_as = _fold(nodes, highlight, collapse, layout is not None)
    pairs = []
    if layout:
        drawn, drawn_as = _merge_transfers(drawn, drawn_as, edges)
        drawn, drawn_as = _fold_repeats(drawn, drawn_as, edges)
        moved = _sizes_into_receivers(drawn, drawn_as, edges)
        edges = [_slide_edge(edge, moved) for edge in edges]
        # A Send beside its Recv: one rank for the pair, not two.
        pairs = [(drawn_as[e.source], drawn_as[e.target]) for e in moved]
    if boxes is not None:
        boxes.update(drawn_as)
    root = _cluster_tree(drawn, devices=not layout or _several_devices(drawn))
    _simplify(root)
    labels = _labels(root, nodes)
    shown = {node.name for node in nodes} - {node.name for node in nodes if node.role == PEER}

    def line_of(node: Node) -> str:
        return _node_line(node, labels[node.id], shown, layout)

    header = (_SLIDE_HEADER if layout.fit else _SLIDE_HEADER[1:]) if layout else _HEADER
    lines = ["digraph minitf {", f"rankdir={layout.rankdir if layout else 'TB'};", *header]
    lines += [line_of(node) for node in root.nodes]
    for key in sorted(root.children):
        lines += _cluster_lines(root.children[key], line_of, layout)
    lines += [
        _edge_line(edge)
        for edge in _merge_edges(edges, drawn_as, {n.id for n in drawn if n.folded})
    ]
    lines += [f"{{rank=same; {quote(a)}; {quote(b)};}}" for a, b in dict.fromkeys(pairs)]
    states = {node.state for node in drawn if node.state in _STRENGTH}
    folded = any(node.folded for node in drawn)
    peers, loops = any(n.role == PEER for n in drawn), any(n.frames for n in drawn)
    lines += _legend(states, folded, peers, layout, loops)
    return "\n".join(lines + ["}"]) + "\n"
