"""Opening files the way TF's ``Env`` does: failures as TF's error classes.

The record format (`minitf.ops.io.record_io`), the readers and ``ReadFile`` /
``WriteFile`` open their files here, so a missing file is a
``NotFoundError`` whose message names the path, as in TF
(``tensorflow/core/platform/default/posix_file_system.cc``), wherever it is
opened.
"""

from __future__ import annotations

import errno
import os
from typing import BinaryIO

from minitf.framework import errors

__all__ = ["open_file", "read_file", "write_file", "file_size"]

_ERRNO_CLASSES = {
    errno.ENOENT: errors.NotFoundError,
    errno.ENOTDIR: errors.FailedPreconditionError,
    errno.EISDIR: errors.FailedPreconditionError,
    errno.EACCES: errors.PermissionDeniedError,
    errno.EPERM: errors.PermissionDeniedError,
    errno.EEXIST: errors.AlreadyExistsError,
    errno.ENOSPC: errors.ResourceExhaustedError,
}


def as_op_error(path, exc: OSError) -> errors.OpError:
    """TF's error for an ``OSError`` on ``path``: ``"<path>; No such file or directory"``."""
    cls = _ERRNO_CLASSES.get(exc.errno, errors.UnknownError)
    return cls(None, None, f"{os.fsdecode(path)}; {exc.strerror or exc}")


def open_file(path, mode: str = "rb") -> BinaryIO:
    """Opens ``path`` in binary ``mode``.

    Args:
        path: A path (``str``, ``bytes`` or path-like).
        mode: ``"rb"``, ``"wb"`` or ``"ab"``.

    Raises:
        NotFoundError: if the file (or, writing, its directory) does not exist.
        FailedPreconditionError: if it is a directory.
        PermissionDeniedError: if it may not be opened.
    """
    try:
        handle = open(path, mode)  # noqa: SIM115 - the caller closes it
        if "r" in mode and os.path.isdir(path):
            handle.close()
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        return handle
    except OSError as e:
        raise as_op_error(path, e) from None


def read_file(path) -> bytes:
    """The whole contents of ``path`` (TF's ``ReadFileToString``).

    Args:
        path: The file.

    Raises:
        NotFoundError: etc., see `open_file`.
    """
    with open_file(path, "rb") as f:
        return f.read()


def write_file(path, contents: bytes) -> None:
    """Writes ``contents`` to ``path``, creating its directory first (TF's ``WriteFile`` op).

    Args:
        path: The file.
        contents: The bytes it will hold.

    Raises:
        PermissionDeniedError: etc., see `open_file`.
    """
    directory = os.path.dirname(os.fsdecode(path))
    if directory:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise as_op_error(directory, e) from None
    with open_file(path, "wb") as f:
        f.write(contents)


def file_size(path) -> int:
    """The size of ``path`` in bytes (TF's ``Env::GetFileSize``).

    Args:
        path: The file.

    Raises:
        NotFoundError: if it does not exist.
    """
    try:
        return os.stat(path).st_size
    except OSError as e:
        raise as_op_error(path, e) from None
