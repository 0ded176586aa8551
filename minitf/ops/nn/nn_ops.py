"""Neural-network ops (``tf.nn``): activations, softmax, cross entropies, bias_add, dropout, top_k.

Activations and the softmax cross entropies are *fused* ops in TF (``Relu``,
``Softmax``, ``SoftmaxCrossEntropyWithLogits``, ...): one kernel computes the
whole formula, in a numerically stable way, and the gradient is a dedicated op
(``ReluGrad``) or a few math ops. ``dropout`` builds a small graph of random
and math ops, as TF's Python does.

``nn_ops.__all__`` is the ``tf.nn`` namespace: it also re-exports
``sigmoid``/``tanh`` (`minitf.ops.math.math_ops`) and the functions TF keeps in
``nn_impl.py`` (`minitf.ops.nn.nn_impl`: ``sigmoid_cross_entropy_with_logits``,
``moments``). Kernels are in `minitf.ops.nn.nn_kernels`, gradients in
`minitf.ops.nn.nn_grad`; importing any module of `minitf.ops` registers them.
"""

from __future__ import annotations

import logging
import numbers
from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops, tensor_shape, tensor_util
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.math.math_ops import sigmoid, tanh
from minitf.ops.nn.nn_impl import (
    batch_normalization,
    ensure_xent_args,
    l2_normalize,
    moments,
    sigmoid_cross_entropy_with_logits,
)
from minitf.ops.op_def_library import FLOATS, check_dtype, create_op
from minitf.ops.random import random_ops

__all__ = [
    "relu",
    "relu6",
    "elu",
    "leaky_relu",
    "softplus",
    "softmax",
    "log_softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    "sigmoid_cross_entropy_with_logits",
    "l2_loss",
    "bias_add",
    "xw_plus_b",
    "l2_normalize",
    "batch_normalization",
    "fused_batch_norm",
    "selu",
    "top_k",
    "in_top_k",
    "moments",
    "dropout",
    "sigmoid",
    "tanh",
]

_logger = logging.getLogger("minitf")
_warned: set[str] = set()

_REALS = FLOATS + (
    dtypes.int8,
    dtypes.int16,
    dtypes.int32,
    dtypes.int64,
    dtypes.uint8,
    dtypes.uint16,
)


def _warn_once(key: str, message: str) -> None:
    """Logs a deprecation warning the first time ``key`` is seen (TF's ``warn_once``)."""
    if key not in _warned:
        _warned.add(key)
        _logger.warning(message)


def _activation(op_type: str, features, name, allowed, **attrs) -> ops.Tensor:
    """An element-wise activation op: one input ``features``, same dtype and shape out."""
    with ops.name_scope(name, op_type, [features]) as scope:
        x = ops.convert_to_tensor(features, name="features")
        dtype = check_dtype("features", x.dtype, allowed)
        op = create_op(op_type, [x], [dtype], scope, {"T": dtype, **attrs}, [x.get_shape()])
    return op.outputs[0]


def relu(features, name=None) -> ops.Tensor:
    """Computes ``max(features, 0)`` (op type ``Relu``).

    Args:
        features: A real-valued tensor.
        name: A name for the operation.

    Returns:
        A tensor of the same dtype and shape.
    """
    return _activation("Relu", features, name, _REALS)


def relu6(features, name=None) -> ops.Tensor:
    """Computes ``min(max(features, 0), 6)`` (op type ``Relu6``).

    Args:
        features: A real-valued tensor.
        name: A name for the operation.

    Returns:
        A tensor of the same dtype and shape.
    """
    return _activation("Relu6", features, name, _REALS)


def elu(features, name=None) -> ops.Tensor:
    """Exponential linear unit: ``exp(features) - 1`` where negative, else ``features``.

    Args:
        features: A floating-point tensor.
        name: A name for the operation.

    Returns:
        A tensor of the same dtype and shape (op type ``Elu``).
    """
    return _activation("Elu", features, name, FLOATS)


