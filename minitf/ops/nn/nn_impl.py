"""Neural-network functions TF writes in Python on top of other ops (TF's ``nn_impl.py``).

``sigmoid_cross_entropy_with_logits`` and ``moments`` build small graphs of
math and array ops; they have no kernel or gradient of their own. Part of
``tf.nn``: `minitf.ops.nn.nn_ops` re-exports them.
"""

from __future__ import annotations

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


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``, broadcast.

    Args:
        x: The input tensor.
        mean: The mean to subtract (broadcastable against ``x``).
        variance: The variance to divide by.
        offset: The ``beta`` to add, or None.
        scale: The ``gamma`` to multiply by, or None.
        variance_epsilon: A small float added to the variance.
        name: A name for the operation.

    Returns:
        The normalized tensor, of ``x``'s shape.
    """
    with ops.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = inv * scale
        shift = -mean * inv if offset is None else offset - mean * inv
        return x * math_ops.cast(inv, x.dtype) + math_ops.cast(shift, x.dtype)
