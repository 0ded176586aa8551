"""``tf.Event``, ``tf.SessionLog`` and ``tf.TaggedRunMetadata``: TF's ``event.proto``.

An event file is a TFRecord file of serialized ``Event``\\ s; TensorBoard
reads nothing else. Field numbers and oneof are TF's
(``tensorflow/core/util/event.proto``)::

    message Event { double wall_time = 1; int64 step = 2;
                    oneof what { string file_version = 3; bytes graph_def = 4;
                                 Summary summary = 5; SessionLog session_log = 7;
                                 TaggedRunMetadata tagged_run_metadata = 8;
                                 bytes meta_graph_def = 9; } }
    message SessionLog { enum SessionStatus { STATUS_UNSPECIFIED = 0; START = 1;
                                              STOP = 2; CHECKPOINT = 3; }
                         SessionStatus status = 1; string checkpoint_path = 2; string msg = 3; }
    message TaggedRunMetadata { string tag = 1; bytes run_metadata = 2; }
"""

from __future__ import annotations

from minitf.framework.proto_message import Message, SubMessage
from minitf.framework.proto_scalar import ScalarField, enum, single
from minitf.framework.summary_pb2 import Summary

__all__ = ["Event", "SessionLog", "TaggedRunMetadata"]

_STRING, _BYTES = single("string"), single("bytes")


class SessionLog(Message):
    """A session's start, stop or checkpoint, written into an event file.

    ``START`` tells TensorBoard that a run restarted: it drops the events of
    steps after the restart's step (they were from the run that crashed).

    Attributes:
        status: ``SessionLog.START``, ``STOP``, ``CHECKPOINT`` (or ``STATUS_UNSPECIFIED``).
        checkpoint_path: The checkpoint written, for ``CHECKPOINT``.
        msg: A message.
    """

    FULL_NAME = "tensorflow.SessionLog"
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    FIELDS = (
        ScalarField(
            "status", 1, enum({0: "STATUS_UNSPECIFIED", 1: "START", 2: "STOP", 3: "CHECKPOINT"})
        ),
        ScalarField("checkpoint_path", 2, _STRING),
        ScalarField("msg", 3, _STRING),
    )


class TaggedRunMetadata(Message):
    """A step's run metadata (serialized) under a ``tag``."""

    FULL_NAME = "tensorflow.TaggedRunMetadata"
    FIELDS = (ScalarField("tag", 1, _STRING), ScalarField("run_metadata", 2, _BYTES))


class Event(Message):
    """One record of an event file: a time, a step and what happened (the oneof ``what``).

    Attributes:
        wall_time: Seconds since the epoch.
        step: The global step.
        file_version: ``"brain.Event:2"`` in a file's first event.
        graph_def: A serialized ``GraphDef``.
        summary: A `Summary`.
        session_log: A `SessionLog`.
        tagged_run_metadata: A `TaggedRunMetadata`.
        meta_graph_def: A serialized ``MetaGraphDef``.
    """

    FULL_NAME = "tensorflow.Event"
    FIELDS = (
        ScalarField("wall_time", 1, single("double")),
        ScalarField("step", 2, single("int64")),
        ScalarField("file_version", 3, _STRING, oneof="what"),
        ScalarField("graph_def", 4, _BYTES, oneof="what"),
        SubMessage("summary", 5, Summary, oneof="what"),
        SubMessage("session_log", 7, SessionLog, oneof="what"),
        SubMessage("tagged_run_metadata", 8, TaggedRunMetadata, oneof="what"),
        ScalarField("meta_graph_def", 9, _BYTES, oneof="what"),
    )
