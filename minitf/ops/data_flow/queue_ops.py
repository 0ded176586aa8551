"""``tf.FIFOQueue``, the other queues and ``tf.QueueBase``: queues as graph ops.

A queue object builds ops; it holds no elements. ``tf.FIFOQueue(...)`` adds a
``FIFOQueueV2`` op whose kernel finds or creates the queue resource in the
task's resource manager, and each method adds one op that takes the queue's
handle: ``enqueue`` → ``QueueEnqueueV2``, ``dequeue`` → ``QueueDequeueV2``,
``close`` → ``QueueCloseV2``, and so on. Running the ops moves the elements
(`minitf.ops.data_flow.queue_kernels` holds the resource and the kernels).

``tf.RandomShuffleQueue``, ``tf.PaddingFIFOQueue`` and ``tf.PriorityQueue``
build the same ops on another queue op (``RandomShuffleQueueV2``,
``PaddingFIFOQueueV2``, ``PriorityQueueV2``); only what the resource does
with the elements differs.

Elements are tuples of tensors (*components*), each with a dtype and,
optionally, a declared shape; with ``names`` they are dicts. The checks TF
makes while building the graph — dict keys, dtypes, static shapes, batch
sizes — are made here and raise ``ValueError``/``TypeError``; the kernels
check the values at run time and raise ``InvalidArgumentError``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from minitf.framework import dtypes as _dtypes
from minitf.framework import ops, random_seed, tensor_shape, tensor_util


def _as_type_list(dtypes) -> list[_dtypes.DType]:
    """One dtype or a list of dtypes, as a list of `DType`."""
    if isinstance(dtypes, (list, tuple)):
        return [_dtypes.as_dtype(t) for t in dtypes]
    return [_dtypes.as_dtype(dtypes)]


def _as_shape_list(shapes, unknown_dim_allowed: bool = False) -> list | None:
    """None, one shape, or a list of shapes, as a list of fully defined `TensorShape`.

    Args:
        shapes: What the user passed.
        unknown_dim_allowed: Whether dimensions may be None (a `PaddingFIFOQueue`);
            then ``shapes`` must be a list of shapes of known rank.

    Raises:
        TypeError: if ``shapes`` is not a shape or a list of shapes.
        ValueError: if a shape is not fully defined (or, with
            ``unknown_dim_allowed``, if ``shapes`` is not a list of shapes).
    """
    if unknown_dim_allowed and (
        not isinstance(shapes, Sequence)
        or not shapes
        or any(s is None or isinstance(s, int) for s in shapes)
    ):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, tensor_shape.TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError("shapes must be a TensorShape or a list or tuple of TensorShapes.")
    if all(d is None or isinstance(d, int) for d in shapes):
        shapes = [shapes]  # a single shape such as (3, 2) or ()
    shapes = [tensor_shape.as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if any(s.ndims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _as_name_list(names, dtypes) -> list[str] | None:
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


class QueueBase:
    """Base class of queue implementations (TF's ``tf.QueueBase``).

    Args:
        dtypes: The dtype of each component.
        shapes: The declared shape of each component, or None.
        names: The name of each component, or None.
        queue_ref: The queue's ``resource`` handle tensor.

    Raises:
        ValueError: if ``shapes`` or ``names`` is not one per dtype.
    """

    def __init__(
        self,
        dtypes: list[_dtypes.DType],
        shapes: list | None,
        names: list[str] | None,
        queue_ref: ops.Tensor,
    ):
        self._dtypes = list(dtypes)
        if shapes is not None:
            if len(shapes) != len(self._dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [tensor_shape.TensorShape(s) for s in shapes]
        else:
            self._shapes = [tensor_shape.unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(self._dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
            self._names = list(names)
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @property
    def queue_ref(self) -> ops.Tensor:
        """The queue's handle tensor."""
        return self._queue_ref

    @property
    def name(self) -> str:
        """The name of the queue op (its last name-scope component)."""
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> list[_dtypes.DType]:
        """The dtype of each component."""
        return self._dtypes

    @property
    def shapes(self) -> list[tensor_shape.TensorShape]:
        """The declared shape of each component (unknown shapes if none were declared)."""
        return self._shapes

    @property
    def names(self) -> list[str] | None:
        """The component names, or None."""
        return self._names

    def _scope_vals(self, vals) -> list:
        if isinstance(vals, dict):
            return list(vals.values())
        if isinstance(vals, (list, tuple)):
            return list(vals)
        return [vals]

    def _check_enqueue_dtypes(self, vals) -> list[ops.Tensor]:
        """Converts an element (a value, a list/tuple, or a dict) to one tensor per component.

        Raises:
            ValueError: for a dict on a queue without names (or the reverse), or
                keys that differ from the names, or the wrong number of components.
        """
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError(
                    "Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
                    f"({sorted(vals.keys(), key=str)}), Queue: ({sorted(self._names, key=str)})"
                )
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(
                f"Queue '{self.name}' has {len(self._dtypes)} components but the element to "
                f"enqueue has {len(vals)}"
            )
        return [
            ops.convert_to_tensor(val, dtype=dtype, name=f"component_{i}")
            for i, (val, dtype) in enumerate(zip(vals, self._dtypes))
        ]

    def _dequeue_return_value(self, tensors: list[ops.Tensor]):
        if self._names:
            return dict(zip(self._names, tensors))
        if len(tensors) == 1:
            return tensors[0]
        return list(tensors)

    def enqueue(
        self, vals: ops.Tensor | list | tuple | dict, name: str | None = None
    ) -> ops.Operation:
        """Enqueues one element; when run, waits while the queue is full.

        Args:
            vals: A tensor, a list/tuple of tensors, or a dict (queues with names).
            name: A name for the op.

        Returns:
            The ``QueueEnqueueV2`` op.

        Raises:
            ValueError: if ``vals`` does not fit the queue's components or shapes.
        """
        with ops.name_scope(name, f"{self._name}_enqueue", self._scope_vals(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            for val, shape in zip(tensors, self._shapes):
                val.get_shape().assert_is_compatible_with(shape)
            return self._create_op(
                "QueueEnqueueV2",
                [self._queue_ref] + tensors,
                [],
                scope,
                {"Tcomponents": [t.dtype for t in tensors], "timeout_ms": -1},
            )

    def enqueue_many(
        self, vals: ops.Tensor | list | tuple | dict, name: str | None = None
    ) -> ops.Operation:
        """Enqueues the slices of ``vals`` along dimension 0 as separate elements.

        Args:
            vals: Like `enqueue`, with an extra leading batch dimension on every
                component (the same size in all of them).
            name: A name for the op.

        Returns:
            The ``QueueEnqueueManyV2`` op.

        Raises:
            ValueError: if a component has rank 0, the batch sizes differ, or the
                rest of a shape does not fit the queue's.
        """
        with ops.name_scope(name, f"{self._name}_EnqueueMany", self._scope_vals(vals)) as scope:
            tensors = self._check_enqueue_dtypes(vals)
            batch_dim = tensor_shape.Dimension(None)
            for val, shape in zip(tensors, self._shapes):
                val_shape = val.get_shape().with_rank_at_least(1)
                batch_dim = batch_dim.merge_with(val_shape[0])
                val_shape[1:].assert_is_compatible_with(shape)
            return self._create_op(
                "QueueEnqueueManyV2",
                [self._queue_ref] + tensors,
                [],
                scope,
                {"Tcomponents": [t.dtype for t in tensors], "timeout_ms": -1},
            )

    def dequeue(
        self, name: str | None = None
    ) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
        """Dequeues one element; when run, waits while the queue is empty.

        Args:
            name: A name for the op.

        Returns:
            The element: one tensor, a list of tensors, or a dict (queues with
                names). Running it on a closed, empty queue raises
                ``OutOfRangeError``.
        """
        op = self._create_op(
            "QueueDequeueV2",
            [self._queue_ref],
            self._dtypes,
            name or f"{self._name}_Dequeue",
            {"component_types": self._dtypes, "timeout_ms": -1},
            shapes=self._shapes,
        )
        return self._dequeue_return_value(op.outputs)

    def dequeue_many(
        self, n: int | ops.Tensor, name: str | None = None
    ) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
        """Dequeues ``n`` elements, concatenated along a new dimension 0.

        Waits until ``n`` elements have arrived; if the queue is closed first,
        the elements taken are put back and running it raises
        ``OutOfRangeError``. The queue must have declared shapes.

        Args:
            n: The number of elements to dequeue (an int32 scalar).
            name: A name for the op.
        """
        n_t = ops.convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        batch = tensor_util.constant_value(n_t)
        batch_dim = tensor_shape.Dimension(None if batch is None else int(batch))
        return self._dequeue_batch("QueueDequeueManyV2", "DequeueMany", n_t, batch_dim, name)

    def dequeue_up_to(
        self, n: int | ops.Tensor, name: str | None = None
    ) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
        """Dequeues up to ``n`` elements: ``n`` while the queue is open, what is left once closed.

        Running it on a closed, empty queue raises ``OutOfRangeError``. The
        queue must have declared shapes.

        Args:
            n: The most elements to dequeue (an int32 scalar).
            name: A name for the op.
        """
        n_t = ops.convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        return self._dequeue_batch(
            "QueueDequeueUpToV2", "DequeueUpTo", n_t, tensor_shape.Dimension(None), name
        )

    def _dequeue_batch(self, op_type, suffix, n_t, batch_dim, name):
        shapes = [tensor_shape.TensorShape([batch_dim]).concatenate(s) for s in self._shapes]
        op = self._create_op(
            op_type,
            [self._queue_ref, n_t],
            self._dtypes,
            name or f"{self._name}_{suffix}",
            {"component_types": self._dtypes, "timeout_ms": -1},
            shapes=shapes,
        )
        return self._dequeue_return_value(op.outputs)

    def close(
        self, cancel_pending_enqueues: bool = False, name: str | None = None
    ) -> ops.Operation:
        """Closes the queue: no more enqueues; dequeues drain what is left.

        A plain close waits behind the enqueues already waiting. With
        ``cancel_pending_enqueues=True`` it closes at once and the waiting
        enqueues fail with ``CancelledError``. Closing a closed queue with a
        plain close raises ``CancelledError``.

        Args:
            cancel_pending_enqueues: Whether to cancel the waiting enqueues instead of letting them
                finish.
            name: A name for the op.
        """
        return self._create_op(
            "QueueCloseV2",
            [self._queue_ref],
            [],
            name or f"{self._name}_Close",
            {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
        )

    def is_closed(self, name: str | None = None) -> ops.Tensor:
        """A bool scalar: whether the queue is closed.

        Args:
            name: A name for the op.
        """
        op = self._create_op(
            "QueueIsClosedV2", [self._queue_ref], [_dtypes.bool], name or f"{self._name}_IsClosed"
        )
        return op.outputs[0]

    def size(self, name: str | None = None) -> ops.Tensor:
        """An int32 scalar: the number of elements in the queue.

        Args:
            name: A name for the op.
        """
        op = self._create_op(
            "QueueSizeV2", [self._queue_ref], [_dtypes.int32], name or f"{self._name}_Size"
        )
        return op.outputs[0]

    @staticmethod
    def _create_op(op_type, inputs, out_dtypes, name, attrs=None, shapes=None):
        if shapes is None:
            shapes = [tensor_shape.TensorShape([])] * len(out_dtypes)
        return ops.get_default_graph().create_op(
            op_type, inputs, list(out_dtypes), name=name, attrs=attrs or {}, shapes=list(shapes)
        )


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in first-in first-out order (TF's ``tf.FIFOQueue``).

    Args:
        capacity: The most elements the queue holds; negative means unbounded.
        dtypes: One dtype or a list: the dtype of each component.
        shapes: None, one shape, or a list of fully defined shapes, one per
            component. ``dequeue_many`` and ``dequeue_up_to`` need them.
        names: None, a name or a list of names: elements are then dicts.
        shared_name: If set, every session (or graph) on the same task that
            names it uses the same queue.
        name: The name of the queue op.

    Raises:
        ValueError: for shapes that are not fully defined or lists of the wrong length.
    """

    def __init__(
        self,
        capacity: int,
        dtypes: _dtypes.DType | list[_dtypes.DType],
        shapes: tensor_shape.TensorShape | list | None = None,
        names: str | list[str] | None = None,
        shared_name: str | None = None,
        name: str = "fifo_queue",
    ):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        if shapes is not None and len(shapes) != len(dtypes):
            raise ValueError("Queue shapes must have the same length as dtypes")
        ref = _queue_op("FIFOQueueV2", name, capacity, dtypes, shapes, shared_name)
        super().__init__(dtypes, shapes, names, ref)


def _queue_op(op_type, name, capacity, dtypes, shapes, shared_name, **attrs) -> ops.Tensor:
    """Adds a queue op (outside any control dependencies) and returns its handle."""
    with ops.control_dependencies(None):
        op = ops.get_default_graph().create_op(
            op_type,
            [],
            [_dtypes.resource],
            name=name,
            attrs={
                "component_types": dtypes,
                "shapes": shapes or [],
                "capacity": int(capacity),
                "container": "",
                "shared_name": shared_name or "",
                **attrs,
            },
            shapes=[tensor_shape.TensorShape([])],
        )
    return op.outputs[0]


def _queue_seeds(seed: int | None, shared_name: str | None) -> tuple[int, int]:
    """A `RandomShuffleQueue`'s ``(seed, seed2)`` attributes: (0, 0) when not seeded.

    As TF: with a graph seed but no op seed, a shared queue's ``seed2`` comes
    from the graph seed and the shared name (not from the op count), so that
    every graph that builds it asks for the same seeds.
    """
    seed1, seed2 = random_seed.get_seed(seed)
    if seed1 is None and seed2 is None:
        return 0, 0
    if seed is None and shared_name is not None:
        digest = hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()
        seed2 = int(digest[:8], 16) & 0x7FFFFFFF
    return seed1, seed2


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in a random order (TF's ``tf.RandomShuffleQueue``).

    While the queue is open, ``dequeue`` and ``dequeue_many`` wait until they
    can leave ``min_after_dequeue`` elements behind, so that what comes out
    is well mixed; once it is closed the rest can be drained.

    Args:
        capacity: The most elements the queue holds; negative means unbounded.
        min_after_dequeue: How many elements a dequeue leaves in the open queue
            (at least 0, below ``capacity``: checked when the queue op runs).
        dtypes: One dtype or a list: the dtype of each component.
        shapes: None, one shape, or a list of fully defined shapes, one per
            component. ``dequeue_many`` and ``dequeue_up_to`` need them.
        names: None, a name or a list of names: elements are then dicts.
        seed: The op-level seed (see `tf.set_random_seed`); with the graph
            seed it makes the order of the dequeues reproducible.
        shared_name: If set, every session (or graph) on the same task that
            names it uses the same queue.
        name: The name of the queue op.

    Raises:
        ValueError: for shapes that are not fully defined or lists of the wrong length.
    """

    def __init__(
        self,
        capacity: int,
        min_after_dequeue: int,
        dtypes: _dtypes.DType | list[_dtypes.DType],
        shapes: tensor_shape.TensorShape | list | None = None,
        names: str | list[str] | None = None,
        seed: int | None = None,
        shared_name: str | None = None,
        name: str = "random_shuffle_queue",
    ):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = _queue_seeds(seed, shared_name)
        ref = _queue_op(
            "RandomShuffleQueueV2", name, capacity, dtypes, shapes, shared_name,
            min_after_dequeue=int(min_after_dequeue), seed=seed1, seed2=seed2,
        )  # fmt: skip
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue that batches elements of different sizes by padding (``tf.PaddingFIFOQueue``).

    Every component has a declared shape of known rank whose dimensions may
    be None: elements may differ in size there, and ``dequeue_many`` /
    ``dequeue_up_to`` pad each component with zeros (empty strings for
    strings) to the largest size in the batch.

    Args:
        capacity: The most elements the queue holds; negative means unbounded.
        dtypes: One dtype or a list: the dtype of each component.
        shapes: A list of shapes, one per component; None for a dimension of any size.
        names: None, a name or a list of names: elements are then dicts.
        shared_name: If set, every session (or graph) on the same task that
            names it uses the same queue.
        name: The name of the queue op.

    Raises:
        ValueError: if ``shapes`` is not a list of shapes of known rank, one per dtype.
    """

    def __init__(
        self,
        capacity: int,
        dtypes: _dtypes.DType | list[_dtypes.DType],
        shapes: list,
        names: str | list[str] | None = None,
        shared_name: str | None = None,
        name: str = "padding_fifo_queue",
    ):
        dtypes = _as_type_list(dtypes)
        shapes = _as_shape_list(shapes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(
                f"Shapes must be provided for all components, but received {len(dtypes)} dtypes "
                f"and {len(shapes)} shapes."
            )
        ref = _queue_op("PaddingFIFOQueueV2", name, capacity, dtypes, shapes, shared_name)
        super().__init__(dtypes, shapes, names, ref)


class PriorityQueue(QueueBase):
    """A queue that dequeues the element of lowest priority first (``tf.PriorityQueue``).

    Every element has one more component than ``types``, in front: its
    priority, an int64 scalar (an int64 vector for ``enqueue_many``). A
    dequeue returns it too. ``dequeue_many(n)`` waits until ``n`` elements
    are queued, so that its batch comes out sorted.

    Args:
        capacity: The most elements the queue holds; negative means unbounded.
        types: One dtype or a list: the dtype of each component after the priority.
        shapes: A list of fully defined shapes, one per component after the
            priority (TF1 requires the argument: ``[]`` is one scalar shape).
        names: None or a list of names, one per component including the
            priority: elements are then dicts.
        shared_name: If set, every session (or graph) on the same task that
            names it uses the same queue.
        name: The name of the queue op.

    Raises:
        TypeError: if ``shapes`` is None (TF1's generated op wants a list).
        ValueError: for shapes that are not fully defined or lists of the wrong length.
    """

    def __init__(
        self,
        capacity: int,
        types: _dtypes.DType | list[_dtypes.DType],
        shapes: list | None = None,
        names: list[str] | None = None,
        shared_name: str | None = None,
        name: str = "priority_queue",
    ):
        types = _as_type_list(types)
        shapes = _as_shape_list(shapes)
        if shapes is None:
            raise TypeError(
                "Expected list for 'shapes' argument to 'priority_queue_v2' Op, not None."
            )
        ref = _queue_op("PriorityQueueV2", name, capacity, types, shapes, shared_name)
        priority_shapes = [tensor_shape.TensorShape([])] + shapes if shapes else None
        super().__init__([_dtypes.int64] + types, priority_shapes, names, ref)
