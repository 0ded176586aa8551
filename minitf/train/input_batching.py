"""``tf.train.batch`` and its kin: batching examples through a queue kept full by threads.

Every batcher builds the same three things (`_fill_and_dequeue`): a queue
with the examples' dtypes and shapes (a ``FIFOQueue``, a
``PaddingFIFOQueue`` with ``dynamic_pad``, a ``RandomShuffleQueue`` for the
``shuffle_`` forms), a `QueueRunner` in ``QUEUE_RUNNERS`` whose threads run
the enqueue op, and the ``dequeue_many`` (``dequeue_up_to`` with
``allow_smaller_final_batch``) that the caller runs. `batch` and
`shuffle_batch` run one enqueue op in ``num_threads`` threads; the
``_join`` forms run one op per input, one thread each; the ``maybe_`` forms
enqueue only what ``keep_input`` keeps. Inputs may be lists or dicts; a dict
is queued in the order of its sorted keys and comes back as a dict.

A shuffling batcher's first batch waits until the queue holds
``batch_size + min_after_dequeue`` examples: while the queue is open a
dequeue leaves ``min_after_dequeue`` behind to mix the next ones with. Once
the input ends and the queue is closed, the rest is handed out.

TF source: ``tensorflow/python/training/input.py`` (the producers are in
`minitf.train.input`). As TF, each batcher adds a scalar summary of how full
its queue is, in its name scope: ``batch/fraction_of_32_full`` (the size
over the capacity), or for a shuffling queue
``shuffle_batch/fraction_over_16_of_16_full``: how far the size is above
``min_after_dequeue``, over ``capacity - min_after_dequeue``.
``SparseTensor`` inputs are not supported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.data_flow import data_flow_ops
from minitf.ops.math import math_ops
from minitf.summary import summary
from minitf.train import queue_runner_impl

__all__ = [
    "batch",
    "maybe_batch",
    "batch_join",
    "maybe_batch_join",
    "shuffle_batch",
    "maybe_shuffle_batch",
    "shuffle_batch_join",
    "maybe_shuffle_batch_join",
]


def _flatten(tensor_list_list) -> list:
    return [tensor for tensor_list in tensor_list_list for tensor in tensor_list]


def _as_tensor_list(tensors) -> list:
    """A dict's values in the order of its sorted keys (as strings); a list as it is."""
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    return tensors


def _as_tensor_list_list(tensors_list) -> list:
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        expected_keys = set(tensors_list[0].keys())
        for tensors in tensors_list[1:]:
            if set(tensors.keys()) != expected_keys:
                raise ValueError("All dictionaries in tensors_list must have the same keys")
        return [_as_tensor_list(tensors) for tensors in tensors_list]
    return tensors_list


def _as_original_type(original_tensors, tensor_list):
    """The dequeued tensors in the form of the input: a dict for a dict, else as dequeued."""
    if isinstance(original_tensors, dict):
        if len(original_tensors) == 1:
            tensor_list = [tensor_list]  # a one-component queue dequeues a tensor, not a list
        return {k: tensor_list[i] for i, k in enumerate(sorted(original_tensors, key=str))}
    return tensor_list


def _validate(tensor_list, what: str) -> list[ops.Tensor]:
    tensor_list = ops.convert_n_to_tensor(tensor_list)
    if not tensor_list:
        raise ValueError(f"Expected at least one tensor in {what}().")
    return tensor_list


def _validate_keep_input(keep_input, enqueue_many: bool) -> ops.Tensor:
    """``keep_input`` as a tensor: a scalar, or a vector (one flag per example) with enqueue_many.

    Raises:
        ValueError: if its rank is unknown, above 1, or 1 without ``enqueue_many``.
    """
    keep_input = ops.convert_to_tensor(keep_input)
    ndims = keep_input.get_shape().ndims
    if ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _dtypes(tensor_list_list) -> list[dtypes.DType]:
    all_types = [[t.dtype for t in tl] for tl in tensor_list_list]
    types = all_types[0]
    for other_types in all_types[1:]:
        if other_types != types:
            raise TypeError(
                "Expected types to be consistent: "
                f"{', '.join(x.name for x in types)} vs. {', '.join(x.name for x in other_types)}."
            )
    return types


