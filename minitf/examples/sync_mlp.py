"""Between-graph synchronous training of a small MLP — SyncReplicasOptimizer written out.

Run it like ``async_mlp.py``, once per task (flags or ``TF_CONFIG``), or with
``minitf launch --ps 1 --workers 2 sync_mlp.py``. The graph each worker builds
is the one TF 1.15's ``tf.train.SyncReplicasOptimizer(opt, R, N).minimize``
builds — same ops, names, name scopes and devices — spelled out with public
ops so that every piece of the protocol can be read, drawn and traced:

1. **Local step.** Each worker keeps ``sync_rep_local_step``, a *local*
   variable on its own task: the global step its current gradient belongs to.
   ``local_step_init_op`` copies the global step into it once at start-up.
2. **Accumulate.** For every trainable variable there is a
   ``ConditionalAccumulator`` on that variable's ps task, shared by all
   workers through ``shared_name = var.name + "/grad_accum"``. A worker step
   offers its gradients with ``apply_grad(grad, local_step)``; the
   accumulator keeps a gradient only if ``local_step >=`` its own global step,
   so gradients computed against old variables are dropped.
3. **Update (chief).** The chief runs ``sync_op`` in a loop (a `QueueRunner`
   thread): ``take_grad(R)`` on every accumulator waits for R fresh
   gradients and returns their mean (bumping the accumulator's step), the
   inner optimizer applies the means and increments ``global_step``, and
   ``tokens_per_step = max(N, R)`` tokens carrying the new global step are
   pushed to ``sync_token_q`` on the global step's ps task.
4. **Wait for a token.** A worker step ends by dequeuing one token (after its
   ``apply_grad`` ops ran) and storing it in its local step: ``train_op``.
   Tokens are the exit barrier of a step — a worker cannot start computing its
   next gradient before the update it contributed to has been applied.
5. **Start-up.** The chief initializes the variables, sets every
   accumulator's step to the global step and its own local step
   (``chief_init_op``), puts R initial tokens in the queue (``init_tokens_op``)
   so that the first R worker steps can exit, and starts the queue runner.
   The initial tokens carry the old global step, so the gradient computed
   after each of them is stale and dropped — TF does this on purpose (a
   restarted chief needs the slack).

``R`` (``replicas_to_aggregate``) is how many gradients make an update and
``N`` (``total_num_replicas``) how many workers there are: ``N > R`` gives
backup workers whose late gradients are dropped, ``N < R`` makes each worker
compute several batches per update.
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


def _local_step(global_step: tf.Variable) -> tf.Variable:
    """``sync_rep_local_step``: a local variable on this worker, whatever the device setter says.

    Colocating with a no-op made under the caller's device scope resets the
    device stack, so the variable lands on the worker even inside a
    ``replica_device_setter`` that would send a variable to a ps.
    """
    local_anchor = tf.no_op()
    with tf.colocate_with(local_anchor):
        return tf.Variable(
            0,
            trainable=False,
            collections=[tf.GraphKeys.LOCAL_VARIABLES],
            dtype=global_step.dtype.base_dtype,
            name="sync_rep_local_step",
        )


def _accumulate(grads_and_vars, local_step, replicas_to_aggregate: int):
    """One shared accumulator per variable, on its device: the workers' and the chief's ends.

    Returns:
        (train_ops, aggregated, accumulators): the workers' ``apply_grad`` ops,
        the chief's averaged gradients (None passed through) and the
        ``(accumulator, device)`` pairs.

    Raises:
        ValueError: for a gradient that is neither a Tensor, IndexedSlices nor None.
    """
    train_ops, aggregated, accumulators = [], [], []
    for grad, var in grads_and_vars:
        with tf.device(var.device):
            if grad is None:
                aggregated.append(None)
                continue
            shared_name = var.name + "/grad_accum"
            if isinstance(grad, tf.Tensor):
                accum = tf.ConditionalAccumulator(
                    grad.dtype, shape=var.get_shape(), shared_name=shared_name
                )
                train_ops.append(accum.apply_grad(grad, local_step=local_step))
                aggregated.append(accum.take_grad(replicas_to_aggregate))
            elif isinstance(grad, tf.IndexedSlices):
                accum = tf.SparseConditionalAccumulator(
                    grad.dtype, shape=(), shared_name=shared_name
                )
                train_ops.append(accum.apply_indexed_slices_grad(grad, local_step=local_step))
                aggregated.append(accum.take_indexed_slices_grad(replicas_to_aggregate))
            else:
                raise ValueError("Unknown grad type!")
            accumulators.append((accum, var.device))
    return train_ops, aggregated, accumulators


def init_tokens_op(sync: dict, num_tokens: int = -1) -> tf.Operation:
    """``get_init_tokens_op``: the op that puts the start-up tokens in ``sync_token_q``.

    Args:
        sync: What `apply_gradients_in_sync` returned.
        num_tokens: How many tokens; -1 means ``replicas_to_aggregate``.

    Raises:
        ValueError: if ``num_tokens`` is below ``replicas_to_aggregate -
            total_num_replicas`` (the first update could never be reached).
    """
    replicas, total = sync["replicas_to_aggregate"], sync["total_num_replicas"]
    tokens_needed = replicas - total
    if num_tokens == -1:
        num_tokens = replicas
    elif num_tokens < tokens_needed:
        raise ValueError(
            f"Too few tokens to finish the first step: {num_tokens} (given) vs "
            f"{tokens_needed} (needed)"
        )
    if num_tokens <= 0:
        return tf.no_op(name="no_init_tokens")
    global_step = sync["global_step"]
    with tf.device(global_step.device), tf.name_scope(""):
        tokens = tf.fill([num_tokens], global_step)
        return sync["sync_token_queue"].enqueue_many((tokens,))


def apply_gradients_in_sync(
    opt: tf.train.Optimizer,
    grads_and_vars,
    global_step: tf.Variable,
    replicas_to_aggregate: int,
    total_num_replicas: int | None = None,
    name: str = "sync_replicas",
) -> dict:
    """What ``SyncReplicasOptimizer(opt, ...).apply_gradients`` builds, in TF's order.

    Args:
        opt: The inner optimizer that applies the averaged gradients.
        grads_and_vars: ``(gradient, variable)`` pairs from ``opt.compute_gradients``.
        global_step: The global step variable (required: staleness is measured in it).
        replicas_to_aggregate: R, the gradients averaged into one update.
        total_num_replicas: N, the number of workers (default R).
        name: The name scope of the accumulators.

    Returns:
        A dict: ``train_op`` (a worker step; its value is the token, i.e. the
        global step the worker's next gradient belongs to), ``train_ops`` (the
        ``apply_grad`` ops), ``local_step``, ``local_step_init_op``,
        ``ready_for_local_init_op``, ``update_op``, ``sync_op``,
        ``sync_token_queue``, ``dummy_queue``, ``chief_queue_runner``,
        ``chief_init_op``, ``accumulators`` (``(accumulator, device)`` pairs),
        and the arguments.

    Raises:
        ValueError: for no gradients, no global step or an unknown gradient type.
    """
    grads_and_vars = list(grads_and_vars)
    if not grads_and_vars:
        raise ValueError("Must supply at least one variable")
    if global_step is None:
        raise ValueError("Global step is required to check staleness")
    if total_num_replicas is None:
        total_num_replicas = replicas_to_aggregate
    # Backup workers (N > R) still get a token each per update.
    tokens_per_step = max(total_num_replicas, replicas_to_aggregate)

    local_step = _local_step(global_step)
    local_step_init_op = tf.assign(local_step, global_step)
    ready_for_local_init_op = tf.report_uninitialized_variables(tf.global_variables())

    with tf.name_scope(None, name):
        train_ops, aggregated, accumulators = _accumulate(
            grads_and_vars, local_step, replicas_to_aggregate
        )
        var_list = [var for _, var in grads_and_vars]
        with tf.device(global_step.device), tf.name_scope(""):
            update_op = opt.apply_gradients(list(zip(aggregated, var_list)), global_step)
        with tf.device(global_step.device), tf.name_scope(""):
            sync_token_queue = tf.FIFOQueue(
                -1,
                global_step.dtype.base_dtype,
                shapes=(),
                name="sync_token_q",
                shared_name="sync_token_q",
            )
            # TF 1.15 gives the chief's queue runner this dummy queue: stopping
            # the runner closes its queue, and a closed sync_token_q on the ps
            # would never reopen for a restarted chief.
            dummy_queue = tf.FIFOQueue(
                1, tf.int32, shapes=(), name="dummy_queue", shared_name="dummy_queue"
            )
            # A worker step: offer the gradients, wait for a token, keep it.
            with tf.control_dependencies(train_ops):
                token = sync_token_queue.dequeue()
            train_op = tf.assign(local_step, token)
            # The chief's step: update, then release tokens_per_step tokens.
            with tf.control_dependencies([update_op]):
                # The tokens must carry the new global step. TF fills them from
                # `global_step` itself, whose `read` Identity aliases the
                # variable's buffer, so the Fill (after update_op) sees the
                # in-place increment. minitf's reads are snapshots taken when
                # the read runs, possibly before the update: read it here.
                tokens = tf.fill([tokens_per_step], global_step.read_value())
                sync_op = sync_token_queue.enqueue_many((tokens,))
            chief_queue_runner = tf.train.QueueRunner(dummy_queue, [sync_op])
        chief_init_ops = [local_step_init_op]
        for accum, device in accumulators:
            with tf.device(device):
                chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
        chief_init_op = tf.group(*chief_init_ops)

    return {
        "train_op": train_op,
        "train_ops": train_ops,
        "local_step": local_step,
        "local_step_init_op": local_step_init_op,
        "ready_for_local_init_op": ready_for_local_init_op,
        "update_op": update_op,
        "sync_op": sync_op,
        "sync_token_queue": sync_token_queue,
        "dummy_queue": dummy_queue,
        "chief_queue_runner": chief_queue_runner,
        "chief_init_op": chief_init_op,
        "accumulators": accumulators,
        "global_step": global_step,
        "replicas_to_aggregate": replicas_to_aggregate,
        "total_num_replicas": total_num_replicas,
        "tokens_per_step": tokens_per_step,
    }


def build_sync_graph(
    opt: tf.train.Optimizer,
    loss: tf.Tensor,
    global_step: tf.Variable,
    replicas_to_aggregate: int,
    total_num_replicas: int | None = None,
    num_tokens: int = -1,
    var_list=None,
) -> dict:
    """``SyncReplicasOptimizer.minimize(loss)`` for any loss, plus its init-tokens op.

    Gradients come from the inner optimizer's ``compute_gradients``, as in TF.
    Returns `apply_gradients_in_sync`'s dict with ``init_tokens_op`` added
    (see `init_tokens_op` for ``num_tokens``).
    """
    grads_and_vars = opt.compute_gradients(loss, var_list=var_list)
    sync = apply_gradients_in_sync(
        opt, grads_and_vars, global_step, replicas_to_aggregate, total_num_replicas
    )
    sync["init_tokens_op"] = init_tokens_op(sync, num_tokens)
    return sync


def build_sync_model(
    num_workers: int,
    replicas_to_aggregate: int | None = None,
    total_num_replicas: int | None = None,
    hidden: int = 64,
    learning_rate: float = 0.02,
    optimizer: str = "adam",
    num_tokens: int = -1,
) -> dict:
    """The MLP trained synchronously, built in the caller's device scope.

    Args:
        num_workers: Worker tasks in the cluster; the default for R and N.
        replicas_to_aggregate: R, gradients averaged per update.
        total_num_replicas: N, workers taking part.
        hidden: Hidden units of the MLP.
        learning_rate: Of the inner optimizer.
        optimizer: ``"adam"`` or ``"sgd"`` (gradient descent).
        num_tokens: Initial tokens (-1: R).

    Returns:
        `build_sync_graph`'s dict plus ``x``, ``y``, ``loss`` and ``accuracy``.

    Raises:
        ValueError: for an unknown optimizer name, and as `apply_gradients_in_sync`.
    """
    inner = {"adam": tf.train.AdamOptimizer, "sgd": tf.train.GradientDescentOptimizer}
    if optimizer not in inner:
        raise ValueError(f"optimizer must be one of {sorted(inner)}, got {optimizer!r}")
    model = build_mlp(hidden)
    global_step = tf.train.get_or_create_global_step()
    sync = build_sync_graph(
        inner[optimizer](learning_rate),
        model["loss"],
        global_step,
        num_workers if replicas_to_aggregate is None else replicas_to_aggregate,
        num_workers if total_num_replicas is None else total_num_replicas,
        num_tokens,
    )
    # Not TF's: name the two steps for tools that draw an exported graph (TF's
    # TRAIN_OP collection holds the update, which only the chief's step runs).
    tf.add_to_collection(WORKER_STEP, sync["train_op"])
    tf.add_to_collection(CHIEF_STEP, sync["sync_op"])
    return {**model, **sync}


def parse_args(argv=None) -> tuple[dict, str, int, argparse.Namespace]:
    """The cluster and this task's role, from TF1 flags or ``TF_CONFIG``, and the options."""
    parser = task_parser(__doc__.splitlines()[0], steps=500, report_every=50)
    parser.add_argument("--replicas_to_aggregate", type=int, default=None, help="R (workers)")
    parser.add_argument("--total_num_replicas", type=int, default=None, help="N (workers)")
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--learning_rate", type=float, default=0.02)
    parser.add_argument(
        "--step_timeout", type=float, default=60.0, help="seconds a step may wait for a token"
    )
    parser.add_argument(
        "--init_timeout", type=float, default=60.0, help="seconds to wait for the chief's init"
    )
    args = parser.parse_args(argv)
    return (*task_role(args), args)


