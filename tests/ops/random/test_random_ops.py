"""Random ops: graph structure, seeds, statistics, dtypes and errors."""

import numpy as np
import pytest

import minitf as tf
from minitf.framework import random_seed
from minitf.framework.op_registry import get_kernel_def
from minitf.ops.random import random_ops

pytestmark = pytest.mark.timeout(60)

N = 100_000


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _raw_op(tensor, op_type):
    return next(op for op in tensor.graph.get_operations() if op.type == op_type)


# -- graph structure -----------------------------------------------------------------------


def test_random_normal_builds_standard_normal_then_mul_and_add():
    y = random_ops.random_normal([2, 3], mean=1.0, stddev=2.0)
    assert y.op.name == "random_normal"
    assert y.shape.as_list() == [2, 3]
    raw = _raw_op(y, "RandomStandardNormal")
    assert raw.name == "random_normal/RandomStandardNormal"
    assert raw.get_attr("dtype") == tf.float32
    assert raw.get_attr("seed") == 0 and raw.get_attr("seed2") == 0
    assert {op.type for op in y.graph.get_operations()} >= {"Mul", y.op.type}


def test_random_uniform_float_and_int_ops():
    f = random_ops.random_uniform([4], minval=-1.0, maxval=3.0)
    i = random_ops.random_uniform([4], maxval=10, dtype=tf.int64)
    assert _raw_op(f, "RandomUniform").name == "random_uniform/RandomUniform"
    assert f.op.name == "random_uniform"
    assert i.op.type == "RandomUniformInt"
    assert i.op.name == "random_uniform_1"
    assert i.dtype == tf.int64


def test_truncated_normal_op_and_static_shape_from_a_placeholder_shape():
    shape = tf.placeholder(tf.int32, [2])
    y = random_ops.truncated_normal(shape)
    assert _raw_op(y, "TruncatedNormal").name == "truncated_normal/TruncatedNormal"
    assert y.shape.as_list() == [None, None]
    assert _run(y, {shape: [3, 5]}).shape == (3, 5)


def test_random_ops_are_registered_stateful():
    for op_type in (
        "RandomStandardNormal",
        "RandomUniform",
        "RandomUniformInt",
        "TruncatedNormal",
        "RandomShuffle",
        "Multinomial",
    ):
        assert get_kernel_def(op_type).stateful, op_type


def test_op_seed_attrs_come_from_get_seed():
    y = random_ops.random_uniform([2], seed=42)
    raw = _raw_op(y, "RandomUniform")
    assert (raw.get_attr("seed"), raw.get_attr("seed2")) == (random_seed.DEFAULT_GRAPH_SEED, 42)


def test_graph_seed_gives_op_seed_equal_to_last_op_id():
    random_seed.set_random_seed(5)
    y = random_ops.random_normal([3])
    raw = _raw_op(y, "RandomStandardNormal")
    # Before get_seed, the graph holds the shape, mean and stddev constants: ids 1, 2, 3.
    assert (raw.get_attr("seed"), raw.get_attr("seed2")) == (5, 3)


# -- seeds and sequences ---------------------------------------------------------------------


def _draw_in_fresh_graph(build, graph_seed=None, runs=1):
    with tf.Graph().as_default():
        if graph_seed is not None:
            random_seed.set_random_seed(graph_seed)
        y = build()
        with tf.Session() as sess:
            return [sess.run(y) for _ in range(runs)]


@pytest.mark.parametrize(
    "build",
    [
        lambda: random_ops.random_normal([5]),
        lambda: random_ops.random_uniform([5]),
        lambda: random_ops.truncated_normal([5]),
        lambda: random_ops.random_uniform([5], maxval=1000, dtype=tf.int32),
        lambda: random_ops.random_shuffle(np.arange(10)),
    ],
)
def test_graph_seed_makes_fresh_graphs_repeat_the_same_sequence(build):
    first = _draw_in_fresh_graph(build, graph_seed=7, runs=2)
    second = _draw_in_fresh_graph(build, graph_seed=7, runs=2)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])  # each run of one op draws new numbers


def test_op_seed_alone_is_reproducible_and_different_op_seeds_differ():
    a = _draw_in_fresh_graph(lambda: random_ops.random_normal([8], seed=1))
    b = _draw_in_fresh_graph(lambda: random_ops.random_normal([8], seed=1))
    c = _draw_in_fresh_graph(lambda: random_ops.random_normal([8], seed=2))
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])