def _merge_shapes(shape_list, enqueue_many: bool) -> list:
    # As in TF, the shapes must be compatible but the first one is kept as it
    # is: TF's merge_with returns the merge, and input.py drops it.
    shape_list = [tensor_shape.as_shape(s) for s in shape_list]
    if enqueue_many:
        shape_list = [s.with_rank_at_least(1)[1:] for s in shape_list]
    merged_shape = shape_list[0]
    for s in shape_list[1:]:
        merged_shape.merge_with(s)
    return merged_shape.as_list()


def _shapes(tensor_list_list, shapes, enqueue_many: bool):
    """The queue's shapes: ``shapes`` if given, else those of the first list's tensors.

    Raises:
        ValueError: if a tensor's rank is unknown, or the lists' shapes do not fit.
    """
    if shapes is not None:
        return shapes
    for tl in tensor_list_list:
        for t in tl:
            if t.get_shape().ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {t}")
    return [
        _merge_shapes([tl[i].get_shape().as_list() for tl in tensor_list_list], enqueue_many)
        for i in range(len(tensor_list_list[0]))
    ]


def _smart_cond(pred: ops.Tensor, true_fn, false_fn):
    """``true_fn()`` or ``false_fn()`` when ``pred`` is known while building, else `tf.cond`."""
    value = tensor_util.constant_value(pred)
    if value is not None:
        return true_fn() if value else false_fn()
    return control_flow_ops.cond(pred, true_fn, false_fn)


def _select_which_to_enqueue(tensor_list, keep_input: ops.Tensor) -> list[ops.Tensor]:
    """The examples of a batch whose ``keep_input`` flag is true."""
    select = math_ops.cast(keep_input, dtypes.int32)
    return [array_ops.dynamic_partition(x, select, num_partitions=2)[1] for x in tensor_list]


def _enqueue_op(queue, tensor_list, enqueue_many: bool, keep_input: ops.Tensor):
    """The op that enqueues ``tensor_list`` into ``queue`` if ``keep_input`` says so."""
    enqueue_fn = queue.enqueue_many if enqueue_many else queue.enqueue
    if keep_input.get_shape().ndims == 1:
        return enqueue_fn(_select_which_to_enqueue(tensor_list, keep_input))
    return _smart_cond(keep_input, lambda: enqueue_fn(tensor_list), control_flow_ops.no_op)


def _fill_and_dequeue(
    queue_kind: _QueueKind,
    tensor_list_list: list[list[ops.Tensor]],
    threads_per_list: int,
    batch_size: int | ops.Tensor,
    keep_input: bool | ops.Tensor,
    enqueue_many: bool,
    shapes: list | None,
    allow_smaller_final_batch: bool,
    name: str,
) -> ops.Tensor | list[ops.Tensor]:
    """The core of every batcher: the queue, its runner, and the dequeue of a batch.

    Args:
        queue_kind: How to make the queue and sum up how full it is.
        tensor_list_list: One list of tensors per enqueue op.
        threads_per_list: How many threads run each list's enqueue op.
        batch_size: The size of a dequeued batch.
        keep_input: Whether (per example with ``enqueue_many``) to enqueue.
        enqueue_many: Whether each list holds a batch of examples.
        shapes: The shapes of an example, or None to infer them.
        allow_smaller_final_batch: Whether to dequeue up to ``batch_size``.
        name: The name of the dequeue op (the batcher's scope).

    Returns:
        The dequeued batch: a tensor (one component) or a list.
    """
    keep_input = _validate_keep_input(keep_input, enqueue_many)
    types = _dtypes(tensor_list_list)
    shapes = _shapes(tensor_list_list, shapes, enqueue_many)
    queue = queue_kind.make(types, shapes)
    # One op per list, run by threads_per_list threads (the same op, not copies).
    enqueue_ops = [
        _enqueue_op(queue, tensor_list, enqueue_many, keep_input)
        for tensor_list in tensor_list_list
    ] * threads_per_list
    queue_runner_impl.add_queue_runner(queue_runner_impl.QueueRunner(queue, enqueue_ops))
    queue_kind.summarize_fullness(queue)
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


class _QueueKind(NamedTuple):
    """How a batcher makes its queue, ``make(dtypes, shapes)``, and sums up how full it is."""

    make: Callable
    summarize_fullness: Callable


def _fifo_maker(dynamic_pad: bool, capacity: int, shared_name: str | None) -> _QueueKind:
    def make_queue(types, shapes):
        if dynamic_pad:  # dimensions of None are padded to the longest of each batch
            return data_flow_ops.PaddingFIFOQueue(
                capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name
            )
        return data_flow_ops.FIFOQueue(
            capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name
        )

    def summarize_fullness(queue):
        full = math_ops.cast(queue.size(), dtypes.float32) * (1.0 / capacity)
        summary.scalar(f"fraction_of_{capacity}_full", full)

    return _QueueKind(make_queue, summarize_fullness)


def _shuffle_maker(
    capacity: int, min_after_dequeue: int, seed, shared_name: str | None
) -> _QueueKind:
    def make_queue(types, shapes):
        return data_flow_ops.RandomShuffleQueue(
            capacity=capacity,
            min_after_dequeue=min_after_dequeue,
            seed=seed,
            dtypes=types,
            shapes=shapes,
            shared_name=shared_name,
        )

    def summarize_fullness(queue):
        # How far above min_after_dequeue: 0 while a dequeue would still wait.
        above = math_ops.maximum(0, queue.size() - min_after_dequeue)
        spare = capacity - min_after_dequeue  # 0 is Python's ZeroDivisionError, as in TF
        full = math_ops.cast(above, dtypes.float32) * (1.0 / spare)
        summary.scalar(f"fraction_over_{min_after_dequeue}_of_{spare}_full", full)

    return _QueueKind(make_queue, summarize_fullness)


def _check_shuffle_capacity(capacity: int, min_after_dequeue: int) -> None:
    if capacity <= min_after_dequeue:
        raise ValueError(
            f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}."
        )


def _batch(
    tensors,
    batch_size,
    keep_input,
    num_threads,
    enqueue_many,
    shapes,
    smaller,
    name,
    default_name,
    queue_kind,
    check=None,
):
    """One input, ``num_threads`` threads enqueuing it: `batch` and `shuffle_batch`."""
    tensor_list = _as_tensor_list(tensors)
    with ops.name_scope(name, default_name, list(tensor_list) + [keep_input]) as name:
        if check:
            check()
        tensor_list = _validate(tensor_list, "batch")
        dequeued = _fill_and_dequeue(
            queue_kind,
            [tensor_list],
            num_threads,
            batch_size,
            keep_input,
            enqueue_many,
            shapes,
            smaller,
            name,
        )
        return _as_original_type(tensors, dequeued)


def _batch_join(
    tensors_list,
    batch_size,
    keep_input,
    enqueue_many,
    shapes,
    smaller,
    name,
    default_name,
    queue_kind,
    check=None,
):
    """Several inputs, one thread each: `batch_join` and `shuffle_batch_join`."""
    tensor_list_list = _as_tensor_list_list(tensors_list)
    with ops.name_scope(name, default_name, _flatten(tensor_list_list) + [keep_input]) as name:
        if check:
            check()
        tensor_list_list = [ops.convert_n_to_tensor(tl) for tl in tensor_list_list]
        dequeued = _fill_and_dequeue(
            queue_kind,
            tensor_list_list,
            1,
            batch_size,
            keep_input,
            enqueue_many,
            shapes,
            smaller,
            name,
        )
        return _as_original_type(tensors_list[0], dequeued)