def leaky_relu(features, alpha=0.2, name=None) -> ops.Tensor:
    """Computes ``features`` where positive, ``alpha * features`` elsewhere (``LeakyRelu``).

    Args:
        features: A tensor; integer tensors are cast to float32 first, as in TF.
        alpha: The slope for negative inputs (a Python float).
        name: A name for the operation.

    Returns:
        A floating-point tensor of the same shape.
    """
    with ops.name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        x = ops.convert_to_tensor(features, name="features")
        if x.dtype.is_integer:
            x = math_ops.cast(x, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return _activation("LeakyRelu", x, scope, FLOATS, alpha=float(alpha))


def softplus(features, name=None) -> ops.Tensor:
    """Computes ``log(exp(features) + 1)`` without overflow (op type ``Softplus``).

    Args:
        features: A floating-point tensor.
        name: A name for the operation.

    Returns:
        A tensor of the same dtype and shape.
    """
    return _activation("Softplus", features, name, FLOATS)


def _swap_axis_perm(rank: int, axis: int) -> list[int]:
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return perm


def _softmax(logits, op_type: str, axis, name) -> ops.Tensor:
    """Softmax-like op over ``axis``: the fused op works on the last axis only.

    For another axis TF swaps it with the last one, applies the op and swaps
    back (``nn_ops._softmax``).
    """
    with ops.name_scope(name, op_type, [logits]) as scope:
        x = ops.convert_to_tensor(logits, name="logits")
        rank = x.get_shape().ndims
        if axis == -1 or (rank is not None and axis == rank - 1):
            return _softmax_op(op_type, x, scope)
        if rank is None:
            raise ValueError(f"{op_type} over axis {axis} needs logits of known rank, got {x}")
        if not -rank <= axis < rank:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Dimension ({axis}) must be in the range [{-rank}, {rank}) where {rank} is the "
                "number of dimensions in the input.",
            )
        perm = _swap_axis_perm(rank, axis % rank)
        swapped = _softmax_op(op_type, array_ops.transpose(x, perm), None)
        return array_ops.transpose(swapped, perm, name=scope)


def _softmax_op(op_type: str, x: ops.Tensor, scope) -> ops.Tensor:
    dtype = check_dtype("logits", x.dtype, FLOATS)
    if x.get_shape().ndims == 0:
        raise ValueError(
            f"Shape must be at least rank 1 but is rank 0 for '{op_type}' (op: '{op_type}') "
            "with input shapes: []."
        )
    op = create_op(op_type, [x], [dtype], scope or op_type, {"T": dtype}, [x.get_shape()])
    return op.outputs[0]


def softmax(logits, axis=None, name=None, dim=None) -> ops.Tensor:
    """Computes ``exp(logits) / reduce_sum(exp(logits), axis)`` (op type ``Softmax``).

    Args:
        logits: A non-empty floating-point tensor.
        axis: The dimension softmax is computed over; default -1 (the last).
        name: A name for the operation.
        dim: Deprecated alias of ``axis``.

    Returns:
        A tensor of the same dtype and shape.

    Raises:
        InvalidArgumentError: if ``axis`` is out of range (at graph construction).
    """
    return _softmax(logits, "Softmax", _axis_argument(axis, dim), name)


def log_softmax(logits, axis=None, name=None, dim=None) -> ops.Tensor:
    """Computes ``logits - log(reduce_sum(exp(logits), axis))`` (op type ``LogSoftmax``).

    Args:
        logits: A non-empty floating-point tensor.
        axis: The dimension to normalize over; default -1 (the last).
        name: A name for the operation.
        dim: Deprecated alias of ``axis``.

    Returns:
        A tensor of the same dtype and shape.
    """
    return _softmax(logits, "LogSoftmax", _axis_argument(axis, dim), name)


def _axis_argument(axis, dim):
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'dim' and 'axis'")
    axis = dim if axis is None else axis
    return -1 if axis is None else axis


