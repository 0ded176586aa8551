"""``tf.metrics``: streaming metrics as a ``(value, update_op)`` pair.

A metric keeps its running state in *metric variables*: local, untrainable
variables in ``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``, zero after
``tf.local_variables_initializer()``. Running ``update_op`` folds one batch
into them and returns the metric after that batch; ``value`` reads the metric
from the variables without changing them. The variables live under a
variable scope named after the metric (``mean/total``, ``auc/true_positives``).
"""

from __future__ import annotations

import logging
from typing import Any

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import array_ops
from minitf.ops.debugging.logging_ops import Assert
from minitf.ops.losses.weights_broadcast_ops import assert_broadcastable, broadcast_weights
from minitf.ops.math import math_ops
from minitf.ops.state import state_ops, variable_scope, variables

__all__ = [
    "accuracy",
    "auc",
    "false_negatives",
    "false_positives",
    "mean",
    "mean_absolute_error",
    "mean_squared_error",
    "precision",
    "recall",
    "true_negatives",
    "true_positives",
]

_logger = logging.getLogger("minitf")

_SUMMATION_METHODS = ("trapezoidal", "careful_interpolation", "minoring", "majoring")


def metric_variable(
    shape: Any, dtype: Any, validate_shape: bool = True, name: str | None = None
) -> variables.Variable:
    """A zero-initialized local variable in ``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``.

    Args:
        shape: The variable's shape.
        dtype: Its dtype.
        validate_shape: Whether its shape is fixed.
        name: Its name (made unique in the current scope).

    Returns:
        The variable.
    """
    return variables.Variable(
        lambda: array_ops.zeros(shape, dtype),
        trainable=False,
        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
        validate_shape=validate_shape,
        name=name,
    )


def _div_no_nan(numerator: ops.Tensor, denominator: ops.Tensor, name: str) -> ops.Tensor:
    """``numerator / denominator``, 0 where the denominator is 0 (TF's ``div_no_nan``)."""
    with ops.name_scope(name, "div_no_nan", (numerator, denominator)) as scope:
        nonzero = math_ops.not_equal(denominator, 0.0)
        safe = array_ops.where(nonzero, denominator, array_ops.ones_like(denominator))
        quotient = math_ops.truediv(numerator, safe)
        return array_ops.where(nonzero, quotient, array_ops.zeros_like(quotient), name=scope)


def _publish(value: ops.Tensor, update_op: ops.Tensor, metrics_collections, updates_collections):
    if metrics_collections:
        ops.add_to_collections(metrics_collections, value)
    if updates_collections:
        ops.add_to_collections(updates_collections, update_op)
    return value, update_op


def _squeeze_or_expand_weights(weights: ops.Tensor, values: ops.Tensor) -> ops.Tensor:
    """Weights with one dimension too many lose it; with one too few gain it (static ranks)."""
    weights_rank, values_rank = weights.get_shape().ndims, values.get_shape().ndims
    if weights_rank is None or values_rank is None:
        return weights
    if weights_rank - values_rank == 1:
        return array_ops.squeeze(weights, [-1])
    if weights_rank - values_rank == -1:
        return array_ops.expand_dims(weights, [-1])
    return weights


def _remove_squeezable_dimensions(predictions, labels, weights):
    """Drops a trailing size-1 dimension that makes predictions and labels differ in rank.

    Then fits the weights' rank to the predictions' (see `_squeeze_or_expand_weights`).
    """
    predictions = ops.convert_to_tensor(predictions)
    if labels is not None:
        labels = ops.convert_to_tensor(labels)
        labels_rank, predictions_rank = labels.get_shape().ndims, predictions.get_shape().ndims
        if labels_rank is not None and predictions_rank is not None:
            if predictions_rank - labels_rank == 1:
                predictions = array_ops.squeeze(predictions, [-1])
            elif predictions_rank - labels_rank == -1:
                labels = array_ops.squeeze(labels, [-1])
    if weights is not None:
        weights = _squeeze_or_expand_weights(ops.convert_to_tensor(weights), predictions)
    return predictions, labels, weights