def batch(
    tensors: list | dict,
    batch_size: int | ops.Tensor,
    num_threads: int = 1,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: list | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """Batches ``tensors`` through a FIFO queue filled by ``num_threads`` threads.

    A `QueueRunner` whose enqueue op enqueues ``tensors`` (one example, or
    with ``enqueue_many`` a batch of examples along dimension 0) is added to
    ``QUEUE_RUNNERS``; the result dequeues ``batch_size`` examples, so an
    example of shape ``[x, y]`` comes out as ``[batch_size, x, y]``. When
    the input raises ``OutOfRangeError`` the queue is closed, and once it is
    drained the result raises ``OutOfRangeError`` (the examples left that
    make less than a batch are dropped, unless ``allow_smaller_final_batch``).

    Args:
        tensors: A list or a dict of tensors (one example, or a batch with ``enqueue_many``).
        batch_size: The number of examples in a batch.
        num_threads: The number of threads that run the enqueue op; with
            more than one the order of examples is not deterministic.
        capacity: The capacity of the queue.
        enqueue_many: Whether ``tensors`` is a batch of examples.
        shapes: The shapes of an example; inferred from ``tensors`` if None.
        dynamic_pad: Whether to use a ``PaddingFIFOQueue``: dimensions of None
            are padded (with 0 or "") to the longest example of each batch.
        allow_smaller_final_batch: Whether the last batch may be smaller (the
            batch dimension of the result is then None).
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations (the scope, and the dequeue op).

    Returns:
        The batch, in the form of ``tensors``: a list, a dict, or a tensor for
        a list of one tensor.

    Raises:
        ValueError: if the shapes are not given and cannot be inferred (the
            rank of a tensor is unknown, or, without ``dynamic_pad``, not fully defined).
    """
    return maybe_batch(
        tensors,
        True,
        batch_size,
        num_threads,
        capacity,
        enqueue_many,
        shapes,
        dynamic_pad,
        allow_smaller_final_batch,
        shared_name,
        name,
    )


def maybe_batch(
    tensors: list | dict,
    keep_input: bool | ops.Tensor,
    batch_size: int | ops.Tensor,
    num_threads: int = 1,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: list | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """`batch`, enqueuing only the examples for which ``keep_input`` is true.

    Args:
        tensors: A list or a dict of tensors.
        keep_input: A bool scalar (whether to enqueue ``tensors``) or, with
            ``enqueue_many``, a bool vector (whether to enqueue each example).
        batch_size: The number of examples in a batch.
        num_threads: The number of threads that run the enqueue op.
        capacity: The capacity of the queue.
        enqueue_many: Whether ``tensors`` is a batch of examples.
        shapes: The shapes of an example; inferred if None.
        dynamic_pad: Whether to pad dimensions of None (``PaddingFIFOQueue``).
        allow_smaller_final_batch: Whether the last batch may be smaller.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The batch, in the form of ``tensors``.

    Raises:
        ValueError: as `batch`, or if ``keep_input`` has an unknown rank, a
            rank above 1, or rank 1 without ``enqueue_many``.
    """
    queue_kind = _fifo_maker(dynamic_pad, capacity, shared_name)
    return _batch(
        tensors,
        batch_size,
        keep_input,
        num_threads,
        enqueue_many,
        shapes,
        allow_smaller_final_batch,
        name,
        "batch",
        queue_kind,
    )


def batch_join(
    tensors_list: list[list | dict],
    batch_size: int | ops.Tensor,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: list | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """Batches examples from several inputs, one thread per input, into one FIFO queue.

    Each ``tensors_list[i]`` (a list, or a dict with the same keys as the
    others) has its own enqueue op and thread; their types and shapes must
    agree. The order of examples within one input is kept.

    Args:
        tensors_list: A list of lists (or dicts) of tensors.
        batch_size: The number of examples in a batch.
        capacity: The capacity of the queue.
        enqueue_many: Whether each input is a batch of examples.
        shapes: The shapes of an example; inferred if None.
        dynamic_pad: Whether to pad dimensions of None (``PaddingFIFOQueue``).
        allow_smaller_final_batch: Whether the last batch may be smaller.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The batch, in the form of ``tensors_list[0]``.

    Raises:
        ValueError: if ``tensors_list`` is empty, its dicts' keys differ, or
            the shapes cannot be inferred or do not fit.
        TypeError: if the inputs' dtypes differ.
    """
    return maybe_batch_join(
        tensors_list,
        True,
        batch_size,
        capacity,
        enqueue_many,
        shapes,
        dynamic_pad,
        allow_smaller_final_batch,
        shared_name,
        name,
    )


def maybe_batch_join(
    tensors_list: list[list | dict],
    keep_input: bool | ops.Tensor,
    batch_size: int | ops.Tensor,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: list | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """`batch_join`, enqueuing only the examples for which ``keep_input`` is true.

    Args:
        tensors_list: A list of lists (or dicts) of tensors.
        keep_input: A bool scalar or, with ``enqueue_many``, a bool vector.
        batch_size: The number of examples in a batch.
        capacity: The capacity of the queue.
        enqueue_many: Whether each input is a batch of examples.
        shapes: The shapes of an example; inferred if None.
        dynamic_pad: Whether to pad dimensions of None (``PaddingFIFOQueue``).
        allow_smaller_final_batch: Whether the last batch may be smaller.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The batch, in the form of ``tensors_list[0]``.
    """
    queue_kind = _fifo_maker(dynamic_pad, capacity, shared_name)
    return _batch_join(
        tensors_list,
        batch_size,
        keep_input,
        enqueue_many,
        shapes,
        allow_smaller_final_batch,
        name,
        "batch_join",
        queue_kind,
    )


def shuffle_batch(
    tensors: list | dict,
    batch_size: int | ops.Tensor,
    capacity: int,
    min_after_dequeue: int,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: list | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """Batches ``tensors`` in a random order, through a ``RandomShuffleQueue``.

    As `batch`, but the queue hands out random elements and, while open,
    keeps at least ``min_after_dequeue`` of them to mix the next ones with:
    the first batch waits until ``batch_size + min_after_dequeue`` examples
    are queued. A larger ``min_after_dequeue`` mixes better and takes longer
    to start. With ``seed`` (or a graph seed) the queue's choices repeat
    from run to run; which examples it chooses among depends on how far the
    threads have filled it, so the order repeats only if that does.

    Args:
        tensors: A list or a dict of tensors.
        batch_size: The number of examples in a batch.
        capacity: The capacity of the queue; more than ``min_after_dequeue``.
        min_after_dequeue: The fewest elements left in the open queue after a dequeue.
        num_threads: The number of threads that run the enqueue op.
        seed: The seed of the queue's shuffling.
        enqueue_many: Whether ``tensors`` is a batch of examples.
        shapes: The shapes of an example; inferred if None.
        allow_smaller_final_batch: Whether the last batch may be smaller.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The batch, in the form of ``tensors``.

    Raises:
        ValueError: if ``capacity <= min_after_dequeue``, or as `batch`.
    """
    return maybe_shuffle_batch(
        tensors,
        batch_size,
        capacity,
        min_after_dequeue,
        True,
        num_threads,
        seed,
        enqueue_many,
        shapes,
        allow_smaller_final_batch,
        shared_name,
        name,
    )


def maybe_shuffle_batch(
    tensors: list | dict,
    batch_size: int | ops.Tensor,
    capacity: int,
    min_after_dequeue: int,
    keep_input: bool | ops.Tensor,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: list | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """`shuffle_batch`, enqueuing only the examples for which ``keep_input`` is true.

    Args:
        tensors: A list or a dict of tensors.
        batch_size: The number of examples in a batch.
        capacity: The capacity of the queue; more than ``min_after_dequeue``.
        min_after_dequeue: The fewest elements left in the open queue after a dequeue.
        keep_input: A bool scalar or, with ``enqueue_many``, a bool vector.
        num_threads: The number of threads that run the enqueue op.
        seed: The seed of the queue's shuffling.
        enqueue_many: Whether ``tensors`` is a batch of examples.
        shapes: The shapes of an example; inferred if None.
        allow_smaller_final_batch: Whether the last batch may be smaller.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The batch, in the form of ``tensors``.

    Raises:
        ValueError: if ``capacity <= min_after_dequeue``, or as `maybe_batch`.
    """
    queue_kind = _shuffle_maker(capacity, min_after_dequeue, seed, shared_name)
    return _batch(
        tensors,
        batch_size,
        keep_input,
        num_threads,
        enqueue_many,
        shapes,
        allow_smaller_final_batch,
        name,
        "shuffle_batch",
        queue_kind,
        check=lambda: _check_shuffle_capacity(capacity, min_after_dequeue),
    )


def shuffle_batch_join(
    tensors_list: list[list | dict],
    batch_size: int | ops.Tensor,
    capacity: int,
    min_after_dequeue: int,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: list | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """Batches examples from several inputs, one thread each, in a random order.

    As `batch_join` with a ``RandomShuffleQueue`` (see `shuffle_batch`). As
    in TF, ``capacity`` is not checked against ``min_after_dequeue`` here:
    the queue op raises ``InvalidArgumentError`` when it runs.

    Args:
        tensors_list: A list of lists (or dicts) of tensors.
        batch_size: The number of examples in a batch.
        capacity: The capacity of the queue.
        min_after_dequeue: The fewest elements left in the open queue after a dequeue.
        seed: The seed of the queue's shuffling.
        enqueue_many: Whether each input is a batch of examples.
        shapes: The shapes of an example; inferred if None.
        allow_smaller_final_batch: Whether the last batch may be smaller.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The batch, in the form of ``tensors_list[0]``.
    """
    return maybe_shuffle_batch_join(
        tensors_list,
        batch_size,
        capacity,
        min_after_dequeue,
        True,
        seed,
        enqueue_many,
        shapes,
        allow_smaller_final_batch,
        shared_name,
        name,
    )


def maybe_shuffle_batch_join(
    tensors_list: list[list | dict],
    batch_size: int | ops.Tensor,
    capacity: int,
    min_after_dequeue: int,
    keep_input: bool | ops.Tensor,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: list | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> ops.Tensor | list[ops.Tensor] | dict[str, ops.Tensor]:
    """`shuffle_batch_join`, enqueuing only the examples for which ``keep_input`` is true.

    Args:
        tensors_list: A list of lists (or dicts) of tensors.
        batch_size: The number of examples in a batch.
        capacity: The capacity of the queue.
        min_after_dequeue: The fewest elements left in the open queue after a dequeue.
        keep_input: A bool scalar or, with ``enqueue_many``, a bool vector.
        seed: The seed of the queue's shuffling.
        enqueue_many: Whether each input is a batch of examples.
        shapes: The shapes of an example; inferred if None.
        allow_smaller_final_batch: Whether the last batch may be smaller.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The batch, in the form of ``tensors_list[0]``.
    """
    # As TF, no check here that capacity > min_after_dequeue: the queue op
    # fails when it runs (InvalidArgumentError); when they are equal the
    # fullness summary's 1 / (capacity - min_after_dequeue) fails while building.
    queue_kind = _shuffle_maker(capacity, min_after_dequeue, seed, shared_name)
    return _batch_join(
        tensors_list,
        batch_size,
        keep_input,
        enqueue_many,
        shapes,
        allow_smaller_final_batch,
        name,
        "shuffle_batch_join",
        queue_kind,
    )
