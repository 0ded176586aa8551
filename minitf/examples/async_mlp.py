"""Between-graph asynchronous training of a small MLP — a TF1 distributed script.

Every task of the cluster runs this same file with its role::

    H="--ps_hosts=h0:2222 --worker_hosts=h1:2222,h2:2222"
    python async_mlp.py --job_name=ps     --task_index=0 $H   # on h0
    python async_mlp.py --job_name=worker --task_index=0 $H   # on h1
    python async_mlp.py --job_name=worker --task_index=1 $H   # on h2

(or with ``TF_CONFIG`` set instead of the flags), and ``minitf launch --ps 1
--workers 2 async_mlp.py`` does exactly that on one machine. A ps task serves
the variables; each worker builds its own copy of the graph, placed by
``tf.train.replica_device_setter`` (variables on the ps, compute on itself),
and applies its gradients to the shared variables without waiting for the
others. Worker 0 — the chief — initializes the variables; the others wait
until they are.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import minitf as tf

NUM_CLASSES = 3


def make_spirals(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` noisy points on three interleaved spiral arms; returns (features, labels).

    Args:
        n: How many points.
        seed: The random seed.
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=n)
    radius = rng.uniform(0.1, 1.0, size=n)
    angle = 2 * np.pi * labels / NUM_CLASSES + 6.0 * radius + rng.normal(scale=0.25, size=n)
    features = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return features.astype(np.float32), labels.astype(np.int64)


def build_mlp(hidden: int = 64) -> dict:
    """The 2-hidden-3 MLP: placeholders ``x``/``y``, ``loss`` and ``accuracy``; no optimizer.

    Args:
        hidden: The width of the hidden layer.
    """
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    with tf.variable_scope("hidden"):
        w1 = tf.get_variable("weights", [2, hidden])
        b1 = tf.get_variable("biases", [hidden], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.variable_scope("logits"):
        w2 = tf.get_variable("weights", [hidden, NUM_CLASSES])
        b2 = tf.get_variable("biases", [NUM_CLASSES], initializer=tf.zeros_initializer())
        logits = tf.matmul(h, w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return {"x": x, "y": y, "loss": loss, "accuracy": accuracy}


def build_model(hidden: int = 64, learning_rate: float = 0.02) -> dict:
    """The MLP, its loss and accuracy, and an Adam step that bumps the global step.

    Args:
        hidden: The width of the hidden layer.
        learning_rate: Adam's learning rate.
    """
    model = build_mlp(hidden)
    global_step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(learning_rate).minimize(model["loss"], global_step=global_step)
    return {**model, "train": train, "global_step": global_step}


def task_parser(description: str, steps: int, report_every: int) -> argparse.ArgumentParser:
    """The flags every task of these example scripts takes.

    Its role as TF1 scripts take it (``--job_name``, ``--task_index``,
    ``--ps_hosts``, ``--worker_hosts``), how long to train, how often to
    report, and where the chief writes its graph.

    Args:
        description: The parser's description.
        steps: The default of ``--steps``.
        report_every: The default of ``--report_every``.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--job_name", default=None)
    parser.add_argument("--task_index", type=int, default=None)
    parser.add_argument("--ps_hosts", default="")
    parser.add_argument("--worker_hosts", default="")
    parser.add_argument("--steps", type=int, default=steps, help=f"global steps to train ({steps})")
    parser.add_argument("--report_every", type=int, default=report_every)
    parser.add_argument(
        "--export_graph", default=None, metavar="FILE",
        help="the chief writes its graph here (tf.train.export_meta_graph) for pictures",
    )  # fmt: skip
    return parser


def task_role(args: argparse.Namespace) -> tuple[dict, str, int]:
    """``(cluster, job, task index)`` from the TF1 flags, or from ``TF_CONFIG`` without them.

    Args:
        args: The flags `task_parser` parsed.
    """
    if args.job_name is None and os.environ.get("TF_CONFIG"):
        config = json.loads(os.environ["TF_CONFIG"])
        cluster, task = config["cluster"], config["task"]
        return cluster, task["type"], int(task["index"])
    cluster = {"ps": args.ps_hosts.split(","), "worker": args.worker_hosts.split(",")}
    return cluster, args.job_name, args.task_index


def parse_cluster(argv=None) -> tuple[dict, str, int, argparse.Namespace]:
    """The cluster and this task's role, from TF1 flags or ``TF_CONFIG``.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    args = task_parser(__doc__, steps=1000, report_every=100).parse_args(argv)
    return (*task_role(args), args)


INIT_TIMEOUT = 60.0
"""Seconds a worker waits for the chief's initialization before it gives up."""


def wait_for_initialization(sess: tf.Session, timeout: float = INIT_TIMEOUT) -> None:
    """A non-chief worker waits until the chief has initialized the variables on the ps.

    Args:
        sess: The worker's session.
        timeout: Seconds to wait.

    Raises:
        RuntimeError: naming the variables still uninitialized after ``timeout``
            seconds (the chief died, or never started).
    """
    uninitialized = tf.report_uninitialized_variables()
    deadline = time.monotonic() + timeout
    while len(names := sess.run(uninitialized)):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"Variables not initialized after {timeout:g} s (is the chief running?): "
                f"{[name.decode() for name in names]}"
            )
        time.sleep(0.05)  # the chief initializes them from another process


def main(argv=None) -> int:
    """Runs one task: a ps serves forever; a worker trains until the global step is reached.

    Args:
        argv: The command-line arguments (default: ``sys.argv[1:]``).
    """
    cluster_dict, job, index, args = parse_cluster(argv)
    cluster = tf.train.ClusterSpec(cluster_dict)
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    if job == "ps":
        server.join()
        return 0
    train_x, train_y = make_spirals(3000, seed=0)
    tf.set_random_seed(index)
    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:worker/task:{index}", cluster=cluster)
    ):
        model = build_model()
    rng = np.random.default_rng(100 + index)
    is_chief = index == 0
    if is_chief and args.export_graph:
        tf.train.export_meta_graph(args.export_graph)
    with tf.Session(server.target) as sess:
        if is_chief:
            sess.run(tf.global_variables_initializer())
        else:
            wait_for_initialization(sess)
        step = sess.make_callable(
            [model["train"], model["loss"], model["global_step"]], [model["x"], model["y"]]
        )
        mine, global_step, next_report = 0, 0, 0
        while global_step < args.steps:
            batch = rng.integers(0, len(train_x), size=64)
            _, loss, global_step = step(train_x[batch], train_y[batch])
            mine += 1
            if global_step >= next_report:
                print(f"worker {index}: global step {global_step:5d}  loss {loss:.4f}", flush=True)
                next_report = global_step + args.report_every
        print(json.dumps({"worker": index, "local_steps": mine}), flush=True)
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
