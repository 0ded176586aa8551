"""Learning-rate schedules: ``tf.train.exponential_decay``, ``piecewise_constant``, ...

Each function returns a tensor computed from ``global_step`` in the graph,
so the rate a step uses follows the step counter without any Python in the
loop: pass the result as an optimizer's ``learning_rate`` and increment the
global step with ``minimize(..., global_step=...)``. The formulas and op
names follow TF 1.15, whose functions build the ops of the Keras schedule
classes (``ExponentialDecay``, ``PiecewiseConstant``, ...) in the graph.
"""

from __future__ import annotations

import math
from typing import Any

from minitf.framework import dtypes, ops
from minitf.ops.array import constant_op
from minitf.ops.control_flow import case as case_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.math import math_ops

__all__ = [
    "cosine_decay",
    "exponential_decay",
    "inverse_time_decay",
    "natural_exp_decay",
    "piecewise_constant",
    "polynomial_decay",
]


def _require_step(global_step, what: str) -> None:
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")


def _recomp(learning_rate, global_step, decay_steps):
    """The initial rate as a tensor, and the step and ``decay_steps`` cast to its dtype."""
    initial = ops.convert_to_tensor(learning_rate, name="initial_learning_rate")
    dtype = initial.dtype
    return initial, math_ops.cast(global_step, dtype), math_ops.cast(decay_steps, dtype)


def _exponential(learning_rate, global_step, decay_steps, decay_rate, staircase, name):
    """``ExponentialDecay``: ``lr * decay_rate ** (step / decay_steps)``."""
    with ops.name_scope(name, "ExponentialDecay", [learning_rate, global_step]) as name:
        initial, step, decay_steps = _recomp(learning_rate, global_step, decay_steps)
        decay_rate = math_ops.cast(decay_rate, initial.dtype)
        p = step / decay_steps
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(initial, math_ops.pow(decay_rate, p), name=name)


def exponential_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> ops.Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)``.

    Args:
        learning_rate: The initial rate (a float or scalar float tensor).
        global_step: The step counter (a scalar tensor or variable).
        decay_steps: How many steps one factor of ``decay_rate`` takes.
        decay_rate: The decay factor.
        staircase: Decay in whole periods (``floor(global_step / decay_steps)``).
        name: The name scope (default ``"ExponentialDecay"``).

    Returns:
        A scalar tensor of ``learning_rate``'s dtype.

    Raises:
        ValueError: if ``global_step`` is None.
    """
    _require_step(global_step, "exponential_decay")
    return _exponential(learning_rate, global_step, decay_steps, decay_rate, staircase, name)


def natural_exp_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> ops.Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)``.

    Args:
        learning_rate: The initial rate.
        global_step: The step counter.
        decay_steps: The steps of one decay period.
        decay_rate: The decay rate.
        staircase: Decay in whole periods.
        name: The name scope (default ``"ExponentialDecay"``, as TF's).

    Returns:
        A scalar tensor of ``learning_rate``'s dtype.

    Raises:
        ValueError: if ``global_step`` is None.
    """
    _require_step(global_step, "natural_exp_decay")
    natural_exp_rate = math_ops.exp(math_ops.negative(decay_rate))
    return _exponential(learning_rate, global_step, decay_steps, natural_exp_rate, staircase, name)


