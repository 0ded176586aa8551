"""``tf.train.MonitoredTrainingSession``: the TF1 training loop around a session.

A monitored session is four layers, each doing one thing, as in TF:

* a *session creator* makes the raw session: the chief's
  (`ChiefSessionCreator`) restores the newest checkpoint or initializes
  the model; a worker's (`WorkerSessionCreator`) waits until the chief has
  (`minitf.train.SessionManager`);
* the *coordinated* layer starts the graph's queue runners with a
  `Coordinator` and calls every hook's ``after_create_session`` — the
  SyncReplicas hook starts the chief's queue runner here;
* the *hooked* layer runs ``before_run`` / ``after_run`` of every hook
  around each ``run``, fetching what hooks ask for in the same step;
* the *recoverable* layer (`MonitoredSession` only): when a step fails
  with ``AbortedError`` or ``UnavailableError`` — a ps or worker task was
  lost or restarted — it closes the session and creates a new one through
  the creator (the chief restores from its checkpoint), then runs again.

`Scaffold` (`minitf.train.scaffold`) gathers the ops these need (init,
ready, local init, saver), building TF's defaults for what the graph does
not provide, and freezes the graph (`Scaffold.finalize`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from minitf.framework import errors, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.train import basic_session_run_hooks as hooks_lib
from minitf.train import queue_runner_impl
from minitf.train.coordinator import Coordinator
from minitf.train.scaffold import Scaffold
from minitf.train.session_manager import SessionManager
from minitf.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

if TYPE_CHECKING:
    from minitf.runtime.core.config import ConfigProto, RunMetadata, RunOptions
    from minitf.runtime.core.session import BaseSession
    from minitf.train.session_run_hook import SessionRunHook

logger = logging.getLogger("minitf")

USE_DEFAULT = object()
"""Marks an argument of `MonitoredTrainingSession` left to its default."""

_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


class SessionCreator:
    """Makes a raw session for a `MonitoredSession`."""

    def create_session(self) -> BaseSession:
        """Returns a new raw session."""
        raise NotImplementedError


class ChiefSessionCreator(SessionCreator):
    """The chief's session: restored from the newest checkpoint, or initialized.

    Args:
        scaffold: The ops to use (default: a new `Scaffold`).
        master: The target of the session (``""`` for in-process).
        config: The session's `ConfigProto`.
        checkpoint_dir: A directory whose newest checkpoint to restore.
        checkpoint_filename_with_path: A checkpoint prefix to restore instead.
    """

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: ConfigProto | None = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
    ):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self) -> BaseSession:
        """Finalizes the scaffold; returns a session restored or initialized (`prepare_session`)."""
        scaffold = self._scaffold.finalize()
        return _session_manager(scaffold).prepare_session(
            self._master,
            saver=scaffold.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config,
            init_op=scaffold.init_op,
            init_feed_dict=scaffold.init_feed_dict,
            init_fn=scaffold.init_fn,
        )


class WorkerSessionCreator(SessionCreator):
    """A worker's session: once the chief has initialized or restored the model.

    Args:
        scaffold: The ops to use (default: a new `Scaffold`).
        master: The target of the session.
        config: The session's `ConfigProto`.
        max_wait_secs: How long to wait for the chief.
    """

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: ConfigProto | None = None,
        max_wait_secs: float = 30 * 60,
    ):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> BaseSession:
        """Finalizes the scaffold; returns a session once the chief made the model ready."""
        scaffold = self._scaffold.finalize()
        return _session_manager(scaffold).wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs
        )


def _session_manager(scaffold: Scaffold) -> SessionManager:
    return SessionManager(
        local_init_op=scaffold.local_init_op,
        ready_op=scaffold.ready_op,
        ready_for_local_init_op=scaffold.ready_for_local_init_op,
        graph=ops.get_default_graph(),
    )


class _HookedSession:
    """A session whose ``run`` calls every hook around it."""

    def __init__(self, sess, hooks: list):
        self._sess = sess
        self._hooks = hooks
        self.stop_requested = False

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        asked = [hook.before_run(context) for hook in self._hooks]
        every = {"caller": fetches}
        feeds = feed_dict
        for i, args in enumerate(asked):
            if args is None:
                continue
            if args.fetches is not None:
                every[i] = args.fetches
            if args.feed_dict:
                if feeds is feed_dict:  # the caller's dict stays as it is
                    feeds = dict(feed_dict or {})
                _add_hook_feeds(feeds, args.feed_dict)
            if options is None and args.options:  # the first hook's, unless the caller's
                options = args.options
        results = self._sess.run(every, feed_dict=feeds or None, options=options,
                                 run_metadata=run_metadata)  # fmt: skip
        get = results.get
        for i, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(get(i), options, run_metadata))
        self.stop_requested = self.stop_requested or context.stop_requested
        return results["caller"]


def _add_hook_feeds(feeds: dict, hook_feeds) -> None:
    """Adds a hook's feeds to ``feeds``; a tensor fed twice is TF's error."""
    for tensor, value in dict(hook_feeds).items():
        if tensor in feeds:
            raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user. {tensor}")
        feeds[tensor] = value


class _Layers:
    """One created session with its coordinator and hooks (what recovery replaces)."""

    def __init__(self, creator: SessionCreator, hooks: list):
        self.raw = creator.create_session()
        self.coord = Coordinator()
        if ops.get_collection(GraphKeys.QUEUE_RUNNERS):
            queue_runner_impl.start_queue_runners(sess=self.raw, coord=self.coord)
        for hook in hooks:
            hook.after_create_session(self.raw, self.coord)
        self.hooked = _HookedSession(self.raw, hooks)

    def close(self, grace: float) -> None:
        # TF joins the threads first and closes the session after, so a queue
        # runner blocked in a step (the SyncReplicas chief's take_grad, waiting
        # for gradients nobody sends any more) holds the close for the whole
        # grace period. Closing first cancels that step and the thread ends now.
        self.coord.request_stop()
        try:
            self.raw.close()
        except errors.OpError:
            pass  # a session on a lost task: there is nothing left to close
        self.coord.join(stop_grace_period_secs=grace, ignore_live_threads=True)


class _MonitoredSession:
    """What `MonitoredSession` and `SingularMonitoredSession` share."""

    def __init__(self, session_creator, hooks, recoverable: bool, stop_grace_period_secs=120):
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._recoverable = recoverable
        self._grace = stop_grace_period_secs
        self._layers: _Layers | None = None
        self._closed = False
        self._layers = self._create()

    @property
    def graph(self):
        """The graph the session runs."""
        return ops.get_default_graph()

    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: RunOptions | None = None,
        run_metadata: RunMetadata | None = None,
    ) -> Any:
        """Runs one step with the hooks around it; on a lost task, recreates the session.

        Args:
            fetches: What to fetch, as for `Session.run`.
            feed_dict: The feeds, as for `Session.run`.
            options: The ``RunOptions`` of the step.
            run_metadata: A ``RunMetadata`` to fill in.

        Returns:
            The values of ``fetches``, in their structure.
        """
        while True:
            if self._layers is None:
                self._layers = self._create()
            try:
                return self._layers.hooked.run(fetches, feed_dict, options, run_metadata)
            except _PREEMPTION_ERRORS as exc:
                if not self._recoverable:
                    raise
                logger.info(
                    "An error was raised (%s). This may be due to a preemption in a connected "
                    "worker or parameter server. The current session will be closed and a new "
                    "session will be created.",
                    type(exc).__name__,
                )
                self._drop()

    def should_stop(self) -> bool:
        """True once a hook asked to stop, the coordinator was told to, or the session closed."""
        if self._closed:
            return True
        layers = self._layers
        if layers is None:
            return False  # lost, and made again by the next run
        try:
            # A thread of the session (a queue runner) may have failed first.
            layers.coord.raise_requested_exception()
        except _PREEMPTION_ERRORS as exc:
            if not self._recoverable:
                raise
            logger.info(
                "A thread of the session saw a lost task (%s): the session will be made again.",
                type(exc).__name__,
            )
            self._drop()
            return False
        return layers.hooked.stop_requested or layers.coord.should_stop()

    def close(self) -> None:
        """Ends the session: every hook's ``end``, then the queue runners and the session."""
        self._close(None)

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close(exception_type)
        return exception_type is None and exception_value is not None

    def _create(self) -> _Layers:
        while True:
            try:
                return _Layers(self._creator, self._hooks)
            except _PREEMPTION_ERRORS as exc:
                if not self._recoverable:
                    raise
                logger.info("A task was lost while the session was being made (%s): again", exc)

    def _drop(self) -> None:
        layers, self._layers = self._layers, None
        if layers is not None:
            try:
                layers.close(self._grace)
            except (errors.OpError, RuntimeError) as exc:
                logger.info("Closing the lost session raised %s", exc)

    def _close(self, exception_type) -> None:
        if self._closed:
            return
        try:
            if exception_type is None and self._layers is not None:
                for hook in self._hooks:
                    hook.end(self._layers.raw)
        finally:
            self._closed = True
            layers, self._layers = self._layers, None
            if layers is not None:
                layers.close(self._grace)


