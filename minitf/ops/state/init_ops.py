"""TF1 initializers: callables that build the ops producing a variable's initial value.

An initializer is an object ``init(shape, dtype=None, partition_info=None)``
that returns a Tensor (``tf.get_variable(..., initializer=init)`` calls it).
It holds only its parameters; the randomness lives in the random ops it
builds, so seeding follows `random_seed.get_seed` like any random op.

The variance-scaling family (Glorot/Xavier, He, LeCun) draws with a standard
deviation ``sqrt(scale / n)``, where ``n`` is the fan-in, the fan-out or their
mean, computed from the shape by `_compute_fans`.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from minitf.framework import dtypes, tensor_shape
from minitf.ops.array import array_ops, constant_op
from minitf.ops.random import random_ops

__all__ = [
    "zeros_initializer",
    "ones_initializer",
    "constant_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "truncated_normal_initializer",
    "uniform_unit_scaling_initializer",
    "variance_scaling_initializer",
    "glorot_uniform_initializer",
    "glorot_normal_initializer",
]

_logger = logging.getLogger("minitf")

# The standard deviation of a unit normal truncated to [-2, 2]
# (scipy.stats.truncnorm.std(a=-2, b=2)); dividing by it makes the truncated
# draw have the requested variance.
_TRUNCATED_NORMAL_STDDEV = 0.87962566103423978


def _assert_float_dtype(dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


def _as_dims(shape) -> list[int]:
    """The shape as a list of ints (initializers need a fully known shape)."""
    return tensor_shape.as_shape(shape).as_list()


class Initializer:
    """The base class of initializers: a callable returning a Tensor of a given shape."""

    def __call__(self, shape, dtype=None, partition_info=None):
        """Returns a tensor of ``shape`` and ``dtype`` holding the initial value.

        Args:
            shape: The shape of the tensor.
            dtype: The element type; the initializer's own dtype if None.
            partition_info: For a partitioned variable, the full variable's
                shape (``partition_info.full_shape``); otherwise None.
        """
        raise NotImplementedError

    def _dtype_for(self, dtype) -> dtypes.DType:
        """The dtype of a call: the argument if given, else the initializer's own."""
        return self.dtype if dtype is None else dtypes.as_dtype(dtype).base_dtype

    def get_config(self) -> dict:
        """Returns the constructor arguments as a dict (``cls(**config)`` rebuilds it)."""
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        """Builds an initializer from the output of `get_config`.

        Args:
            config: A dict returned by `get_config`.
        """
        return cls(**config)


