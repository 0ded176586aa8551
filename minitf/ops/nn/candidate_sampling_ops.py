"""Candidate sampling for sampled losses: ``tf.nn.log_uniform_candidate_sampler``.

``LogUniformCandidateSampler`` draws class ids from the log-uniform (Zipfian)
distribution ``P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)``, which
fits classes sorted by decreasing frequency. With ``unique=True`` it draws
until it has ``num_sampled`` distinct ids, and the expected count of a class
is ``1 - (1 - P(c)) ** tries`` for the number of draws it took; otherwise
``num_sampled * P(c)``. Like minitf's other random ops, the kernel keeps one
numpy generator per op and session, seeded from ``(seed, seed2)``: the ids are
deterministic given the seeds but are not TF's.

``ComputeAccidentalHits`` finds the sampled ids that are also a row's true
classes, for ``sampled_softmax_loss`` to mask them out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops, random_seed, tensor_shape
from minitf.framework.op_registry import register_kernel
from minitf.ops.op_def_library import create_op

__all__ = ["log_uniform_candidate_sampler"]


def log_uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor, ops.Tensor]:
    """Samples ``num_sampled`` class ids in ``[0, range_max)`` from a log-uniform distribution.

    Args:
        true_classes: An int64 tensor ``[batch, num_true]``: the target classes.
        num_true: The number of target classes per example.
        num_sampled: How many ids to sample.
        unique: Whether the sampled ids are all different.
        range_max: The number of classes.
        seed: The op-level random seed.
        name: A name for the operation.

    Returns:
        ``(sampled_candidates, true_expected_count, sampled_expected_count)``:
        int64 ``[num_sampled]``, float32 ``[batch, num_true]`` and float32
        ``[num_sampled]``.

    Raises:
        ValueError: if ``true_classes`` is not ``[batch, num_true]``.
    """
    with ops.name_scope(name, "LogUniformCandidateSampler", [true_classes]) as scope:
        true_classes = ops.convert_to_tensor(true_classes, dtype=dtypes.int64, name="true_classes")
        shape = true_classes.get_shape().with_rank(2)
        if shape[1].value is not None and shape[1].value != num_true:
            raise ValueError(
                f"true_classes must have num_true columns, expected: {shape[1].value} was: "
                f"{num_true}"
            )
        seed1, seed2 = random_seed.get_seed(seed)
        attrs = {
            "num_true": int(num_true),
            "num_sampled": int(num_sampled),
            "unique": bool(unique),
            "range_max": int(range_max),
            "seed": seed1 or 0,
            "seed2": seed2 or 0,
        }
        sampled = tensor_shape.TensorShape([int(num_sampled)])
        op = create_op(
            "LogUniformCandidateSampler",
            [true_classes],
            [dtypes.int64, dtypes.float32, dtypes.float32],
            scope,
            attrs,
            [sampled, shape, sampled],
        )
    return tuple(op.outputs)


def log_uniform_probability(classes: np.ndarray, range_max: int) -> np.ndarray:
    """``P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1)``."""
    classes = np.asarray(classes, np.float64)
    return (np.log(classes + 2) - np.log(classes + 1)) / np.log(range_max + 1)


def _draw(rng: np.random.Generator, count: int, range_max: int) -> np.ndarray:
    values = np.exp(rng.random(count) * np.log(range_max + 1)).astype(np.int64) - 1
    return np.minimum(values, range_max - 1)


def _sample_unique(rng: np.random.Generator, num_sampled: int, range_max: int):
    """``num_sampled`` distinct ids, in the order first drawn, and the number of draws."""
    chosen: dict[int, None] = {}
    tries = 0
    while len(chosen) < num_sampled:
        for value in _draw(rng, num_sampled - len(chosen), range_max):
            tries += 1
            chosen.setdefault(int(value))
            if len(chosen) == num_sampled:
                break
    return np.fromiter(chosen, np.int64, num_sampled), tries


def _expected_count(p: np.ndarray, unique: bool, num_sampled: int, tries: int) -> np.ndarray:
    if unique:
        return (-np.expm1(tries * np.log1p(-p))).astype(np.float32)
    return (p * num_sampled).astype(np.float32)


@register_kernel("LogUniformCandidateSampler")
def _log_uniform_kernel(op):
    num_sampled, unique = op.get_attr("num_sampled"), op.get_attr("unique")
    range_max = op.get_attr("range_max")
    seed, seed2 = op.get_attr("seed"), op.get_attr("seed2")
    rng = np.random.default_rng([seed, seed2]) if seed or seed2 else np.random.default_rng()

    def compute(ctx, true_classes):
        if unique and num_sampled > range_max:
            raise errors.InvalidArgumentError(None, None, "Sampler's range is too small.")
        if unique:
            sampled, tries = _sample_unique(rng, num_sampled, range_max)
        else:
            sampled, tries = _draw(rng, num_sampled, range_max), num_sampled
        true_count = _expected_count(
            log_uniform_probability(true_classes, range_max), unique, num_sampled, tries
        )
        sampled_count = _expected_count(
            log_uniform_probability(sampled, range_max), unique, num_sampled, tries
        )
        return sampled, true_count, sampled_count

    return compute


def compute_accidental_hits(
    true_classes: Any,
    sampled_candidates: Any,
    num_true: int,
    seed: int | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor, ops.Tensor]:
    """Where the sampled ids are also true classes (op type ``ComputeAccidentalHits``).

    Args:
        true_classes: An int64 tensor ``[batch, num_true]``.
        sampled_candidates: An int64 tensor ``[num_sampled]``.
        num_true: The number of true classes per example.
        seed: Unused; kept for TF's signature.
        name: A name for the operation.

    Returns:
        ``(indices, ids, weights)``: for each hit, its row (int32), its
        position among the sampled ids (int64) and ``-FLOAT_MAX`` (float32).
    """
    del seed
    op_type = "ComputeAccidentalHits"
    with ops.name_scope(name, op_type, [true_classes, sampled_candidates]) as scope:
        true_classes = ops.convert_to_tensor(true_classes, dtype=dtypes.int64)
        sampled = ops.convert_to_tensor(sampled_candidates, dtype=dtypes.int64)
        hits = tensor_shape.TensorShape([None])
        op = create_op(
            op_type,
            [true_classes, sampled],
            [dtypes.int32, dtypes.int64, dtypes.float32],
            scope,
            {"num_true": int(num_true), "seed": 0, "seed2": 0},
            [hits, hits, hits],
        )
    return tuple(op.outputs)


@register_kernel("ComputeAccidentalHits")
def _accidental_hits_kernel(op):
    def compute(ctx, true_classes, sampled):
        rows, ids = np.nonzero((true_classes[:, :, None] == sampled[None, None, :]).any(axis=1))
        weights = np.full(rows.shape, -np.finfo(np.float32).max, np.float32)
        return rows.astype(np.int32), ids.astype(np.int64), weights

    return compute


ops.NotDifferentiable("ComputeAccidentalHits")
ops.NotDifferentiable("LogUniformCandidateSampler")
