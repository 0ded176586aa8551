"""Kernel runs that wait on a resource: TF's queue and accumulator *attempts*.

A dequeue on an empty queue or a ``take_grad`` with too few gradients must
wait, but it must not hold a thread: the other ready ops of its step, and the
steps other threads run on the same session, go on meanwhile. So the kernel
is asynchronous (see `minitf.runtime.core.executor`): it hands the resource an
`Attempt` — a function that tries to make progress, and the ``done`` callback
of the kernel — and returns at once.

The resource keeps its waiting attempts in first-come-first-served lists, one
per direction (enqueues and dequeues of a queue). Whenever its state changes
it *flushes*: it runs the attempt at the front of each list until none can
make progress. An attempt that finishes is removed, and its ``done`` callback
is called — after the resource's lock is released, from whichever thread made
the progress (an enqueuer hands the element to the waiting dequeuer's step).
This is TF's ``QueueBase::FlushUnlocked`` / ``TryAttemptLocked`` loop.

A step that a stepper holds (its context's ``defer_attempts``) sees one
thing differently: an attempt that says how to tell it could finish (its
``ready`` test) is not run by whichever thread made that possible. It is
*offered* to its step — it arrives like a completion, as an `Offer` — and
stays at the front of its list, so FIFO order holds; it runs on the step's
own thread when the step delivers the offer. A class sees "2 of 2: take_grad
is ready" before the take happens.

Waiting attempts are registered with their step's `CancellationManager`:
closing the session, an error elsewhere in the step or the step's deadline
removes them from the resource and completes them with TF's ``CancelledError``
— nothing is left waiting on a step that has ended.
"""

from __future__ import annotations

import enum
import itertools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import errors, ops
from minitf.framework.locks import ShortLock


class RunResult(enum.Enum):
    """What one try of an attempt achieved (TF's ``RunResult``)."""

    NO_PROGRESS = 0  # nothing changed: wait for the resource to change
    PROGRESS = 1  # changed the resource but is not finished: others may now move
    COMPLETE = 2  # finished: ``attempt.result`` holds the value or the error


NO_PROGRESS = RunResult.NO_PROGRESS
PROGRESS = RunResult.PROGRESS
COMPLETE = RunResult.COMPLETE


class Attempt:
    """One kernel run waiting on a resource.

    Attributes:
        run: ``run(attempt) -> RunResult``; called with the resource's lock held.
        done: The kernel's completion callback; receives ``result``.
        result: What ``done`` receives: the op's outputs or an exception.
        state: Free for ``run`` to keep progress in (e.g. elements taken so far).
        deferred: True if this attempt is offered to its (held) step instead
            of run when ready. A held step's context says so before its first
            op runs (`minitf.runtime.core.held_scheduler.HeldScheduler.started`), so it
            is read once, here, not at every flush.
    """

    __slots__ = (
        "run", "done", "ctx", "cancel_message", "token", "result", "state", "ready", "offered",
        "deferred",
    )  # fmt: skip

    def __init__(self, run, done, ctx, cancel_message: str, state: Any = None, ready=None):
        self.run = run
        self.done = done
        self.ctx = ctx
        self.cancel_message = cancel_message
        self.token = None
        self.result: Any = None
        self.state = state
        self.ready = ready  # ready(attempt) -> bool: `run` would complete now (lock held)
        self.offered = False
        self.deferred = ready is not None and getattr(ctx, "defer_attempts", False)

    def complete(self, result: Any) -> RunResult:
        """Records ``result`` (a value or an exception) and returns `COMPLETE`."""
        self.result = result
        return COMPLETE


