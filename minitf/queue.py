"""``tf.queue``: the queue classes under their ``tf.queue.*`` names."""

# ruff: noqa: F401
from minitf.ops.data_flow.queue_ops import (
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