def _flatten_outer_dims(x: ops.Tensor) -> ops.Tensor:
    """Reshapes ``x`` to ``[-1, last_dim]``."""
    last = x.get_shape()[-1].value if x.get_shape().ndims is not None else None
    if last is not None:
        return array_ops.reshape(x, [-1, last])
    return array_ops.reshape(x, array_ops.concat([[-1], array_ops.shape(x)[-1:]], 0))


def _outer_shape(x: ops.Tensor):
    """The shape of ``x`` without its last dimension (a list if static, else a tensor)."""
    static = x.get_shape()
    if static.is_fully_defined():
        return static.as_list()[:-1]
    return array_ops.shape(x)[:-1]


def _xent_static_shapes(op_type: str, scope: str, logits, labels):
    """Static shapes of a softmax cross-entropy op's outputs: ``[batch]``, ``[batch, C]``."""
    try:
        shape = logits.get_shape().with_rank(2).merge_with(labels.get_shape().with_rank(2))
    except ValueError:
        raise ValueError(
            f"Dimensions must be equal, but are {logits.get_shape()} and {labels.get_shape()} "
            f"for '{scope.rstrip('/')}' (op: '{op_type}') with input shapes: "
            f"{logits.get_shape()}, {labels.get_shape()}."
        ) from None
    return [shape[:1], shape]


def softmax_cross_entropy_with_logits_v2(
    labels, logits, axis=None, name=None, dim=None
) -> ops.Tensor:
    """Softmax cross entropy between ``labels`` (a distribution) and ``logits``.

    The loss is ``-sum(labels * log_softmax(logits), axis)``, computed by the
    fused, stable ``SoftmaxCrossEntropyWithLogits`` op. Gradients flow into
    both ``logits`` and ``labels``.

    Args:
        labels: Probability distributions along ``axis``, same shape as ``logits``.
        logits: Unnormalized log-probabilities.
        axis: The class dimension; default -1 (the last).
        name: A name for the operation.
        dim: Deprecated alias of ``axis``.

    Returns:
        The loss, with the shape of ``logits`` without ``axis``.

    Raises:
        TypeError: if ``logits`` is not a float tensor.
        ValueError: if ``axis`` is not the last dimension and the rank of ``logits`` is unknown.
    """
    axis = _axis_argument(axis, dim)
    with ops.name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = ops.convert_to_tensor(logits, name="logits")
        labels = ops.convert_to_tensor(labels, name="labels")
        dtype = check_dtype("features", logits.dtype, FLOATS)
        if labels.dtype.base_dtype != dtype:
            labels = math_ops.cast(labels, dtype)
        static = logits.get_shape()
        rank = static.ndims
        if rank is not None and axis == rank - 1:
            axis = -1
        if axis != -1:
            if rank is None:
                raise ValueError(f"axis={axis} needs logits of known rank, got {logits}")
            perm = [i for i in range(rank) if i != axis % rank] + [axis % rank]
            logits = array_ops.transpose(logits, perm)
            labels = array_ops.transpose(labels, perm)
        if logits.get_shape().ndims == 2:
            return _xent(logits, labels, scope)
        cost = _xent(_flatten_outer_dims(logits), _flatten_outer_dims(labels), scope)
        cost = array_ops.reshape(cost, _outer_shape(logits))
        if rank is not None:
            dims = static.as_list()
            del dims[axis]
            cost.set_shape(dims)
        return cost


def _xent(logits: ops.Tensor, labels: ops.Tensor, scope: str) -> ops.Tensor:
    op_type = "SoftmaxCrossEntropyWithLogits"
    shapes = _xent_static_shapes(op_type, scope, logits, labels)
    dtype = logits.dtype.base_dtype
    op = create_op(op_type, [logits, labels], [dtype, dtype], scope, {"T": dtype}, shapes)
    return op.outputs[0]


