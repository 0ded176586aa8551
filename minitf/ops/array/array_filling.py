"""Filled tensors: ``tf.zeros``, ``ones``, ``fill``, ``zeros_like`` and ``ones_like``.

A small filled tensor of known shape is a ``Const`` (TF's
``_constant_if_small``); otherwise it is a ``Fill`` of a shape tensor.
``zeros_like`` and ``ones_like`` follow the shape of another tensor, reading
it statically when it is fully defined.

Part of TF's ``array_ops`` (re-exported by `minitf.ops.array.array_ops`); kernels in
`minitf.ops.array.array_kernels`, gradients in `minitf.ops.array.array_grad`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.array import constant_op
from minitf.ops.array.array_shaping import constant_value_as_shape, reshape, shape, shape_internal
from minitf.ops.common_shapes import check_rank
from minitf.ops.op_def_library import create_op, index_tensor, is_tensor_like


def _zero_of(dtype: dtypes.DType):
    if dtype == dtypes.bool:
        return False
    if dtype == dtypes.string:
        return ""
    return 0


def _small_constant(value, shape, dtype, name) -> ops.Tensor | None:
    """A ``Const`` for a filled tensor of fewer than 1000 elements (TF's ``_constant_if_small``)."""
    if isinstance(shape, tensor_shape.TensorShape):
        if not shape.is_fully_defined():
            return None
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)) and any(is_tensor_like(d) for d in shape):
        return None
    try:
        count = int(np.prod(np.asarray(shape, dtype=np.int64)))
    except (TypeError, ValueError):
        return None
    if count < 1000:
        dims = [int(d) for d in np.ravel(np.asarray(shape, dtype=np.int64))]
        return constant_op.constant(value, dtype=dtype, shape=dims, name=name)
    return None


def _filled(value, shape, dtype, name, default_name) -> ops.Tensor:
    dtype = dtypes.as_dtype(dtype).base_dtype
    with ops.name_scope(name, default_name, [shape]) as scope:
        if not isinstance(shape, ops.Tensor):
            output = _small_constant(value, shape, dtype, scope)
            if output is not None:
                return output
            if isinstance(shape, tensor_shape.TensorShape):
                shape = shape.as_list()
            shape = ops.convert_to_tensor(shape, dtype=dtypes.int32, name="shape_as_tensor")
        if shape.get_shape().ndims == 0:
            shape = reshape(shape, [-1])
        return fill(shape, constant_op.constant(value, dtype=dtype), name=scope)


def zeros(shape, dtype=dtypes.float32, name=None) -> ops.Tensor:  # noqa: F811
    """A tensor of ``shape`` filled with zeros (a ``Const`` when small, else ``Fill``).

    Args:
        shape: The shape: a list of integers, a `TensorShape` or a 1-D int32 tensor.
        dtype: The dtype of the elements.
        name: A name for the operation (optional).
    """
    return _filled(_zero_of(dtypes.as_dtype(dtype).base_dtype), shape, dtype, name, "zeros")


def ones(shape, dtype=dtypes.float32, name=None) -> ops.Tensor:  # noqa: F811
    """A tensor of ``shape`` filled with ones (a ``Const`` when small, else ``Fill``).

    Args:
        shape: The shape: a list of integers, a `TensorShape` or a 1-D int32 tensor.
        dtype: The dtype of the elements.
        name: A name for the operation (optional).
    """
    one = True if dtypes.as_dtype(dtype).base_dtype == dtypes.bool else 1
    return _filled(one, shape, dtype, name, "ones")


def fill(dims, value, name=None) -> ops.Tensor:
    """A tensor of shape ``dims`` whose elements are all the scalar ``value`` (op ``Fill``).

    Args:
        dims: The shape: a 1-D int32 or int64 tensor.
        value: The 0-D value to fill with.
        name: A name for the operation (optional).

    Raises:
        ValueError: if ``value`` is not a scalar or ``dims`` not a vector.
    """
    with ops.name_scope(name, "Fill", [dims, value]) as scope:
        dims_t = index_tensor(dims, "dims", "Fill")
        value_t = ops.convert_to_tensor(value, name="value")
        check_rank(dims_t, 1, scope, "Fill", [dims_t, value_t])
        check_rank(value_t, 0, scope, "Fill", [dims_t, value_t])
        static = constant_value_as_shape(dims_t)
        op = create_op(
            "Fill",
            [dims_t, value_t],
            [value_t.dtype.base_dtype],
            scope,
            {"T": value_t.dtype.base_dtype, "index_type": dims_t.dtype.base_dtype},
            [static],
        )
    return op.outputs[0]


def zeros_like(tensor, dtype=None, name=None, optimize=True) -> ops.Tensor:
    """A tensor of zeros with the shape of ``tensor`` (and its dtype unless ``dtype`` is given).

    With ``optimize`` and a fully defined static shape the result is a constant,
    independent of ``tensor``'s value; otherwise it is a ``ZerosLike`` op (or a
    ``Fill`` of ``tf.shape(tensor)`` when the dtype changes), as in TF.

    Args:
        tensor: A tensor.
        dtype: The dtype of the result; None keeps ``tensor``'s.
        name: A name for the operation (optional).
        optimize: Whether to build a constant when the static shape is fully defined.
    """
    with ops.name_scope(name, "zeros_like", [tensor]) as scope:
        value = ops.convert_to_tensor(tensor, name="tensor")
        dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
        if optimize and value.get_shape().is_fully_defined():
            return zeros(value.get_shape(), dtype=dtype or value.dtype.base_dtype, name=scope)
        if dtype is not None and dtype != value.dtype.base_dtype:
            static = value.get_shape()
            result = zeros(shape_internal(value) if optimize else shape(value), dtype, scope)
            result.set_shape(static)
            return result
        op = create_op(
            "ZerosLike",
            [value],
            [value.dtype.base_dtype],
            scope,
            {"T": value.dtype.base_dtype},
            [value.get_shape()],
        )
    return op.outputs[0]


def ones_like(tensor, dtype=None, name=None, optimize=True) -> ops.Tensor:
    """A tensor of ones with the shape of ``tensor`` (a ``Fill`` of its shape, as in TF).

    Args:
        tensor: A tensor.
        dtype: The dtype of the result; None keeps ``tensor``'s.
        name: A name for the operation (optional).
        optimize: Whether to read the shape statically when it is fully defined
            (``tf.shape(tensor)`` is used otherwise).
    """
    with ops.name_scope(name, "ones_like", [tensor]) as scope:
        value = ops.convert_to_tensor(tensor, name="tensor")
        ones_shape = shape_internal(value) if optimize else shape(value)
        result = ones(ones_shape, dtype=dtype or value.dtype.base_dtype, name=scope)
        result.set_shape(value.get_shape())
    return result
