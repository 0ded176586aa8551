"""``tf.clip_by_value``: limit a tensor's values to ``[min, max]``.

As in TF 1.15, the clip is two ops, ``Minimum`` with the upper bound then
``Maximum`` with the lower, so its gradient is theirs: the incoming gradient
where the value lies within the bounds (a value equal to a bound included),
zero where it was clipped.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.ops.math import math_ops

__all__ = ["clip_by_value"]


def clip_by_value(t, clip_value_min, clip_value_max, name=None) -> ops.Tensor:
    """Returns ``t`` with every value below ``clip_value_min`` or above ``clip_value_max`` clipped.

    Args:
        t: A tensor.
        clip_value_min: The lower bound: a scalar, or a tensor broadcastable to
            ``t``'s shape without growing it.
        clip_value_max: The upper bound, likewise.
        name: A name for the operation (default ``"clip_by_value"``).

    Returns:
        A tensor of ``t``'s shape and dtype.

    Raises:
        ValueError: if a bound would broadcast ``t`` to a larger shape.
        TypeError: if a bound's dtype is not ``t``'s.
    """
    with ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as name:
        values = ops.convert_to_tensor(t, name="t")
        upper = math_ops.minimum(values, clip_value_max)
        values.get_shape().merge_with(upper.get_shape())
        clipped = math_ops.maximum(upper, clip_value_min, name=name)
        values.get_shape().merge_with(clipped.get_shape())
    return clipped
