"""The FIFO queue resource and the kernels of the queue ops.

A queue lives in the task's resource manager, not in the graph: the
``FIFOQueueV2`` op (or ``RandomShuffleQueueV2``, ``PaddingFIFOQueueV2``,
``PriorityQueueV2``) finds or creates it by ``(container, shared_name)`` and
outputs it as its ``resource`` handle; ``QueueEnqueueV2``, ``QueueDequeueV2``
and the others receive that handle and serve every kind of queue alike.

How enqueues and dequeues wait, and how closing works, is the same for every
queue (`minitf.ops.data_flow.queue_base`). `FIFOQueue` stores the elements
oldest first, as TF's ``FIFOQueue`` (``tensorflow/core/kernels/fifo_queue.cc``).

Stored elements are read-only arrays owned by the queue, so a dequeued value
is never changed by anyone else.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data_flow.blocking import Offer, frozen, private_resource_name
from minitf.ops.data_flow.queue_base import DEQUEUE, ENQUEUE, Pending, QueueResource, Taken
from minitf.ops.resource_kernels import resource_kernel

__all__ = ["DEQUEUE", "ENQUEUE", "FIFOQueue", "declared_shapes", "queue_op_kernel"]


class FIFOQueue(QueueResource):
    """A first-in first-out queue of tuples of arrays (TF's ``FIFOQueue`` resource).

    Args:
        name: The resource name used in error messages.
        capacity: The most elements it holds; negative means unbounded.
        component_types: The dtype of each tuple component.
        shapes: The shape of each component, or None if not declared.
    """

    def __init__(self, name: str, capacity: int, component_types, shapes):
        super().__init__(name, capacity, component_types, shapes)
        self._elements: list = []  # tuples, oldest first; a deque would not slice
        self._start = 0  # index of the oldest element in _elements
        # FIFO order means the next dequeue takes id ``popped``: no ids are stored.
        self.popped = 0

    def size_locked(self) -> int:
        """How many elements are queued."""
        return len(self._elements) - self._start

    # Every queued element may be dequeued: the same method, without a call in between.
    available_locked = size_locked

    def _push(self, element: tuple) -> None:
        self._elements.append(element)
        self.pushed += 1

    def _take(self) -> tuple[int, tuple]:
        element_id = self.popped
        self.popped += 1
        element = self._elements[self._start]
        self._elements[self._start] = None
        self._start += 1
        if self._start > 64 and self._start * 2 > len(self._elements):
            del self._elements[: self._start]
            self._start = 0
        return element_id, element

    def _give_back(self, ids: list[int], elements: list[tuple]) -> None:
        live = self._elements[self._start :]
        self._elements = list(elements) + live  # back at the front, in order
        self._start = 0
        self.popped -= len(elements)  # they were the last ones taken: their ids come back

    def contents_locked(self, limit: int = 16) -> list:
        """The first ``limit`` queued elements, oldest first (each a tuple of components)."""
        return self._elements[self._start : self._start + limit]


# -- kernels -----------------------------------------------------------------------------------


def declared_shapes(op) -> list[tuple] | None:
    """A queue op's ``shapes`` attribute as tuples (None for an unknown dimension), or None."""
    return [tuple(s.as_list()) for s in op.get_attr("shapes")] or None


def queue_op_kernel(make: Callable[[object, str], QueueResource]):
    """A kernel builder for an op that creates a queue (``FIFOQueueV2`` and the others).

    The kernel finds the queue by ``(container, shared_name)`` in the task's
    resource manager or creates it; the first time a kernel meets a queue
    it checks that the queue is the one it would have made (TF's
    ``MatchesNodeDef``).

    Args:
        make: ``make(op, name)`` creates the queue from the op's attributes.
    """

    def builder(op):
        container = op.get_attr("container")
        name = op.get_attr("shared_name") or private_resource_name(op)
        return resource_kernel(
            container,
            name,
            lambda: make(op, name),
            lambda queue: queue.check_compatible(make(op, name)),
        )

    return builder


register_kernel("FIFOQueueV2", stateful=True)(
    queue_op_kernel(
        lambda op, name: FIFOQueue(
            name, op.get_attr("capacity"), op.get_attr("component_types"), declared_shapes(op)
        )
    )
)


def _traced(op, ctx, queue: QueueResource, done, direction: str, state):
    """``done``, or — in a traced step — ``done`` that first notes which elements moved.

    Also notes the queue's state as the op starts: what it waits on if it must.
    """
    if ctx.trace is None:
        return done
    with queue.lock:
        ctx.note(op.name, "waited_on", queue.state_locked())
    where = ctx.frame_iter  # the completion may come while another iteration runs

    def traced_done(result):
        if not isinstance(result, (Exception, Offer)):
            if isinstance(state, Pending):
                ids = list(range(state.first_id, state.first_id + state.next))
            else:
                ids = list(state.ids)
            moved = {"queue": queue.name, "direction": direction, "ids": ids}
            ctx.note(op.name, "elements", moved, where)
        done(result)

    return traced_done


@register_kernel("QueueEnqueueV2", is_async=True, stateful=True)
def _enqueue_kernel(op):
    def compute(ctx, done, queue, *components):
        queue.validate_tuple(components, batched=False)
        element = tuple(frozen(c) for c in components)
        pending = Pending([element])
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
        pending = Pending([tuple(col[i, ...] for col in columns) for i in range(batch)])
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
        taken = Taken(1)  # run_dequeue keeps only the id of the element in it
        if ctx.trace is not None:  # (tested here too: an untraced step's dequeue calls less)
            done = _traced(op, ctx, queue, done, "dequeue", taken)

        def deliver(result):  # `_outputs`, inlined: a call less per dequeue
            if isinstance(result, (Exception, Offer)) or len(result) != 1:
                done(result)
            else:
                done(result[0])

        queue.try_attempt(
            DEQUEUE,
            ctx,
            deliver,
            queue.run_dequeue,
            "Dequeue operation was cancelled",
            taken,
            ready=lambda attempt: queue.can_dequeue_locked(),
        )

    return compute


def _dequeue_many_builder(up_to: bool):
    def builder(op):
        def compute(ctx, done, queue, n):
            error = queue.dequeue_many_error()
            if error is not None:
                raise error
            n = int(n)
            if n < 0:
                raise errors.InvalidArgumentError(
                    None, None, f"Dequeue requested a negative number of elements: {n}"
                )
            if n == 0:
                done(_outputs(queue.batch([])))
                return

            taken = Taken(n)
            traced_done = _traced(op, ctx, queue, done, "dequeue", taken)

            def deliver(result):
                traced_done(
                    result if isinstance(result, Exception) else _outputs(queue.batch(result))
                )

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
