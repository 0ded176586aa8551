"""What each op type costs on this machine: a table a simulated cluster's clock can use.

`measure` runs a graph's step several times in a traced local session and
keeps, per op type, the median time its kernel took; ``"*"`` is the median
over all ops, for types the table does not list. `save` and `load` keep the
table as JSON, so it is measured once and used for every simulation::

    costs = op_costs.measure(train_op, feed_dict)
    op_costs.save(costs, "op_costs.json")
    cluster = SimulatedCluster({"ps": 1, "worker": 50}, op_cost="op_costs.json")

A kernel's time is what the trace measures (microseconds): it leaves out the
session's own overhead between ops.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from minitf.platform import formats

if TYPE_CHECKING:
    from minitf.framework.ops import Graph

FORMAT = "minitf-op-costs/1"


def measure(
    fetches: Any, feed_dict: dict | None = None, steps: int = 20, graph: Graph | None = None
) -> dict[str, float]:
    """Times ``fetches``' step ``steps`` times; returns ``{op type: median seconds}``.

    Args:
        fetches: What the step runs (a train op, say), as for ``Session.run``.
        feed_dict: Its feeds.
        steps: How many traced runs to take the medians over (after one untimed run).
        graph: The graph (default: the default graph). Its variables are
            initialized first, in a session of its own.

    Raises:
        ValueError: if ``steps`` is below 1.
    """
    import minitf as tf

    if steps < 1:
        raise ValueError(f"measure needs at least one step, not {steps}")
    graph = graph or tf.get_default_graph()
    times: dict[str, list[float]] = defaultdict(list)
    with graph.as_default(), tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(fetches, feed_dict)
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        for _ in range(steps):
            metadata = tf.RunMetadata()
            sess.run(fetches, feed_dict, options=options, run_metadata=metadata)
            for device in metadata.step_stats["dev_stats"]:
                for node in device["node_stats"]:
                    seconds = (node["op_end_rel_micros"] - node["op_start_rel_micros"]) / 1e6
                    times[node["op"]].append(seconds)
    table = {op: statistics.median(values) for op, values in sorted(times.items())}
    table["*"] = statistics.median(v for values in times.values() for v in values)
    return table


def save(table: dict[str, float], path: str) -> None:
    """Writes a table `measure` made as JSON.

    Args:
        table: ``{op type: seconds}``, as `measure` returns it.
        path: The file to write.
    """
    with open(path, "w") as f:
        json.dump({"format": FORMAT, "seconds": table}, f, indent=1)


def load(path: str) -> dict[str, float]:
    """A table `save` wrote.

    Args:
        path: The file.

    Raises:
        ValueError: if the file is not one.
    """
    data = formats.load(
        path, FORMAT, "an op-cost table", "make one with minitf.cluster.op_costs.measure and save"
    )
    return {str(op): float(seconds) for op, seconds in data["seconds"].items()}
