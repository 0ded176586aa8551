"""TensorBoard's own server reads minitf's event files: the graph with its devices, the scalars.

The ``tensorboard`` program of this Python is started on loopback on a log
directory minitf wrote, and asked through the HTTP API its pages use: the
graph dashboard's ``GraphDef`` (text format, parsed with TensorBoard's
protocol buffers) and the scalars dashboard's ``[wall_time, step, value]``
rows. What the graph's devices must be follows TF's
``replica_device_setter``: variables go to the ps tasks in turn, in the order
they are made, and the other ops to the worker; the scalars are numpy's.
"""

import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.error import URLError
from urllib.parse import urlencode
from urllib.request import urlopen

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.compat.proto.graph_pb2 import GraphDef

import minitf as tf
from minitf.runtime.distributed.launcher import free_ports
from tests.processes import process_gone

pytestmark = pytest.mark.timeout(60)

START_PATIENCE = 45  # seconds: TensorBoard starts a data server, slow on a busy machine


class TensorBoard:
    """The ``tensorboard`` server on ``logdir``, on a free loopback port."""

    def __init__(self, logdir: Path):
        self.port = free_ports(1)[0]
        program = Path(sys.executable).with_name("tensorboard")
        self.proc = subprocess.Popen(
            [str(program), "--logdir", str(logdir), "--host", "127.0.0.1"]
            + ["--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def get(self, path: str, **query) -> bytes:
        url = f"http://127.0.0.1:{self.port}/data/{path}?{urlencode(query)}"
        with urlopen(url, timeout=10) as response:
            return response.read()

    def wait_for(self, path: str, ready, **query):
        """Asks ``path`` until ``ready(answer)`` (JSON) holds; the server's death or the
        deadline fails the test."""
        deadline = time.monotonic() + START_PATIENCE
        while time.monotonic() < deadline:
            try:
                answer = json.loads(self.get(path, **query))
                if ready(answer):
                    return answer
            except (URLError, ConnectionError):
                pass  # not listening yet
            if process_gone(self.proc.pid, 0.2):  # waits on the process, not a sleep
                pytest.fail(f"tensorboard exited: {self.proc.stderr.read().decode()[-2000:]}")
        pytest.fail(f"tensorboard did not serve {path} within {START_PATIENCE} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc.stderr.close()


def _placed_model() -> tf.Graph:
    """A two-layer net with its variables on two ps tasks, as a ps/worker program builds it."""
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")
        with tf.device(setter):
            x = tf.placeholder(tf.float32, [None, 4], name="x")
            w1 = tf.Variable(tf.ones([4, 3]), name="w1")
            w2 = tf.Variable(tf.ones([3, 1]), name="w2")
            step = tf.train.get_or_create_global_step()
            hidden = tf.nn.relu(tf.matmul(x, w1, name="hidden"))
            loss = tf.reduce_mean(tf.matmul(hidden, w2), name="loss")
            tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return graph


def _write_scalars(writer: tf.summary.FileWriter, batches) -> None:
    """Runs a scalar summary of each batch's mean in a local session."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        summary = tf.summary.scalar("average", tf.reduce_mean(x))
        with tf.Session() as sess:
            for step, batch in enumerate(batches):
                writer.add_summary(sess.run(summary, {x: batch}), global_step=5 * step)


def test_tensorboard_serves_the_graph_with_its_devices_and_the_scalars(tmp_path):
    graph = _placed_model()
    rng = np.random.RandomState(3)
    batches = [rng.standard_normal(20).astype(np.float32) + i for i in range(4)]
    with tf.summary.FileWriter(str(tmp_path / "train"), graph) as writer:
        _write_scalars(writer, batches)
    server = TensorBoard(tmp_path)
    try:
        server.wait_for("plugin/scalars/tags", lambda tags: "average" in tags.get("train", {}))
        rows = server.wait_for(
            "plugin/scalars/scalars", lambda rows: len(rows) == 4, run="train", tag="average"
        )
        info = server.wait_for("plugin/graphs/info", lambda info: "train" in info)
        served = text_format.Parse(server.get("plugin/graphs/graph", run="train"), GraphDef())
    finally:
        server.stop()
    assert [step for _, step, _ in rows] == [0, 5, 10, 15]
    assert [value for _, _, value in rows] == pytest.approx([float(b.mean()) for b in batches])
    assert info["train"]["run_graph"] is True
    devices = {node.name: node.device for node in served.node}
    assert list(devices) == [op.name for op in graph.get_operations()]
    # TF's replica_device_setter: variables in turn on ps 0, 1, 0; the rest on the worker.
    assert devices["w1"] == "/job:ps/task:0"
    assert devices["w2"] == "/job:ps/task:1"
    assert devices["global_step"] == "/job:ps/task:0"
    assert devices["x"] == devices["hidden"] == devices["loss"] == "/job:worker/task:0"
    node = {n.name: n for n in served.node}["hidden"]
    assert node.op == "MatMul" and list(node.input) == ["x", "w1/read"]
    assert [d.size for d in node.attr["_output_shapes"].list.shape[0].dim] == [-1, 3]
