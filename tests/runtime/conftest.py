"""Fixtures of the runtime tests."""

import queue
import threading

import pytest

import minitf as tf
from minitf.runtime.distributed.launcher import free_ports
from minitf.runtime.distributed.wire import Wire, WireListener


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


def connected_wires(secret: bytes) -> tuple[Wire, Wire, WireListener]:
    """Two authenticated ends of one loopback connection, and the listener (close all three)."""
    listener = WireListener(("127.0.0.1", 0), secret)
    served: queue.Queue = queue.Queue()

    def serve():
        sock, peer = listener.accept_socket()
        served.put(listener.authenticate(sock, peer))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = Wire.connect(listener.address, secret, timeout=10.0)
    server = served.get(timeout=10.0)
    thread.join(10.0)
    return client, server, listener
