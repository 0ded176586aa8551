"""Checkpoint speed: ``tf.train.Saver`` against numpy writing the same bytes, in the same run.

Prints one JSON line with:

* ``save_mb_per_s`` / ``restore_mb_per_s``: a local session's ``Saver.save``
  and ``Saver.restore`` of four 16 MB float32 variables (64 MB), median of
  five;
* ``numpy_save_mb_per_s`` / ``numpy_load_mb_per_s``: the baseline — the same
  arrays written with ``np.savez`` to a temporary file, fsynced and renamed
  (what an atomic checkpoint has to do at least), and read back with
  ``np.load``;
* ``save_over_numpy`` / ``restore_over_numpy``: minitf's rate over numpy's
  (1.0 means the Saver costs nothing beyond the bytes);
* ``sharded_save_mb_per_s``: the same save with ``sharded=True`` on a local
  cluster of 2 ps tasks and 1 worker, each ps writing its own shard.

Run: ``.venv/bin/python benchmarks/checkpoint.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time

import numpy as np

import minitf as tf
from minitf.runtime.distributed.launcher import LocalCluster

SHAPE = (2048, 2048)  # 16 MB of float32
COUNT = 4
MB = COUNT * np.prod(SHAPE) * 4 / 1e6
REPEATS = 5


def _median_seconds(fn) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _variables():
    return [
        tf.get_variable(f"v{i}", SHAPE, initializer=tf.random_uniform_initializer())
        for i in range(COUNT)
    ]


def bench_local(directory: str) -> dict:
    graph = tf.Graph()
    with graph.as_default():
        _variables()
        saver = tf.train.Saver(max_to_keep=1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = os.path.join(directory, "model.ckpt")
            save = _median_seconds(lambda: saver.save(sess, prefix, write_meta_graph=False))
            restore = _median_seconds(lambda: saver.restore(sess, prefix))
            arrays = {f"v{i}": a for i, a in enumerate(sess.run(tf.global_variables()))}
    path = os.path.join(directory, "numpy.npz")

    def numpy_save():
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".npz")
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def numpy_load():
        with np.load(path) as data:
            for key in data.files:
                data[key]

    numpy_save_s = _median_seconds(numpy_save)
    numpy_load_s = _median_seconds(numpy_load)
    return {
        "save_mb_per_s": round(MB / save),
        "restore_mb_per_s": round(MB / restore),
        "numpy_save_mb_per_s": round(MB / numpy_save_s),
        "numpy_load_mb_per_s": round(MB / numpy_load_s),
        "save_over_numpy": round(numpy_save_s / save, 3),
        "restore_over_numpy": round(numpy_load_s / restore, 3),
    }


def bench_sharded(directory: str) -> dict:
    with LocalCluster({"ps": 2, "worker": 1}, output=None) as cluster:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
                _variables()
            saver = tf.train.Saver(sharded=True, max_to_keep=1)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                prefix = os.path.join(directory, "sharded.ckpt")
                save = _median_seconds(lambda: saver.save(sess, prefix, write_meta_graph=False))
    return {"sharded_save_mb_per_s": round(MB / save)}


def main() -> None:
    result = {"benchmark": "checkpoint", "megabytes": round(MB)}
    with tempfile.TemporaryDirectory() as directory:
        result.update(bench_local(directory))
        result.update(bench_sharded(directory))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
