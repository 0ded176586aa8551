"""``Tracer``: record every op a cluster runs for a span of training, as one trace.

``RunOptions(trace_level=FULL_TRACE)`` traces one ``run`` call. To see how
the steps of several workers interleave — a worker's ``apply_grad`` landing
on the ps while the chief's ``take_grad`` waits — every task has to record
every step it runs, whoever runs it. A `Tracer` asks for exactly that::

    with minitf.viz.Tracer(sess, "out/trace.json") as tracer:
        for _ in range(5):
            sess.run(train_op)
    tracer.step_stats          # StepStats, one dev_stats entry per task
    # out/trace.json: Chrome trace JSON (open it in Perfetto or chrome://tracing)

On a local session it records the session's own steps, from any thread.
On a cluster session (``tf.Session(server.target)``) it records on every
task of the cluster, other clients' steps included, and puts the events of
all tasks on this process's clock (see `Master.clock_offset`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minitf.runtime.core.session import BaseSession

logger = logging.getLogger("minitf")


class Tracer:
    """A context manager that records every op the session's tasks run while it is open.

    A task whose process comes to its end while a tracer records it waits
    (up to `minitf.runtime.distributed.server.RECORDING_PATIENCE_SECS`) for the tracer to
    collect what it recorded, so a span that outlives training loses nothing.

    Args:
        session: A ``tf.Session`` (local or on a cluster).
        path: Where to write the Chrome trace JSON when the span ends (optional).

    Raises:
        TypeError: if ``session`` is not a session (it cannot record).

    Attributes:
        step_stats: After the span: the recorded ops as ``StepStats``
            (`minitf.runtime.core.step_stats`), or None before.
        dropped: How many ops were left out because a task's recording was full.
    """

    def __init__(self, session: BaseSession, path: str | Path | None = None):
        if not hasattr(session, "start_recording"):
            raise TypeError(f"Tracer needs a tf.Session, got {type(session).__name__}")
        self._session = session
        self._path = Path(path) if path is not None else None
        self._token = None
        self.step_stats: dict | None = None
        self.dropped = 0

    def start(self) -> Tracer:
        """Starts recording (what entering the ``with`` block does).

        Returns:
            This tracer.

        Raises:
            RuntimeError: if it is already recording.
        """
        if self._token is not None:
            raise RuntimeError("This Tracer is already recording.")
        self._token = self._session.start_recording()
        return self

    def stop(self) -> dict:
        """Stops recording, writes the trace if a path was given, returns the step stats.

        Returns:
            The recorded ops as ``StepStats`` (also kept in `step_stats`).

        Raises:
            RuntimeError: if it is not recording.
        """
        if self._token is None:
            raise RuntimeError("This Tracer is not recording: call start() first.")
        token, self._token = self._token, None
        self.step_stats, self.dropped = self._session.stop_recording(token)
        if self.dropped:
            logger.warning(
                "Tracer: %d ops were not recorded (a task's recording was full); trace a "
                "shorter span",
                self.dropped,
            )
        if self._path is not None:
            self.save(self._path)
        return self.step_stats

    def save(self, path: str | Path) -> Path:
        """Writes the recorded span as Chrome trace JSON to ``path``; returns the path.

        Args:
            path: The JSON file (parent directories are created).

        Returns:
            The path written.

        Raises:
            RuntimeError: if nothing has been recorded yet.
        """
        from minitf.viz.timeline import Timeline

        if self.step_stats is None:
            raise RuntimeError("Nothing recorded yet: use the Tracer as a context manager first.")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Timeline(self.step_stats).generate_chrome_trace_format())
        return path

    def __enter__(self) -> Tracer:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._token is not None:
            self.stop()
