"""Neural-network functions TF writes in Python on top of other ops (TF's ``nn_impl.py``).

``sigmoid_cross_entropy_with_logits`` and ``moments`` build small graphs of
math and array ops; they have no kernel or gradient of their own. Part of
``tf.nn``: `minitf.ops.nn.nn_ops` re-exports them.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import ops
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops


def ensure_xent_args(fn_name: str, sentinel, labels, logits) -> None:
    """Checks the keyword-only convention of TF1's cross-entropy functions.

    Raises:
        ValueError: if an argument was passed positionally, or labels or logits is missing.
    """
    if sentinel is not None:
        raise ValueError(
            f"Only call `{fn_name}` with named arguments (labels=..., logits=..., ...)"
        )
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def sigmoid_cross_entropy_with_logits(
    _sentinel=None, labels=None, logits=None, name=None
) -> ops.Tensor:
    """Element-wise logistic loss ``-z*log(sigmoid(x)) - (1-z)*log(1-sigmoid(x))``.

    Computed as ``max(x, 0) - x * z + log(1 + exp(-abs(x)))``, which neither
    overflows nor loses precision for large ``|x|`` (TF's formulation).

    Args:
        _sentinel: Guards against positional arguments; leave unset.
        labels: Targets ``z`` in ``[0, 1]``, same shape and dtype as ``logits``.
        logits: Logits ``x``.
        name: A name for the operation.

    Returns:
        The element-wise loss, same shape as ``logits``.

    Raises:
        ValueError: if called positionally, or the shapes differ.
    """
    ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with ops.name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = ops.convert_to_tensor(logits, name="logits")
        labels = ops.convert_to_tensor(labels, name="labels")
        try:
            labels.get_shape().merge_with(logits.get_shape())
        except ValueError:
            raise ValueError(
                f"logits and labels must have the same shape ({logits.get_shape()} vs "
                f"{labels.get_shape()})"
            ) from None
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = logits >= zeros
        relu_logits = array_ops.where(cond, logits, zeros)
        neg_abs_logits = array_ops.where(cond, -logits, logits)
        return math_ops.add(
            relu_logits - logits * labels,
            math_ops.log1p(math_ops.exp(neg_abs_logits)),
            name=scope,
        )


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """Mean and (population) variance of ``x`` over ``axes``.

    Args:
        x: A tensor.
        axes: The axes to reduce over (a list of ints).
        shift: Unused, kept for TF1 compatibility.
        name: A name for the operation.
        keep_dims: Deprecated alias of ``keepdims``.
        keepdims: If True, keep the reduced axes with length 1.

    Returns:
        A pair ``(mean, variance)`` of tensors.

    Raises:
        ValueError: if both ``keep_dims`` and ``keepdims`` are given.
    """
    del shift
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'")
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    with ops.name_scope(name, "moments", [x, axes]):
        y = ops.convert_to_tensor(x, name="x")
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        # stop_gradient: the variance's gradient to the mean is zero anyway.
        variance = math_ops.reduce_mean(
            math_ops.squared_difference(y, array_ops.stop_gradient(mean)),
            axes,
            keepdims=True,
            name="variance",
        )
        if not keepdims:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        return mean, variance


def l2_normalize(
    x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None, dim: Any = None
) -> ops.Tensor:
    """Divides ``x`` by its L2 norm along ``axis``: ``x / sqrt(max(sum(x**2), epsilon))``.

    Args:
        x: A tensor.
        axis: The dimension (or dimensions) to normalize along.
        epsilon: A lower bound of the squared norm, so that zeros stay finite.
        name: A name for the operation.
        dim: Deprecated alias of ``axis``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        ValueError: if both ``axis`` and ``dim`` are given.
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'dim' and 'axis'")
    axis = dim if axis is None else axis
    with ops.name_scope(name, "l2_normalize", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        inverse_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, inverse_norm, name=name)


def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: float,
    name: str | None = None,
) -> ops.Tensor:
    """Normalizes ``x``: ``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``.

    Written as TF writes it, ``x * inv + (offset - mean * inv)`` with
    ``inv = scale * rsqrt(variance + variance_epsilon)``; every argument
    broadcasts against ``x``.

    Args:
        x: The input tensor.
        mean: The mean to subtract.
        variance: The variance to divide by (its square root).
        offset: The offset ``beta`` to add, or None.
        scale: The scale ``gamma`` to multiply by, or None.
        variance_epsilon: A small float added to the variance.
        name: A name for the operation (default ``"batchnorm"``).

    Returns:
        The normalized, scaled and shifted tensor.
    """
    with ops.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        x = ops.convert_to_tensor(x, name="x")
        inv = math_ops.cast(inv, x.dtype)
        shift = offset - mean * inv if offset is not None else -mean * inv
        return x * inv + math_ops.cast(shift, x.dtype)
