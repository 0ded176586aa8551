"""The random shuffle queue resource and its ``RandomShuffleQueueV2`` kernel.

A dequeue takes an element chosen uniformly at random from those queued
(TF's ``RandomShuffleQueue``, ``tensorflow/core/kernels/random_shuffle_queue_op.cc``).
While the queue is open a dequeue leaves at least ``min_after_dequeue``
elements behind, so that what comes out is well mixed: it waits until the
queue holds more than that. Once the queue is closed the rule is lifted and
the rest can be drained. Waiting, closing and the kernels of the other
queue ops are those every queue shares (`minitf.ops.data_flow.queue_base`).

The choice is drawn from a numpy generator seeded by the op's ``(seed,
seed2)`` (fresh OS entropy when both are 0), one per queue: the same seeds
and the same operations give the same order — not TF's order, since TF
draws from a Philox stream minitf does not reproduce.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data_flow.queue_base import QueueResource
from minitf.ops.data_flow.queue_kernels import declared_shapes, queue_op_kernel


class RandomShuffleQueue(QueueResource):
    """A queue whose dequeues take a random element (TF's ``RandomShuffleQueue`` resource).

    Args:
        name: The resource name used in error messages.
        capacity: The most elements it holds; negative means unbounded.
        min_after_dequeue: How many elements a dequeue leaves while the queue is open.
        seeds: The op's ``(seed, seed2)``; ``(0, 0)`` means not seeded.
        component_types: The dtype of each tuple component.
        shapes: The shape of each component, or None if not declared.

    Raises:
        InvalidArgumentError: if ``min_after_dequeue`` is negative or not below the capacity.
    """

    KIND = BATCH_KIND = "RandomShuffleQueue"

    def __init__(self, name, capacity, min_after_dequeue, seeds, component_types, shapes):
        if min_after_dequeue < 0:
            raise errors.InvalidArgumentError(
                None, None, f"min_after_dequeue {min_after_dequeue} must be >= 0"
            )
        if 0 <= capacity <= min_after_dequeue:
            raise errors.InvalidArgumentError(
                None, None, f"min_after_dequeue {min_after_dequeue} must be < capacity {capacity}"
            )
        super().__init__(name, capacity, component_types, shapes)
        self.min_after_dequeue = min_after_dequeue
        self.seeds = tuple(seeds)
        self._rng = np.random.default_rng(list(self.seeds) if any(self.seeds) else None)
        self._elements: list[tuple] = []  # in no particular order
        self._ids: list[int] = []  # the id of each element, in the same order

    def size_locked(self) -> int:
        """How many elements are queued."""
        return len(self._elements)

    def available_locked(self) -> int:
        """How many a dequeue may take now: those above ``min_after_dequeue``, all once closed."""
        if self.closed:
            return len(self._elements)
        return len(self._elements) - self.min_after_dequeue

    def _push(self, element: tuple) -> None:
        self._elements.append(element)
        self._ids.append(self.pushed)
        self.pushed += 1

    def _take(self) -> tuple[int, tuple]:
        # As TF: the last element fills the hole the chosen one leaves.
        index = int(self._rng.integers(len(self._elements)))
        for stored in (self._elements, self._ids):
            stored[index], stored[-1] = stored[-1], stored[index]
        return self._ids.pop(), self._elements.pop()

    def _give_back(self, ids: list[int], elements: list[tuple]) -> None:
        self._elements.extend(elements)
        self._ids.extend(ids)

    def contents_locked(self, limit: int = 16) -> list:
        """The first ``limit`` queued elements as stored (a dequeue takes any of them)."""
        return self._elements[:limit]

    def state_locked(self) -> dict:
        """What a trace shows of the queue: also ``min_after_dequeue``, and whether it is closed."""
        return {**super().state_locked(), "min_after_dequeue": self.min_after_dequeue,
                "closed": self.closed}  # fmt: skip

    def check_compatible(self, requested: QueueResource) -> None:
        """Raises TF's error if a second creator asks for another queue under this name.

        Args:
            requested: The queue the second creator would have made.
        """
        super().check_compatible(requested)
        if requested.min_after_dequeue != self.min_after_dequeue:
            raise self.incompatible(
                f"min_after_dequeue {self.min_after_dequeue} but requested min_after_dequeue "
                f"was {requested.min_after_dequeue}."
            )
        # Unseeded creators accept any queue; seeded ones need the same seeds.
        if any(requested.seeds) and requested.seeds != self.seeds:
            raise self.incompatible(
                f"random seeds {self.seeds} but requested seeds are {requested.seeds}."
            )


register_kernel("RandomShuffleQueueV2", stateful=True)(
    queue_op_kernel(
        lambda op, name: RandomShuffleQueue(
            name,
            op.get_attr("capacity"),
            op.get_attr("min_after_dequeue"),
            (op.get_attr("seed"), op.get_attr("seed2")),
            op.get_attr("component_types"),
            declared_shapes(op),
        )
    )
)
NotDifferentiable("RandomShuffleQueueV2")
