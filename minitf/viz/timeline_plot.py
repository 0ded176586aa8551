"""A traced step as a static picture: one band per task, ops as coloured bars in time.

`plot_timeline` draws ``run_metadata.step_stats`` of a traced run, or what a
`minitf.viz.Tracer` gathered from a cluster (format in
`minitf.runtime.step_stats`), with matplotlib for docs and slides, where the
interactive Chrome trace of `minitf.viz.timeline.Timeline` cannot go:

* one horizontal band per task, parameter servers first, each split into a
  few lanes so that ops that overlap in time (several executor threads) do
  not hide each other (`lanes`);
* every op a bar on a millisecond axis from the first op, filled with the
  colour of its role (`minitf.viz.graph_data.ROLE_COLORS`); the part of an op
  spent waiting (a dequeue waiting for its token, a take waiting for enough
  gradients) is hatched; an ``apply_grad`` whose gradient the accumulator
  dropped as stale is outlined in red; an injected straggler delay
  (`minitf.cluster.delays`) is a solid bar of its own colour;
* on the right of each worker band its number of steps, busy time (waits
  left out) and time per step; the slowest worker is in bold red when it is
  clearly slower than the other workers typically are, so a straggler stands out.

The figure is a plain `matplotlib.figure.Figure` (no ``pyplot``), so it is
drawn headless and from any thread.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from minitf.framework.device import DeviceSpec
from minitf.viz.graph_data import ROLE_COLORS, op_role

logger = logging.getLogger("minitf")

NO_OPS_MESSAGE = (
    "step_stats has no ops: run with tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) "
    "and a tf.RunMetadata(), then plot run_metadata.step_stats (or a Tracer's step_stats)"
)

OP_GID = "op"
"""The gid prefix of op bars (``op-<k>``); their label is the node name."""
WAIT_GID = "wait"
"""The gid prefix of the hatched waiting part of an op (``wait-<k>``)."""

_EDGE = "#333333"
_HATCH = "////"
_SLOW_COLOR = "#b2182b"
_LANE_HEIGHT_IN = 0.3
_BAND_GAP = 0.8
_WIDTH_IN = 12.0
_LABEL_FRACTION = 0.05
_MAX_LABELS = 12
_LABEL_FONTSIZE = 7
# A worker is marked slow past 1.5x the typical (median) busy time per step of the
# other workers: below that, the chief's extra work and scheduling noise would mark
# healthy workers, and one fast outlier would not make the others look slow.
_STRAGGLER_RATIO = 1.5
_DROPPED = "#c1121f"  # the outline of an apply_grad whose gradient was dropped
STRAGGLER_COLOR = "#b8a1d9"
"""The fill of an injected straggler delay (not a graph op, so not one of the roles)."""


@dataclass(frozen=True)
class _Op:
    name: str
    op: str
    start: float
    end: float
    wait: float
    step_id: int | None
    dropped: bool = False  # an apply_grad whose gradient was stale

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class _Band:
    label: str
    job: str | None
    ops: list[_Op]
    lane_of: list[int] = field(default_factory=list)
    top: float = 0.0

    @property
    def n_lanes(self) -> int:
        return max(self.lane_of, default=0) + 1

    @property
    def center(self) -> float:
        return self.top + self.n_lanes / 2


def lanes(intervals: Sequence[tuple[float, float]], max_lanes: int | None = None) -> list[int]:
    """Greedy lane assignment: the lowest lane free when each interval starts.

    Intervals are visited by start time; each goes to the lowest-numbered lane
    whose last interval has ended (an interval ending exactly when the next
    starts shares its lane). With ``max_lanes``, intervals that find no free
    lane once all lanes are in use are stacked in the last lane.

    Args:
        intervals: ``(start, end)`` pairs, in any order.
        max_lanes: The most lanes to use, or None for as many as needed.

    Returns:
        The lane of each interval, in the order given.

    Raises:
        ValueError: If ``max_lanes`` is less than 1.
    """
    if max_lanes is not None and max_lanes < 1:
        raise ValueError(f"max_lanes must be at least 1, got {max_lanes}")
    order = sorted(range(len(intervals)), key=lambda i: (intervals[i][0], intervals[i][1]))
    lane_ends: list[float] = []
    result = [0] * len(intervals)
    for i in order:
        start, end = intervals[i]
        lane = next((k for k, last in enumerate(lane_ends) if last <= start), None)
        if lane is None and (max_lanes is None or len(lane_ends) < max_lanes):
            lane_ends.append(end)
            lane = len(lane_ends) - 1
        elif lane is None:
            lane = len(lane_ends) - 1
        lane_ends[lane] = max(lane_ends[lane], end)
        result[i] = lane
    return result


def plot_timeline(
    step_stats: dict,
    path: str | Path | None = None,
    title: str | None = None,
    formats: Sequence[str] = ("svg", "png"),
    max_rows_per_task: int = 4,
) -> Figure:
    """Draws step stats as a timeline: one band per task, ops as bars coloured by role.

    Args:
        step_stats: ``RunMetadata.step_stats`` of a traced run, or a Tracer's
            step stats (see `minitf.runtime.step_stats`).
        path: If given, the figure is saved as ``<path>.<fmt>`` for each format
            (parent directories created).
        title: The title; by default a summary of ops, tasks and span.
        formats: The file formats to save, e.g. ``("svg", "png")``.
        max_rows_per_task: The most lanes a task's band is split into; ops
            overlapping beyond that share the last lane.

    Returns:
        The `matplotlib.figure.Figure`. Op bars have gid ``op-<k>`` and the node
        name as label; hatched waiting parts have gid ``wait-<k>``.

    Raises:
        ValueError: If ``step_stats`` holds no ops, or ``max_rows_per_task`` < 1.
    """
    if max_rows_per_task < 1:
        raise ValueError(f"max_rows_per_task must be at least 1, got {max_rows_per_task}")
    bands = _bands(step_stats, max_rows_per_task)
    span = max(op.end for band in bands for op in band.ops) or 1e-3
    height = 1.4 + sum(band.n_lanes * _LANE_HEIGHT_IN + 0.25 for band in bands)
    fig = Figure(figsize=(_WIDTH_IN, max(2.6, height)), layout="constrained")
    ax = fig.add_subplot()
    _draw(ax, bands, span)
    ax.set_title(title or _default_title(bands, span), loc="left", fontsize=10)
    _legend(fig, bands)
    if path is not None:
        _save(fig, Path(path), formats)
    return fig


def _bands(step_stats: dict, max_lanes: int) -> list[_Band]:
    """The tasks' bands, ps first, times in ms from the earliest start, lanes assigned."""
    by_device: dict[str, list[dict]] = {}
    for dev in step_stats.get("dev_stats", []):
        by_device.setdefault(dev["device"], []).extend(dev.get("node_stats", []))
    nodes = [node for device_nodes in by_device.values() for node in device_nodes]
    if not nodes:
        raise ValueError(NO_OPS_MESSAGE)
    origin = min(node["all_start_micros"] for node in nodes)
    bands = []
    for device, device_nodes in by_device.items():
        if device_nodes:
            job, label = _task_label(device)
            ops = sorted((_op(node, origin) for node in device_nodes), key=lambda o: o.start)
            bands.append(_Band(label, job, ops))
    bands.sort(key=lambda band: band.job != "ps")
    for band in bands:
        band.lane_of = lanes([(op.start, op.end) for op in band.ops], max_lanes)
    _stack(bands)
    return bands


