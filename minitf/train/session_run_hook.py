"""``tf.train.SessionRunHook`` and the values that pass through a hooked ``run``.

A hook is told when a session is about to be used (`begin`), when it exists
(`after_create_session`), around every ``run`` (`before_run` / `after_run`)
and at the end (`end`). ``SyncReplicasOptimizer.make_session_run_hook`` is
one: its `after_create_session` sets the local step, puts the chief's
initial tokens in the queue and starts the chief's queue runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from minitf.runtime.core.session import BaseSession
    from minitf.train.coordinator import Coordinator


class SessionRunHook:
    """The base class of hooks: every method does nothing until a subclass says otherwise."""

    def begin(self) -> None:
        """Called once before the session is used; the graph may still change here."""

    def after_create_session(self, session: BaseSession, coord: Coordinator) -> None:
        """Called once the session exists (variables initialized), before the first ``run``.

        Args:
            session: The session; ``run`` on it is not hooked.
            coord: The `Coordinator` of the session's threads (queue runners).
        """

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        """Called before each ``run``; may return more to fetch in the same step.

        Args:
            run_context: The `SessionRunContext` of this ``run``.

        Returns:
            A `SessionRunArgs` to fetch and feed along with the caller's, or None.
        """
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Called after each ``run`` with what `before_run` asked for.

        Args:
            run_context: The `SessionRunContext` of this ``run``; its
                `request_stop` ends the training loop.
            run_values: The `SessionRunValues`: the results of this hook's
                `before_run` fetches.
        """

    def end(self, session: BaseSession) -> None:
        """Called at the end of the session's use (not when it fails).

        Args:
            session: The session; ``run`` on it is not hooked.
        """


class SessionRunArgs(NamedTuple):
    """What a hook adds to a ``run``: ``fetches``, ``feed_dict`` and ``options``.

    Attributes:
        fetches: What to fetch, in any structure ``Session.run`` accepts.
        feed_dict: More feeds, or None.
        options: A ``RunOptions`` to merge with the caller's, or None.
    """

    fetches: Any
    feed_dict: Any = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """What the hook's own fetches returned (``results``), with ``options`` and ``run_metadata``.

    Attributes:
        results: The values of the hook's `SessionRunArgs` fetches, in their
            structure.
        options: The ``RunOptions`` of the run.
        run_metadata: The ``RunMetadata`` of the run.
    """

    results: Any
    options: Any
    run_metadata: Any


class SessionRunContext:
    """What a hook sees of one ``run``: its arguments, the session, and a way to stop the loop.

    Args:
        original_args: The `SessionRunArgs` of the caller's ``run``.
        session: The session that runs it.
    """

    def __init__(self, original_args: SessionRunArgs, session: BaseSession):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        """The caller's fetches, feeds and options."""
        return self._original_args

    @property
    def session(self):
        """The session running the step."""
        return self._session

    @property
    def stop_requested(self) -> bool:
        """True once a hook has called `request_stop`."""
        return self._stop_requested

    def request_stop(self) -> None:
        """Asks the training loop to stop after this ``run``."""
        self._stop_requested = True
