"""Pictures of a simulated run's report: time per update, staleness, idle time, loss.

Each plot is a PNG sized for a slide, drawn with matplotlib's non-interactive
backend from `minitf.cluster.SimulatedCluster.report`'s data alone.
"""

from __future__ import annotations

import os
from collections import Counter

_SIZE = (8, 4.5)  # inches: a 16:9 slide
_DPI = 120


def write(report: dict, directory: str) -> dict[str, str]:
    """Draws the report's plots into ``directory``; returns ``{name: path}``.

    Args:
        report: A `SimulatedCluster.report`.
        directory: Where to write the PNG files (it must exist).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = {}
    plots = [("time_per_update", _time_per_update), ("staleness", _staleness)]
    plots.append(("idle_time", _idle_time))
    if report.get("loss"):
        plots.append(("loss", _loss))
    for name, draw in plots:
        fig, ax = plt.subplots(figsize=_SIZE, dpi=_DPI)
        draw(report, ax)
        fig.tight_layout()
        path = os.path.join(directory, f"{name}.png")
        fig.savefig(path)
        plt.close(fig)
        paths[name] = path
    return paths


def _time_per_update(report: dict, ax) -> None:
    times = [u["time"] for u in report["updates"]]
    gaps = [b - a for a, b in zip([0.0, *times], times)]
    ax.bar([u["global_step"] for u in report["updates"]], gaps, color="#0072B2", width=0.9)
    if gaps:
        mean = sum(gaps) / len(gaps)
        ax.axhline(mean, color="#D55E00", linestyle="--", label=f"mean {mean:.3g} s")
        ax.legend()
    ax.set_xlabel("global step")
    ax.set_ylabel("virtual seconds since the last update")
    ax.set_title("Time per update")


def _staleness(report: dict, ax) -> None:
    gradients = report["gradients"]
    kept = Counter(g["staleness"] for g in gradients if not g["dropped"])
    dropped = Counter(g["staleness"] for g in gradients if g["dropped"] and not g["cancelled"])
    cancelled = Counter(g["staleness"] for g in gradients if g["cancelled"])
    values = sorted(set(kept) | set(dropped) | set(cancelled))
    layers = [
        ([kept[v] for v in values], "#009E73", None, "applied"),
        ([dropped[v] for v in values], "#CC79A7", "//", "dropped"),
    ]
    if cancelled:
        layers.append(([cancelled[v] for v in values], "#BBBBBB", "xx", "cancelled"))
    _stacked(ax, values, layers)
    ax.set_xlabel("staleness (global step at the push - the worker's local step)")
    ax.set_ylabel("gradients")
    ax.set_title("Staleness of the pushed gradients")
    if values:
        ax.set_xticks(values)
        ax.legend()


def _idle_time(report: dict, ax) -> None:
    workers = report["workers"]
    names = [str(w["worker"]) for w in workers]
    _stacked(
        ax,
        names,
        [
            ([w["busy_time"] for w in workers], "#0072B2", None, "running ops"),
            ([w["delay_time"] for w in workers], "#E69F00", "..", "delay"),
            ([w["idle_time"] for w in workers], "#BBBBBB", "//", "idle"),
        ],
    )
    ax.set_xlabel("worker")
    ax.set_ylabel("virtual seconds")
    ax.set_title("Where each worker's time went")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


def _loss(report: dict, ax) -> None:
    by_worker: dict[int, list] = {}
    for entry in report["loss"]:
        by_worker.setdefault(entry["worker"], []).append((entry["time"], entry["value"]))
    many = len(by_worker) > 8
    for worker, points in sorted(by_worker.items()):
        times, values = zip(*points)
        if many:  # one colour for all: a cloud, not a legend of 100 names
            ax.plot(times, values, ".", color="#0072B2", markersize=2, alpha=0.4)
        else:
            ax.plot(times, values, ".-", markersize=3, linewidth=0.8, label=f"worker {worker}")
    ax.set_xlabel("virtual seconds")
    ax.set_ylabel("loss (each worker's own batches)")
    ax.set_title("Loss against virtual time")
    if not many:
        ax.legend(loc="upper right")


def _stacked(ax, x, layers) -> None:
    """Bars stacked in order: each layer is ``(heights, colour, hatch, label)``."""
    bottom = [0.0] * len(x)
    for heights, color, hatch, label in layers:
        ax.bar(x, heights, bottom=bottom, color=color, hatch=hatch, label=label)
        bottom = [b + h for b, h in zip(bottom, heights)]
