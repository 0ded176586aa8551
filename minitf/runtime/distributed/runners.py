"""Runner threads: where a task runs a step that must wait with a thread of its own.

A step that is stepped, traced, recorded or slowed down by a straggler
delay runs on a runner thread, which waits with it, so that the connection
that brought it keeps carrying tensors and replies.
"""

from __future__ import annotations

import logging
import queue
import threading

logger = logging.getLogger("minitf")


class Runners:
    """Threads that run the partitions that may block, kept from one step to the next.

    A run that may wait (for a tensor, a queue, an accumulator) must not hold
    the connection that brought it, so it runs on a thread of its own. Making
    a thread per run costs more than the run of a small partition; a runner
    that has finished waits for the next run instead, and one idle for
    `IDLE_SECONDS` ends. There is never a limit: every run that waits holds
    a runner, and a new run never waits for one.
    """

    IDLE_SECONDS = 30.0

    def __init__(self, name: str):
        self._name = name
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Condition(threading.Lock())
        self._idle = 0

    def wait_until_idle(self, count: int, timeout: float) -> bool:
        """Waits until ``count`` runners wait for work; False if ``timeout`` seconds pass first.

        Args:
            count: How many idle runners to wait for.
            timeout: The longest wait in seconds.
        """
        with self._lock:
            return self._lock.wait_for(lambda: self._idle == count, timeout)

    def start(self, fn, *args) -> None:
        """Runs ``fn(*args)`` on an idle runner, or on a new one if none is idle."""
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._jobs.put((fn, args))
        if spawn:
            threading.Thread(target=self._serve, name=self._name, daemon=True).start()

    def _serve(self) -> None:
        jobs = self._jobs
        job = jobs.get()
        while True:
            fn, args = job
            try:
                fn(*args)
            except Exception:  # noqa: BLE001 - a run reports its own errors; keep the runner
                logger.exception("%s: a run failed outside its step", self._name)
            del fn, args, job  # hold nothing of a finished run while idle
            with self._lock:
                self._idle += 1
                self._lock.notify_all()
            try:
                job = jobs.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0 and jobs.empty():
                        self._idle -= 1
                        self._lock.notify_all()
                        return
                job = jobs.get()  # a run was given to this runner meanwhile
