"""TF1 initializers: values, shapes, dtypes, statistics, configs and errors."""

import logging
import math

import numpy as np
import pytest

import minitf as tf
from minitf.framework import random_seed
from minitf.ops.state import init_ops

pytestmark = pytest.mark.timeout(60)


def _run(tensor):
    with tf.Session() as sess:
        return sess.run(tensor)


def test_zeros_and_ones_initializers():
    zeros = init_ops.zeros_initializer()([2, 3])
    ones = init_ops.ones_initializer(dtype=tf.int32)([4])
    assert zeros.shape.as_list() == [2, 3] and zeros.dtype == tf.float32
    z, o = _run(zeros), _run(ones)
    assert z.dtype == np.float32 and o.dtype == np.int32
    np.testing.assert_array_equal(z, np.zeros((2, 3)))
    np.testing.assert_array_equal(o, np.ones(4))


def test_call_dtype_overrides_the_initializer_dtype():
    value = _run(init_ops.ones_initializer()(tf.TensorShape([2]), dtype=tf.float64))
    assert value.dtype == np.float64


def test_constant_initializer_scalar_list_and_verify_shape():
    filled = _run(init_ops.constant_initializer(0.5)([2, 2]))
    padded = _run(init_ops.constant_initializer([1.0, 2.0])([4]))
    np.testing.assert_array_equal(filled, np.full((2, 2), 0.5, np.float32))
    np.testing.assert_array_equal(padded, [1.0, 2.0, 2.0, 2.0])  # TF1 pads with the last value
    assert padded.dtype == np.float32
    with pytest.raises(TypeError):
        init_ops.constant_initializer([1.0, 2.0], verify_shape=True)([4])
    with pytest.raises(TypeError, match="Invalid type for initial value"):
        init_ops.constant_initializer({"a": 1})


def test_random_normal_initializer_statistics():
    value = _run(init_ops.random_normal_initializer(mean=1.0, stddev=0.5, seed=1)([100, 1000]))
    assert value.dtype == np.float32 and value.shape == (100, 1000)
    assert abs(value.mean() - 1.0) < 0.01
    assert abs(value.std() - 0.5) < 0.01


def test_truncated_normal_initializer_stays_within_two_stddev():
    value = _run(init_ops.truncated_normal_initializer(stddev=0.1, seed=2)([100_000]))
    assert np.all(np.abs(value) <= 0.2)
    assert abs(value.std() - 0.1 * 0.87962566) < 0.002


def test_random_uniform_initializer_range_and_int_dtype():
    value = _run(init_ops.random_uniform_initializer(-0.1, 0.1, seed=3)([100_000]))
    assert value.min() >= -0.1 and value.max() < 0.1
    assert abs(value.mean()) < 0.002
    ints = _run(init_ops.random_uniform_initializer(0, 5, dtype=tf.int32)([1000]))
    assert ints.dtype == np.int32 and set(np.unique(ints)) == set(range(5))


def test_glorot_uniform_limit_is_sqrt_6_over_fan_sum():
    value = _run(init_ops.glorot_uniform_initializer(seed=4)([300, 500]))
    limit = math.sqrt(6.0 / (300 + 500))
    assert value.dtype == np.float32 and value.shape == (300, 500)
    assert np.all(np.abs(value) <= limit)
    assert np.abs(value).max() > 0.99 * limit
    assert abs(value.var() - limit**2 / 3) < 0.02 * limit**2


def test_glorot_normal_has_variance_two_over_fan_sum():
    # The stddev is divided by 0.8796 so that the *truncated* draw has variance 2/(in+out).
    value = _run(init_ops.glorot_normal_initializer(seed=5)([300, 500]))
    expected_std = math.sqrt(2.0 / 800)
    assert abs(value.std() - expected_std) < 0.02 * expected_std
    assert np.all(np.abs(value) <= 2 * expected_std / 0.87962566 + 1e-6)


@pytest.mark.parametrize(
    "mode, fan",
    [("fan_in", 3 * 3 * 16), ("fan_out", 3 * 3 * 32), ("fan_avg", 3 * 3 * (16 + 32) / 2)],
)
def test_variance_scaling_modes_use_convolution_fans(mode, fan):
    init = init_ops.variance_scaling_initializer(
        scale=2.0, mode=mode, distribution="uniform", seed=6
    )
    value = _run(init([3, 3, 16, 32]))
    limit = math.sqrt(3.0 * 2.0 / fan)
    assert np.all(np.abs(value) <= limit)
    assert np.abs(value).max() > 0.99 * limit


def test_variance_scaling_untruncated_normal_std():
    init = init_ops.variance_scaling_initializer(
        scale=4.0, mode="fan_in", distribution="untruncated_normal", seed=7
    )
    value = _run(init([400, 250]))
    assert abs(value.std() - math.sqrt(4.0 / 400)) < 0.002


