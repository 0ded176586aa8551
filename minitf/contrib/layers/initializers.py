"""``tf.contrib.layers`` initializers: ``variance_scaling_initializer`` and Xavier.

These are contrib's own formulas, not ``tf.variance_scaling_initializer``'s:
the normal variant is a truncated normal with stddev ``sqrt(1.3 * factor / n)``
and the uniform one draws in ``±sqrt(3 * factor / n)``, ``n`` the fan-in,
fan-out or their mean (a convolution kernel's fans include its window).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from minitf.framework import dtypes
from minitf.ops.random import random_ops

_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


def _fans(shape: list) -> tuple[float, float]:
    """``(fan_in, fan_out)``: the last two dimensions, times the window for kernels."""
    if not shape:
        return 1.0, 1.0
    fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
    fan_out = float(shape[-1])
    for dim in shape[:-2]:
        fan_in *= float(dim)
        fan_out *= float(dim)
    return fan_in, fan_out


def variance_scaling_initializer(
    factor: float = 2.0,
    mode: str = "FAN_IN",
    uniform: bool = False,
    seed: int | None = None,
    dtype: dtypes.DType = dtypes.float32,
) -> Callable:
    """An initializer keeping the variance of activations ``factor / n`` (He et al. by default).

    Args:
        factor: The variance multiplier (2.0: He initialization for ReLUs).
        mode: ``"FAN_IN"``, ``"FAN_OUT"`` or ``"FAN_AVG"``: what ``n`` is.
        uniform: Draw uniformly instead of from a truncated normal.
        seed: The op-level seed.
        dtype: The dtype of the values (a float type).

    Returns:
        ``initializer(shape, dtype=dtype, partition_info=None)``.

    Raises:
        TypeError: for a non-float ``dtype`` or an unknown ``mode``.
    """
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _MODES:
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

    def _initializer(shape, dtype=dtype, partition_info=None):
        dtype = dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        full = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = _fans([int(d) for d in full])
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
        if uniform:
            limit = math.sqrt(3.0 * factor / n)
            return random_ops.random_uniform(shape, -limit, limit, dtype, seed=seed)
        stddev = math.sqrt(1.3 * factor / n)
        return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=seed)

    return _initializer


def xavier_initializer(
    uniform: bool = True, seed: int | None = None, dtype: dtypes.DType = dtypes.float32
) -> Callable:
    """Glorot and Bengio's initializer: variance ``1 / ((fan_in + fan_out) / 2)``.

    Args:
        uniform: Uniform in ``±sqrt(6 / (fan_in + fan_out))``, else a truncated normal.
        seed: The op-level seed.
        dtype: A float dtype.
    """
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer
