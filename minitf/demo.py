"""``minitf demo``: between-graph training on a local cluster, asynchronous or synchronous.

The demo starts a `LocalCluster` — by default one ps task and two worker
tasks, each its own process on loopback — running the TF1 distributed script
`minitf/examples/async_mlp.py`: variables on the ps (placed by
``replica_device_setter``), each worker training its own copy of the graph
and applying its gradients to the shared variables as it goes. The workers
print a line every N global steps; this process follows the global step on
the ps with a progress bar, and when the workers are done it evaluates the
trained variables — still on the ps — on a test set, prints a summary and
writes it to the output folder.

With ``--sync`` the workers run `minitf/examples/sync_mlp.py` instead: the
graph TF's ``SyncReplicasOptimizer`` builds, one update per round of
gradients from every worker, the chief applying it from its queue runner.

It also shows what ran. The chief exports the graph it built
(``tf.train.export_meta_graph``); this process imports it and draws it
whole, per task and partitioned into the step each worker runs, with its
Send/Recv pairs. And for a few global steps in the middle of training a
`minitf.viz.Tracer` records every op every task runs — both workers' steps
and their updates on the ps — written as a Chrome trace and a timeline
picture.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from tqdm import tqdm

import minitf as tf
from minitf.cluster import LocalCluster
from minitf.examples import async_mlp, sync_mlp
from minitf.viz import Tracer, pictures

NUM_CLASSES = async_mlp.NUM_CLASSES
make_spirals = async_mlp.make_spirals
TRACED_STEPS = 6  # global steps recorded for the trace and timeline
# Gradients and optimizer slots are folded into one box per scope and task, so
# that the pictures fit a projector.
COLLAPSE = ["gradients", "Adam", "save", "report_uninitialized_variables"]
_LOCAL_STEPS = re.compile(r'^\[worker/(\d+)\] \{"worker": \d+, "local_steps": (\d+)')


class _Output:
    """Task output, printed above the progress bar; remembers what the workers report."""

    def __init__(self):
        self.local_steps: dict[int, int] = {}
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        for line in text.splitlines():
            self.lines.append(line)
            match = _LOCAL_STEPS.match(line)
            if match:
                self.local_steps[int(match.group(1))] = int(match.group(2))
            elif " INFO " not in line:
                tqdm.write(line)

    def flush(self) -> None:
        pass


def _observer(cluster: LocalCluster) -> tuple[tf.Session, dict]:
    """A session on the ps with the model's graph: its variables are the ps's, found by name.

    The same device setter as the workers' puts each variable on the ps task
    that holds it (the round robin sees the variables in the same order); the
    rest runs on ps task 0.
    """
    graph = tf.Graph()
    setter = tf.train.replica_device_setter(
        worker_device="/job:ps/task:0", cluster=cluster.cluster_spec
    )
    with graph.as_default(), tf.device(setter):
        model = async_mlp.build_model()
    return tf.Session(cluster.target("ps", 0), graph=graph), model


def _global_step(sess: tf.Session, model: dict) -> int:
    try:
        return int(sess.run(model["global_step"]))
    except tf.errors.FailedPreconditionError:
        return 0  # the chief has not initialized the variables yet


def main(args) -> int:
    """Trains for ``args.steps`` global steps on a local cluster; writes metrics to ``args.out``."""
    steps = int(args.steps)
    if steps <= 0:
        raise SystemExit(f"--steps must be positive, got {steps}")
    ps, workers = int(getattr(args, "ps", 1)), int(getattr(args, "workers", 2))
    sync = bool(getattr(args, "sync", False))
    mode = "synchronous" if sync else "asynchronous"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"minitf demo: {ps} ps + {workers} worker processes on loopback, {mode} "
        f"training of a 2-64-3 MLP on three spirals for {steps} global steps"
    )
    output = _Output()
    report_every = max(1, steps // 10)
    graph_file = out / "graph.json"
    cluster = LocalCluster(
        {"ps": ps, "worker": workers},
        script=(sync_mlp if sync else async_mlp).__file__,
        args=["--steps", str(steps), "--report_every", str(report_every),
              "--export_graph", str(graph_file.resolve())],
        output=output,
    )  # fmt: skip
    start = time.perf_counter()
    with cluster:
        sess, model = _observer(cluster)
        with sess:
            trace = _train_and_trace(cluster, sess, model, steps)
            failed = {k: c for k, c in cluster.poll().items() if k[0] != "ps" and c}
            if failed:
                print("a worker failed:", failed, *output.lines[-20:], sep="\n")
                return 1
            elapsed = time.perf_counter() - start
            test_x, test_y = make_spirals(1000, seed=1)
            global_step = _global_step(sess, model)
            test_loss, test_acc = sess.run(
                [model["loss"], model["accuracy"]], {model["x"]: test_x, model["y"]: test_y}
            )
    metrics = {
        "ps_tasks": ps,
        "workers": workers,
        "global_steps": global_step,
        "local_steps": {str(k): v for k, v in sorted(output.local_steps.items())},
        "test_loss": float(test_loss),
        "test_accuracy": float(test_acc),
        "seconds": round(elapsed, 2),
        "cluster": cluster.cluster_spec.as_dict(),
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    per_worker = ", ".join(f"worker {k}: {v}" for k, v in sorted(output.local_steps.items()))
    print(
        f"done: {global_step} global steps in {elapsed:.1f} s ({per_worker}); "
        f"test accuracy {test_acc:.3f}, test loss {test_loss:.4f}"
    )
    print(f"outputs: {out / 'metrics.json'}")
    _write_pictures(out, graph_file, trace, f"{mode} training, {ps} ps + {workers} workers")
    return 0


def _workers_running(cluster: LocalCluster) -> bool:
    return any(code is None for (job, _), code in cluster.poll().items() if job != "ps")


def _train_and_trace(cluster: LocalCluster, sess: tf.Session, model: dict, steps: int):
    """Follows the global step until the workers are done; traces a few steps midway.

    Returns the traced span's step stats (None if training ended before it began).
    """
    bar = tqdm(total=steps, desc="global step", unit="step", leave=False, disable=None)
    tracer, trace, traced_from = None, None, None
    while _workers_running(cluster):
        global_step = _global_step(sess, model)
        bar.update(min(steps, global_step) - bar.n)
        if trace is None and tracer is None and global_step >= steps // 3:
            tracer, traced_from = Tracer(sess).start(), global_step
        elif tracer is not None and global_step >= traced_from + TRACED_STEPS:
            trace, tracer = tracer.stop(), None
        time.sleep(0.1 if tracer is None else 0.005)
    if tracer is not None:
        trace = tracer.stop()
    bar.close()
    return trace


def _write_pictures(out: Path, graph_file: Path, trace, what: str) -> None:
    """Draws the chief's graph and the traced span; prints where the pictures are."""
    written = []
    if graph_file.exists():
        graph = tf.Graph()
        with graph.as_default():
            tf.train.import_meta_graph(str(graph_file))
        steps = None
        if graph.get_collection(sync_mlp.CHIEF_STEP):  # a worker's step and the chief's
            steps = {
                "partitioned": graph.get_collection(sync_mlp.WORKER_STEP),
                "partitioned_chief": graph.get_collection(sync_mlp.CHIEF_STEP),
            }
        written += pictures.graph_pictures(graph, out / "graphs", steps=steps, collapse=COLLAPSE)
    if trace and any(dev["node_stats"] for dev in trace["dev_stats"]):
        title = f"{TRACED_STEPS} global steps of {what}"
        written += pictures.trace_pictures(trace, out, title=title)
    shown = [p for p in written if p.suffix in (".svg", ".json")]
    if shown:
        print("pictures (open the .svg files in a browser, trace.json in https://ui.perfetto.dev):")
        for path in shown:
            print(f"  {path}")
