"""One task of the ``sync_training`` benchmark: a TF1 script that runs on minitf and on TensorFlow.

Started once per task by ``benchmarks/sync_training.py`` (or by hand), with
the usual TF1 flags::

    python benchmarks/sync_training_task.py --framework minitf --job_name worker \\
        --task_index 0 --ps_hosts 127.0.0.1:2222 \\
        --worker_hosts 127.0.0.1:2223,127.0.0.1:2224 --mode sync

``--framework minitf`` imports ``minitf as tf``; ``--framework tf`` imports
``tensorflow.compat.v1 as tf`` with v2 behaviour disabled. Everything after
the import is the same code on both.

The model is a 784-128-10 MLP (relu, softmax cross-entropy) trained with
``GradientDescentOptimizer(0.1)`` on a fixed batch of 64 random examples per
worker, its variables on the ps through ``replica_device_setter``.
``--mode sync`` wraps the optimizer in ``SyncReplicasOptimizer`` (R = N = the
number of workers) and starts it by hand, as ``MonitoredTrainingSession``
would: the chief initializes the variables and runs the hook's
``after_create_session`` (accumulator steps, tokens, queue runner); the
other workers wait until the variables are initialized. ``--mode async``
runs a plain ``minimize``. In both modes every worker then adds one to a
counter on the ps and waits until all have, so training starts on all
workers together (in async mode the chief would otherwise measure steps
made before the others joined).

The chief (worker 0) prints, flushed, to stdout:

* ``FIRST_STEP`` when its first training step has completed;
* ``WINDOW_START <perf_counter> <global step>`` when the global step first
  reaches ``--warmup``;
* ``WINDOW_END <perf_counter> <global step>`` when it reaches
  ``--warmup + --steps``.

In sync mode the global step is the token a step returns (the value of
``train_op``): the global step after the update that released the worker.
In async mode it is the global step fetched with the training op. ps tasks
serve until they are killed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

BATCH = 64
HIDDEN = 128
READY_TIMEOUT_S = 60.0


def parse_args(argv=None) -> argparse.Namespace:
    """The task's role, the cluster and the training options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=["minitf", "tf"], default="minitf")
    parser.add_argument("--job_name", choices=["ps", "worker"], required=True)
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--ps_hosts", required=True, help="comma-separated host:port")
    parser.add_argument("--worker_hosts", required=True, help="comma-separated host:port")
    parser.add_argument("--mode", choices=["sync", "async"], default="sync")
    parser.add_argument("--warmup", type=int, default=20, help="global steps before the window")
    parser.add_argument("--steps", type=int, default=200, help="global steps in the window")
    parser.add_argument(
        "--num_tokens", type=int, default=0, help="initial sync tokens (0: strict sync)"
    )
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="no ConfigProto: each framework picks its thread pools (the benchmark's "
        "other runs give both one thread per pool)",
    )
    return parser.parse_args(argv)


def import_framework(name: str):
    """``minitf``, or TensorFlow's v1 API in graph mode."""
    if name == "minitf":
        import minitf as tf

        return tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    tf.logging.set_verbosity(tf.logging.ERROR)  # deprecation warnings, on every task
    return tf


def build_model(tf, index: int) -> dict:
    """Placeholders, the MLP and its mean loss; variables start from fixed numpy values."""
    rng = np.random.default_rng(1234)  # the same initial values on every task
    w1 = (rng.standard_normal((784, HIDDEN)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((HIDDEN, 10)) * 0.05).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    b1 = tf.Variable(np.zeros(HIDDEN, np.float32), name="b1")
    b2 = tf.Variable(np.zeros(10, np.float32), name="b2")
    hidden = tf.nn.relu(tf.matmul(x, tf.Variable(w1, name="w1")) + b1)
    logits = tf.matmul(hidden, tf.Variable(w2, name="w2")) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    data = np.random.default_rng(100 + index)  # this worker's own fixed batch
    feed = {
        x: data.random((BATCH, 784), dtype=np.float32),
        y: data.integers(0, 10, size=BATCH).astype(np.int64),
    }
    return {"loss": loss, "feed": feed}


def wait_until(condition, what: str) -> None:
    """Polls ``condition()`` until it is true.

    Raises:
        RuntimeError: ``what``, if it is still false after ``READY_TIMEOUT_S``.
    """
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} after {READY_TIMEOUT_S} s")
        time.sleep(0.01)


