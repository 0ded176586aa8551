"""The assert_* checks: TF 1.15's static checks and messages (ports of check_ops_test.py)."""

import numpy as np
import pytest

import minitf as tf


def test_assert_equal_of_known_unequal_values_raises_at_construction():
    # check_ops_test: test_raises_when_greater (static), with TF's message lines.
    small, big = tf.constant([1, 2], name="small"), tf.constant([3, 4], name="big")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.assert_equal(big, small, message="fail")
    assert str(info.value).split("\n") == [
        "fail",
        "Condition x == y did not hold element-wise:",
        "x (big:0) = ",
        "[3 4]",
        "y (small:0) = ",
        "[1 2]",
    ]


@pytest.mark.parametrize(
    "check, x, y",
    [
        (tf.assert_equal, [1, 2], [1, 2]),
        (tf.assert_none_equal, [1, 2], [3, 4]),
        (tf.assert_less, [1, 2], [3, 4]),
        (tf.assert_less_equal, [1, 2], [1, 4]),
        (tf.assert_greater, [3, 4], [1, 2]),
        (tf.assert_greater_equal, [3, 4], [3, 2]),
        (tf.assert_less, np.zeros((0,)), np.zeros((0,))),
    ],
)
def test_a_check_that_holds_runs_quietly(check, x, y):
    with tf.Session() as sess:
        sess.run(check(tf.constant(x), tf.constant(y)))


@pytest.mark.parametrize(
    "check, sym, x, y",
    [
        (tf.assert_none_equal, "!=", [1, 2], [1, 4]),
        (tf.assert_less, "<", [1, 5], [3, 4]),
        (tf.assert_less_equal, "<=", [2, 2], [1, 4]),
        (tf.assert_greater, ">", [3, 1], [1, 2]),
        (tf.assert_greater_equal, ">=", [3, 1], [3, 2]),
    ],
)
def test_a_failing_known_comparison_raises_at_once_with_its_condition(check, sym, x, y):
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"Condition x {sym} y did not hold"):
        check(tf.constant(x), tf.constant(y))


def test_a_failing_fed_comparison_fails_the_step_with_the_assert_text():
    x = tf.placeholder(tf.int32, [2], name="x")
    check = tf.assert_equal(x, tf.constant([1, 2], name="y"))
    with tf.Session() as sess:
        sess.run(check, {x: [1, 2]})
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(check, {x: [1, 5]})
    assert info.value.message == (
        "assertion failed: [Condition x == y did not hold element-wise:] "
        "[x (x:0) = ] [1 5] [y (y:0) = ] [1 2]"
    )


def test_sign_checks_write_tf1s_empty_message_first():
    # TF1 keeps message or '' as the first datum, so the static text starts with a newline.
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.assert_positive(tf.constant([-1.0, 1.0], name="c"))
    assert str(info.value) == "\nCondition x > 0 did not hold element-wise:\nx (c:0) = \n[-1.  1.]"
    x = tf.placeholder(tf.float32, [2], name="p")
    checks = [tf.assert_negative(x), tf.assert_non_negative(x), tf.assert_non_positive(x)]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[\] \[Condition x >= 0"):
            sess.run(checks[1], {x: [1.0, -5.0]})
        sess.run(checks[0], {x: [-1.0, -5.0]})
        sess.run(checks[2], {x: [0.0, -5.0]})


def test_assert_rank_static_and_dynamic():
    x = tf.constant([1.0, 2.0], name="v")
    assert tf.assert_rank(x, 1).type == "NoOp"
    with pytest.raises(
        ValueError, match=r"^fail\.  Tensor v:0 must have rank 2\.  Received rank 1"
    ):
        tf.assert_rank(x, 2, message="fail")
    p = tf.placeholder(tf.float32, name="p")
    check = tf.assert_rank(p, 2)
    with tf.Session() as sess:
        sess.run(check, {p: np.zeros((2, 3))})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"must have rank\] \[2\]"):
            sess.run(check, {p: np.zeros(3)})


def test_assert_rank_wants_an_int32_scalar_rank():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="Rank must be a scalar"):
        tf.assert_rank(x, [1])
    with pytest.raises(TypeError, match="must be of type <dtype: 'int32'>"):
        tf.assert_rank(x, tf.constant(1.0))


def test_assert_type_is_static():
    x = tf.constant([1.0], name="f")
    assert tf.assert_type(x, tf.float32).type == "NoOp"
    with pytest.raises(TypeError, match=r"^  f:0 must be of type <dtype: 'int32'>$"):
        tf.assert_type(x, tf.int32)