def softmax_cross_entropy_with_logits(
    _sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None
) -> ops.Tensor:
    """TF1's softmax cross entropy: like the v2 function, but no gradient reaches ``labels``.

    Deprecated in TF1 (it logs a warning once) in favour of
    `softmax_cross_entropy_with_logits_v2`.

    Args:
        _sentinel: Guards against positional arguments; leave unset.
        labels: Probability distributions along ``dim``.
        logits: Unnormalized log-probabilities.
        dim: The class dimension (default -1).
        name: A name for the operation.
        axis: Alias of ``dim``.

    Returns:
        The loss, with the shape of ``logits`` without the class dimension.

    Raises:
        ValueError: if called with positional arguments or without labels/logits.
    """
    _warn_once(
        "softmax_cross_entropy_with_logits",
        "softmax_cross_entropy_with_logits (from minitf.ops.nn.nn_ops) is deprecated and will "
        "be removed in a future version.\nInstructions for updating:\n\nFuture major versions "
        "of TensorFlow will allow gradients to flow\ninto the labels input on backprop by "
        "default.\n\nSee `tf.nn.softmax_cross_entropy_with_logits_v2`.\n",
    )
    if axis is not None:
        dim = axis
    ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with ops.name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim, name=scope)


def sparse_softmax_cross_entropy_with_logits(
    _sentinel=None, labels=None, logits=None, name=None
) -> ops.Tensor:
    """Softmax cross entropy with integer class ``labels`` (one class per example).

    Args:
        _sentinel: Guards against positional arguments; leave unset.
        labels: Integer class indices in ``[0, num_classes)``, of the shape of
            ``logits`` without its last dimension.
        logits: Unnormalized log-probabilities, ``[..., num_classes]``.
        name: A name for the operation.

    Returns:
        The loss, of the shape of ``labels``.

    Raises:
        ValueError: if called positionally, if logits is a scalar, or if the
            ranks or shapes of labels and logits do not fit.
        InvalidArgumentError: at run time, for a label outside ``[0, num_classes)``.
    """
    ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with ops.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = ops.convert_to_tensor(labels)
        logits = ops.convert_to_tensor(logits)
        _check_sparse_shapes(labels.get_shape(), logits.get_shape())
        if logits.get_shape().ndims == 2:
            return _sparse_xent(logits, labels, name)
        labels_shape = array_ops.shape(labels)
        cost = _sparse_xent(_flatten_outer_dims(logits), array_ops.reshape(labels, [-1]), name)
        cost = array_ops.reshape(cost, labels_shape)
        cost.set_shape(labels.get_shape())
        return cost


def _check_sparse_shapes(labels_shape, logits_shape) -> None:
    if logits_shape.ndims == 0:
        raise ValueError(f"Logits cannot be scalars - received shape {logits_shape}.")
    if (
        logits_shape.ndims is not None
        and labels_shape.ndims is not None
        and labels_shape.ndims != logits_shape.ndims - 1
    ):
        raise ValueError(
            f"Rank mismatch: Rank of labels (received {labels_shape.ndims}) should equal rank "
            f"of logits minus 1 (received {logits_shape.ndims})."
        )
    if (
        labels_shape.is_fully_defined()
        and logits_shape[:-1].is_fully_defined()
        and labels_shape != logits_shape[:-1]
    ):
        raise ValueError(
            f"Shape mismatch: The shape of labels (received {labels_shape}) should equal the "
            f"shape of logits except for the last dimension (received {logits_shape})."
        )


def _sparse_xent(logits: ops.Tensor, labels: ops.Tensor, name) -> ops.Tensor:
    op_type = "SparseSoftmaxCrossEntropyWithLogits"
    dtype = check_dtype("features", logits.dtype, FLOATS)
    label_type = check_dtype("labels", labels.dtype, (dtypes.int32, dtypes.int64))
    shape = logits.get_shape().with_rank(2)
    batch = shape[:1].merge_with(labels.get_shape().with_rank(1))
    shape = batch.concatenate(shape[1:])
    op = create_op(
        op_type,
        [logits, labels],
        [dtype, dtype],
        name or op_type,
        {"T": dtype, "Tlabels": label_type},
        [batch, shape],
    )
    return op.outputs[0]