def emit(*fields) -> None:
    """One machine-readable line on stdout, flushed at once."""
    print(*fields, flush=True)


def run_worker(tf, server, cluster, args, config) -> None:
    """Builds this worker's graph, initializes its part, and trains until the target step."""
    index, is_chief = args.task_index, args.task_index == 0
    num_workers = cluster.num_tasks("worker")
    target = args.warmup + args.steps
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{index}", cluster=cluster
        )
        with tf.device(setter):
            model = build_model(tf, index)
            global_step = tf.train.get_or_create_global_step()
            inner = tf.train.GradientDescentOptimizer(0.1)
            if args.mode == "sync":
                opt = tf.train.SyncReplicasOptimizer(
                    inner, replicas_to_aggregate=num_workers, total_num_replicas=num_workers
                )
                train_op = opt.minimize(model["loss"], global_step=global_step)
                hook = opt.make_session_run_hook(is_chief, num_tokens=args.num_tokens)
                ready_op = opt.ready_for_local_init_op
            else:
                train_op = inner.minimize(model["loss"], global_step=global_step)
                hook = None
                ready_op = tf.report_uninitialized_variables(tf.global_variables())
            # A barrier on the ps: every worker trains from the first step, so
            # the measured window never starts before the last worker has joined.
            joined = tf.Variable(0, name="workers_joined", trainable=False)
            join_op = tf.assign_add(joined, 1)
        if hook is not None:
            hook.begin()
        init_op = tf.global_variables_initializer()
        local_init_op = tf.local_variables_initializer()

    feed = model["feed"]
    fetches = train_op if args.mode == "sync" else [train_op, global_step]
    coord = tf.train.Coordinator()
    sess = tf.Session(server.target, graph=graph, config=config)
    try:
        if is_chief:
            sess.run(init_op)
        else:
            # The chief initializes the global variables; the others wait for it.
            wait_until(lambda: not len(sess.run(ready_op)), "variables not initialized")
        sess.run(local_init_op)
        if hook is not None:
            hook.after_create_session(sess, coord)
        sess.run(join_op)
        wait_until(lambda: sess.run(joined) >= num_workers, "not every worker joined")
        first, started = True, False
        while True:
            value = sess.run(fetches, feed)
            step = int(value if args.mode == "sync" else value[1])
            if is_chief:
                if first:
                    emit("FIRST_STEP")
                    first = False
                if not started and step >= args.warmup:
                    emit("WINDOW_START", repr(time.perf_counter()), step)
                    started = True
                if step >= target:
                    emit("WINDOW_END", repr(time.perf_counter()), step)
            if step >= target:
                break
    finally:
        coord.request_stop()
        # Closing the session ends the queue runner's pending sync_op (waiting
        # for gradients no worker sends any more) before the threads are joined.
        sess.close()
        try:
            coord.join(stop_grace_period_secs=5)
        except Exception as exc:  # a leftover runner thread must not fail a finished run
            print(f"worker {index}: coordinator join: {exc!r}", file=sys.stderr)


def main(argv=None) -> int:
    """Runs one task: a ps serves until killed; a worker trains, then exits."""
    args = parse_args(argv)
    save_notes = None
    notes_dir = os.environ.get("MINITF_BENCH_WIRE_LOG")
    if notes_dir and args.framework == "minitf":
        import sync_timeline  # this script's directory: benchmarks/

        path = os.path.join(notes_dir, f"{args.job_name}{args.task_index}.json")
        save_notes = sync_timeline.record_wire(path)
    tf = import_framework(args.framework)
    cluster = tf.train.ClusterSpec(
        {"ps": args.ps_hosts.split(","), "worker": args.worker_hosts.split(",")}
    )
    if args.defaults:
        config = None  # each framework's own thread pools, as a script that sets nothing
    else:
        config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    server = tf.train.Server(
        cluster, job_name=args.job_name, task_index=args.task_index, config=config
    )
    if args.job_name == "ps":
        server.join()
        return 0
    run_worker(tf, server, cluster, args, config)
    if save_notes is not None:
        save_notes()
    sys.stdout.flush()
    sys.stderr.flush()
    # The in-process server (TF's has no stop) may keep threads that block a
    # normal interpreter shutdown; the work is done, so leave at once.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