def test_variance_scaling_default_is_truncated_normal_over_fan_in():
    init = init_ops.variance_scaling_initializer(seed=8)
    assert (init.scale, init.mode, init.distribution) == (1.0, "fan_in", "truncated_normal")
    value = _run(init([500, 200]))
    assert abs(value.std() - math.sqrt(1.0 / 500)) < 0.001
    assert _truncated_normal_in(init([500, 200]))


def _truncated_normal_in(tensor):
    return any(op.type == "TruncatedNormal" for op in tensor.graph.get_operations())


def test_variance_scaling_normal_is_a_deprecated_truncated_normal_alias():
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("minitf")
    logger.addHandler(handler)
    try:
        init = init_ops.variance_scaling_initializer(distribution="Normal")
    finally:
        logger.removeHandler(handler)
    assert init.distribution == "normal"
    assert any("deprecated" in r.getMessage() for r in records)
    assert _truncated_normal_in(init([4, 4]))


def test_variance_scaling_uses_the_full_shape_of_a_partitioned_variable():
    class PartitionInfo:
        full_shape = [1000, 10]

    init = init_ops.variance_scaling_initializer(distribution="uniform", seed=9)
    value = _run(init([10, 10], partition_info=PartitionInfo()))
    assert value.shape == (10, 10)
    assert np.all(np.abs(value) <= math.sqrt(3.0 / 1000))


def test_variance_scaling_errors():
    with pytest.raises(ValueError, match="`scale` must be positive float"):
        init_ops.VarianceScaling(scale=0.0)
    with pytest.raises(ValueError, match="Invalid `mode` argument"):
        init_ops.VarianceScaling(mode="fan_max")
    with pytest.raises(ValueError, match="Invalid `distribution` argument"):
        init_ops.VarianceScaling(distribution="cauchy")
    with pytest.raises(ValueError, match="Expected floating point type"):
        init_ops.VarianceScaling(dtype=tf.int32)
    with pytest.raises(ValueError, match="Expected floating point type"):
        init_ops.RandomNormal(dtype=tf.int32)


@pytest.mark.parametrize(
    "factory, scale, uniform",
    [
        (init_ops.he_normal, 2.0, False),
        (init_ops.he_uniform, 2.0, True),
        (init_ops.lecun_normal, 1.0, False),
        (init_ops.lecun_uniform, 1.0, True),
    ],
)
def test_he_and_lecun_scale_by_fan_in(factory, scale, uniform):
    value = _run(factory(seed=10)([400, 300]))
    assert abs(value.std() - math.sqrt(scale / 400)) < 0.02 * math.sqrt(scale / 400)
    if uniform:
        assert np.all(np.abs(value) <= math.sqrt(3 * scale / 400))


def test_uniform_unit_scaling_range():
    value = _run(init_ops.uniform_unit_scaling_initializer(factor=2.0, seed=11)([50, 4, 10]))
    limit = math.sqrt(3.0 / 200) * 2.0
    assert np.all(np.abs(value) <= limit)
    assert np.abs(value).max() > 0.95 * limit


def test_seeded_initializer_is_reproducible_across_graphs():
    def draw():
        with tf.Graph().as_default():
            return _run(init_ops.glorot_uniform_initializer(seed=12)([3, 3]))

    np.testing.assert_array_equal(draw(), draw())


def test_graph_seed_makes_unseeded_initializers_reproducible():
    def draw():
        with tf.Graph().as_default():
            random_seed.set_random_seed(13)
            return _run(init_ops.random_normal_initializer()([3, 3]))

    np.testing.assert_array_equal(draw(), draw())


@pytest.mark.parametrize(
    "init, config",
    [
        (init_ops.Zeros(), {"dtype": "float32"}),
        (init_ops.Constant(3.0, dtype=tf.float64), {"value": 3.0, "dtype": "float64"}),
        (
            init_ops.RandomUniform(-1.0, 1.0, seed=2),
            {"minval": -1.0, "maxval": 1.0, "seed": 2, "dtype": "float32"},
        ),
        (
            init_ops.TruncatedNormal(0.0, 0.5),
            {"mean": 0.0, "stddev": 0.5, "seed": None, "dtype": "float32"},
        ),
        (
            init_ops.VarianceScaling(2.0, "fan_out", "uniform"),
            {
                "scale": 2.0,
                "mode": "fan_out",
                "distribution": "uniform",
                "seed": None,
                "dtype": "float32",
            },
        ),
        (init_ops.GlorotUniform(seed=1), {"seed": 1, "dtype": "float32"}),
    ],
)
def test_get_config_round_trips(init, config):
    assert init.get_config() == config
    rebuilt = type(init).from_config(init.get_config())
    assert rebuilt.get_config() == config


def test_tf1_names_are_the_classes():
    assert init_ops.zeros_initializer is init_ops.Zeros
    assert init_ops.glorot_uniform_initializer is init_ops.GlorotUniform
    assert init_ops.variance_scaling_initializer is init_ops.VarianceScaling
    assert isinstance(init_ops.glorot_normal_initializer(), init_ops.VarianceScaling)
