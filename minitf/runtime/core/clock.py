"""Time as the runtime reads it: one clock object instead of scattered ``time`` calls.

Deadlines, timeouts and trace timestamps go through a clock, so that a
different one — a virtual clock that a simulated cluster advances — can take
its place without touching the executor.
"""

from __future__ import annotations

import threading
import time


class WallClock:
    """The machine's clocks: ``time.monotonic`` for deadlines, ``perf_counter_ns`` for traces."""

    def now(self) -> float:
        """Seconds on a monotonic clock (what deadlines are measured in)."""
        return time.monotonic()

    def now_ns(self) -> int:
        """Nanoseconds on the high-resolution clock traces are measured in."""
        return time.perf_counter_ns()

    def wait(self, event: threading.Event, seconds: float | None) -> bool:
        """Waits until ``event`` is set or ``seconds`` pass; True if it was set.

        Args:
            event: The event to wait for.
            seconds: The longest wait; None waits until the event is set.
        """
        return event.wait(seconds)

    def remaining(self, deadline: float | None) -> float | None:
        """Seconds left until ``deadline`` (never negative), or None for no deadline.

        Args:
            deadline: A `now` time, or None.
        """
        return None if deadline is None else max(0.0, deadline - self.now())


WALL_CLOCK = WallClock()
"""The clock every task uses unless it is given another."""
