"""A connection's reader that delivers a message takes its task loop's turn: no hand-off.

A step that a tensor from another task lets go on is queued for its task's
loop (`minitf.runtime.core.executor`), whose thread must then wake up: about
100 µs on a busy machine, on the path of every gradient a ps receives. The
thread that read the message received it: it did not make the completion by
running a kernel of another step. So, wrapped in `receiving`, it does not
wake the loop's thread: once the message is delivered, it takes a turn of
the loop itself if one is free (where every turn is taken, the threads that
have them take the step up). With ``MINITF_FAST=0`` the loop's thread
takes it up.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from minitf.runtime.core import config

_receiver = threading.local()


def loops_to_take_up() -> set | None:
    """The loops whose turn this thread takes after the message it delivers, or None."""
    return getattr(_receiver, "loops", None)


@contextlib.contextmanager
def receiving() -> Iterator[None]:
    """Marks the calling thread as delivering a message it received (a connection's reader).

    Each loop a step of which the message lets go on (`loops_to_take_up`)
    takes its turn on this thread when the message is delivered, if it is idle.
    """
    if not config.fast():
        yield
        return
    _receiver.loops = loops = set()
    try:
        yield
    finally:
        _receiver.loops = None
        for loop in loops:
            loop.take_turn()
