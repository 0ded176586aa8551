"""TF1's stock hooks: stop at a step, save checkpoints and summaries, count steps, catch NaN.

Each is a `minitf.train.SessionRunHook` that a `MonitoredSession` calls
around every ``run``. A hook that needs a number from the step asks for it
in `before_run` (it is fetched in the same step as the caller's fetches) and
reads it in `after_run`; a hook that wants the loop to end calls
``run_context.request_stop()``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from minitf.framework import ops
from minitf.framework.event_pb2 import SessionLog
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.summary_pb2 import Summary
from minitf.summary.writer import FileWriter, FileWriterCache
from minitf.train import training_util
from minitf.train.session_run_hook import SessionRunArgs, SessionRunHook

if TYPE_CHECKING:
    from minitf.runtime.core.session import BaseSession
    from minitf.train.saver import Saver
    from minitf.train.scaffold import Scaffold
    from minitf.train.session_run_hook import SessionRunContext, SessionRunValues

logger = logging.getLogger("minitf")


class SecondOrStepTimer:
    """Says when something that runs every N seconds or every N steps is due.

    Args:
        every_secs: Due when this many seconds have passed since the last time.
        every_steps: Due when the step is this many past the last time's.

    Raises:
        ValueError: unless exactly one of them is given.
    """

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("Either every_secs or every_steps should be provided.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        """Forgets the last time: the next step is due."""
        self._last_time: float | None = None
        self._last_step: int | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True if ``step`` is due (the first step always is).

        Args:
            step: The current global step.
        """
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Records ``step`` as done now; returns the seconds and steps since the last one.

        Args:
            step: The global step just done.

        Returns:
            ``(seconds, steps)`` since the previous one, or ``(None, None)`` the
                first time.
        """
        now = time.time()
        if self._last_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        """The step recorded last, or None."""
        return self._last_step


def _global_step_or_raise(hook: str):
    step = training_util.get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return step


class StopAtStepHook(SessionRunHook):
    """Asks the loop to stop once the global step reaches ``last_step``.

    Args:
        num_steps: Run this many steps from the global step at creation.
        last_step: Or: stop at this global step.

    Raises:
        ValueError: unless exactly one of them is given.
    """

    def __init__(self, num_steps: int | None = None, last_step: int | None = None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step = _global_step_or_raise("StopAtStepHook")

    def after_create_session(self, session, coord) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        # The fetched value may predate this step's update: read it again when close.
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """Logs the global steps per second every N steps or seconds, and writes it as a summary.

    With a ``summary_writer`` (or an ``output_dir``, whose cached
    `FileWriter` is used) the rate is also written as the scalar
    ``global_step/sec`` (the global step's op name, then ``/sec``), as TF does.

    Args:
        every_n_steps: Log every this many global steps.
        every_n_secs: Or: log every this many seconds.
        output_dir: The directory whose `FileWriterCache` writer to write with.
        summary_writer: The `FileWriter` to write with.

    Raises:
        ValueError: unless exactly one of ``every_n_steps`` and ``every_n_secs``
            is given.
    """

    def __init__(
        self,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: Any = None,
    ):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_steps)
        self._output_dir, self._summary_writer = output_dir, summary_writer
        self.rates: list[float] = []
        """Every rate logged, in global steps per second."""

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step = _global_step_or_raise("StepCounterHook")
        self._summary_tag = self._global_step.op.name + "/sec"

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        step = int(run_values.results)
        if self._timer.should_trigger_for_step(step):
            secs, steps = self._timer.update_last_triggered_step(step)
            if secs:
                rate = steps / secs
                self.rates.append(rate)
                if self._summary_writer is not None:
                    value = Summary.Value(tag=self._summary_tag, simple_value=rate)
                    self._summary_writer.add_summary(Summary(value=[value]), step)
                logger.info("%s: %g", self._summary_tag, rate)


class LoggingTensorHook(SessionRunHook):
    """Logs the values of some tensors every N local steps or seconds, or at the end.

    Args:
        tensors: A dict ``{tag: tensor}`` or a list of tensors (or their names).
        every_n_iter: Log every this many local steps (``run`` calls).
        every_n_secs: Or: log every this many seconds. Exactly one of the two
            is needed, unless ``at_end`` alone is asked for.
        at_end: Log at the end too.
        formatter: ``formatter({tag: value}) -> str`` instead of ``tag = value, ...``.

    Raises:
        ValueError: for no period (without ``at_end``), both periods, or a
            non-positive ``every_n_iter``.
    """

    def __init__(
        self,
        tensors: dict | list,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Callable[[dict], str] | None = None,
    ):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs must be "
                "provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            tensors = {getattr(t, "name", t): t for t in tensors}
        self._tags = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._at_end = at_end
        self._timer = None if only_log_at_end else SecondOrStepTimer(every_n_secs, every_n_iter)
        self.logged: list[str] = []
        """Every line logged."""

    def begin(self) -> None:
        graph = ops.get_default_graph()
        self._fetches = {
            tag: graph.as_graph_element(t) if isinstance(t, str) else t
            for tag, t in self._tensors.items()
        }
        self._iter = 0
        if self._timer is not None:
            self._timer.reset()

    def before_run(self, run_context) -> SessionRunArgs | None:
        self._due = self._timer is not None and self._timer.should_trigger_for_step(self._iter)
        return SessionRunArgs(self._fetches) if self._due else None

    def after_run(self, run_context, run_values) -> None:
        if self._due:
            self._timer.update_last_triggered_step(self._iter)
            self._log(run_values.results)
        self._iter += 1

    def end(self, session) -> None:
        if self._at_end:
            self._log(session.run(self._fetches))

    def _log(self, values: dict) -> None:
        if self._formatter is not None:
            line = self._formatter(values)
        else:
            line = ", ".join(f"{tag} = {values[tag]}" for tag in self._tags)
        self.logged.append(line)
        logger.info("%s", line)


class NanLossDuringTrainingError(RuntimeError):
    """The loss became NaN (raised by `NanTensorHook`)."""

    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Stops training when the loss is NaN: raises, or (``fail_on_nan_loss=False``) asks to stop.

    Args:
        loss_tensor: The loss tensor to watch.
        fail_on_nan_loss: Raise `NanLossDuringTrainingError` on NaN; if False,
            log a warning and ask the loop to stop.
    """

    def __init__(self, loss_tensor: ops.Tensor, fail_on_nan_loss: bool = True):
        self._loss = loss_tensor
        self._fail = fail_on_nan_loss

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._loss)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Checks the loss this step fetched.

        Args:
            run_context: The `SessionRunContext` of this ``run``.
            run_values: Holds the loss's value in ``results``.

        Raises:
            NanLossDuringTrainingError: if the loss is NaN and
                ``fail_on_nan_loss`` is set.
        """
        if np.isnan(run_values.results):
            if self._fail:
                logger.error("Model diverged with loss = NaN.")
                raise NanLossDuringTrainingError
            logger.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; their values are in `final_ops_values`.

    Args:
        final_ops: What to run, in any structure ``Session.run`` fetches.
        final_ops_feed_dict: The feeds for that run.
    """

    def __init__(self, final_ops: Any, final_ops_feed_dict: dict | None = None):
        self._final_ops = final_ops
        self._feed_dict = final_ops_feed_dict
        self._values = None

    @property
    def final_ops_values(self):
        """What ``final_ops`` returned at the end (None before)."""
        return self._values

    def end(self, session) -> None:
        if self._final_ops is not None:
            self._values = session.run(self._final_ops, feed_dict=self._feed_dict)


