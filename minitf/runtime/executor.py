"""The executor: runs one plan (one partition of one step).

Two drivers run the same `Plan`:

* the **dataflow driver** makes a `StepExecution` (the step's state as an
  object: ready ops, waiting ops, arrived completions) and asks the
  executor's `Scheduler` for one move after another — run this ready op,
  deliver that completion — until the step is done. When nothing can move
  it waits for a completion to arrive (or the step's deadline);
* the **straight-line walk** runs the ops in the plan's topological order.
  When every kernel is synchronous, any topological order is a valid dataflow
  schedule, so the walk gives the same results without the bookkeeping. The
  executor takes it only when the plan has no asynchronous kernel and nobody
  (a stepper, a tracer) has asked to see each op. From a plan's second run
  on, it walks one of the plan's walks with buffers (`minitf.runtime.plan.Walks`):
  kernels write into arrays they keep between steps and fused chains run as
  one kernel — the same values, without a new array per op and step;
* the **segmented walk** joins the two for a plan with asynchronous kernels
  and no ``tf.cond`` (`minitf.runtime.plan.Segments`), when nobody asked to
  see each op: straight walks between the completions of its waiting ops.

An untraced step's tensors for other tasks leave in one message per task and
burst of ops (`StepContext.post`).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import heapq
import itertools
import logging
import math
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import errors
from minitf.framework.ops import Operation
from minitf.ops.nn.nn_kernels import FusionDeclined
from minitf.runtime.clock import WALL_CLOCK, WallClock
from minitf.runtime.execution import (
    OpEvent,
    StepExecution,
    as_op_error,
    describe_wait,
    fetched,
    initial_values,
    store_outputs,
    waits_of,
)
from minitf.runtime.plan import Plan
from minitf.runtime.scheduler import DELIVER, FifoScheduler, Scheduler

logger = logging.getLogger("minitf")

__all__ = [
    "CancellationManager",
    "Executor",
    "OpEvent",
    "StepContext",
    "StepExecution",
    "as_op_error",
]

_step_ids = itertools.count(1)
_watch_lock = threading.Lock()


def _float_warning_switches():
    """How a step turns numpy's floating-point warnings off, and back on.

    Kernels never warn about an inf or a nan (TF's do not), so every step
    runs as in ``np.errstate(all="ignore")``. That context builds numpy's
    error state anew on each entry, 1-1.7 us: more than the rest of the walk
    of a one-op step. numpy 2 keeps the state in a context variable, so a
    step sets a state made once and resets it, for a tenth of that. (The
    state made once keeps the buffer size numpy had at import; a buffer size
    changes speed only.) With another numpy the step uses ``np.errstate``.

    Returns:
        ``(quiet, back)``: ``quiet()`` turns the warnings off and returns what
        ``back(...)`` takes to turn them back on, on the same thread.
    """
    try:
        from numpy._core import _ufunc_config

        state = _ufunc_config._make_extobj(all="ignore")
        variable = _ufunc_config._extobj_contextvar
    except (ImportError, AttributeError, TypeError):

        def quiet():
            context = np.errstate(all="ignore")
            context.__enter__()
            return context

        def back(context) -> None:
            context.__exit__(None, None, None)

        return quiet, back
    return functools.partial(variable.set, state), variable.reset


_quiet_floats, _floats_back = _float_warning_switches()


class _Advancing(threading.local):
    """Per thread: the resumed steps whose turn comes after the one this thread advances."""

    deferred: collections.deque | None = None


_advancing = _Advancing()


class CancellationManager:
    """Lets blocked kernels register how to wake up when a step is cancelled."""

    __slots__ = ("_lock", "_callbacks", "_tokens", "_cancelled")

    def __init__(self):
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._tokens = 0  # the last token given
        self._cancelled = False

    @property
    def is_cancelled(self) -> bool:
        """True once `start_cancel` has been called."""
        return self._cancelled

    def register(self, callback: Callable[[], None]) -> int | None:
        """Registers ``callback``; returns a token, or None if already cancelled.

        Args:
            callback: Called with no arguments when the step is cancelled.
        """
        with self._lock:
            if self._cancelled:
                return None
            token = self._tokens = self._tokens + 1
            self._callbacks[token] = callback
            return token

    def deregister(self, token: int | None) -> None:
        """Forgets a callback (the kernel finished normally).

        Args:
            token: What `register` returned (None is ignored).
        """
        if token is None:
            return
        with self._lock:
            self._callbacks.pop(token, None)

    def start_cancel(self) -> None:
        """Cancels: calls every registered callback once."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            callback()


class StepContext:
    """What a kernel sees of the step it runs in (TF's ``OpKernelContext``).

    Attributes:
        step_id: The step's id: in a process, local steps count up from 1; a
            cluster step's id comes from its master (`minitf.runtime.master`).
        resource_mgr: The task's `ResourceMgr`.
        cancellation: The step's `CancellationManager`; None for a step made
            with ``cancellable=False``, one that walks straight
            (`Executor.walks_straight`): nothing in it waits, so nothing
            registers to be woken.
        deadline: ``time.monotonic()`` value after which the step fails, or None.
        rendezvous: The task's `Rendezvous`, where ``_Recv`` waits (cluster steps).
        transport: What ``_Send`` uses to reach other tasks (cluster steps).
        client: The task whose session runs the step (``/job:worker/replica:0/task:1``).
        clock: Where time is read (`minitf.runtime.clock`); ``deadline`` is on it.
        trace: A list to append one `OpEvent` per executed op to, or None.
        notes: While tracing, what kernels tell the trace about their op
            (``{op name: {field: value}}``; see `note`).
        outbox: The tensors ``_Send`` has given and the driver has not sent
            yet (`post`, `flush_outbox`), or None to send each one at once.
        carry_to: The task whose tensors from the step's last burst of ops
            wait for the step's reply instead of leaving in a message of
            their own (`Worker.start_graph`), or None.
        carried: Those tensors, ``(key, value)`` pairs, once the step has ended.

    Args:
        cancellable: False for a step that walks straight: it gets no
            `CancellationManager` (``cancellation`` is None).
    """

    __slots__ = (
        "step_id", "resource_mgr", "cancellation", "deadline", "rendezvous", "transport",
        "client", "clock", "defer_attempts", "trace", "notes", "outbox", "carry_to", "carried",
    )  # fmt: skip

    def __init__(
        self,
        resource_mgr,
        deadline: float | None = None,
        step_id: int | None = None,
        rendezvous=None,
        transport=None,
        client: str = "/job:localhost/replica:0/task:0",
        clock: WallClock = WALL_CLOCK,
        cancellable: bool = True,
    ):
        self.step_id = next(_step_ids) if step_id is None else step_id
        self.resource_mgr = resource_mgr
        self.cancellation = CancellationManager() if cancellable else None
        self.deadline = deadline
        self.rendezvous = rendezvous
        self.transport = transport
        self.client = client
        self.clock = clock
        # Set by a stepper's scheduler: waiting attempts are offered, not run (ops.blocking).
        self.defer_attempts = False
        self.trace: list | None = None
        self.notes: dict[str, dict] = {}
        self.outbox: dict[str, list] | None = None
        self.carry_to: str | None = None
        self.carried: list[tuple[str, Any]] | None = None

    def post(self, task: str, key: str, value: Any, op: Operation) -> None:
        """Sends ``value`` to ``task``'s rendezvous under ``key``: now, or in the step's next batch.

        While the driver runs a burst of ready ops (`Executor`), the tensors
        for one task wait in ``outbox`` and leave together, in one message,
        when it has no more ops to run; otherwise they go at once.

        Args:
            task: The receiving task.
            key: The rendezvous key.
            value: The tensor.
            op: The ``_Send`` (named if the send fails).
        """
        outbox = self.outbox
        if outbox is None:
            self.transport.send_tensor(task, self.step_id, key, value)
        else:
            outbox.setdefault(task, []).append((key, value, op))

    def flush_outbox(self) -> None:
        """Sends the tensors waiting in ``outbox``, one message per task.

        Raises:
            OpError: the transport's error, naming the first ``_Send`` of the
                message that could not be sent.
        """
        outbox = self.outbox
        if not outbox:
            return
        batches = list(outbox.items())
        outbox.clear()
        for task, items in batches:
            try:
                self.transport.send_tensors(task, self.step_id, [(k, v) for k, v, _ in items])
            except Exception as exc:
                raise as_op_error(exc, items[0][2]) from exc

    def note(self, op_name: str, field: str, value: Any) -> None:
        """Adds ``field`` to the traced stats of ``op_name`` (only while tracing).

        Kernels use it to say what the trace cannot see from outside: what a
        waiting op waited on, which peer a tensor went to, which queue
        elements moved (`minitf.runtime.step_stats`).

        Args:
            op_name: The op's name.
            field: The stats field.
            value: Its value (JSON-able).
        """
        if self.trace is not None:
            self.notes.setdefault(op_name, {})[field] = value


class Executor:
    """Runs plans on one task.

    Args:
        scheduler: Chooses every move of the dataflow driver (default: `FifoScheduler`).
        observe_ops: If True, always use the dataflow driver (a stepper or a
            tracer wants to see every op in turn).
        task: The task's name, for the log of waiting steps.
    """

    def __init__(
        self, scheduler: Scheduler | None = None, observe_ops: bool = False, task: str = ""
    ):
        self.scheduler = scheduler or FifoScheduler()
        self.observe_ops = observe_ops or self.scheduler.observes_ops
        self.task = task
        self.wait_log_secs = wait_log_secs()
        self._watch: _Watch | None = None

    def run(self, plan: Plan, ctx: StepContext, feed_values: list[Any]) -> list[Any]:
        """Runs ``plan`` with the fed values; returns the fetched values.

        Args:
            plan: The `Plan` of the step.
            ctx: The step's `StepContext`.
            feed_values: The fed values, in the order of the plan's feeds.

        Raises:
            OpError: the TF error of the first failing op (the step is cancelled).
        """
        if self.walks_straight(plan, ctx):
            return self.run_straight(plan, ctx, feed_values)
        if (
            plan.segments is not None
            and ctx.trace is None
            and not self.observe_ops
            and type(self.scheduler) is FifoScheduler
        ):
            return self._run_segments(plan, ctx, feed_values)
        execution = StepExecution(plan, ctx, feed_values)
        quiet = _quiet_floats()
        try:
            self.drive(execution)
        finally:
            _floats_back(quiet)
        return execution.fetches()

    def walks_straight(self, plan: Plan, ctx: StepContext | None) -> bool:
        """Whether `run` runs ``plan`` as one straight walk, which never waits.

        Args:
            plan: The `Plan` of the step.
            ctx: The step's `StepContext`; None for an untraced step.
        """
        return not (
            plan.has_async
            or plan.has_control_flow
            or self.observe_ops
            or (ctx is not None and ctx.trace is not None)
            or plan.segments is not None
        )

    def run_straight(self, plan: Plan, ctx: StepContext, feed_values: list[Any]) -> list[Any]:
        """Walks a plan for which `walks_straight` holds; returns what it fetches.

        Args:
            plan: A plan that walks straight.
            ctx: Its step's context.
            feed_values: What is fed, in the plan's order of feeds.

        Raises:
            OpError: the TF error of the kernel that failed.
        """
        vals = initial_values(plan, feed_values)
        quiet = _quiet_floats()
        try:
            if ctx.transport is None:  # a local step: nothing to send
                _walk_with_buffers(plan.straight, plan.walks, vals, ctx)
            else:  # the walk never waits: its tensors for other tasks leave together at its end
                with _batched_sends(ctx):
                    _walk_with_buffers(plan.straight, plan.walks, vals, ctx)
        finally:
            _floats_back(quiet)
        return fetched(plan, vals)

    def local_walker(self, plan: Plan) -> Callable[[StepContext, list], list]:
        """`run_straight` for one local plan, with what it looks up bound once.

        A `make_callable` runner walks the same plan every call, often from
        several threads at once; every lookup it saves is time it holds the
        interpreter lock for less (see `minitf.runtime.session`).

        Args:
            plan: A plan that walks straight, of a step without a transport.

        Returns:
            ``walk(ctx, feed_values) -> fetched values``.
        """
        initial, feed_slots, entries, walks = (
            plan.initial_slots, plan.feed_slots, plan.straight, plan.walks
        )  # fmt: skip
        quiet, back = _quiet_floats, _floats_back

        def walk(ctx: StepContext, feed_values: list) -> list:
            vals = initial.copy()
            for slot, value in zip(feed_slots, feed_values):
                vals[slot] = value
            state = quiet()
            try:
                _walk_with_buffers(entries, walks, vals, ctx)
            finally:
                back(state)
            return fetched(plan, vals)

        return walk

    def drive(self, execution: StepExecution) -> None:
        """Makes the scheduler's moves until the step is done; waits when none can be made.

        Args:
            execution: The `StepExecution` of the step.

        Raises:
            OpError: the first failing op's error, or ``DeadlineExceededError``
                naming the ops still waiting when the step's deadline passed.
                The step is cancelled on the way out.
        """
        scheduler, ctx = self.scheduler, execution.ctx
        if type(scheduler) is FifoScheduler:
            self._drive_fifo(execution)
            return
        scheduler.started(execution)
        try:
            while not execution.finished:
                if execution.has_news:
                    execution.collect()
                move = scheduler.next_move(execution)
                if move is None:
                    self._wait(execution)
                elif move[0] == DELIVER:
                    execution.deliver(move[1])
                else:
                    execution.run_op(move[1])
        except BaseException:
            ctx.cancellation.start_cancel()
            raise
        finally:
            scheduler.finished(execution)

    def _drive_fifo(self, execution: StepExecution) -> None:
        """`drive` with `FifoScheduler`'s order written out: the free-running hot path.

        An untraced step's tensors for other tasks leave in batches: those
        that ``_Send`` s gave during a burst of ready ops go together, one
        message per task, before the step waits or when it ends
        (`StepContext.post`; the straight-line walk, which never waits, sends
        them at its end). A traced step sends each at once, so that its trace
        times every transfer.
        """
        ctx, ready, arrived = execution.ctx, execution.ready, execution.arrived
        inbox_empty = execution._inbox.empty
        batching = ctx.trace is None and ctx.transport is not None
        try:
            with _sends_in_batches(ctx, batching):
                while ready or execution.waiting:
                    if not inbox_empty():
                        execution.collect()
                    if arrived:
                        execution.deliver(arrived[0])
                    elif ready:
                        execution.run_op(ready[0])
                    else:
                        ctx.flush_outbox()  # nothing when not batching
                        self._wait(execution)
        except BaseException:
            ctx.cancellation.start_cancel()
            raise

    def _wait(self, execution: StepExecution) -> None:
        """Waits for a completion; logs what waits, every ``wait_log_secs``, while it lasts.

        Raises:
            DeadlineExceededError: when the step's deadline passes first.
        """
        ctx, interval = execution.ctx, self.wait_log_secs
        started = ctx.clock.now()
        while True:
            remaining = ctx.clock.remaining(ctx.deadline)
            if interval and (remaining is None or remaining > interval):
                if execution.wait_for_arrival(interval):
                    return
                _log_waiting(self.task, execution, ctx.clock.now() - started)
                continue
            if not execution.wait_for_arrival(remaining):
                raise _deadline_error(execution)
            return

    def _run_segments(self, plan: Plan, ctx: StepContext, feed_values: list[Any]) -> list[Any]:
        """Runs a plan with ops that may wait as straight walks between their completions.

        See `minitf.runtime.plan.Segments`: the executor runs every segment
        whose waiting ops have completed, starts every waiting op whose
        inputs are ready, and waits for the next completion, until all have
        run. Tensors for other tasks leave in one message per task before
        each wait and at the end (`StepContext.post`).

        Raises:
            OpError: a kernel's error naming its op, a waiting op's error (an
                aborted step, a lost peer, a closed queue), or
                ``DeadlineExceededError`` naming the ops still waiting and
                what for. The step is cancelled on the way out.
        """
        run = _SegmentedRun(plan, ctx, feed_values)
        quiet = _quiet_floats()
        try:
            with _sends_in_batches(ctx, ctx.transport is not None):
                while not run.advance():
                    ctx.flush_outbox()
                    run.arrivals.next(run, self)
        except BaseException:
            ctx.cancellation.start_cancel()
            raise
        finally:
            _floats_back(quiet)
        return fetched(plan, run.vals)

    def start_resumed(
        self,
        plan: Plan,
        ctx: StepContext,
        feed_values: list[Any],
        done: Callable[[list[Any] | None, BaseException | None], None],
    ) -> None:
        """Starts a segmented step that the threads completing its waits carry on.

        The calling thread runs what can run before the first wait and
        returns; each completion then runs, on the thread that completed it,
        what it made ready. No thread waits for the step: a ps answering a
        worker's run costs no hand-off between threads, as TF's executor
        goes on with a ``_Recv``'s or a dequeue's successors on the thread
        that completed it. Every waiting op completes outside any lock: a
        ``_Recv`` from the thread that delivers its tensor, a dequeue or a
        ``take_grad`` from the thread whose enqueue or ``apply_grad`` let it
        finish, once that thread has released the resource's lock
        (`minitf.ops.blocking`), and a cancelled one from the thread that
        cancels. An arrival while another thread runs the step is queued
        for that thread.

        Args:
            plan: The `Plan` of the step (it has `Plan.segments`).
            ctx: The step's `StepContext`.
            feed_values: The fed values, in the order of the plan's feeds.
            done: Called once, on whichever thread ends the step, with the
                fetched values and None, or None and the step's `OpError`
                (the step is cancelled first).
        """
        _ResumedRun(self, plan, ctx, feed_values, done).start()

    def watch(self, run: _ResumedRun) -> None:
        """Watches a resumed step that waits: its deadline, and its long waits (`start_resumed`).

        Args:
            run: The step, when it first waits.
        """
        if self._watch is None:
            with _watch_lock:
                if self._watch is None:
                    self._watch = _Watch(run.ctx.clock, self.wait_log_secs)
        self._watch.add(run)

    def unwatch(self, run: _ResumedRun) -> None:
        """Stops watching a resumed step that has ended.

        Args:
            run: The step.
        """
        self._watch.remove(run)


def _sends_in_batches(ctx: StepContext, batching: bool = True):
    """While it lasts, ``_Send`` s give their tensors to ``ctx.outbox``; they leave at its end.

    The driver flushes the outbox before each wait too (`StepContext.post`).
    Without ``batching`` every tensor leaves when its ``_Send`` runs, and the
    bracket is a shared no-op: a local step pays nothing for it.
    """
    return _batched_sends(ctx) if batching else _NOT_BATCHED


_NOT_BATCHED = contextlib.nullcontext()


@contextlib.contextmanager
def _batched_sends(ctx: StepContext):
    ctx.outbox = {}
    try:
        yield
        ctx.flush_outbox()
    finally:
        ctx.outbox = None


def _walk_with_buffers(entries: tuple, walks, vals: list, ctx: StepContext) -> None:
    """Walks one of ``walks`` (`minitf.runtime.plan.Walks`), or ``entries`` when it has none yet."""
    walk = walks.take() if walks is not None else None
    if walk is None:
        _walk(entries, vals, ctx)
        return
    try:
        declined = _walk(walk, vals, ctx)
        if declined is not None:
            _walk(walks.unfused_rest[declined], vals, ctx)
    finally:
        walks.give(walk)


class _SegmentedRun:
    """A segmented step between two completions (`Executor._run_segments`).

    Attributes:
        vals: The step's value slots.
        arrivals: Its waiting ops and their completions.
    """

    def __init__(self, plan: Plan, ctx: StepContext, feed_values: list[Any], arrive=None):
        self.plan = plan
        self.ctx = ctx
        self.vals = initial_values(plan, feed_values)
        self.arrivals = _Arrivals(plan, ctx, arrive)
        self._completed = 0
        self._todo = list(plan.segments.order)
        self._unstarted = list(plan.segments.waits)

    def advance(self) -> bool:
        """Runs each segment whose waits have completed and starts each wait that can start.

        Returns:
            True when every op of the step has run.

        Raises:
            OpError: a kernel's error, naming its op; ``InternalError`` for
                a plan whose masks do not add up.
        """
        completed, vals, ctx = self._completed, self.vals, self.ctx
        still = []
        for segment in self._todo:
            if segment[0] & ~completed:
                still.append(segment)
            else:  # a segment (`minitf.runtime.plan.Segments`): its entries, its walks
                _walk_with_buffers(segment[1], segment[2], vals, ctx)
        self._todo = still
        later = []
        for wait in self._unstarted:
            if wait[2] & ~completed:
                later.append(wait)
            else:
                self.arrivals.start(wait[0], wait[1], vals)
        self._unstarted = later
        if self.arrivals.waiting:
            return False
        if self._todo or self._unstarted:
            raise errors.InternalError(
                None, None, f"step {ctx.step_id:x} has ops that can never run"
            )
        return True

    def arrived(self, index: int, value: Any) -> None:
        """Stores the completion of the waiting op at step ``index``.

        Raises:
            OpError: the waiting op's error, if it failed.
        """
        self._completed |= self.arrivals.store(index, value, self.vals)


class _ResumedRun:
    """A segmented step carried on by the threads that complete its waits (`start_resumed`).

    One thread at a time advances the step; an arrival while another thread
    advances it (or while the starting thread runs the first segments) is
    queued, and that thread takes it before it lets go.
    """

    def __init__(self, executor: Executor, plan: Plan, ctx, feed_values: list, done):
        self._executor = executor
        self._done = done
        self._lock = threading.Lock()
        self._queued: list[tuple[int, Any]] = []
        self._busy = True  # the starting thread advances first
        self._ended = False
        self._watched = False
        self.started = ctx.clock.now()
        self.run = _SegmentedRun(plan, ctx, feed_values, self._arrive)

    @property
    def ctx(self) -> StepContext:
        """The step's context."""
        return self.run.ctx

    def start(self) -> None:
        """Runs what can run before the first wait (on the calling thread)."""
        self._advance([])

    def _arrive(self, index: int, value: Any) -> None:
        with self._lock:
            if self._ended:
                return
            if self._busy:
                self._queued.append((index, value))
                return
            self._busy = True
        self._advance([(index, value)])

    def _advance(self, arrivals: list) -> None:
        """Advances the step now, or, on a thread that is advancing another, right after it.

        A completion can come from a kernel of another resumed step (an
        ``apply_grad`` that lets a ``take_grad`` finish). Run there and then,
        the completed step would go ahead of the rest of the step whose
        kernel completed it: the chief's update and its tokens would come
        before that worker's own token dequeue had even started, and another
        worker could take its token. So the thread finishes its step's burst
        of ops first, as TF's executor queues the ops a completion makes
        ready behind the node that is running.
        """
        deferred = _advancing.deferred
        if deferred is not None:
            deferred.append((self, arrivals))
            return
        _advancing.deferred = deferred = collections.deque([(self, arrivals)])
        try:
            while deferred:
                run, items = deferred.popleft()
                try:
                    run._go(items)
                except Exception:  # noqa: BLE001 - keep going with the other steps
                    logger.exception("a resumed step failed outside its own error handling")
        finally:
            _advancing.deferred = None

    def _go(self, arrivals: list) -> None:
        run, ctx = self.run, self.run.ctx
        ctx.outbox = {}
        quiet = _quiet_floats()
        try:
            while True:
                for index, value in arrivals:
                    run.arrived(index, value)
                finished = run.advance()
                if finished and ctx.carry_to is not None:
                    # The reply goes to that task anyway: its tensors go with it.
                    held = ctx.outbox.pop(ctx.carry_to, None)
                    if held:
                        ctx.carried = [(key, value) for key, value, _ in held]
                ctx.flush_outbox()
                with self._lock:
                    arrivals, self._queued = self._queued, []
                    if not arrivals:
                        ctx.outbox = None  # before another thread may take the step
                        self._busy = False
                        self._ended = finished
                        if not finished and not self._watched:
                            self._watched = True
                            self._executor.watch(self)
                        break
        except BaseException as exc:  # noqa: BLE001 - the step's error goes to ``done``
            ctx.outbox = None
            self._end(exc)
            return
        finally:
            _floats_back(quiet)
        if finished:
            self._unwatch()
            self._report(fetched(run.plan, run.vals), None)

    def _report(self, values: list | None, error: BaseException | None) -> None:
        """Hands the step's outcome to ``done``, having let go of the step's values."""
        self.run.arrivals.detach()
        self._done(values, error)

    def _end(self, error: BaseException) -> None:
        with self._lock:
            self._ended = True
            self._busy = False
        self._unwatch()
        self.run.ctx.cancellation.start_cancel()
        self._report(None, error)

    def _unwatch(self) -> None:
        if self._watched:
            self._executor.unwatch(self)

    def expire(self, now: float) -> float | None:
        """Fails the step if its deadline has passed (`_Watch`).

        Returns:
            When to look again (the step is running an arrival), or None.
        """
        ctx = self.run.ctx
        with self._lock:
            if self._ended:
                return None
            if self._busy:
                return now + 0.01  # an arrival is being run; it may end the step
            self._ended = True
        ctx.cancellation.start_cancel()
        self._report(None, _deadline_error(self.run.arrivals))
        return None

    def log(self, now: float) -> None:
        """Logs what the step waits for, if it has waited `Executor.wait_log_secs` (`_Watch`)."""
        waited = now - self.started
        if not self._ended and waited >= self._executor.wait_log_secs:
            _log_waiting(self._executor.task, self.run.arrivals, waited)


class _Watch:
    """The thread that watches an executor's resumed steps while they wait.

    A step is added when it first waits and removed when it ends. The
    thread wakes at a step's deadline, and every ``interval`` seconds to log
    the steps that have waited that long: never once per step, which would
    cost a thread switch per step.

    Args:
        clock: Where time is read.
        interval: Seconds between two logs of a waiting step (0: never).
    """

    def __init__(self, clock, interval: float):
        self._clock = clock
        self._interval = interval
        self._lock = threading.Condition(threading.Lock())
        self._runs: dict[_ResumedRun, None] = {}
        self._deadlines: list[tuple[float, int, _ResumedRun]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, run: _ResumedRun) -> None:
        """Watches ``run`` until `remove`."""
        deadline = run.ctx.deadline
        with self._lock:
            self._runs[run] = None
            if deadline is not None:
                heapq.heappush(self._deadlines, (deadline, next(self._order), run))
                if self._deadlines[0][2] is run:
                    self._lock.notify()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="minitf-watch", daemon=True
                )
                self._thread.start()

    def remove(self, run: _ResumedRun) -> None:
        """Stops watching ``run`` (it has ended)."""
        with self._lock:
            self._runs.pop(run, None)

    def _serve(self) -> None:
        clock, interval, deadlines = self._clock, self._interval, self._deadlines
        next_log = clock.now() + interval if interval else None
        while True:
            with self._lock:
                while True:
                    now = clock.now()
                    first = deadlines[0][0] if deadlines else None
                    when = min(t for t in (first, next_log, math.inf) if t is not None)
                    if when <= now:
                        break
                    self._lock.wait(None if when == math.inf else when - now)
                expired = []
                while deadlines and deadlines[0][0] <= now:
                    expired.append(heapq.heappop(deadlines)[2])
                logged = []
                if next_log is not None and next_log <= now:
                    logged = list(self._runs)
                    next_log = now + interval
            for run in expired:
                again = run.expire(now)
                if again is not None:
                    with self._lock:
                        heapq.heappush(deadlines, (again, next(self._order), run))
            for run in logged:
                run.log(now)


