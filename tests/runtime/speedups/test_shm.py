"""Shared memory between tasks on one machine: when it is used, what arrives, what is left.

Two ends of a wire in this process (a listener's thread and a client) show
the handshake's decision and the memory's ownership; a ps task in a process
of its own shows a pull from another process, and what remains when that
process is killed with SIGKILL in the middle of sending a tensor. Which path
a tensor took is read from `minitf.runtime.speedups.shm.transfers`, never from timing.
"""

import gc
import os
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge
from pathlib import Path

import numpy as np
import pytest

import minitf as tf
from minitf.framework import errors
from minitf.runtime.distributed.connect import cluster_secret
from minitf.runtime.distributed.launcher import LocalCluster, free_ports
from minitf.runtime.distributed.wire import Wire, WireListener
from minitf.runtime.speedups import shm

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not shm.available(), reason="no shared memory for tensors here"),
]

SECRET = b"k" * 32
REPO = Path(__file__).resolve().parents[3]


def _random_bits(nbytes: int, seed: int) -> np.ndarray:
    """float32 values from random bit patterns: NaNs with payloads, infinities, denormals."""
    bits = np.random.default_rng(seed).integers(0, 1 << 32, nbytes // 4, dtype=np.uint64)
    return bits.astype(np.uint32).view(np.float32)


def _count(key: str) -> int:
    return shm.transfers.snapshot().get(key, 0)


class _Pair:
    """Both ends of one wire, the listener's end answered by a thread of its own."""

    def __init__(self):
        self.listener = WireListener(("127.0.0.1", 0), SECRET)
        self._served = queue.Queue()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="listener-end")
        self._thread.start()
        self.client = Wire.connect(self.listener.address, SECRET, timeout=10.0)
        self.server = self._served.get(timeout=10.0)

    def _serve(self) -> None:
        sock, peer = self.listener.accept_socket()
        self._served.put(self.listener.authenticate(sock, peer))

    def echo(self, message):
        """Sends ``message`` from the client; the server receives it and sends it back."""
        server = threading.Thread(target=lambda: self.server.send(self.server.recv()))
        server.start()  # a large message by TCP fills the socket before it is read
        try:
            self.client.send(message)
            return self.client.recv()
        finally:
            server.join(30)

    def close(self) -> None:
        self.client.close()
        if self.server is not None:
            self.server.close()
        self.listener.close()
        self._thread.join(10.0)


@pytest.fixture
def pair():
    wires = _Pair()
    try:
        yield wires
    finally:
        wires.close()


def test_a_segment_is_an_anonymous_memory_file_readable_by_its_owner_only():
    fd = shm.create_segment(1 << 20)
    try:
        assert os.fstat(fd).st_mode & 0o777 == 0o600
        link = os.readlink(f"/proc/self/fd/{fd}")
        # "/memfd:minitf-<16 random url-safe characters> (deleted)": in no file system.
        label = link.removeprefix("/memfd:").removesuffix(" (deleted)")
        assert label.startswith("minitf-") and len(label) == len("minitf-") + 16, link
        assert not any(label in name for name in os.listdir("/dev/shm"))
        assert os.fstat(fd).st_size == 1 << 20
    finally:
        os.close(fd)


def test_two_ends_on_one_machine_agree_on_shared_memory_and_a_large_tensor_arrives_bit_identical(
    pair,
):
    assert pair.client.shm is not None and pair.server.shm is not None
    value = _random_bits(4 << 20, seed=1)
    expected = value.view(np.uint32).copy()
    before_shm, before_tcp = _count("shm_received"), _count("tcp_received_bytes")
    kind, back = pair.echo(("tensor", value))
    assert kind == "tensor"
    assert _count("shm_received") - before_shm == 2  # there and back
    assert _count("tcp_received_bytes") - before_tcp < 1024  # nothing of the tensor's bytes
    np.testing.assert_array_equal(back.view(np.uint32), expected)
    assert back.dtype == np.float32 and back.shape == value.shape


@pytest.mark.parametrize("read_only", [False, True])
def test_an_array_of_any_memory_layout_arrives_with_its_layout_and_bits(pair, read_only):
    base = _random_bits(4 << 20, seed=9).reshape(64, 128, 128)
    for value in (base, base.transpose(1, 0, 2), np.asfortranarray(base)):
        value = value.view()
        value.flags.writeable = not read_only
        before = _count("shm_received")
        _, back = pair.echo(("tensor", value))
        assert _count("shm_received") - before == 2
        assert back.shape == value.shape and back.strides == value.strides
        assert back.flags.writeable == (not read_only)
        np.testing.assert_array_equal(back.view(np.uint32), value.view(np.uint32))


