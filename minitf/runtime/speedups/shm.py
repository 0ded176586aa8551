"""Shared memory between tasks on one machine: large tensors cross as memory, not as bytes.

Two tasks on one machine still talk over their authenticated TCP connection
(`minitf.runtime.distributed.wire`), but a large out-of-band buffer of a message — a
tensor of at least `MIN_BYTES` — does not go through the socket. The sender
copies it into a shared-memory segment, and the TCP message carries only the
segment's handle (its slot number and the buffer's size). The receiver's
array is a view of that segment: one copy instead of the two (into the
kernel and out again) that TCP makes, plus the system calls.

**Which memory.** Each segment is an anonymous Linux memory file,
``os.memfd_create``. The receiver gets the file's descriptor over a Unix
domain socket (``SCM_RIGHTS``, `socket.send_fds`) the first time a segment is
used, maps it, and closes the descriptor. This design was chosen over named
POSIX segments (``/dev/shm``, `multiprocessing.shared_memory`) because:

* nothing can be left behind. A memory file has no name in any file system.
  The kernel frees it when its last descriptor and mapping are gone: when
  the connection ends, when the receiver's arrays are freed, or when either
  process dies, even by SIGKILL. A descriptor still in flight in the Unix
  socket is freed with the socket. A named segment outlives a process killed
  before it unlinks it, and the standard library's resource tracker warns
  about, or unlinks, segments it did not make;
* nobody else can open it. It never had a name, only an unguessable label
  (``minitf-`` and `secrets.token_urlsafe`), it is made mode 0600, and only the
  authenticated peer is handed its descriptor. The Unix socket that carries
  the descriptor has an unguessable abstract name (no file either), given to
  the peer over the authenticated connection and used only once; each end
  checks that the other runs as the same user (``SO_PEERCRED``).

**Reuse.** The kernel allocates a new segment's pages on their first write,
at about a quarter of memcpy's speed, so each connection keeps a pool of
segments (one size class per power of two, `POOL_BYTES` at most) and reuses
them. A segment is *lent* while the receiver's array views it: one byte per
segment in a small control segment that both ends map says so. The sender
sets it before copying in; the receiver clears it when the array (and every
view of it) is freed. The sender never writes a lent segment, so the
receiver's array stays valid and unchanged for as long as it lives, even
after the connection ends. When the pool has no free segment and may not
grow, the buffer goes by TCP.

**When.** At the handshake, after both ends have authenticated: each end
checks that the other's address is one of this machine's (loopback, or an
address it can bind), that shared memory is available here, and that
``MINITF_SHM`` is not ``0``. Then the capability check: each end writes a
random nonce into its control segment and passes it over the Unix socket;
the other maps it and sends the nonce back over TCP. Only when both nonces
come back does the connection use shared memory. Otherwise (another host or
container, no ``memfd_create``, not Linux, a failed check) it stays plain
TCP, as it does for every buffer below `MIN_BYTES`: a small tensor pays
nothing for shared memory.
"""

from __future__ import annotations

import ctypes
import hmac
import ipaddress
import itertools
import logging
import mmap
import os
import secrets
import socket
import struct
import sys
import threading
import time
import weakref
from typing import Any

import numpy as np

from minitf.runtime.core.config import env_switch, fast

logger = logging.getLogger("minitf")

ENV = "MINITF_SHM"
"""``0`` (or ``off``, ``false``, ``no``) keeps every connection on TCP."""

MIN_BYTES = 64 << 10
"""Buffers of at least this many bytes go through shared memory.

Below it a pull by TCP is as fast or faster (``benchmarks/transport.py --sweep``).
"""

POOL_BYTES = 512 << 20
"""The most shared memory one end of one connection keeps for the tensors it sends."""

MAX_SLOTS = 255
"""The most segments in one end's pool (one byte each in the control segment)."""

_NONCE = 16
_CONTROL_BYTES = _NONCE + MAX_SLOTS
_SMALLEST_CLASS = 64 << 10
_FD_NOTE = struct.Struct("!iQ")  # slot, capacity: travels with a segment's descriptor
_PEERCRED = struct.Struct("3i")  # pid, uid, gid
_ENTRY = struct.Struct("!iQQ")  # per buffer: slot (-1: by TCP), size, capacity if new
ENTRY_SIZE = _ENTRY.size
"""Bytes per buffer in the handle table of a message that uses shared memory."""

# Handshake frames (over the authenticated TCP connection).
_NO = b"minitf-shm:no"
_OFFER = b"minitf-shm:offer:"
_PROBE = b"minitf-shm:probe"
_ECHO = b"minitf-shm:echo:"
_ON = b"minitf-shm:on"