def _ignore_arrival(index: int, value: Any) -> None:
    """The ``arrive`` of a step that has ended (`_Arrivals.detach`)."""


class _Arrivals:
    """The waiting ops of a segmented step (`Executor._run_segments`) and their completions.

    It answers like a `StepExecution` where the deadline error and the log of
    a waiting step look (``steps``, ``waiting``, ``ctx``, ``waits_for``).

    Args:
        plan: The step's plan.
        ctx: The step's context.
        arrive: Called with ``(step index, value)`` on each completion, on
            the completing thread; None to queue completions for `next`.
    """

    def __init__(self, plan: Plan, ctx: StepContext, arrive=None):
        self.steps = plan.steps
        self.ctx = ctx
        self.waiting: set[int] = set()
        self._inbox = inbox = queue.SimpleQueue()
        # Not through ``self``: a cycle would keep the step's values (a take's
        # 1 MB result) alive until the garbage collector runs, and the memory
        # they free would come back cold (see docs/architecture.md).
        self._arrive = arrive if arrive is not None else lambda i, v: inbox.put((i, v))
        self._bits: dict[int, int] = {}
        self._vals: list = []
        self._arrived: tuple | None = None

    def start(self, index: int, bit: int, vals: list) -> None:
        """Starts the waiting op at step ``index`` with its inputs from ``vals``."""
        self.waiting.add(index)
        self._bits[index] = bit
        self._vals = vals
        step = self.steps[index]
        arrive = self._arrive
        args = [vals[j] for j in step.in_slots]
        try:
            # A partial, not a lambda: one Python call less per completion.
            step.compute(self.ctx, functools.partial(arrive, index), *args)
        except Exception as exc:
            raise as_op_error(exc, step.op) from exc

    def detach(self) -> None:
        """Drops the step's values and the link back to its run, once the step has ended.

        The run holds its arrivals and they hold its ``arrive``: a cycle that
        would keep the step's arrays alive until the garbage collector runs.
        Freed now, their memory is what the next step allocates, still in the
        cache. A completion that comes later (of a cancelled op) is ignored.
        """
        self._arrive = _ignore_arrival
        self._vals = []

    def wait_for_arrival(self, timeout: float | None) -> bool:
        """Waits for a completion (as `StepExecution.wait_for_arrival`); False after ``timeout``.

        Args:
            timeout: The longest wait in seconds, or None.
        """
        try:
            self._arrived = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return False
        return True

    def next(self, run: _SegmentedRun, executor: Executor) -> None:
        """Waits for the next completion and gives it, and any others already in, to ``run``."""
        executor._wait(self)  # the deadline and the wait log of the dataflow driver
        index, value = self._arrived
        self._arrived = None
        while True:
            run.arrived(index, value)
            try:
                index, value = self._inbox.get_nowait()
            except queue.Empty:
                return

    def store(self, index: int, value: Any, vals: list) -> int:
        """Stores a completion's outputs in ``vals``; returns its bit.

        Raises:
            OpError: the waiting op's error, if ``value`` is one.
        """
        step = self.steps[index]
        if isinstance(value, BaseException):
            raise as_op_error(value, step.op)
        store_outputs(step, vals, value)
        self.waiting.discard(index)
        return self._bits[index]

    def waits_for(self, i: int) -> dict:
        """What the waiting op at step ``i`` waits for (as `StepExecution.waits_for`)."""
        return waits_of(self.steps[i], self._vals)