def _op(node: dict, origin: int) -> _Op:
    # Both ends come from integer microseconds, so an op that starts when the one
    # before it ends touches it exactly instead of overlapping by a rounding error.
    start = node["all_start_micros"] - origin
    duration = max(0, node.get("all_end_rel_micros", 0))
    wait = min(max(0, node.get("wait_micros", 0)), duration)
    if node["op"] == "StragglerDelay":
        wait = 0  # it stands for slow compute: drawn solid and counted as busy
    accumulated = node.get("accumulated") or {}
    return _Op(
        name=node["node_name"],
        op=node["op"],
        start=start / 1000,
        end=(start + duration) / 1000,
        wait=wait / 1000,
        step_id=node.get("step_id"),
        dropped=bool(accumulated.get("stale")),
    )


def _task_label(device: str) -> tuple[str | None, str]:
    """``(job, "/job:<job>/task:<i>")`` of a device string (the string itself if unparsable)."""
    try:
        spec = DeviceSpec.from_string(device)
    except ValueError:
        return None, device
    if spec.job is None:
        return None, device
    task = "" if spec.task is None else f"/task:{spec.task}"
    return spec.job, f"/job:{spec.job}{task}"


def _stack(bands: list[_Band]) -> None:
    """Gives each band its top y, the first band at 0, downwards."""
    y = 0.0
    for band in bands:
        band.top = y
        y += band.n_lanes + _BAND_GAP


