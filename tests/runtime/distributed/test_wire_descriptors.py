"""A closed wire's descriptor: kept until no thread reads it, so no other connection loses bytes.

A thread can be between deciding to read a connection and the read itself
when another thread closes it. Were the descriptor closed then, the kernel
could give its number to the next connection or file, and the late read
would take that one's bytes: a new session's handshake failed, or its first
message came out as garbage. The wire shuts the socket down at once (the
reader gets EOF) and closes the descriptor when the last user leaves.
"""

import os
import queue
import threading

import pytest

from tests.runtime.conftest import connected_wires

pytestmark = pytest.mark.timeout(30)

SECRET = b"d" * 32


def test_a_wire_closed_while_a_thread_is_about_to_read_keeps_its_descriptor_until_it_leaves():
    wire, other_end, listener = connected_wires(SECRET)
    try:
        fd = wire._conn.fileno()
        socket_inode = os.fstat(fd).st_ino
        about_to_read, go = threading.Event(), threading.Event()
        read = wire._conn.recv_bytes

        def late_read(*args):
            about_to_read.set()
            go.wait(10.0)  # the reader was held up here when the wire closed
            return read(*args)

        wire._conn.recv_bytes = late_read
        outcome = queue.Queue()

        def reader():
            try:
                outcome.put(wire.recv())
            except (EOFError, OSError) as exc:
                outcome.put(exc)

        reading = threading.Thread(target=reader, daemon=True)
        reading.start()
        assert about_to_read.wait(10.0)
        wire.close()
        assert wire.closed
        assert os.fstat(fd).st_ino == socket_inode  # still this connection's descriptor
        go.set()
        reading.join(10.0)
        assert isinstance(outcome.get(timeout=1.0), EOFError)  # shut down: the read ends
        assert wire._conn.closed  # the last user closed it on the way out
        with pytest.raises(EOFError):
            wire.recv()
        with pytest.raises(ConnectionError):
            wire.send(("hello", 1))
    finally:
        wire.close()
        other_end.close()
        listener.close()