def _walk(entries: tuple, vals: list, ctx: StepContext) -> Operation | None:
    """Runs straight-walk entries (`minitf.runtime.plan.Plan.straight`) in order.

    Returns:
        None, or the op of a fused chain whose kernel declined its inputs
        (the step goes on with the chain's ops one by one).

    Raises:
        OpError: the TF error of the first failing kernel, naming its op.
    """
    # The hot loop of minitf: arity-specialised calls avoid building an
    # argument list per op. ``op`` names the failing op if a kernel raises.
    op = None
    try:
        for compute, ins, n, out, outs, op in entries:  # noqa: B007
            if n == 2:
                result = compute(ctx, vals[ins[0]], vals[ins[1]])
            elif n == 1:
                result = compute(ctx, vals[ins[0]])
            elif n == 3:  # an optimizer's update, an accumulator's apply
                result = compute(ctx, vals[ins[0]], vals[ins[1]], vals[ins[2]])
            elif n == 0:
                result = compute(ctx)
            else:
                result = compute(ctx, *[vals[i] for i in ins])
            if out >= 0:
                vals[out] = result
            elif out == -1:
                for slot, value in zip(outs, result):
                    vals[slot] = value
    except FusionDeclined:
        return op
    except Exception as exc:
        raise as_op_error(exc, op) from exc
    return None


