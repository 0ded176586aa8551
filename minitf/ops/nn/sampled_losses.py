"""Sampled losses over many classes: ``tf.nn.nce_loss`` and ``tf.nn.sampled_softmax_loss``.

Both score each example's true classes and a shared sample of other classes
(`minitf.ops.nn.candidate_sampling_ops`) instead of every class, and subtract
``log`` of each class's expected count in the sample from its logit, as TF's
``_compute_sampled_logits`` does. ``nce_loss`` is a sum of logistic losses,
``sampled_softmax_loss`` a softmax cross entropy over the sampled classes
(where, by default, a sampled class that is also a true class is masked out).
Written in Python over other ops: no kernel or gradient of their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitf.framework import dtypes, ops
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_impl, nn_ops
from minitf.ops.nn.candidate_sampling_ops import (
    compute_accidental_hits,
    log_uniform_candidate_sampler,
)
from minitf.ops.nn.embedding_ops import embedding_lookup
from minitf.ops.sparse.sparse_ops import sparse_to_dense

__all__ = ["nce_loss", "sampled_softmax_loss"]


def _sum_rows(x: ops.Tensor) -> ops.Tensor:
    """The sum of each row of a 2-D tensor, as a matrix product with ones (as TF does)."""
    cols = array_ops.shape(x)[1]
    ones = array_ops.ones(array_ops.stack([cols, 1]), x.dtype)
    return array_ops.reshape(math_ops.matmul(x, ones), [-1])


def _lookup(params, ids, partition_strategy):
    if isinstance(params, (list, tuple)) and len(params) == 1:
        params = params[0]
    return embedding_lookup(params, ids, partition_strategy=partition_strategy)


def _true_logits(inputs, true_w, true_b, num_true: int):
    """``inputs[i] . w[label_ij] + b[label_ij]``: ``[batch, num_true]``."""
    dim = array_ops.shape(true_w)[1:2]
    true_w = array_ops.reshape(true_w, array_ops.concat([[-1, num_true], dim], 0))
    row_dots = math_ops.multiply(array_ops.expand_dims(inputs, 1), true_w)
    dots = array_ops.reshape(row_dots, array_ops.concat([[-1], dim], 0))
    logits = array_ops.reshape(_sum_rows(dots), [-1, num_true])
    return logits + array_ops.reshape(true_b, [-1, num_true])


def _mask_accidental_hits(sampled_logits, labels, sampled, num_true: int, num_sampled: int):
    rows, ids, weights = compute_accidental_hits(labels, sampled, num_true=num_true)
    indices = array_ops.concat(
        [
            array_ops.reshape(math_ops.cast(rows, dtypes.int64), [-1, 1]),
            array_ops.reshape(ids, [-1, 1]),
        ],
        1,
    )
    shape = array_ops.concat(
        [math_ops.cast(array_ops.shape(labels)[:1], dtypes.int64), [num_sampled]], 0
    )
    mask = sparse_to_dense(
        indices,
        shape,
        math_ops.cast(weights, sampled_logits.dtype),
        default_value=0.0,
        validate_indices=False,
    )
    return sampled_logits + mask


def _compute_sampled_logits(
    args: tuple, remove_accidental_hits: bool, partition_strategy: str, name, seed=None
):
    """The logits of the true and the sampled classes, and their target labels.

    ``args`` are the losses' first arguments: ``(weights, biases, labels,
    inputs, num_sampled, num_classes, num_true, sampled_values)``. Each logit
    has the log of its class's expected count subtracted (TF's
    ``subtract_log_q``, which both losses use).
    """
    weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values = args
    with ops.name_scope(name, "compute_sampled_logits", [inputs, labels]):
        labels = math_ops.cast(labels, dtypes.int64)
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                labels, num_true, num_sampled, True, num_classes, seed=seed
            )
        sampled, true_count, sampled_count = (
            array_ops.stop_gradient(ops.convert_to_tensor(s)) for s in sampled_values
        )
        sampled = math_ops.cast(sampled, dtypes.int64)
        all_ids = array_ops.concat([labels_flat, sampled], 0)
        n_true = array_ops.size(labels_flat)
        all_w = _lookup(weights, all_ids, partition_strategy)
        true_w, sampled_w = all_w[:n_true], all_w[n_true:]
        all_b = _lookup(biases, all_ids, partition_strategy)
        true_b, sampled_b = all_b[:n_true], all_b[n_true:]
        inputs = ops.convert_to_tensor(inputs, name="inputs")
        sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True) + sampled_b
        true_logits = _true_logits(inputs, true_w, true_b, num_true)
        if remove_accidental_hits:
            sampled_logits = _mask_accidental_hits(
                sampled_logits, labels, sampled, num_true, num_sampled
            )
        true_logits -= math_ops.log(math_ops.cast(true_count, true_logits.dtype))
        sampled_logits -= math_ops.log(math_ops.cast(sampled_count, sampled_logits.dtype))
        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat(
            [
                array_ops.ones_like(true_logits) / np.float64(num_true).astype(np.float32),
                array_ops.zeros_like(sampled_logits),
            ],
            1,
        )
        return out_logits, out_labels


def nce_loss(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    remove_accidental_hits: bool = False,
    partition_strategy: str = "mod",
    name: str | None = "nce_loss",
) -> ops.Tensor:
    """Noise-contrastive estimation loss: logistic losses of true against sampled classes.

    Args:
        weights: The class embeddings ``[num_classes, dim]`` (or a list of shards).
        biases: The class biases ``[num_classes]``.
        labels: int64 ``[batch, num_true]``: the target classes.
        inputs: ``[batch, dim]``: the examples' activations.
        num_sampled: How many classes to sample per batch.
        num_classes: The number of classes.
        num_true: Target classes per example.
        sampled_values: A ``(sampled, true_expected_count, sampled_expected_count)``
            triple to use instead of sampling (default: `log_uniform_candidate_sampler`).
        remove_accidental_hits: Whether to mask sampled classes that are true classes.
        partition_strategy: How sharded ``weights`` are split (``"mod"`` or ``"div"``).
        name: A name for the operation.

    Returns:
        The loss of each example, ``[batch]``.
    """
    logits, labels = _compute_sampled_logits(
        (weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values),
        remove_accidental_hits,
        partition_strategy,
        name,
    )
    losses = nn_impl.sigmoid_cross_entropy_with_logits(
        labels=labels, logits=logits, name="sampled_losses"
    )
    return _sum_rows(losses)


def sampled_softmax_loss(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    remove_accidental_hits: bool = True,
    partition_strategy: str = "mod",
    name: str | None = "sampled_softmax_loss",
    seed: int | None = None,
) -> ops.Tensor:
    """Softmax cross entropy over the true classes and a sample of the others.

    Args:
        weights: The class embeddings ``[num_classes, dim]`` (or a list of shards).
        biases: The class biases ``[num_classes]``.
        labels: int64 ``[batch, num_true]``: the target classes.
        inputs: ``[batch, dim]``: the examples' activations.
        num_sampled: How many classes to sample per batch.
        num_classes: The number of classes.
        num_true: Target classes per example.
        sampled_values: A ``(sampled, true_expected_count, sampled_expected_count)``
            triple to use instead of sampling (default: `log_uniform_candidate_sampler`).
        remove_accidental_hits: Whether to mask sampled classes that are true classes.
        partition_strategy: How sharded ``weights`` are split (``"mod"`` or ``"div"``).
        name: A name for the operation.
        seed: The sampler's op-level seed.

    Returns:
        The loss of each example, ``[batch]``.
    """
    logits, labels = _compute_sampled_logits(
        (weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values),
        remove_accidental_hits,
        partition_strategy,
        name,
        seed,
    )
    labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return nn_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
