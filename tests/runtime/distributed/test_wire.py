"""The authenticated wire: its handshake, and how a message's arrays are framed.

The handshake of Python's ``multiprocessing.connection`` reads without a
timeout; a watchdog ends it. The peer here is a plain TCP socket that
accepts and says nothing, so the bound is the only way out.

Arrays below `IN_BAND_BELOW` bytes travel inside the pickled message, in its
one frame; larger ones in frames of their own (or shared memory).
"""

import socket
import threading
import time

import numpy as np
import pytest

from minitf.runtime.distributed.wire import IN_BAND_BELOW, Wire, WireListener
from minitf.runtime.speedups.shm import transfers
from tests.runtime.conftest import connected_wires

pytestmark = pytest.mark.timeout(30)

SECRET = b"s" * 32


def test_a_task_that_never_answers_the_handshake_is_given_up_on_after_the_timeout():
    with socket.create_server(("127.0.0.1", 0)) as silent:
        address = silent.getsockname()[:2]
        start = time.monotonic()
        with pytest.raises(ConnectionError, match=r"no answer within 0\.5 s \(after 0\.\d s\)"):
            Wire.connect(address, SECRET, timeout=0.5)
        assert time.monotonic() - start < 5.0


def test_a_peer_that_never_answers_is_dropped_by_the_listener_after_its_timeout():
    listener = WireListener(("127.0.0.1", 0), SECRET, handshake_timeout=0.5)
    result = {}
    done = threading.Event()

    def serve():
        sock, peer = listener.accept_socket()
        result["wire"] = listener.authenticate(sock, peer)
        done.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with socket.create_connection(listener.address) as mute:
            assert done.wait(5.0)
            assert result["wire"] is None
            # The listener hung up: the challenge it sent, then the end.
            mute.settimeout(5.0)
            received = b""
            while chunk := mute.recv(4096):
                received += chunk
            assert b"#CHALLENGE#" in received
    finally:
        listener.close()
        thread.join(5.0)


def test_two_ends_with_the_secret_handshake_and_talk():
    listener = WireListener(("127.0.0.1", 0), SECRET)
    served = {}

    def serve():
        sock, peer = listener.accept_socket()
        wire = listener.authenticate(sock, peer)
        served["message"] = wire.recv()
        wire.send(("ok", served["message"][1]))
        wire.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        wire = Wire.connect(listener.address, SECRET, timeout=5.0)
        wire.send(("hello", 7))
        assert wire.recv() == ("ok", 7)
        wire.close()
        thread.join(5.0)
        assert served["message"] == ("hello", 7)
    finally:
        listener.close()


def test_small_arrays_travel_in_the_message_frame_and_large_ones_beside_it():
    client, server, listener = connected_wires(SECRET)
    try:
        frames = []
        send_bytes = client._conn.send_bytes
        client._conn.send_bytes = lambda data: (frames.append(len(data)), send_bytes(data))
        small = [np.arange(n, dtype=np.float32) * 0.5 for n in (1, 10, 1000)]
        read_only = np.arange(6, dtype=np.int64).reshape(2, 3)
        read_only.flags.writeable = False
        large = np.arange(IN_BAND_BELOW, dtype=np.uint8)  # exactly the threshold: beside it
        before = transfers.snapshot()

        client.send(("tensors", 1, [("a", small[0]), ("b", small[1]), ("c", small[2])]))
        kind, step, items = server.recv()
        assert len(frames) == 1  # one frame: the message and its three arrays
        for (_, got), sent in zip(items, small):
            np.testing.assert_array_equal(got, sent)
            assert got.dtype == np.float32 and got.flags.writeable

        client.send(("tensors", 2, [("r", read_only), ("l", large)]))
        _, _, [(_, got_read_only), (_, got_large)] = server.recv()
        np.testing.assert_array_equal(got_read_only, read_only)
        assert not got_read_only.flags.writeable  # read-only stays read-only, as pickled
        np.testing.assert_array_equal(got_large, large)
        assert len(frames) == 3  # the large array left in a frame of its own

        after = transfers.snapshot()
        received = after.get("tcp_received", 0) - before.get("tcp_received", 0)
        received_bytes = after.get("tcp_received_bytes", 0) - before.get("tcp_received_bytes", 0)
        assert received == 5  # every array went by TCP, in the frame or beside it
        assert received_bytes == sum(a.nbytes for a in small) + read_only.nbytes + large.nbytes
    finally:
        client.close()
        server.close()
        listener.close()


def test_arrays_of_every_kind_arrive_as_they_were_sent():
    # Plain C-ordered arrays of numbers are reduced by the wire itself, the
    # rest by numpy; both must give back the same dtype, shape, order and values.
    rng = np.random.default_rng(3)
    structured = np.zeros(3, dtype=[("a", "<i4"), ("b", ">f8")])
    structured["b"] = [1.5, -2.0, 3.25]
    sent = [
        np.float32(2.5) * np.ones((4, 5), np.float32),
        np.array(7, np.int64),  # 0-d
        np.array([True, False, True]),
        (rng.standard_normal(6) + 1j).astype(np.complex64),
        np.arange(12, dtype=">u2").reshape(3, 4),  # big-endian
        np.asfortranarray(np.arange(20, dtype=np.float64).reshape(4, 5)),
        np.arange(30, dtype=np.int16).reshape(5, 6)[:, ::2],  # not contiguous
        np.array(["ab", "c"]),
        np.array(["2020-01-01", "2021-06-30"], dtype="datetime64[D]"),
        structured,
        np.zeros((0, 3), np.float32),
        rng.standard_normal(IN_BAND_BELOW).astype(np.float32),  # in a frame of its own
    ]
    client, server, listener = connected_wires(SECRET)
    try:
        client.send(("tensors", 1, [(str(i), a) for i, a in enumerate(sent)]))
        _, _, items = server.recv()
        for (_, got), want in zip(items, sent):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.flags.f_contiguous == want.flags.f_contiguous or got.ndim < 2
            np.testing.assert_array_equal(got, want)
    finally:
        client.close()
        server.close()
        listener.close()