WAIT_LOG_ENV = "MINITF_WAIT_LOG_SECS"
"""Seconds between two log lines about a step that waits (default 5; 0: never)."""


def wait_log_secs() -> float:
    """``MINITF_WAIT_LOG_SECS``, or 5."""
    return float(os.environ.get(WAIT_LOG_ENV, "5"))


def _waits(execution: StepExecution, limit: int = 5) -> str:
    """Each op still waiting (at most ``limit``) and what for, in words."""
    waiting = sorted(execution.waiting, key=lambda i: execution.steps[i].op.name)
    described = []
    for i in waiting[:limit]:
        try:
            what = describe_wait(execution.waits_for(i))
        except Exception:  # noqa: BLE001 - saying what waits must not fail the step
            what = "its completion"
        described.append(f"{execution.steps[i].op.name} waits for {what}")
    more = f"; and {len(waiting) - limit} more" if len(waiting) > limit else ""
    return "; ".join(described) + more


def _log_waiting(task: str, execution: StepExecution, waited: float) -> None:
    """A step that waits says so: which ops, on which task, for what, for how long."""
    logger.warning(
        "%s: step %x has waited %.1f s: %s",
        task or "this process",
        execution.ctx.step_id,
        waited,
        _waits(execution),
    )


def _deadline_error(execution: StepExecution) -> errors.DeadlineExceededError:
    """TF's text, then each op still waiting and what for (the run's deadline passed)."""
    waiting = sorted(execution.waiting, key=lambda i: execution.steps[i].op.name)
    first = execution.steps[waiting[0]].op if waiting else None
    return errors.DeadlineExceededError(
        first.node_def if first is not None else None,
        first,
        "Timed out waiting for notification (the run's deadline passed): " + _waits(execution),
    )
