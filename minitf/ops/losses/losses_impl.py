"""``tf.losses``: per-element losses reduced by weights (TF's ``losses/losses_impl.py``).

Every loss computes an element-wise loss under its own name scope and hands
it to `compute_weighted_loss`, which multiplies it by the weights, reduces it
as ``reduction`` says and adds the result to ``loss_collection``. The default
reduction, ``SUM_BY_NONZERO_WEIGHTS``, divides the weighted sum by the number
of elements whose weight is not zero (0 when all weights are 0).
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import array_ops
from minitf.ops.losses import util
from minitf.ops.losses.weights_broadcast_ops import assert_broadcastable, broadcast_weights
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_ops

__all__ = [
    "Reduction",
    "absolute_difference",
    "compute_weighted_loss",
    "cosine_distance",
    "hinge_loss",
    "huber_loss",
    "log_loss",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]


class Reduction:
    """How `compute_weighted_loss` reduces the weighted losses (TF's string keys)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        """Every reduction key."""
        return (
            cls.NONE,
            cls.SUM,
            cls.MEAN,
            cls.SUM_OVER_BATCH_SIZE,
            cls.SUM_OVER_NONZERO_WEIGHTS,
            cls.SUM_BY_NONZERO_WEIGHTS,
        )

    @classmethod
    def validate(cls, key: str) -> None:
        """Raises ``ValueError`` unless ``key`` is a reduction key."""
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


def _safe_mean(numerator: ops.Tensor, denominator: ops.Tensor) -> ops.Tensor:
    """``numerator / denominator``, 0 where the denominator is 0 (TF's ``div_no_nan``)."""
    positive = math_ops.greater(denominator, 0.0)
    safe = array_ops.where(positive, denominator, array_ops.ones_like(denominator))
    return array_ops.where(
        positive, math_ops.truediv(numerator, safe), array_ops.zeros_like(numerator), name="value"
    )


def _num_elements(losses: ops.Tensor) -> ops.Tensor:
    with ops.name_scope(None, "num_elements") as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), dtype=losses.dtype)


def _num_present(losses: ops.Tensor, weights) -> ops.Tensor:
    """The number of elements of ``losses`` whose broadcast weight is not 0."""
    with ops.name_scope(None, "num_present", (losses, weights)) as scope:
        weights = math_ops.cast(weights, dtype=dtypes.float32)
        present = array_ops.where(
            math_ops.equal(weights, 0.0),
            array_ops.zeros_like(weights),
            array_ops.ones_like(weights),
        )
        present = broadcast_weights(present, losses)
        return math_ops.reduce_sum(present, name=scope)


def _reduce(weighted: ops.Tensor, losses: ops.Tensor, weights, reduction: str) -> ops.Tensor:
    if reduction == Reduction.NONE:
        return weighted
    total = math_ops.reduce_sum(weighted)
    if reduction == Reduction.MEAN:
        all_weights = math_ops.multiply(array_ops.ones_like(losses), weights)
        return _safe_mean(total, math_ops.reduce_sum(all_weights))
    if reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
        return _safe_mean(total, _num_present(losses, weights))
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        return _safe_mean(total, _num_elements(losses))
    return total


