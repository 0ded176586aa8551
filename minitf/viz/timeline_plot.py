"""A traced step as a static picture: one band per task, ops as coloured bars in time.

`plot_timeline` draws ``run_metadata.step_stats`` of a traced run, or what a
`minitf.viz.Tracer` gathered from a cluster (format in
`minitf.runtime.core.step_stats`), with matplotlib for docs and slides, where the
interactive Chrome trace of `minitf.viz.timeline.Timeline` cannot go:

* one horizontal band per task, parameter servers first, each split into
  lanes by whose steps the task ran (its own, a worker's, the ps-only steps
  of the chief's queue runner; `minitf.viz.timeline.step_clients`), each
  labelled, and those into a few lanes so that ops that overlap in time
  (several executor threads) do not hide each other (`lanes`);
* every op a bar on a millisecond axis from the first op, filled with the
  colour of its role (`minitf.viz.graph_data.ROLE_COLORS`); the part of an op
  spent waiting (a dequeue waiting for its token, a take waiting for enough
  gradients) is hatched; an ``apply_grad`` whose gradient the accumulator
  dropped as stale is outlined in red; an injected straggler delay
  (`minitf.cluster.delays`) is a solid bar of its own colour;
* a dotted line where each step of a worker begins;
* on the right of each worker band its number of steps, busy time (waits
  left out) and time per step; a straggler (`straggler_test`) is in bold
  red, and a line under the picture says how the test decided.

``slide=True`` draws it for a 1920x1080 slide, with text a projector shows.

The figure is a plain `matplotlib.figure.Figure` (no ``pyplot``), so it is
drawn headless and from any thread.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from minitf.framework.device import DeviceSpec
from minitf.viz.graph_data import ROLE_COLORS, op_role
from minitf.viz.timeline import client_label, step_clients, task_name, transfer_names

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
_BAND_GAP = 0.8
_LABEL_FRACTION = 0.05
# A straggler is a worker whose busy time per step is larger than the other
# workers' both surely and by much. Surely: a one-sided Mann-Whitney U test of
# its steps against theirs at p < P_VALUE, over at least MIN_STEPS steps each
# (below that the normal approximation of U is poor and a few slow steps -- a
# pause of the process, the chief's extra work -- decide alone). By much: its
# median at least 1.5 times theirs, so that over many steps a small steady
# difference between healthy workers is not called a straggler.
MIN_STEPS = 8
"""The fewest steps the slowest worker, and the other workers together, must have run."""
P_VALUE = 0.01
"""The significance level of the straggler test."""
_STRAGGLER_RATIO = 1.5
_DROPPED = "#c1121f"  # the outline of an apply_grad whose gradient was dropped
STRAGGLER_COLOR = "#999999"
"""The fill of an injected straggler delay (not a graph op, so not one of the roles)."""
_STEP_LINE = {"colors": "#555555", "linestyles": ":", "linewidth": 1.0}


@dataclass(frozen=True)
class _Style:
    """Sizes of a timeline picture: inches, points and how many bars get a label."""

    width_in: float
    height_in: float | None  # None: as tall as its lanes need
    lane_height_in: float
    dpi: int
    title_font: float
    tick_font: float
    lane_font: float
    label_font: float
    note_font: float
    legend_font: float
    max_labels: int


_PAGE = _Style(12.0, None, 0.3, 120, 10, 9, 7, 7, 8, 8, 12)
# 16 x 9 inches at 120 dpi is a 1920x1080 slide; 10 pt is 17 px there.
_SLIDE = _Style(16.0, 9.0, 0.3, 120, 15, 13, 11, 10, 11, 12, 16)


@dataclass(frozen=True)
class _Op:
    name: str
    op: str
    start: float
    end: float
    wait: float
    step_id: int | None
    dropped: bool = False  # an apply_grad whose gradient was stale
    client: str = ""  # the task whose step it is (`step_clients`)
    transfer: dict | None = field(default=None, compare=False)
    iteration: int | None = None  # an op of a tf.while_loop: its iteration

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
    task: str = ""
    # (lane label, first lane, lanes) of each client whose steps the task ran
    groups: list[tuple[str, int, int]] = field(default_factory=list)

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
    slide: bool = False,
) -> Figure:
    """Draws step stats as a timeline: one band per task, ops as bars coloured by role.

    Args:
        step_stats: ``RunMetadata.step_stats`` of a traced run, or a Tracer's
            step stats (see `minitf.runtime.core.step_stats`).
        path: If given, the figure is saved as ``<path>.<fmt>`` for each format
            (parent directories created).
        title: The title; by default a summary of ops, tasks and span.
        formats: The file formats to save, e.g. ``("svg", "png")``.
        max_rows_per_task: The most lanes the ops of one client's steps take in
            a task's band; ops overlapping beyond that share the last lane.
        slide: Draw it for a slide: 16 x 9 inches, saved at 1920x1080, with
            larger text; otherwise 12 inches wide and as tall as its lanes need.

    Returns:
        The `matplotlib.figure.Figure`. Op bars have gid ``op-<k>`` and the node
        name as label; hatched waiting parts have gid ``wait-<k>``.

    Raises:
        ValueError: If ``step_stats`` holds no ops, or ``max_rows_per_task`` < 1.
    """
    if max_rows_per_task < 1:
        raise ValueError(f"max_rows_per_task must be at least 1, got {max_rows_per_task}")
    style = _SLIDE if slide else _PAGE
    bands = _bands(step_stats, max_rows_per_task)
    span = max(op.end for band in bands for op in band.ops) or 1e-3
    height = 1.6 + sum(band.n_lanes * style.lane_height_in + 0.25 for band in bands)
    fig = Figure(figsize=(style.width_in, style.height_in or max(2.6, height)),
                 layout="constrained")  # fmt: skip
    ax = fig.add_subplot()
    verdict = _draw(ax, bands, span, style)
    ax.set_title(title or _default_title(bands, span), loc="left", fontsize=style.title_font)
    if verdict.reason:
        fig.supxlabel(verdict.reason, fontsize=style.note_font, color="#333333")
    _legend(fig, bands, style)
    if path is not None:
        _save(fig, Path(path), formats, style.dpi)
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
    clients = step_clients(step_stats)
    bands = []
    for device, device_nodes in by_device.items():
        if device_nodes:
            job, label = _task_label(device)
            ops = [_op(node, origin, clients.get(node.get("step_id"), "")) for node in device_nodes]
            ops.sort(key=lambda o: o.start)
            bands.append(_Band(label, job, ops, task=task_name(device)))
    bands.sort(key=lambda band: band.job != "ps")
    for band in bands:
        _assign_lanes(band, max_lanes)
    _stack(bands)
    return bands


def _assign_lanes(band: _Band, max_lanes: int) -> None:
    """Lanes for each client's ops in turn (the task's own first), named after the client."""
    by_client = defaultdict(list)
    for i, op in enumerate(band.ops):
        by_client[op.client].append(i)
    order = sorted(by_client, key=lambda c: (c != band.task, c == "", c))
    band.lane_of = [0] * len(band.ops)
    first = 0
    for client in order:
        members = by_client[client]
        found = lanes([(band.ops[i].start, band.ops[i].end) for i in members], max_lanes)
        for i, lane in zip(members, found):
            band.lane_of[i] = first + lane
        count = max(found) + 1
        band.groups.append((client_label(client, band.task, short=True), first, count))
        first += count


def _op(node: dict, origin: int, client: str = "") -> _Op:
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
        client=client,
        transfer=node.get("transfer"),
        iteration=node.get("iteration"),
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


def _draw(ax: Axes, bands: list[_Band], span: float, style: _Style = _PAGE) -> StragglerTest:
    min_width = span * 0.002
    k = 0
    for i, band in enumerate(bands):
        _draw_band_background(ax, band, shaded=i % 2 == 0)
        for op, lane in zip(band.ops, band.lane_of):
            _draw_op(ax, op, band.top + lane, k, min_width)
            k += 1
        if band.job != "ps":
            _draw_step_separators(ax, band)
    _label_longest(ax, bands, span, style)
    verdict = _annotate_load(ax, bands, style)
    _style_axes(ax, bands, span, style)
    return verdict


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
        ax.vlines(starts, band.top - 0.1, band.top + band.n_lanes + 0.1, zorder=1, **_STEP_LINE)


def _label_longest(ax: Axes, bands: list[_Band], span: float, style: _Style = _PAGE) -> None:
    """Writes what the longest ops (over 5% of the span) are, where it fits.

    A ``_Send`` or ``_Recv`` is named by what it moves (`transfer_names`),
    another op by its name.
    """
    placed = [(op, band.top + lane) for band in bands for op, lane in zip(band.ops, band.lane_of)]
    long_ops = [item for item in placed if item[0].duration > _LABEL_FRACTION * span]
    long_ops.sort(key=lambda item: -item[0].duration)
    ms_per_char = span / (style.width_in * 0.72) * (style.label_font * 0.62 / 72)
    for op, y in long_ops[: style.max_labels]:
        text = _fitting_name(op.name, op.duration, ms_per_char, op.transfer, op.iteration)
        if text:
            ax.text(
                op.start + op.duration / 2,
                y + 0.5,
                text,
                ha="center",
                va="center",
                fontsize=style.label_font,
                color="#111111",
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
                zorder=4,
                clip_on=True,
            )


def _fitting_name(
    name: str,
    width: float,
    ms_per_char: float,
    transfer: dict | None = None,
    iteration: int | None = None,
) -> str | None:
    """The op's name in words (`transfer_names`), the longest that fits in ``width`` ms.

    An op of a loop runs once per iteration under one name: its name says
    which (``while/add (iteration 2)``, or ``add, it. 2`` where less fits).

    Returns:
        The name, or None if even the shortest does not fit.
    """
    names = transfer_names(name, transfer)
    if iteration is not None:
        names = [f"{names[0]} (iteration {iteration})"] + [f"{n}, it. {iteration}" for n in names]
    for text in names:
        if (len(text) + 2) * ms_per_char <= width:
            return text
    return None


def _annotate_load(ax: Axes, bands: list[_Band], style: _Style = _PAGE) -> StragglerTest:
    """Writes steps, busy time and time per step right of each non-ps band; tests for a straggler.

    Returns:
        The straggler test's verdict.
    """
    loads = {id(band): _load(band) for band in bands if band.job != "ps"}
    verdict = straggler_test({band.label: _busy_per_step(band) for band in bands
                              if band.job != "ps"})  # fmt: skip
    for band in bands:
        if band.job == "ps":
            continue
        steps, busy = loads[id(band)]
        is_slow = band.label == verdict.worker
        ax.text(
            1.005,
            band.center,
            _load_text(steps, busy),
            transform=ax.get_yaxis_transform(),
            ha="left",
            va="center",
            fontsize=style.lane_font,
            color=_SLOW_COLOR if is_slow else "#222222",
            fontweight="bold" if is_slow else "normal",
            clip_on=False,
        )
    return verdict


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


def _busy_per_step(band: _Band) -> list[float]:
    """The busy ms of each step of a band: its ops' union, waits left out."""
    by_step = defaultdict(list)
    for op in band.ops:
        if op.step_id is not None:
            by_step[op.step_id].append((op.start, op.end - op.wait))
    return [_union_length(intervals) for intervals in by_step.values()]


