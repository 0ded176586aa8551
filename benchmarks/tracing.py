"""The cost of seeing: tracing a step, and drawing a graph, beside the untraced step.

Prints one JSON line with:

* ``mlp_steps_per_s``: training steps per second of a 2-64-3 MLP (the demo's
  model, batch 64, Adam) in a local session, untraced — the baseline,
  measured in the same run; ``full_trace_steps_per_s``: the same step with
  ``RunOptions(trace_level=FULL_TRACE)`` and a ``RunMetadata`` each run;
  ``tracer_steps_per_s``: the same step while a `minitf.viz.Tracer` records;
  ``*_overhead``: how many times longer a traced step takes;
* ``us_per_traced_op``: the extra time per executed op that tracing costs;
* ``cluster_steps_per_s`` / ``cluster_traced_steps_per_s``: the same model on
  an in-process cluster (1 ps + 1 worker on loopback, variables on the ps),
  untraced and with FULL_TRACE — tracing there also ships the task's op
  stats back with its reply;
* ``dot_ms_*``: milliseconds to write the DOT text of the whole graph and of
  the partitioned step, and ``svg_ms_partitioned`` for Graphviz to lay it out
  (when ``dot`` is installed).

Run: ``.venv/bin/python benchmarks/tracing.py``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import json  # noqa: E402
import time  # noqa: E402

import minitf as tf  # noqa: E402
from minitf.examples import async_mlp  # noqa: E402
from minitf.runtime.distributed.launcher import free_ports  # noqa: E402
from minitf.viz import Tracer, dot, render  # noqa: E402
from minitf.viz.pictures import train_targets  # noqa: E402


def _rate(fn, seconds: float = 1.5) -> float:
    """Calls ``fn`` for about ``seconds`` (best of three thirds); returns calls per second."""
    fn()
    best = 0.0
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while n < 10 or time.perf_counter() - start < seconds / 3:
            fn()
            n += 1
        best = max(best, n / (time.perf_counter() - start))
    return best


def _batch():
    x, y = async_mlp.make_spirals(64, seed=0)
    return x, y


def bench_local() -> dict:
    graph = tf.Graph()
    with graph.as_default():
        model = async_mlp.build_model()
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
    x, y = _batch()
    feed = {model["x"]: x, model["y"]: y}
    train = model["train"]
    plain = _rate(lambda: sess.run(train, feed))
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    md = tf.RunMetadata()
    traced = _rate(lambda: sess.run(train, feed, options=options, run_metadata=md))
    ops_per_step = len(md.step_stats["dev_stats"][0]["node_stats"])
    with Tracer(sess):
        recorded = _rate(lambda: sess.run(train, feed))
    sess.close()
    return {
        "mlp_steps_per_s": round(plain),
        "full_trace_steps_per_s": round(traced),
        "tracer_steps_per_s": round(recorded),
        "full_trace_overhead": round(plain / traced, 2),
        "tracer_overhead": round(plain / recorded, 2),
        "ops_per_step": ops_per_step,
        "us_per_traced_op": round((1 / traced - 1 / plain) * 1e6 / ops_per_step, 2),
    }


def bench_cluster() -> dict:
    ports = free_ports(2)
    spec = tf.train.ClusterSpec(
        {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    )
    servers = [
        tf.train.Server(spec, job_name="ps", task_index=0),
        tf.train.Server(spec, job_name="worker", task_index=0),
    ]
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(cluster=spec)):
            model = async_mlp.build_model()
        sess = tf.Session(servers[1].target, graph=graph)
        sess.run(tf.global_variables_initializer())
    x, y = _batch()
    feed = {model["x"]: x, model["y"]: y}
    plain = _rate(lambda: sess.run(model["train"], feed))
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    traced = _rate(
        lambda: sess.run(model["train"], feed, options=options, run_metadata=tf.RunMetadata())
    )
    sess.close()
    for server in servers:
        server.stop()
    return {
        "cluster_steps_per_s": round(plain),
        "cluster_traced_steps_per_s": round(traced),
        "cluster_trace_overhead": round(plain / traced, 2),
    }


def bench_drawing() -> dict:
    ports = free_ports(3)
    spec = tf.train.ClusterSpec(
        {"ps": [f"127.0.0.1:{p}" for p in ports[:2]], "worker": [f"127.0.0.1:{ports[2]}"]}
    )
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(cluster=spec)):
            async_mlp.build_model()
    start = time.perf_counter()
    dot.graph_dot(graph)
    whole_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    text = dot.partitioned_dot(graph, [], targets=train_targets(graph))
    partitioned_ms = (time.perf_counter() - start) * 1000
    result = {
        "graph_ops": len(graph.get_operations()),
        "dot_ms_whole": round(whole_ms, 1),
        "dot_ms_partitioned": round(partitioned_ms, 1),
    }
    if render.dot_available():
        start = time.perf_counter()
        render.to_format(text, "svg")
        result["svg_ms_partitioned"] = round((time.perf_counter() - start) * 1000)
    return result


def main() -> None:
    result = {"benchmark": "tracing"}
    result.update(bench_local())
    result.update(bench_cluster())
    result.update(bench_drawing())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
