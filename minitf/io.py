"""``tf.io``: the names TF1 gives there (so far its queue classes).

TF1 keeps ``tf.io.QueueBase``, ``tf.io.RandomShuffleQueue``,
``tf.io.PaddingFIFOQueue`` and ``tf.io.PriorityQueue`` (but no
``tf.io.FIFOQueue``) beside the ``tf.queue`` names.
"""

# ruff: noqa: F401
from minitf.ops.data_flow.queue_ops import (
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
