"""``tf.contrib.layers`` regularizers: ``l1_regularizer``, ``l2_regularizer``, and their sum.

A regularizer is ``f(weights) -> scalar loss``; pass it as a layer's
``kernel_regularizer`` or ``tf.get_variable(regularizer=...)`` to have the
loss put in ``GraphKeys.REGULARIZATION_LOSSES``, or sum it over a list of
weights with `apply_regularization`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from minitf.framework import ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import constant_op
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_ops
from minitf.platform import tf_logging as logging


def _checked_scale(scale: float) -> bool:
    """False if ``scale`` is 0 (no regularizer); raises for ints and negative scales."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        if scale == 0.0:
            logging.info("Scale of 0 disables regularizer.")
            return False
    return True


def _regularizer(scale: float, scope: str | None, default: str, penalty: Callable) -> Callable:
    if not _checked_scale(scale):
        return lambda _: None

    def regularize(weights):
        with ops.name_scope(scope, default, [weights]) as name:
            my_scale = ops.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, penalty(weights), name=name)

    return regularize


def l1_regularizer(scale: float, scope: str | None = None) -> Callable:
    """``f(weights) = scale * sum(|weights|)``.

    Args:
        scale: A non-negative float (0 disables the regularizer).
        scope: The name scope of the loss ops (default ``l1_regularizer``).

    Raises:
        ValueError: if ``scale`` is an int or negative.
    """
    return _regularizer(
        scale, scope, "l1_regularizer", lambda w: math_ops.reduce_sum(math_ops.abs(w))
    )


def l2_regularizer(scale: float, scope: str | None = None) -> Callable:
    """``f(weights) = scale * sum(weights ** 2) / 2`` (``scale * tf.nn.l2_loss``).

    Args:
        scale: A non-negative float (0 disables the regularizer).
        scope: The name scope of the loss ops (default ``l2_regularizer``).

    Raises:
        ValueError: if ``scale`` is an int or negative.
    """
    return _regularizer(scale, scope, "l2_regularizer", nn_ops.l2_loss)


def apply_regularization(regularizer: Callable, weights_list: list | None = None) -> ops.Tensor:
    """The sum of ``regularizer(w)`` over ``weights_list``, added to ``REGULARIZATION_LOSSES``.

    Args:
        regularizer: ``f(weights) -> scalar tensor or None``.
        weights_list: The weights; default: the ``GraphKeys.WEIGHTS`` collection.

    Raises:
        ValueError: if there are no weights, or a penalty is not a scalar.
    """
    if not weights_list:
        weights_list = ops.get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with ops.name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else constant_op.constant(0.0) for p in penalties]
        for penalty in penalties:
            if penalty.get_shape().ndims != 0:
                raise ValueError(
                    "regularizer must return a scalar Tensor instead of a Tensor with rank "
                    f"{penalty.get_shape().ndims}."
                )
        summed = math_ops.add_n(penalties, name=scope)
        ops.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, summed)
        return summed
