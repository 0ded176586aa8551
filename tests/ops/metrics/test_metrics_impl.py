"""Specification tests for ``tf.metrics`` (TF 1.15), ported from TF's ``metrics_test.py``.

Expected values are TF's test literals, TF's results for the same inputs, or
counted by hand; streaming tests run the update op over several batches.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

MEAN_BATCHES = [[[0.0, 1.0]], [[-4.2, 9.1]], [[6.5, 0.0]], [[-3.2, 4.0]]]


def _stream(value, update_op, feeds):
    """Runs ``update_op`` once per feed dict; returns the update results and the final value."""
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        updates = [sess.run(update_op, feed) for feed in feeds]
        return updates, sess.run(value)


def test_mean_streams_over_batches_and_update_returns_the_current_value():
    values = tf.placeholder(tf.float32, [1, 2])
    mean, update_op = tf.metrics.mean(values)
    assert (mean.op.name, update_op.op.name) == ("mean/value", "mean/update_op")
    updates, final = _stream(mean, update_op, [{values: b} for b in MEAN_BATCHES])
    # TF's testUpdateOpsReturnsCurrentValue.
    np.testing.assert_allclose(updates, [0.5, 1.475, 12.4 / 6.0, 1.65], rtol=1e-5)
    assert final == pytest.approx(1.65, rel=1e-5)


def test_mean_variables_are_local_metric_variables():
    mean, _ = tf.metrics.mean(tf.constant([1.0]))
    names = ["mean/total:0", "mean/count:0"]
    assert [v.name for v in tf.local_variables()] == names
    assert [v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
    assert tf.trainable_variables() == []


@pytest.mark.parametrize(
    "weights, expected",
    [
        ([[[1.0]], [[0.0]], [[0.0]], [[1.0]]], (0 + 1 - 3.2 + 4.0) / 4.0),
        ([[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 1.0]]], (0 - 4.2 + 0 + 4.0) / 4.0),
    ],
)
def test_mean_weighted(weights, expected):
    values = tf.placeholder(tf.float32, [1, 2])
    w = tf.placeholder(tf.float32, np.shape(weights[0]))
    mean, update_op = tf.metrics.mean(values, weights=w)
    feeds = [{values: b, w: wb} for b, wb in zip(MEAN_BATCHES, weights)]
    assert _stream(mean, update_op, feeds)[1] == pytest.approx(expected, rel=1e-5)


def test_mean_collections():
    mean, update_op = tf.metrics.mean(
        tf.constant([1.0]), metrics_collections=["m"], updates_collections=["u"]
    )
    assert tf.get_collection("m") == [mean] and tf.get_collection("u") == [update_op]


def test_metrics_restart_after_local_variables_initializer():
    values = tf.placeholder(tf.float32, [1, 2])
    mean, update_op = tf.metrics.mean(values)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update_op, {values: MEAN_BATCHES[0]})
        sess.run(tf.local_variables_initializer())
        assert sess.run(mean) == 0.0
        assert sess.run(update_op, {values: MEAN_BATCHES[1]}) == pytest.approx(2.45)


def test_accuracy_of_equivalent_shapes_and_streaming():
    labels = tf.placeholder(tf.int64, [2])
    predictions = tf.placeholder(tf.int64, [2, 1])
    acc, update_op = tf.metrics.accuracy(labels, predictions)
    feeds = [
        {labels: [1, 2], predictions: [[1], [1]]},
        {labels: [2, 1], predictions: [[2], [2]]},
        {labels: [0, 0], predictions: [[0], [0]]},
    ]
    updates, final = _stream(acc, update_op, feeds)
    np.testing.assert_allclose(updates, [0.5, 0.5, 4 / 6.0], rtol=1e-6)
    assert final == pytest.approx(4 / 6.0)


def test_accuracy_weighted():
    # TF's testMultipleUpdatesWithWeightedValues: matches weighted [1, 1, 0, 0] in 4 batches.
    acc, update_op = tf.metrics.accuracy([1, 2, 2, 1], [2, 2, 2, 1], weights=[1.0, 1.0, 0.0, 1.0])
    assert _stream(acc, update_op, [None])[1] == pytest.approx(2 / 3.0)


def test_accuracy_shape_mismatch_raises():
    with pytest.raises(ValueError):
        tf.metrics.accuracy(tf.ones([10, 3]), tf.ones([10, 4]))


def test_mean_absolute_and_squared_error_weighted():
    # TF's testSingleUpdateWithErrorAndWeights: 3 and 13 (errors 3 and 1, 3 and 1 squared).
    predictions = tf.constant([2, 4, 6, 8], shape=(1, 4), dtype=tf.float32)
    labels = tf.constant([1, 3, 2, 3], shape=(1, 4), dtype=tf.float32)
    weights = tf.constant([0, 1, 0, 1], shape=(1, 4))
    mae, mae_update = tf.metrics.mean_absolute_error(labels, predictions, weights)
    mse, mse_update = tf.metrics.mean_squared_error(labels, predictions, weights)
    assert mae.op.name == "mean_absolute_error/value"
    assert _stream(mae, mae_update, [None])[1] == pytest.approx(3.0)
    assert _stream(mse, mse_update, [None])[1] == pytest.approx(13.0)


def test_confusion_counts_weighted():
    # Counted by hand per column weight [1, 1.5, 2, 2.5]; two identical batches double them.
    labels = [[0, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    predictions = [[1, 0, 1, 0], [0, 1, 1, 0], [1, 0, 0, 1]]
    weights = [[1.0, 1.5, 2.0, 2.5]]
    fns = [
        (tf.metrics.true_positives, 2.0),
        (tf.metrics.false_positives, 1.0 + 1.5 + 2.0 + 1.0 + 2.5),
        (tf.metrics.false_negatives, 1.5 + 1.0),
        (tf.metrics.true_negatives, 2.5 + 2.5 + 1.5 + 2.0),
    ]
    for fn, expected in fns:
        value, update_op = fn(labels, predictions, weights)
        assert _stream(value, update_op, [None, None])[1] == pytest.approx(2 * expected)


def test_precision_and_recall_weighted_1d():
    # TF's testWeighted1d: both 0.5.
    predictions = tf.constant([[1, 0, 1, 0], [1, 0, 1, 0]])
    labels = tf.constant([[0, 1, 1, 0], [1, 0, 0, 1]])
    weights = tf.constant([[2], [5]])
    precision, p_update = tf.metrics.precision(labels, predictions, weights)
    recall, r_update = tf.metrics.recall(labels, predictions, weights)
    assert precision.op.name == "precision/value"
    assert _stream(precision, p_update, [None])[1] == pytest.approx(0.5)
    assert _stream(recall, r_update, [None])[1] == pytest.approx(0.5)


def test_precision_streams_and_is_zero_with_no_positive_predictions():
    labels = tf.placeholder(tf.int32, [4])
    predictions = tf.placeholder(tf.int32, [4])
    precision, update_op = tf.metrics.precision(labels, predictions)
    feeds = [
        {labels: [1, 1, 0, 0], predictions: [0, 0, 0, 0]},
        {labels: [1, 0, 0, 0], predictions: [1, 1, 0, 0]},
        {labels: [1, 1, 0, 0], predictions: [1, 1, 1, 0]},
    ]
    updates, _ = _stream(precision, update_op, feeds)
    # tp / (tp + fp): 0 / 0 -> 0, 1 / 2, 3 / 5.
    np.testing.assert_allclose(updates, [0.0, 0.5, 0.6], rtol=1e-6)


def test_auc_all_correct_and_some_correct():
    perfect, p_update = tf.metrics.auc([0, 1, 1, 0], [0.0, 1.0, 1.0, 0.0])
    some, s_update = tf.metrics.auc([0, 1, 1, 0], [1.0, 0.0, 1.0, 0.0])
    assert _stream(perfect, p_update, [None])[1] == pytest.approx(1.0, abs=1e-5)
    assert _stream(some, s_update, [None])[1] == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize(
    "predictions, labels, weights, curve, method, expected",
    [
        # TF 1.15's testWeighted2d.
        ([1, 0, 1, 0], [0, 1, 1, 0], [1, 2, 3, 4], "ROC", "trapezoidal", 0.7),
        # TF's results for the same inputs.
        ([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], None, "PR", "careful_interpolation", 0.79726744),
        (
            [0.1, 0.4, 0.35, 0.8, 0.1, 0.135, 0.81],
            [0, 0, 1, 0, 1, 0, 1],
            None,
            "PR",
            "careful_interpolation",
            0.6135059,
        ),
        (
            [0.0, 0.1, 0.2, 0.33, 0.3, 0.4, 0.5],
            [0, 0, 0, 0, 1, 1, 1],
            None,
            "PR",
            "careful_interpolation",
            0.904106,
        ),
        (
            [0.1, 0.4, 0.35, 0.8, 0.1, 0.135, 0.81],
            [0, 0, 1, 0, 1, 0, 1],
            None,
            "ROC",
            "minoring",
            0.5,
        ),
        (
            [0.1, 0.4, 0.35, 0.8, 0.1, 0.135, 0.81],
            [0, 0, 1, 0, 1, 0, 1],
            None,
            "ROC",
            "majoring",
            0.5833333,
        ),
        (
            [0.1, 0.4, 0.35, 0.8, 0.1, 0.135, 0.81],
            [0, 0, 1, 0, 1, 0, 1],
            None,
            "PR",
            "trapezoidal",
            0.61031735,
        ),
    ],
)
def test_auc_curves_and_summation_methods(predictions, labels, weights, curve, method, expected):
    weights = None if weights is None else tf.constant(weights, tf.float32)
    value, update_op = tf.metrics.auc(
        labels, tf.constant(predictions, tf.float32), weights, curve=curve, summation_method=method
    )
    assert _stream(value, update_op, [None])[1] == pytest.approx(expected, abs=1e-5)


def test_auc_streams_counts_over_batches():
    labels = tf.placeholder(tf.int32, [2])
    predictions = tf.placeholder(tf.float32, [2])
    value, update_op = tf.metrics.auc(labels, predictions)
    feeds = [{labels: [1, 0], predictions: [0.9, 0.2]}, {labels: [1, 0], predictions: [0.1, 0.8]}]
    updates, final = _stream(value, update_op, feeds)
    # After both batches: positives {0.9, 0.1}, negatives {0.2, 0.8}: 2 of 4 pairs ordered.
    assert updates[0] == pytest.approx(1.0, abs=1e-5)
    assert final == pytest.approx(0.5, abs=1e-5)


def test_auc_predictions_outside_the_unit_interval_fail_at_run_time():
    value, update_op = tf.metrics.auc([0, 1], [0.5, 1.5])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"predictions must be in \[0, 1\]"):
        _stream(value, update_op, [None])


def test_auc_bad_curve_or_summation_method_raises():
    with pytest.raises(ValueError, match="Curve must be either ROC or PR. Curve XY is unknown."):
        tf.metrics.auc([0, 1], [0.5, 1.0], curve="XY")
    with pytest.raises(ValueError, match="Invalid summation_method: simpson"):
        tf.metrics.auc([0, 1], [0.5, 1.0], summation_method="simpson")


def test_metric_weights_that_cannot_broadcast_raise():
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.metrics.mean(tf.ones([2, 3]), weights=tf.ones([2, 2]))
