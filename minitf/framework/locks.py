"""A lock for short critical sections of Python code that does not convoy under the GIL.

A queue's or an accumulator's lock (`minitf.ops.data_flow.blocking`) is held for a few
microseconds of Python: a count, a check, a list append. With a plain
``threading.Lock`` several threads using one such resource fall into a
*convoy*. A thread that finds the lock taken sleeps in the kernel with the
interpreter lock released; when the holder releases it, the sleeper wakes
*holding the lock*, and must then wait for the interpreter lock, which
another thread holds, and that thread soon wants the lock too and sleeps. From
then on every acquisition costs a sleep and a wake-up. Four threads applying
small gradients to one accumulator took 33–73 µs per `apply_grad` instead of
the 18 µs one thread takes (``sys.setswitchinterval(1)``, which stops the
interpreter from switching threads inside a critical section, brings it back
to 19 µs: the convoy, not the work).

`ShortLock` takes the lock only while it holds the interpreter lock: it tries
without waiting, and while the lock is taken it lets go of the interpreter
lock (``time.sleep(0)``) so that the holder, which may be waiting for it,
can finish, and tries again. It sleeps in the kernel only after `SPINS`
tries, for a holder that is slow (it runs numpy outside the interpreter
lock). With it the four threads take 12–17 µs per apply, and a `FIFOQueue`
with a producer thread and a consumer thread moves 1.8–1.9 times as many
elements per second (`benchmarks/dataflow.py`).
"""

from __future__ import annotations

import _thread
import time

SPINS = 100
"""How many times `ShortLock.acquire` lets the holder run before it sleeps in the kernel."""


class ShortLock:
    """A non-reentrant lock with ``threading.Lock``'s interface, for short Python critical sections.

    It works with ``threading.Condition``. See the module's docstring for why.
    """

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = _thread.allocate_lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Takes the lock; returns whether it did (as ``threading.Lock.acquire``).

        Args:
            blocking: Whether to wait while another thread holds it.
            timeout: The longest wait in seconds (-1: no limit); only when blocking.

        Raises:
            ValueError: for a timeout with ``blocking=False``, or a negative
                timeout other than -1.
        """
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number")
        if self._lock.acquire(False):
            return True
        if not blocking:
            return False
        return self._wait(timeout)

    def _wait(self, timeout: float = -1) -> bool:
        """Takes the lock another thread holds: lets it run, then sleeps for it."""
        lock = self._lock
        deadline = None if timeout == -1 else time.monotonic() + timeout
        for _ in range(SPINS):
            time.sleep(0)  # lets go of the interpreter lock: the holder may be waiting for it
            if lock.acquire(False):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
        if deadline is None:
            return lock.acquire()
        return lock.acquire(True, max(0.0, deadline - time.monotonic()))

    def release(self) -> None:
        """Lets go of the lock.

        Raises:
            RuntimeError: if it is not held.
        """
        self._lock.release()

    def locked(self) -> bool:
        """Whether some thread holds the lock."""
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self._lock.acquire(False) or self._wait()

    def __exit__(self, *exc_info) -> None:
        self._lock.release()

    def __repr__(self) -> str:
        return f"<ShortLock {'locked' if self.locked() else 'unlocked'}>"
