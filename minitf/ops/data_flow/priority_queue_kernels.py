"""The priority queue resource and its ``PriorityQueueV2`` kernel.

Each element starts with an int64 scalar, its priority, and a dequeue takes
the element of lowest priority (TF's ``PriorityQueue``,
``tensorflow/core/kernels/priority_queue.cc``). A ``dequeue_many(n)`` waits
until ``n`` elements are queued and takes them all at once, so that its
batch comes out sorted. Elements of equal priority come out in the order
they were enqueued (TF leaves that order unspecified). Waiting, closing and
the kernels of the other queue ops are those every queue shares
(`minitf.ops.data_flow.queue_base`).
"""

from __future__ import annotations

import heapq

import numpy as np

from minitf.framework import dtypes, errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data_flow.queue_base import QueueResource
from minitf.ops.data_flow.queue_kernels import declared_shapes, queue_op_kernel


class PriorityQueue(QueueResource):
    """A queue whose dequeues take the lowest priority first (TF's ``PriorityQueue`` resource).

    Args:
        name: The resource name used in error messages.
        capacity: The most elements it holds; negative means unbounded.
        component_types: The dtype of each component after the priority.
        shapes: The shape of each component after the priority, or None.
    """

    KIND = BATCH_KIND = "PriorityQueue"
    TAKES_PARTIAL_BATCHES = False
    DEQUEUE_MANY_NEEDS = "DequeueMany requires"

    def __init__(self, name: str, capacity: int, component_types, shapes):
        # The op's attributes leave out the priority; the queue stores it first.
        shapes = [()] + list(shapes) if shapes else None
        super().__init__(name, capacity, [dtypes.int64] + list(component_types), shapes)
        self._heap: list[tuple] = []  # (priority, id, element): ties go by id, oldest first

    def size_locked(self) -> int:
        """How many elements are queued."""
        return len(self._heap)

    def _push(self, element: tuple) -> None:
        heapq.heappush(self._heap, (int(element[0]), self.pushed, element))
        self.pushed += 1

    def _take(self) -> tuple[int, tuple]:
        _, element_id, element = heapq.heappop(self._heap)
        return element_id, element

    def _give_back(self, ids: list[int], elements: list[tuple]) -> None:
        for element_id, element in zip(ids, elements):
            heapq.heappush(self._heap, (int(element[0]), element_id, element))

    def contents_locked(self, limit: int = 16) -> list:
        """The ``limit`` elements of lowest priority, in the order dequeues take them."""
        return [element for _, _, element in heapq.nsmallest(limit, self._heap)]

    def validate_tuple(self, components, batched: bool) -> None:
        """Checks an enqueue's inputs; without declared shapes, also that priorities are scalars."""
        super().validate_tuple(components, batched)
        priority_shape = np.shape(components[0])
        if self.shapes is None and len(priority_shape) != int(batched):
            shape = priority_shape[1:] if batched else priority_shape
            raise errors.InvalidArgumentError(
                None,
                None,
                "Expected the priority element to be a scalar, but received shape: "
                "[" + ",".join(str(d) for d in shape) + "]",
            )


register_kernel("PriorityQueueV2", stateful=True)(
    queue_op_kernel(
        lambda op, name: PriorityQueue(
            name, op.get_attr("capacity"), op.get_attr("component_types"), declared_shapes(op)
        )
    )
)
NotDifferentiable("PriorityQueueV2")
