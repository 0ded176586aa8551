"""TF's ``data_flow_ops``: queues and conditional accumulators.

The ops that carry data between steps and between workers through state on a
task: the queues — `FIFOQueue`, `RandomShuffleQueue`, `PaddingFIFOQueue`,
`PriorityQueue` (`minitf.ops.data_flow.queue_ops`, kernels in
`minitf.ops.data_flow.queue_kernels` and its siblings) — and the conditional
accumulators that aggregate
gradients (`minitf.ops.data_flow.conditional_accumulator_ops`, kernels in
`minitf.ops.data_flow.conditional_accumulator_kernels`). Waiting ops of both are asynchronous
kernels built on `minitf.ops.data_flow.blocking`.
"""

# ruff: noqa: F401
from minitf.ops.data_flow.conditional_accumulator_ops import (
    ConditionalAccumulator,
    ConditionalAccumulatorBase,
    SparseConditionalAccumulator,
)
from minitf.ops.data_flow.queue_ops import (
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)

__all__ = [
    "QueueBase",
    "FIFOQueue",
    "RandomShuffleQueue",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "ConditionalAccumulatorBase",
    "ConditionalAccumulator",
    "SparseConditionalAccumulator",
]