def test_a_tensor_below_the_threshold_goes_by_tcp(pair):
    assert pair.client.shm is not None
    value = _random_bits(shm.MIN_BYTES - 4, seed=2)
    before_shm, before_tcp = _count("shm_received"), _count("tcp_received_bytes")
    _, back = pair.echo(("tensor", value))
    assert _count("shm_received") == before_shm
    assert _count("tcp_received_bytes") - before_tcp == 2 * value.nbytes
    np.testing.assert_array_equal(back.view(np.uint32), value.view(np.uint32))


def test_a_received_tensor_stays_unchanged_while_the_sender_reuses_its_segments(pair):
    first = np.full(1 << 18, 1.0, np.float32)
    second = np.full(1 << 18, 2.0, np.float32)
    pair.client.send(("tensor", first))
    held = pair.server.recv()[1][::2]  # a view keeps the segment lent
    pool = pair.client.shm.pool_bytes
    pair.client.send(("tensor", second))
    got = pair.server.recv()[1]
    assert pair.client.shm.pool_bytes == 2 * pool  # the lent segment was not written
    np.testing.assert_array_equal(held, np.full(1 << 17, 1.0, np.float32))
    np.testing.assert_array_equal(got, second)
    del held, got
    gc.collect()
    pair.client.send(("tensor", first))
    np.testing.assert_array_equal(pair.server.recv()[1], first)
    assert pair.client.shm.pool_bytes == 2 * pool  # freed segments are reused


@pytest.mark.parametrize("path", ["shm", "tcp"])
def test_a_large_read_only_tensor_arrives_read_only_and_its_receiver_may_make_it_writable(
    monkeypatch, path
):
    if path == "tcp":
        monkeypatch.setenv("MINITF_SHM", "0")
    value = np.arange(1 << 18, dtype=np.float32)
    value.flags.writeable = False
    wires = _Pair()
    try:
        assert (wires.client.shm is not None) == (path == "shm")
        _, back = wires.echo(("tensor", value))
        assert not back.flags.writeable
        back.flags.writeable = True  # its memory is the receiver's own: no copy needed
        back[0] = -1.0
        assert value[0] == 0.0
    finally:
        wires.close()


def test_a_received_tensor_outlives_its_connection(pair):
    value = _random_bits(1 << 20, seed=3)
    pair.client.send(("tensor", value))
    got = pair.server.recv()[1]
    pair.client.close()
    pair.server.close()
    gc.collect()
    np.testing.assert_array_equal(got.view(np.uint32), value.view(np.uint32))


def test_a_peer_that_fails_authentication_never_gets_a_segment():
    listener = WireListener(("127.0.0.1", 0), SECRET, handshake_timeout=5.0)
    result = queue.Queue()

    def serve():
        sock, peer = listener.accept_socket()
        result.put(listener.authenticate(sock, peer))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    segments = _count("segments")
    try:
        with socket.create_connection(listener.address, timeout=5.0) as sock:
            sock.setblocking(True)  # the library's reads on its copy of the descriptor block
            conn = Connection(os.dup(sock.fileno()))
            with pytest.raises(AuthenticationError):
                answer_challenge(conn, b"not the secret")
            sock.settimeout(5.0)
            rest = b""
            while chunk := sock.recv(4096):  # everything the listener sent until it hung up
                rest += chunk
            conn.close()
        assert result.get(timeout=10.0) is None
        assert b"minitf-shm" not in rest
        assert _count("segments") == segments
    finally:
        listener.close()
        thread.join(10.0)


def test_a_peer_that_fails_the_capability_check_keeps_tcp(monkeypatch):
    # As if the peer were on another machine that can reach this one's
    # address: it cannot read the nonce this end wrote into its segment.
    monkeypatch.setattr(shm, "read_nonce", lambda control: bytes(16))
    wires = _Pair()
    try:
        assert wires.client.shm is None and wires.server.shm is None
        value = _random_bits(4 << 20, seed=4)
        before_shm, before_tcp = _count("shm_received"), _count("tcp_received_bytes")
        _, back = wires.echo(("tensor", value))
        assert _count("shm_received") == before_shm
        assert _count("tcp_received_bytes") - before_tcp == 2 * value.nbytes
        np.testing.assert_array_equal(back.view(np.uint32), value.view(np.uint32))
    finally:
        wires.close()


