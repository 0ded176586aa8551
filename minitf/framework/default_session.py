"""The default session: what ``Tensor.eval()`` and ``Operation.run()`` run in.

``with sess.as_default():`` pushes a session on a per-thread stack kept here,
as TF keeps it in ``framework/ops.py``. The graph knows a session only as a
`SessionInterface` — something with a ``graph`` and a ``run`` method — so the
framework imports nothing from the runtime: ``minitf.runtime.core.session``
registers its sessions here when they are entered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Protocol


class SessionInterface(Protocol):
    """What the graph needs of a session (TF's ``SessionInterface``): its graph and ``run``."""

    @property
    def graph(self) -> Any:
        """The `Graph` the session runs."""

    def run(self, fetches: Any, feed_dict: dict | None = None) -> Any:
        """Runs ``fetches`` with ``feed_dict`` fed; returns their values.

        Args:
            fetches: Tensors, operations or names, possibly nested.
            feed_dict: Values to feed.
        """


class _DefaultStack(threading.local):
    """A per-thread stack of default objects (TF's ``_DefaultStack``)."""

    def __init__(self):
        super().__init__()
        self.stack: list = []

    def push(self, obj) -> None:
        self.stack.append(obj)

    def pop(self, obj) -> None:
        if not self.stack or self.stack[-1] is not obj:
            raise AssertionError("Nesting violated for default stack of objects")
        self.stack.pop()


_default_session_stack = _DefaultStack()


def get_default_session() -> SessionInterface | None:
    """Returns the innermost session entered with ``with sess.as_default()`` (or None)."""
    stack = _default_session_stack.stack
    return stack[-1] if stack else None


@contextlib.contextmanager
def default_session(session: SessionInterface) -> Iterator[SessionInterface]:
    """Makes ``session`` the default session of the current thread for a block.

    Args:
        session: The session to make the default.
    """
    _default_session_stack.push(session)
    try:
        yield session
    finally:
        _default_session_stack.pop(session)


def _session_for_eval(graph, session: SessionInterface | None, what: str) -> SessionInterface:
    method = "eval" if what.startswith("evaluate") else "run"
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(
                f"Cannot {what} using `{method}()`: No default session is registered. Use "
                f"`with sess.as_default()` or pass an explicit session to `{method}(session=sess)`"
            )
    if session.graph is not graph:
        raise ValueError(
            f"Cannot use the given session to {what}: the {what.split()[-1]}'s graph is "
            "different from the session's graph. Pass an explicit session to "
            f"`{method}(session=sess)`."
        )
    return session


def eval_using_default_session(tensors, feed_dict, graph, session=None) -> Any:
    """Runs ``tensors`` in ``session`` or the default session, which must run ``graph``.

    Args:
        tensors: What to fetch.
        feed_dict: Values to feed.
        graph: The graph of ``tensors``.
        session: The session to use; None means the default session.

    Raises:
        ValueError: if there is no session to use, or it runs another graph.
    """
    session = _session_for_eval(graph, session, "evaluate tensor")
    return session.run(tensors, feed_dict)


def run_using_default_session(operation, feed_dict, graph, session=None) -> None:
    """Runs ``operation`` in ``session`` or the default session, which must run ``graph``.

    Args:
        operation: The op to run.
        feed_dict: Values to feed.
        graph: The graph of ``operation``.
        session: The session to use; None means the default session.

    Raises:
        ValueError: if there is no session to use, or it runs another graph.
    """
    session = _session_for_eval(graph, session, "execute operation")
    session.run(operation, feed_dict)
