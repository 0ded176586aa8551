"""Which weights a loss or a metric accepts for its values (TF's ``weights_broadcast_ops.py``).

TF1 lets weights broadcast to the values only in a restricted way: a scalar,
or a tensor of the values' rank whose every dimension is 1 or the values'
dimension. minitf checks this when both shapes are known while the graph is
built (where TF raises too); shapes known only at run time are not checked.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops

_ERROR_PREFIX = "weights can not be broadcast to values."


def assert_broadcastable(weights: ops.Tensor, values: ops.Tensor) -> None:
    """Checks that ``weights`` broadcast to ``values`` in TF1's restricted way.

    Args:
        weights: The weights.
        values: The values they weigh.

    Raises:
        ValueError: if the static shapes show the weights cannot broadcast.
    """
    weights_shape, values_shape = weights.get_shape(), values.get_shape()
    if weights_shape.ndims is None or values_shape.ndims is None or weights_shape.ndims == 0:
        return
    if weights_shape.ndims != values_shape.ndims:
        raise ValueError(
            f"{_ERROR_PREFIX} values.rank={values_shape.ndims}. "
            f"weights.rank={weights_shape.ndims}. values.shape={values_shape}. "
            f"weights.shape={weights_shape}."
        )
    for i, (w, v) in enumerate(zip(weights_shape.as_list(), values_shape.as_list())):
        if w is not None and v is not None and w not in (1, v):
            raise ValueError(
                f"{_ERROR_PREFIX} Mismatch at dim {i}. values.shape={values_shape}, "
                f"weights.shape={weights_shape}."
            )


def broadcast_weights(weights, values) -> ops.Tensor:
    """``weights`` broadcast to the shape of ``values`` (checked first).

    Args:
        weights: The weights.
        values: The values they weigh.

    Returns:
        A tensor of the values' shape.

    Raises:
        ValueError: if the weights cannot broadcast.
    """
    with ops.name_scope(None, "broadcast_weights", (weights, values)) as scope:
        values = ops.convert_to_tensor(values, name="values")
        weights = ops.convert_to_tensor(weights, dtype=values.dtype.base_dtype, name="weights")
        if weights.get_shape().is_fully_defined() and weights.get_shape() == values.get_shape():
            return weights
        assert_broadcastable(weights, values)
        return math_ops.multiply(weights, array_ops.ones_like(values), name=scope)