def available() -> bool:
    """Whether this process may use shared memory for tensors (Linux, memfd, not turned off).

    A value of ``MINITF_SHM`` that is neither on (``1``, ``on``, ``true``,
    ``yes``) nor off (``0``, ``off``, ``false``, ``no``) is logged as a warning
    naming the accepted values, and shared memory stays on. ``MINITF_FAST=0``
    turns it off with the runtime's other speed-ups (`minitf.runtime.core.config.fast`).

    Returns:
        True if connections of this process may agree on shared memory.
    """
    if not (fast() and env_switch(ENV, "shared memory")):
        return False
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "memfd_create")
        and hasattr(socket, "send_fds")
        and hasattr(socket, "SO_PEERCRED")
    )


def is_local_address(host: str) -> bool:
    """Whether ``host`` (an IP address) is this machine: loopback, or an address it can bind.

    Args:
        host: A numeric IPv4 or IPv6 address, as ``getpeername`` gives it.
    """
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return True
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(address), 0))
        return True
    except OSError:
        return False


TCP_SENT, SHM_SENT, TCP_RECEIVED, SHM_RECEIVED = 0, 2, 4, 6
"""Where a connection's tally (`TransferCounts.tally`) counts buffers; bytes at the next index."""


class TransferCounts:
    """How many out-of-band buffers this process sent and received, by path (observability).

    Each connection counts into a tally of its own, without a lock (its
    reader and its senders, under the send lock, write different entries);
    `snapshot` adds them up.
    """

    KEYS = (
        "tcp_sent", "tcp_sent_bytes", "shm_sent", "shm_sent_bytes",
        "tcp_received", "tcp_received_bytes", "shm_received", "shm_received_bytes",
    )  # fmt: skip

    def __init__(self):
        self._lock = threading.Lock()
        self._totals: dict[str, int] = {}
        self._live: dict[int, list[int]] = {}
        self._ids = itertools.count()

    def tally(self, owner: object) -> list[int]:
        """A new connection's counts, one per `KEYS`; they stay counted after ``owner`` is freed.

        Args:
            owner: The connection.
        """
        values = [0] * len(self.KEYS)
        key = next(self._ids)
        with self._lock:
            self._live[key] = values
        weakref.finalize(owner, self._retire, key)
        return values

    def _retire(self, key: int) -> None:
        with self._lock:
            values = self._live.pop(key)
            for name, value in zip(self.KEYS, values):
                self._totals[name] = self._totals.get(name, 0) + value

    def add(self, key: str, nbytes: int) -> None:
        """Counts one event that is not a connection's: ``"segments"``, a segment made.

        Args:
            key: What happened.
            nbytes: Its size.
        """
        with self._lock:
            self._totals[key] = self._totals.get(key, 0) + 1
            self._totals[key + "_bytes"] = self._totals.get(key + "_bytes", 0) + nbytes

    def snapshot(self) -> dict[str, int]:
        """The counts so far: ``shm_sent``, ``shm_sent_bytes``, ``tcp_received``, ..."""
        with self._lock:
            counts = dict(self._totals)
            for values in self._live.values():
                for name, value in zip(self.KEYS, values):
                    counts[name] = counts.get(name, 0) + value
        return counts


transfers = TransferCounts()
"""This process's counts of buffers by path: what tests and benchmarks read."""


def create_segment(size: int) -> int:
    """A new anonymous shared-memory file of ``size`` bytes, mode 0600; returns its descriptor.

    Args:
        size: Its size in bytes (its pages are allocated when first written).

    Raises:
        OSError: if the kernel cannot make one.
    """
    label = "minitf-" + secrets.token_urlsafe(12)
    fd = os.memfd_create(label, os.MFD_CLOEXEC)
    try:
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    transfers.add("segments", size)
    return fd


def read_nonce(control: Mapping) -> bytes:
    """The capability check's nonce, read from a mapped control segment.

    Args:
        control: The peer's control segment, as this end mapped it.
    """
    return control.array(_NONCE).tobytes()