class GlobalStepWaiterHook(SessionRunHook):
    """Holds a worker back until the global step reaches ``wait_until_step``.

    TF uses it to start workers gradually (``wait_until_step=int(K * log(task + 1))``).

    Args:
        wait_until_step: The global step to wait for; 0 or less starts at once.
    """

    POLL_SECS = 0.5

    def __init__(self, wait_until_step: int):
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._started = self._wait_until_step <= 0
        self._global_step = _global_step_or_raise("_GlobalStepWaiterHook")

    def before_run(self, run_context) -> None:
        if self._started:
            return None
        logger.info("Waiting for global step %d before starting training.", self._wait_until_step)
        while True:
            step = training_util.global_step(run_context.session, self._global_step)
            if step >= self._wait_until_step:
                self._started = True
                return None
            time.sleep(self.POLL_SECS)  # the chief moves the step, in another process


class CheckpointSaverListener:
    """Told around every save of a `CheckpointSaverHook`; ``after_save`` may end training."""

    def begin(self) -> None:
        """Before the first save."""

    def before_save(self, session: BaseSession, global_step_value: int) -> None:
        """Before each save.

        Args:
            session: The session being saved.
            global_step_value: The global step the checkpoint is for.
        """

    def after_save(self, session: BaseSession, global_step_value: int) -> bool | None:
        """After each save; True asks the loop to stop.

        Args:
            session: The session just saved.
            global_step_value: The global step of the checkpoint.
        """

    def end(self, session: BaseSession, global_step_value: int) -> None:
        """At the end, after the last save.

        Args:
            session: The session.
            global_step_value: The global step of the last checkpoint.
        """


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every N seconds or steps, when the session starts, and at the end.

    Args:
        checkpoint_dir: Where (``<dir>/<checkpoint_basename>-<global step>``).
        save_secs: Save every this many seconds.
        save_steps: Or: save every this many global steps (exactly one of the two).
        saver: The `Saver` (default: the scaffold's, or the one in ``SAVERS``).
        checkpoint_basename: The file name before the step.
        scaffold: A `Scaffold` whose saver to use.
        listeners: `CheckpointSaverListener` s.

    Raises:
        ValueError: for both ``saver`` and ``scaffold``, or not exactly one period.
    """

    def __init__(
        self,
        checkpoint_dir: str,
        save_secs: float | None = None,
        save_steps: int | None = None,
        saver: Saver | None = None,
        checkpoint_basename: str = "model.ckpt",
        scaffold: Scaffold | None = None,
        listeners: list[CheckpointSaverListener] | None = None,
    ):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self.saved_steps: list[int] = []
        """The global step of every checkpoint saved."""

    def begin(self) -> None:
        self._global_step = _global_step_or_raise("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord) -> None:
        # TF writes graph.pbtxt into the checkpoint directory here, creating
        # it with its parents; the save op itself makes one level only.
        os.makedirs(self._checkpoint_dir, exist_ok=True)
        step = int(session.run(self._global_step))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session) -> None:
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session, step: int) -> bool:
        logger.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        self.saved_steps.append(step)
        stop = False
        for listener in self._listeners:
            stop = bool(listener.after_save(session, step)) or stop
        return stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = ops.get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError(
                f"No items in collection {GraphKeys.SAVERS}. Please add a saver to the "
                "collection or provide a saver or scaffold."
            )
        if len(savers) > 1:
            raise RuntimeError(
                f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which "
                "one to use by passing it to the constructor."
            )
        self._saver = savers[0]
        return self._saver


class SummarySaverHook(SessionRunHook):
    """Runs the summary op every N steps or seconds and writes what it returns to an event file.

    The summaries are fetched in the same ``run`` as the caller's fetches and
    written with the global step after it. The first step also writes a
    ``SessionLog.START``, which tells TensorBoard that events of later steps
    from an earlier run (one that crashed) are to be dropped.

    Args:
        save_steps: Save every this many global steps.
        save_secs: Or: save every this many seconds.
        output_dir: The directory whose `FileWriterCache` writer to write with.
        summary_writer: The `FileWriter` to write with.
        scaffold: A `Scaffold` whose ``summary_op`` to run.
        summary_op: Or: the summary op (or a list of them) to run.

    Raises:
        ValueError: unless exactly one of ``scaffold`` and ``summary_op`` is
            given, or exactly one of ``save_steps`` and ``save_secs``.
    """

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: FileWriter | None = None,
        scaffold: Scaffold | None = None,
        summary_op: ops.Tensor | list[ops.Tensor] | None = None,
    ):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step: int | None = None
        self._global_step = _global_step_or_raise("SummarySaverHook")

    def before_run(self, run_context) -> SessionRunArgs:
        # The step this run will be is known from the last one; the first run always saves.
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(
            self._next_step
        )
        requests: dict[str, Any] = {"global_step": self._global_step}
        summary_ops = self._summary_ops()
        if self._request_summary and summary_ops is not None:
            requests["summary"] = summary_ops
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values) -> None:
        if not self._summary_writer:
            return
        global_step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session=None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()

    def _summary_ops(self) -> list[ops.Tensor] | None:
        summary_op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if summary_op is None:
            return None
        return summary_op if isinstance(summary_op, list) else [summary_op]
