"""The executor: runs the steps of one task, every move chosen by its scheduler.

There is one way to run a step: a `StepExecution` (`minitf.runtime.core.execution`)
whose moves a `Scheduler` (`minitf.runtime.core.scheduler`) chooses. Who makes
the moves is the only thing that differs (`Executor`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from minitf.runtime.core import config
from minitf.runtime.core.execution import StepExecution
from minitf.runtime.core.loop_execution import LoopStepExecution
from minitf.runtime.core.plan import Plan
from minitf.runtime.core.scheduler import DELIVER, FifoScheduler, Scheduler
from minitf.runtime.core.step_context import StepContext
from minitf.runtime.core.watch import Watch, deadline_error, log_waiting, wait_log_secs
from minitf.runtime.speedups.float_errors import floats_back, quiet_floats
from minitf.runtime.speedups.receiving import loops_to_take_up

logger = logging.getLogger("minitf")


_watch_lock = threading.Lock()


class Executor:
    """Runs the steps of one task: every op of every step as a move its scheduler chooses.

    A step's partition becomes a `StepExecution`; the executor's `Scheduler`
    picks each move (run a ready unit, deliver an arrived completion) until
    the step is done. Two drivers make the moves:

    * `run`: the calling thread drives the step and waits, when no move can
      be made, for a completion (or the deadline) — a local session's steps,
      the client's own partition, a stepped or traced step on a task;
    * `start`: the step holds no thread while it waits. The task's *loop*
      (`_Loop`, TF's inter-op pool) takes it up each time it can move:
      completions reach the step through the loop and its scheduler, never
      on the thread that made them.

    What a move runs is a policy of the scheduler's: watched op by op
    (`Scheduler.observes_ops`, a traced step, a plan with ``tf.cond``, or the
    speed-ups off, `minitf.runtime.core.config.fast`) every op is a move; else a
    move is one of the plan's units — a straight walk with buffers and fused
    chains, or one op that may wait (`minitf.runtime.core.plan.Plan.units`).

    Args:
        scheduler: Chooses every move (default: `FifoScheduler`).
        observe_ops: If True, every op is a move (a tracer wants each in turn).
        task: The task's name, for the log of waiting steps.
        inter_op_threads: How many of the steps `start` starts may move at once.
    """

    def __init__(
        self,
        scheduler: Scheduler | None = None,
        observe_ops: bool = False,
        task: str = "",
        inter_op_threads: int = 1,
    ):
        self.scheduler = scheduler or FifoScheduler()
        self._observe_ops = observe_ops
        self.by_op = observe_ops or not config.fast()
        self.task = task
        self.wait_log_secs = wait_log_secs()
        self._watch: Watch | None = None
        runs_steps = self.scheduler.runs_steps
        self._loop = self.scheduler if runs_steps else _Loop(task, inter_op_threads)

    @property
    def observe_ops(self) -> bool:
        """Whether every op is a move of its own: asked for, or the scheduler's wish.

        The scheduler is asked at every step: a simulation's wish changes
        when a stepper takes it over (`Scheduler.observes_ops`).
        """
        return self._observe_ops or self.scheduler.observes_ops

    def execution(self, plan: Plan, ctx: StepContext, feed_values: list[Any]) -> StepExecution:
        """A new step of ``plan``: op by op if anyone watches, else in the plan's units.

        Args:
            plan: The `Plan` of the step.
            ctx: The step's `StepContext`.
            feed_values: The fed values, in the order of the plan's feeds.
        """
        by_op = self.by_op or self.scheduler.observes_ops or ctx.trace is not None
        by_op = by_op or plan.units is None
        execution = LoopStepExecution if plan.has_loops else StepExecution
        return execution(plan, ctx, feed_values, by_op)

    def run(self, plan: Plan, ctx: StepContext, feed_values: list[Any]) -> list[Any]:
        """Runs ``plan`` with the fed values on the calling thread; returns the fetched values.

        Args:
            plan: The `Plan` of the step.
            ctx: The step's `StepContext`.
            feed_values: The fed values, in the order of the plan's feeds.

        Raises:
            OpError: the TF error of the first failing op (the step is cancelled).
        """
        execution = self.execution(plan, ctx, feed_values)
        quiet = quiet_floats()
        try:
            self.drive(execution)
        finally:
            floats_back(quiet)
        return execution.fetches()

    def drive(self, execution: StepExecution) -> None:
        """Makes the scheduler's moves until the step is done; waits when none can be made.

        Args:
            execution: The `StepExecution` of the step.

        Raises:
            OpError: the first failing op's error, or ``DeadlineExceededError``
                naming the ops still waiting when the step's deadline passed.
                The step is cancelled on the way out.
        """
        scheduler = self.scheduler
        scheduler.started(execution)
        try:
            while True:
                self.moves(execution)
                if not (execution.ready or execution.waiting):  # finished
                    break
                self._wait(execution)
        except BaseException:
            _cancel(execution.ctx)
            raise
        finally:
            scheduler.finished(execution)

    def moves(self, execution: StepExecution) -> None:
        """Makes moves until the scheduler has none for now (the step is done, or waits).

        A step's tensors for another task that ``_Send`` s give meanwhile
        leave together, one message per task, when it stops (one at a time
        in a step watched op by op, so that a trace times each transfer).

        Args:
            execution: The step's `StepExecution`.

        Raises:
            OpError: the error of the move that failed.
        """
        ctx = execution.ctx
        next_move, run_op = self.scheduler.next_move, execution.run_op
        batching = not execution.by_op and ctx.transport is not None
        if batching:
            ctx.outbox = {}
        try:
            # ``execution.finished``, spelt out: this loop is every step's.
            while execution.ready or execution.waiting:
                if execution.has_news:
                    execution.collect()
                move = next_move(execution)
                if move is None:
                    break
                if move[0] == DELIVER:
                    execution.deliver(move[1])
                else:
                    run_op(move[1])
            if batching:
                if ctx.carry_to is not None and execution.finished:
                    # The reply goes to that task anyway: its tensors go with it.
                    held = ctx.outbox.pop(ctx.carry_to, None)
                    if held:
                        ctx.carried = [(key, value) for key, value, _ in held]
                ctx.flush_outbox()
        finally:
            if batching:
                ctx.outbox = None

    def start(
        self,
        plan: Plan,
        ctx: StepContext,
        feed_values: list[Any],
        done: Callable[[list[Any] | None, BaseException | None], None],
    ) -> None:
        """Starts a step that holds no thread while it waits: the task's loop makes its moves.

        Args:
            plan: The `Plan` of the step.
            ctx: The step's `StepContext`.
            feed_values: The fed values, in the order of the plan's feeds.
            done: Called once, on the loop's thread, with the fetched values
                and None, or None and the step's `OpError` (the step is
                cancelled first).
        """
        started = _Started(self, self.execution(plan, ctx, feed_values), done)
        self._loop.start(started)

    def watch(self, run: _Started) -> None:
        """Watches ``run``, a started step that first waits: its deadline, and its long waits."""
        if self._watch is None:
            with _watch_lock:
                if self._watch is None:
                    self._watch = Watch(run.ctx.clock, self.wait_log_secs)
        self._watch.add(run)

    def unwatch(self, run: _Started) -> None:
        """Stops watching ``run``, a started step that has ended (`watch`)."""
        self._watch.remove(run)

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
                log_waiting(self.task, execution, ctx.clock.now() - started)
                continue
            if not execution.wait_for_arrival(remaining):
                raise deadline_error(execution)
            return


def _cancel(ctx: StepContext) -> None:
    if ctx.cancellation is not None:
        ctx.cancellation.start_cancel()


class _Loop:
    """The task's loop, TF's inter-op thread pool: makes the moves of started steps.

    Being the loop is a *turn*, which up to ``turns`` threads have at once. A
    thread with a turn takes up the steps that can move (new ones, or ones a
    completion came to) in the order they asked, each until it waits or
    ends; a step moves on one thread at a time. A completion only queues its
    step; one that a move made is taken up by that move's thread once its
    step stops, as TF queues what a completion makes ready behind the
    running node: a worker's step reaches its token dequeue before the
    chief's update that its gradient allowed puts the tokens in. A thread
    that brings work takes a free turn: a new step's request's (as TF runs
    ``RunGraph`` on its RPC's thread), or a reader's that delivered tensors
    (`minitf.runtime.speedups.receiving`). With no turn taken, the loop's
    own thread is woken; it ends after `IDLE_SECONDS` idle.

    Args:
        task: The task's name (the thread's).
        turns: How many threads may have a turn at once (the inter-op threads).
    """

    IDLE_SECONDS = 30.0

    def __init__(self, task: str, turns: int = 1):
        self._name = f"minitf-loop {task}".strip()
        self._steps: deque[_Started] = deque()  # in the order they asked
        self._lock = threading.Lock()
        self._turns = 0  # threads that have a turn: they take up every step in ``_steps``
        self._max_turns = max(1, turns)
        self._mine = threading.local()  # ``steps``: the queue of this thread's turn
        self._wake: queue.SimpleQueue = queue.SimpleQueue()
        self._thread_running = False

    def start(self, run: _Started) -> None:
        """Takes a turn for a new step here if one is free, else queues it."""
        with self._lock:
            self._steps.append(run)
        self.take_turn()

    def take_up(self, run: _Started) -> None:
        """Queues ``run`` (from any thread) for a thread that has a turn, or will have one."""
        mine = getattr(self._mine, "steps", None)
        if mine is not None:  # a move of this thread's turn made the completion
            mine.append(run)
            return
        with self._lock:
            self._steps.append(run)
            receiver = loops_to_take_up()
            if receiver is not None and self._turns < self._max_turns:
                receiver.add(self)  # it takes a turn once its message is delivered
                return
            if self._turns:
                return
            self._wake.put(None)
            if self._thread_running:
                return
            self._thread_running = True
        threading.Thread(target=self._serve, name=self._name, daemon=True).start()

    def take_turn(self) -> None:
        """Takes a turn here if one is free and steps wait for it."""
        if getattr(self._mine, "steps", None) is not None:
            return  # this thread has a turn already: it takes them up
        with self._lock:
            if self._turns >= self._max_turns or not self._steps:
                return
            self._turns += 1
        self._take_steps()

    def _take_steps(self) -> None:
        steps = self._steps
        mine = self._mine.steps = deque()
        while True:
            if mine:
                run = mine.popleft()
            else:
                with self._lock:
                    if not steps:
                        self._turns -= 1
                        self._mine.steps = None
                        return
                    run = steps.popleft()
            try:
                run.advance()
            except Exception:  # noqa: BLE001 - a step reports its own errors; keep the loop
                logger.exception("%s: a step failed outside its own error handling", self._name)
            except BaseException:
                self._mine.steps = None
                with self._lock:  # the next thread with work takes the rest
                    self._turns -= 1
                    steps.extendleft(reversed(mine))
                raise
            del run  # hold nothing of a finished step while idle

    def _serve(self) -> None:
        while True:
            try:
                self._wake.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._wake.empty():
                        self._thread_running = False
                        return
                continue
            self.take_turn()


_IDLE, _QUEUED, _MOVING, _AGAIN = range(4)  # a started step: waits, is queued, moves, goes on


class _Started:
    """A step that `Executor.start` started, taken up by the loop each time it can move."""

    __slots__ = (
        "_executor", "execution", "_done", "_lock", "_state", "_ended", "_expired",
        "_watched", "started", "__weakref__",
    )  # fmt: skip

    def __init__(self, executor: Executor, execution: StepExecution, done):
        self._executor = executor
        self.execution = execution
        self._done = done
        self._lock = threading.Lock()
        self._state = _QUEUED  # its first moves are already on their way (`_Loop.start`)
        self._ended = False
        self._expired = False
        self._watched = False
        self.started = execution.ctx.clock.now()
        execution.on_arrival = self._arrival

    @property
    def ctx(self) -> StepContext:
        """The step's context."""
        return self.execution.ctx

    def _arrival(self) -> None:
        """A completion came (on whichever thread made it): the loop takes the step up."""
        with self._lock:
            if self._ended or self._state != _IDLE:
                if self._state == _MOVING:
                    self._state = _AGAIN  # the thread that moves it goes on
                return
            self._state = _QUEUED
        self._executor._loop.take_up(self)

    def advance(self) -> None:
        """Makes the step's moves until it waits or ends (on a thread with the loop's turn)."""
        with self._lock:
            if self._ended:
                return
            self._state = _MOVING
        execution = self.execution
        quiet = quiet_floats()
        try:
            while True:
                if self._expired:
                    raise deadline_error(execution)
                self._executor.moves(execution)
                with self._lock:
                    if self._state == _MOVING:
                        self._state = _IDLE
                        break
                    self._state = _MOVING  # a completion came meanwhile
        except BaseException as exc:  # noqa: BLE001 - the step's error goes to ``done``
            self._end(None, exc)
            return
        finally:
            floats_back(quiet)
        if execution.finished:
            self._end(execution.fetches(), None)
        elif not self._watched:
            self._watched = True
            self._executor.watch(self)

    def settle(self) -> None:
        """Ends the step if nothing is left to run or deliver."""
        if self.execution.finished:
            try:
                values, error = self.execution.fetches(), None
            except BaseException as exc:  # noqa: BLE001 - a fetch of a branch not taken
                values, error = None, exc
            self._end(values, error)

    def fail(self, error: BaseException) -> None:
        """Ends the step with ``error``; its waiting ops are cancelled."""
        self._end(None, error)

    def _end(self, values: list | None, error: BaseException | None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
        if self._watched:
            self._executor.unwatch(self)
        if error is not None:
            _cancel(self.execution.ctx)
        self.execution.detach()
        self._executor.scheduler.finished(self.execution)
        done, self._done = self._done, None  # it may refer to this run: drop the cycle now
        done(values, error)

    def expire(self, now: float) -> float | None:
        """Fails the step when its deadline has passed (`Watch`): the loop ends it; returns None."""
        self._expired = True
        self._arrival()
        return None

    def log(self, now: float) -> None:
        """Logs what the step waits for, if it has waited `Executor.wait_log_secs` (`Watch`)."""
        waited = now - self.started
        if not self._ended and waited >= self._executor.wait_log_secs:
            log_waiting(self._executor.task, self.execution, waited)
