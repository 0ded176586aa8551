"""The standard set of pictures of a model: what ``minitf render`` and the demo write.

`graph_pictures` draws a graph three ways — whole, one picture per task, and
the partitions of its training step with their Send/Recv pairs — and
`trace_pictures` writes a recorded span as Chrome trace JSON and as a
timeline picture. Both return the files they wrote.

Each picture is laid out for a 1920x1080 slide (``whole.png``); with
``full=True`` it is also drawn at full size, for zooming (``whole_full.png``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial
from pathlib import Path

from minitf.framework import device as pydev
from minitf.framework import graph_keys, ops
from minitf.viz import dot, render
from minitf.viz.dot_text import Slide

VIEWS = ("whole", "device", "partitioned")


def train_targets(graph: ops.Graph) -> list[ops.Operation]:
    """What one training step runs: the ``TRAIN_OP`` collection, else every op nothing uses.

    Args:
        graph: The graph.

    Returns:
        The step's target ops.
    """
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
    """The tasks the graph's ops ask for (``/job:ps/task:0``, ...), sorted.

    Args:
        graph: The graph.

    Returns:
        The task names (a job alone for ops that name no task).
    """
    names = set()
    for op in graph.get_operations():
        if op.device:
            spec = pydev.DeviceSpec.from_string(op.device)
            names.add(pydev.DeviceSpec(job=spec.job, task=spec.task).to_string())
    return sorted(names)


_VARIABLE_TYPES = ("VariableV2", "Variable", "VarHandleOp")


def with_variables_folded(
    graph: ops.Graph, collapse: int | str | Collection[str] | None
) -> list[str] | int | None:
    """``collapse`` plus every variable's own scope (``w/Assign``, ``w/read``, its slots...).

    Each variable then shows as its op and one box for its helpers, instead of
    a cluster of five to ten initializer, read and slot ops; a depth is kept
    as it is.

    Args:
        graph: The graph.
        collapse: Name scopes to fold: a depth, a scope or a list of scopes.

    Returns:
        The scopes to fold, or the depth.
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

    Args:
        graph: The graph.
        default_job: The session's job.
        default_task: The session's task index.

    Returns:
        The number of tasks of each job.
    """
    return dot.smallest_cluster(graph.get_operations(), default_job, default_task)


def graph_pictures(
    graph: ops.Graph,
    out: str | Path,
    views: Collection[str] = VIEWS,
    steps: dict[str, Iterable[ops.Operation | ops.Tensor]] | None = None,
    collapse: int | str | Collection[str] | None = None,
    formats: Sequence[str] = ("svg", "png"),
    default_job: str = "worker",
    default_task: int = 0,
    fold_variables: bool = True,
    overview: bool = True,
    slide: bool = True,
    full: bool = False,
) -> list[Path]:
    """Writes pictures of ``graph`` to ``out``: ``whole``, one per task, ``partitioned``.

    A task's picture is ``<job>_task<i>``, or ``<job>`` for ops that name no task.
    It shows where the task's edges to other tasks lead (`minitf.viz.dot.task_dot`
    with ``peers=True``).

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
        default_job: The job of the task whose session runs the step.
        default_task: The index of the task whose session runs the step.
        fold_variables: Also fold each variable's helper ops into one box
            (`with_variables_folded`).
        overview: Also draw each step as ``<name>_overview``, every
            ``_Send``/``_Recv`` pair as one edge between tasks: half the boxes,
            for a projector. A step with no pair between tasks has no
            overview: it would be the same picture.
        slide: Lay each picture out for a 1920x1080 slide (see
            `minitf.viz.dot_text.emit`), in the rank direction and with the
            line width that let it be drawn largest (`slide_text`).
        full: Also draw each picture at full size, as ``<name>_full``
            (when ``slide`` is set).

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
    where = {"cluster": cluster, "default_job": default_job, "default_task": default_task}
    views_drawn = {}  # name: a function of ``slide`` giving the DOT text
    if "whole" in views:
        views_drawn["whole"] = partial(dot.graph_dot, graph, collapse=collapse, **where)
    if "device" in views:
        for task in task_names(graph):
            spec = pydev.DeviceSpec.from_string(task)
            name = spec.job if spec.task is None else f"{spec.job}_task{spec.task}"
            views_drawn[name] = partial(
                dot.task_dot, graph, task, collapse=collapse, peers=True, **where
            )
    if "partitioned" in views:
        for name, targets in (steps or {"partitioned": train_targets(graph)}).items():
            for suffix, sendrecv in (("", "nodes"), ("_overview", "edges"))[: 2 if overview else 1]:
                draw_step = partial(
                    dot.partitioned_dot, graph, [], targets=_as_ops(targets),
                    default_job=default_job, default_task=default_task, collapse=collapse,
                    sendrecv=sendrecv,
                )  # fmt: skip
                if suffix and draw_step() == views_drawn[name]():
                    continue  # no pair between tasks: the overview is the same picture
                views_drawn[name + suffix] = draw_step
    texts = {}
    for name, draw_view in views_drawn.items():
        if not slide:
            texts[name] = draw_view()
            continue
        texts[name] = slide_text(draw_view)
        if full:
            texts[name + "_full"] = draw_view()
    written = []
    for name, text in texts.items():
        written.extend(render.write(text, out / name, formats))
    return written


