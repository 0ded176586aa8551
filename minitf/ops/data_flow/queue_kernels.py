"""The FIFO queue resource and the kernels of the queue ops.

A queue lives in the task's resource manager, not in the graph: the
``FIFOQueueV2`` op finds (or creates) it by ``(container, shared_name)`` and
outputs it as its ``resource`` handle; ``QueueEnqueueV2``, ``QueueDequeueV2``
and the others receive that handle.

Enqueues and dequeues that cannot proceed wait as attempts (see
`minitf.ops.data_flow.blocking`), served first come, first served per direction, as in
TF's ``FIFOQueue`` (``tensorflow/core/kernels/fifo_queue.cc``):

* ``enqueue`` waits while the queue is full; ``enqueue_many`` inserts its
  elements one by one as space frees;
* ``dequeue`` waits while the queue is empty; ``dequeue_many(n)`` takes
  elements as they arrive (so ``n`` may exceed the capacity) and, if the
  queue is closed before it has ``n``, puts the ones it took back at the front;
* a plain ``close`` waits behind the enqueues already waiting; with
  ``cancel_pending_enqueues=True`` it closes at once and fails them.

Stored elements are read-only arrays owned by the queue, so a dequeued value
is never changed by anyone else.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data_flow.blocking import (
    NO_PROGRESS,
    PROGRESS,
    Attempt,
    BlockingResource,
    Offer,
    frozen,
    private_resource_name,
)

ENQUEUE, DEQUEUE = 0, 1


def _shape_str(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


class FIFOQueue(BlockingResource):
    """A first-in first-out queue of tuples of arrays (TF's ``FIFOQueue`` resource).

    Args:
        name: The resource name used in error messages.
        capacity: The most elements it holds; negative means unbounded.
        component_types: The dtype of each tuple component.
        shapes: The shape of each component, or None if not declared.
    """

    def __init__(self, name: str, capacity: int, component_types, shapes):
        super().__init__(directions=2)
        self.name = name
        self.capacity = capacity
        self.component_types = list(component_types)
        self.shapes = None if shapes is None else [tuple(s) for s in shapes]
        self.closed = False
        self._elements: list = []  # tuples, oldest first; a deque would not slice
        self._start = 0  # index of the oldest element in _elements
        # Element ids for traces: the n-th element ever enqueued has id n. FIFO
        # order means the next dequeue takes id ``popped``.
        self.pushed = 0
        self.popped = 0

    # -- state (call with the lock held) ---------------------------------------------------

    def size_locked(self) -> int:
        """How many elements are queued."""
        return len(self._elements) - self._start

    def _has_room(self) -> bool:
        return self.capacity < 0 or self.size_locked() < self.capacity

    def _push(self, element: tuple) -> None:
        self._elements.append(element)
        self.pushed += 1

    def _pop(self) -> tuple:
        self.popped += 1
        element = self._elements[self._start]
        self._elements[self._start] = None
        self._start += 1
        if self._start > 64 and self._start * 2 > len(self._elements):
            del self._elements[: self._start]
            self._start = 0
        return element

    def _push_front(self, elements: list[tuple]) -> None:
        live = self._elements[self._start :]
        self._elements = list(elements) + live
        self._start = 0
        self.popped -= len(elements)  # they were the last ones taken: their ids come back

    def contents_locked(self, limit: int = 16) -> list:
        """The first ``limit`` queued elements, oldest first (each a tuple of components)."""
        return self._elements[self._start : self._start + limit]

    def state_locked(self) -> dict:
        """What a trace shows of a queue an op waited on."""
        return {"kind": "queue", "name": self.name, "size": self.size_locked(),
                "capacity": self.capacity}  # fmt: skip

    def check_compatible(self, capacity: int, component_types, shapes) -> None:
        """Raises TF's error if a second creator asks for another queue under this name."""
        if capacity != self.capacity:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Shared queue '{self.name}' has capacity {self.capacity} but requested "
                f"capacity was {capacity}",
            )
        if list(component_types) != self.component_types:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Shared queue '{self.name}' has component types "
                f"{[d.name for d in self.component_types]} but requested component types were "
                f"{[d.name for d in component_types]}",
            )
        requested = None if shapes is None else [tuple(s) for s in shapes]
        if requested != self.shapes:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Shared queue '{self.name}' has component shapes {self.shapes} but requested "
                f"component shapes were {requested}",
            )

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
            if got != expected:
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
                errors.CancelledError(None, None, f"FIFOQueue '{self.name}' is closed.")
            )
        elements, moved = attempt.state, False
        if elements.next == 0:
            elements.first_id = self.pushed
        while elements.next < len(elements.items) and self._has_room():
            self._push(elements.items[elements.next])
            elements.next += 1
            moved = True
        if elements.next == len(elements.items):
            return attempt.complete(None)
        return PROGRESS if moved else NO_PROGRESS

    def run_dequeue(self, attempt: Attempt):
        """Dequeues one element."""
        if self.size_locked():
            attempt.state.first_id = self.popped  # the id of the element it takes
            return attempt.complete(self._pop())
        if self.closed:
            return attempt.complete(self._insufficient(1))
        return NO_PROGRESS

    def run_dequeue_many(self, attempt: Attempt, up_to: bool = False):
        """Takes elements as they arrive until it has ``attempt.state.wanted``."""
        taken = attempt.state
        needed = taken.wanted - len(taken.items)
        if self.closed and self.size_locked() < needed:
            size = self.size_locked()
            self._push_front(taken.items)  # give back what it took, in order
            taken.items = []
            if up_to and self.size_locked():
                taken.wanted = self.size_locked()  # closed: take whatever is left
            elif up_to and self._attempts[ENQUEUE]:
                return PROGRESS  # pending enqueues may still add elements: let them
            else:
                return attempt.complete(self._insufficient(needed, size))
        moved = False
        if not taken.items:
            taken.first_id = self.popped
        while len(taken.items) < taken.wanted and self.size_locked():
            taken.items.append(self._pop())
            moved = True
        if len(taken.items) == taken.wanted:
            return attempt.complete(taken.items)
        return PROGRESS if moved else NO_PROGRESS

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
        if direction == DEQUEUE and isinstance(attempt.state, _Taken) and attempt.state.items:
            self._push_front(attempt.state.items)
            attempt.state.items = []

    def _insufficient(self, requested: int, size: int | None = None) -> errors.OutOfRangeError:
        size = self.size_locked() if size is None else size
        return errors.OutOfRangeError(
            None,
            None,
            f"FIFOQueue '{self.name}' is closed and has insufficient elements "
            f"(requested {requested}, current size {size})",
        )