def test_two_ops_under_one_graph_seed_get_different_streams():
    random_seed.set_random_seed(11)
    a = random_ops.random_normal([8])
    b = random_ops.random_normal([8])
    va, vb = _run([a, b])
    assert not np.array_equal(va, vb)


def test_new_session_replays_the_sequence_of_a_seeded_op():
    y = random_ops.random_uniform([4], seed=3)
    with tf.Session() as sess:
        first = [sess.run(y), sess.run(y)]
    with tf.Session() as sess:
        second = [sess.run(y), sess.run(y)]
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first[0], first[1])


def test_unseeded_op_differs_between_sessions():
    y = random_ops.random_normal([16])
    with tf.Session() as sess:
        first = sess.run(y)
    with tf.Session() as sess:
        second = sess.run(y)
    assert not np.array_equal(first, second)


# -- statistics and dtypes -------------------------------------------------------------------


def test_random_normal_statistics_and_dtype():
    value = _run(random_ops.random_normal([N], mean=2.0, stddev=3.0, seed=1))
    assert value.dtype == np.float32
    assert abs(value.mean() - 2.0) < 0.05
    assert abs(value.std() - 3.0) < 0.05


def test_random_normal_float64():
    value = _run(random_ops.random_normal([10], dtype=tf.float64))
    assert value.dtype == np.float64


def test_truncated_normal_stays_within_two_stddev():
    value = _run(random_ops.truncated_normal([N], mean=1.0, stddev=0.5, seed=2))
    assert value.dtype == np.float32
    assert np.all(np.abs(value - 1.0) <= 1.0)
    assert abs(value.mean() - 1.0) < 0.01
    # The standard deviation of a unit normal truncated to [-2, 2] is 0.8796.
    assert abs(value.std() - 0.5 * 0.87962566) < 0.01


def test_random_uniform_float_statistics():
    value = _run(random_ops.random_uniform([N], minval=-2.0, maxval=4.0, seed=3))
    assert value.dtype == np.float32
    assert value.min() >= -2.0 and value.max() < 4.0
    assert abs(value.mean() - 1.0) < 0.05
    assert abs(value.var() - 36.0 / 12.0) < 0.05


def test_random_uniform_default_range_is_unit_interval():
    value = _run(random_ops.random_uniform([1000], dtype=tf.float64))
    assert value.dtype == np.float64
    assert value.min() >= 0.0 and value.max() < 1.0


@pytest.mark.parametrize("dtype, np_dtype", [(tf.int32, np.int32), (tf.int64, np.int64)])
def test_random_uniform_int_range(dtype, np_dtype):
    value = _run(random_ops.random_uniform([N], minval=-3, maxval=4, dtype=dtype, seed=4))
    assert value.dtype == np_dtype
    assert set(np.unique(value)) == set(range(-3, 4))


def test_random_uniform_errors():
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        random_ops.random_uniform([3], dtype=tf.int32)
    with pytest.raises(ValueError, match="Invalid dtype"):
        random_ops.random_uniform([3], dtype=tf.bool)
    bad = random_ops.random_uniform([3], minval=5, maxval=5, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
        _run(bad)


def test_shape_argument_must_be_integer():
    with pytest.raises(TypeError, match="'shape'"):
        random_ops.random_normal([2.0, 3.0])


def test_random_shuffle_permutes_rows():
    rows = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = random_ops.random_shuffle(rows, seed=5)
    assert y.op.type == "RandomShuffle"
    assert y.shape.as_list() == [10, 2]
    value = _run(y)
    assert value.dtype == np.float32
    np.testing.assert_array_equal(value[np.argsort(value[:, 0])], rows)


def test_multinomial_frequencies_follow_softmax_probabilities():
    probs = np.array([0.1, 0.2, 0.7])
    samples = random_ops.multinomial(np.log([probs, probs[::-1]]), 20_000, seed=6)
    assert samples.op.type == "Multinomial"
    assert samples.dtype == tf.int64
    assert samples.shape.as_list() == [2, 20_000]
    value = _run(samples)
    assert value.dtype == np.int64
    for row, expected in zip(value, [probs, probs[::-1]]):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, expected, atol=0.015)


def test_categorical_takes_dtype():
    samples = random_ops.categorical([[0.0, 0.0]], 5, dtype=tf.int32)
    value = _run(samples)
    assert value.dtype == np.int32
    assert value.shape == (1, 5)


def test_float16_uniform_stays_below_maxval():
    value = _run(random_ops.random_uniform([N], dtype=tf.float16, seed=7))
    assert value.dtype == np.float16
    assert value.min() >= 0 and value.max() < 1