def l2_loss(t, name=None) -> ops.Tensor:
    """Computes ``sum(t ** 2) / 2`` (op type ``L2Loss``), a scalar.

    Args:
        t: A floating-point tensor.
        name: A name for the operation.

    Returns:
        A scalar of ``t``'s dtype.
    """
    with ops.name_scope(name, "L2Loss", [t]) as scope:
        x = ops.convert_to_tensor(t, name="t")
        dtype = check_dtype("t", x.dtype, FLOATS)
        op = create_op("L2Loss", [x], [dtype], scope, {"T": dtype}, [tensor_shape.TensorShape([])])
    return op.outputs[0]


def _canonical_data_format(data_format) -> str:
    if data_format is None:
        return "NHWC"
    if data_format.startswith("NC"):
        return "NCHW"
    if data_format.startswith("N") and data_format.endswith("C"):
        return "NHWC"
    raise ValueError("data_format must be of the form `N...C` or `NC...`")


def bias_add(value, bias, data_format=None, name=None) -> ops.Tensor:
    """Adds the 1-D ``bias`` along the channel dimension of ``value`` (op type ``BiasAdd``).

    Args:
        value: A tensor of rank at least 2.
        bias: A 1-D tensor, as long as ``value``'s channel dimension.
        data_format: ``"NHWC"`` (channels last, the default) or ``"NCHW"``.
        name: A name for the operation.

    Returns:
        A tensor of ``value``'s shape and dtype.

    Raises:
        ValueError: if the ranks or the channel dimensions do not fit.
    """
    data_format = _canonical_data_format(data_format)
    with ops.name_scope(name, "BiasAdd", [value, bias]) as scope:
        value = ops.convert_to_tensor(value, name="input")
        bias = ops.convert_to_tensor(bias, dtype=value.dtype, name="bias")
        static = _bias_add_shape(value.get_shape(), bias.get_shape(), data_format, scope)
        dtype = value.dtype.base_dtype
        attrs = {"T": dtype, "data_format": data_format}
        op = create_op("BiasAdd", [value, bias], [dtype], scope, attrs, [static])
    return op.outputs[0]


def _bias_add_shape(value_shape, bias_shape, data_format: str, scope: str):
    where = f"for '{scope.rstrip('/')}' (op: 'BiasAdd') with input shapes: {value_shape}, "
    where += f"{bias_shape}."
    if value_shape.ndims is not None and value_shape.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {value_shape.ndims} {where}")
    if bias_shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {bias_shape.ndims} {where}")
    if value_shape.ndims is None:
        return value_shape
    dims = value_shape.as_list()
    channel = 1 if data_format == "NCHW" else len(dims) - 1
    try:
        merged = value_shape[channel].merge_with(bias_shape.with_rank(1)[0])
    except ValueError:
        raise ValueError(
            f"Dimensions must be equal, but are {dims[channel]} and {bias_shape[0]} {where}"
        ) from None
    dims[channel] = merged.value
    return tensor_shape.TensorShape(dims)


def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> ops.Tensor:
    """Computes ``matmul(x, weights) + biases`` (a ``MatMul`` and a ``BiasAdd``).

    Args:
        x: A 2-D tensor ``[batch, in_units]``.
        weights: A 2-D tensor ``[in_units, out_units]``.
        biases: A 1-D tensor ``[out_units]``.
        name: A name for the operation (default ``"xw_plus_b"``).

    Returns:
        A 2-D tensor ``[batch, out_units]``.
    """
    with ops.name_scope(name, "xw_plus_b", [x, weights, biases]) as name:
        x = ops.convert_to_tensor(x, name="x")
        weights = ops.convert_to_tensor(weights, name="weights")
        biases = ops.convert_to_tensor(biases, name="biases")
        return bias_add(math_ops.matmul(x, weights), biases, name=name)


