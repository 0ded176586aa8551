"""Ports of TF 1.15's learning_rate_decay_test.py: expected rates from the formulas in numpy."""

import math

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)


def _rates(step: tf.Variable, rate, values):
    """The rate after assigning each of ``values`` to ``step``."""
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in values:
            sess.run(tf.assign(step, v))
            out.append(sess.run(rate))
    return out


def test_exponential_decay_continuous():
    step = 5
    rate = tf.train.exponential_decay(0.05, step, 10, 0.96)
    assert rate.op.name == "ExponentialDecay" and rate.dtype == tf.float32
    with tf.Session() as sess:
        assert sess.run(rate) == pytest.approx(0.05 * 0.96 ** (5.0 / 10.0), rel=1e-6)


def test_exponential_decay_staircase():
    step = tf.Variable(0, name="step")
    rate = tf.train.exponential_decay(0.1, step, 3, 0.96, staircase=True)
    got = _rates(step, rate, [1, 2, 100])
    np.testing.assert_allclose(got, [0.1, 0.1, 0.1 * 0.96 ** (100 // 3)], rtol=1e-6)


def test_decays_need_a_global_step():
    for fn in (
        tf.train.exponential_decay,
        tf.train.natural_exp_decay,
        tf.train.inverse_time_decay,
    ):
        with pytest.raises(ValueError, match=f"global_step is required for {fn.__name__}."):
            fn(0.1, None, 10, 0.5)
    with pytest.raises(ValueError, match="global_step is required for polynomial_decay."):
        tf.train.polynomial_decay(0.1, None, 10)
    with pytest.raises(ValueError, match="global_step is required for cosine_decay."):
        tf.train.cosine_decay(0.1, None, 10)


def test_piecewise_constant():
    x = tf.Variable(-999, name="x")
    rate = tf.train.piecewise_constant(x, [100, 110, 120], [1.0, 0.1, 0.01, 0.001])
    got = _rates(x, rate, [-999, 100, 105, 110, 120, 999])
    np.testing.assert_allclose(got, [1.0, 1.0, 0.1, 0.1, 0.01, 0.001], rtol=1e-6)


def test_piecewise_constant_with_the_global_step_as_an_optimizer_rate():
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(0.0, name="w")
    rate = tf.train.piecewise_constant(step, [1], [1.0, 0.5])
    train = tf.train.GradientDescentOptimizer(rate).minimize(-w, global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        # Steps 0 and 1 use 1.0, step 2 uses 0.5.
        assert sess.run(w) == pytest.approx(2.5)


def test_piecewise_constant_edge_cases():
    x_int = tf.Variable(0, dtype=tf.int32)
    with pytest.raises(ValueError, match="must have the same dtype as x"):
        tf.train.piecewise_constant(x_int, [0.0, 1.0], [1.0, 0.1, 0.01])
    with pytest.raises(ValueError, match="Values must have elements all with the same dtype"):
        tf.train.piecewise_constant(x_int, [0, 1], [1.0, 2, 3])
    with pytest.raises(ValueError, match="should be 1 less than the length of values"):
        tf.train.piecewise_constant(x_int, [0, 1, 2], [1.0, 2.0])
    # int32 boundaries widen to an int64 x.
    x_int64 = tf.Variable(0, dtype=tf.int64)
    rate = tf.train.piecewise_constant(x_int64, [1, 2, 3], [0.4, 0.5, 0.6, 0.7])
    np.testing.assert_allclose(_rates(x_int64, rate, [0, 1, 2, 3, 4]), [0.4, 0.4, 0.5, 0.6, 0.7])


LR, END, POWER = 0.1, 0.001, 0.5


@pytest.mark.parametrize(
    ("step", "cycle", "expected"),
    [
        (0, True, LR),
        (5, False, (LR - END) * 0.5**POWER + END),
        (10, False, END),
        (15, False, END),
        (15, True, (LR - END) * 0.25**POWER + END),
    ],
)
def test_polynomial_decay(step, cycle, expected):
    rate = tf.train.polynomial_decay(LR, step, 10, END, power=POWER, cycle=cycle)
    assert rate.op.name == "PolynomialDecay"
    with tf.Session() as sess:
        assert sess.run(rate) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("staircase", [False, True])
@pytest.mark.parametrize(
    ("decay", "formula"),
    [
        (tf.train.inverse_time_decay, lambda lr, rate, p: lr / (1 + rate * p)),
        (tf.train.natural_exp_decay, lambda lr, rate, p: lr * math.exp(-p * rate)),
    ],
)
def test_inverse_time_and_natural_exp_decay(decay, formula, staircase):
    k, decay_rate = 10, 0.96
    step = tf.Variable(0)
    rate = decay(0.1, step, k, decay_rate, staircase=staircase)
    expected = [formula(0.1, decay_rate, i // k if staircase else i / k) for i in range(k + 1)]
    np.testing.assert_allclose(_rates(step, rate, range(k + 1)), expected, rtol=1e-5)


def _np_cosine_decay(step, decay_steps, alpha=0.0):
    completed = min(step, decay_steps) / decay_steps
    decay = 0.5 * (1.0 + math.cos(math.pi * completed))
    return (1.0 - alpha) * decay + alpha


@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_cosine_decay(alpha):
    steps = list(range(0, 1500, 250))
    step = tf.Variable(0)
    rate = tf.train.cosine_decay(1.0, step, 1000, alpha=alpha)
    expected = [_np_cosine_decay(s, 1000, alpha) for s in steps]
    np.testing.assert_allclose(_rates(step, rate, steps), expected, rtol=1e-6, atol=1e-7)
