"""What every queue resource shares (TF's ``QueueBase``): attempts, closing, checks, errors.

A queue lives in the task's resource manager; its ops' kernels
(`minitf.ops.data_flow.queue_kernels`) hand it *attempts* (see
`minitf.ops.data_flow.blocking`) that it serves first come, first served per
direction, as TF's ``QueueBase`` does (``tensorflow/core/kernels/queue_base.cc``):

* ``enqueue`` waits while the queue is full; ``enqueue_many`` inserts its
  elements one by one as space frees;
* ``dequeue`` waits while no element is available; ``dequeue_many(n)`` takes
  elements as they become available (so ``n`` may exceed the capacity) and,
  if the queue is closed before it has ``n``, gives back the ones it took;
* a plain ``close`` waits behind the enqueues already waiting; with
  ``cancel_pending_enqueues=True`` it closes at once and fails them.

`QueueResource` does all of that; a subclass only stores the elements — it
says how one is pushed, which one a dequeue takes, and how taken ones are
given back: `minitf.ops.data_flow.queue_kernels.FIFOQueue` (oldest first) and the
queues of `minitf.ops.data_flow.random_shuffle_queue_kernels`,
`minitf.ops.data_flow.padding_fifo_queue_kernels` and
`minitf.ops.data_flow.priority_queue_kernels`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, errors
from minitf.ops.data_flow.blocking import NO_PROGRESS, PROGRESS, Attempt, BlockingResource

ENQUEUE, DEQUEUE = 0, 1
"""The two attempt lists of a queue."""


def _shape_str(shape) -> str:
    """A shape as TF prints it: ``[2,?,3]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _shape_fits(got: tuple, declared: tuple) -> bool:
    """Whether a value's shape fits a declared one (None: any size in that dimension)."""
    return len(got) == len(declared) and all(d is None or d == g for g, d in zip(got, declared))


