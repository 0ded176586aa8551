"""The authenticated wire's handshake: a peer that never answers is given up on, cleanly.

The handshake of Python's ``multiprocessing.connection`` reads without a
timeout; a watchdog ends it. The peer here is a plain TCP socket that
accepts and says nothing, so the bound is the only way out.
"""

import socket
import threading
import time

import pytest

from minitf.runtime.wire import Wire, WireListener

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