class _Pending:
    """The elements an enqueue still has to insert."""

    __slots__ = ("items", "next", "first_id")

    def __init__(self, items: list):
        self.items = items
        self.next = 0
        self.first_id = 0


class _Taken:
    """The elements a dequeue_many has taken so far."""

    __slots__ = ("items", "wanted", "first_id")

    def __init__(self, wanted: int):
        self.items: list = []
        self.wanted = wanted
        self.first_id = 0


# -- kernels ----------------------------------------------------------------------------------


@register_kernel("FIFOQueueV2", stateful=True)
def _fifo_queue_kernel(op):
    capacity = op.get_attr("capacity")
    types = list(op.get_attr("component_types"))
    shapes = [tuple(s.as_list()) for s in op.get_attr("shapes")] or None
    container = op.get_attr("container")
    name = op.get_attr("shared_name") or private_resource_name(op)
    checked: set[int] = set()

    def compute(ctx):
        queue = ctx.resource_mgr.lookup_or_create(
            container, name, lambda: FIFOQueue(name, capacity, types, shapes)
        )
        if id(queue) not in checked:
            queue.check_compatible(capacity, types, shapes)
            checked.add(id(queue))
        return queue

    return compute


def _traced(op, ctx, queue: FIFOQueue, done, direction: str, state):
    """``done``, or — in a traced step — ``done`` that first notes which elements moved.

    Also notes the queue's state as the op starts: what it waits on if it must.
    """
    if ctx.trace is None:
        return done
    with queue.lock:
        ctx.note(op.name, "waited_on", queue.state_locked())

    def traced_done(result):
        if not isinstance(result, (Exception, Offer)):
            count = state.next if isinstance(state, _Pending) else max(len(state.items), 1)
            ids = list(range(state.first_id, state.first_id + count))
            ctx.note(op.name, "elements", {"queue": queue.name, "direction": direction,
                                           "ids": ids})  # fmt: skip
        done(result)

    return traced_done


@register_kernel("QueueEnqueueV2", is_async=True, stateful=True)
def _enqueue_kernel(op):
    def compute(ctx, done, queue, *components):
        queue.validate_tuple(components, batched=False)
        element = tuple(frozen(c) for c in components)
        pending = _Pending([element])
        queue.try_attempt(
            ENQUEUE,
            ctx,
            _traced(op, ctx, queue, done, "enqueue", pending),
            queue.run_enqueue,
            "Enqueue operation was cancelled",
            pending,
        )

    return compute


