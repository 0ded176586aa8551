"""The padding FIFO queue resource and its ``PaddingFIFOQueueV2`` kernel.

A `FIFOQueue` whose declared shapes may leave dimensions open (None): each
element may have any size there, and ``dequeue_many``/``dequeue_up_to`` pad
every component of the batch with zeros (empty strings for strings) up to
the largest size in the batch (TF's ``PaddingFIFOQueue``,
``tensorflow/core/kernels/padding_fifo_queue.cc``). Everything else is the
FIFO queue's.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data_flow.queue_kernels import FIFOQueue, declared_shapes, queue_op_kernel


class PaddingFIFOQueue(FIFOQueue):
    """A FIFO queue that pads batches of elements of different sizes (TF's resource).

    Args:
        name: The resource name used in error messages.
        capacity: The most elements it holds; negative means unbounded.
        component_types: The dtype of each tuple component.
        shapes: The shape of each component, None for a dimension of any size.

    Raises:
        InvalidArgumentError: if there is not one shape per component.
    """

    BATCH_KIND = "PaddingFIFOQueue"  # TF's single dequeue and enqueue say "FIFOQueue"

    def __init__(self, name: str, capacity: int, component_types, shapes):
        shapes = shapes or []
        if len(shapes) != len(component_types):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Shapes must be provided for all components, but received "
                f"{len(component_types)} dtypes and {len(shapes)} shapes.",
            )
        super().__init__(name, capacity, component_types, shapes)

    def _shapes_match(self, shapes) -> bool:
        # Two creators agree if their shapes could describe the same values.
        return len(shapes or []) == len(self.shapes) and all(
            len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))
            for a, b in zip(shapes, self.shapes)
        )

    def batch(self, elements: list[tuple]) -> tuple:
        """Stacks dequeued elements, padding each open dimension to the batch's largest size."""
        return tuple(
            _padded([e[i] for e in elements], shape, dtype.as_numpy_dtype)
            for i, (shape, dtype) in enumerate(zip(self.shapes, self.component_types))
        )


def _padded(values: list[np.ndarray], shape: tuple, empty_dtype) -> np.ndarray:
    """``values`` stacked into one array, each padded with zeros (or b"") at its ends."""
    if not values:
        return np.zeros((0,) + tuple(d or 0 for d in shape), dtype=empty_dtype)
    if None not in shape:
        return np.stack(values)
    dims = tuple(max(v.shape[j] for v in values) if d is None else d for j, d in enumerate(shape))
    dtype = np.result_type(*values)
    if dtype == object:
        batch = np.full((len(values),) + dims, b"", dtype=object)
    else:
        batch = np.zeros((len(values),) + dims, dtype=dtype)  # b"" for numpy bytes
    for k, value in enumerate(values):
        batch[(k,) + tuple(slice(0, n) for n in value.shape)] = value
    return batch


register_kernel("PaddingFIFOQueueV2", stateful=True)(
    queue_op_kernel(
        lambda op, name: PaddingFIFOQueue(
            name, op.get_attr("capacity"), op.get_attr("component_types"), declared_shapes(op)
        )
    )
)
NotDifferentiable("PaddingFIFOQueueV2")
