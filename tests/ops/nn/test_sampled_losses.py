"""tf.nn.nce_loss, sampled_softmax_loss and log_uniform_candidate_sampler.

The losses are checked against TF's formulas computed by hand in numpy, with
the sampled classes fixed through ``sampled_values=``; the sampler against
its distribution and its expected-count formula.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error

pytestmark = pytest.mark.timeout(60)

RNG = np.random.RandomState(0)
WEIGHTS = RNG.randn(10, 3)
BIASES = RNG.randn(10)
INPUTS = RNG.randn(4, 3)
LABELS = np.array([[1, 7], [0, 3], [9, 2], [3, 4]], np.int64)
SAMPLED = np.array([3, 5, 8], np.int64)
TRUE_COUNT = np.full((4, 2), 0.5, np.float32)
SAMPLED_COUNT = np.array([0.25, 0.4, 0.8], np.float32)
SAMPLED_VALUES = (SAMPLED, TRUE_COUNT, SAMPLED_COUNT)


def _logits(mask_hits: bool):
    true = np.stack(
        [np.sum(INPUTS * WEIGHTS[LABELS[:, j]], 1) + BIASES[LABELS[:, j]] for j in range(2)], 1
    )
    sampled = INPUTS @ WEIGHTS[SAMPLED].T + BIASES[SAMPLED]
    if mask_hits:
        hits = (LABELS[:, :, None] == SAMPLED[None, None, :]).any(axis=1)
        sampled = sampled + np.where(hits, -np.finfo(np.float32).max, 0)
    true = true - np.log(TRUE_COUNT)
    sampled = sampled - np.log(SAMPLED_COUNT)
    return np.concatenate([true, sampled], 1)


def test_nce_loss_by_hand():
    logits = _logits(False)
    labels = np.concatenate([np.full((4, 2), 0.5), np.zeros((4, 3))], 1)
    expected = np.sum(np.logaddexp(0, logits) - logits * labels, axis=1)
    loss = tf.nn.nce_loss(
        WEIGHTS, BIASES, LABELS, INPUTS, 3, 10, num_true=2, sampled_values=SAMPLED_VALUES
    )
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(loss), expected, rtol=1e-6)


def test_sampled_softmax_loss_masks_accidental_hits():
    # Row 1 and row 3 have true class 3, which is also sampled: its sampled logit is masked.
    labels = np.concatenate([np.full((4, 2), 0.5), np.zeros((4, 3))], 1)
    for remove, mask in ((True, True), (False, False)):
        logits = _logits(mask)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        expected = -np.sum(labels * log_softmax, axis=1)
        loss = tf.nn.sampled_softmax_loss(
            WEIGHTS,
            BIASES,
            LABELS,
            INPUTS,
            3,
            10,
            num_true=2,
            sampled_values=SAMPLED_VALUES,
            remove_accidental_hits=remove,
        )
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(loss), expected, rtol=1e-6)


def test_sampled_losses_differentiate_into_weights_and_inputs():
    weights, inputs = tf.constant(WEIGHTS), tf.constant(INPUTS)
    for fn in (tf.nn.nce_loss, tf.nn.sampled_softmax_loss):
        loss = fn(weights, BIASES, LABELS, inputs, 3, 10, num_true=2, sampled_values=SAMPLED_VALUES)
        with tf.Session():
            error = compute_gradient_error(
                [weights, inputs], [[10, 3], [4, 3]], loss, [4], x_init_value=[WEIGHTS, INPUTS]
            )
        assert error < 1e-6


def test_log_uniform_candidate_sampler():
    sampled, true_count, sampled_count = tf.nn.log_uniform_candidate_sampler(
        LABELS, 2, 5, True, 10, seed=7
    )
    assert sampled.dtype == tf.int64
    assert sampled.shape.as_list() == [5]
    assert true_count.shape.as_list() == [4, 2]
    with tf.Session() as sess:
        s, t, c = sess.run([sampled, true_count, sampled_count])
    assert len(set(s.tolist())) == 5
    assert np.all((s >= 0) & (s < 10))
    p = (np.log(s + 2.0) - np.log(s + 1.0)) / np.log(11.0)
    # 1 - (1 - p)^tries for one number of draws: solve for it from the first and check the rest.
    tries = np.log1p(-c[0]) / np.log1p(-p[0])
    assert tries >= 5
    np.testing.assert_allclose(c, -np.expm1(tries * np.log1p(-p)), rtol=1e-5)
    p_true = (np.log(LABELS + 2.0) - np.log(LABELS + 1.0)) / np.log(11.0)
    np.testing.assert_allclose(t, -np.expm1(tries * np.log1p(-p_true)), rtol=1e-5)


def test_the_sampler_follows_the_log_uniform_distribution():
    sampled, _, counts = tf.nn.log_uniform_candidate_sampler(
        np.zeros((1, 1), np.int64), 1, 20000, False, 5, seed=3
    )
    with tf.Session() as sess:
        s, c = sess.run([sampled, counts])
    p = (np.log(np.arange(5) + 2.0) - np.log(np.arange(5) + 1.0)) / np.log(6.0)
    np.testing.assert_allclose(np.bincount(s, minlength=5) / 20000, p, atol=0.015)
    np.testing.assert_allclose(c, 20000 * p[s], rtol=1e-5)


def test_a_unique_sample_larger_than_the_range_is_refused():
    sampled = tf.nn.log_uniform_candidate_sampler(LABELS, 2, 11, True, 10)[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Sampler's range is too small"):
            sess.run(sampled)
