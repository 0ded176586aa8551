"""The wire between tasks: authenticated connections that carry Python messages and tensors.

minitf uses the standard library's `multiprocessing.connection`: a
`Listener` per task, `Client` connections to peers, both with the cluster's
shared secret as ``authkey``. The library authenticates every connection
with an HMAC challenge before anything else crosses it, so a peer without
the secret is refused and nothing it sent is ever unpickled. It also frames
the byte stream into messages; minitf adds no framing of its own.

Connections are made with plain sockets and then handed to the library: its
``deliver_challenge``/``answer_challenge`` authenticate them, under a
deadline, so a peer that connects and then says nothing cannot hold up a task.

A message is pickled with protocol 5, and its numpy arrays travel as
*out-of-band buffers*: the pickle holds only their metadata, and each buffer
follows as a message of its own, sent straight from the array's memory.
Receiving reads each buffer directly into a fresh array (``os.readv`` into
its memory) instead of through the library's in-memory copies, so a 64 MB
tensor crosses a loopback connection at close to raw TCP speed.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import socket
import struct
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

import numpy as np

logger = logging.getLogger("minitf")

_COUNT = struct.Struct("!I")
_SMALL = struct.Struct("!i")
_LARGE = struct.Struct("!Q")


# More out-of-band buffers than any message minitf sends has (one per array).
_MAX_BUFFERS = 1 << 16


class MalformedMessage(ValueError):
    """An authenticated peer sent a frame that is not a minitf message.

    The frame has been read whole, so the connection is still in step and
    may go on.
    """


class Wire:
    """One authenticated connection, safe for one reader and several writers.

    Args:
        conn: A connected `multiprocessing.connection.Connection`.
        peer: A description of the other end, for messages.
    """

    def __init__(self, conn: Connection, peer: str = ""):
        self._conn = conn
        self.peer = peer
        self._send_lock = threading.Lock()
        self._closed = False

    @classmethod
    def connect(
        cls, address: tuple[str, int], secret: bytes, timeout: float = 10.0, peer: str = ""
    ) -> Wire:
        """Connects to a task's listener and authenticates with ``secret``.

        Args:
            address: The listener's ``(host, port)``.
            secret: The cluster's shared secret.
            timeout: Seconds to wait for the connection and the handshake.
            peer: Names the task in messages.

        Raises:
            OSError: if the task is not there (a ``ConnectionError``: refused,
                unreachable) or does not answer within ``timeout`` seconds.
            AuthenticationError: if the task does not accept ``secret``.
        """
        sock = socket.create_connection(address, timeout=timeout)
        if sock.getsockname() == sock.getpeername():
            # Linux's TCP self-connect: nobody listens on a local port in the
            # ephemeral range and the kernel picked that very port for us. It
            # would also keep the port from the task that is about to listen on it.
            sock.close()
            raise ConnectionRefusedError(f"nobody listens on {address[0]}:{address[1]} yet")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = peer or f"{address[0]}:{address[1]}"
        conn = _handshake(sock, secret, timeout, client=True, peer=peer)
        return cls(conn, peer)

    @property
    def closed(self) -> bool:
        """True once `close` was called or the other end went away."""
        return self._closed

    def hung_up(self) -> bool:
        """For a connection this end only writes to: whether the other end has gone.

        A peer that died (or was restarted) closed its end; a send would still
        be accepted by the kernel and then lost, so check before sending.
        """
        if self._closed:
            return True
        try:
            readable, _, _ = select.select([self._conn.fileno()], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)  # nothing is ever sent back on it: readable means EOF or reset

    def send(self, message: Any) -> None:
        """Sends one message (any picklable object; numpy arrays go out of band).

        Args:
            message: The message.

        Raises:
            OSError: if the connection is broken.
        """
        buffers: list[pickle.PickleBuffer] = []
        header = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
        with self._send_lock:
            self._conn.send_bytes(_COUNT.pack(len(buffers)) + header)
            for buffer in buffers:
                self._conn.send_bytes(buffer.raw())

    def recv(self) -> Any:
        """Receives one message; blocks until it arrives.

        Raises:
            EOFError: if the other end closed the connection.
            OSError: if the connection is broken.
            MalformedMessage: if the frame is not a message (the connection may go on).
        """
        frame = self._conn.recv_bytes()
        if len(frame) < _COUNT.size:
            raise MalformedMessage(f"a {len(frame)}-byte frame from {self.peer}: no header")
        (count,) = _COUNT.unpack_from(frame)
        if count > _MAX_BUFFERS:
            raise MalformedMessage(f"a message from {self.peer} announces {count} buffers")
        buffers = [self._recv_buffer() for _ in range(count)]
        try:
            return pickle.loads(memoryview(frame)[_COUNT.size :], buffers=buffers)
        except Exception as exc:  # noqa: BLE001 - any decoding failure of one message
            raise MalformedMessage(
                f"a message from {self.peer} does not decode: {type(exc).__name__}: {exc}"
            ) from exc

    def _recv_buffer(self) -> np.ndarray:
        # The library's frame: a 4-byte signed size, or -1 and an 8-byte size.
        size = _SMALL.unpack(self._read_exact(_SMALL.size))[0]
        if size == -1:
            size = _LARGE.unpack(self._read_exact(_LARGE.size))[0]
        buffer = np.empty(size, dtype=np.uint8)
        self._read_into(memoryview(buffer))
        return buffer

    def _read_exact(self, size: int) -> bytes:
        buffer = bytearray(size)
        self._read_into(memoryview(buffer))
        return bytes(buffer)

    def _read_into(self, view: memoryview) -> None:
        fd = self._conn.fileno()
        done, size = 0, len(view)
        while done < size:
            n = os.readv(fd, [view[done:]])
            if n == 0:
                raise EOFError(f"connection to {self.peer} closed")
            done += n

    def close(self) -> None:
        """Closes the connection (a blocked `recv` in another thread raises EOFError/OSError)."""
        if self._closed:
            return
        self._closed = True
        try:
            # Shut the socket down first: that wakes a thread blocked reading it
            # and tells the peer at once (close() alone waits for that reader).
            sock = socket.socket(fileno=os.dup(self._conn.fileno()))
            try:
                sock.shutdown(socket.SHUT_RDWR)
            finally:
                sock.close()
        except OSError:
            pass
        try:
            self._conn.close()
        except OSError:
            pass


def _handshake(sock: socket.socket, secret: bytes, timeout: float, client: bool, peer: str):
    """Authenticates a connected socket both ways; returns the library `Connection`.

    The library's challenge functions read without a timeout, so a watchdog
    shuts the socket down if the peer does not finish in ``timeout`` seconds:
    the blocked read then ends at once. It shuts the socket down rather than
    closing it, so no read can land on a descriptor number reused meanwhile.
    """
    sock.setblocking(True)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    conn = Connection(os.dup(sock.fileno()))
    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    started = time.monotonic()
    watchdog.start()
    try:
        if client:
            answer_challenge(conn, secret)
            deliver_challenge(conn, secret)
        else:
            deliver_challenge(conn, secret)
            answer_challenge(conn, secret)
    except AuthenticationError:
        conn.close()
        raise
    except (OSError, EOFError) as exc:
        conn.close()
        waited = time.monotonic() - started
        why = f"no answer within {timeout:g} s" if expired.is_set() else f"{exc}"
        raise ConnectionError(f"no handshake with {peer}: {why} (after {waited:.1f} s)") from exc
    finally:
        watchdog.cancel()
        sock.close()  # the connection holds its own descriptor
    if expired.is_set():
        conn.close()
        raise ConnectionError(f"no handshake with {peer} within {timeout:g} s")
    return conn


class WireListener:
    """Listens on ``address`` and authenticates every peer; refuses and logs the others.

    Args:
        address: ``(host, port)``; port 0 picks a free one.
        secret: The cluster's shared secret.
        handshake_timeout: Seconds a peer has to authenticate.
    """

    def __init__(self, address: tuple[str, int], secret: bytes, handshake_timeout: float = 10.0):
        self._sock = socket.create_server(address)
        self._secret = secret
        self._timeout = handshake_timeout
        self.address: tuple[str, int] = self._sock.getsockname()[:2]

    def accept_socket(self) -> tuple[socket.socket, str]:
        """Waits for the next TCP connection (not yet authenticated).

        Raises:
            OSError: once the listener is closed.
        """
        sock, addr = self._sock.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, f"{addr[0]}:{addr[1]}"

    def authenticate(self, sock: socket.socket, peer: str) -> Wire | None:
        """Authenticates an accepted socket; None (and a log line) if the peer fails.

        Args:
            sock: The accepted socket.
            peer: Names the peer in messages.
        """
        try:
            conn = _handshake(sock, self._secret, self._timeout, client=False, peer=peer)
            return Wire(conn, peer)
        except AuthenticationError as exc:
            logger.warning("refused a connection from %s: authentication failed (%s)", peer, exc)
        except ConnectionError as exc:
            logger.info("dropped a connection from %s: %s", peer, exc)
        return None

    def close(self) -> None:
        """Stops listening (a thread blocked in `accept_socket` gets OSError)."""
        try:
            # close() alone does not wake a thread blocked in accept(), and the
            # port would stay taken until it returned.
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
