"""Reaching a task: the cluster's shared secret, connecting with retries, errors on the wire.

Every connection between minitf processes (a session's master to a task, a
task to another for ``_Send``, a stepper or a tracer to a task) is made by
`connect_with_retry`, to a task that `listen` s, and authenticated with
`cluster_secret`. A task served in this very process is reached without a
connection: its server registers its `Worker` here (`serve_in_process`), and
a master finds it with `in_process_worker`, as TF's master calls its local
worker directly.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from minitf.framework import errors
from minitf.runtime.distributed.wire import Wire, WireListener

if TYPE_CHECKING:
    from minitf.runtime.distributed.worker import Worker

logger = logging.getLogger("minitf")

SECRET_ENV = "MINITF_CLUSTER_SECRET"
SECRET_FILE_ENV = "MINITF_SECRET_FILE"
"""Where the user's cluster secret file is (default ``~/.minitf/cluster-secret``)."""
CONNECT_TIMEOUT_ENV = "MINITF_CONNECT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT = 10.0

_process_secret: bytes | None = None
_secret_lock = threading.Lock()


def cluster_secret() -> bytes:
    """The shared secret of this process's cluster.

    In this order:

    1. the ``MINITF_CLUSTER_SECRET`` environment variable (``minitf launch``
       and `LocalCluster` set a fresh one for every cluster they start);
    2. the user's secret file (`secret_file`: ``~/.minitf/cluster-secret``, or
       ``MINITF_SECRET_FILE``), made on first use, readable by its owner only
       — like Erlang's ``~/.erlang.cookie``. Processes of one user on one
       machine, or on machines sharing a home directory (as Slurm clusters
       do), find each other with no set-up; other users' processes are
       refused;
    3. if there is no home to keep the file in, a random secret for this
       process alone (logged).

    Raises:
        PermissionError: if the secret file can be read by other users (it
            says how to fix it).
    """
    global _process_secret
    value = os.environ.get(SECRET_ENV)
    if value:
        return value.encode()
    with _secret_lock:
        if _process_secret is None:
            _process_secret = _user_secret()
        return _process_secret


def secret_file() -> Path | None:
    """Where the user's cluster secret is kept (None: no home directory)."""
    override = os.environ.get(SECRET_FILE_ENV)
    if override:
        return Path(override).expanduser()
    try:
        return Path.home() / ".minitf" / "cluster-secret"
    except RuntimeError:
        return None


SECRET_READ_SECONDS = 10.0
"""How long a reader waits for a secret file another process is still writing."""


def _user_secret() -> bytes:
    path = secret_file()
    try:
        if path is None:
            raise OSError("no home directory")
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            _make_secret_file(path)
    except OSError as exc:
        logger.warning(
            "no cluster secret file (%s): this process makes up its own secret, so only "
            "servers and sessions inside it can talk; set %s to share one",
            exc,
            SECRET_ENV,
        )
        return secrets.token_hex(16).encode()
    return _read_secret_file(path)


