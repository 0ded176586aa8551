"""Specification tests for ``tf.losses`` (TF 1.15), ported from TF's ``losses_test.py``.

Expected values are TF's own test literals, or the loss formula evaluated with numpy.
"""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

LOGITS = [[10.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 0.0, 10.0]]
WRONG = [[0, 0, 1], [1, 0, 0], [0, 1, 0]]

PREDICTIONS = np.array([4, 8, 12, 8, 1, 3], np.float32).reshape(2, 3)
LABELS = np.array([1, 9, 2, -5, -2, 6], np.float32).reshape(2, 3)


def _eval(tensor, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(tensor, feed_dict)


def test_softmax_cross_entropy_all_correct_is_zero_and_named_like_tf():
    loss = tf.losses.softmax_cross_entropy(np.eye(3), LOGITS)
    assert loss.op.name == "softmax_cross_entropy_loss/value"
    assert _eval(loss) == pytest.approx(0.0, abs=1e-3)


@pytest.mark.parametrize(
    "weights, expected",
    [(1.0, 10.0), (2.3, 23.0), ([1.2, 3.4, 5.6], (1.2 + 3.4 + 5.6) * 10.0 / 3.0)],
)
def test_softmax_cross_entropy_all_wrong_with_weights(weights, expected):
    loss = tf.losses.softmax_cross_entropy(WRONG, LOGITS, weights=weights)
    assert _eval(loss) == pytest.approx(expected, rel=1e-3)


def test_softmax_cross_entropy_some_zero_weights_divide_by_nonzero_count():
    loss = tf.losses.softmax_cross_entropy(WRONG, LOGITS, weights=[1.2, 0.0, 0.0])
    assert _eval(loss) == pytest.approx(12.0, rel=1e-3)


def test_softmax_cross_entropy_all_zero_weights_is_zero():
    assert _eval(tf.losses.softmax_cross_entropy(WRONG, LOGITS, weights=0.0)) == 0.0


def test_softmax_cross_entropy_label_smoothing():
    # TF's test: 400 * label_smoothing / 3.
    loss = tf.losses.softmax_cross_entropy(
        [[1, 0, 0]], [[100.0, -100.0, -100.0]], label_smoothing=0.1
    )
    assert _eval(loss) == pytest.approx(400 * 0.1 / 3.0, rel=1e-3)


def test_softmax_cross_entropy_weights_of_the_wrong_shape_raise():
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.losses.softmax_cross_entropy(WRONG, LOGITS, weights=[[1.0, 2.0], [3.0, 4.0]])


def test_softmax_cross_entropy_shape_mismatch_raises():
    with pytest.raises(ValueError):
        tf.losses.softmax_cross_entropy([[0, 1], [1, 0]], LOGITS)


def test_sparse_softmax_cross_entropy_labels_and_weights_with_trailing_one():
    loss = tf.losses.sparse_softmax_cross_entropy(
        [[2], [0], [1]], LOGITS, weights=[[1.2], [3.4], [5.6]]
    )
    assert _eval(loss) == pytest.approx((1.2 + 3.4 + 5.6) * 10.0 / 3.0, rel=1e-3)


def test_sigmoid_cross_entropy_matches_the_formula():
    logits = np.array([[100.0, -100.0, -100.0], [-100.0, 100.0, -100.0]], np.float32)
    labels = np.array([[1, 0, 1], [1, 1, 0]], np.float32)
    loss = tf.losses.sigmoid_cross_entropy(labels, logits)
    assert loss.op.name == "sigmoid_cross_entropy_loss/value"
    # Two of six elements are wrong by a logit of 100 (loss 100 each): 200 / 6.
    assert _eval(loss) == pytest.approx(200.0 / 6.0, rel=1e-3)


def test_sigmoid_cross_entropy_label_smoothing():
    # TF's test: (100 + 50 * label_smoothing) / 3 for logits [100, -100, -100], labels [1, 0, 1].
    loss = tf.losses.sigmoid_cross_entropy(
        [[1, 0, 1]], [[100.0, -100.0, -100.0]], label_smoothing=0.1
    )
    assert _eval(loss) == pytest.approx((100 + 50 * 0.1) / 3.0, rel=1e-3)


def test_absolute_difference_tf_values():
    # TF's test: 5.5 unweighted, 5.5 * weight for a scalar weight.
    assert _eval(tf.losses.absolute_difference(LABELS, PREDICTIONS)) == pytest.approx(5.5)
    loss = tf.losses.absolute_difference(LABELS, PREDICTIONS, weights=2.3)
    assert _eval(loss) == pytest.approx(5.5 * 2.3, rel=1e-5)


def test_absolute_difference_per_batch_weights():
    # TF's test: weights [1.2, 0.0] -> 5.6.
    loss = tf.losses.absolute_difference(LABELS, PREDICTIONS, weights=[[1.2], [0.0]])
    assert _eval(loss) == pytest.approx(5.6, rel=1e-5)


def test_mean_squared_error_tf_values():
    # TF's test: 49.5 unweighted; weights [3, 6, 5, 0, 4, 2] -> 587 / 5.
    assert _eval(tf.losses.mean_squared_error(LABELS, PREDICTIONS)) == pytest.approx(49.5)
    weights = np.array([3, 6, 5, 0, 4, 2], np.float32).reshape(2, 3)
    loss = tf.losses.mean_squared_error(LABELS, PREDICTIONS, weights=weights)
    assert _eval(loss) == pytest.approx(587 / 5.0, rel=1e-5)


@pytest.mark.parametrize(
    "reduction, expected",
    [
        (tf.losses.Reduction.SUM, 587.0),
        (tf.losses.Reduction.MEAN, 587.0 / 20.0),
        (tf.losses.Reduction.SUM_OVER_BATCH_SIZE, 587.0 / 6.0),
        (tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS, 587.0 / 5.0),
    ],
)
def test_compute_weighted_loss_reductions(reduction, expected):
    weights = np.array([3, 6, 5, 0, 4, 2], np.float32).reshape(2, 3)
    losses = (PREDICTIONS - LABELS) ** 2
    loss = tf.losses.compute_weighted_loss(losses, weights, reduction=reduction)
    assert _eval(loss) == pytest.approx(expected, rel=1e-5)


def test_compute_weighted_loss_none_keeps_the_shape():
    weights = np.array([[2.0], [3.0]], np.float32)
    loss = tf.losses.compute_weighted_loss(PREDICTIONS, weights, reduction="none")
    np.testing.assert_allclose(_eval(loss), PREDICTIONS * weights)


def test_compute_weighted_loss_invalid_reduction_raises():
    with pytest.raises(ValueError, match="Invalid Reduction Key mean"):
        tf.losses.compute_weighted_loss(PREDICTIONS, reduction="mean")


def test_huber_loss_matches_the_piecewise_formula():
    predictions = np.array([[1.5, 0.0, -2.0], [0.2, 4.0, -0.7]], np.float32)
    labels = np.zeros_like(predictions)
    err = np.abs(predictions)
    delta = 1.0
    expected = np.where(err <= delta, 0.5 * err**2, delta * (err - 0.5 * delta)).mean()
    assert _eval(tf.losses.huber_loss(labels, predictions)) == pytest.approx(expected, rel=1e-5)


def test_log_loss_matches_the_formula():
    predictions = np.array([[0.9, 0.2, 0.2], [0.8, 0.4, 0.6]], np.float32)
    labels = np.array([[1, 0, 1], [1, 0, 0]], np.float32)
    eps = 1e-7
    expected = -(labels * np.log(predictions + eps) + (1 - labels) * np.log(1 - predictions + eps))
    loss = tf.losses.log_loss(labels, predictions)
    assert _eval(loss) == pytest.approx(expected.mean(), rel=1e-5)


def test_hinge_loss_tf_values():
    # TF's test: logits [-0.7, -0.5, 0.1, 0.2], labels [0, 0, 1, 1] -> [0.3, 0.5, 0.9, 0.8].
    logits = np.array([[-0.7], [-0.5], [0.1], [0.2]], np.float32)
    labels = np.array([[0.0], [0.0], [1.0], [1.0]], np.float32)
    loss = tf.losses.hinge_loss(labels, logits, reduction=tf.losses.Reduction.NONE)
    np.testing.assert_allclose(_eval(loss), [[0.3], [0.5], [0.9], [0.8]], rtol=1e-5)


def test_cosine_distance_tf_values():
    # Distances 1 (orthogonal), 2 (opposite), 0 (equal): mean 1; weights [0, 1, 1] -> 1.
    predictions = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]], np.float32)
    labels = np.array([[0, 0, 1], [0, 0, 1], [0, 1, 0]], np.float32)
    assert _eval(tf.losses.cosine_distance(labels, predictions, axis=1)) == pytest.approx(1.0)
    weights = np.array([[0.0], [1.0], [1.0]], np.float32)
    loss = tf.losses.cosine_distance(labels, predictions, axis=1, weights=weights)
    assert _eval(loss) == pytest.approx(1.0)
    loss = tf.losses.cosine_distance(labels, predictions, axis=1, reduction="none")
    np.testing.assert_allclose(_eval(loss), [[1.0], [2.0], [0.0]])


