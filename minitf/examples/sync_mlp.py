"""Between-graph synchronous training of a small MLP with ``tf.train.SyncReplicasOptimizer``.

Run it like ``async_mlp.py``, once per task (flags or ``TF_CONFIG``), or with
``minitf launch --ps 1 --workers 3 sync_mlp.py -- --replicas_to_aggregate 2``.
Each worker builds its own graph (between-graph replication) the way TF1's
distributed guide does:

    opt = tf.train.SyncReplicasOptimizer(
        tf.train.GradientDescentOptimizer(0.1),
        replicas_to_aggregate=R, total_num_replicas=N)
    train_op = opt.minimize(loss, global_step=global_step)
    hook = opt.make_session_run_hook(is_chief, num_tokens=-1)

What the optimizer builds, and why, is told in
`minitf/train/sync_replicas_optimizer.py`: an accumulator per variable on
its ps task, the token queue beside the global step, the local step on each
worker. This script is what runs around it — the part TF1's
``MonitoredTrainingSession`` does:

1. **The chief** (worker 0) initializes the variables; then the hook's
   ``after_create_session`` sets every accumulator's step and the chief's
   local step, puts the initial tokens in ``sync_token_q`` and starts the
   queue runner whose thread runs ``sync_op`` (take R gradients, update,
   release tokens) in a loop.
2. **The other workers** wait until the chief has initialized the global
   variables, then the hook copies the global step into their local step.
3. **Every worker** runs ``train_op`` until a token says the target global
   step was reached. A step offers this worker's gradients and returns the
   token it dequeued: the global step its next gradient belongs to.

``--num_tokens 0`` gives strict synchronisation (no worker runs ahead);
``--replicas_to_aggregate`` below the number of workers gives backup workers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import minitf as tf
from minitf.examples.async_mlp import build_mlp, make_spirals, task_parser, task_role

WORKER_STEP = "sync_replicas_worker_step"
"""The collection holding ``train_op``, the step every worker runs."""
CHIEF_STEP = "sync_replicas_chief_step"
"""The collection holding ``sync_op``, the step the chief's queue runner runs."""