def _make_secret_file(path: Path) -> None:
    """Makes the secret file whole and at once: no process ever reads it half written.

    The secret is written to a file of this process's own, then linked to
    ``path``. A link is atomic and never replaces a file, so when several
    processes start at once (and on a home shared over NFS, where it is the
    classic way to create a file exclusively), exactly one secret is made
    and every process reads that one.
    """
    own = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(own, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(16) + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(own, path)
        except FileExistsError:
            pass  # another process made it first: its secret is the one
        except OSError:
            # A file system without links: an exclusive create of the whole
            # file (readers wait for its last line, _read_secret_file).
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return
            with os.fdopen(fd, "w") as f:
                f.write(own.read_text())
                f.flush()
                os.fsync(f.fileno())
    finally:
        own.unlink(missing_ok=True)


def _read_secret_file(path: Path) -> bytes:
    """The secret in ``path``; waits while it is still being written, never makes another.

    Raises:
        PermissionError: if other users can read the file (it says how to fix it).
        RuntimeError: if the file stays empty (it says how to fix it).
    """
    mode = path.stat().st_mode
    if mode & 0o077:
        raise PermissionError(
            f"{path} holds minitf's cluster secret but other users can read it "
            f"(mode {mode & 0o777:o}): run 'chmod 600 {path}'"
        )
    deadline = time.monotonic() + SECRET_READ_SECONDS
    pause = 0.001
    while True:
        text = path.read_text()
        # Whole: a line (every secret minitf writes ends with one), or text
        # that no longer changes (a secret a person wrote without a newline).
        if text.endswith("\n") and text.strip():
            return text.strip().encode()
        if text.strip() and time.time() - path.stat().st_mtime > 1.0:
            return text.strip().encode()  # written by hand, without a last newline
        if time.monotonic() >= deadline:
            if text.strip():
                return text.strip().encode()
            raise RuntimeError(
                f"{path} (minitf's cluster secret) stayed empty for {SECRET_READ_SECONDS:.0f} s: "
                f"delete it and start the tasks again, or set {SECRET_ENV}"
            )
        time.sleep(pause)  # another process is writing it: read again
        pause = min(pause * 2, 0.1)


def connect_timeout() -> float:
    """Seconds to keep trying an unreachable task (``MINITF_CONNECT_TIMEOUT``, default 10)."""
    return float(os.environ.get(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT))


def parse_address(address: str) -> tuple[str, int]:
    """``"host:port"`` → ``("host", port)``.

    Args:
        address: A ``host:port`` address (an empty host means localhost).

    Raises:
        InvalidArgumentError: TF's, when the address has no port number.
    """
    host, _, port = address.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise errors.InvalidArgumentError(
            None, None, f'Could not interpret "{address}" as a host-port pair.'
        )
    return host or "localhost", int(port)


def connect_with_retry(address: str, what: str, timeout: float | None = None) -> Wire:
    """Connects to a task, retrying while it starts up, for at most ``timeout`` seconds.

    Args:
        address: The task's ``host:port``.
        what: Names the task in messages.
        timeout: Seconds to keep trying (default: `connect_timeout`).

    Raises:
        UnavailableError: if the task cannot be reached in time, or refuses the secret.
    """
    timeout = connect_timeout() if timeout is None else timeout
    host_port = parse_address(address)  # an address with no port is refused at once
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            return Wire.connect(host_port, cluster_secret(), timeout=max(timeout, 1.0), peer=what)
        except socket.gaierror as exc:
            # A name that does not resolve will not resolve in a moment either.
            raise errors.UnavailableError(
                None,
                None,
                f"{what} at {address}: the host name {host_port[0]!r} does not "
                f"resolve ({exc.strerror}). Check the cluster spec's address.",
            ) from None
        except (ConnectionError, OSError) as exc:
            if time.monotonic() + delay > deadline:
                raise errors.UnavailableError(
                    None,
                    None,
                    f"{what} at {address} is unreachable after {timeout:g} s ({exc}). Is the "
                    f"task running? (Wait longer with {CONNECT_TIMEOUT_ENV}=<seconds>.)",
                ) from None
            threading.Event().wait(delay)
            delay = min(delay * 2, 0.5)
        except Exception as exc:  # the handshake: AuthenticationError
            raise errors.UnavailableError(
                None,
                None,
                f"{what} at {address} refused this process ({type(exc).__name__}: {exc}); "
                f"all tasks of a cluster need the same {SECRET_ENV}.",
            ) from None


def listen(address: tuple[str, int], task: str, patience: float) -> WireListener:
    """Listens on a task's address; a port in use is tried again for ``patience`` seconds.

    A task restarted on its old port may find it held a moment longer (a
    connection of the dead process being torn down).

    Args:
        address: ``(host, port)``; port 0 picks a free one.
        task: The task's name, for the error.
        patience: Seconds to try a port in use again.

    Raises:
        UnavailableError: naming the task and the address, and why it cannot listen there.
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            return WireListener(address, cluster_secret())
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise _listen_error(exc, address, task) from None
            time.sleep(0.1)  # nothing to wait on: the kernel frees the port


def _listen_error(exc: OSError, address: tuple[str, int], task: str) -> errors.OpError:
    """The TF error for an address a task cannot listen on, naming the task."""
    host, port = address
    if exc.errno == errno.EADDRINUSE:
        why = (
            f"port {port} is in use (by another server or program: stop it, or give "
            "this task another port in the cluster spec)"
        )
    elif isinstance(exc, socket.gaierror):
        why = f"the host name {host!r} does not resolve"
    else:
        why = f"{exc.strerror or exc} (is {host!r} an address of this machine?)"
    return errors.UnavailableError(None, None, f"{task} cannot listen on {host}:{port}: {why}")


def error_message(exc: BaseException) -> tuple[int, str, str | None]:
    """``(code, message, op name)`` of an error, for the wire.

    Args:
        exc: The error; one that is not an `OpError` becomes ``INTERNAL``.
    """
    if isinstance(exc, errors.OpError):
        return exc.error_code, exc.message, exc.op.name if exc.op is not None else None
    return errors.INTERNAL, f"{type(exc).__name__}: {exc}", None


_IN_PROCESS: dict[str, Worker] = {}
_in_process_lock = threading.Lock()


def serve_in_process(address: str, worker: Worker) -> None:
    """Registers the worker of a server of this process, listening at ``address``.

    Args:
        address: ``"host:port"``.
        worker: The server's `Worker`.
    """
    with _in_process_lock:
        _IN_PROCESS[address] = worker


def stop_serving_in_process(address: str, worker: Worker) -> None:
    """Forgets ``worker`` at ``address`` (its server stops).

    Args:
        address: ``"host:port"``.
        worker: The server's `Worker`.
    """
    with _in_process_lock:
        if _IN_PROCESS.get(address) is worker:
            del _IN_PROCESS[address]


def in_process_worker(address: str) -> Worker | None:
    """The `Worker` of the running server of this process at ``address``, or None.

    A master whose session target is a server in its own process runs that
    task's partitions with a direct call, as TF's master calls its local
    worker without going through gRPC (``GrpcWorkerCache`` hands it the
    in-process worker for its own task).

    Args:
        address: ``"host:port"`` (`minitf.runtime.distributed.master.target_address`).
    """
    with _in_process_lock:
        return _IN_PROCESS.get(address)
