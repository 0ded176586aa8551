"""The wire under garbage: nothing unauthenticated is decoded, nothing malformed stops a task.

A ps task runs as its own process. Peers without the secret send random
bytes, frames the size of a challenge's answer, and a pickle that would
write a file if it were ever unpickled: each is refused, logged with its
address, and the file is never written. A peer with the secret then sends
frames that are not messages and messages that are not requests: each gets
an error reply on the same connection, which keeps working, and the task
keeps serving sessions. The random frames come from a fixed seed
(``MINITF_FAULT_SEED``).
"""

import os
import pickle
import random
import socket
import struct

import numpy as np
import pytest

import minitf as tf
from minitf.framework import errors
from minitf.runtime.distributed.connect import cluster_secret
from minitf.runtime.distributed.launcher import LocalCluster
from minitf.runtime.distributed.wire import Wire

from .support import WatchedOutput, base_seed

pytestmark = [pytest.mark.timeout(90), pytest.mark.faults]


class _WritesAFile:
    """Unpickling this writes ``path``: the proof that a pickle was decoded."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture(scope="module")
def ps_task():
    output = WatchedOutput()
    cluster = LocalCluster({"ps": 1}, output=output)
    with cluster:
        output.wait_for(r"serving /job:ps/task:0")
        yield cluster, output


def _still_serves(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            total = tf.reduce_sum(tf.constant(np.arange(10.0)))
        with tf.Session(cluster.target("ps", 0)) as sess:
            assert sess.run(total) == 45.0


def _garbage(rng: random.Random, marker: str) -> list[bytes]:
    evil = pickle.dumps(_WritesAFile(marker))
    return [
        b"",  # connects and hangs up
        rng.randbytes(rng.randrange(1, 64)),
        rng.randbytes(4096),
        struct.pack("!i", len(evil)) + evil,  # a well-framed pickle, before any challenge
        struct.pack("!i", 20) + rng.randbytes(20),  # the size of a challenge's answer
        struct.pack("!i", -1) + struct.pack("!Q", 1 << 40),  # announces a terabyte
        b"#CHALLENGE#" + rng.randbytes(32),
    ]


def test_unauthenticated_garbage_is_refused_and_logged_before_anything_is_decoded(
    ps_task, tmp_path
):
    cluster, output = ps_task
    rng = random.Random(base_seed())
    marker = str(tmp_path / "decoded")
    host, port = cluster.cluster_spec.task_address("ps", 0).split(":")
    for payload in _garbage(rng, marker):
        start = output.mark()
        with socket.create_connection((host, int(port)), timeout=15) as sock:
            peer = "{}:{}".format(*sock.getsockname())
            try:
                sock.sendall(payload)
                sock.shutdown(socket.SHUT_WR)
                while sock.recv(4096):  # the task's challenge, then its hang-up
                    pass
            except OSError:
                pass  # it hung up with our bytes unread, or before we were done
        output.wait_for(rf"(refused|dropped) a connection from {peer}", start, timeout=15)
    assert not os.path.exists(marker)
    _still_serves(cluster)


def _malformed(rng: random.Random, marker: str) -> list[tuple[str, object]]:
    """(what, how to send it): raw frames and decoded non-requests."""
    evil = pickle.dumps(_WritesAFile(marker))
    return [
        ("an empty frame", b""),
        ("a short frame", b"\x00\x01"),
        ("random bytes", rng.randbytes(200)),
        ("a bad pickle", struct.pack("!I", 0) + b"\x80\x05garbage"),
        ("too many buffers", struct.pack("!I", 1 << 30) + pickle.dumps(("hello", 1))),
        # The flag of arrays inside the frame, without the count of them that must follow.
        ("a short in-frame count", struct.pack("!I", 1 << 29) + b"\x00\x01"),
        ("not a tuple", ("msg", 42)),
        ("an empty tuple", ("msg", ())),
        ("an unknown kind", ("msg", ("launch_missiles", 3))),
        ("a private method", ("msg", ("stepper___init__", 4))),
        ("a short run", ("msg", ("run", 5, "handle"))),
        ("a short tensor", ("msg", ("tensor", 6))),
        ("a non-string kind", ("msg", (7, 8, 9))),
        ("an unknown graph", ("msg", ("run", 10, "no-such-handle", 1, [], None, False, False))),
        # Authenticated peers are trusted with pickles, as TF's workers trust
        # their peers' protobufs; this one decodes to an open file, not a request.
        ("a decoding object", struct.pack("!I", 0) + evil),
    ]


def test_malformed_messages_from_an_authenticated_peer_get_an_error_and_the_task_goes_on(
    ps_task, tmp_path
):
    cluster, output = ps_task
    rng = random.Random(base_seed() + 1)
    host, port = cluster.cluster_spec.task_address("ps", 0).split(":")
    wire = Wire.connect((host, int(port)), cluster_secret(), timeout=15)
    try:
        for what, payload in _malformed(rng, str(tmp_path / "decoded")):
            if isinstance(payload, bytes):
                wire._conn.send_bytes(payload)
            else:
                wire.send(payload[1])
            assert wire._conn.poll(15), f"no answer to {what}"
            reply = wire.recv()
            assert reply[0] == "error", what
            assert reply[2] == errors.INVALID_ARGUMENT or (
                what == "an unknown graph" and reply[2] != errors.OK
            ), (what, reply)
            assert "malformed request" in reply[3] or what == "an unknown graph", (what, reply)
            if isinstance(payload, tuple) and isinstance(payload[1], tuple):
                request = payload[1]
                if len(request) > 1 and isinstance(request[1], int):
                    assert reply[1] == request[1], what  # the reply names the call
        wire.send(("hello", 99))
        ok, call, (spec, job, index) = wire.recv()
        assert (ok, call, job, index) == ("ok", 99, "ps", 0)
        assert spec == cluster.cluster_spec.as_dict()
    finally:
        wire.close()
    _still_serves(cluster)
