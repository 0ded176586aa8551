"""``tf.train.Coordinator``: stop a group of threads together and report their errors.

Every thread of the group loops ``while not coord.should_stop(): ...``. When
one of them fails it calls ``coord.request_stop(e)`` from its ``except``
block: the stop flag is set, every other thread sees it at its next check,
and the main thread's ``coord.join(threads)`` re-raises ``e`` once the
threads have ended (or their grace period has run out). Only the first
reported exception is kept; the types in ``clean_stop_exception_types``
(by default ``OutOfRangeError``, the "input is exhausted" signal of queues)
stop the group without being reported.

`LooperThread` is a thread that runs a function repeatedly, back to back or
on a timer, until the coordinator asks it to stop.

TF source: ``tensorflow/python/training/coordinator.py``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from minitf.framework import errors
from minitf.runtime.distributed import simulation

__all__ = ["Coordinator", "LooperThread"]

_logger = logging.getLogger("minitf")

# How often `join` looks at its threads while it waits for a stop request.
# The stop request itself wakes it at once (it waits on the stop event); only
# "every thread ended without a stop request" is noticed this late.
_THREAD_CHECK_SECS = 0.05


class Coordinator:
    """Coordinates the termination of a set of threads.

    Args:
        clean_stop_exception_types: Exception types that stop the coordinator
            without being reported: ``request_stop(ex)`` with one of them
            behaves like ``request_stop()``. Defaults to
            ``(tf.errors.OutOfRangeError,)``.
    """

    def __init__(self, clean_stop_exception_types: Iterable[type] | None = None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()  # guards every attribute below
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None  # the (type, value, traceback) join re-raises
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex):
        """Returns ``ex``, or None if it is a clean-stop exception (or exc_info of one)."""
        value = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(value, self._clean_stop_exception_types):
            return None
        return ex

    @staticmethod
    def _as_exc_info(ex) -> tuple:
        """The ``(type, value, traceback)`` to record for ``ex``.

        TF takes ``sys.exc_info()``, which is why ``request_stop(e)`` must be
        called from the handler that caught ``e``. The same is done here; an
        exception that was raised and caught elsewhere is recorded with its own
        traceback instead of whatever exception is being handled at the time.
        """
        if isinstance(ex, tuple):
            return ex
        current = sys.exc_info()
        if isinstance(ex, BaseException) and current[1] is not ex:
            if ex.__traceback__ is not None:
                return (type(ex), ex, ex.__traceback__)
        return current

    def request_stop(self, ex: BaseException | tuple | None = None) -> None:
        """Asks the threads to stop: `should_stop` returns True from now on.

        Args:
            ex: None, an exception, or an exc_info tuple as returned by
                ``sys.exc_info()``. An exception must be passed from the
                ``except`` block that caught it. The first exception reported
                before the stop (clean-stop types excepted) is re-raised by
                `join`.

        Raises:
            Exception: ``ex`` itself, if the coordinator has already been
                joined (nobody would see it otherwise).
        """
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined and ex is not None:
                raise ex[1] if isinstance(ex, tuple) else ex
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                self._record(ex)
            self._stop_event.set()

    def _record(self, ex) -> None:
        exc_info = self._as_exc_info(ex)
        if len(exc_info) != 3 or not exc_info[0] or not exc_info[1]:
            # Neither an exc_info tuple nor an exception being handled: report that
            # misuse instead, so that join() still fails.
            try:
                raise ValueError(
                    "ex must be a tuple or sys.exc_info must return the current exception: "
                    f"{exc_info!r}"
                )
            except ValueError:
                exc_info = sys.exc_info()
        _logger.info("Error reported to Coordinator: %s, %s", exc_info[0], exc_info[1])
        self._exc_info_to_raise = exc_info

    def clear_stop(self) -> None:
        """Clears the stop flag and the recorded exception: `should_stop` returns False again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """Returns True if a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """A context manager that requests a stop when its body raises.

        The exception is reported to `request_stop` (and re-raised later by
        `join`); it does not propagate out of the ``with`` block. This is the
        same as ``try: body except: coord.request_stop(sys.exc_info())``.
        """
        try:
            yield
        except BaseException:  # handed to join(), as in TF
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Waits until a stop is requested.

        Args:
            timeout: The most seconds to wait; None waits for ever.

        Returns:
            True if a stop was requested, False if the timeout expired first.
        """
        # A simulated cluster's client waits on the virtual clock's terms.
        parked = simulation.park_until(self._stop_event.is_set)
        return self._stop_event.wait(timeout) if parked is None else parked

    def register_thread(self, thread: threading.Thread) -> None:
        """Adds ``thread`` to the threads that `join` waits for.

        Args:
            thread: The thread to wait for.
        """
        with self._lock:
            self._registered_threads.add(thread)

    def join(
        self,
        threads: Iterable[threading.Thread] | None = None,
        stop_grace_period_secs: float = 120,
        ignore_live_threads: bool = False,
    ) -> None:
        """Waits for the threads to end, then re-raises the reported exception.

        The threads are ``threads`` plus the registered ones (registered before
        this call). It waits until a stop is requested or every thread has
        ended; after a stop request the threads have ``stop_grace_period_secs``
        seconds to end.

        Args:
            threads: Started threads to wait for besides the registered ones.
            stop_grace_period_secs: Seconds the threads have to end after the stop.
            ignore_live_threads: If True, threads still alive after the grace
                period are only logged.

        Raises:
            Exception: the exception passed to `request_stop`, if any (even if
                threads are still alive).
            RuntimeError: "Coordinator stopped with threads still running: ..."
                if threads outlive the grace period and ``ignore_live_threads``
                is False.
        """
        with self._lock:
            threads = list(self._registered_threads.union(threads or ()))
        # In a simulated cluster: parked until the threads end (or the cluster deadlocks).
        simulation.park_until(lambda: not _alive(threads))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(_THREAD_CHECK_SECS):
            pass
        _join_until(threads, time.monotonic() + stop_grace_period_secs)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, value, traceback = self._exc_info_to_raise
                raise value.with_traceback(traceback)
            if stragglers:
                message = "Coordinator stopped with threads still running: " + " ".join(stragglers)
                if not ignore_live_threads:
                    raise RuntimeError(message)
                _logger.info(message)

    @property
    def joined(self) -> bool:
        """True once `join` has returned (or raised), until `clear_stop`."""
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raises the exception passed to `request_stop`, if there was one.

        Raises:
            Exception: the exception passed to `request_stop`, if any.
        """
        with self._lock:
            if self._exc_info_to_raise:
                _, value, traceback = self._exc_info_to_raise
                raise value.with_traceback(traceback)


def _join_until(threads: list[threading.Thread], deadline: float) -> None:
    """Joins each thread in turn, all within ``deadline`` (a `time.monotonic` time)."""
    for thread in threads:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        thread.join(remaining)


class LooperThread(threading.Thread):
    """A daemon thread that runs code repeatedly until its coordinator stops.

    The code is ``target(*args, **kwargs)`` or, in a subclass, `run_loop`. It
    runs back to back (``timer_interval_secs=None``) or once every
    ``timer_interval_secs`` seconds, the first time at once. An exception
    from it is reported to the coordinator and ends the thread. The thread
    registers itself with the coordinator.

    Args:
        coord: A `Coordinator`.
        timer_interval_secs: Seconds between runs, or None for back to back.
        target: The callable to run.
        args: Positional arguments for ``target``.
        kwargs: Keyword arguments for ``target``.

    Raises:
        ValueError: if ``coord`` is not a `Coordinator`, or ``args``/``kwargs``
            are given without ``target``.
    """

    def __init__(
        self,
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable | None = None,
        args: Iterable | None = None,
        kwargs: dict | None = None,
    ):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable,
        args: Iterable | None = None,
        kwargs: dict | None = None,
    ) -> LooperThread:
        """Starts a `LooperThread` that calls ``target`` until ``coord`` stops.

        Args:
            coord: A `Coordinator`.
            timer_interval_secs: Seconds between calls, or None for back to back.
            target: The callable to run.
            args: Positional arguments for ``target``.
            kwargs: Keyword arguments for ``target``.

        Returns:
            The started thread.
        """
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        """The thread body: `start_loop`, `run_loop` until stopped, `stop_loop`."""
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.monotonic()
                while not self._coord.wait_for_stop(max(0.0, next_time - time.monotonic())):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once when the thread starts."""

    def stop_loop(self) -> None:
        """Called once when the thread stops (not after an exception)."""

    def run_loop(self) -> None:
        """Called at every timer tick (or back to back): runs ``target`` by default."""
        if self._target:
            self._target(*self._args, **self._kwargs)


def _alive(threads) -> bool:
    """Whether any of ``threads`` still runs (in a simulated cluster, as it counts ends)."""
    sim = simulation.current()
    return not sim.ended(threads) if sim is not None else any(t.is_alive() for t in threads)