class BlockingResource:
    """A resource with a lock and first-come-first-served lists of waiting attempts.

    Args:
        directions: How many attempt lists the resource keeps (a queue keeps
            two: enqueues and dequeues; an accumulator one: takes).
    """

    def __init__(self, directions: int = 1):
        # Held for a few microseconds of Python by every thread that uses the
        # resource: a plain lock would convoy under the GIL (framework.locks).
        self.lock = ShortLock()
        self._changed = threading.Condition(self.lock)
        # How many `wait_for_waiting` calls wait (lock held to change or read).
        # Without them a flush does not notify: a notify costs four calls of
        # Python (``threading.Condition`` tests that its lock is held by
        # trying to take it), 60 of the 1,300 a ps makes per synchronous
        # global step of two workers.
        self._observers = 0
        self._attempts: tuple[deque[Attempt], ...] = tuple(deque() for _ in range(directions))

    def num_waiting(self, direction: int) -> int:
        """How many attempts wait in the list ``direction``."""
        with self.lock:
            return len(self._attempts[direction])

    def wait_for_waiting(self, direction: int, count: int, timeout: float) -> bool:
        """Waits until exactly ``count`` attempts wait in ``direction``; False on timeout.

        For observers — tests, a stepper — that need to know a run has blocked.
        """
        with self._changed:
            self._observers += 1
            try:
                return self._changed.wait_for(
                    lambda: len(self._attempts[direction]) == count, timeout
                )
            finally:
                self._observers -= 1

    def try_attempt(
        self,
        direction: int,
        ctx: Any,
        done: Callable[[Any], None],
        run: Callable[[Attempt], RunResult],
        cancel_message: str,
        state: Any = None,
        cancellable: bool = True,
        ready: Callable[[Attempt], bool] | None = None,
    ) -> None:
        """Queues a kernel run behind the earlier ones of its direction and flushes.

        ``done`` is called exactly once: maybe before this returns, maybe later
        from another thread.

        Args:
            direction: Which attempt list the run joins.
            ctx: The run's step context (for its cancellation manager).
            done: The kernel's completion callback.
            run: Tries to make progress; see `Attempt`.
            cancel_message: The ``CancelledError`` message if the step is cancelled.
            state: Initial ``attempt.state``.
            cancellable: False for attempts that must run even in a cancelled
                step (TF's plain ``close``, which holds no cancellation token).
            ready: Tells (lock held) whether ``run`` would complete now; with
                it, a held step is offered the attempt instead (see above).
        """
        attempt = Attempt(run, done, ctx, cancel_message, state, ready)
        cancellation = ctx.cancellation if cancellable and ctx is not None else None
        with self.lock:
            if cancellation is not None and cancellation.is_cancelled:
                attempt.result = errors.CancelledError(None, None, cancel_message)
                finished = [attempt]
            else:
                self._attempts[direction].append(attempt)
                finished = self._flush_locked()
        if cancellation is not None and attempt not in finished:
            # Only one left waiting registers (most finish at once); cancelled meanwhile: undo it.
            attempt.token = cancellation.register(lambda: self._cancel(direction, attempt))
            if attempt.token is None:
                self._cancel(direction, attempt)
        self._finish(finished)

    def mutate(self, change: Callable[[], Any]) -> Any:
        """Runs ``change()`` under the lock, then lets waiting attempts move; returns its result."""
        with self.lock:
            result = change()
            finished = self._flush_locked()
        self._finish(finished)
        return result

    def fail_waiting(self, direction: int, make_error: Callable[[], Exception]) -> list[Attempt]:
        """Completes every attempt of one list with an error; call with the lock held.

        Returns the finished attempts: pass them to `finish` after releasing the lock.
        """
        finished = list(self._attempts[direction])
        self._attempts[direction].clear()
        for attempt in finished:
            attempt.result = make_error()
        if finished and self._observers:
            self._changed.notify_all()
        return finished

    def flush_locked(self) -> list[Attempt]:
        """Runs waiting attempts until none can move; call with the lock held.

        Returns the finished attempts: pass them to `finish` after releasing the lock.
        """
        if not any(self._attempts):
            # Nothing waits, so nothing can move, and the number waiting stays
            # what `wait_for_waiting` observers were last told: the hot path of
            # a producer with no consumer waiting.
            return []
        return self._flush_locked()

    def finish(self, finished: list[Attempt]) -> None:
        """Delivers finished attempts' results; call without the lock."""
        self._finish(finished)

    def _flush_locked(self) -> list[Attempt]:
        finished: list[Attempt] = []
        changed = True
        while changed:
            changed = False
            for direction, attempts in enumerate(self._attempts):
                if attempts:  # an empty list has nothing to try: no call for it
                    changed = self._try_front(direction, attempts, finished) or changed
        if self._observers:
            self._changed.notify_all()
        return finished

    def _try_front(self, direction: int, attempts: deque[Attempt], finished: list) -> bool:
        """Runs the attempts at the front of one list while they complete."""
        progress = False
        while attempts:
            attempt = attempts[0]
            if attempt.deferred:
                # A held step runs it itself, when it delivers the offer; until
                # then it keeps its place, and the ones behind it wait.
                if not attempt.offered and attempt.ready(attempt):
                    attempt.offered = True
                    finished.append(Offer(self, direction, attempt))
                break
            outcome = attempt.run(attempt)
            if outcome is NO_PROGRESS:
                break
            progress = True
            if outcome is PROGRESS:
                break
            attempts.popleft()
            finished.append(attempt)
        return progress

    def on_cancel_locked(self, direction: int, attempt: Attempt) -> None:
        """Undoes a cancelled attempt's partial progress (lock held); nothing by default."""

    def _cancel(self, direction: int, attempt: Attempt) -> None:
        with self.lock:
            attempts = self._attempts[direction]
            if attempt not in attempts:
                return  # it finished first
            attempts.remove(attempt)
            self.on_cancel_locked(direction, attempt)
            attempt.result = errors.CancelledError(None, None, attempt.cancel_message)
            # A cancelled attempt may have been in the way of the ones behind it.
            finished = [attempt] + self._flush_locked()
        attempt.token = None  # the cancellation manager has already let go of it
        self._finish(finished)

    @staticmethod
    def _finish(finished: list) -> None:
        for attempt in finished:
            if isinstance(attempt, Offer):
                attempt.attempt.done(attempt)  # arrives at its step; nothing ran yet
                continue
            if attempt.token is not None:
                attempt.ctx.cancellation.deregister(attempt.token)
                attempt.token = None
            attempt.done(attempt.result)


