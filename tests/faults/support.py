"""What the fault tests share: task output that can be waited on, and seeds.

Nothing here sleeps to wait for a process: output lines arrive through a
condition variable, and processes are waited on by PID.
"""

from __future__ import annotations

import io
import os
import re
import threading
import time

SEED_ENV = "MINITF_FAULT_SEED"
TRIALS_ENV = "MINITF_FAULT_TRIALS"
LOAD_ENV = "MINITF_FAULT_LOAD"
"""Busy processes per core beside the trials (0 by default)."""


def base_seed() -> int:
    """The seed of the first trial (``MINITF_FAULT_SEED``, 0 by default)."""
    return int(os.environ.get(SEED_ENV, "0"))


class WatchedOutput(io.StringIO):
    """Task output that several pump threads write to and a test waits on."""

    def __init__(self):
        super().__init__()
        self._changed = threading.Condition()

    def write(self, text: str) -> int:
        with self._changed:
            n = super().write(text)
            self._changed.notify_all()
            return n

    def mark(self) -> int:
        """A position in the output; `wait_for` can search from it."""
        with self._changed:
            return len(self.getvalue())

    def wait_for(self, pattern: str, start: int = 0, timeout: float = 60.0, check=None):
        """Waits until ``pattern`` appears in the output after ``start``; returns the match.

        Args:
            check: Called while waiting; it may raise to stop the wait early
                (a task that failed).

        Raises:
            AssertionError: if it does not appear within ``timeout`` seconds.
        """
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = regex.search(self.getvalue(), start)
                if found:
                    return found
                if check is not None:
                    try:
                        check()
                    except AssertionError as exc:
                        raise AssertionError(f"{exc}:\n{self.getvalue()[-3000:]}") from None
                left = deadline - time.monotonic()
                if left <= 0:
                    tail = self.getvalue()[-3000:]
                    raise AssertionError(f"{pattern!r} not seen in {timeout:g} s:\n{tail}")
                self._changed.wait(min(left, 0.5))  # woken by every write