def build_sync_model(
    num_workers: int,
    replicas_to_aggregate: int | None = None,
    total_num_replicas: int | None = None,
    hidden: int = 64,
    learning_rate: float = 0.02,
    optimizer: str = "adam",
) -> dict:
    """The MLP trained by a `SyncReplicasOptimizer`, built in the caller's device scope.

    Args:
        num_workers: Worker tasks in the cluster; the default for R and N.
        replicas_to_aggregate: R, gradients averaged per update.
        total_num_replicas: N, workers taking part.
        hidden: Hidden units of the MLP.
        learning_rate: Of the inner optimizer.
        optimizer: ``"adam"`` or ``"sgd"`` (gradient descent).

    Returns:
        A dict: ``x``, ``y``, ``loss``, ``accuracy``, ``global_step``,
        ``opt`` (the `SyncReplicasOptimizer`), ``train_op`` (a worker step)
        and ``sync_op`` (the chief's step).

    Raises:
        ValueError: for an unknown optimizer name.
    """
    inner = {"adam": tf.train.AdamOptimizer, "sgd": tf.train.GradientDescentOptimizer}
    if optimizer not in inner:
        raise ValueError(f"optimizer must be one of {sorted(inner)}, got {optimizer!r}")
    model = build_mlp(hidden)
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(
        inner[optimizer](learning_rate),
        replicas_to_aggregate=replicas_to_aggregate or num_workers,
        total_num_replicas=total_num_replicas or num_workers,
    )
    train_op = opt.minimize(model["loss"], global_step=global_step)
    (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
    # Not TF's: name the two steps for tools that draw an exported graph (TF's
    # TRAIN_OP collection holds the update, which only the chief's step runs).
    tf.add_to_collection(WORKER_STEP, train_op)
    tf.add_to_collection(CHIEF_STEP, sync_op)
    return {
        **model,
        "global_step": global_step,
        "opt": opt,
        "train_op": train_op,
        "sync_op": sync_op,
    }


def parse_args(argv=None) -> tuple[dict, str, int, argparse.Namespace]:
    """The cluster and this task's role, from TF1 flags or ``TF_CONFIG``, and the options.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = task_parser(__doc__.splitlines()[0], steps=500, report_every=50)
    parser.add_argument("--replicas_to_aggregate", type=int, default=None, help="R (workers)")
    parser.add_argument("--total_num_replicas", type=int, default=None, help="N (workers)")
    parser.add_argument(
        "--num_tokens", type=int, default=-1, help="initial tokens (-1: R; 0: strict sync)"
    )
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--learning_rate", type=float, default=0.02)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument(
        "--step_timeout", type=float, default=60.0, help="seconds a step may wait for a token"
    )
    parser.add_argument(
        "--init_timeout", type=float, default=60.0, help="seconds to wait for the chief's init"
    )
    parser.add_argument(
        "--report_variables",
        action="store_true",
        help="the chief's report holds the trainable variables before and after training",
    )
    args = parser.parse_args(argv)
    return (*task_role(args), args)


def wait_until_ready(sess: tf.Session, ready_op: tf.Tensor, timeout: float) -> None:
    """A non-chief worker waits until the chief has initialized the global variables.

    Args:
        sess: The worker's session.
        ready_op: Names the global variables not initialized yet.
        timeout: Seconds to wait.

    Raises:
        RuntimeError: if they are still not initialized after ``timeout`` seconds.
    """
    # Only the pauses between checks count: a check held by a stepper is not a wait.
    waited = 0.0
    while len(not_ready := sess.run(ready_op)):
        if waited > timeout:
            raise RuntimeError(
                f"Variables not initialized after {timeout} s (is the chief running?): "
                f"{[name.decode() for name in not_ready]}"
            )
        time.sleep(0.05)
        waited += 0.05


def worker_batches(index: int, data, batch_size: int):
    """This worker's batches, in order: its own seeded sample of the training data.

    Args:
        index: The worker's index.
        data: ``(features, labels)`` of the training data.
        batch_size: The batch size.
    """
    train_x, train_y = data
    rng = np.random.default_rng(100 + index)
    while True:
        batch = rng.integers(0, len(train_x), size=batch_size)
        yield train_x[batch], train_y[batch]


def train(sess: tf.Session, model: dict, index: int, args, data) -> tuple[int, int]:
    """Worker steps until a token says the target global step was reached.

    Args:
        sess: The worker's session.
        model: What `build_sync_model` returned.
        index: The worker's index.
        args: The flags `parse_args` parsed.
        data: ``(features, labels)`` of the training data.

    Returns:
        (local steps run, last token) — the last token is the final global step.

    Raises:
        tf.errors.DeadlineExceededError: if a step waits for a token longer
            than ``--step_timeout``.
    """
    # The loop stops on the token, which is the global step right after the
    # update that released this worker. A fetched global_step would not do: its
    # read is not ordered after the dequeue, so it may predate that update, and
    # the extra step it causes would feed one update too many. Once the update
    # that reaches --steps has run, each worker gets one of its max(N, R)
    # tokens and stops; no gradient is ever fresh enough for another update,
    # so nobody is left waiting. The timeout covers the failure case
    # (tensorflow#5022, #7970): a worker that dies while holding a token
    # leaves the others waiting for R gradients forever; with timeout_in_ms
    # their step fails with DeadlineExceededError instead.
    options = tf.RunOptions(timeout_in_ms=int(args.step_timeout * 1000))
    batches = worker_batches(index, data, args.batch_size)
    token = sess.run(sess.graph.get_tensor_by_name("sync_rep_local_step:0"))
    local_steps, next_report = 0, 0
    while token < args.steps:
        x, y = next(batches)
        feed = {model["x"]: x, model["y"]: y}
        token, loss = sess.run([model["train_op"], model["loss"]], feed, options=options)
        local_steps += 1
        if token >= next_report:
            print(f"worker {index}: global step {token:5d}  loss {loss:.4f}", flush=True)
            next_report = token + args.report_every
    return local_steps, int(token)


def _variables(sess: tf.Session) -> dict:
    return {v.op.name: sess.run(v).tolist() for v in tf.trainable_variables()}


def run_worker(target: str, graph: tf.Graph, model: dict, index: int, args) -> dict:
    """Starts this worker's part of the protocol (the hook), trains, and reports what it did.

    Args:
        target: The worker's server target.
        graph: The graph `build_sync_model` built in.
        model: What `build_sync_model` returned.
        index: The worker's index.
        args: The flags `parse_args` parsed.
    """
    eval_x, eval_y = make_spirals(1000, seed=1)
    evaluate = {model["x"]: eval_x, model["y"]: eval_y}
    report = {"worker": index}
    hook = model["hook"]
    coord = tf.train.Coordinator()
    with tf.Session(target, graph=graph) as sess:
        try:
            if index == 0:
                sess.run(model["init_op"])
                report["eval_loss"] = [float(sess.run(model["loss"], evaluate))]
                if args.report_variables:
                    report["initial"] = _variables(sess)
            else:
                wait_until_ready(sess, model["opt"].ready_for_local_init_op, args.init_timeout)
            sess.run(model["local_init_op"])
            # The chief: accumulator steps, initial tokens, the queue runner's thread.
            hook.after_create_session(sess, coord)
            local_steps, token = train(sess, model, index, args, make_spirals(3000, seed=0))
            report.update(local_steps=local_steps, global_step=token)
            if index == 0:
                report["eval_loss"].append(float(sess.run(model["loss"], evaluate)))
                if args.report_variables:
                    report["final"] = _variables(sess)
        finally:
            coord.request_stop()
    # Closing the session ended the queue runner's last sync_op run, which was
    # waiting in take_grad for gradients no worker sends any more; the stop had
    # been requested first, so the coordinator does not report that error.
    coord.join(stop_grace_period_secs=10)
    return report


def main(argv=None) -> int:
    """Runs one task: a ps serves forever; a worker trains until the global step is reached.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    cluster_dict, job, index, args = parse_args(argv)
    cluster = tf.train.ClusterSpec(cluster_dict)
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    if job == "ps":
        server.join()
        return 0
    num_workers = cluster.num_tasks("worker")
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(index)
        with tf.device(
            tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{index}", cluster=cluster
            )
        ):
            model = build_sync_model(
                num_workers,
                args.replicas_to_aggregate,
                args.total_num_replicas,
                learning_rate=args.learning_rate,
                optimizer=args.optimizer,
            )
        model["hook"] = model["opt"].make_session_run_hook(index == 0, args.num_tokens)
        model["hook"].begin()
        model["init_op"] = tf.global_variables_initializer()
        model["local_init_op"] = tf.local_variables_initializer()
        if index == 0 and args.export_graph:
            tf.train.export_meta_graph(args.export_graph)
    try:
        report = run_worker(server.target, graph, model, index, args)
    except tf.errors.DeadlineExceededError as exc:
        print(f"worker {index}: no token within {args.step_timeout} s: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop()
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