class Mapping:
    """A shared mapping of a memory file, unmapped once nothing views it.

    The standard library's `mmap.mmap` keeps a duplicate of the file's
    descriptor open for as long as the mapping lives; this mapping keeps
    none, so a task's descriptors do not grow with its segments.

    Args:
        fd: The memory file's descriptor (it may be closed afterwards).
        size: Bytes to map, from the start of the file.

    Raises:
        OSError: if the kernel refuses the mapping.
    """

    __slots__ = ("address", "size", "__weakref__")

    def __init__(self, fd: int, size: int):
        address = _libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if address is None or address == _MAP_FAILED:
            code = ctypes.get_errno()
            raise OSError(code, f"mmap of a shared-memory segment: {os.strerror(code)}")
        self.address = address
        self.size = size
        # Not at exit: an array may still view it while the interpreter shuts down.
        weakref.finalize(self, _libc.munmap, address, size).atexit = False

    def array(self, nbytes: int, offset: int = 0) -> np.ndarray:
        """A new uint8 array of ``nbytes`` at ``offset``; it keeps the mapping alive.

        Args:
            nbytes: Its length.
            offset: Where it starts in the mapping.

        Raises:
            ValueError: if it would reach outside the mapping.
        """
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise ValueError(f"bytes {offset}:{offset + nbytes} of a {self.size}-byte mapping")
        return np.asarray(_Window(self, offset, nbytes))


class _Window:
    """What a received array's memory belongs to: part of a `Mapping` (numpy's base object)."""

    __slots__ = ("mapping", "__array_interface__")

    def __init__(self, mapping: Mapping, offset: int, nbytes: int):
        self.mapping = mapping
        self.__array_interface__ = {
            "data": (mapping.address + offset, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }


def _load_libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long
    ]  # fmt: skip
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


_libc = _load_libc() if sys.platform.startswith("linux") else None
_MAP_FAILED = ctypes.c_void_p(-1).value


