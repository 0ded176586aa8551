"""The standard set of pictures of a model: what ``minitf render`` and the demo write.

`graph_pictures` draws a graph three ways — whole, one picture per task, and
the partitions of its training step with their Send/Recv pairs — and
`trace_pictures` writes a recorded span as Chrome trace JSON and as a
timeline picture. Both return the files they wrote.
"""

from __future__ import annotations

from pathlib import Path

from minitf.framework import device as pydev
from minitf.framework import graph_keys, ops
from minitf.viz import dot, render

VIEWS = ("whole", "device", "partitioned")


def train_targets(graph: ops.Graph) -> list[ops.Operation]:
    """What one training step runs: the ``TRAIN_OP`` collection, else every op nothing uses."""
    targets = graph.get_collection(graph_keys.GraphKeys.TRAIN_OP)
    if targets:
        return _as_ops(targets)
    used = {t.op for op in graph.get_operations() for t in op.inputs}
    used |= {c for op in graph.get_operations() for c in op.control_inputs}
    return [op for op in graph.get_operations() if op not in used]


def _as_ops(items) -> list[ops.Operation]:
    """Ops, and the ops of tensors (``sess.run`` targets may be either)."""
    return [t if isinstance(t, ops.Operation) else t.op for t in items]


def task_names(graph: ops.Graph) -> list[str]:
    """The tasks the graph's ops ask for (``/job:ps/task:0``, ...), sorted."""
    names = set()
    for op in graph.get_operations():
        if op.device:
            spec = pydev.DeviceSpec.from_string(op.device)
            names.add(pydev.DeviceSpec(job=spec.job, task=spec.task).to_string())
    return sorted(names)


_VARIABLE_TYPES = ("VariableV2", "Variable", "VarHandleOp")


def with_variables_folded(graph: ops.Graph, collapse) -> list[str] | int | None:
    """``collapse`` plus every variable's own scope (``w/Assign``, ``w/read``, its slots...).

    Each variable then shows as its op and one box for its helpers, instead of
    a cluster of five to ten initializer, read and slot ops; a depth is kept
    as it is.
    """
    if isinstance(collapse, int) and not isinstance(collapse, bool):
        return collapse
    scopes = [collapse] if isinstance(collapse, str) else list(collapse or [])
    names = [op.name for op in graph.get_operations() if op.type in _VARIABLE_TYPES]
    # A slot (``w/Adam``) is inside its variable's scope already: fold by the outer one.
    outer = [n for n in names if not any(n.startswith(o + "/") for o in names)]
    return scopes + [n for n in outer if n not in scopes]


def cluster_of(graph: ops.Graph, default_job: str = "worker", default_task: int = 0) -> dict:
    """``{job: number of tasks}``: the smallest cluster the graph's devices fit in.

    The pictures use it to draw each op where a session would place it.
    """
    return dot.smallest_cluster(graph.get_operations(), default_job, default_task)


