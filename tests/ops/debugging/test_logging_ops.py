"""tf.Print and tf.Assert; expected text from TF's kernels (logging_ops.cc, Tensor::SummarizeValue).

The expected lines are what TensorFlow's own ``Print`` kernel wrote for the
same tensors (checked once against a TF install), and the Assert cases are
ports of ``logging_ops_test.py``.
"""

import threading

import numpy as np
import pytest

import minitf as tf


def _printed(capfd, data, summarize=None, message="m:") -> str:
    x = tf.constant([1, 2, 3])
    with tf.Session() as sess:
        sess.run(tf.Print(x, data, message=message, summarize=summarize))
    return capfd.readouterr().err


@pytest.mark.parametrize(
    "make, summarize, expected",
    [
        (lambda: [tf.constant([1, 2, 3]), tf.constant(4)], None, "m:[1 2 3][4]\n"),
        (lambda: [tf.constant(np.arange(10))], None, "m:[0 1 2...]\n"),
        (lambda: [tf.constant(np.arange(10).reshape(2, 5))], None, "m:[[0 1 2...]...]\n"),
        (lambda: [tf.constant(np.arange(10).reshape(2, 5))], 7, "m:[[0 1 2 3 4][5 6...]...]\n"),
        (lambda: [tf.constant(np.arange(24).reshape(2, 3, 4))], 5, "m:[[[0 1 2 3][4...]]...]\n"),
        (
            lambda: [tf.constant(np.arange(24).reshape(2, 3, 4))],
            -1,
            "m:[[[0 1 2 3][4 5 6 7][8 9 10 11]][[12 13 14 15][16 17 18 19][20 21 22 23]]]\n",
        ),
        (lambda: [tf.constant([1.5, 0.1, 1e20, 1 / 3.0])], 10, "m:[1.5 0.1 1e+20 0.333333343]\n"),
        (
            lambda: [tf.constant([1.5, 0.1, 1e20, 1 / 3.0], tf.float64)],
            10,
            "m:[1.5 0.1 1e+20 0.33333333333333331]\n",
        ),
        (
            lambda: [tf.constant([np.nan, np.inf, -np.inf, -0.0, 1e-5, 123456789.0])],
            10,
            "m:[nan inf -inf -0 1e-05 123456792]\n",
        ),
        (lambda: [tf.constant([True, False])], None, "m:[1 0]\n"),
        (lambda: [tf.constant(["ab", "c\n'd\""])], None, "m:[ab c\\n\\'d\\\"]\n"),
        (lambda: [tf.constant(np.zeros((2, 0)))], None, "m:[]\n"),
        (lambda: [tf.constant(3.0)], None, "m:[3]\n"),
        (lambda: [tf.constant(np.arange(6).reshape(3, 2))], 3, "m:[[0 1][2...]...]\n"),
        (lambda: [tf.constant(np.arange(5))], 0, "m:[...]\n"),
        (lambda: ["hello", tf.constant(7)], None, "m:[hello][7]\n"),
    ],
)
def test_print_writes_message_and_data_as_tf_does(capfd, make, summarize, expected):
    assert _printed(capfd, make(), summarize) == expected


def test_print_passes_its_input_through_with_its_shape():
    x = tf.constant([[1.0, 2.0]])
    y = tf.Print(x, [x])
    assert y.op.type == "Print"
    assert y.dtype == tf.float32 and y.get_shape().as_list() == [1, 2]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [[1.0, 2.0]])


def test_print_first_n_limits_the_lines(capfd):
    x = tf.constant([1, 2, 3])
    p = tf.Print(x, [x], "first:", first_n=2)
    with tf.Session() as sess:
        for _ in range(4):
            sess.run(p)
    assert capfd.readouterr().err == "first:[1 2 3]\nfirst:[1 2 3]\n"


def test_print_gradient_flows_to_its_input():
    x = tf.constant(3.0)
    y = tf.Print(x, [x]) * 2.0
    with tf.Session() as sess:
        assert sess.run(tf.gradients(y, x)[0]) == 2.0


def test_print_of_a_constant_is_not_folded_away(capfd):
    p = tf.Print(tf.constant(1), [tf.constant(5)], "run:")
    with tf.Session() as sess:
        sess.run(p)
        sess.run(p)
    assert capfd.readouterr().err == "run:[5]\nrun:[5]\n"


class _Lines:
    """A task output that says when a line containing ``wanted`` has come."""

    def __init__(self, wanted: str):
        self.wanted = wanted
        self.lines: list[str] = []
        self.seen = threading.Event()

    def write(self, text: str) -> None:
        self.lines.append(text)
        if self.wanted in text:
            self.seen.set()

    def flush(self) -> None:
        pass


@pytest.mark.timeout(60)
def test_print_writes_on_the_task_it_is_placed_on():
    from minitf.runtime.distributed.launcher import LocalCluster

    out = _Lines("on ps:")
    with LocalCluster({"ps": 1, "worker": 1}, output=out) as cluster:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([7, 8], name="v")
            p = tf.Print(v.read_value(), [v], "on ps:")
        with tf.device("/job:worker/task:0"):
            y = p + 1
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(y), [8, 9])
            assert out.seen.wait(30)
    # The ps process wrote it (the cluster prefixes each task's lines), not this one.
    assert [line for line in out.lines if "on ps:" in line] == ["[ps/0] on ps:[7 8]\n"]


def test_assert_passes_when_true_and_fails_with_its_data_when_false():
    ok = tf.Assert(tf.constant(True), ["never written"])
    bad = tf.Assert(
        tf.constant(False),
        ["msg", tf.constant([1.0, 2.0]), tf.constant(np.arange(12).reshape(3, 4))],
    )
    with tf.Session() as sess:
        sess.run(ok)
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"^assertion failed: \[msg\] \[1 2\] \[\[0 1 2\.\.\.\]\.\.\.\]",
        ):
            sess.run(bad)


def test_assert_of_int32_and_string_data_is_one_assert_op_else_guarded_by_a_cond():
    plain = tf.Assert(tf.constant(False), ["x", tf.constant([1, 2])], name="plain")
    assert plain.type == "Assert" and plain.name == "plain/Assert"
    guarded = tf.Assert(tf.constant(False), [tf.constant(1.0)], name="guarded")
    assert guarded.type == "Merge" and guarded.name == "guarded/AssertGuard/Merge"


def test_assert_summarize_writes_more_elements():
    a = tf.Assert(tf.constant(False), [tf.constant(np.arange(5))], summarize=4)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[0 1 2 3\.\.\.\]"):
            sess.run(a)


def test_assert_condition_must_be_a_scalar():
    a = tf.Assert(tf.constant([False, True]), [1])
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"In\[0\] should be a scalar: \[2\]"
        ):
            sess.run(a)


def test_assert_in_control_dependencies_guards_the_result():
    # logging_ops_test.testAssertDivideByZero: the check runs before the division.
    x = tf.placeholder(tf.float32, [])
    with tf.control_dependencies([tf.Assert(tf.not_equal(x, 0.0), [x])]):
        y = tf.identity(1.0 / x)
    with tf.Session() as sess:
        assert sess.run(y, {x: 4.0}) == 0.25
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"assertion failed: \[0\]"):
            sess.run(y, {x: 0.0})


def test_debugging_namespace_has_assert():
    assert tf.debugging.Assert is tf.Assert
    assert tf.debugging.assert_equal is tf.assert_equal
