"""Helpers the layers share: a ``training`` flag that may be a bool or a tensor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import ops, tensor_util
from minitf.ops.control_flow import control_flow_ops


def constant_value(pred: Any) -> bool | None:
    """The value of ``pred`` if known when the graph is built (a bool or a constant), else None.

    Args:
        pred: A Python bool, or a scalar boolean tensor or variable.

    Raises:
        TypeError: if ``pred`` is neither.
    """
    if isinstance(pred, bool):
        return pred
    if isinstance(pred, int) and pred in (0, 1):
        return bool(pred)
    if not isinstance(pred, ops.Tensor) and hasattr(pred, "value"):
        return None
    if not isinstance(pred, ops.Tensor):
        raise TypeError(
            f"`pred` must be a Tensor, or a Python bool, or 1 or 0. Found instead: {pred}"
        )
    value = tensor_util.constant_value(pred)
    return None if value is None else bool(value)


def smart_cond(pred: Any, true_fn: Callable, false_fn: Callable, name: str | None = None) -> Any:
    """``true_fn()`` or ``false_fn()`` now if ``pred`` is known, else a `tf.cond` on it.

    Args:
        pred: A Python bool or a scalar boolean tensor (a layer's ``training``).
        true_fn: Builds the result when ``pred`` is true.
        false_fn: Builds the result when ``pred`` is false.
        name: The name of the `tf.cond`, if one is made.
    """
    value = constant_value(pred)
    if value is None:
        return control_flow_ops.cond(pred, true_fn, false_fn, name=name)
    return true_fn() if value else false_fn()
