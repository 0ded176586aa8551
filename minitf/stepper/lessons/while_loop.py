"""A ``tf.while_loop`` on a worker reading a variable on a ps: ``x = w ** 5`` by products.

The loop ``i = 0; x = 1; while i < 5: i, x = i + 1, x * w`` runs on worker
0; ``w`` (2.0) lives on ps 0 and its value enters the loop once, through a
constant ``Enter``. The worker prints ``x 32.0``. The lesson
``while_loop`` steps it: every move names its iteration, and ``until
iteration 3`` runs to the start of the fourth.
"""

from __future__ import annotations

import json
import os

import minitf as tf


def build() -> tuple[tf.Variable, tf.Tensor]:
    """The variable on ps 0 and the loop's result on worker 0."""
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(2.0, name="w")
    with tf.device("/job:worker/task:0"):
        _, x = tf.while_loop(
            lambda i, x: i < 5, lambda i, x: (i + 1, x * w), [tf.constant(0), tf.constant(1.0)]
        )
    return w, x


def main() -> None:
    """Runs this task's part, as ``TF_CONFIG`` says (``minitf launch`` and ``step`` set it)."""
    config = json.loads(os.environ["TF_CONFIG"])
    job, index = config["task"]["type"], int(config["task"]["index"])
    server = tf.train.Server(
        tf.train.ClusterSpec(config["cluster"]), job_name=job, task_index=index
    )
    if job == "ps":
        server.join()
        return
    w, x = build()
    with tf.Session(server.target) as sess:
        sess.run(w.initializer)
        print("x", sess.run(x))


if __name__ == "__main__":
    main()