def wait_until_ready(sess: tf.Session, ready_op: tf.Tensor, timeout: float) -> None:
    """A non-chief worker waits until the chief has initialized the global variables.

    Raises:
        RuntimeError: if they are still not initialized after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while len(not_ready := sess.run(ready_op)):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"Variables not initialized after {timeout} s (is the chief running?): "
                f"{[name.decode() for name in not_ready]}"
            )
        time.sleep(0.05)


def initialize_as_chief(sess: tf.Session, model: dict) -> None:
    """The chief's start-up: variables, accumulator steps and its local step, initial tokens."""
    sess.run(model["init_op"])
    sess.run(model["local_init_op"])
    sess.run(model["chief_init_op"])
    sess.run(model["init_tokens_op"])


def train(sess: tf.Session, model: dict, index: int, args, data) -> tuple[int, int]:
    """Worker steps until a token says the target global step was reached.

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
    train_x, train_y = data
    rng = np.random.default_rng(100 + index)
    token = sess.run(model["local_step"])
    local_steps, next_report = 0, 0
    while token < args.steps:
        batch = rng.integers(0, len(train_x), size=64)
        feed = {model["x"]: train_x[batch], model["y"]: train_y[batch]}
        token, loss = sess.run([model["train_op"], model["loss"]], feed, options=options)
        local_steps += 1
        if token >= next_report:
            print(f"worker {index}: global step {token:5d}  loss {loss:.4f}", flush=True)
            next_report = token + args.report_every
    return local_steps, int(token)


def run_worker(target: str, graph: tf.Graph, model: dict, index: int, args) -> dict:
    """Initializes (chief) or waits (others), trains, and reports what this worker did."""
    eval_x, eval_y = make_spirals(1000, seed=1)
    evaluate = {model["x"]: eval_x, model["y"]: eval_y}
    report = {"worker": index}
    coord, threads = None, []
    with tf.Session(target, graph=graph) as sess:
        try:
            if index == 0:
                initialize_as_chief(sess, model)
                eval_before = sess.run(model["loss"], evaluate)  # no update can run yet
                coord = tf.train.Coordinator()
                threads = model["chief_queue_runner"].create_threads(
                    sess, coord=coord, daemon=True, start=True
                )
            else:
                wait_until_ready(sess, model["ready_for_local_init_op"], args.init_timeout)
                sess.run(model["local_init_op"])
                sess.run(model["local_step_init_op"])
            local_steps, token = train(sess, model, index, args, make_spirals(3000, seed=0))
            report.update(local_steps=local_steps, global_step=token)
            if coord is not None:
                eval_after = sess.run(model["loss"], evaluate)
                report["eval_loss"] = [float(eval_before), float(eval_after)]
        finally:
            if coord is not None:
                coord.request_stop()
    # Closing the session ended the queue runner's last sync_op run, which was
    # waiting in take_grad for gradients no worker sends any more; the stop had
    # been requested first, so the coordinator does not report that error.
    if coord is not None:
        coord.join(threads, stop_grace_period_secs=10)
    return report


def main(argv=None) -> int:
    """Runs one task: a ps serves forever; a worker trains until the global step is reached."""
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
