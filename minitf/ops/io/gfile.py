"""TF's file API on the local disk: ``tf.gfile`` / ``tf.io.gfile`` (TF's ``lib/io/file_io.py``).

Every failure is one of TF's error classes, with the message TF's POSIX file
system gives (``"<path>; No such file or directory"``, see `file_io.as_op_error`).
`FileIO` opens its file lazily, as TF does: a file opened for writing exists
only once something is written (or it is flushed), and reading and writing go
through separate handles.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from minitf.framework import errors
from minitf.ops.io.file_io import as_op_error, open_file

__all__ = [
    "FileIO",
    "FileStatistics",
    "copy",
    "create_dir",
    "delete_file",
    "delete_recursively",
    "file_exists",
    "get_matching_files",
    "is_directory",
    "list_directory",
    "recursive_create_dir",
    "rename",
    "stat",
    "walk",
]

_MODES = ("r", "w", "a", "r+", "w+", "a+")


class FileStatistics(NamedTuple):
    """What `stat` returns: TF's ``FileStatistics`` (``mtime_nsec`` in nanoseconds)."""

    length: int
    mtime_nsec: int
    is_directory: bool


def _os_call(path, fn, *args):
    """``fn(*args)``, an ``OSError`` raised as TF's error for ``path``."""
    try:
        return fn(*args)
    except OSError as e:
        raise as_op_error(e.filename if e.filename is not None else path, e) from None


class FileIO:
    """A file opened through TF's file API: ``tf.gfile.GFile`` (also ``Open``, ``FastGFile``).

    Reading returns ``str`` unless ``mode`` has ``"b"`` (then ``bytes``); writing takes
    either. ``"w"``, ``"w+"`` and ``"r+"`` truncate the file at the first write, ``"a"``
    and ``"a+"`` append, as TF's ``WritableFile`` does.

    Args:
        name: The path.
        mode: One of ``r``, ``w``, ``a``, ``r+``, ``w+``, ``a+``, with ``b`` for bytes.

    Raises:
        InvalidArgumentError: if ``mode`` is not one of those.
    """

    def __init__(self, name: Any, mode: str = "r") -> None:
        self._name = name
        self._mode = mode
        self._binary_mode = "b" in mode
        bare = mode.replace("b", "")
        if bare not in _MODES:
            raise errors.InvalidArgumentError(
                None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'"
            )
        self._read_check_passed = bare in ("r", "r+", "a+", "w+")
        self._write_check_passed = bare in ("a", "w", "r+", "a+", "w+")
        self._append = "a" in bare
        self._reader = None
        self._writer = None

    @property
    def name(self):
        """The path the file was opened with."""
        return self._name

    @property
    def mode(self) -> str:
        """The mode the file was opened with."""
        return self._mode

    def _preread_check(self):
        if self._reader is None:
            if not self._read_check_passed:
                raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
            self._reader = open_file(self._name, "rb")
        return self._reader

    def _prewrite_check(self):
        if self._writer is None:
            if not self._write_check_passed:
                raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
            self._writer = open_file(self._name, "ab" if self._append else "wb")
        return self._writer

    def _prepare_value(self, value: bytes):
        return value if self._binary_mode else value.decode("utf-8")

    def size(self) -> int:
        """The size of the file in bytes."""
        return stat(self._name).length

    def write(self, file_content: Any) -> None:
        """Appends ``file_content`` (``str`` or ``bytes``) to the file.

        Raises:
            PermissionDeniedError: if the file is not open for writing.
        """
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        self._prewrite_check().write(bytes(file_content))

    def read(self, n: int = -1):
        """``n`` bytes from the current position, or the rest of the file if ``n`` is -1.

        Raises:
            PermissionDeniedError: if the file is not open for reading.
        """
        reader = self._preread_check()
        return self._prepare_value(reader.read() if n == -1 else reader.read(n))

    def seek(self, offset: Any = None, whence: int = 0, position: Any = None) -> None:
        """Moves the read position: ``whence`` 0 from the start, 1 from here, 2 from the end.

        Args:
            offset: Bytes relative to ``whence``.
            whence: 0, 1 or 2.
            position: The old name of ``offset``.

        Raises:
            TypeError: if neither or both of ``offset`` and ``position`` are given.
            InvalidArgumentError: if ``whence`` is not 0, 1 or 2.
        """
        reader = self._preread_check()
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        offset = position if offset is None else offset
        if whence not in (0, 1, 2):
            raise errors.InvalidArgumentError(
                None, None, f"Invalid whence argument: {whence}. Valid values are 0, 1, or 2."
            )
        base = {0: 0, 1: reader.tell(), 2: self.size()}[whence]
        reader.seek(base + offset)

    def readline(self):
        """The next line, with its ``\\n``; empty at the end of the file."""
        return self._prepare_value(self._preread_check().readline())

    def readlines(self) -> list:
        """All remaining lines."""
        return list(iter(self.readline, self._prepare_value(b"")))

    def tell(self) -> int:
        """The read position (the write position if the file is only open for writing)."""
        if self._read_check_passed:
            return self._preread_check().tell()
        return self._prewrite_check().tell()

    def flush(self) -> None:
        """Pushes what was written so far out to the file."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Closes both handles; what was written is in the file afterwards."""
        for handle in (self._reader, self._writer):
            if handle is not None:
                handle.close()
        self._reader = self._writer = None

    def seekable(self) -> bool:
        """True: the file supports `seek` and `tell`."""
        return True

    def __enter__(self) -> FileIO:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __iter__(self) -> Iterator:
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__


