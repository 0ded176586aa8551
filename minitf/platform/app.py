"""``tf.app``: ``tf.app.run`` and ``tf.app.flags``.

``tf.app.run(main)`` is how TF1 scripts start: it parses the command line
into ``tf.app.flags.FLAGS`` (an unknown flag is an error) and exits with what
``main(argv)`` returns, ``argv`` being the command line without its flags.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
import threading
from collections.abc import Callable, MutableMapping, Sequence

from minitf.platform import flags


def run(main: Callable | None = None, argv: Sequence[str] | None = None) -> None:
    """Parses the flags, then calls ``main(argv)`` and exits with its result.

    Args:
        main: The script's main function (default: ``main`` of ``__main__``).
        argv: The command line (default: ``sys.argv``).

    Raises:
        SystemExit: always: with ``main``'s result, or 1 after printing what
            was wrong with the flags.
    """
    script = getattr(_local, "script", None)  # a simulated task's command line
    if argv is None:
        argv = script if script is not None else sys.argv
    argv = list(argv)
    try:
        rest = flags.FLAGS(argv)
    except flags.Error as exc:
        print(f"FATAL Flags parsing error: {exc}", file=sys.stderr)
        print(f"Pass --help to {argv[0] if argv else 'the script'} for its flags.", file=sys.stderr)
        sys.exit(1)
    if main is None:
        # A simulated task's script is not __main__: its main is the caller's.
        module = sys._getframe(1).f_globals if script is not None else vars(sys.modules["__main__"])
        main = module["main"]
    sys.exit(main(rest))


_local = threading.local()


class _ThreadEnviron(MutableMapping):
    """``os.environ`` while simulated tasks run: each task's thread sees its own variables.

    Reads look in the calling thread's overlay first (a task's ``TF_CONFIG``),
    then in the process's environment; writes go to the process's.
    """

    def __init__(self, base):
        self._base = base

    def _overlay(self) -> dict:
        return getattr(_local, "env", None) or {}

    def __getitem__(self, key):
        overlay = self._overlay()
        return overlay[key] if key in overlay else self._base[key]

    def __setitem__(self, key, value) -> None:
        self._base[key] = value

    def __delitem__(self, key) -> None:
        del self._base[key]

    def __iter__(self):
        return iter({**dict.fromkeys(self._base), **dict.fromkeys(self._overlay())})

    def __len__(self) -> int:
        return len({**dict.fromkeys(self._base), **dict.fromkeys(self._overlay())})

    def copy(self) -> dict:
        return dict(self)


class _ThreadArgv(list):
    """``sys.argv`` while simulated tasks run: each task's thread sees its own command line.

    A script that parses ``sys.argv`` itself (``argparse``) reads its task's
    arguments; other threads read the process's.
    """

    def _now(self) -> list:
        script = getattr(_local, "script", None)
        return script if script is not None else list(super().__iter__())

    def __getitem__(self, index):
        return self._now()[index]

    def __len__(self) -> int:
        return len(self._now())

    def __iter__(self):
        return iter(self._now())

    def __repr__(self) -> str:
        return repr(self._now())


class _ThreadStdout:
    """``sys.stdout`` while simulated tasks run: a task given an output of its own writes there.

    A task's thread writes whole lines: ``print`` writes its text and its
    newline apart, and two tasks printing at once would otherwise interleave
    within a line. What a task has not ended with a newline is written when
    it flushes, or when its script ends.
    """

    def __init__(self, base):
        self._base = base
        self._lock = threading.Lock()

    def _now(self):
        return getattr(_local, "stdout", None) or self._base

    def write(self, text: str) -> int:
        if getattr(_local, "script", None) is None:
            return self._now().write(text)
        pending = getattr(_local, "pending", "") + text
        cut = pending.rfind("\n") + 1
        _local.pending = pending[cut:]
        if cut:
            with self._lock:
                self._now().write(pending[:cut])
        return len(text)

    def flush(self) -> None:
        pending = getattr(_local, "pending", "")
        if pending:
            _local.pending = ""
            with self._lock:
                self._now().write(pending)
        self._now().flush()

    def __getattr__(self, name):
        return getattr(self._now(), name)


_environ_lock = threading.Lock()
_environ_users = 0


@contextlib.contextmanager
def _task_environ(env: dict[str, str]):
    """This thread sees ``env`` in ``os.environ``, and its own ``sys.argv`` and ``sys.stdout``."""
    global _environ_users
    with _environ_lock:
        if _environ_users == 0:
            # Not a change of the environment (B003): the same variables, read per thread.
            os.environ = _ThreadEnviron(os.environ)  # noqa: B003
            sys.argv = _ThreadArgv(sys.argv)
            sys.stdout = _ThreadStdout(sys.stdout)
        _environ_users += 1
    _local.env = dict(env)
    try:
        yield
    finally:
        _local.env = None
        with _environ_lock:
            _environ_users -= 1
            if _environ_users == 0:
                os.environ = os.environ._base  # noqa: B003
                if isinstance(sys.argv, _ThreadArgv):
                    sys.argv = list(list.__iter__(sys.argv))
                if isinstance(sys.stdout, _ThreadStdout):
                    sys.stdout = sys.stdout._base


def run_script(
    path: str, argv: Sequence[str], env: dict[str, str] | None = None, stdout=None
) -> int:
    """Runs a TF1 script as ``python path argv...`` would, in this thread; returns its exit code.

    The script gets flags and a default graph of its own (`flags.task_flags`),
    and sees ``env`` in ``os.environ`` (a task's ``TF_CONFIG``) where other
    threads do not; ``tf.app.run`` in it reads ``argv`` and calls the
    script's ``main``. Several threads may each run a copy at once.

    Args:
        path: The script's path.
        argv: Its command-line arguments (without the program name).
        env: Environment variables the script sees in ``os.environ`` (e.g. ``TF_CONFIG``).
        stdout: Where the script's prints in this thread go (default: ``sys.stdout``).
    """
    from minitf.framework import ops

    # Its own flags, environment and default graph, as in a process of its own.
    with flags.task_flags(), _task_environ(env or {}), ops.Graph().as_default():
        _local.script = [path, *argv]
        _local.stdout = stdout
        try:
            _exec_as_main(path)
        except SystemExit as exc:
            code = exc.code
            return 0 if code is None else code if isinstance(code, int) else 1
        finally:
            sys.stdout.flush()  # the task's last line, if it did not end it
            _local.script = _local.stdout = None
    return 0


def _exec_as_main(path: str) -> None:
    """Runs the script at ``path`` as ``__main__`` in a namespace of its own.

    Not `runpy.run_path`: it puts its module in ``sys.modules["__main__"]`` and
    the path in ``sys.argv[0]`` while the script runs and puts the old ones
    back after, which tasks running at once in threads undo out of order,
    leaving the process a script's ``__main__`` (and a process it spawns
    would run that script).
    """
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    namespace = {
        "__name__": "__main__", "__file__": path, "__cached__": None, "__doc__": None,
        "__loader__": None, "__package__": None, "__spec__": None, "__builtins__": builtins,
    }  # fmt: skip
    exec(code, namespace)


def script_traceback(exc: BaseException, script: str, task: str | None = None) -> str:
    """A script's own exception as its traceback shows it, without minitf's frames.

    Args:
        exc: The exception the script raised.
        script: The script's path.
        task: The task whose copy of the script raised it, if known.
    """
    import traceback

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not os.path.abspath(f.filename).startswith(package)
        and "runpy" not in f.filename  # "<frozen runpy>" too
    ]
    where = f" on {task}" if task else ""
    lines = [f"{script} failed{where}:\n", "Traceback (most recent call last):\n"]
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)
