"""``tf.train.summary_iterator``: the events of an event file, in order."""

from __future__ import annotations

import os
from collections.abc import Iterator

from minitf.framework.event_pb2 import Event
from minitf.ops.io import record_io

__all__ = ["summary_iterator"]


def summary_iterator(path: str | os.PathLike) -> Iterator[Event]:
    """Yields each `Event` of the event file ``path`` (the first is its ``file_version``).

    Args:
        path: An event file (``events.out.tfevents.*``).

    Raises:
        NotFoundError: if there is no such file.
        DataLossError: while iterating, for a truncated or corrupted record.
    """
    for record in record_io.open_records(os.fspath(path)):
        yield Event.FromString(record)
