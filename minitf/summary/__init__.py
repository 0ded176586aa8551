"""``tf.summary``: summary ops, and the event files TensorBoard reads.

- ``summary.py``: ``scalar``, ``histogram``, ``image``, ``audio``, ``text``,
  ``tensor_summary``, ``merge``, ``merge_all`` — names, tags, collections;
  the ops themselves are in `minitf.ops.summary`.
- ``writer.py``: ``FileWriter`` (summaries, session logs, the graph, as
  events) and ``FileWriterCache``.
- ``event_file_writer.py``: the event file and the thread that writes it.
- ``summary_iterator.py``: reading an event file back.

The protocol buffers (``Summary``, ``Event``, ``SessionLog``, ...) are in
`minitf.framework.summary_pb2` and `minitf.framework.event_pb2`.
"""

from minitf.framework.event_pb2 import Event, SessionLog, TaggedRunMetadata
from minitf.framework.summary_pb2 import Summary, SummaryDescription
from minitf.summary.summary import (
    audio,
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from minitf.summary.writer import FileWriter, FileWriterCache

__all__ = [
    "Event",
    "FileWriter",
    "FileWriterCache",
    "SessionLog",
    "Summary",
    "SummaryDescription",
    "TaggedRunMetadata",
    "audio",
    "histogram",
    "image",
    "merge",
    "merge_all",
    "scalar",
    "tensor_summary",
    "text",
]
