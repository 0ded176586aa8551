"""One partition of one step, as an object a driver advances: `StepExecution`.

The execution holds everything a running step knows — every tensor's value
slot, how many inputs each op still waits for, which ops are *ready*, which
asynchronous ops are *waiting* on a resource, and which of those have
*arrived* (finished on the resource, their outputs not yet handed to the
step). Two moves change it:

* `StepExecution.run_op` runs a ready op. A synchronous kernel computes its
  outputs, which may make its consumers ready; an asynchronous one (a
  dequeue, a ``take_grad``, a ``_Recv``) registers a completion callback and
  the op joins ``waiting``.
* `StepExecution.deliver` hands an arrived completion's outputs to the step.

Completions arrive from whichever thread made progress (an enqueue on
another step, a tensor from another task), but they only *queue up*: the
driver collects them into ``arrived`` (`StepExecution.collect`), and the step
changes only when the driver delivers them, in the order its
`minitf.runtime.core.scheduler.Scheduler` chooses. Nothing blocks
inside the object, so one driver can hold it still between moves — that is
what a stepper does.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from minitf.framework import errors
from minitf.framework.ops import Operation
from minitf.ops.control_flow.control_flow_kernels import DEAD
from minitf.ops.data_flow.blocking import Offer
from minitf.ops.nn.nn_kernels import FusionDeclined
from minitf.runtime.core.plan import Plan, PlanStep, Unit, dereference
from minitf.runtime.core.step_stats import OpEvent
from minitf.runtime.core.watch import waits_of
from minitf.runtime.speedups.walks import Walks


def as_op_error(exc: BaseException, op) -> errors.OpError:
    """Converts an exception raised by ``op``'s kernel into a TF error naming the op.

    Args:
        exc: The exception.
        op: The `Operation` whose kernel raised it.

    Returns:
        ``exc`` itself if it is an `OpError` (given ``op`` if it names none), else an
        ``InvalidArgumentError`` (for ValueError, TypeError, IndexError, KeyError,
        ZeroDivisionError) or an ``InternalError`` naming the op.
    """
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


def initial_values(plan: Plan, feed_values: list[Any]) -> list[Any]:
    """The value slots of a new run of ``plan``: its folded constants and the feeds.

    Args:
        plan: The `Plan`.
        feed_values: The fed values, in the order of ``plan.feed_slots``.
    """
    vals = plan.initial_slots.copy()
    for slot, value in zip(plan.feed_slots, feed_values):
        vals[slot] = value
    return vals


def fetched(plan: Plan, vals: list[Any]) -> list[Any]:
    """The fetched values of a finished run (a variable fetched is read now).

    Args:
        plan: The `Plan`.
        vals: The run's value slots.

    Raises:
        InvalidArgumentError: for a fetch on a ``tf.cond`` branch that was not taken.
    """
    if not plan.fetch_slots:  # a training step: nothing to collect
        return []
    values = [
        dereference(vals[s]) if read else vals[s]
        for s, read in zip(plan.fetch_slots, plan.fetch_reads)
    ]
    if plan.has_control_flow:
        for i, value in enumerate(values):
            if value is DEAD:
                what = "it is on a tf.cond branch that was not taken"
                message = f"Retval[{i}] does not have value: {what}"
                raise errors.InvalidArgumentError(None, None, message)
    return values


_NO_INBOX = queue.SimpleQueue()
"""The inbox of a step with no op that may wait: nothing ever arrives in it."""
_NONE_WAIT: frozenset = frozenset()
_NONE_ARRIVE: deque = deque(maxlen=0)
_NO_STARTS: dict = {}  # only a traced step notes when its waiting ops started


class StepExecution:
    """The state of one partition of one step, and the two moves that change it.

    The step runs as *units* (`minitf.runtime.core.plan.Unit`): every op a unit of
    its own when someone watches op by op (a stepper, a tracer, a plan with
    ``tf.cond``, or the speed-ups off), else the plan's few large units —
    straight walks and the ops that wait between them (`Plan.units`). A move
    runs one ready unit or delivers one arrived completion; a
    `minitf.runtime.core.scheduler.Scheduler` chooses which.

    Args:
        plan: The partition's `Plan`.
        ctx: The step's `minitf.runtime.core.step_context.StepContext`.
        feed_values: The fed values, in the order of ``plan.feed_slots``.
        by_op: Run every op as a unit of its own (`Plan.op_units`).

    Attributes:
        steps: The plan's steps.
        units: The units the step runs; with ``by_op``, unit ``i`` is step ``i``.
        ready: Indices of units ready to run, in the order they became ready.
        waiting: Indices of units that wait (an op that may wait) whose
            completion has not been delivered (arrived or not).
        arrived: Indices of waiting units whose completion has arrived and
            been collected, in arrival order (touched by the driver only).
        done_ops: How many ops have finished (run, or delivered).
    """

    __slots__ = (
        "plan", "ctx", "steps", "units", "by_op", "vals", "pending", "ready", "waiting",
        "arrived", "done_ops", "_results", "_inbox", "_thread", "_starts", "on_arrival",
        "_dead_preds",
    )  # fmt: skip

    def __init__(self, plan: Plan, ctx: Any, feed_values: list[Any], by_op: bool = True):
        self.plan = plan
        self.ctx = ctx
        self.steps: tuple[PlanStep, ...] = plan.steps
        self.by_op = by_op = by_op or plan.units is None
        units, pending, ready = plan.op_start if by_op else plan.unit_start
        self.units: tuple[Unit, ...] = units
        self.vals = initial_values(plan, feed_values)
        self.pending = pending.copy()
        self.ready: deque[int] = deque(ready)
        self.done_ops = 0
        if plan.has_async:
            self.waiting: set[int] = set()
            self.arrived: deque[int] = deque()
            self._results: dict[int, tuple[Any, int]] = {}
            # (index, result, arrival ns): completions of ops that waited.
            self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        else:  # no op can wait: nothing ever waits or arrives (shared, never written)
            self.waiting, self.arrived, self._results = _NONE_WAIT, _NONE_ARRIVE, {}
            self._inbox = _NO_INBOX
        self._thread = None
        self._starts: dict[int, tuple[int, int]] = _NO_STARTS  # a traced step's own, below
        # Called (from the arriving thread) after a completion arrives: the
        # driver that holds the step uses it to wake up, or to take the step
        # up again.
        self.on_arrival = None
        # With tf.cond in the plan: how many predecessors of each op were dead.
        self._dead_preds = [0] * len(self.steps) if plan.has_control_flow else None
        if ctx.trace is not None:
            current = threading.current_thread()
            self._thread = (current.ident, current.name)
            self._starts = {}

    @property
    def finished(self) -> bool:
        """True when every unit has run and every completion has been delivered."""
        return not self.ready and not self.waiting

    def fetches(self) -> list[Any]:
        """The fetched values (a variable fetched is read now)."""
        return fetched(self.plan, self.vals)

    def waits_for(self, i: int) -> dict:
        """What the waiting unit ``i`` waits for: a queue's size, an accumulator's count, a tensor.

        Args:
            i: The index of a waiting unit.

        Returns:
            For a ``_Recv``: ``{"kind": "tensor", "key", "tensor", "from"}``
            (in a loop also ``"frames"``, and the key is its iteration's); for a queue
            or accumulator op: its state (``size``/``capacity``, or ``count``
            and ``global_step``) with ``"required"`` where the op needs more
            than one; otherwise ``{"kind": "completion"}``.
        """
        return waits_of(self.units[i].step, self.vals)

    def run_op(self, i: int) -> None:
        """Runs the ready unit ``i``: its straight walk, or the start of its op that may wait.

        Args:
            i: The index of a ready unit.

        Raises:
            OpError: the TF error of a kernel, naming its op.
        """
        ready = self.ready
        if ready[0] == i:
            ready.popleft()
        else:
            ready.remove(i)
        unit = self.units[i]
        step = unit.step
        if self._dead_preds is not None and self._is_dead(i, step):
            self._run_dead(i, unit)
            return
        traced = self._thread is not None
        start = self.ctx.clock.now_ns() if traced else 0
        if step is not None and step.is_async:
            self.waiting.add(i)
            start_waiting(step, self.ctx, self._completion(i), self.vals)
            if traced:
                self._starts[i] = (start, self.ctx.clock.now_ns())
            return
        if unit.walks is None:
            _walk(unit.entries, self.vals, self.ctx)
        else:
            walk(unit.entries, unit.walks, self.vals, self.ctx)
        self._finish(i, unit)
        if traced:
            self.ctx.trace.append(
                OpEvent.of(step, start, self.ctx.clock.now_ns(), self.vals, self.ctx, self._thread)
            )

    def _is_dead(self, i: int, step: PlanStep) -> bool:
        """Whether op ``i`` is on a branch not taken: a dead input or dead control input.

        ``Merge`` is the exception: it is dead only when all its inputs are.
        """
        vals = self.vals
        if step.op.type == "Merge":
            return all(vals[j] is DEAD for j in step.in_slots)
        return self._dead_preds[i] > 0 or any(vals[j] is DEAD for j in step.in_slots)

    def _run_dead(self, i: int, unit: Unit) -> None:
        """A dead op does not run; its outputs are dead. A ``_Send`` still tells its peer."""
        step = unit.step
        if step.op.type == "_Send":
            # The receiving task must learn the value is dead, or its _Recv waits
            # forever (dead by a control edge, its input may well be alive).
            step.compute(self.ctx, DEAD)
        store_outputs(
            step, self.vals, DEAD if len(step.out_slots) == 1 else [DEAD] * len(step.out_slots)
        )
        self._finish(i, unit)
        self._mark_dead(step)

    def _mark_dead(self, step: PlanStep) -> None:
        dead_preds = self._dead_preds
        for j in step.successors:
            dead_preds[j] += 1

    def deliver(self, i: int) -> None:
        """Hands the arrived completion of unit ``i`` to the step.

        Args:
            i: The index of a unit whose completion has arrived.

        Raises:
            OpError: if the op finished with an error.
        """
        arrived = self.arrived
        if arrived[0] == i:
            arrived.popleft()
        else:
            arrived.remove(i)
        result, arrived_ns = self._results.pop(i)
        if type(result) is Offer:
            # A held step's waiting attempt could finish: it runs now, on this
            # thread; its result arrives as the op's next completion.
            result.run_offered_attempt()
            return
        self.waiting.discard(i)
        unit = self.units[i]
        step = unit.step
        if isinstance(result, BaseException):
            raise as_op_error(result, step.op)
        store_outputs(step, self.vals, result)
        # In a loop, its iteration may end with it: where it ran is read first.
        where = self.where(i) if self._thread is not None else ()
        self._finish(i, unit)
        if result is DEAD and self._dead_preds is not None:
            self._mark_dead(step)  # a _Recv of a dead value, a control edge's too
        if self._thread is not None and i in self._starts:
            # It ends when the step takes its outputs; it waited from its kernel
            # returning until its completion arrived.
            start, returned = self._starts.pop(i)
            wait, end = max(0, arrived_ns - returned), self.ctx.clock.now_ns()
            event = OpEvent.of(step, start, end, self.vals, self.ctx, self._thread, wait)
            event.frames = where
            self.ctx.trace.append(event)

    def where(self, i: int) -> tuple[tuple[str, int], ...]:
        """The loop frames and iterations move ``i`` runs in, outermost first: none here.

        Args:
            i: A move of the step.
        """
        return ()

    def offers(self) -> set[int]:
        """Arrived units whose delivery runs the op that waited (an `Offer`), not its outputs."""
        return {i for i in self.arrived if type(self._results.get(i, (None,))[0]) is Offer}

    @property
    def has_news(self) -> bool:
        """True if completions have arrived that `collect` has not taken in yet."""
        return not self._inbox.empty()

    def collect(self) -> None:
        """Takes the completions that have arrived into ``arrived`` (driver thread only)."""
        inbox = self._inbox
        while not inbox.empty():
            self.take((inbox.get_nowait(),))

    def wait_for_arrival(self, timeout: float | None) -> bool:
        """Blocks until a completion arrives and collects it (True), or ``timeout`` passes.

        Args:
            timeout: The longest wait in seconds, or None.
        """
        try:
            self.take((self._inbox.get(timeout=timeout),))
        except queue.Empty:
            return False
        self.collect()
        return True

    def detach(self) -> None:
        """Lets go of the step's values once it has ended.

        A step and the completions it handed out refer to each other; left to
        the garbage collector, that cycle kept a ps's gradients alive for
        dozens of steps, so that every new sum started in memory gone cold.
        A completion that comes later (of a cancelled op) finds nothing.
        """
        self.vals = []
        self._results.clear()
        self.on_arrival = None

    def take(self, items: list[tuple]) -> None:
        """Takes completions ``(index, result, arrival ns)`` into ``arrived``, in their order."""
        results, arrived = self._results, self.arrived
        for i, result, arrived_ns in items:
            results[i] = (result, arrived_ns)
            arrived.append(i)

    def gather(self, inbox: Any) -> None:
        """Completions go to ``inbox.put`` from now on: a driver that `take` s them itself."""
        self._inbox = inbox

    def _completion(self, i: int):
        inbox, clock = self._inbox, self.ctx.clock
        traced = self._thread is not None  # only a trace needs the arrival time

        def done(result: Any) -> None:
            inbox.put((i, result, clock.now_ns() if traced else 0))
            on_arrival = self.on_arrival
            if on_arrival is not None:
                on_arrival()

        return done

    def _finish(self, i: int, unit: Unit) -> None:
        pending, ready = self.pending, self.ready
        for j in unit.successors:
            pending[j] -= 1
            if pending[j] == 0:
                ready.append(j)
        self.done_ops += len(unit.ops)


def start_waiting(step: PlanStep, ctx: Any, done: Callable[[Any], None], vals: list) -> None:
    """Starts the op of ``step`` that may wait: its kernel calls ``done`` when it finishes.

    The one place an asynchronous kernel is called (`walk` is the one place a
    synchronous kernel is).

    Args:
        step: The op's `minitf.runtime.core.plan.PlanStep`.
        ctx: The step's context.
        done: The completion: called once with the op's outputs or its error.
        vals: The step's value slots (the op's inputs are read from them).

    Raises:
        OpError: the kernel's error, naming its op, if it fails at once.
    """
    try:
        step.compute(ctx, done, *map(vals.__getitem__, step.in_slots))  # no comprehension frame
    except Exception as exc:
        raise as_op_error(exc, step.op) from exc


def walk(entries: tuple, walks: Walks | None, vals: list, ctx: Any) -> None:
    """Runs straight-walk entries in order, with buffers from ``walks`` when it has some.

    From a plan's second run on, one of ``walks`` (`minitf.runtime.speedups.walks.Walks`)
    replaces ``entries``: kernels writing into buffers they keep, fused
    chains in place of their ops. A chain whose kernel declines its inputs
    hands over to the rest of the walk op by op.

    Args:
        entries: The walk's entries (`minitf.runtime.core.plan.Plan.straight`'s form).
        walks: The walks with buffers of these entries, or None.
        vals: The step's value slots, read and written.
        ctx: The step's context.

    Raises:
        OpError: the TF error of the first failing kernel, naming its op.
    """
    taken = walks.take() if walks is not None else None
    if taken is None:
        _walk(entries, vals, ctx)
        return
    try:
        declined = _walk(taken, vals, ctx)
        if declined is not None:
            _walk(walks.unfused_rest[declined], vals, ctx)
    finally:
        walks.give(taken)


def _walk(entries: tuple, vals: list, ctx) -> Operation | None:
    """Runs straight-walk entries (`minitf.runtime.core.plan.Plan.straight`) in order.

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


def store_outputs(step, vals: list, result: Any) -> None:
    """Puts an op's result into its output slots (one value, or one per output).

    Args:
        step: The op's `minitf.runtime.core.plan.PlanStep`.
        vals: The step's value slots.
        result: What its kernel returned or completed with.
    """
    outs = step.out_slots
    if len(outs) == 1:
        vals[outs[0]] = result
    elif outs:
        for slot, value in zip(outs, result):
            vals[slot] = value