def mean(
    values: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """The (weighted) mean of all values seen: ``total / count``.

    Args:
        values: A tensor of any shape.
        weights: None, or weights that broadcast to ``values`` (TF1's rule).
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        name: The variable scope (default ``mean``).

    Returns:
        ``(mean, update_op)``; both are 0 while the count is 0.

    Raises:
        ValueError: if the weights cannot broadcast to the values.
    """
    with variable_scope.variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.reduce_sum(weights)
        update_total = state_ops.assign_add(total, math_ops.reduce_sum(values))
        with ops.control_dependencies([values]):
            update_count = state_ops.assign_add(count, num_values)
        value = _div_no_nan(total, math_ops.maximum(count, 0.0), "value")
        update_op = _div_no_nan(update_total, math_ops.maximum(update_count, 0.0), "update_op")
        return _publish(value, update_op, metrics_collections, updates_collections)


def accuracy(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """How often ``predictions`` equals ``labels``: the `mean` of the matches.

    Args:
        labels: The true values.
        predictions: The predicted values, of the labels' shape.
        weights: None, or weights that broadcast to the labels.
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        name: The variable scope (default ``accuracy``).

    Returns:
        ``(accuracy, update_op)``.

    Raises:
        ValueError: if the shapes differ or the weights cannot broadcast.
    """
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def _mean_of_errors(error_fn, default_name: str, labels, predictions, weights, collections):
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    errors = error_fn(
        math_ops.cast(labels, dtypes.float32), math_ops.cast(predictions, dtypes.float32)
    )
    metrics_collections, updates_collections, name = collections
    return mean(errors, weights, metrics_collections, updates_collections, name or default_name)


def mean_absolute_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """The `mean` of ``|predictions - labels|``.

    Args:
        labels: The true values.
        predictions: The predictions, of the labels' shape.
        weights: None, or weights that broadcast to the labels.
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        name: The variable scope (default ``mean_absolute_error``).

    Returns:
        ``(mean_absolute_error, update_op)``.

    Raises:
        ValueError: if the shapes differ or the weights cannot broadcast.
    """

    def errors(labels, predictions):
        return math_ops.abs(predictions - labels)

    collections = (metrics_collections, updates_collections, name)
    return _mean_of_errors(errors, "mean_absolute_error", labels, predictions, weights, collections)


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """The `mean` of ``(predictions - labels)^2``.

    Args:
        labels: The true values.
        predictions: The predictions, of the labels' shape.
        weights: None, or weights that broadcast to the labels.
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        name: The variable scope (default ``mean_squared_error``).

    Returns:
        ``(mean_squared_error, update_op)``.

    Raises:
        ValueError: if the shapes differ or the weights cannot broadcast.
    """
    collections = (metrics_collections, updates_collections, name)
    return _mean_of_errors(
        math_ops.squared_difference, "mean_squared_error", labels, predictions, weights, collections
    )


def _count_condition(values, weights, metrics_collections, updates_collections):
    """The (weighted) number of True ``values`` seen, in a ``count`` variable."""
    if values.dtype.base_dtype != dtypes.bool:
        raise ValueError(f"`values` must be of dtype bool, got {values.dtype}.")
    count = metric_variable([], dtypes.float32, name="count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        weights = math_ops.cast(weights, dtypes.float32)
        assert_broadcastable(weights, values)
        values = math_ops.multiply(values, weights)
    value = array_ops.identity(count)
    update_op = state_ops.assign_add(count, math_ops.reduce_sum(values))
    return _publish(value, update_op, metrics_collections, updates_collections)


def _confusion_count(
    default_name: str, label: bool, prediction: bool, labels, predictions, weights, collections
):
    """Counts the elements whose label is ``label`` and whose prediction is ``prediction``."""
    with variable_scope.variable_scope(
        collections[2], default_name, (predictions, labels, weights)
    ):
        predictions, labels, weights = _remove_squeezable_dimensions(
            math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool), weights
        )
        condition = math_ops.logical_and(
            math_ops.equal(labels, label), math_ops.equal(predictions, prediction)
        )
        return _count_condition(condition, weights, collections[0], collections[1])


def _confusion_metric(default_name: str, label: bool, prediction: bool, what: str):
    """Builds the public count metric ``default_name`` (TF has four of the same form)."""

    def metric(
        labels: Any,
        predictions: Any,
        weights: Any = None,
        metrics_collections: list | None = None,
        updates_collections: list | None = None,
        name: str | None = None,
    ) -> tuple[ops.Tensor, ops.Tensor]:
        collections = (metrics_collections, updates_collections, name)
        return _confusion_count(
            default_name, label, prediction, labels, predictions, weights, collections
        )

    metric.__name__ = metric.__qualname__ = default_name
    metric.__doc__ = f"""The (weighted) number of elements {what}.

    Args:
        labels: The true values, cast to bool.
        predictions: The predicted values, cast to bool.
        weights: None, or weights that broadcast to the labels.
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        name: The variable scope (default ``{default_name}``).

    Returns:
        ``(count, update_op)``.
    """
    return metric


true_positives = _confusion_metric(
    "true_positives", True, True, "where both labels and predictions are True"
)
false_positives = _confusion_metric(
    "false_positives", False, True, "predicted True whose label is False"
)
false_negatives = _confusion_metric(
    "false_negatives", True, False, "predicted False whose label is True"
)
true_negatives = _confusion_metric(
    "true_negatives", False, False, "where both labels and predictions are False"
)


def _ratio_of_counts(default_name: str, other_count, labels, predictions, weights, collections):
    """``tp / (tp + other)``, 0 while both are 0: precision (other = fp) or recall (fn)."""
    metrics_collections, updates_collections, name = collections
    with variable_scope.variable_scope(name, default_name, (predictions, labels, weights)):
        tp, tp_update = true_positives(labels, predictions, weights)
        other, other_update = other_count(labels, predictions, weights)

        def ratio(tp, other, name):
            total = tp + other
            quotient = math_ops.truediv(
                tp, array_ops.where(total > 0, total, array_ops.ones_like(total))
            )
            return array_ops.where(total > 0, quotient, array_ops.zeros_like(quotient), name=name)

        value = ratio(tp, other, "value")
        update_op = ratio(tp_update, other_update, "update_op")
        return _publish(value, update_op, metrics_collections, updates_collections)


def precision(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """``true_positives / (true_positives + false_positives)`` over all batches seen.

    Args:
        labels: The true values, cast to bool.
        predictions: The predicted values, cast to bool.
        weights: None, or weights that broadcast to the labels.
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        name: The variable scope (default ``precision``).

    Returns:
        ``(precision, update_op)``; 0 while nothing was predicted True.
    """
    collections = (metrics_collections, updates_collections, name)
    return _ratio_of_counts("precision", false_positives, labels, predictions, weights, collections)


def recall(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """``true_positives / (true_positives + false_negatives)`` over all batches seen.

    Args:
        labels: The true values, cast to bool.
        predictions: The predicted values, cast to bool.
        weights: None, or weights that broadcast to the labels.
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        name: The variable scope (default ``recall``).

    Returns:
        ``(recall, update_op)``; 0 while no label was True.
    """
    collections = (metrics_collections, updates_collections, name)
    return _ratio_of_counts("recall", false_negatives, labels, predictions, weights, collections)


def _predictions_in_unit_interval(predictions: ops.Tensor) -> ops.Operation:
    """A run-time check that every prediction is in [0, 1] (TF's two asserts in one)."""
    in_range = math_ops.logical_and(
        math_ops.greater_equal(predictions, 0.0), math_ops.less_equal(predictions, 1.0)
    )
    return Assert(math_ops.reduce_all(in_range), ["predictions must be in [0, 1]", predictions])


def _count_at_thresholds(name: str, condition: ops.Tensor, weights_tiled) -> tuple:
    """Adds each threshold's (weighted) number of True ``condition`` to a ``name`` variable."""
    counts = metric_variable([condition.get_shape()[0]], dtypes.float32, name=name)
    hits = math_ops.cast(condition, dtypes.float32)
    if weights_tiled is not None:
        hits = math_ops.multiply(hits, weights_tiled)
    return counts, state_ops.assign_add(counts, math_ops.reduce_sum(hits, 1))


def _confusion_matrix_at_thresholds(labels, predictions, thresholds: list[float], weights):
    """The variables and update ops of tp, fn, tn and fp at each threshold.

    A prediction is positive at a threshold when it is strictly greater.
    Returns two dicts keyed ``"tp"``, ``"fn"``, ``"tn"``, ``"fp"``.
    """
    predictions = math_ops.cast(predictions, dtypes.float32)
    with ops.control_dependencies([_predictions_in_unit_interval(predictions)]):
        predictions, labels, weights = _remove_squeezable_dimensions(
            array_ops.identity(predictions), math_ops.cast(labels, dtypes.bool), weights
        )
    num_thresholds = len(thresholds)
    predictions_2d = array_ops.reshape(predictions, [-1, 1])
    labels_2d = array_ops.reshape(labels, [1, -1])
    num_predictions = array_ops.shape(predictions_2d)[0]
    thresholds_tiled = array_ops.tile(
        array_ops.expand_dims(ops.convert_to_tensor(thresholds, dtypes.float32), 1),
        array_ops.stack([1, num_predictions]),
    )
    predictions_tiled = array_ops.tile(array_ops.transpose(predictions_2d), [num_thresholds, 1])
    pred_is_pos = math_ops.greater(predictions_tiled, thresholds_tiled)
    pred_is_neg = math_ops.logical_not(pred_is_pos)
    label_is_pos = array_ops.tile(labels_2d, [num_thresholds, 1])
    label_is_neg = math_ops.logical_not(label_is_pos)
    weights_tiled = None
    if weights is not None:
        weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), predictions)
        weights_tiled = array_ops.tile(array_ops.reshape(weights, [1, -1]), [num_thresholds, 1])
    conditions = {
        "tp": ("true_positives", label_is_pos, pred_is_pos),
        "fn": ("false_negatives", label_is_pos, pred_is_neg),
        "tn": ("true_negatives", label_is_neg, pred_is_neg),
        "fp": ("false_positives", label_is_neg, pred_is_pos),
    }
    values, update_ops = {}, {}
    for key, (name, label_cond, pred_cond) in conditions.items():
        condition = math_ops.logical_and(label_cond, pred_cond)
        values[key], update_ops[key] = _count_at_thresholds(name, condition, weights_tiled)
    return values, update_ops


def _auc_thresholds(num_thresholds: int, thresholds) -> list[float]:
    """The thresholds of `auc`: evenly spaced in (0, 1), or the given ones, plus both ends."""
    kepsilon = 1e-7  # so that predictions of exactly 0 and 1 fall inside
    if thresholds is not None:
        inner = sorted(thresholds)
    else:
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - kepsilon] + inner + [1.0 + kepsilon]


def _interpolate_pr_auc(tp, fp, fn, n: int) -> ops.Tensor:
    """The PR area with precision interpolated between thresholds (Davis & Goadrich, 2006).

    Between two thresholds tp and p = tp + fp change linearly, so precision is
    ``(tp_a + slope (p - p_a)) / p``; its integral over recall has the closed
    form ``slope (dtp + intercept log(p_a / p_b)) / (tp + fn)`` summed here.
    """
    dtp = tp[: n - 1] - tp[1:]
    p = tp + fp
    slope = _div_no_nan(dtp, math_ops.maximum(p[: n - 1] - p[1:], 0.0), "prec_slope")
    intercept = tp[1:] - math_ops.multiply(slope, p[1:])
    both_positive = math_ops.logical_and(p[: n - 1] > 0, p[1:] > 0)
    ratio = _div_no_nan(p[: n - 1], math_ops.maximum(p[1:], 0.0), "recall_relative_ratio")
    safe_ratio = array_ops.where(both_positive, ratio, array_ops.ones_like(p[1:]))
    increments = _div_no_nan(
        slope * (dtp + intercept * math_ops.log(safe_ratio)),
        math_ops.maximum(tp[1:] + fn[1:], 0.0),
        "pr_auc_increment",
    )
    return math_ops.reduce_sum(increments, name="interpolate_pr_auc")


def _riemann_sum(x, y, n: int, summation_method: str, name: str) -> ops.Tensor:
    """The area under the points ``(x, y)`` (x decreasing) by the given rule."""
    widths = x[: n - 1] - x[1:]
    if summation_method == "minoring":
        heights = math_ops.minimum(y[: n - 1], y[1:])
    elif summation_method == "majoring":
        heights = math_ops.maximum(y[: n - 1], y[1:])
    else:
        heights = (y[: n - 1] + y[1:]) / 2.0
    return math_ops.reduce_sum(math_ops.multiply(widths, heights), name=name)


def _compute_auc(counts: dict, n: int, curve: str, summation_method: str, name: str):
    tp, fn, tn, fp = counts["tp"], counts["fn"], counts["tn"], counts["fp"]
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolate_pr_auc(tp, fp, fn, n)
    epsilon = 1.0e-6
    recall_ = math_ops.truediv(tp + epsilon, tp + fn + epsilon)
    if curve == "ROC":
        x, y = math_ops.truediv(fp, fp + tn + epsilon), recall_
    else:
        x, y = recall_, math_ops.truediv(tp + epsilon, tp + fp + epsilon)
    return _riemann_sum(x, y, n, summation_method, name)


def auc(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    num_thresholds: int = 200,
    metrics_collections: list | None = None,
    updates_collections: list | None = None,
    curve: str = "ROC",
    name: str | None = None,
    summation_method: str = "trapezoidal",
    thresholds: list | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """The area under the ROC or precision-recall curve, from counts at fixed thresholds.

    Args:
        labels: The true values, cast to bool.
        predictions: Probabilities in [0, 1] (checked when the update runs).
        weights: None, or weights that broadcast to the predictions.
        num_thresholds: How many evenly spaced thresholds (ignored with ``thresholds``).
        metrics_collections: Collections to add the value to.
        updates_collections: Collections to add the update op to.
        curve: ``"ROC"`` or ``"PR"``.
        name: The variable scope (default ``auc``).
        summation_method: ``"trapezoidal"``, ``"careful_interpolation"`` (PR:
            interpolated precision; ROC: trapezoidal), ``"minoring"`` or ``"majoring"``.
        thresholds: Explicit thresholds in [0, 1].

    Returns:
        ``(auc, update_op)``.

    Raises:
        ValueError: on an unknown curve or summation method.
    """
    with variable_scope.variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
        if summation_method not in _SUMMATION_METHODS:
            raise ValueError(
                f"Invalid summation_method: {summation_method} summation_method should be "
                "'trapezoidal', 'careful_interpolation', 'minoring', or 'majoring'."
            )
        if curve == "PR" and summation_method == "trapezoidal":
            _logger.warning(
                "Trapezoidal rule is known to produce incorrect PR-AUCs; "
                'please switch to "careful_interpolation" instead.'
            )
        all_thresholds = _auc_thresholds(num_thresholds, thresholds)
        values, update_ops = _confusion_matrix_at_thresholds(
            labels, predictions, all_thresholds, weights
        )
        n = len(all_thresholds)
        value = _compute_auc(values, n, curve, summation_method, "value")
        update_op = _compute_auc(update_ops, n, curve, summation_method, "update_op")
        return _publish(value, update_op, metrics_collections, updates_collections)