class Offer:
    """A waiting attempt of a held step that could now finish: what its step delivers.

    Delivering it (`run_offered_attempt`) runs the attempt on the step's thread; its result
    then reaches the step as an ordinary completion (a second move). If the
    resource changed meanwhile so that it cannot finish after all, it goes
    back to waiting and will be offered again. Kernels that wrap ``done``
    pass an offer through untouched.
    """

    __slots__ = ("resource", "direction", "attempt")

    def __init__(self, resource: BlockingResource, direction: int, attempt: Attempt):
        self.resource = resource
        self.direction = direction
        self.attempt = attempt

    def run_offered_attempt(self) -> None:
        """Runs the attempt now; its result (if it finished) goes to its step's ``done``."""
        resource, attempt = self.resource, self.attempt
        with resource.lock:
            attempts = resource._attempts[self.direction]
            if attempt not in attempts:
                return  # cancelled meanwhile: the step has its error already
            attempt.offered = False
            finished = []
            if attempts[0] is attempt and attempt.run(attempt) is COMPLETE:
                attempts.popleft()
                finished.append(attempt)
            finished += resource._flush_locked()
        resource._finish(finished)


_private_names = itertools.count(1)
_private_lock = threading.Lock()


def private_resource_name(op: ops.Operation) -> str:
    """TF's name for a resource without ``shared_name``: ``_<n>_<op name>``, new per kernel.

    Every kernel instance (one per op and session) gets its own resource, so
    two sessions — or two queue ops of one graph — never share it.
    """
    with _private_lock:
        return f"_{next(_private_names)}_{op.name}"


def frozen(value) -> np.ndarray:
    """A read-only array the resource may keep: ``value`` itself when nobody else can change it."""
    if isinstance(value, np.ndarray) and not value.flags.writeable and value.flags.owndata:
        return value
    copy = np.array(value, copy=True)
    copy.flags.writeable = False
    return copy