class QueueResource(BlockingResource):
    """What every queue shares (TF's ``QueueBase``): attempts, closing, checks, errors.

    A subclass stores the elements: it says how one is pushed, which one a
    dequeue takes, and how taken ones are given back. Each element has an id
    for traces: the n-th element ever enqueued has id n.

    Args:
        name: The resource name used in error messages.
        capacity: The most elements it holds; negative means unbounded.
        component_types: The dtype of each tuple component.
        shapes: The shape of each component, or None if not declared.
    """

    KIND = "FIFOQueue"  # the class name TF's messages give
    BATCH_KIND = "FIFOQueue"  # ... and the one its DequeueMany messages give
    TAKES_PARTIAL_BATCHES = True  # False: a dequeue_many waits until it can take all at once
    DEQUEUE_MANY_NEEDS = "DequeueMany and DequeueUpTo require"  # how TF says it needs shapes

    def __init__(self, name: str, capacity: int, component_types, shapes):
        super().__init__(directions=2)
        self.name = name
        self.capacity = capacity
        self.component_types = list(component_types)
        self.shapes = None if shapes is None else [tuple(s) for s in shapes]
        self.closed = False
        self.pushed = 0  # elements ever enqueued: the id of the next one

    # -- storage: what a subclass provides (lock held) ---------------------------------------

    def size_locked(self) -> int:
        """How many elements are queued."""
        raise NotImplementedError

    def _push(self, element: tuple) -> None:
        """Stores ``element`` with the id ``self.pushed`` (and counts it)."""
        raise NotImplementedError

    def _take(self) -> tuple[int, tuple]:
        """Removes the element a dequeue gets next; returns its id and the element."""
        raise NotImplementedError

    def _give_back(self, ids: list[int], elements: list[tuple]) -> None:
        """Puts back elements a dequeue_many took (oldest taken first) and could not keep."""
        raise NotImplementedError

    def contents_locked(self, limit: int = 16) -> list:
        """The first ``limit`` elements in the order dequeues take them (each a tuple)."""
        raise NotImplementedError

    def available_locked(self) -> int:
        """How many elements a dequeue may take now (all of them, unless a subclass keeps some)."""
        return self.size_locked()

    # -- state (call with the lock held) ---------------------------------------------------

    def _has_room(self) -> bool:
        return self.capacity < 0 or self.size_locked() < self.capacity

    def can_dequeue_locked(self) -> bool:
        """Whether a waiting dequeue would finish now (with an element or with an error)."""
        return self.available_locked() > 0 or self.closed

    def state_locked(self) -> dict:
        """What a trace shows of a queue an op waited on."""
        return {"kind": "queue", "name": self.name, "size": self.size_locked(),
                "capacity": self.capacity}  # fmt: skip

    def incompatible(self, text: str) -> errors.InvalidArgumentError:
        """TF's error for a second creator that wants another queue (``Shared queue 'q' has``)."""
        return errors.InvalidArgumentError(None, None, f"Shared queue '{self.name}' has {text}")

    def check_compatible(self, requested: QueueResource) -> None:
        """Raises TF's error if a second creator asks for another queue under this name.

        Args:
            requested: The queue the second creator would have made.
        """
        if type(requested) is not type(self):
            raise errors.InvalidArgumentError(
                None, None, f"Expected {type(self).__name__}, found {type(requested).__name__}"
            )
        if requested.capacity != self.capacity:
            raise self.incompatible(
                f"capacity {self.capacity} but requested capacity was {requested.capacity}"
            )
        if requested.component_types != self.component_types:
            have = [d.name for d in self.component_types]
            asked = [d.name for d in requested.component_types]
            raise self.incompatible(
                f"component types {have} but requested component types were {asked}"
            )
        if not self._shapes_match(requested.shapes):
            raise self.incompatible(
                f"component shapes {self.shapes} but requested component shapes were "
                f"{requested.shapes}"
            )

    def _shapes_match(self, shapes) -> bool:
        return shapes == self.shapes

    # -- validation --------------------------------------------------------------------------

    def validate_tuple(self, components, batched: bool) -> None:
        """Checks component count, dtypes and (declared) shapes of an enqueue's inputs."""
        if len(components) != len(self.component_types):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Wrong number of components in tuple. Expected {len(self.component_types)}, "
                f"got {len(components)}",
            )
        for i, (value, dtype) in enumerate(zip(components, self.component_types)):
            got = np.asarray(value).dtype
            # A string arrives as bytes (numpy 'S5'), not as the object dtype TF's string maps to.
            if got != dtype.as_numpy_dtype and dtypes.as_dtype(got) != dtype.base_dtype:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Type mismatch in tuple component {i}. Expected {dtype.name}, got "
                    f"{dtypes.as_dtype(got).name}",
                )
        if batched:
            sizes = {np.shape(v)[0] if np.ndim(v) else None for v in components}
            if None in sizes:
                raise errors.InvalidArgumentError(
                    None, None, "EnqueueMany requires each component to have rank at least 1"
                )
            if len(sizes) > 1:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    "Expected all components to have the same batch size (dimension 0), got "
                    + ", ".join(str(np.shape(v)[0]) for v in components),
                )
        if self.shapes is None:
            return
        for i, (value, shape) in enumerate(zip(components, self.shapes)):
            got = np.shape(value)
            expected = ((got[0] if got else 0),) + shape if batched else shape
            if not _shape_fits(got, expected):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Shape mismatch in tuple component {i}. Expected {_shape_str(expected)}, "
                    f"got {_shape_str(got)}",
                )

    # -- attempts (run with the lock held) ---------------------------------------------------

    def run_enqueue(self, attempt: Attempt):
        """Enqueues ``attempt.state`` (a list of elements, oldest first) as space frees."""
        if self.closed:
            return attempt.complete(
                errors.CancelledError(None, None, f"{self.KIND} '{self.name}' is closed.")
            )
        elements, moved = attempt.state, False
        if elements.next == 0:
            elements.first_id = self.pushed  # an enqueue's elements get consecutive ids
        while elements.next < len(elements.items) and self._has_room():
            self._push(elements.items[elements.next])
            elements.next += 1
            moved = True
        if elements.next == len(elements.items):
            return attempt.complete(None)
        return PROGRESS if moved else NO_PROGRESS

    def run_dequeue(self, attempt: Attempt):
        """Dequeues one element."""
        if self.available_locked() > 0:
            element_id, element = self._take()
            attempt.state.ids.append(element_id)
            return attempt.complete(element)
        if self.closed and not self.size_locked():
            return attempt.complete(self._insufficient(1))
        return NO_PROGRESS

    def run_dequeue_many(self, attempt: Attempt, up_to: bool = False):
        """Takes elements as they become available until it has ``attempt.state.wanted``."""
        taken = attempt.state
        needed = taken.wanted - len(taken.items)
        if self.closed and self.size_locked() < needed:
            size = self.size_locked()
            self._return(taken)
            if up_to and self.size_locked():
                taken.wanted = self.size_locked()  # closed: take whatever is left
            elif up_to and self._attempts[ENQUEUE]:
                return PROGRESS  # pending enqueues may still add elements: let them
            else:
                return attempt.complete(self._insufficient(needed, size, self.BATCH_KIND))
        available = self.available_locked()
        if not self.TAKES_PARTIAL_BATCHES and available < taken.wanted and not self.closed:
            return NO_PROGRESS
        moved = False
        while len(taken.items) < taken.wanted and available > 0:
            element_id, element = self._take()
            taken.ids.append(element_id)
            taken.items.append(element)
            available -= 1
            moved = True
        if len(taken.items) == taken.wanted:
            return attempt.complete(taken.items)
        return PROGRESS if moved else NO_PROGRESS

    def _return(self, taken: Taken) -> None:
        """Gives back what a dequeue_many took."""
        if taken.items:
            self._give_back(taken.ids, taken.items)
        taken.items, taken.ids = [], []

    def run_close(self, attempt: Attempt):
        """A plain close: it waited behind the enqueues that were already waiting."""
        if self.closed:
            return attempt.complete(
                errors.CancelledError(None, None, f"Queue '{self.name}' is already closed.")
            )
        self.closed = True
        return attempt.complete(None)

    def cancel_pending_enqueues(self) -> list[Attempt]:
        """Closes now and fails the waiting enqueues (lock held); returns them, finished."""
        self.closed = True
        return self.fail_waiting(
            ENQUEUE, lambda: errors.CancelledError(None, None, "Enqueue operation was cancelled")
        )

    def on_cancel_locked(self, direction: int, attempt: Attempt) -> None:
        # TF drops what a cancelled dequeue_many had taken; minitf puts it back so
        # that a step that times out loses no element.
        if direction == DEQUEUE and isinstance(attempt.state, Taken):
            self._return(attempt.state)

    def _insufficient(
        self, requested: int, size: int | None = None, kind: str | None = None
    ) -> errors.OutOfRangeError:
        size = self.size_locked() if size is None else size
        return errors.OutOfRangeError(
            None,
            None,
            f"{kind or self.KIND} '{self.name}' is closed and has insufficient elements "
            f"(requested {requested}, current size {size})",
        )

    # -- batches -------------------------------------------------------------------------------

    def batch(self, elements: list[tuple]) -> tuple:
        """Stacks dequeued elements into one array per component (no lock needed)."""
        columns = []
        for i, dtype in enumerate(self.component_types):
            if elements:
                columns.append(np.stack([e[i] for e in elements]))
            else:
                columns.append(np.zeros((0,) + self.shapes[i], dtype=dtype.as_numpy_dtype))
        return tuple(columns)

    def dequeue_many_error(self) -> errors.InvalidArgumentError | None:
        """TF's error for a dequeue_many on this queue, if it cannot have one at all."""
        if self.shapes is not None:
            return None
        return errors.InvalidArgumentError(
            None,
            None,
            f"{self.KIND}'s {self.DEQUEUE_MANY_NEEDS} the components to have specified shapes.",
        )


class Pending:
    """The elements an enqueue still has to insert."""

    __slots__ = ("items", "next", "first_id")

    def __init__(self, items: list):
        self.items = items
        self.next = 0
        self.first_id = 0


class Taken:
    """The elements a dequeue or dequeue_many has taken so far, and their ids."""

    __slots__ = ("items", "wanted", "ids")

    def __init__(self, wanted: int):
        self.items: list = []
        self.wanted = wanted
        self.ids: list[int] = []