def test_minitf_shm_0_keeps_connections_on_tcp(monkeypatch):
    monkeypatch.setenv("MINITF_SHM", "0")
    wires = _Pair()
    try:
        assert wires.client.shm is None and wires.server.shm is None
        value = _random_bits(1 << 20, seed=8)
        before_shm = _count("shm_received")
        _, back = wires.echo(("tensor", value))
        assert _count("shm_received") == before_shm
        np.testing.assert_array_equal(back.view(np.uint32), value.view(np.uint32))
    finally:
        wires.close()


@pytest.mark.parametrize("side", ["listener", "client"])
def test_one_end_without_shared_memory_keeps_the_connection_on_tcp(monkeypatch, side):
    real = shm.available

    def available():
        on_listener = threading.current_thread().name == "listener-end"
        return real() and on_listener != (side == "listener")

    monkeypatch.setattr(shm, "available", available)
    wires = _Pair()
    try:
        assert wires.client.shm is None and wires.server.shm is None
        assert wires.echo(("hello", 1)) == ("hello", 1)  # the refusal left the stream in step
    finally:
        wires.close()


def test_an_address_of_another_machine_is_not_local():
    assert shm.is_local_address("127.0.0.1") and shm.is_local_address("::1")
    assert shm.is_local_address("::ffff:127.0.0.1")
    assert not shm.is_local_address("192.0.2.1")  # TEST-NET-1: nobody's address
    assert not shm.is_local_address("not-an-address")


# -- a ps task in a process of its own ---------------------------------------------------


@pytest.fixture(scope="module")
def ps_task():
    with LocalCluster({"ps": 1}, output=None) as cluster:
        yield cluster


def test_a_pull_from_a_ps_process_on_this_machine_goes_through_shared_memory(ps_task):
    value = _random_bits(8 << 20, seed=5)
    with tf.device("/job:ps/task:0"):
        var = tf.Variable(tf.zeros([value.size]), name="big")
        feed = tf.placeholder(tf.float32, [value.size])
        assign = tf.assign(var, feed)
    with tf.Session(ps_task.target("ps", 0)) as sess:
        sent = _count("shm_sent")
        sess.run(assign.op, {feed: value})
        assert _count("shm_sent") - sent == 1  # the fed value went to the ps in shared memory
        received, tcp_bytes = _count("shm_received"), _count("tcp_received_bytes")
        pulled = sess.run(var)
        assert _count("shm_received") - received == 1
        assert _count("tcp_received_bytes") - tcp_bytes < 1024
    np.testing.assert_array_equal(pulled.view(np.uint32), value.view(np.uint32))


def test_a_small_pull_from_a_ps_process_goes_by_tcp(ps_task):
    value = np.arange(1000, dtype=np.float32) / 7
    with tf.device("/job:ps/task:0"):
        var = tf.Variable(value, name="small")
    with tf.Session(ps_task.target("ps", 0)) as sess:
        sess.run(var.initializer)
        received, tcp_bytes = _count("shm_received"), _count("tcp_received_bytes")
        pulled = sess.run(var)
        assert _count("shm_received") == received
        assert _count("tcp_received_bytes") - tcp_bytes >= value.nbytes
    np.testing.assert_array_equal(pulled, value)


# A ps that stops for good in the middle of sending a tensor of 4 MB or more:
# after it handed the segment's descriptor over, before the message's handle.
_STOPPING_PS = textwrap.dedent(
    """
    import sys, threading
    import minitf as tf
    from minitf.runtime.speedups import shm

    share = shm.Channel.share

    def share_and_stop(self, lent, raws):
        table = share(self, lent, raws)
        if any(slot is not None and slot.capacity >= 4 << 20 for slot in lent):
            print("shared", flush=True)
            threading.Event().wait()
        return table

    shm.Channel.share = share_and_stop
    server = tf.train.Server({"ps": [sys.argv[1]]}, job_name="ps", task_index=0)
    print("ready", flush=True)
    server.join()
    """
)