def _draw(ax: Axes, bands: list[_Band], span: float) -> None:
    min_width = span * 0.002
    k = 0
    for i, band in enumerate(bands):
        _draw_band_background(ax, band, shaded=i % 2 == 0)
        for op, lane in zip(band.ops, band.lane_of):
            _draw_op(ax, op, band.top + lane, k, min_width)
            k += 1
        if band.job != "ps":
            _draw_step_separators(ax, band)
    _label_longest(ax, bands, span)
    _annotate_load(ax, bands)
    _style_axes(ax, bands, span)


def _draw_band_background(ax: Axes, band: _Band, shaded: bool) -> None:
    pad = _BAND_GAP / 2 - 0.05
    color = "#f2f2f2" if shaded else "#fafafa"
    ax.axhspan(band.top - pad, band.top + band.n_lanes + pad, color=color, zorder=0, lw=0)


def _draw_op(ax: Axes, op: _Op, y: float, k: int, min_width: float) -> None:
    bar = Rectangle(
        (op.start, y + 0.1),
        max(op.duration, min_width),
        0.8,
        facecolor=_fill(op),
        edgecolor=_DROPPED if op.dropped else _EDGE,
        linewidth=1.6 if op.dropped else 0.5,
        zorder=2.5 if op.dropped else 2,
        gid=f"{OP_GID}-{k}",
        label=op.name,
    )
    ax.add_patch(bar)
    if op.wait > 0:
        # A step's waits are always at the end of the op: it begins, then blocks.
        waited = Rectangle(
            (op.end - op.wait, y + 0.1),
            op.wait,
            0.8,
            facecolor=(1, 1, 1, 0.45),
            edgecolor=_EDGE,
            hatch=_HATCH,
            linewidth=0,
            zorder=3,
            gid=f"{WAIT_GID}-{k}",
            label=op.name,
        )
        ax.add_patch(waited)


def _fill(op: _Op) -> str:
    if op.op == "StragglerDelay":
        return STRAGGLER_COLOR
    return ROLE_COLORS[op_role(op.op)]


def _draw_step_separators(ax: Axes, band: _Band) -> None:
    """A thin dotted line where each step after the first begins in this band."""
    first_start: dict[int, float] = {}
    for op in band.ops:
        if op.step_id is not None:
            first_start[op.step_id] = min(first_start.get(op.step_id, op.start), op.start)
    starts = sorted(first_start.values())[1:]
    if starts:
        ax.vlines(
            starts,
            band.top - 0.1,
            band.top + band.n_lanes + 0.1,
            colors="#888888",
            linestyles=":",
            linewidth=0.8,
            zorder=1,
        )


def _label_longest(ax: Axes, bands: list[_Band], span: float) -> None:
    """Writes the node name on the longest ops (over 5% of the span) where it fits."""
    placed = [(op, band.top + lane) for band in bands for op, lane in zip(band.ops, band.lane_of)]
    long_ops = [item for item in placed if item[0].duration > _LABEL_FRACTION * span]
    long_ops.sort(key=lambda item: -item[0].duration)
    ms_per_char = span / (_WIDTH_IN * 0.72) * (_LABEL_FONTSIZE * 0.62 / 72)
    for op, y in long_ops[:_MAX_LABELS]:
        text = _fitting_name(op.name, op.duration, ms_per_char)
        if text:
            ax.text(
                op.start + op.duration / 2,
                y + 0.5,
                text,
                ha="center",
                va="center",
                fontsize=_LABEL_FONTSIZE,
                color="#111111",
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
                zorder=4,
                clip_on=True,
            )


def _fitting_name(name: str, width: float, ms_per_char: float) -> str | None:
    """The node name, or a shorter form of it, if it fits in ``width`` ms; else None.

    ``_recv/w/read/0`` and ``_send/w/read/0/to_job_ps_replica_0_task_0`` are
    shortened to the op whose tensor they carry (``w/read``), then to that
    op's last name part (``read``); other names to their last part.
    """
    for text in _short_names(name):
        if (len(text) + 2) * ms_per_char <= width:
            return text
    return None


def _short_names(name: str) -> list[str]:
    """``name`` and its shorter forms, longest first."""
    if name.startswith(("_recv/", "_send/")):
        carried = name.split("/", 1)[1].split("/to_job_")[0].rsplit("/", 1)[0]
        verb = name[1:5]  # "recv" or "send": the bar moves that tensor, it does not compute it
        return [name, f"{verb} {carried}", f"{verb} {carried.rsplit('/', 1)[-1]}"]
    return [name, name.rsplit("/", 1)[-1]]


