"""The loss collections: add a loss, read them back, sum them (TF's ``losses/util.py``)."""

from __future__ import annotations

from typing import Any

from minitf.framework import ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import constant_op
from minitf.ops.math import math_ops

__all__ = [
    "add_loss",
    "get_losses",
    "get_regularization_loss",
    "get_regularization_losses",
    "get_total_loss",
]


def add_loss(loss: Any, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Adds ``loss`` to ``loss_collection`` (nothing when the collection is None or empty).

    Args:
        loss: A loss tensor.
        loss_collection: The collection's key.
    """
    if loss_collection:
        ops.add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str | None = GraphKeys.LOSSES) -> list:
    """The losses in ``loss_collection`` whose names match ``scope``.

    Args:
        scope: A regular expression the names must match from their start.
        loss_collection: The collection's key.

    Returns:
        A list of loss tensors.
    """
    return ops.get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list:
    """The tensors in ``REGULARIZATION_LOSSES`` whose names match ``scope``.

    Args:
        scope: A regular expression the names must match from their start.

    Returns:
        A list of regularization loss tensors.
    """
    return ops.get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(
    scope: str | None = None, name: str | None = "total_regularization_loss"
) -> ops.Tensor:
    """The sum of the regularization losses, or the constant 0.0 when there is none.

    Args:
        scope: A regular expression the names must match from their start.
        name: The name of the sum.

    Returns:
        A scalar tensor.
    """
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant_op.constant(0.0)


def get_total_loss(
    add_regularization_losses: bool = True,
    name: str | None = "total_loss",
    scope: str | None = None,
) -> ops.Tensor:
    """The sum of the losses in ``LOSSES``, and of the regularization losses by default.

    Args:
        add_regularization_losses: Whether to add ``REGULARIZATION_LOSSES`` too.
        name: The name of the sum.
        scope: A regular expression the names must match from their start.

    Returns:
        A scalar tensor.

    Raises:
        ValueError: if there is no loss to sum.
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)
