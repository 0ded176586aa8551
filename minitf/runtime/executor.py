"""The executor: runs one plan (one partition of one step).

Two loops run the same `Plan`:

* the **dataflow loop** keeps a pending-input count per op and a ready set;
  it asks a *scheduler* which ready op runs next, and lets asynchronous
  kernels (ones that may block, like a queue dequeue) register a completion
  instead of holding the thread, so other ready ops go on;
* the **straight-line walk** runs the ops in the plan's topological order.
  When every kernel is synchronous, any topological order is a valid dataflow
  schedule, so the walk gives the same results without the bookkeeping. The
  executor takes it only when the plan has no asynchronous kernel and nobody
  (a stepper, a tracer) has asked to see each op.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import errors
from minitf.runtime.plan import Plan, PlanStep, dereference

_step_ids = itertools.count(1)


class CancellationManager:
    """Lets blocked kernels register how to wake up when a step is cancelled."""

    def __init__(self):
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._tokens = itertools.count()
        self._cancelled = False

    @property
    def is_cancelled(self) -> bool:
        """True once `start_cancel` has been called."""
        return self._cancelled

    def register(self, callback: Callable[[], None]) -> int | None:
        """Registers ``callback``; returns a token, or None if already cancelled."""
        with self._lock:
            if self._cancelled:
                return None
            token = next(self._tokens)
            self._callbacks[token] = callback
            return token

    def deregister(self, token: int | None) -> None:
        """Forgets a callback (the kernel finished normally)."""
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
        step_id: A process-unique id of the step.
        resource_mgr: The task's `ResourceMgr`.
        cancellation: The step's `CancellationManager`.
        deadline: ``time.monotonic()`` value after which the step fails, or None.
        rendezvous: The task's `Rendezvous`, where ``_Recv`` waits (cluster steps).
        transport: What ``_Send`` uses to reach other tasks (cluster steps).
        client: The task whose session runs the step (``/job:worker/replica:0/task:1``).
        trace: A list to append one `OpEvent` per executed op to, or None.
        notes: While tracing, what kernels tell the trace about their op
            (``{op name: {field: value}}``; see `note`).
    """

    def __init__(
        self,
        resource_mgr,
        deadline: float | None = None,
        step_id: int | None = None,
        rendezvous=None,
        transport=None,
        client: str = "/job:localhost/replica:0/task:0",
    ):
        self.step_id = next(_step_ids) if step_id is None else step_id
        self.resource_mgr = resource_mgr
        self.cancellation = CancellationManager()
        self.deadline = deadline
        self.rendezvous = rendezvous
        self.transport = transport
        self.client = client
        self.trace: list | None = None
        self.notes: dict[str, dict] = {}

    def note(self, op_name: str, field: str, value) -> None:
        """Adds ``field`` to the traced stats of ``op_name`` (only while tracing).

        Kernels use it to say what the trace cannot see from outside: what a
        waiting op waited on, which peer a tensor went to, which queue
        elements moved (`minitf.runtime.step_stats`).
        """
        if self.trace is not None:
            self.notes.setdefault(op_name, {})[field] = value


class OpEvent:
    """One executed op of a traced step: what ran, when, on which thread, what it produced.

    Kept small (the plan step, times, sizes): a traced step makes one per op,
    and `minitf.runtime.step_stats` turns them into dicts afterwards.
    """

    __slots__ = ("step", "start_ns", "end_ns", "thread", "output_bytes", "wait_ns", "notes")

    def __init__(self, step, start_ns, end_ns, thread, output_bytes, wait_ns=0, notes=None):
        self.step = step
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.thread = thread  # (ident, name) of the thread that ran the executor loop
        self.output_bytes = output_bytes
        self.wait_ns = wait_ns
        self.notes = notes

    name = property(lambda self: self.step.op.name, doc="The op's name.")
    type = property(lambda self: self.step.op.type, doc="The op's type.")
    asynchronous = property(lambda self: self.step.is_async, doc="Whether the op may wait.")
    thread_id = property(lambda self: self.thread[0], doc="The executor thread's ident.")
    thread_name = property(lambda self: self.thread[1], doc="The executor thread's name.")

    @classmethod
    def of(cls, step, start_ns: int, vals: list, ctx, thread: tuple, wait_ns: int = 0) -> OpEvent:
        """The event of ``step``, which started at ``start_ns`` and has just finished."""
        end_ns = time.perf_counter_ns()
        size = 0
        for slot in step.out_slots:
            size += getattr(vals[slot], "nbytes", 0)
        notes = ctx.notes.pop(step.op.name, None) if ctx.notes else None
        return cls(step, start_ns, end_ns, thread, size, wait_ns, notes)


class FifoScheduler:
    """The default scheduler: ready ops run in the order they became ready."""

    def pick(self, ready: deque, steps: tuple[PlanStep, ...]) -> int:
        """Removes and returns the index of the next op to run."""
        return ready.popleft()


def as_op_error(exc: BaseException, op) -> errors.OpError:
    """Converts an exception raised by ``op``'s kernel into a TF error naming the op."""
    if isinstance(exc, errors.OpError):
        if exc.op is None:
            exc._op = op
        return exc
    if isinstance(exc, (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError)):
        cls = errors.InvalidArgumentError
    else:
        cls = errors.InternalError
    error = cls(op.node_def, op, f"{type(exc).__name__} in {op.type} op '{op.name}': {exc}")
    error.__cause__ = exc
    return error