@register_kernel("QueueEnqueueManyV2", is_async=True, stateful=True)
def _enqueue_many_kernel(op):
    def compute(ctx, done, queue, *components):
        queue.validate_tuple(components, batched=True)
        batch = len(components[0])
        if batch == 0:
            done(None)  # TF: an empty batch completes at once, even on a closed queue
            return
        columns = [frozen(c) for c in components]
        pending = _Pending([tuple(col[i, ...] for col in columns) for i in range(batch)])
        queue.try_attempt(
            ENQUEUE,
            ctx,
            _traced(op, ctx, queue, done, "enqueue", pending),
            queue.run_enqueue,
            "Enqueue operation was cancelled",
            pending,
        )

    return compute


def _outputs(element: tuple):
    return element[0] if len(element) == 1 else element


@register_kernel("QueueDequeueV2", is_async=True, stateful=True)
def _dequeue_kernel(op):
    def compute(ctx, done, queue):
        taken = _Taken(1)  # run_dequeue keeps only the id of the element in it
        done = _traced(op, ctx, queue, done, "dequeue", taken)
        queue.try_attempt(
            DEQUEUE,
            ctx,
            lambda result: done(
                result if isinstance(result, (Exception, Offer)) else _outputs(result)
            ),
            queue.run_dequeue,
            "Dequeue operation was cancelled",
            taken,
            ready=lambda attempt: queue.size_locked() > 0 or queue.closed,
        )

    return compute


def _batch(queue: FIFOQueue, elements: list[tuple]):
    """Stacks dequeued elements into one array per component."""
    columns = []
    for i, dtype in enumerate(queue.component_types):
        if elements:
            columns.append(np.stack([e[i] for e in elements]))
        else:
            columns.append(np.zeros((0,) + queue.shapes[i], dtype=dtype.as_numpy_dtype))
    return _outputs(tuple(columns))


def _dequeue_many_builder(up_to: bool):
    def builder(op):
        def compute(ctx, done, queue, n):
            if queue.shapes is None:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    "FIFOQueue's DequeueMany and DequeueUpTo require the components to have "
                    "specified shapes.",
                )
            n = int(n)
            if n < 0:
                raise errors.InvalidArgumentError(
                    None, None, f"Dequeue requested a negative number of elements: {n}"
                )
            if n == 0:
                done(_batch(queue, []))
                return

            taken = _Taken(n)
            traced_done = _traced(op, ctx, queue, done, "dequeue", taken)

            def deliver(result):
                traced_done(result if isinstance(result, Exception) else _batch(queue, result))

            queue.try_attempt(
                DEQUEUE,
                ctx,
                deliver,
                lambda attempt: queue.run_dequeue_many(attempt, up_to),
                "Dequeue operation was cancelled",
                taken,
            )

        return compute

    return builder


register_kernel("QueueDequeueManyV2", is_async=True, stateful=True)(_dequeue_many_builder(False))
register_kernel("QueueDequeueUpToV2", is_async=True, stateful=True)(_dequeue_many_builder(True))


@register_kernel("QueueCloseV2", is_async=True, stateful=True)
def _close_kernel(op):
    cancel = op.get_attr("cancel_pending_enqueues")

    def compute(ctx, done, queue):
        if cancel:
            with queue.lock:
                finished = queue.cancel_pending_enqueues() + queue.flush_locked()
            queue.finish(finished)
            done(None)
            return
        queue.try_attempt(
            ENQUEUE, ctx, done, queue.run_close, "Close operation was cancelled", cancellable=False
        )

    return compute


@register_kernel("QueueSizeV2", stateful=True)
def _size_kernel(op):
    def compute(ctx, queue):
        with queue.lock:
            return np.int32(queue.size_locked())

    return compute


@register_kernel("QueueIsClosedV2", stateful=True)
def _is_closed_kernel(op):
    def compute(ctx, queue):
        with queue.lock:
            return np.bool_(queue.closed)

    return compute


for _op_type in (
    "FIFOQueueV2",
    "QueueEnqueueV2",
    "QueueEnqueueManyV2",
    "QueueDequeueV2",
    "QueueDequeueManyV2",
    "QueueDequeueUpToV2",
    "QueueCloseV2",
    "QueueSizeV2",
    "QueueIsClosedV2",
):
    NotDifferentiable(_op_type)