def graph_pictures(
    graph: ops.Graph,
    out,
    views=VIEWS,
    steps=None,
    collapse=None,
    formats=("svg", "png"),
    default_job: str = "worker",
    default_task: int = 0,
    fold_variables: bool = True,
    overview: bool = True,
) -> list[Path]:
    """Writes pictures of ``graph`` to ``out``: ``whole``, one per task, ``partitioned``.

    A task's picture is ``<job>_task<i>``, or ``<job>`` for ops that name no task.

    Args:
        graph: The graph.
        out: The output directory.
        views: Which of ``"whole"``, ``"device"`` (one picture per task) and
            ``"partitioned"`` to draw.
        steps: ``{picture name: target ops}``, the steps the partitioned view
            cuts, one picture each (default: ``{"partitioned":
            train_targets(graph)}``).
        collapse: Name scopes to fold (a depth or a list; see `minitf.viz.dot`).
        formats: Picture formats besides the DOT text (when Graphviz is installed).
        default_job, default_task: The task whose session runs the step.
        fold_variables: Also fold each variable's helper ops into one box
            (`with_variables_folded`).
        overview: Also draw each step as ``<name>_overview``, every
            ``_Send``/``_Recv`` pair as one edge between tasks: half the boxes,
            for a projector. A step with no pair between tasks has no
            overview: it would be the same picture.

    Returns:
        The files written.

    Raises:
        ValueError: for an unknown view.
    """
    unknown = set(views) - set(VIEWS)
    if unknown:
        raise ValueError(f"Unknown view(s) {sorted(unknown)}: choose from {list(VIEWS)}")
    out = Path(out)
    cluster = cluster_of(graph, default_job, default_task)
    if fold_variables:
        collapse = with_variables_folded(graph, collapse)
    texts = {}
    if "whole" in views:
        texts["whole"] = dot.graph_dot(
            graph, collapse=collapse, cluster=cluster, default_job=default_job,
            default_task=default_task,
        )  # fmt: skip
    if "device" in views:
        for task in task_names(graph):
            spec = pydev.DeviceSpec.from_string(task)
            name = spec.job if spec.task is None else f"{spec.job}_task{spec.task}"
            texts[name] = dot.task_dot(
                graph, task, collapse=collapse, cluster=cluster, default_job=default_job,
                default_task=default_task,
            )  # fmt: skip
    if "partitioned" in views:
        for name, targets in (steps or {"partitioned": train_targets(graph)}).items():
            for suffix, sendrecv in (("", "nodes"), ("_overview", "edges"))[: 2 if overview else 1]:
                text = dot.partitioned_dot(
                    graph, [], targets=_as_ops(targets), default_job=default_job,
                    default_task=default_task, collapse=collapse, sendrecv=sendrecv,
                )  # fmt: skip
                if text != texts.get(name):  # each picture once
                    texts[name + suffix] = text
    written = []
    for name, text in texts.items():
        written.extend(render.write(text, out / name, formats))
    return written


def draw(
    graph: ops.Graph | None = None,
    view: str = "whole",
    targets=None,
    collapse=None,
    highlight=None,
    fold_variables: bool = False,
    sendrecv: str = "nodes",
) -> render.GraphPicture:
    """One picture of ``graph`` as an object that Jupyter shows inline (``_repr_svg_``).

    Args:
        graph: The graph (default: the default graph).
        view: ``"whole"``, ``"partitioned"`` or a task (``"/job:ps/task:0"``).
        targets: For ``"partitioned"``: the step's target ops (default: `train_targets`).
        collapse: Name scopes to fold (a depth or a list).
        highlight: Ops to outline (see `minitf.viz.dot.graph_dot`).
        fold_variables: Fold each variable's helper ops into one box.
        sendrecv: For ``"partitioned"``: ``"nodes"`` or ``"edges"`` (see
            `minitf.viz.dot.partitioned_dot`).

    Returns:
        A `minitf.viz.render.GraphPicture`; ``.save(path)`` writes it to files.
    """
    graph = ops.get_default_graph() if graph is None else graph
    cluster = cluster_of(graph)
    if fold_variables:
        collapse = with_variables_folded(graph, collapse)
    if view == "whole":
        text = dot.graph_dot(graph, highlight=highlight, collapse=collapse, cluster=cluster)
    elif view == "partitioned":
        step = train_targets(graph) if targets is None else _as_ops(targets)
        text = dot.partitioned_dot(
            graph, [], targets=step, collapse=collapse, highlight=highlight, sendrecv=sendrecv
        )
    elif view.startswith("/job:"):
        text = dot.task_dot(graph, view, highlight=highlight, collapse=collapse, cluster=cluster)
    else:
        raise ValueError(
            f"Unknown view {view!r}: use 'whole', 'partitioned' or a task like '/job:ps/task:0'"
        )
    return render.GraphPicture(text)


def trace_pictures(step_stats: dict, out, name: str = "trace", title=None) -> list[Path]:
    """Writes ``<name>.json`` (Chrome trace) and ``<name>_timeline.svg/.png`` to ``out``."""
    from minitf.viz.timeline import Timeline
    from minitf.viz.timeline_plot import plot_timeline

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trace = out / f"{name}.json"
    trace.write_text(Timeline(step_stats).generate_chrome_trace_format())
    base = out / f"{name}_timeline"
    formats = ("svg", "png")
    plot_timeline(step_stats, path=base, title=title, formats=formats)
    return [trace] + [base.with_name(f"{base.name}.{fmt}") for fmt in formats]