class _Slot:
    __slots__ = ("index", "capacity", "memory", "fd")

    def __init__(self, index: int, capacity: int):
        self.index = index
        self.capacity = capacity
        self.fd: int | None = create_segment(capacity)  # until handed to the peer
        try:
            self.memory = Mapping(self.fd, capacity)
        except BaseException:
            os.close(self.fd)
            raise

    def forget(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _release(flags: np.ndarray, index: int) -> None:
    flags[index] = 0  # the receiver's array is gone: the sender may write the segment again


class Channel:
    """The shared memory of one connection, both ways: this end's pool and the peer's segments.

    Made by `negotiate`; the `minitf.runtime.distributed.wire.Wire` that owns it calls
    `lend` and `share` (under its send lock) to send, `take` to receive.

    Args:
        unix: The connected Unix socket that carries segment descriptors.
        own_fd: This end's control segment (the sender's side of the lent flags).
        peer_control: The peer's control segment, mapped.
    """

    def __init__(self, unix: socket.socket, own_fd: int, peer_control: Mapping):
        unix.settimeout(None)
        self._unix = unix
        self._lent = Mapping(own_fd, _CONTROL_BYTES).array(MAX_SLOTS, _NONCE)
        self._peer_lent = peer_control.array(MAX_SLOTS, _NONCE)
        self._lock = threading.Lock()
        self._slots: dict[int, _Slot] = {}
        self._pool_bytes = 0
        self._mapped: dict[int, Mapping] = {}
        self._closed = False
        self.min_bytes = MIN_BYTES

    @property
    def pool_bytes(self) -> int:
        """Bytes of shared memory this end keeps for what it sends."""
        return self._pool_bytes

    # -- sending ------------------------------------------------------------------------

    def lend(self, raws: list[memoryview]) -> list[_Slot | None] | None:
        """Copies each large buffer into a free segment of the pool; None if none went.

        Args:
            raws: The message's out-of-band buffers.

        Returns:
            Per buffer, the segment it was copied into (now lent) or None (it
            goes by TCP); None if every buffer goes by TCP.
        """
        lent: list[_Slot | None] = [None] * len(raws)
        any_lent = False
        for i, raw in enumerate(raws):
            if raw.nbytes >= self.min_bytes:
                slot = self._acquire(raw.nbytes)
                if slot is not None:
                    # One memcpy, outside every lock (numpy lets go of the GIL for it).
                    target = slot.memory.array(raw.nbytes)
                    np.copyto(target, np.frombuffer(raw, np.uint8))
                    lent[i] = slot
                    any_lent = True
        return lent if any_lent else None

    def share(self, lent: list[_Slot | None], raws: list[memoryview]) -> bytes:
        """Hands the peer the segments it has not seen yet; returns the header's handle table.

        Called under the connection's send lock, just before the TCP frames,
        so that descriptors and handles reach the peer in the same order.

        Args:
            lent: What `lend` returned.
            raws: The message's out-of-band buffers.

        Raises:
            OSError: if the Unix socket is broken.
        """
        entries = []
        for slot, raw in zip(lent, raws):
            if slot is None:
                entries.append(_ENTRY.pack(-1, raw.nbytes, 0))
                continue
            capacity = 0
            if slot.fd is not None:
                note = _FD_NOTE.pack(slot.index, slot.capacity)
                socket.send_fds(self._unix, [note], [slot.fd])
                slot.forget()
                capacity = slot.capacity
            entries.append(_ENTRY.pack(slot.index, raw.nbytes, capacity))
        return b"".join(entries)

    def _acquire(self, nbytes: int) -> _Slot | None:
        capacity = max(_SMALLEST_CLASS, 1 << (nbytes - 1).bit_length())
        with self._lock:
            if self._closed:
                return None
            for slot in self._slots.values():
                if slot.capacity == capacity and not self._lent[slot.index]:
                    self._lent[slot.index] = 1
                    return slot
            index = self._place_for(capacity)
            if index is None:
                return None
            try:
                slot = _Slot(index, capacity)
            except OSError:
                return None  # no memory or descriptors left for another segment: TCP
            old = self._slots.get(index)
            if old is not None:
                self._pool_bytes -= old.capacity
                old.forget()
            self._slots[index] = slot
            self._pool_bytes += capacity
            self._lent[index] = 1
            return slot

    def _place_for(self, capacity: int) -> int | None:
        """A slot number for a new segment: a new one, or a free one of another size."""
        if self._pool_bytes + capacity <= POOL_BYTES and len(self._slots) < MAX_SLOTS:
            return next(i for i in range(MAX_SLOTS) if i not in self._slots)
        for index, slot in self._slots.items():
            fits = self._pool_bytes - slot.capacity + capacity <= POOL_BYTES
            if fits and not self._lent[index]:
                return index
        return None

    # -- receiving ----------------------------------------------------------------------

    def take(self, index: int, nbytes: int, capacity: int) -> np.ndarray:
        """The received buffer in the peer's segment ``index``: a view, lent until it is freed.

        Args:
            index: The segment's slot number.
            nbytes: The buffer's size.
            capacity: The segment's size if its descriptor comes with this
                message (its first use, or a new segment in that slot), else 0.

        Raises:
            ConnectionError: if the peer's handle does not match what arrived.
        """
        if capacity:
            self._map_new(index, capacity)
        memory = self._mapped.get(index)
        if memory is None or nbytes > memory.size:
            raise ConnectionError(f"a shared-memory handle ({index}, {nbytes}) out of range")
        # Each buffer is an array of its own whose base is not an array, so
        # every view of it keeps it (and the finalizer) alive.
        view = memory.array(nbytes)
        weakref.finalize(view, _release, self._peer_lent, index).atexit = False
        return view

    def _map_new(self, index: int, capacity: int) -> None:
        try:
            data, fds, flags, _ = socket.recv_fds(self._unix, _FD_NOTE.size, 1, socket.MSG_DONTWAIT)
        except BlockingIOError:
            raise ConnectionError("a shared-memory handle came without its segment") from None
        try:
            if flags & socket.MSG_CTRUNC or len(fds) != 1 or len(data) != _FD_NOTE.size:
                raise ConnectionError("a shared-memory segment arrived cut short")
            if _FD_NOTE.unpack(data) != (index, capacity) or os.fstat(fds[0]).st_size < capacity:
                raise ConnectionError("a shared-memory segment does not match its handle")
            self._mapped[index] = Mapping(fds[0], capacity)
        finally:
            for fd in fds:
                os.close(fd)

    def close(self) -> None:
        """Lets go of every segment (the receiver's arrays keep what they view) and the socket."""
        with self._lock:
            self._closed = True
            slots, self._slots = list(self._slots.values()), {}
            self._pool_bytes = 0
        for slot in slots:
            slot.forget()
        self._mapped = {}
        try:
            self._unix.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._unix.close()  # descriptors still in flight to this end are freed with it


def unpack_entries(table: memoryview, count: int) -> list[tuple[int, int, int]]:
    """``(slot or -1, size, capacity)`` per buffer, from a header's handle table.

    Args:
        table: The table's bytes.
        count: How many buffers the message has.
    """
    return [_ENTRY.unpack_from(table, i * _ENTRY.size) for i in range(count)]


# -- the handshake ---------------------------------------------------------------------


def negotiate(conn: Any, server: bool, peer_host: str, timeout: float) -> Channel | None:
    """After authentication: agrees with the peer on shared memory; None keeps TCP only.

    Args:
        conn: The authenticated `multiprocessing.connection.Connection`.
        server: True on the listening end (it offers), False on the connecting end.
        peer_host: The peer's IP address.
        timeout: Seconds the exchange may take.

    Raises:
        OSError, EOFError: if the TCP connection fails (the handshake fails).
    """
    wanted = available() and is_local_address(peer_host)
    deadline = time.monotonic() + timeout
    return (_offer if server else _accept)(conn, wanted, deadline)


def _left(deadline: float) -> float:
    return max(0.01, deadline - time.monotonic())


def _same_user(sock: socket.socket) -> bool:
    pid, uid, gid = _PEERCRED.unpack(
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    )
    return uid == os.getuid()


def _control_segment() -> tuple[int, bytes]:
    """A new control segment with a fresh nonce in it: ``(descriptor, nonce)``."""
    nonce = secrets.token_bytes(_NONCE)
    fd = create_segment(_CONTROL_BYTES)
    try:
        os.pwrite(fd, nonce, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd, nonce


def _receive_control(unix: socket.socket) -> Mapping:
    """Receives the peer's control segment over the Unix socket and maps it."""
    data, fds, flags, _ = socket.recv_fds(unix, _FD_NOTE.size, 1)
    try:
        if len(fds) != 1 or flags & socket.MSG_CTRUNC:
            raise OSError("no control segment came")
        if os.fstat(fds[0]).st_size < _CONTROL_BYTES:
            raise OSError("the control segment is too small")
        return Mapping(fds[0], _CONTROL_BYTES)
    finally:
        for fd in fds:
            os.close(fd)


def _offer(conn: Any, wanted: bool, deadline: float) -> Channel | None:
    """The listening end: offers a Unix socket, checks the peer's probe, sends its own.

    The frames: this end OFFER (or NO), the peer PROBE (or NO), this end ECHO
    of the peer's nonce (or NO), the peer ECHO of this end's nonce (or NO),
    this end ON (or NO). A NO ends the exchange at once on both ends.
    """
    if not wanted:
        conn.send_bytes(_NO)
        return None
    name = b"\0minitf-shm-" + secrets.token_urlsafe(18).encode()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    unix = own_fd = None
    try:
        try:
            listener.bind(name)
            listener.listen(1)
        except OSError:
            conn.send_bytes(_NO)
            return None
        conn.send_bytes(_OFFER + name)
        if conn.recv_bytes(64) != _PROBE:
            return None  # the peer cannot or will not
        try:
            listener.settimeout(_left(deadline))
            unix, _ = listener.accept()
            unix.settimeout(_left(deadline))
            if not _same_user(unix):
                raise OSError("the peer runs as another user")
            peer_control = _receive_control(unix)
            own_fd, nonce = _control_segment()
            socket.send_fds(unix, [b"control"], [own_fd])
        except OSError:
            conn.send_bytes(_NO)
            return None
        conn.send_bytes(_ECHO + read_nonce(peer_control))
        answer = conn.recv_bytes(64)
        if answer == _NO:
            return None
        if not hmac.compare_digest(answer, _ECHO + nonce):
            conn.send_bytes(_NO)
            return None
        conn.send_bytes(_ON)
        channel = Channel(unix, own_fd, peer_control)
        unix = None  # the channel has it now
        return channel
    finally:
        listener.close()
        _drop(unix, own_fd)


def _accept(conn: Any, wanted: bool, deadline: float) -> Channel | None:
    """The connecting end: takes the offer, sends its probe, checks the listener's."""
    offer = conn.recv_bytes(128)
    if not offer.startswith(_OFFER):
        return None  # the listener keeps TCP
    unix = own_fd = None
    try:
        try:
            if not wanted:
                raise OSError("shared memory is not wanted here")
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            unix.settimeout(_left(deadline))
            unix.connect(offer[len(_OFFER) :])
            if not _same_user(unix):
                raise OSError("the peer runs as another user")
            own_fd, nonce = _control_segment()
            socket.send_fds(unix, [b"control"], [own_fd])
        except OSError:
            conn.send_bytes(_NO)
            return None
        conn.send_bytes(_PROBE)
        echo = conn.recv_bytes(64)
        if echo == _NO:
            return None
        try:
            if not hmac.compare_digest(echo, _ECHO + nonce):
                raise OSError("the listener read another nonce")
            peer_control = _receive_control(unix)
        except OSError:
            conn.send_bytes(_NO)
            return None
        conn.send_bytes(_ECHO + read_nonce(peer_control))
        if conn.recv_bytes(64) != _ON:
            return None
        channel = Channel(unix, own_fd, peer_control)
        unix = None
        return channel
    finally:
        _drop(unix, own_fd)


def _drop(unix: socket.socket | None, fd: int | None) -> None:
    if unix is not None:
        unix.close()
    if fd is not None:
        os.close(fd)
