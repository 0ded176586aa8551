"""``tf.train.SessionManager``: make a session whose model is ready, or wait for one.

A chief *prepares* a session: it restores the variables from the newest
checkpoint if there is one, else runs the init op, then the local init op,
and checks that the model is ready. A worker *waits* for a session: it
makes a session, runs the local init op once the global variables are
initialized (by the chief, on the ps tasks) and returns it once the model is
ready; until then it closes the session, waits and tries again.

"Ready" is decided by ops, as in TF: ``ready_op`` (and, before the local
init, ``ready_for_local_init_op``) returns the names of the variables that
are not initialized yet — an empty list means ready.

TF's worker sleeps ``recovery_wait_secs`` (30 s) between tries, so a worker
that looked one moment too early idles for half a minute. minitf's looks
again after a short interval that grows to at most ``recovery_wait_secs``,
and logs what it waits for — which variables, on which task — every few
seconds, so a worker never waits silently.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from minitf.framework import errors, ops
from minitf.runtime.core.session import Session
from minitf.train import checkpoint_management

if TYPE_CHECKING:
    from minitf.runtime.core.config import ConfigProto, RunOptions
    from minitf.train.saver import Saver

logger = logging.getLogger("minitf")

FIRST_POLL_SECS = 0.05
"""How soon a waiting worker looks again the first time (the interval then doubles)."""
REPORT_EVERY_SECS = 3.0
"""How often a waiting worker logs what it waits for."""


class SessionManager:
    """Creates sessions whose model is initialized, restored, or made ready by the chief.

    Args:
        local_init_op: Run in every new session once the model is ready for it
            (local variables, the SyncReplicas local step).
        ready_op: Returns the names of the variables not initialized yet.
        ready_for_local_init_op: The same, for what ``local_init_op`` needs.
        graph: The graph (default: the default graph).
        recovery_wait_secs: The longest wait between two tries of a worker.
        local_init_run_options: ``RunOptions`` for the local init op.

    Raises:
        ValueError: if ``ready_for_local_init_op`` is given without
            ``local_init_op``.
    """

    def __init__(
        self,
        local_init_op: ops.Operation | None = None,
        ready_op: ops.Tensor | None = None,
        ready_for_local_init_op: ops.Tensor | None = None,
        graph: ops.Graph | None = None,
        recovery_wait_secs: float = 30,
        local_init_run_options: RunOptions | None = None,
    ):
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(
                "If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                f"ready_for_local_init_op [{ready_for_local_init_op}]"
            )
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else ops.get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options

    # -- the chief ---------------------------------------------------------------------------

    def prepare_session(
        self,
        master: str,
        init_op: ops.Operation | None = None,
        saver: Saver | None = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: ConfigProto | None = None,
        init_feed_dict: dict | None = None,
        init_fn: Callable[[Session], None] | None = None,
    ) -> Session:
        """A session with the model restored from a checkpoint, or initialized.

        Args:
            master: The target of the session (``""`` for in-process).
            init_op: The op that initializes the model when nothing is restored.
            saver: The `Saver` to restore with; None means no restore.
            checkpoint_dir: A directory whose newest checkpoint to restore.
            checkpoint_filename_with_path: A checkpoint prefix to restore.
            wait_for_checkpoint: Whether to wait for a checkpoint to appear in
                ``checkpoint_dir`` if there is none yet.
            max_wait_secs: How long to wait for it.
            config: The session's `ConfigProto`.
            init_feed_dict: The feeds for ``init_op``.
            init_fn: Called as ``init_fn(sess)`` after ``init_op`` when nothing
                is restored.

        Raises:
            RuntimeError: if nothing initializes the model, or the init ops
                leave it not ready (TF's messages).
            ValueError: if both ``checkpoint_dir`` and
                ``checkpoint_filename_with_path`` are given.
        """
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config,
        )  # fmt: skip
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError(
                    "Model is not initialized and no init_op or init_fn or local_init_op was given"
                )
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        done, why = self._try_run_local_init_op(sess)
        if not done:
            raise RuntimeError(
                "Init operations did not make model ready for local_init.  "
                f"Init op: {_name(init_op)}, init fn: {init_fn}, error: {why}"
            )
        ready, why = self._model_ready(sess)
        if not ready:
            raise RuntimeError(
                "Init operations did not make model ready.  "
                f"Init op: {_name(init_op)}, init fn: {init_fn}, "
                f"local_init_op: {self._local_init_op}, error: {why}"
            )
        return sess

    def recover_session(
        self,
        master: str,
        saver: Saver | None = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: ConfigProto | None = None,
    ) -> tuple[Session, bool]:
        """A session restored from the newest checkpoint: ``(session, restored and ready)``.

        Args:
            master: The target of the session (``""`` for in-process).
            saver: The `Saver` to restore with; None means no restore.
            checkpoint_dir: A directory whose newest checkpoint to restore.
            checkpoint_filename_with_path: A checkpoint prefix to restore.
            wait_for_checkpoint: Whether to wait for a checkpoint to appear in
                ``checkpoint_dir`` if there is none yet.
            max_wait_secs: How long to wait for it.
            config: The session's `ConfigProto`.

        Raises:
            ValueError: if both ``checkpoint_dir`` and
                ``checkpoint_filename_with_path`` are given.
        """
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config,
        )  # fmt: skip
        done, why = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        if not done:
            logger.info("Restoring model from checkpoint, but local_init_op failed: %s", why)
            return sess, False
        ready, why = self._model_ready(sess)
        if not ready:
            logger.info("Restored model from checkpoint, but it is not ready: %s", why)
            return sess, False
        logger.info("Restored model from %s", checkpoint_filename_with_path or checkpoint_dir)
        return sess, True

    # -- a worker ----------------------------------------------------------------------------

    def wait_for_session(
        self, master: str, config: ConfigProto | None = None, max_wait_secs: float = float("inf")
    ) -> Session:
        """A session once the chief has made the model ready (a worker's way in).

        Args:
            master: The target of the session.
            config: The session's `ConfigProto`.
            max_wait_secs: How long to wait for the model to be ready.

        Raises:
            DeadlineExceededError: if the model is not ready in ``max_wait_secs``.
        """
        start = time.monotonic()
        interval = FIRST_POLL_SECS
        next_report = start + REPORT_EVERY_SECS
        while True:
            sess = Session(master, graph=self._graph, config=config)
            done, why = self._try_run_local_init_op(sess)
            if done:
                ready, why = self._model_ready(sess)
                if ready:
                    return sess
            _close_quietly(sess)
            waited = time.monotonic() - start
            if waited + interval > max_wait_secs:
                raise errors.DeadlineExceededError(
                    None,
                    None,
                    f"Session was not ready after waiting {max_wait_secs} secs: {why}",
                )
            if time.monotonic() >= next_report:
                logger.info("Waiting %.0f s so far for the chief: %s", waited, why)
                next_report += REPORT_EVERY_SECS
            time.sleep(interval)  # the chief's progress is in another process: look again
            interval = min(interval * 2, self._recovery_wait_secs, REPORT_EVERY_SECS)

    # -- inside ------------------------------------------------------------------------------

    def _restore_checkpoint(
        self, master, saver, checkpoint_dir, checkpoint_filename_with_path,
        wait_for_checkpoint, max_wait_secs, config,
    ) -> tuple[Session, bool]:  # fmt: skip
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError(
                "Can not provide both checkpoint_dir and checkpoint_filename_with_path."
            )
        sess = Session(master, graph=self._graph, config=config)
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        deadline = time.monotonic() + max_wait_secs
        state = checkpoint_management.get_checkpoint_state(checkpoint_dir)
        while not state or not state.model_checkpoint_path:
            if not wait_for_checkpoint or time.monotonic() >= deadline:
                return sess, False
            time.sleep(min(self._recovery_wait_secs, 1.0))  # a checkpoint another task writes
            state = checkpoint_management.get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
        return sess, True

    def _try_run_local_init_op(self, sess) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ready, why = self._ready(
            self._ready_for_local_init_op, sess, "Model not ready for local init"
        )
        if not ready:
            return False, why
        sess.run(self._local_init_op, options=self._local_init_run_options)
        return True, None

    def _model_ready(self, sess) -> tuple[bool, str | None]:
        return self._ready(self._ready_op, sess, "Model not ready")

    def _ready(self, op, sess, what: str) -> tuple[bool, str | None]:
        """``(True, None)`` if ``op`` reports nothing uninitialized, else ``(False, why)``."""
        if op is None:
            return True, None
        try:
            names = np.asarray(sess.run(op))
        except errors.FailedPreconditionError as exc:
            if "uninitialized" not in str(exc):
                logger.warning("%s : error [%s]", what, exc)
                raise
            return False, str(exc)
        if names.size == 0 or names.dtype == np.int32:
            return True, None
        return False, "Variables not initialized: " + self._where(names)

    def _where(self, names) -> str:
        """The names with the task each variable lives on: ``w (on /job:ps/task:0)``."""
        described = []
        for raw in names.ravel():
            name = raw.decode() if isinstance(raw, bytes) else str(raw)
            try:
                device = self._graph.get_operation_by_name(name).device
            except (KeyError, ValueError):
                device = ""
            described.append(f"{name} (on {device})" if device else name)
        return ", ".join(described)


def _name(op) -> str:
    return getattr(op, "name", str(op))


def _close_quietly(sess) -> None:
    try:
        sess.close()
    except errors.OpError:
        pass  # a session that could not be used: nothing of it is kept