def _noise_shape(x: ops.Tensor, noise_shape):
    """The dropout mask's shape: ``noise_shape`` with its None entries taken from ``x``."""
    if noise_shape is None:
        return array_ops.shape(x)
    try:
        wanted = tensor_shape.as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.get_shape().ndims is not None and x.get_shape().ndims == wanted.ndims:
        dims = [
            d if n is None and d is not None else n
            for d, n in zip(x.get_shape().as_list(), wanted.as_list())
        ]
        return tensor_shape.TensorShape(dims)
    return noise_shape


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None) -> ops.Tensor:
    """Zeroes elements of ``x`` with probability ``rate`` and scales the rest by ``1/(1-rate)``.

    TF1 signature: give either ``keep_prob`` (deprecated) or ``rate = 1 - keep_prob``.

    Args:
        x: A floating-point tensor.
        keep_prob: Deprecated: the probability of keeping each element.
        noise_shape: The shape of the random keep/drop mask, broadcast against
            ``x`` (e.g. ``[batch, 1]`` drops whole rows); default ``x``'s shape.
        seed: The op-level seed of the mask's random op.
        name: A name for the operation.
        rate: The probability of dropping each element, in ``[0, 1)``.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        ValueError: if neither or both of ``rate`` and ``keep_prob`` are given,
            ``rate`` is outside ``[0, 1)``, or ``x`` is not floating point.
    """
    try:
        keep = 1.0 - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError(
            f"keep_prob must be a floating point number or Tensor (got {keep_prob!r})"
        ) from None
    if keep_prob is not None:
        _warn_once(
            "dropout.keep_prob",
            "Calling dropout (from minitf.ops.nn.nn_ops) with keep_prob is deprecated and will be "
            "removed in a future version.\nInstructions for updating:\nPlease use `rate` "
            "instead of `keep_prob`. Rate should be set to `rate = 1 - keep_prob`.",
        )
        if rate is not None:
            raise ValueError("Cannot specify both 'keep_prob' and 'rate'")
        rate = keep
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    return _dropout(x, rate, noise_shape, seed, name)


def _dropout(x, rate, noise_shape, seed, name) -> ops.Tensor:
    with ops.name_scope(name, "dropout", [x]):
        x = ops.convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(
                "x has to be a floating point tensor since it's going to be scaled. Got a "
                f"{x.dtype.base_dtype.name} tensor instead."
            )
        if isinstance(rate, numbers.Real):
            if not 0 <= rate < 1:
                raise ValueError(
                    f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}"
                )
            if rate > 0.5:
                _logger.warning(
                    "Large dropout rate: %g (>0.5). In TensorFlow 2.x, dropout() uses dropout "
                    "rate instead of keep_prob. Please ensure that this is intended.",
                    rate,
                )
            if rate == 0:
                return x
        rate = ops.convert_to_tensor(rate, dtype=x.dtype, name="rate")
        rate.get_shape().assert_is_compatible_with(tensor_shape.scalar())
        if tensor_util.constant_value(rate) == 0:
            return x
        mask_shape = _noise_shape(x, noise_shape)
        random_tensor = random_ops.random_uniform(mask_shape, seed=seed, dtype=x.dtype)
        keep_prob = 1 - rate
        scale = 1 / keep_prob
        # >=: a uniform draw exactly equal to ``rate`` is kept (TF's comment in dropout_v2).
        keep_mask = random_tensor >= rate
        ret = x * scale * math_ops.cast(keep_mask, x.dtype)
        ret.set_shape(x.get_shape())
        return ret


def selu(features: Any, name: str | None = None) -> ops.Tensor:
    """Scaled exponential linear unit (op type ``Selu``).

    ``scale * features`` where positive, ``scale * alpha * (exp(features) - 1)``
    elsewhere, with ``alpha ~ 1.6733`` and ``scale ~ 1.0507``.

    Args:
        features: A floating-point tensor.
        name: A name for the operation.

    Returns:
        A tensor of the same dtype and shape.
    """
    return _activation("Selu", features, name, FLOATS)