SLIDE_LAYOUTS = (Slide("TB", 14), Slide("TB", 18), Slide("TB", 22), Slide("LR", 26))
"""The layouts `slide_text` tries, the first kept unless another draws larger."""


def slide_text(draw_view: Callable[..., str]) -> str:
    """A picture laid out for a slide, in the layout that draws it largest.

    Graphviz scales a picture down until it fits the slide; of the layouts in
    `SLIDE_LAYOUTS`, the one it scales least wins: narrow boxes top to bottom
    for a wide graph, wider boxes or left to right for a deep one.

    Args:
        draw_view: A function of ``slide`` giving DOT text, such as
            ``functools.partial(minitf.viz.dot.graph_dot, graph)``.

    Returns:
        The DOT text (the first layout if ``dot`` is not installed to tell).
    """
    first = draw_view(slide=SLIDE_LAYOUTS[0])
    if not render.dot_available():
        return first
    texts = [first] + [draw_view(slide=layout) for layout in SLIDE_LAYOUTS[1:]]
    scales = [render.drawing_scale(text) for text in texts]
    # Another layout only if clearly larger: the first is the usual picture.
    best = max(range(len(texts)), key=lambda i: scales[i] * (1.05 if i == 0 else 1.0))
    return texts[best]


def draw(
    graph: ops.Graph | None = None,
    view: str = "whole",
    targets: Iterable[ops.Operation | ops.Tensor] | None = None,
    collapse: int | str | Collection[str] | None = None,
    highlight: dict | Iterable[str] | None = None,
    fold_variables: bool = False,
    sendrecv: str = "nodes",
) -> render.GraphPicture:
    """One picture of ``graph`` as an object that Jupyter shows inline (``_repr_svg_``).

    Args:
        graph: The graph (default: the default graph).
        view: ``"whole"``, ``"partitioned"`` or a task (``"/job:ps/task:0"``,
            with a stub for each tensor that comes from or goes to another task).
        targets: For ``"partitioned"``: the step's target ops (default: `train_targets`).
        collapse: Name scopes to fold (a depth or a list).
        highlight: Ops to outline (see `minitf.viz.dot.graph_dot`).
        fold_variables: Fold each variable's helper ops into one box.
        sendrecv: For ``"partitioned"``: ``"nodes"`` or ``"edges"`` (see
            `minitf.viz.dot.partitioned_dot`).

    Returns:
        A `minitf.viz.render.GraphPicture`; ``.save(path)`` writes it to files.

    Raises:
        ValueError: for a ``view`` that is none of these.
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
        text = dot.task_dot(
            graph, view, highlight=highlight, collapse=collapse, cluster=cluster, peers=True
        )
    else:
        raise ValueError(
            f"Unknown view {view!r}: use 'whole', 'partitioned' or a task like '/job:ps/task:0'"
        )
    return render.GraphPicture(text)


def trace_pictures(
    step_stats: dict,
    out: str | Path,
    name: str = "trace",
    title: str | None = None,
    full: bool = False,
) -> list[Path]:
    """Writes a recorded span as Chrome trace JSON and as a timeline picture.

    Args:
        step_stats: The span's step stats (a `minitf.viz.Tracer`'s, or a traced run's).
        out: The output directory.
        name: The files' stem.
        title: The picture's title (default: a summary of ops, tasks and span).
        full: Also draw the timeline 12 inches wide and as tall as its lanes
            need, as ``<name>_timeline_full``, for zooming.

    Returns:
        The files written: ``<name>.json`` and ``<name>_timeline.svg/.png``, laid
        out for a 1920x1080 slide (then the full-size ones).
    """
    from minitf.viz.timeline import Timeline
    from minitf.viz.timeline_plot import plot_timeline

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trace = out / f"{name}.json"
    trace.write_text(Timeline(step_stats).generate_chrome_trace_format())
    written = [trace]
    formats = ("svg", "png")
    for suffix, slide in (("", True), ("_full", False))[: 2 if full else 1]:
        base = out / f"{name}_timeline{suffix}"
        plot_timeline(step_stats, path=base, title=title, formats=formats, slide=slide)
        written += [base.with_name(f"{base.name}.{fmt}") for fmt in formats]
    return written
