"""``minitf demo``: between-graph training on a local cluster, synchronous or asynchronous.

The demo starts a `LocalCluster` — by default one ps task and three worker
tasks, each its own process on loopback — running a TF1 distributed script.
By default that is `minitf/examples/sync_mlp.py`: ``tf.train.
SyncReplicasOptimizer`` with ``replicas_to_aggregate=2`` of the three
workers, so one worker is a *backup* whose late gradient is dropped each
step. With ``--mode async`` it is `minitf/examples/async_mlp.py`, each
worker applying its gradients to the shared variables as it goes.

While the workers train, this process follows the global step on the ps
with a progress bar and — in sync mode — reads from the ps's accumulators
who contributed to each update (`minitf.cluster.SyncRecord`): a line per
reported step names the workers applied, the extra batches and the
gradients dropped as stale; the summary counts them per worker. When the
workers are done it evaluates the trained variables on a test set and
writes the summary and the record to the output folder.

It also shows what ran. The chief exports the graph it built
(``tf.train.export_meta_graph``); this process imports it and draws it
whole, per task and partitioned into the step each worker runs, with its
Send/Recv pairs. For a few global steps in the middle of training a
`minitf.viz.Tracer` records every op every task runs, written as a Chrome
trace and a timeline picture. ``--straggler 2=Constant(0.05)`` makes worker
2 wait 50 ms before computing its gradients (`minitf.cluster.delays`); the
wait shows in the trace and the drops in the record.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from tqdm import tqdm

import minitf as tf
from minitf.cluster import LocalCluster, SyncRecord, delays
from minitf.cluster.sync_record import describe
from minitf.examples import async_mlp, sync_mlp
from minitf.framework import meta_graph
from minitf.viz import Tracer, pictures

NUM_CLASSES = async_mlp.NUM_CLASSES
make_spirals = async_mlp.make_spirals
TRACED_STEPS = 6  # global steps recorded for the trace and timeline
# Gradients and optimizer slots are folded into one box per scope and task, so
# that the pictures fit a projector.
COLLAPSE = ["gradients", "Adam", "save", "report_uninitialized_variables"]
_LOCAL_STEPS = re.compile(r'^\[worker/(\d+)\] (\{"worker": .*\})$')
_TRAINS = re.compile(r"^\[worker/(\d+)\] worker \d+: global step")  # a worker's first step


class _Output:
    """Task output, printed above the progress bar; remembers what the workers report."""

    def __init__(self):
        self.local_steps: dict[int, int] = {}
        self.training: set[int] = set()  # the workers that have reported a step
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        for line in text.splitlines():
            self.lines.append(line)
            training = _TRAINS.match(line)
            if training:
                self.training.add(int(training.group(1)))
            match = _LOCAL_STEPS.match(line)
            if match:
                report = json.loads(match.group(2))
                self.local_steps[int(match.group(1))] = report["local_steps"]
            elif " INFO " not in line:
                tqdm.write(line)

    def flush(self) -> None:
        pass


class Settings:
    """The demo's options, checked before anything starts.

    Args:
        args: The parsed command line (``steps``, ``ps``, ``workers``, ``mode``
            or ``sync``, ``replicas_to_aggregate``, ``straggler``, ``out``).

    Raises:
        SystemExit: with one line saying which option is wrong and why.
    """

    def __init__(self, args):
        self.steps = int(args.steps)
        self.ps = int(getattr(args, "ps", 1))
        self.workers = int(getattr(args, "workers", 3))
        mode = getattr(args, "mode", None) or ("sync" if getattr(args, "sync", True) else "async")
        self.sync = mode == "sync"
        self.out = Path(args.out)
        replicas = getattr(args, "replicas_to_aggregate", None)
        self.replicas = int(replicas) if replicas is not None else max(1, self.workers - 1)
        self.straggler = getattr(args, "straggler", None) or ""
        self._check(mode)
        # A trace long enough to catch the slowest straggler several times (at
        # most 2 s): a straggler also waits for tokens the fast workers take.
        slowest = max((m.mean for m in delays.parse(self.straggler).values()), default=0.0)
        self.min_trace_seconds = min(2.0, 5 * slowest)

    def _check(self, mode: str) -> None:
        def fail(message: str):
            raise SystemExit(f"minitf demo: {message}")

        if mode not in ("sync", "async"):
            fail(f"--mode must be sync or async, got {mode!r}")
        if self.steps <= 0:
            fail(f"--steps must be positive, got {self.steps}")
        if self.ps < 1:
            fail(f"--ps must be at least 1 (the variables live there), got {self.ps}")
        if self.workers < 1:
            fail(f"--workers must be at least 1, got {self.workers}")
        if self.replicas < 1:
            fail(f"--replicas_to_aggregate must be at least 1, got {self.replicas}")
        if self.straggler:
            try:
                models = delays.parse(self.straggler)
            except ValueError as exc:
                fail(f"--straggler: {exc}")
            late = [w for w in models if w != "*" and int(w) >= self.workers]
            if late:
                fail(f"--straggler names worker {late[0]}, but there are {self.workers} workers")

    def describe(self) -> str:
        """What runs, in one line."""
        if not self.sync:
            how = "asynchronous training"
        else:
            r, n = self.replicas, self.workers
            how = f"SyncReplicasOptimizer, {r} of {n} gradients per update"
            if r < n:
                how += f" ({n - r} backup worker{'s' if n - r > 1 else ''})"
            elif r > n:
                how += " (workers compute several batches per update)"
        straggler = f", straggler {self.straggler}" if self.straggler else ""
        return (
            f"minitf demo: {self.ps} ps + {self.workers} worker processes on loopback, {how}"
            f"{straggler}; a 2-64-3 MLP on three spirals for {self.steps} global steps"
        )

    def script_args(self, report_every: int, graph_file: Path) -> list[str]:
        """The flags every task of the training script gets."""
        args = ["--steps", str(self.steps), "--report_every", str(report_every),
                "--export_graph", str(graph_file.resolve())]  # fmt: skip
        if self.sync:
            args += ["--replicas_to_aggregate", str(self.replicas)]
        return args


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


class _Reporter:
    """Prints one line per reported update: who was applied, who came twice, who was dropped.

    A gradient is dropped after the update it was meant for, so update k is
    printed once a later update exists (or at the end).
    """

    def __init__(self, record: SyncRecord | None, every: int):
        self.record, self.every, self._printed = record, every, 0

    def poll(self, final: bool = False) -> None:
        if self.record is None:
            return
        updates = self.record.refresh().updates
        ready = len(updates) if final else len(updates) - 1
        for update in updates[self._printed : max(self._printed, ready)]:
            if update["global_step"] % self.every == 0 or update["global_step"] == 1:
                tqdm.write(describe(update))
        self._printed = max(self._printed, ready)


def main(args) -> int:
    """Trains for ``args.steps`` global steps on a local cluster; writes metrics to ``args.out``."""
    settings = Settings(args)
    out = settings.out
    out.mkdir(parents=True, exist_ok=True)
    print(settings.describe())
    output = _Output()
    report_every = max(1, settings.steps // 10)
    graph_file = out / "graph.json"
    env = {delays.ENV: settings.straggler} if settings.straggler else {}
    cluster = LocalCluster(
        {"ps": settings.ps, "worker": settings.workers},
        script=(sync_mlp if settings.sync else async_mlp).__file__,
        args=settings.script_args(report_every, graph_file),
        output=output,
        env=env,
    )
    start = time.perf_counter()
    try:
        # The observer connects before any worker trains: the trace it takes
        # midway cannot miss a run that is over in less than a second.
        cluster.start(jobs=["ps"])
        sess, model = _observer(cluster)
        cluster.start(jobs=["worker"])
        with sess:
            reporter = _Reporter(SyncRecord(sess) if settings.sync else None, report_every)
            trace = _train_and_trace(cluster, sess, model, settings, reporter, output)
            failed = {k: c for k, c in cluster.poll().items() if k[0] != "ps" and c}
            if failed:
                print("a worker failed:", failed, *output.lines[-20:], sep="\n")
                return 1
            elapsed = time.perf_counter() - start
            reporter.poll(final=True)
            test_x, test_y = make_spirals(1000, seed=1)
            global_step = _global_step(sess, model)
            test_loss, test_acc = sess.run(
                [model["loss"], model["accuracy"]], {model["x"]: test_x, model["y"]: test_y}
            )
    finally:
        cluster.stop()
    metrics = {
        "mode": "sync" if settings.sync else "async",
        "ps_tasks": settings.ps,
        "workers": settings.workers,
        "global_steps": global_step,
        "local_steps": {str(k): v for k, v in sorted(output.local_steps.items())},
        "test_loss": float(test_loss),
        "test_accuracy": float(test_acc),
        "seconds": round(elapsed, 2),
        "cluster": cluster.cluster_spec.as_dict(),
    }
    if reporter.record is not None:
        record = reporter.record
        metrics["replicas_to_aggregate"] = settings.replicas
        metrics["applied"] = {str(k): v for k, v in record.applied_per_worker().items()}
        metrics["dropped"] = {str(k): v for k, v in record.dropped_per_worker().items()}
        (out / "sync_record.json").write_text(json.dumps(record.as_dict()) + "\n")
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    _print_summary(metrics, elapsed)
    print(f"outputs: {out / 'metrics.json'}")
    mode = "synchronous" if settings.sync else "asynchronous"
    _write_pictures(
        out, graph_file, trace, f"{mode} training, {settings.ps} ps + {settings.workers} workers"
    )
    return 0


def _print_summary(metrics: dict, elapsed: float) -> None:
    local = metrics["local_steps"]
    print(
        f"done: {metrics['global_steps']} global steps in {elapsed:.1f} s; "
        f"test accuracy {metrics['test_accuracy']:.3f}, test loss {metrics['test_loss']:.4f}"
    )
    if "applied" not in metrics:
        print("steps per worker: " + ", ".join(f"worker {k}: {v}" for k, v in local.items()))
        print("  (asynchronous: every worker step is one update of the variables on the ps)")
        return
    print("per worker: steps run, gradients applied, dropped as stale:")
    for worker in sorted(local, key=int):
        applied = metrics["applied"].get(worker, 0)
        dropped = metrics["dropped"].get(worker, 0)
        print(
            f"  worker {worker}: {local[worker]:5d} steps, {applied:5d} applied, "
            f"{dropped:5d} dropped"
        )
    print(
        f"  Each update averages at least {metrics['replicas_to_aggregate']} fresh gradients."
        "\n  A gradient computed for a global step that is already past is dropped as stale:"
        "\n  a backup worker's late one, and each worker's step after an initial token."
    )


def _workers_running(cluster: LocalCluster) -> bool:
    return any(code is None for (job, _), code in cluster.poll().items() if job != "ps")


def _every_worker_listens(cluster: LocalCluster) -> bool:
    """Waits while a worker's process lives and its server does not listen yet.

    A tracer records every task. On a loaded machine one worker can train
    while another is still importing minitf (a gradient per update may come
    from any worker), longer than a connection's 10 s.

    Returns:
        False if a worker has ended: a trace started now would miss it.
    """
    for (job, index), code in cluster.poll().items():
        if job == "worker":
            try:
                if code is not None:
                    return False
                cluster.connect(job, index).close()
            except tf.errors.FailedPreconditionError:
                return False  # it ended meanwhile
    return True


def _train_and_trace(
    cluster, sess: tf.Session, model: dict, settings, reporter: _Reporter, output: _Output
):
    """Follows the global step until the workers are done; traces a few steps midway.

    The trace spans `TRACED_STEPS` global steps, and with a straggler at least
    five times its mean delay, so that its waits show. It starts at a quarter
    of the steps, once every worker has reported a step (on a loaded machine
    a worker's process can start seconds after the others have trained), and
    ends soon after half of them at the latest: the workers must still be
    running when it stops, or what they recorded goes with them.

    Returns the traced span's step stats (None if a worker ended before it began).
    """
    steps = settings.steps
    bar = tqdm(total=steps, desc="global step", unit="step", leave=False, disable=None)
    tracer, trace, traced_from, traced_since, missed = None, None, None, None, False
    polls = 0
    while _workers_running(cluster):
        global_step = _global_step(sess, model)
        bar.update(min(steps, global_step) - bar.n)
        everyone = len(output.training) == settings.workers
        if (
            trace is None
            and tracer is None
            and not missed
            and global_step >= steps // 4
            and everyone
        ):
            missed = not _every_worker_listens(cluster)
            if not missed:
                tracer, traced_from = Tracer(sess).start(), global_step
                traced_since = time.monotonic()
        elif tracer is not None and (
            global_step >= steps // 2 + TRACED_STEPS
            or (
                global_step >= traced_from + TRACED_STEPS
                and time.monotonic() - traced_since >= settings.min_trace_seconds
            )
        ):
            trace, tracer = tracer.stop(), None
        polls += 1
        if tracer is None and polls % 5 == 0:
            reporter.poll()
        time.sleep(0.02 if tracer is None else 0.005)
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
            meta_graph.import_scoped_meta_graph(str(graph_file))  # the graph only
        steps = None
        if graph.get_collection(sync_mlp.CHIEF_STEP):  # a worker's step and the chief's
            steps = {
                "partitioned": graph.get_collection(sync_mlp.WORKER_STEP),
                "partitioned_chief": graph.get_collection(sync_mlp.CHIEF_STEP),
            }
        written += pictures.graph_pictures(
            graph, out / "graphs", steps=steps, collapse=COLLAPSE, full=True
        )
    if trace and any(dev["node_stats"] for dev in trace["dev_stats"]):
        title = f"{TRACED_STEPS} global steps of {what}"
        written += pictures.trace_pictures(trace, out, title=title, full=True)
    shown = [p for p in written if p.suffix in (".svg", ".json")]
    if shown:
        print("pictures (open the .svg files in a browser, trace.json in https://ui.perfetto.dev):")
        for path in shown:
            print(f"  {path}")
