"""Fixtures of the runtime tests."""

import pytest

import minitf as tf
from minitf.runtime.launcher import free_ports


@pytest.fixture
def ps_and_worker():
    """A ps task and a worker task: in-process servers on free loopback ports."""
    ports = free_ports(2)
    spec = tf.train.ClusterSpec(
        {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    )
    servers = {
        "ps": tf.train.Server(spec, job_name="ps", task_index=0),
        "worker": tf.train.Server(spec, job_name="worker", task_index=0),
    }
    yield servers
    for server in servers.values():
        server.stop()