class Zeros(Initializer):
    """Initializes to zeros (``tf.zeros_initializer``).

    Args:
        dtype: The default dtype of the tensors it creates.
    """

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(shape, self._dtype_for(dtype))

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """Initializes to ones (``tf.ones_initializer``).

    Args:
        dtype: The default dtype of the tensors it creates.
    """

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(shape, self._dtype_for(dtype))

    def get_config(self) -> dict:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """Initializes to a constant (``tf.constant_initializer``).

    A scalar ``value`` fills the whole tensor; a list shorter than the tensor
    is padded with its last element, as ``tf.constant`` does in TF1.

    Args:
        value: A Python scalar, a list or tuple of values, or a numpy array.
        dtype: The default element type.
        verify_shape: If True, ``value``'s shape must equal the requested shape.

    Raises:
        TypeError: if ``value`` is of another type.
    """

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(
                f"Invalid type for initial value: {type(value)} (expected Python scalar, list "
                "or tuple of values, or numpy.ndarray)."
            )
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        if verify_shape is None:
            verify_shape = self._verify_shape
        return constant_op.constant(
            self.value, dtype=self._dtype_for(dtype), shape=shape, verify_shape=verify_shape
        )

    def get_config(self) -> dict:
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Initializes with uniform random values in ``[minval, maxval)``.

    Args:
        minval: The lower bound.
        maxval: The upper bound; defaults to 1 for floating-point types.
        seed: The op-level seed.
        dtype: The default element type (float or integer).
    """

    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval = minval
        self.maxval = maxval
        self.seed = seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(
            shape, self.minval, self.maxval, self._dtype_for(dtype), seed=self.seed
        )

    def get_config(self) -> dict:
        return {
            "minval": self.minval,
            "maxval": self.maxval,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class RandomNormal(Initializer):
    """Initializes with normal random values.

    Args:
        mean: The mean.
        stddev: The standard deviation.
        seed: The op-level seed.
        dtype: The default element type (floating point only).
    """

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(
            shape, self.mean, self.stddev, self._dtype_for(dtype), seed=self.seed
        )

    def get_config(self) -> dict:
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class TruncatedNormal(Initializer):
    """Initializes with normal values re-drawn when more than 2 stddev from the mean.

    Args:
        mean: The mean.
        stddev: The standard deviation before truncation.
        seed: The op-level seed.
        dtype: The default element type (floating point only).
    """

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(
            shape, self.mean, self.stddev, self._dtype_for(dtype), seed=self.seed
        )

    def get_config(self) -> dict:
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class UniformUnitScaling(Initializer):
    """Uniform in ``±sqrt(3 / input_size) * factor`` (deprecated in TF1 for VarianceScaling).

    ``input_size`` is the product of all dimensions but the last.

    Args:
        factor: A multiplier of the range.
        seed: The op-level seed.
        dtype: The default element type (floating point only).
    """

    def __init__(self, factor=1.0, seed=None, dtype=dtypes.float32):
        self.factor = factor
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        scale_shape = _as_dims(shape if partition_info is None else partition_info.full_shape)
        input_size = max(float(np.prod(scale_shape[:-1], dtype=np.float64)), 1.0)
        max_val = math.sqrt(3 / input_size) * self.factor
        return random_ops.random_uniform(
            shape, -max_val, max_val, self._dtype_for(dtype), seed=self.seed
        )

    def get_config(self) -> dict:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


def _compute_fans(shape: list[int]) -> tuple[int, int]:
    """Fan-in and fan-out of a weight of ``shape``.

    A matrix ``[in, out]`` has fans ``in`` and ``out``; a convolution kernel
    ``[..., in, out]`` multiplies both by its receptive field (the product of
    the leading dimensions).
    """
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    receptive_field = 1
    for dim in shape[:-2]:
        receptive_field *= dim
    return int(shape[-2] * receptive_field), int(shape[-1] * receptive_field)


class VarianceScaling(Initializer):
    """Draws with variance ``scale / n``, ``n`` the fan-in, fan-out or their mean.

    Args:
        scale: A positive scaling factor.
        mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"``.
        distribution: ``"truncated_normal"`` (stddev corrected for the
            truncation; TF1 also accepts its old alias ``"normal"``),
            ``"untruncated_normal"`` or ``"uniform"`` (in ``±sqrt(3 * scale / n)``).
        seed: The op-level seed.
        dtype: The default element type (floating point only).

    Raises:
        ValueError: for a non-positive ``scale`` or an unknown ``mode`` or
            ``distribution``.
    """

    def __init__(
        self,
        scale=1.0,
        mode="fan_in",
        distribution="truncated_normal",
        seed=None,
        dtype=dtypes.float32,
    ):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError(f"Invalid `mode` argument: {mode}")
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        if distribution == "normal":
            _logger.warning(
                "`normal` is a deprecated alias for `truncated_normal` (VarianceScaling)."
            )
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def _scale_for(self, shape) -> float:
        fan_in, fan_out = _compute_fans(_as_dims(shape))
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        return self.scale / max(1.0, denominator[self.mode])

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype_for(dtype)
        scale = self._scale_for(shape if partition_info is None else partition_info.full_shape)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_NORMAL_STDDEV
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            stddev = math.sqrt(scale)
            return random_ops.random_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict:
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class GlorotUniform(VarianceScaling):
    """Glorot (Xavier) uniform: uniform in ``±sqrt(6 / (fan_in + fan_out))``.

    Args:
        seed: The op-level seed.
        dtype: The default element type (floating point only).
    """

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(scale=1.0, mode="fan_avg", distribution="uniform", seed=seed, dtype=dtype)

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Glorot (Xavier) normal: truncated normal with stddev ``sqrt(2 / (fan_in + fan_out))``.

    Args:
        seed: The op-level seed.
        dtype: The default element type (floating point only).
    """

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(
            scale=1.0, mode="fan_avg", distribution="truncated_normal", seed=seed, dtype=dtype
        )

    def get_config(self) -> dict:
        return {"seed": self.seed, "dtype": self.dtype.name}


def lecun_normal(seed=None) -> VarianceScaling:
    """LeCun normal: truncated normal with stddev ``sqrt(1 / fan_in)``.

    Args:
        seed: The op-level seed of the random op.
    """
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def lecun_uniform(seed=None) -> VarianceScaling:
    """LeCun uniform: uniform in ``±sqrt(3 / fan_in)``.

    Args:
        seed: The op-level seed of the random op.
    """
    return VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform", seed=seed)


def he_normal(seed=None) -> VarianceScaling:
    """He normal: truncated normal with stddev ``sqrt(2 / fan_in)``.

    Args:
        seed: The op-level seed of the random op.
    """
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal", seed=seed)


def he_uniform(seed=None) -> VarianceScaling:
    """He uniform: uniform in ``±sqrt(6 / fan_in)``.

    Args:
        seed: The op-level seed of the random op.
    """
    return VarianceScaling(scale=2.0, mode="fan_in", distribution="uniform", seed=seed)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
