"""Clipping: ``tf.clip_by_value``, ``tf.clip_by_norm``, ``tf.clip_by_global_norm``, ...

Like TF's ``clip_ops.py``, these are compositions of ordinary ops, so their
gradients come from those ops: ``clip_by_value`` is a ``Minimum`` then a
``Maximum`` (named like the scope, ``clip_by_value``), ``clip_by_norm``
scales by ``clip_norm / max(||t||, clip_norm)``. Each accepts an
``IndexedSlices`` and clips its values, keeping indices and dense shape.
The fused op ``ClipByValue`` (TF's ``gen_math_ops.clip_by_value``) exists as
`clip_by_value_op`, with its kernel and TF's gradient.
"""

from __future__ import annotations

import collections.abc
from typing import Any

from minitf.framework import dtypes, ops
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.array import array_ops, constant_op
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_ops
from minitf.ops.op_def_library import create_tensor

__all__ = [
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "clip_by_value",
    "clip_by_value_op",
    "global_norm",
]


def _values_of(t, name: str = "t") -> ops.Tensor:
    """The tensor to clip: ``t`` itself, or the values of an ``IndexedSlices``."""
    if isinstance(t, IndexedSlices):
        return ops.convert_to_tensor(t.values, name=name)
    return ops.convert_to_tensor(t, name=name)


def _like(t, values: ops.Tensor):
    """``values`` as ``t`` came: an ``IndexedSlices`` with ``t``'s indices, or a tensor."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(values, t.indices, t.dense_shape)
    return values


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None) -> Any:
    """Clips the values of ``t`` into ``[clip_value_min, clip_value_max]``.

    Args:
        t: A tensor or ``IndexedSlices``.
        clip_value_min: A scalar, or a tensor broadcastable to ``t``'s shape.
        clip_value_max: A scalar, or a tensor broadcastable to ``t``'s shape.
        name: A name for the operation (default ``"clip_by_value"``).

    Returns:
        The clipped tensor (or ``IndexedSlices``), of ``t``'s shape.

    Raises:
        ValueError: if a bound would broadcast ``t`` to a larger shape.
    """
    with ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as name:
        values = _values_of(t)
        t_min = math_ops.minimum(values, clip_value_max)
        # TF merges the shapes so that a bound cannot silently broadcast t.
        values.get_shape().merge_with(t_min.get_shape())
        t_max = math_ops.maximum(t_min, clip_value_min, name=name)
        values.get_shape().merge_with(t_max.get_shape())
    return _like(t, t_max)


def clip_by_value_op(
    t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None
) -> ops.Tensor:
    """The fused ``ClipByValue`` op: ``max(min(t, clip_value_max), clip_value_min)``.

    Args:
        t: A tensor.
        clip_value_min: A scalar or a tensor of ``t``'s shape, of ``t``'s dtype.
        clip_value_max: A scalar or a tensor of ``t``'s shape, of ``t``'s dtype.
        name: A name for the operation (default ``"ClipByValue"``).

    Returns:
        A tensor of ``t``'s shape and dtype.

    Raises:
        TypeError: if a bound's dtype differs from ``t``'s.
    """
    with ops.name_scope(name, "ClipByValue", [t, clip_value_min, clip_value_max]) as scope:
        t = ops.convert_to_tensor(t, name="t")
        dtype = t.dtype.base_dtype
        bounds = []
        for arg, value in (("clip_value_min", clip_value_min), ("clip_value_max", clip_value_max)):
            bound = ops.convert_to_tensor(value, dtype=dtype, name=arg)
            if bound.dtype.base_dtype != dtype:
                raise TypeError(
                    f"Input '{arg}' of 'ClipByValue' Op has type {bound.dtype.base_dtype.name} "
                    f"that does not match type {dtype.name} of argument 't'."
                )
            bounds.append(bound)
        return create_tensor("ClipByValue", [t, *bounds], dtype, scope, t.get_shape())


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """Scales ``t`` so that its L2 norm (over ``axes``) is at most ``clip_norm``.

    ``t * clip_norm / max(l2norm(t), clip_norm)``; a zero ``t`` stays zero.

    Args:
        t: A tensor or ``IndexedSlices``.
        clip_norm: A positive scalar.
        axes: The axes to compute the norm over (default: all of them).
        name: A name for the operation (default ``"clip_by_norm"``).

    Returns:
        The clipped tensor (or ``IndexedSlices``).

    Raises:
        ValueError: if ``clip_norm`` would broadcast ``t`` to a larger shape.
    """
    with ops.name_scope(name, "clip_by_norm", [t, clip_norm]) as name:
        values = _values_of(t)
        l2sum = math_ops.reduce_sum(values * values, axes, keepdims=True)
        # sqrt(0) has an infinite gradient: take it of ones where the sum is 0.
        pred = l2sum > 0
        l2sum_safe = array_ops.where(pred, l2sum, array_ops.ones_like(l2sum))
        l2norm = array_ops.where(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        values.get_shape().merge_with(intermediate.get_shape())
        clipped = array_ops.identity(intermediate / math_ops.maximum(l2norm, clip_norm), name=name)
    return _like(t, clipped)


def _as_list(t_list, what: str) -> list:
    if not isinstance(t_list, collections.abc.Sequence) or isinstance(t_list, str):
        raise TypeError(f"{what} should be a sequence")
    return list(t_list)


def _present_values(t_list: list) -> list:
    """Each entry's tensor (``IndexedSlices``: its values), None entries kept as None."""
    return [None if t is None else _values_of(t, f"t_{i}") for i, t in enumerate(t_list)]


