"""``tf.train`` input producers: the first queue of a TF1 input pipeline.

Before ``tf.data``, TF1 read its input through a chain of queues, each kept
full by a `QueueRunner` in the graph's ``QUEUE_RUNNERS`` collection. A
*producer* (`input_producer`, `string_input_producer`,
`range_input_producer`, `slice_input_producer`) puts the rows of a tensor
into a ``FIFOQueue``, shuffled per epoch if asked, for ``num_epochs``
epochs; `limit_epochs` counts the epochs in a local variable whose
``CountUpTo`` raises ``OutOfRangeError`` after the last one. The batchers
that follow are in `minitf.train.input_batching`.

When the input ends, the enqueue op raises ``OutOfRangeError``, the runner
closes its queue, and the next stage drains what is left and then raises
``OutOfRangeError`` itself: the end of input travels down the chain.

As TF, `string_input_producer` and `range_input_producer` add a scalar
summary of how full their queue is (its size over its capacity), tagged
``input_producer/fraction_of_32_full`` in the default name scope.

TF source: ``tensorflow/python/training/input.py``.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import array_ops
from minitf.ops.data_flow import data_flow_ops
from minitf.ops.debugging import logging_ops
from minitf.ops.math import math_ops
from minitf.ops.random import random_ops
from minitf.ops.state import variables
from minitf.summary import summary
from minitf.train import queue_runner_impl

__all__ = [
    "limit_epochs",
    "input_producer",
    "string_input_producer",
    "range_input_producer",
    "slice_input_producer",
]


def limit_epochs(
    tensor: ops.Tensor, num_epochs: int | None = None, name: str | None = None
) -> ops.Tensor:
    """Returns ``tensor`` for ``num_epochs`` evaluations, then raises ``OutOfRangeError``.

    The count is kept in a local variable ``epochs`` (collection
    ``LOCAL_VARIABLES``): run `tf.local_variables_initializer` first.

    Args:
        tensor: Any tensor.
        num_epochs: A positive integer, or None for no limit (``tensor`` is returned as is).
        name: A name for the operations (optional).

    Returns:
        ``tensor``, or an identity of it that first counts one epoch.

    Raises:
        ValueError: if ``num_epochs`` is not positive.
    """
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with ops.name_scope(name, "limit_epochs", [tensor]) as name:
        zero64 = ops.convert_to_tensor(0, dtype=dtypes.int64, name="Const")
        epochs = variables.Variable(
            zero64, name="epochs", trainable=False, collections=[GraphKeys.LOCAL_VARIABLES]
        )
        counter = epochs.count_up_to(num_epochs)
        with ops.control_dependencies([counter]):
            return array_ops.identity(tensor, name=name)


def input_producer(
    input_tensor: Any,
    element_shape: tensor_shape.TensorShape | list | None = None,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    summary_name: str | None = None,
    name: str | None = None,
    cancel_op: ops.Operation | None = None,
) -> data_flow_ops.FIFOQueue:
    """Puts the rows of ``input_tensor`` into a queue, ``num_epochs`` times, for a pipeline.

    A `QueueRunner` that runs ``enqueue_many`` of the (shuffled) rows is added
    to ``QUEUE_RUNNERS``. With ``num_epochs``, a local variable counts the
    epochs: run `tf.local_variables_initializer` first.

    Args:
        input_tensor: A tensor of rank >= 1 whose rows are produced.
        element_shape: The shape of a row, if ``input_tensor``'s static shape does not give it.
        num_epochs: How many times to produce each row before ``OutOfRangeError``; None: forever.
        shuffle: Whether to shuffle the rows within each epoch.
        seed: The seed of the shuffle.
        capacity: The capacity of the queue.
        shared_name: If set, the queue is shared under this name across sessions.
        summary_name: If set, a scalar summary of the queue's size over its
            capacity is added under this name (in the producer's name scope).
        name: A name for the queue.
        cancel_op: The op the runner runs on a stop request (default: close and cancel).

    Returns:
        The `FIFOQueue` of rows.

    Raises:
        ValueError: if the shape of a row is not fully defined.
    """
    with ops.name_scope(name, "input_producer", [input_tensor]):
        input_tensor = ops.convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.get_shape()[1:].merge_with(
            tensor_shape.as_shape(element_shape)
        )
        if not element_shape.is_fully_defined():
            raise ValueError(
                "Either `input_tensor` must have a fully defined shape or `element_shape` "
                "must be specified"
            )
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = data_flow_ops.FIFOQueue(
            capacity=capacity,
            dtypes=[input_tensor.dtype.base_dtype],
            shapes=[element_shape],
            shared_name=shared_name,
            name=name,
        )
        enqueue = queue.enqueue_many([input_tensor])
        queue_runner_impl.add_queue_runner(
            queue_runner_impl.QueueRunner(queue, [enqueue], cancel_op=cancel_op)
        )
        if summary_name is not None:
            full = math_ops.cast(queue.size(), dtypes.float32) * (1.0 / capacity)
            summary.scalar(summary_name, full)
        return queue


def string_input_producer(
    string_tensor: Any,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
    cancel_op: ops.Operation | None = None,
) -> data_flow_ops.FIFOQueue:
    """Puts strings (typically file names) into a queue, ``num_epochs`` times; see `input_producer`.

    Args:
        string_tensor: A 1-D string tensor (or list of strings).
        num_epochs: How many times to produce each string; None: forever.
        shuffle: Whether to shuffle the strings within each epoch.
        seed: The seed of the shuffle.
        capacity: The capacity of the queue.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.
        cancel_op: The op the runner runs on a stop request.

    Returns:
        The `FIFOQueue` of strings.

    Raises:
        ValueError: if ``string_tensor`` is an empty Python list. An empty
            tensor fails when the runner runs: its ``Assert`` raises
            ``InvalidArgumentError``, which stops the coordinator and closes the queue.
    """
    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, ops.Tensor) and not string_tensor:
        raise ValueError(not_null_err)
    with ops.name_scope(name, "input_producer", [string_tensor]) as name:
        string_tensor = ops.convert_to_tensor(string_tensor, dtype=dtypes.string)
        not_empty = math_ops.greater(array_ops.size(string_tensor), 0)
        with ops.control_dependencies([logging_ops.Assert(not_empty, [not_null_err])]):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(
            input_tensor=string_tensor,
            element_shape=[],
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
            name=name,
            summary_name=f"fraction_of_{capacity}_full",
            cancel_op=cancel_op,
        )


def range_input_producer(
    limit: Any,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> data_flow_ops.FIFOQueue:
    """Puts the integers ``0 .. limit-1`` into a queue, ``num_epochs`` times; see `input_producer`.

    Args:
        limit: An int32 scalar.
        num_epochs: How many times to produce each integer; None: forever.
        shuffle: Whether to shuffle the integers within each epoch.
        seed: The seed of the shuffle.
        capacity: The capacity of the queue.
        shared_name: If set, the queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        The `FIFOQueue` of integers.
    """
    with ops.name_scope(name, "input_producer", [limit]) as name:
        range_tensor = math_ops.range(limit)
        return input_producer(
            range_tensor,
            [],
            num_epochs,
            shuffle,
            seed,
            capacity,
            shared_name,
            f"fraction_of_{capacity}_full",
            name,
        )


def slice_input_producer(
    tensor_list: list,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> list[ops.Tensor]:
    """Produces one slice (along dimension 0) of every tensor of ``tensor_list`` at a time.

    A `range_input_producer` queues the indices; each evaluation of the
    result dequeues one index and gathers that row of every tensor.

    Args:
        tensor_list: Tensors with the same size in dimension 0.
        num_epochs: How many times to produce each slice; None: forever.
        shuffle: Whether to shuffle the slices within each epoch.
        seed: The seed of the shuffle.
        capacity: The capacity of the index queue.
        shared_name: If set, the index queue is shared under this name across sessions.
        name: A name for the operations.

    Returns:
        One tensor per tensor of ``tensor_list``: a row of shape ``[a, ..., z]``
        of a tensor of shape ``[N, a, ..., z]``.

    Raises:
        ValueError: if ``tensor_list`` is empty.
    """
    with ops.name_scope(name, "input_producer", tensor_list):
        tensor_list = ops.convert_n_to_tensor(tensor_list)
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(
            range_size,
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
        )
        index = queue.dequeue()
        return [array_ops.gather(t, index) for t in tensor_list]