def inverse_time_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> ops.Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)``.

    Args:
        learning_rate: The initial rate.
        global_step: The step counter.
        decay_steps: The steps of one decay period.
        decay_rate: The decay rate.
        staircase: Decay in whole periods.
        name: The name scope (default ``"InverseTimeDecay"``).

    Returns:
        A scalar tensor of ``learning_rate``'s dtype.

    Raises:
        ValueError: if ``global_step`` is None.
    """
    _require_step(global_step, "inverse_time_decay")
    with ops.name_scope(name, "InverseTimeDecay", [learning_rate, global_step]) as name:
        initial, step, decay_steps = _recomp(learning_rate, global_step, decay_steps)
        decay_rate = math_ops.cast(decay_rate, initial.dtype)
        p = step / decay_steps
        if staircase:
            p = math_ops.floor(p)
        one = math_ops.cast(constant_op.constant(1), initial.dtype)
        denom = math_ops.add(one, math_ops.multiply(decay_rate, p))
        return math_ops.divide(initial, denom, name=name)


def polynomial_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    end_learning_rate: Any = 0.0001,
    power: Any = 1.0,
    cycle: bool = False,
    name: str | None = None,
) -> ops.Tensor:
    """``(lr - end) * (1 - step / decay_steps) ** power + end``.

    Without ``cycle`` the step stops at ``decay_steps`` (the rate stays at
    ``end_learning_rate``); with it ``decay_steps`` grows to the first
    multiple of itself at or above the step, so the rate climbs back up.

    Args:
        learning_rate: The initial rate.
        global_step: The step counter.
        decay_steps: The steps to reach ``end_learning_rate``.
        end_learning_rate: The final rate.
        power: The polynomial's power.
        cycle: Restart the decay after ``decay_steps``.
        name: The name scope (default ``"PolynomialDecay"``).

    Returns:
        A scalar tensor of ``learning_rate``'s dtype.

    Raises:
        ValueError: if ``global_step`` is None.
    """
    _require_step(global_step, "polynomial_decay")
    with ops.name_scope(name, "PolynomialDecay", [learning_rate, global_step]) as name:
        initial, step, decay_steps_t = _recomp(learning_rate, global_step, decay_steps)
        end = math_ops.cast(end_learning_rate, initial.dtype)
        power = math_ops.cast(power, initial.dtype)
        if cycle:
            # The first multiple of decay_steps not below the step (1 at step 0).
            multiplier = control_flow_ops.cond(
                math_ops.equal(step, 0),
                lambda: constant_op.constant(1.0, dtype=initial.dtype),
                lambda: math_ops.ceil(step / decay_steps_t),
            )
            decay_steps_t = math_ops.multiply(decay_steps_t, multiplier)
        else:
            step = math_ops.minimum(step, decay_steps_t)
        p = math_ops.divide(step, decay_steps_t)
        scaled = math_ops.multiply(initial - end, math_ops.pow(1 - p, power))
        return math_ops.add(scaled, end, name=name)


def cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    alpha: Any = 0.0,
    name: str | None = None,
) -> ops.Tensor:
    """``lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)``.

    Args:
        learning_rate: The initial rate.
        global_step: The step counter.
        decay_steps: The steps of the half cosine.
        alpha: The final rate as a fraction of ``learning_rate``.
        name: The name scope (default ``"CosineDecay"``).

    Returns:
        A scalar tensor of ``learning_rate``'s dtype.

    Raises:
        ValueError: if ``global_step`` is None.
    """
    _require_step(global_step, "cosine_decay")
    with ops.name_scope(name, "CosineDecay", [learning_rate, global_step]) as name:
        initial, step, decay_steps = _recomp(learning_rate, global_step, decay_steps)
        step = math_ops.minimum(step, decay_steps)
        completed_fraction = step / decay_steps
        pi = constant_op.constant(math.pi, dtype=initial.dtype)
        cosine_decayed = 0.5 * (1.0 + math_ops.cos(pi * completed_fraction))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(initial, decayed, name=name)


def _same_dtype_boundaries(boundaries: list, x: ops.Tensor) -> list:
    """The boundaries in ``x``'s dtype: int32 ones widen to int64, other mismatches fail."""
    out = []
    for b in boundaries:
        if b.dtype.base_dtype != x.dtype.base_dtype:
            if b.dtype.base_dtype == dtypes.int32 and x.dtype.base_dtype == dtypes.int64:
                b = math_ops.cast(b, x.dtype.base_dtype)
            else:
                raise ValueError(
                    f"Boundaries ({b.dtype.base_dtype.name}) must have the same dtype as x "
                    f"({x.dtype.base_dtype.name})."
                )
        out.append(b)
    return out


def piecewise_constant(x: Any, boundaries: Any, values: Any, name: str | None = None) -> Any:
    """``values[0]`` while ``x <= boundaries[0]``, ..., ``values[-1]`` after the last boundary.

    Args:
        x: A scalar tensor, usually the global step.
        boundaries: Increasing boundaries, of ``x``'s dtype (int32 ones may
            meet an int64 ``x``).
        values: One more value than boundaries, all of one dtype.
        name: The name scope (default ``"PiecewiseConstant"``).

    Returns:
        A scalar tensor of the values' dtype.

    Raises:
        ValueError: if the lengths do not fit, a boundary's dtype is not
            ``x``'s, or the values' dtypes differ.
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with ops.name_scope(name, "PiecewiseConstant", [x]):
        boundaries = [ops.convert_to_tensor(b) for b in boundaries]
        values = [ops.convert_to_tensor(v) for v in values]
        x = ops.convert_to_tensor(x)
        boundaries = _same_dtype_boundaries(boundaries, x)
        for v in values[1:]:
            if v.dtype.base_dtype != values[0].dtype.base_dtype:
                raise ValueError(
                    "Values must have elements all with the same dtype "
                    f"({values[0].dtype.base_dtype.name} vs {v.dtype.base_dtype.name})."
                )
        pairs = [
            (x <= boundaries[0], lambda: values[0]),
            (x > boundaries[-1], lambda: values[-1]),
        ]
        for low, high, v in zip(boundaries[:-1], boundaries[1:], values[1:-1]):
            pairs.append(((x > low) & (x <= high), lambda v=v: v))
        # The predicates are exclusive and exhaustive; case wants a default anyway.
        return case_ops.case(pairs, lambda: values[0], exclusive=True)