def compute_weighted_loss(
    losses: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """Weighs ``losses`` and reduces them as ``reduction`` says.

    Args:
        losses: The element-wise losses.
        weights: A scalar, or a tensor of the losses' rank whose dimensions are
            1 or the losses' (TF1's broadcasting rule).
        scope: The name scope (default ``weighted_loss``).
        loss_collection: Where the loss is added (None: nowhere).
        reduction: A `Reduction` key.

    Returns:
        The loss, of the losses' dtype: a scalar, or the losses' shape for ``NONE``.

    Raises:
        ValueError: on an unknown reduction or weights that cannot broadcast.
    """
    Reduction.validate(reduction)
    with ops.name_scope(scope, "weighted_loss", (losses, weights)):
        losses = ops.convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = math_ops.cast(losses, dtype=dtypes.float32)
        weights = math_ops.cast(weights, dtype=dtypes.float32)
        assert_broadcastable(weights, losses)
        weighted = math_ops.multiply(losses, weights)
        loss = math_ops.cast(_reduce(weighted, losses, weights, reduction), input_dtype)
        util.add_loss(loss, loss_collection)
        return loss


def _check_not_none(**tensors) -> None:
    for name, value in tensors.items():
        if value is None:
            raise ValueError(f"{name} must not be None.")


def _float_pair(labels, predictions) -> tuple[ops.Tensor, ops.Tensor]:
    """Both as float32, their static shapes checked for compatibility."""
    predictions = math_ops.cast(predictions, dtype=dtypes.float32)
    labels = math_ops.cast(labels, dtype=dtypes.float32)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    return labels, predictions


def _float_loss(fn, default_name: str, labels, predictions, weights, scope, *reduce_args):
    """Builds ``fn(labels, predictions)`` on float32 inputs and weighs it.

    ``reduce_args`` are the loss collection and the reduction; ``fn``'s second
    argument is called ``logits`` in the hinge loss, hence its name in the check.
    """
    second = "logits" if default_name == "hinge_loss" else "predictions"
    _check_not_none(labels=labels, **{second: predictions})
    with ops.name_scope(scope, default_name, (predictions, labels, weights)) as scope:
        labels, predictions = _float_pair(labels, predictions)
        return compute_weighted_loss(fn(labels, predictions), weights, scope, *reduce_args)


def absolute_difference(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted absolute difference ``|predictions - labels|``.

    Args:
        labels: The targets.
        predictions: The predictions, of the labels' shape.
        weights: See `compute_weighted_loss`.
        scope: The name scope (default ``absolute_difference``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss (see `compute_weighted_loss`).

    Raises:
        ValueError: if an input is None, the shapes differ or the weights do not broadcast.
    """

    def losses(labels, predictions):
        return math_ops.abs(math_ops.subtract(predictions, labels))

    return _float_loss(
        losses,
        "absolute_difference",
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def cosine_distance(
    labels: Any,
    predictions: Any,
    axis: int | None = None,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
    dim: int | None = None,
) -> ops.Tensor:
    """The weighted cosine distance ``1 - sum(labels * predictions, axis)`` of unit vectors.

    Args:
        labels: Unit-normalized targets.
        predictions: Unit-normalized predictions, of the labels' shape.
        axis: The dimension of the vectors (required).
        weights: See `compute_weighted_loss`; the losses keep ``axis`` with size 1.
        scope: The name scope (default ``cosine_distance_loss``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.
        dim: The deprecated name of ``axis``.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if ``axis`` is missing, an input is None or the shapes differ.
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")

    def losses(labels, predictions):
        products = math_ops.multiply(predictions, labels)
        return 1 - math_ops.reduce_sum(products, axis=(axis,), keepdims=True)

    return _float_loss(
        losses,
        "cosine_distance_loss",
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def hinge_loss(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted hinge loss ``max(0, 1 - (2 labels - 1) logits)`` for labels in {0, 1}.

    Args:
        labels: Targets 0 or 1.
        logits: The logits, of the labels' shape.
        weights: See `compute_weighted_loss`.
        scope: The name scope (default ``hinge_loss``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if an input is None or the shapes differ.
    """

    def losses(labels, logits):
        all_ones = array_ops.ones_like(labels)
        signs = math_ops.subtract(2 * labels, all_ones)
        return nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(signs, logits)))

    return _float_loss(
        losses, "hinge_loss", labels, logits, weights, scope, loss_collection, reduction
    )


def huber_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    delta: float = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted Huber loss: ``0.5 x^2`` for ``|x| <= delta``, else ``delta (|x| - delta/2)``.

    Args:
        labels: The targets.
        predictions: The predictions, of the labels' shape.
        weights: See `compute_weighted_loss`.
        delta: Where the loss turns from quadratic to linear.
        scope: The name scope (default ``huber_loss``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if an input is None or the shapes differ.
    """

    def losses(labels, predictions):
        abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        return math_ops.add(
            math_ops.multiply(0.5, math_ops.multiply(quadratic, quadratic)),
            math_ops.multiply(delta, linear),
        )

    return _float_loss(
        losses, "huber_loss", labels, predictions, weights, scope, loss_collection, reduction
    )


def log_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    epsilon: float = 1e-7,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted log loss ``-y log(p + eps) - (1 - y) log(1 - p + eps)``.

    Args:
        labels: The targets.
        predictions: Probabilities, of the labels' shape.
        weights: See `compute_weighted_loss`.
        epsilon: Added inside the logarithms.
        scope: The name scope (default ``log_loss``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if an input is None or the shapes differ.
    """

    def losses(labels, predictions):
        positive = math_ops.multiply(labels, math_ops.log(predictions + epsilon))
        negative = math_ops.multiply(1 - labels, math_ops.log(1 - predictions + epsilon))
        return -positive - negative

    return _float_loss(
        losses, "log_loss", labels, predictions, weights, scope, loss_collection, reduction
    )


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted squared error ``(predictions - labels)^2``.

    Args:
        labels: The targets.
        predictions: The predictions, of the labels' shape.
        weights: See `compute_weighted_loss`.
        scope: The name scope (default ``mean_squared_error``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if an input is None or the shapes differ.
    """

    def losses(labels, predictions):
        return math_ops.squared_difference(predictions, labels)

    return _float_loss(
        losses,
        "mean_squared_error",
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def _logits_and_labels(labels, logits) -> tuple[ops.Tensor, ops.Tensor]:
    logits = ops.convert_to_tensor(logits)
    labels = math_ops.cast(labels, logits.dtype)
    logits.get_shape().assert_is_compatible_with(labels.get_shape())
    return labels, logits


def sigmoid_cross_entropy(
    multi_class_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted `tf.nn.sigmoid_cross_entropy_with_logits`.

    With ``label_smoothing`` ``s`` the labels become ``y (1 - s) + s / 2``.

    Args:
        multi_class_labels: Targets in [0, 1], of the logits' shape.
        logits: The logits.
        weights: See `compute_weighted_loss`.
        label_smoothing: Smoothing in [0, 1].
        scope: The name scope (default ``sigmoid_cross_entropy_loss``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if an input is None or the shapes differ.
    """
    _check_not_none(multi_class_labels=multi_class_labels, logits=logits)
    inputs = (logits, multi_class_labels, weights)
    with ops.name_scope(scope, "sigmoid_cross_entropy_loss", inputs) as scope:
        labels, logits = _logits_and_labels(multi_class_labels, logits)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_ops.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(
    onehot_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted `tf.nn.softmax_cross_entropy_with_logits_v2` (labels get no gradient).

    With ``label_smoothing`` ``s`` and ``k`` classes the labels become ``y (1 - s) + s / k``.

    Args:
        onehot_labels: One-hot targets ``[batch, classes]``.
        logits: The logits, of the labels' shape.
        weights: See `compute_weighted_loss`; of shape ``[]`` or ``[batch]``.
        label_smoothing: Smoothing in [0, 1].
        scope: The name scope (default ``softmax_cross_entropy_loss``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if an input is None or the shapes differ.
    """
    _check_not_none(onehot_labels=onehot_labels, logits=logits)
    inputs = (logits, onehot_labels, weights)
    with ops.name_scope(scope, "softmax_cross_entropy_loss", inputs) as scope:
        labels, logits = _logits_and_labels(onehot_labels, logits)
        if label_smoothing > 0:
            num_classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1 - label_smoothing) + label_smoothing / num_classes
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_ops.softmax_cross_entropy_with_logits_v2(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _squeeze_last_if(tensor: ops.Tensor, condition: bool) -> ops.Tensor:
    shape = tensor.get_shape()
    if condition and shape.dims[-1].is_compatible_with(1):
        return array_ops.squeeze(tensor, [-1])
    return tensor


def _remove_squeezable_dimensions(labels, logits, weights):
    """Drops a trailing size-1 dimension of sparse labels or of weights (static shapes only)."""
    labels, logits = ops.convert_to_tensor(labels), ops.convert_to_tensor(logits)
    labels_rank, logits_rank = labels.get_shape().ndims, logits.get_shape().ndims
    if labels_rank is not None and logits_rank is not None:
        labels = _squeeze_last_if(labels, labels_rank == logits_rank)
        labels_rank = labels.get_shape().ndims
    weights = ops.convert_to_tensor(weights)
    weights_rank = weights.get_shape().ndims
    if labels_rank is not None and weights_rank is not None and weights_rank - labels_rank == 1:
        weights = array_ops.squeeze(weights, [-1])
    return labels, logits, weights


def sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> ops.Tensor:
    """The weighted `tf.nn.sparse_softmax_cross_entropy_with_logits`.

    Labels of shape ``[batch, 1]`` and weights of shape ``[batch, 1]`` lose
    their last dimension first.

    Args:
        labels: Class indices ``[batch]`` (int32 or int64).
        logits: The logits ``[batch, classes]``.
        weights: See `compute_weighted_loss`.
        scope: The name scope (default ``sparse_softmax_cross_entropy_loss``).
        loss_collection: Where the loss is added.
        reduction: A `Reduction` key.

    Returns:
        The weighted loss.

    Raises:
        ValueError: if an input is None or the shapes do not fit.
    """
    _check_not_none(labels=labels, logits=logits)
    inputs = (logits, labels, weights)
    with ops.name_scope(scope, "sparse_softmax_cross_entropy_loss", inputs) as scope:
        labels, logits, weights = _remove_squeezable_dimensions(labels, logits, weights)
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)