def test_cosine_distance_needs_an_axis():
    with pytest.raises(ValueError, match="You must specify 'axis'."):
        tf.losses.cosine_distance(LABELS, PREDICTIONS)


def test_none_labels_raise():
    with pytest.raises(ValueError, match="labels must not be None."):
        tf.losses.mean_squared_error(None, PREDICTIONS)


def test_losses_collect_and_total_loss_adds_regularization():
    mse = tf.losses.mean_squared_error(LABELS, PREDICTIONS)
    tf.losses.absolute_difference(LABELS, PREDICTIONS, loss_collection=None)
    reg = tf.constant(2.0)
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, reg)
    assert tf.losses.get_losses() == [mse]
    assert tf.losses.get_regularization_losses() == [reg]
    total = tf.losses.get_total_loss()
    assert total.op.name == "total_loss"
    assert _eval(total) == pytest.approx(51.5)
    assert _eval(tf.losses.get_total_loss(add_regularization_losses=False)) == pytest.approx(49.5)
    assert _eval(tf.losses.get_regularization_loss()) == pytest.approx(2.0)


def test_get_regularization_loss_without_losses_is_zero():
    assert _eval(tf.losses.get_regularization_loss()) == 0.0


def test_add_loss_and_gradient_through_a_weighted_loss():
    w = tf.Variable(3.0)
    loss = tf.losses.mean_squared_error([1.0, 3.0], w * tf.constant([1.0, 1.0]))
    tf.losses.add_loss(tf.constant(1.0))
    assert len(tf.losses.get_losses()) == 2
    grad = tf.gradients(loss, w)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # d/dw mean((w - y)^2) = mean(2 (w - y)) = (2 * 2 + 2 * 0) / 2 = 2.
        assert sess.run(grad) == pytest.approx(2.0)
