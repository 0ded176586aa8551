"""``StepStats`` and ``RunMetadata`` as TF's protocol buffers, for event files.

A traced run keeps its statistics as dicts (`minitf.runtime.core.step_stats`);
`FileWriter.add_run_metadata` writes them as TF's bytes, which TensorBoard
reads (``EventAccumulator.RunMetadata(tag)``) and parses with TF's
``config.proto`` and ``step_stats.proto``. The fields written, with TF's
numbers::

    message NodeExecStats { string node_name = 1; int64 all_start_micros = 2;
                            int64 op_start_rel_micros = 3; int64 op_end_rel_micros = 4;
                            int64 all_end_rel_micros = 5; string timeline_label = 8;
                            int64 scheduled_micros = 9; uint32 thread_id = 10; }
    message DeviceStepStats { string device = 1; repeated NodeExecStats node_stats = 2; }
    message StepStats { repeated DeviceStepStats dev_stats = 1; }
    message RunMetadata { StepStats step_stats = 1; repeated GraphDef partition_graphs = 3; }

The other fields (memory, outputs, thread names, the nanosecond twins) are
not written; minitf's own fields of a node (``op``, ``output_bytes``,
``waited_on``, ...) stay in the dicts.
"""

from __future__ import annotations

from typing import Any

from minitf.framework.graph_pb2 import GraphDef
from minitf.framework.proto_message import Message, RepeatedMessage, SubMessage
from minitf.framework.proto_scalar import ScalarField, single

__all__ = ["DeviceStepStats", "NodeExecStats", "RunMetadata", "StepStats", "step_stats_proto"]

_STRING, _INT64 = single("string"), single("int64")

# ``thread_id`` is a uint32 in TF: for values below 2**32 its varint is the
# int64's, so the field is declared int64 and given the low 32 bits of the
# thread's ident.
_UINT32_MASK = 0xFFFFFFFF


class NodeExecStats(Message):
    """One op's execution in a step: its name, start and durations, thread and label."""

    FULL_NAME = "tensorflow.NodeExecStats"
    FIELDS = (
        ScalarField("node_name", 1, _STRING),
        ScalarField("all_start_micros", 2, _INT64),
        ScalarField("op_start_rel_micros", 3, _INT64),
        ScalarField("op_end_rel_micros", 4, _INT64),
        ScalarField("all_end_rel_micros", 5, _INT64),
        ScalarField("timeline_label", 8, _STRING),
        ScalarField("scheduled_micros", 9, _INT64),
        ScalarField("thread_id", 10, _INT64),
    )


class DeviceStepStats(Message):
    """The ops one device ran in a step."""

    FULL_NAME = "tensorflow.DeviceStepStats"
    FIELDS = (
        ScalarField("device", 1, _STRING),
        RepeatedMessage("node_stats", 2, NodeExecStats),
    )


class StepStats(Message):
    """A step's statistics, device by device."""

    FULL_NAME = "tensorflow.StepStats"
    FIELDS = (RepeatedMessage("dev_stats", 1, DeviceStepStats),)


class RunMetadata(Message):
    """What a run reports: its step statistics and partition graphs."""

    FULL_NAME = "tensorflow.RunMetadata"
    FIELDS = (
        SubMessage("step_stats", 1, StepStats),
        RepeatedMessage("partition_graphs", 3, GraphDef),
    )


_NODE_FIELDS = tuple(f.name for f in NodeExecStats.FIELDS)


def _node_proto(node: dict[str, Any]) -> NodeExecStats:
    values = {k: node[k] for k in _NODE_FIELDS if node.get(k) is not None}
    if "thread_id" in values:
        values["thread_id"] = int(values["thread_id"]) & _UINT32_MASK
    return NodeExecStats(**values)


def step_stats_proto(step_stats: dict[str, Any]) -> StepStats:
    """The `StepStats` message of a step's statistics kept as dicts.

    Args:
        step_stats: ``{"dev_stats": [{"device": ..., "node_stats": [...]}]}``
            (`minitf.runtime.core.step_stats`); fields TF's message lacks are left out.
    """
    return StepStats(
        dev_stats=[
            DeviceStepStats(
                device=dev["device"],
                node_stats=[_node_proto(node) for node in dev.get("node_stats", [])],
            )
            for dev in step_stats.get("dev_stats", [])
        ]
    )