def global_norm(t_list: Any, name: str | None = None) -> ops.Tensor:
    """``sqrt(sum(||t||^2 for t in t_list))``, None entries ignored.

    Args:
        t_list: A sequence of tensors, ``IndexedSlices`` or None.
        name: A name for the operation (default ``"global_norm"``).

    Returns:
        A scalar tensor.

    Raises:
        TypeError: if ``t_list`` is not a sequence.
    """
    t_list = _as_list(t_list, "t_list")
    with ops.name_scope(name, "global_norm", t_list) as name:
        half_squared_norms = []
        for v in _present_values(t_list):
            if v is not None:
                with ops.colocate_with(v):
                    half_squared_norms.append(nn_ops.l2_loss(v))
        half_squared_norm = math_ops.reduce_sum(array_ops.stack(half_squared_norms))
        two = constant_op.constant(2.0, dtype=half_squared_norm.dtype)
        return math_ops.sqrt(half_squared_norm * two, name="global_norm")


def clip_by_global_norm(
    t_list: Any, clip_norm: Any, use_norm: Any = None, name: str | None = None
) -> tuple[list, ops.Tensor]:
    """Scales every tensor of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)``.

    Args:
        t_list: A sequence of tensors, ``IndexedSlices`` or None.
        clip_norm: A positive scalar.
        use_norm: The global norm to use, if already computed.
        name: A name for the operation (default ``"clip_by_global_norm"``).

    Returns:
        ``(list_clipped, global_norm)``: the clipped list, None entries kept,
        and the global norm. An infinite or NaN norm makes every entry NaN.

    Raises:
        TypeError: if ``t_list`` is not a sequence.
    """
    t_list = _as_list(t_list, "t_list")
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with ops.name_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as name:
        one = constant_op.constant(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * math_ops.minimum(1.0 / use_norm, one / clip_norm)
        # A no-op for a finite norm; inf - inf (and NaN) makes the scale NaN.
        scale = scale_for_finite + (use_norm - use_norm)
        clipped = []
        for i, v in enumerate(_present_values(t_list)):
            if v is None:
                clipped.append(None)
                continue
            with ops.colocate_with(v):
                scaled = v * math_ops.cast(scale, v.dtype)
                clipped.append(array_ops.identity(scaled, name=f"{name}_{i}"))
        list_clipped = [_like(t, c) for t, c in zip(t_list, clipped)]
    return list_clipped, use_norm


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> ops.Tensor:
    """Scales ``t`` so that its L2 norm divided by its number of elements is at most ``clip_norm``.

    Args:
        t: A float tensor.
        clip_norm: A positive scalar.
        name: A name for the operation (default ``"clip_by_average_norm"``).

    Returns:
        The clipped tensor.
    """
    with ops.name_scope(name, "clip_by_average_norm", [t, clip_norm]) as name:
        t = ops.convert_to_tensor(t, name="t")
        n_element = math_ops.cast(array_ops.size(t), dtypes.float32)
        l2norm_inv = math_ops.rsqrt(math_ops.reduce_sum(t * t, math_ops.range(array_ops.rank(t))))
        one = constant_op.constant(1.0)
        scale = math_ops.minimum(l2norm_inv * n_element, one / clip_norm)
        return array_ops.identity(t * clip_norm * scale, name=name)