class MonitoredSession(_MonitoredSession):
    """A session with hooks that recreates itself when a task is lost.

    Args:
        session_creator: Makes the raw session (default: `ChiefSessionCreator`).
        hooks: `SessionRunHook` s.
        stop_grace_period_secs: How long ``close`` waits for queue-runner threads.
    """

    def __init__(
        self,
        session_creator: SessionCreator | None = None,
        hooks: list[SessionRunHook] | None = None,
        stop_grace_period_secs: float = 120,
    ):
        super().__init__(session_creator, hooks, True, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A monitored session that does not recover: errors reach the caller.

    It is made with a `ChiefSessionCreator` from its arguments, and its raw
    session is available (`raw_session`).

    Args:
        hooks: `SessionRunHook` s.
        scaffold: The ops to use (default: a new `Scaffold`).
        master: The target of the session.
        config: The session's `ConfigProto`.
        checkpoint_dir: A directory whose newest checkpoint to restore.
        stop_grace_period_secs: How long ``close`` waits for queue-runner threads.
        checkpoint_filename_with_path: A checkpoint prefix to restore instead.
    """

    def __init__(
        self,
        hooks: list[SessionRunHook] | None = None,
        scaffold: Scaffold | None = None,
        master: str = "",
        config: ConfigProto | None = None,
        checkpoint_dir: str | None = None,
        stop_grace_period_secs: float = 120,
        checkpoint_filename_with_path: str | None = None,
    ):
        creator = ChiefSessionCreator(
            scaffold=scaffold,
            master=master,
            config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
        )
        super().__init__(creator, hooks, False, stop_grace_period_secs)

    def raw_session(self):
        """The underlying ``tf.Session``."""
        return self._layers.raw


def _summary_periods(steps, secs) -> tuple:
    """TF's defaults: every 100 steps unless seconds are given; an unset one of a pair is None."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return 100, None
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def MonitoredTrainingSession(  # noqa: N802 - TF's name
    master: str = "",
    is_chief: bool = True,
    checkpoint_dir: str | None = None,
    scaffold: Scaffold | None = None,
    hooks: list[SessionRunHook] | None = None,
    chief_only_hooks: list[SessionRunHook] | None = None,
    save_checkpoint_secs: float | None = USE_DEFAULT,
    save_summaries_steps: int | None = USE_DEFAULT,
    save_summaries_secs: float | None = USE_DEFAULT,
    config: ConfigProto | None = None,
    stop_grace_period_secs: float = 120,
    log_step_count_steps: int = 100,
    max_wait_secs: float = 7200,
    save_checkpoint_steps: int | None = USE_DEFAULT,
    summary_dir: str | None = None,
) -> MonitoredSession:
    """A `MonitoredSession` set up for training, as TF1 sets it up.

    The chief restores from ``checkpoint_dir`` or initializes, saves a
    checkpoint every ``save_checkpoint_secs`` (600 by default) or
    ``save_checkpoint_steps``, and logs steps per second every
    ``log_step_count_steps`` and writes the summaries of ``tf.summary.merge_all()``
    (or the scaffold's ``summary_op``) every ``save_summaries_steps`` (100 by
    default) or ``save_summaries_secs`` to ``summary_dir`` (default:
    ``checkpoint_dir``); a worker waits for the chief. ``hooks`` run
    everywhere, ``chief_only_hooks`` on the chief only.

    Args:
        master: The target of the session (``""`` for in-process).
        is_chief: Whether this task initializes or restores the model and
            saves checkpoints.
        checkpoint_dir: Where the chief restores from and saves checkpoints.
        scaffold: The ops to use (default: a new `Scaffold`).
        hooks: `SessionRunHook` s run on every task.
        chief_only_hooks: `SessionRunHook` s run on the chief only.
        save_checkpoint_secs: Save every this many seconds (600 unless
            ``save_checkpoint_steps`` is given; None: not by time).
        save_summaries_steps: Write summaries every this many global steps (100
            unless ``save_summaries_secs`` is given; None: not by steps).
        save_summaries_secs: Write summaries every this many seconds.
        config: The session's `ConfigProto`.
        stop_grace_period_secs: How long ``close`` waits for queue-runner threads.
        log_step_count_steps: Log the global steps per second every this many
            steps (on the chief, with a summary or checkpoint directory).
        max_wait_secs: How long a worker waits for the chief.
        save_checkpoint_steps: Save every this many global steps.
        summary_dir: Where the chief writes summaries and the step rate, as an
            event file for TensorBoard (default: ``checkpoint_dir``).
    """
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold, master, config, max_wait_secs)
        return MonitoredSession(
            creator, hooks=hooks or [], stop_grace_period_secs=stop_grace_period_secs
        )
    if save_checkpoint_secs is USE_DEFAULT and save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_secs, save_checkpoint_steps = 600, None
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir)
    save_summaries_steps, save_summaries_secs = _summary_periods(
        save_summaries_steps, save_summaries_secs
    )
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir and log_step_count_steps and log_step_count_steps > 0:
        all_hooks.append(
            hooks_lib.StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps)
        )
    if summary_dir and ((save_summaries_steps or 0) > 0 or (save_summaries_secs or 0) > 0):
        all_hooks.append(
            hooks_lib.SummarySaverHook(
                scaffold=scaffold,
                save_steps=save_summaries_steps,
                save_secs=save_summaries_secs,
                output_dir=summary_dir,
            )
        )
    if checkpoint_dir and (save_checkpoint_secs or save_checkpoint_steps):
        # Both given: TF uses the seconds.
        secs = save_checkpoint_secs or None
        steps = None if secs else save_checkpoint_steps
        all_hooks.append(
            hooks_lib.CheckpointSaverHook(
                checkpoint_dir, save_steps=steps, save_secs=secs, scaffold=scaffold
            )
        )
    all_hooks += list(hooks or [])
    return MonitoredSession(creator, hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