def file_exists(filename: Any) -> bool:
    """Whether ``filename`` exists (a file or a directory): ``tf.gfile.Exists``."""
    return os.path.exists(filename)


def is_directory(dirname: Any) -> bool:
    """Whether ``dirname`` is an existing directory: ``tf.gfile.IsDirectory``."""
    return os.path.isdir(dirname)


def delete_file(filename: Any) -> None:
    """Deletes the file ``filename``: ``tf.gfile.Remove``.

    Raises:
        NotFoundError: if it does not exist.
    """
    _os_call(filename, os.remove, filename)


def create_dir(dirname: Any) -> None:
    """Creates the directory ``dirname``, whose parent must exist: ``tf.gfile.MkDir``.

    Raises:
        AlreadyExistsError: if it exists (TF1's POSIX file system; later TFs accept it).
        NotFoundError: if its parent does not exist.
    """
    _os_call(dirname, os.mkdir, dirname)


def recursive_create_dir(dirname: Any) -> None:
    """Creates ``dirname`` and its missing parents; fine if it exists: ``tf.gfile.MakeDirs``.

    Raises:
        FailedPreconditionError: if a part of the path is a file.
    """
    parent = os.fsdecode(dirname)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent.rstrip("/"))
    if parent and not os.path.isdir(parent):
        raise errors.FailedPreconditionError(None, None, f"{parent} is not a directory")
    _os_call(dirname, os.makedirs, dirname, 0o777, True)


def delete_recursively(dirname: Any) -> None:
    """Deletes ``dirname`` and everything below it (or the file): ``tf.gfile.DeleteRecursively``.

    Raises:
        NotFoundError: if it does not exist.
    """
    if not os.path.lexists(dirname):
        raise errors.NotFoundError(None, None, f"{os.fsdecode(dirname)} not found")
    if os.path.isdir(dirname) and not os.path.islink(dirname):
        _os_call(dirname, shutil.rmtree, dirname)
    else:
        _os_call(dirname, os.remove, dirname)


def _check_target(newpath, overwrite: bool) -> None:
    if not overwrite and os.path.exists(newpath):
        raise errors.AlreadyExistsError(None, None, "file already exists")


def rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:
    """Renames (moves) a file or directory: ``tf.gfile.Rename``.

    Args:
        oldname: The path to move.
        newname: Where it goes.
        overwrite: If False, an existing ``newname`` is an error.

    Raises:
        AlreadyExistsError: if ``newname`` exists and ``overwrite`` is False.
        NotFoundError: if ``oldname`` does not exist.
    """
    _check_target(newname, overwrite)
    _os_call(oldname, os.replace, oldname, newname)


def copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:
    """Copies the file ``oldpath`` to ``newpath``: ``tf.gfile.Copy``.

    Args:
        oldpath: The file to copy.
        newpath: The copy.
        overwrite: If False, an existing ``newpath`` is an error.

    Raises:
        AlreadyExistsError: if ``newpath`` exists and ``overwrite`` is False.
        NotFoundError: if ``oldpath`` does not exist.
    """
    _check_target(newpath, overwrite)
    with open_file(oldpath, "rb") as source, open_file(newpath, "wb") as target:
        shutil.copyfileobj(source, target)


def get_matching_files(filename: Any) -> list[str]:
    """The paths matching a glob pattern (or any of several): ``tf.gfile.Glob``.

    As in TF, ``*`` and ``?`` do not match ``/``, and a pattern that matches nothing
    gives an empty list.

    Args:
        filename: A pattern, or an iterable of patterns.
    """
    patterns = [filename] if isinstance(filename, (str, bytes)) else list(filename)
    return [match for pattern in patterns for match in _matches(os.fsdecode(pattern))]


def _matches(pattern: str) -> list[str]:
    """Expands ``pattern`` one path component at a time, as TF's ``GetMatchingPaths``.

    A pattern without wildcards names itself; a relative one whose first component
    has a wildcard is expanded from ``.``, so its matches start with ``./`` as in TF.
    """
    if not _has_wildcard(pattern):
        return [pattern] if os.path.lexists(pattern) else []
    parts = pattern.split("/")
    if pattern.startswith("/"):
        candidates, parts = ["/"], parts[1:]
    elif _has_wildcard(parts[0]):
        candidates = ["."]
    else:
        candidates, parts = [parts[0]], parts[1:]
    for part in parts:
        candidates = [_join(base, name) for base in candidates for name in _expand(base, part)]
    return sorted(path for path in candidates if os.path.lexists(path))


def _has_wildcard(text: str) -> bool:
    return any(c in text for c in "*?[")


def _join(base: str, name: str) -> str:
    return base + name if base.endswith("/") else f"{base}/{name}"


def _expand(base: str, part: str) -> list[str]:
    if not _has_wildcard(part):
        return [part]
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return [name for name in names if fnmatch.fnmatchcase(name, part)]


def list_directory(dirname: Any) -> list[str]:
    """The names of the entries of ``dirname`` (not their paths): ``tf.gfile.ListDirectory``.

    Raises:
        NotFoundError: if ``dirname`` is not a directory.
    """
    if not is_directory(dirname):
        raise errors.NotFoundError(None, None, f"Could not find directory {os.fsdecode(dirname)}")
    return sorted(os.fsdecode(name) for name in os.listdir(dirname))


def walk(top: Any, in_order: bool = True) -> Iterable[tuple]:
    """Walks the tree under ``top`` as ``(dirname, subdirs, files)``: ``tf.gfile.Walk``.

    A missing ``top`` yields nothing, as in TF.

    Args:
        top: The root directory.
        in_order: If True, a directory comes before its subdirectories; else after.
    """
    top = os.fsdecode(top)
    try:
        listing = list_directory(top)
    except errors.NotFoundError:
        return
    subdirs = [name for name in listing if is_directory(os.path.join(top, name))]
    files = [name for name in listing if name not in subdirs]
    here = (top, subdirs, files)
    if in_order:
        yield here
    for subdir in subdirs:
        yield from walk(os.path.join(top, subdir), in_order)
    if not in_order:
        yield here


def stat(filename: Any) -> FileStatistics:
    """The size, modification time and kind of ``filename``: ``tf.gfile.Stat``.

    Raises:
        NotFoundError: if it does not exist.
    """
    info = _os_call(filename, os.stat, filename)
    # TF's POSIX file system reports whole seconds, in nanoseconds.
    return FileStatistics(
        length=info.st_size,
        mtime_nsec=int(info.st_mtime) * 1_000_000_000,
        is_directory=os.path.isdir(filename),
    )