def top_k(
    input: Any,  # noqa: A002 - TF's argument names
    k: Any = 1,
    sorted: bool = True,  # noqa: A002
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor]:
    """The ``k`` largest entries of the last dimension of ``input``, and their indices.

    Equal values keep their order: the one with the lower index comes first
    (op type ``TopKV2``).

    Args:
        input: A real tensor of rank at least 1, with at least ``k`` entries in
            its last dimension.
        k: How many entries to take (an int or a 0-D int32 tensor).
        sorted: Accepted for compatibility; the entries are always sorted
            largest first.
        name: A name for the operation.

    Returns:
        A pair ``(values, indices)``, both of ``input``'s shape with the last
        dimension ``k``; ``indices`` is int32.

    Raises:
        ValueError: if ``input`` is a scalar, ``k`` is negative or larger than
            the last dimension (when known at graph construction).
    """
    with ops.name_scope(name, "TopKV2", [input, k]) as scope:
        x = ops.convert_to_tensor(input, name="input")
        k = ops.convert_to_tensor(k, dtype=dtypes.int32, name="k")
        dtype = check_dtype("input", x.dtype, _REALS)
        shape = _top_k_shape(x.get_shape(), tensor_util.constant_value(k), scope)
        attrs = {"T": dtype, "sorted": bool(sorted)}
        op = create_op("TopKV2", [x, k], [dtype, dtypes.int32], scope, attrs, [shape, shape])
    return op.outputs[0], op.outputs[1]


def _top_k_shape(shape, k, scope: str):
    where = f"for '{scope.rstrip('/')}' (op: 'TopKV2') with input shapes: {shape}, []."
    if shape.ndims == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 {where}")
    if k is not None and int(k) < 0:
        raise ValueError(
            f"Dimension size, given by scalar input 1, must be non-negative but is {int(k)} {where}"
        )
    if shape.ndims is None:
        return shape
    last = shape[-1].value
    if k is not None and last is not None and last < int(k):
        raise ValueError(f"input must have last dimension >= k = {int(k)} but is {last} {where}")
    return tensor_shape.TensorShape(shape.as_list()[:-1] + [None if k is None else int(k)])


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> ops.Tensor:
    """Whether each target class is among the ``k`` largest predictions of its row.

    A target is in the top ``k`` when fewer than ``k`` predictions of its row
    are strictly larger than its own (so ties all count as in). A row whose
    target is out of range, or whose predictions are not all finite, gives
    False (op type ``InTopKV2``).

    Args:
        predictions: A float32 tensor ``[batch, classes]``.
        targets: An int32 or int64 tensor ``[batch]`` of class indices.
        k: An int (or a 0-D tensor of ``targets``' dtype).
        name: A name for the operation.

    Returns:
        A bool tensor ``[batch]``.
    """
    with ops.name_scope(name, "in_top_k", [predictions, targets, k]) as scope:
        predictions = ops.convert_to_tensor(predictions, dtype=dtypes.float32, name="predictions")
        targets = ops.convert_to_tensor(targets, name="targets")
        index_type = check_dtype("targets", targets.dtype, (dtypes.int32, dtypes.int64))
        k = ops.convert_to_tensor(k, dtype=index_type, name="k")
        batch = (
            predictions.get_shape().with_rank(2)[:1].merge_with(targets.get_shape().with_rank(1))
        )
        attrs = {"T": index_type}
        inputs = [predictions, targets, k]
        return create_op("InTopKV2", inputs, [dtypes.bool], scope, attrs, [batch]).outputs[0]