def mann_whitney_p(sample: Sequence[float], others: Sequence[float]) -> float:
    """The one-sided p-value that ``sample`` tends to be larger than ``others``.

    Mann and Whitney's U statistic (ties count a half), compared with its
    normal approximation under the hypothesis that both come from one
    distribution: mean ``n1 n2 / 2``, variance ``n1 n2 / 12 (n + 1 - sum(t^3 - t)
    / (n (n - 1)))`` for ties of sizes ``t``, with a continuity correction of
    a half. It is good from about eight values in each.

    Args:
        sample: The values suspected to be larger (a worker's busy ms per step).
        others: The values to compare with (the other workers').

    Returns:
        The p-value, in [0, 1].

    Raises:
        ValueError: If either is empty.
    """
    n1, n2 = len(sample), len(others)
    if not n1 or not n2:
        raise ValueError("mann_whitney_p needs values in both samples")
    values = sorted([(v, 0) for v in sample] + [(v, 1) for v in others])
    ranks, ties, i = [0.0] * len(values), [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1][0] == values[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    u = sum(r for r, (_, which) in zip(ranks, values) if which == 0) - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * (n + 1 - sum(t**3 - t for t in ties) / (n * (n - 1)))
    if variance <= 0:  # every value equal: nothing tells the samples apart
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class StragglerTest:
    """What the straggler test found among the workers of a trace.

    Attributes:
        worker: The straggler's label (``/job:worker/task:2``), or None.
        slowest: The worker with the largest median busy time per step, or
            None if there are fewer than two workers.
        steps: How many steps the slowest ran.
        ratio: Its median over the other workers' median (None if not tested).
        p_value: The one-sided Mann-Whitney p-value (None if not tested).
        reason: One line saying how it was decided ("" with fewer than two workers).
    """

    worker: str | None
    slowest: str | None = None
    steps: int = 0
    ratio: float | None = None
    p_value: float | None = None
    reason: str = ""


def straggler_test(per_step: dict[str, list[float]]) -> StragglerTest:
    """Names the straggler among workers, given each one's busy ms per step, if there is one.

    The worker with the largest median is compared with all the others'
    steps: it is a straggler if it and they ran at least `MIN_STEPS` steps, a
    one-sided Mann-Whitney U test (`mann_whitney_p`) gives p < `P_VALUE`,
    and its median is at least 1.5 times theirs.

    Args:
        per_step: ``{worker label: [busy ms of each step]}``.

    Returns:
        The `StragglerTest`, with a line that says how it was decided.
    """
    per_step = {w: v for w, v in per_step.items() if v}
    if len(per_step) < 2:
        return StragglerTest(None)
    slowest = max(per_step, key=lambda w: statistics.median(per_step[w]))
    mine = per_step[slowest]
    others = [v for w, values in per_step.items() if w != slowest for v in values]
    rule = (
        f"Straggler test: busy ms per step of the slowest worker against the others', one-sided "
        f"Mann-Whitney U; a straggler needs p < {P_VALUE}, {MIN_STEPS}+ steps each and "
        f"{_STRAGGLER_RATIO:g}x their median."
    )
    if len(mine) < MIN_STEPS or len(others) < MIN_STEPS:
        few = f"{slowest} ran {len(mine)}" if len(mine) < MIN_STEPS else (
            f"the others ran {len(others)}")  # fmt: skip
        reason = f"{rule}\nNot tested: {few} steps in this span, too few to tell."
        return StragglerTest(None, slowest, len(mine), reason=reason)
    ratio = statistics.median(mine) / max(statistics.median(others), 1e-9)
    p = mann_whitney_p(mine, others)
    flagged = p < P_VALUE and ratio >= _STRAGGLER_RATIO
    found = f"{slowest} is a straggler" if flagged else "No straggler"
    facts = f"{slowest}: {ratio:.1f}x their median, p = {p:.2g}, {len(mine)} steps"
    reason = f"{rule}\n{found} ({facts})."
    return StragglerTest(slowest if flagged else None, slowest, len(mine), ratio, p, reason)


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


def _style_axes(ax: Axes, bands: list[_Band], span: float, style: _Style = _PAGE) -> None:
    """Tasks named left of their bands, and each lane named after whose steps it holds."""
    ax.set_yticks([band.center for band in bands], [band.label for band in bands])
    centres = [band.top + first + count / 2 for band in bands for _, first, count in band.groups]
    names = [name for band in bands for name, _, _ in band.groups]
    ax.set_yticks(centres, names, minor=True)
    ax.yaxis.remove_overlapping_locs = False  # a band of one lane group: both at its centre
    # The task's name stands left of its lanes' names.
    pad = 8 + max(len(name) for name in names) * style.lane_font * 0.6
    ax.tick_params(axis="y", which="major", length=0, labelsize=style.tick_font, pad=pad)
    ax.tick_params(axis="y", which="minor", length=0, labelsize=style.lane_font,
                   labelcolor="#444444")  # fmt: skip
    for label in ax.get_yticklabels():
        label.set_fontweight("bold")
    ax.set_ylim(bands[-1].top + bands[-1].n_lanes + _BAND_GAP / 2, -_BAND_GAP / 2)
    ax.set_xlim(-span * 0.01, span * 1.01)
    ax.set_xlabel("time (ms) from the first op", fontsize=style.tick_font)
    ax.tick_params(axis="x", labelsize=style.tick_font)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def _default_title(bands: list[_Band], span: float) -> str:
    n_ops = sum(len(band.ops) for band in bands)
    n_tasks = len(bands)
    task_noun = "task" if n_tasks == 1 else "tasks"
    return f"{n_ops} ops on {n_tasks} {task_noun} over {_ms(span)} ms"


def _legend(fig: Figure, bands: list[_Band], style: _Style = _PAGE) -> None:
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
    if any(len({op.step_id for op in b.ops} - {None}) > 1 for b in bands if b.job != "ps"):
        line = {"color": _STEP_LINE["colors"], "linestyle": _STEP_LINE["linestyles"],
                "linewidth": 1.5}  # fmt: skip
        handles.append(Line2D([], [], label="a worker's step begins", **line))
    # Above the plot: below it, the straggler test's note (`plot_timeline`).
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncol=min(len(handles), 6 if style is _PAGE else 7),
        frameon=False,
        fontsize=style.legend_font,
    )


def _save(fig: Figure, base: Path, formats: Sequence[str], dpi: int = 120) -> None:
    base.parent.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        target = Path(f"{base}.{fmt}")
        fig.savefig(target, format=fmt, dpi=dpi)
        logger.debug("wrote timeline picture %s", target)
