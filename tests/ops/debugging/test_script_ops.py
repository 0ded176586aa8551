"""py_func / numpy_function: conversions, errors and folding as TF's py_func_test.py has them."""

import numpy as np
import pytest

import minitf as tf


def test_py_func_runs_the_function_on_numpy_values():
    x = tf.constant([1.0, 2.0])
    y = tf.py_func(lambda a: a * 2, [x], tf.float32)
    assert y.op.type == "PyFunc" and y.dtype == tf.float32
    assert y.op.get_attr("token").startswith("pyfunc_")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [2.0, 4.0])


def test_scalar_inputs_arrive_as_numpy_scalars_and_bytes():
    seen = []
    out = tf.py_func(
        lambda a, b, c: seen.append((a, b, c)) or np.int64(0),
        [tf.constant(3), tf.constant("ab"), tf.constant(["x", "yz"])],
        tf.int64,
    )
    with tf.Session() as sess:
        sess.run(out)
    ((a, b, c),) = seen
    assert type(a) is np.int32 and a == 3
    assert b == b"ab"
    assert c.dtype == object and list(c) == [b"x", b"yz"]


def test_list_tout_returns_a_list_and_empty_tout_the_op():
    a, b = tf.py_func(lambda: (np.float32(1), b"s"), [], [tf.float32, tf.string])
    op = tf.py_func(lambda: None, [], [])
    assert isinstance(op, tf.Operation)
    with tf.Session() as sess:
        assert sess.run([a, b]) == [1.0, b"s"]
        sess.run(op)
    assert tf.numpy_function(lambda: np.int64(7), [], tf.int64).op.type == "PyFunc"


@pytest.mark.parametrize(
    "func, tout, error, message",
    [
        (
            lambda: np.array([1, 2]),
            tf.float32,
            "InvalidArgumentError",
            "is int64, but expects float",
        ),
        (lambda: 3.5, tf.int32, "InvalidArgumentError", "is double, but expects int32"),
        (lambda: np.float64(3), tf.float32, "InvalidArgumentError", "is double, but expects float"),
        (lambda: [1.0, 2.0], tf.float32, "InvalidArgumentError", "returns 2 values, but expects"),
        (lambda: np.float32(1), [tf.float32] * 2, "InvalidArgumentError", "returns 1 values, but"),
    ],
)
def test_results_not_matching_tout_fail_the_step(func, tout, error, message):
    out = tf.py_func(func, [], tout)
    with tf.Session() as sess:
        with pytest.raises(getattr(tf.errors, error), match=r"pyfunc_\d+ " + message.split(",")[0]):
            sess.run(out)


@pytest.mark.parametrize(
    "exc, error",
    [
        (ValueError("boom"), "InvalidArgumentError"),
        (TypeError("boom"), "InvalidArgumentError"),
        (StopIteration(), "OutOfRangeError"),
        (NotImplementedError("boom"), "UnimplementedError"),
        (RuntimeError("boom"), "UnknownError"),
    ],
)
def test_an_exception_of_the_function_fails_the_step_with_tfs_class(exc, error):
    def raises():
        raise exc

    out = tf.py_func(raises, [], tf.float32, name="failing")
    with tf.Session() as sess:
        with pytest.raises(getattr(tf.errors, error)) as info:
            sess.run(out)
    assert info.value.message.startswith(type(exc).__name__)
    assert info.value.op.name == "failing"


def test_stateful_runs_every_time_stateless_is_folded_once():
    # py_func_test.testStateful / testStateless: TF folds the stateless one.
    counter = iter(range(10))
    stateful = tf.py_func(lambda: np.int64(next(counter)), [], tf.int64)
    counter2 = iter(range(10))
    stateless = tf.py_func(lambda: np.int64(next(counter2)), [], tf.int64, stateful=False)
    assert stateless.op.type == "PyFuncStateless"
    with tf.Session() as sess:
        assert [sess.run(stateful) for _ in range(3)] == [0, 1, 2]
        assert [sess.run(stateless) for _ in range(3)] == [0, 0, 0]


def test_py_func_has_no_gradient():
    x = tf.constant(2.0)
    assert tf.gradients(tf.py_func(lambda a: a, [x], tf.float32), x) == [None]


def test_a_token_this_process_does_not_have_is_tfs_error():
    # What a task of another process meets: the graph names a function it never registered.
    from minitf.ops.debugging import script_ops

    out = tf.py_func(lambda: np.float32(1), [], tf.float32)
    script_ops._py_funcs.remove(out.op.get_attr("token"))
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"callback pyfunc_\d+ is not found"
        ):
            sess.run(out)


def test_the_registry_forgets_a_graph_s_functions_with_the_graph():
    import gc

    from minitf.ops.debugging import script_ops

    with tf.Graph().as_default():
        token = tf.py_func(lambda: np.float32(1), [], tf.float32).op.get_attr("token")
        assert script_ops._py_funcs.lookup(token) is not None
    gc.collect()
    with pytest.raises(ValueError, match=f"callback {token} is not found"):
        script_ops._py_funcs.lookup(token)


@pytest.mark.timeout(60)
def test_py_func_placed_on_another_process_is_not_found_there():
    from minitf.runtime.distributed.launcher import LocalCluster

    with LocalCluster({"ps": 1}, output=None) as cluster:
        with tf.device("/job:ps/task:0"):
            out = tf.py_func(lambda: np.float32(1), [], tf.float32, name="remote")
        with tf.Session(cluster.target("ps", 0)) as sess:
            with pytest.raises(
                tf.errors.InvalidArgumentError, match=r"callback pyfunc_\d+ is not found"
            ):
                sess.run(out)