class Executor:
    """Runs plans on one task.

    Args:
        scheduler: Chooses the next ready op in the dataflow loop.
        observe_ops: If True, always use the dataflow loop (a stepper or a
            tracer wants to see every op in turn).
    """

    def __init__(self, scheduler: FifoScheduler | None = None, observe_ops: bool = False):
        self.scheduler = scheduler or FifoScheduler()
        self.observe_ops = observe_ops

    def run(self, plan: Plan, ctx: StepContext, feed_values: list[Any]) -> list[Any]:
        """Runs ``plan`` with the fed values; returns the fetched values.

        Raises:
            OpError: the TF error of the first failing op (the step is cancelled).
        """
        vals: list[Any] = [None] * plan.num_slots
        for slot, value in plan.constants:
            vals[slot] = value
        for slot, value in zip(plan.feed_slots, feed_values):
            vals[slot] = value
        with np.errstate(all="ignore"):
            if plan.has_async or self.observe_ops or ctx.trace is not None:
                self._run_dataflow(plan, vals, ctx)
            else:
                self._run_straight(plan, vals, ctx)
        return [
            dereference(vals[s]) if read else vals[s]
            for s, read in zip(plan.fetch_slots, plan.fetch_reads)
        ]

    @staticmethod
    def _run_straight(plan: Plan, vals: list, ctx: StepContext) -> None:
        # The hot loop of minitf: arity-specialised calls avoid building an
        # argument list per op. ``op`` names the failing op if a kernel raises.
        op = None
        try:
            for compute, ins, n, out, outs, op in plan.straight:  # noqa: B007
                if n == 2:
                    result = compute(ctx, vals[ins[0]], vals[ins[1]])
                elif n == 1:
                    result = compute(ctx, vals[ins[0]])
                elif n == 0:
                    result = compute(ctx)
                else:
                    result = compute(ctx, *[vals[i] for i in ins])
                if out >= 0:
                    vals[out] = result
                elif out == -1:
                    for slot, value in zip(outs, result):
                        vals[slot] = value
        except Exception as exc:
            raise as_op_error(exc, op) from exc

    def _run_dataflow(self, plan: Plan, vals: list, ctx: StepContext) -> None:
        steps = plan.steps
        pending = [s.num_predecessors for s in steps]
        ready = deque(i for i, s in enumerate(steps) if s.num_predecessors == 0)
        completions: queue.SimpleQueue = queue.SimpleQueue()
        trace, starts, thread = ctx.trace, {}, None
        if trace is not None:
            current = threading.current_thread()
            thread = (current.ident, current.name)
        outstanding = 0
        try:
            while ready or outstanding:
                while outstanding and not completions.empty():
                    outstanding -= 1
                    item = completions.get_nowait()
                    self._complete(steps, vals, pending, ready, *item)
                    self._traced(trace, steps, starts, vals, ctx, thread, item)
                if not ready:
                    if outstanding:
                        item = self._wait(completions, ctx)
                        outstanding -= 1
                        self._complete(steps, vals, pending, ready, *item)
                        self._traced(trace, steps, starts, vals, ctx, thread, item)
                    continue
                i = self.scheduler.pick(ready, steps)
                step = steps[i]
                args = [vals[j] for j in step.in_slots]
                if trace is not None:
                    starts[i] = time.perf_counter_ns()
                if step.is_async:
                    try:
                        step.compute(ctx, _completion(completions, i, trace), *args)
                    except Exception as exc:
                        raise as_op_error(exc, step.op) from exc
                    if trace is not None:
                        starts[i] = (starts[i], time.perf_counter_ns())
                    outstanding += 1
                    continue
                try:
                    result = step.compute(ctx, *args)
                except Exception as exc:
                    raise as_op_error(exc, step.op) from exc
                self._store(step, vals, result)
                self._release(step, pending, ready)
                if trace is not None:
                    trace.append(OpEvent.of(step, starts.pop(i), vals, ctx, thread))
        except BaseException:
            ctx.cancellation.start_cancel()
            raise

    @staticmethod
    def _traced(trace, steps, starts, vals, ctx, thread, item: tuple) -> None:
        """Records an asynchronous op that has just completed (its time includes the wait).

        It waited if its kernel finished after its compute call had returned.
        """
        index = item[0]
        if trace is not None and index in starts:
            start_ns, returned_ns = starts.pop(index)
            wait_ns = max(0, item[2] - returned_ns) if len(item) > 2 else 0
            trace.append(OpEvent.of(steps[index], start_ns, vals, ctx, thread, wait_ns))

    @staticmethod
    def _wait(completions: queue.SimpleQueue, ctx: StepContext):
        timeout = None if ctx.deadline is None else max(0.0, ctx.deadline - time.monotonic())
        try:
            return completions.get(timeout=timeout)
        except queue.Empty:
            raise errors.DeadlineExceededError(
                None, None, "Timed out waiting for a blocked op (the run's deadline passed)"
            ) from None

    def _complete(self, steps, vals, pending, ready, i: int, result: Any, *_) -> None:
        step = steps[i]
        if isinstance(result, BaseException):
            raise as_op_error(result, step.op)
        self._store(step, vals, result)
        self._release(step, pending, ready)

    @staticmethod
    def _store(step: PlanStep, vals: list, result: Any) -> None:
        outs = step.out_slots
        if len(outs) == 1:
            vals[outs[0]] = result
        elif outs:
            for slot, value in zip(outs, result):
                vals[slot] = value

    @staticmethod
    def _release(step: PlanStep, pending: list[int], ready: deque) -> None:
        for j in step.successors:
            pending[j] -= 1
            if pending[j] == 0:
                ready.append(j)


def _completion(completions: queue.SimpleQueue, i: int, trace) -> Callable[[Any], None]:
    if trace is not None:  # a traced step also learns when the kernel finished

        def done_traced(result: Any) -> None:
            completions.put((i, result, time.perf_counter_ns()))

        return done_traced

    def done(result: Any) -> None:
        completions.put((i, result))

    return done