def _shm_sockets_and_files(pid: int) -> set[str]:
    """A process's memory files (descriptors and mappings) and Unix SEQPACKET sockets."""
    found = set()
    seqpacket = set()
    with open("/proc/net/unix") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[4] == "0005":  # SOCK_SEQPACKET
                seqpacket.add(fields[6])
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if "memfd:minitf-" in link:
            found.add(f"fd {link}")
        elif link.startswith("socket:[") and link[8:-1] in seqpacket:
            found.add(f"unix socket {link}")
    with open(f"/proc/{pid}/maps") as f:
        found |= {f"mapping {line.split()[-2]}" for line in f if "memfd:minitf-" in line}
    return found


def _lines(proc: subprocess.Popen) -> queue.Queue:
    lines = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _python_entries_in_dev_shm() -> list[str]:
    """What minitf or Python's own shared memory would leave in /dev/shm.

    Other programs' entries (a browser's, say, from a test running beside
    this one) come and go on their own.
    """
    prefixes = ("minitf", "psm_", "sem.mp-", "mp-")
    return sorted(name for name in os.listdir("/dev/shm") if name.startswith(prefixes))


def test_nothing_is_left_after_a_ps_sending_through_shared_memory_is_killed_with_sigkill():
    gc.collect()
    dev_shm = _python_entries_in_dev_shm()
    mine = _shm_sockets_and_files(os.getpid())
    (port,) = free_ports(1)
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "MINITF_CLUSTER_SECRET": cluster_secret().decode()}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    ps = subprocess.Popen(
        [sys.executable, "-c", _STOPPING_PS, address],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        lines = _lines(ps)
        assert lines.get(timeout=60) == "ready"
        small, large = _random_bits(1 << 20, seed=6), _random_bits(4 << 20, seed=7)
        with tf.device("/job:ps/task:0"):
            kept_var = tf.Variable(small, name="kept")
            lost_var = tf.Variable(large, name="lost")
        outcome = queue.Queue()
        with tf.Session(f"grpc://{address}") as sess:
            sess.run([kept_var.initializer, lost_var.initializer])
            kept = sess.run(kept_var)  # 1 MB: through shared memory, and kept

            def pull():
                try:
                    outcome.put(sess.run(lost_var))
                except errors.OpError as exc:
                    outcome.put(exc)

            puller = threading.Thread(target=pull, daemon=True)
            puller.start()
            assert lines.get(timeout=60) == "shared"  # the ps stopped in mid-send
            in_use = _shm_sockets_and_files(os.getpid()) - mine
            assert any(what.startswith("unix socket") for what in in_use), in_use
            assert any(what.startswith("mapping") for what in in_use), in_use
            os.kill(ps.pid, signal.SIGKILL)
            assert ps.wait(30) == -signal.SIGKILL
            puller.join(60)
            assert isinstance(outcome.get(timeout=1), errors.UnavailableError)
            # The connection's end let go at once: its socket (and the descriptor
            # in flight in it) and the segments; only what `kept` views is mapped.
            left = _shm_sockets_and_files(os.getpid()) - mine
            assert all(what.startswith("mapping") for what in left), left
        # What this process received before stays valid after its sender died.
        np.testing.assert_array_equal(kept.view(np.uint32), small.view(np.uint32))
        del kept
        gc.collect()
        assert _python_entries_in_dev_shm() == dev_shm
        assert _shm_sockets_and_files(os.getpid()) <= mine
    finally:
        if ps.poll() is None:
            ps.kill()
            ps.wait(30)


@pytest.mark.parametrize(
    ("value", "on"), [("0", False), ("off", False), ("No", False), ("1", True), ("yes", True)]
)
def test_minitf_shm_takes_the_usual_words_for_off_and_on(monkeypatch, value, on):
    monkeypatch.setenv("MINITF_SHM", value)
    linux_memfd = sys.platform.startswith("linux") and hasattr(os, "memfd_create")
    assert shm.available() is (on and linux_memfd)


def test_a_minitf_shm_value_it_does_not_understand_is_named_in_a_warning(monkeypatch, caplog):
    monkeypatch.setenv("MINITF_SHM", "maybe")
    with caplog.at_level("WARNING", logger="minitf"):
        shm.available()
    assert "MINITF_SHM='maybe' is not understood: use 0 (off) or 1 (on" in caplog.text
