"""tf.case: ports of control_flow_ops_py_test.py's testCase*."""

import pytest

import minitf as tf


def _consts():
    return tf.constant(1), tf.constant(2), tf.constant(3)


def test_case_picks_the_first_true_predicate_or_the_default():
    x, y, z = _consts()
    f1, f2, f3 = (lambda: tf.constant(17)), (lambda: tf.constant(23)), (lambda: tf.constant(-1))
    r1 = tf.case({x < y: f1, x > z: f2}, default=f3, exclusive=True)
    r2 = tf.case([(y > z, f1), (y > x, f2)], default=f3)
    r3 = tf.case([(x < y, f1), (x < y, f2)], default=f3)  # duplicates: the first wins
    r5 = tf.case({x > y: f1}, default=f3)
    with tf.Session() as sess:
        assert sess.run([r1, r2, r3, r5]) == [17, 23, 17, -1]


def test_exclusive_case_with_two_true_predicates_fails():
    x, y, _ = _consts()
    r4 = tf.case(
        [(x < y, lambda: tf.constant(17)), (x < y, lambda: tf.constant(23))],
        default=lambda: tf.constant(-1),
        exclusive=True,
    )
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input error: exclusive=True"):
            sess.run(r4)


def test_each_branch_is_built_once():
    x, y, _ = _consts()
    built = []

    def branch(i):
        def fn():
            built.append(i)
            return tf.constant(i)

        return fn

    r6 = tf.case([(x < y, branch(0)), (x > y, branch(1))], default=lambda: tf.constant(2))
    with tf.Session() as sess:
        assert sess.run(r6) == 0
    assert built == [0, 1]


def test_without_default_the_last_branch_is_checked():
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    r = tf.case([(p, lambda: tf.constant(1)), (q, lambda: tf.constant(2))])
    with tf.Session() as sess:
        assert sess.run(r, {p: True, q: False}) == 1
        assert sess.run(r, {p: False, q: True}) == 2
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"\[Input error: None of conditions evaluated as True:\] \[0 0\]",
        ):
            sess.run(r, {p: False, q: False})


def test_only_the_chosen_branch_runs():
    v = tf.Variable(0)
    p = tf.placeholder(tf.bool, [])
    r = tf.case([(p, lambda: tf.assign_add(v, 1))], default=lambda: tf.assign_add(v, 10))
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(r, {p: True})
        sess.run(r, {p: False})
        assert sess.run(v) == 11


def test_bad_pairs_say_what_is_wrong():
    x, y, _ = _consts()
    with pytest.raises(TypeError, match="fns must be a list, tuple, or dict"):
        tf.case(x < y)
    with pytest.raises(TypeError, match="Each entry in pred_fn_pairs must be a 2-tuple"):
        tf.case([[x < y, lambda: x]])
    with pytest.raises(TypeError, match="pred must be Tensor of type bool"):
        tf.case([(x, lambda: x)])
    with pytest.raises(TypeError, match="must be callable"):
        tf.case([(x < y, 1)])