def _annotate_load(ax: Axes, bands: list[_Band]) -> None:
    """Writes steps, busy time and time per step right of each non-ps band."""
    loads = {id(band): _load(band) for band in bands if band.job != "ps"}
    slowest = _straggler(bands, loads)
    for band in bands:
        if band.job == "ps":
            continue
        steps, busy = loads[id(band)]
        is_slow = band is slowest
        ax.text(
            1.005,
            band.center,
            _load_text(steps, busy),
            transform=ax.get_yaxis_transform(),
            ha="left",
            va="center",
            fontsize=8,
            color=_SLOW_COLOR if is_slow else "#222222",
            fontweight="bold" if is_slow else "normal",
            clip_on=False,
        )


def _load(band: _Band) -> tuple[int, float]:
    """``(steps, busy ms)`` of a band: distinct step ids, and the union of ops minus waits."""
    steps = len({op.step_id for op in band.ops if op.step_id is not None})
    busy = _union_length([(op.start, op.end - op.wait) for op in band.ops])
    return steps, busy


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _straggler(bands: list[_Band], loads: dict[int, tuple[int, float]]) -> _Band | None:
    """The band with the most busy time per step, if clearly above the others' median."""
    per_step = {
        id(band): loads[id(band)][1] / loads[id(band)][0]
        for band in bands
        if id(band) in loads and loads[id(band)][0] > 0
    }
    if len(per_step) < 2:
        return None
    slow_id = max(per_step, key=per_step.__getitem__)
    others = sorted(v for k, v in per_step.items() if k != slow_id)
    if not others or per_step[slow_id] <= _STRAGGLER_RATIO * statistics.median(others):
        return None
    return next(band for band in bands if id(band) == slow_id)


def _load_text(steps: int, busy: float) -> str:
    if steps == 0:
        return f"{_ms(busy)} ms busy"
    noun = "step" if steps == 1 else "steps"
    return f"{steps} {noun}, {_ms(busy)} ms busy, {_ms(busy / steps)} ms/step"


def _ms(value: float) -> str:
    if value >= 10:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _style_axes(ax: Axes, bands: list[_Band], span: float) -> None:
    ax.set_yticks([band.center for band in bands], [band.label for band in bands])
    ax.tick_params(axis="y", length=0, labelsize=9)
    ax.set_ylim(bands[-1].top + bands[-1].n_lanes + _BAND_GAP / 2, -_BAND_GAP / 2)
    ax.set_xlim(-span * 0.01, span * 1.01)
    ax.set_xlabel("time (ms) from the first op")
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def _default_title(bands: list[_Band], span: float) -> str:
    n_ops = sum(len(band.ops) for band in bands)
    n_tasks = len(bands)
    task_noun = "task" if n_tasks == 1 else "tasks"
    return f"{n_ops} ops on {n_tasks} {task_noun} over {_ms(span)} ms"


def _legend(fig: Figure, bands: list[_Band]) -> None:
    present = {op_role(op.op) for band in bands for op in band.ops if op.op != "StragglerDelay"}
    handles = [
        Patch(facecolor=color, edgecolor=_EDGE, linewidth=0.5, label=role)
        for role, color in ROLE_COLORS.items()
        if role in present
    ]
    if any(op.op == "StragglerDelay" for band in bands for op in band.ops):
        handles.append(
            Patch(
                facecolor=STRAGGLER_COLOR, edgecolor=_EDGE, linewidth=0.5, label="straggler delay"
            )
        )
    if any(op.dropped for band in bands for op in band.ops):
        handles.append(
            Patch(
                facecolor=ROLE_COLORS["accumulator"],
                edgecolor=_DROPPED,
                linewidth=1.6,
                label="gradient dropped as stale",
            )
        )
    if any(op.wait > 0 for band in bands for op in band.ops):
        handles.append(
            Patch(facecolor="white", edgecolor=_EDGE, hatch=_HATCH, linewidth=0.5, label="waiting")
        )
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=len(handles),
        frameon=False,
        fontsize=8,
    )


def _save(fig: Figure, base: Path, formats: Sequence[str]) -> None:
    base.parent.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        target = Path(f"{base}.{fmt}")
        fig.savefig(target, format=fmt, dpi=120)
        logger.debug("wrote timeline picture %s", target)