def fused_batch_norm(
    x: Any,
    scale: Any,
    offset: Any,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 0.001,
    data_format: str = "NHWC",
    is_training: bool = True,
    name: str | None = None,
) -> tuple[ops.Tensor, ops.Tensor, ops.Tensor]:
    """Batch normalization of a 4-D tensor over its batch and spatial dimensions.

    In training, ``x`` is normalized with the mean and (biased) variance of
    its own batch, and the returned variance is the unbiased estimate
    (times ``n / (n - 1)``), the one to keep a moving average of, as TF's
    fused kernel returns. In inference, ``mean`` and ``variance`` are used.
    Built from the ops of `moments` and `batch_normalization`.

    Args:
        x: A 4-D float tensor.
        scale: A 1-D tensor (``gamma``), one per channel (float32 for a
            ``float16`` ``x``, which is normalized in float32).
        offset: A 1-D tensor (``beta``), one per channel (float32 likewise).
        mean: The mean for inference (ignored in training).
        variance: The variance for inference (ignored in training).
        epsilon: A small float added to the variance (at least ``1.001e-5``, as in TF).
        data_format: ``"NHWC"`` or ``"NCHW"``.
        is_training: Whether to use the batch's statistics.
        name: A name for the operation.

    Returns:
        A tuple ``(y, batch_mean, batch_variance)``.

    Raises:
        ValueError: if ``x`` is not 4-D, or ``mean``/``variance`` are missing
            in inference.
    """
    epsilon = max(float(epsilon), 1.001e-5)
    with ops.name_scope(name, "FusedBatchNorm", [x, scale, offset]) as scope:
        x = ops.convert_to_tensor(x, name="x")
        if x.get_shape().ndims not in (None, 4):
            raise ValueError(
                f"Shape must be rank 4 but is rank {x.get_shape().ndims} for "
                f"'{scope.rstrip('/')}' (op: 'FusedBatchNorm') with input shapes: "
                f"{x.get_shape()}."
            )
        axes, param_shape = ([0, 2, 3], [-1, 1, 1]) if data_format == "NCHW" else ([0, 1, 2], [-1])
        # TF's kernel takes float32 parameters for a float16 x, computes in
        # float32 and gives y in x's type, the statistics in float32.
        half = x.dtype.base_dtype == dtypes.float16
        param_dtype = dtypes.float32 if half else x.dtype.base_dtype
        x_in = math_ops.cast(x, param_dtype) if half else x
        scale, offset = (
            array_ops.reshape(ops.convert_to_tensor(t, dtype=param_dtype), param_shape)
            for t in (scale, offset)
        )
        if is_training:
            y, mean, variance = _fused_batch_norm_training(
                x_in, scale, offset, epsilon, axes, param_shape
            )
        elif mean is None or variance is None:
            raise ValueError(
                "Both `mean` and `variance` must be a 1D tensor when `is_training` is False. "
                f"Received: `mean` {mean} and `variance` {variance}"
            )
        else:
            mean = ops.convert_to_tensor(mean, dtype=param_dtype, name="mean")
            variance = ops.convert_to_tensor(variance, dtype=param_dtype, name="variance")
            y = batch_normalization(
                x_in,
                array_ops.reshape(mean, param_shape),
                array_ops.reshape(variance, param_shape),
                offset,
                scale,
                epsilon,
            )
        y = math_ops.cast(y, x.dtype.base_dtype) if half else y
        return array_ops.identity(y, name="y"), mean, variance


def _fused_batch_norm_training(x, scale, offset, epsilon, axes, param_shape):
    batch_mean, batch_variance = moments(x, axes, keepdims=True)
    y = batch_normalization(x, batch_mean, batch_variance, offset, scale, epsilon)
    count = math_ops.cast(math_ops.reduce_prod(array_ops.gather(array_ops.shape(x), axes)), x.dtype)
    unbiased = batch_variance * count / math_ops.maximum(count - 1, 1)
    return (
        y,
        array_ops.reshape(batch_mean, [-1], name="batch_mean"),
        array_ops.reshape(unbiased, [-1], name="batch_variance"),
    )
