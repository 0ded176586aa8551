"""Reductions: ``tf.reduce_sum`` and friends, ``argmax``/``argmin``, ``add_n``, ``cumsum``.

A reduction op (``Sum``, ``Mean``, ``Max``, ...) takes the input and a
``reduction_indices`` tensor, with a ``keep_dims`` attribute (`_reduction`).
``add_n`` sums a list of tensors, ``cumsum`` keeps the running sums along an
axis, and ``range`` lists the axes a full reduction runs over when the rank
is only known at run time.

Part of TF's ``math_ops`` (re-exported by `minitf.ops.math.math_ops`); kernels in
`minitf.ops.math.math_kernels`, gradients in `minitf.ops.math.math_grad`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.array import constant_op
from minitf.ops.array.array_identity import identity
from minitf.ops.array.array_shaping import reshape, shape
from minitf.ops.common_shapes import shape_error, shape_str
from minitf.ops.math.math_unary import cast
from minitf.ops.op_def_library import (
    BOOL,
    INT32_64,
    NUMERIC,
    REAL,
    check_dtype,
    create_tensor,
)

_ADD_N_ERROR = (
    "inputs must be a list of at least one Tensor/IndexedSlices with the same dtype and shape"
)


def _merged_add_n_shape(inputs: list[ops.Tensor], scope: str) -> tensor_shape.TensorShape:
    merged = inputs[0].get_shape()
    for i, t in enumerate(inputs[1:], start=1):
        shape = t.get_shape()
        if merged.ndims is not None and shape.ndims is not None and merged.ndims != shape.ndims:
            message = f"Shapes must be equal rank, but are {merged.ndims} and {shape.ndims}"
        elif merged.is_compatible_with(shape):
            merged = merged.merge_with(shape)
            continue
        else:
            dim = next(
                d
                for d, (a, b) in enumerate(zip(merged.as_list(), shape.as_list()))
                if a is not None and b is not None and a != b
            )
            message = (
                f"Dimension {dim} in both shapes must be equal, but are {merged[dim].value} and "
                f"{shape[dim].value}. Shapes are {shape_str(merged)} and {shape_str(shape)}"
            )
        raise shape_error(
            f"{message}. From merging shape {i} with other shapes.", scope, "AddN", *inputs
        )
    return merged


def add_n(inputs, name=None) -> ops.Tensor:
    """Adds all tensors of ``inputs`` element-wise (op type ``AddN``).

    Args:
        inputs: A non-empty list of tensors (or `IndexedSlices`) of one dtype
            and shape. A single input is returned as is (through an
            ``Identity`` named ``name`` if a name is given).
        name: The op name (default ``"AddN"``).

    Raises:
        ValueError: if ``inputs`` is empty or not a list, or the shapes differ.
        TypeError: if the dtypes differ.
    """
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError(_ADD_N_ERROR)
    inputs = [ops.convert_to_tensor_or_indexed_slices(v) for v in inputs]
    if len(inputs) == 1:
        value = inputs[0]
        if type(value).__name__ == "IndexedSlices":
            value = value.values
        if name:
            return identity(value, name=name)
        return value
    with ops.name_scope(name, "AddN", inputs) as scope:
        inputs = [ops.convert_to_tensor(v) for v in inputs]
        types = [t.dtype.base_dtype for t in inputs]
        if any(t != types[0] for t in types):
            raise TypeError(
                "Tensors in list passed to 'inputs' of 'AddN' Op have types "
                f"[{', '.join(t.name for t in types)}] that don't all match."
            )
        check_dtype("inputs", types[0], NUMERIC)
        static = _merged_add_n_shape(inputs, scope)
        return create_tensor(
            "AddN", inputs, types[0], scope, static, {"N": len(inputs), "T": types[0]}
        )


def _deprecated_argument_lookup(new_name: str, new_value, old_name: str, old_value):
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return old_value


def _rank_tensor(x: ops.Tensor) -> ops.Tensor:
    return reshape(shape(shape(x)), [])


def _reduction_indices(x: ops.Tensor, axis, reduction_indices):
    """The axes to reduce: ``axis``, or every axis of ``x`` (a constant if its rank is known)."""
    if reduction_indices is not None:
        if axis is not None:
            raise ValueError("Can't specify both axis' and 'reduction_indices'.")
        axis = reduction_indices
    if axis is not None:
        return axis
    rank = x.get_shape().ndims
    if rank is not None:
        return constant_op.constant(np.arange(rank, dtype=np.int32))
    return range(0, _rank_tensor(x))  # this module's Range op, not the builtin


def _reduced_static_shape(x, axes, keep_dims: bool, scope: str, op_type: str):
    """The static shape of reducing ``x`` over ``axes``, validating constant axes."""
    shape = x.get_shape()
    axes_value = tensor_util.constant_value(axes)
    if axes_value is None or shape.ndims is None:
        if keep_dims and shape.ndims is not None:
            return tensor_shape.unknown_shape(shape.ndims)
        return tensor_shape.unknown_shape()
    rank = shape.ndims
    reduced = set()
    for a in np.ravel(axes_value).tolist():
        if not -rank <= a < rank:
            raise shape_error(
                f"Invalid reduction dimension {a} for input with {rank} dimensions.",
                scope,
                op_type,
                x,
                axes,
            )
        reduced.add(a % rank)
    dims = shape.as_list()
    if keep_dims:
        return tensor_shape.TensorShape([1 if i in reduced else d for i, d in enumerate(dims)])
    return tensor_shape.TensorShape([d for i, d in enumerate(dims) if i not in reduced])


def _reduction(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims, allowed):
    keepdims = _deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    keepdims = bool(keepdims) if keepdims is not None else False
    x = ops.convert_to_tensor(input_tensor, name="input_tensor")
    axes = _reduction_indices(x, axis, reduction_indices)
    with ops.name_scope(name, op_type, [x, axes]) as scope:
        axes = ops.convert_to_tensor(axes, name="reduction_indices", preferred_dtype=dtypes.int32)
        check_dtype("input", x.dtype, allowed)
        check_dtype("reduction_indices", axes.dtype, INT32_64)
        static = _reduced_static_shape(x, axes, keepdims, scope, op_type)
        attrs = {"T": x.dtype.base_dtype, "Tidx": axes.dtype.base_dtype, "keep_dims": keepdims}
        return create_tensor(op_type, [x, axes], x.dtype.base_dtype, scope, static, attrs)


def reduce_sum(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> ops.Tensor:
    """Sums ``input_tensor`` over ``axis`` (op type ``Sum``).

    Args:
        input_tensor: A numeric tensor.
        axis: The axes to reduce (negative counts from the end); None reduces all.
        keepdims: Keep the reduced axes with length 1.
        name: The op name.
        reduction_indices: Deprecated alias of ``axis``.
        keep_dims: Deprecated alias of ``keepdims``.

    Raises:
        ValueError: if an axis is out of range, or both an argument and its alias are given.
    """
    return _reduction(
        "Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims, NUMERIC
    )


def reduce_mean(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> ops.Tensor:
    """Averages ``input_tensor`` over ``axis`` (op type ``Mean``).

    The mean of an integer tensor is an integer (the sum divided by the count,
    truncated), as in TF.

    Args:
        input_tensor: A numeric tensor.
        axis: The axes to reduce (negative counts from the end); None reduces all.
        keepdims: Keep the reduced axes with length 1.
        name: The op name.
        reduction_indices: Deprecated alias of ``axis``.
        keep_dims: Deprecated alias of ``keepdims``.

    Raises:
        ValueError: if an axis is out of range, or both an argument and its alias are given.
    """
    return _reduction(
        "Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims, NUMERIC
    )


def reduce_prod(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> ops.Tensor:
    """Multiplies ``input_tensor`` over ``axis`` (op type ``Prod``); see `reduce_sum`.

    Args:
        input_tensor: A numeric tensor.
        axis: The axes to reduce (negative counts from the end); None reduces all.
        keepdims: Keep the reduced axes with length 1.
        name: The op name.
        reduction_indices: Deprecated alias of ``axis``.
        keep_dims: Deprecated alias of ``keepdims``.

    Raises:
        ValueError: if an axis is out of range, or both an argument and its alias are given.
    """
    return _reduction(
        "Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims, NUMERIC
    )


def reduce_max(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> ops.Tensor:
    """The maximum of ``input_tensor`` over ``axis`` (op type ``Max``); see `reduce_sum`.

    Args:
        input_tensor: A real numeric tensor.
        axis: The axes to reduce (negative counts from the end); None reduces all.
        keepdims: Keep the reduced axes with length 1.
        name: The op name.
        reduction_indices: Deprecated alias of ``axis``.
        keep_dims: Deprecated alias of ``keepdims``.

    Raises:
        ValueError: if an axis is out of range, or both an argument and its alias are given.
    """
    return _reduction("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims, REAL)


def reduce_min(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> ops.Tensor:
    """The minimum of ``input_tensor`` over ``axis`` (op type ``Min``); see `reduce_sum`.

    Args:
        input_tensor: A real numeric tensor.
        axis: The axes to reduce (negative counts from the end); None reduces all.
        keepdims: Keep the reduced axes with length 1.
        name: The op name.
        reduction_indices: Deprecated alias of ``axis``.
        keep_dims: Deprecated alias of ``keepdims``.

    Raises:
        ValueError: if an axis is out of range, or both an argument and its alias are given.
    """
    return _reduction("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims, REAL)


def reduce_any(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> ops.Tensor:
    """Logical OR of a bool tensor over ``axis`` (op type ``Any``); see `reduce_sum`.

    Args:
        input_tensor: A bool tensor.
        axis: The axes to reduce (negative counts from the end); None reduces all.
        keepdims: Keep the reduced axes with length 1.
        name: The op name.
        reduction_indices: Deprecated alias of ``axis``.
        keep_dims: Deprecated alias of ``keepdims``.

    Raises:
        ValueError: if an axis is out of range, or both an argument and its alias are given.
    """
    return _reduction("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims, BOOL)


def reduce_all(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
) -> ops.Tensor:
    """Logical AND of a bool tensor over ``axis`` (op type ``All``); see `reduce_sum`.

    Args:
        input_tensor: A bool tensor.
        axis: The axes to reduce (negative counts from the end); None reduces all.
        keepdims: Keep the reduced axes with length 1.
        name: The op name.
        reduction_indices: Deprecated alias of ``axis``.
        keep_dims: Deprecated alias of ``keepdims``.

    Raises:
        ValueError: if an axis is out of range, or both an argument and its alias are given.
    """
    return _reduction("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims, BOOL)


def _arg_reduce(op_type: str, input, axis, name, output_type) -> ops.Tensor:
    with ops.name_scope(name, op_type, [input, axis]) as scope:
        x = ops.convert_to_tensor(input, name="input")
        axis = ops.convert_to_tensor(axis, name="dimension", preferred_dtype=dtypes.int32)
        output_type = dtypes.as_dtype(output_type).base_dtype
        check_dtype("input", x.dtype, REAL)
        check_dtype("dimension", axis.dtype, INT32_64)
        check_dtype("output_type", output_type, INT32_64)
        if axis.get_shape().ndims not in (None, 0):
            raise shape_error(
                f"Shape must be rank 0 but is rank {axis.get_shape().ndims}",
                scope,
                op_type,
                x,
                axis,
            )
        static = _reduced_static_shape(x, axis, False, scope, op_type)
        attrs = {"T": x.dtype.base_dtype, "Tidx": axis.dtype.base_dtype, "output_type": output_type}
        return create_tensor(op_type, [x, axis], output_type, scope, static, attrs)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64) -> ops.Tensor:
    """The index of the largest value of ``input`` along ``axis`` (op type ``ArgMax``).

    Args:
        input: A real numeric tensor.
        axis: A scalar axis; TF1 defaults to 0.
        name: The op name.
        dimension: Deprecated alias of ``axis``.
        output_type: int32 or int64 (the default).
    """
    axis = _deprecated_argument_lookup("axis", axis, "dimension", dimension)
    return _arg_reduce("ArgMax", input, 0 if axis is None else axis, name, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64) -> ops.Tensor:
    """The index of the smallest value of ``input`` along ``axis`` (op type ``ArgMin``).

    Args:
        input: A real numeric tensor.
        axis: A scalar axis; TF1 defaults to 0.
        name: The op name.
        dimension: Deprecated alias of ``axis``.
        output_type: int32 or int64 (the default).
    """
    axis = _deprecated_argument_lookup("axis", axis, "dimension", dimension)
    return _arg_reduce("ArgMin", input, 0 if axis is None else axis, name, output_type)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> ops.Tensor:
    """Cumulative sum of ``x`` along ``axis`` (op type ``Cumsum``).

    Args:
        x: A numeric tensor.
        axis: A scalar axis (default 0).
        exclusive: Leave each element out of its own sum (the first becomes 0).
        reverse: Sum from the end of the axis backwards.
        name: The op name.
    """
    with ops.name_scope(name, "Cumsum", [x]) as scope:
        x = ops.convert_to_tensor(x, name="x")
        axis = ops.convert_to_tensor(axis, name="axis", preferred_dtype=dtypes.int32)
        check_dtype("x", x.dtype, NUMERIC)
        check_dtype("axis", axis.dtype, INT32_64)
        attrs = {
            "T": x.dtype.base_dtype,
            "Tidx": axis.dtype.base_dtype,
            "exclusive": bool(exclusive),
            "reverse": bool(reverse),
        }
        return create_tensor("Cumsum", [x, axis], x.dtype.base_dtype, scope, x.get_shape(), attrs)


_RANGE_TYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def range_size_or_error(start, limit, delta) -> tuple[int | None, str | None]:
    """The length of ``range(start, limit, delta)``, or the message of TF's error."""
    if delta == 0:
        return None, f"Requires delta != 0: {delta}"
    if delta > 0 and start > limit:
        return None, f"Requires start <= limit when delta > 0: {start}/{limit}"
    if delta < 0 and start < limit:
        return None, f"Requires start >= limit when delta < 0: {start}/{limit}"
    if isinstance(start, (int, np.integer)) and isinstance(delta, (int, np.integer)):
        size = (abs(limit - start) + abs(delta) - 1) // abs(delta)
    else:
        size = int(np.ceil(abs((limit - start) / delta)))
    return int(size), None


def range(start, limit=None, delta=1, dtype=None, name="range") -> ops.Tensor:
    """A 1-D tensor ``[start, start + delta, ...]`` up to but excluding ``limit`` (op ``Range``).

    Args:
        start: The first value, or the limit if ``limit`` is None (then start is 0).
        limit: The exclusive upper (or, for a negative delta, lower) bound.
        delta: The increment; nonzero.
        dtype: The element type; inferred as the widest of int32 < int64 <
            float32 < float64 among the arguments if None.
        name: The op name.

    Raises:
        ValueError: if constant arguments describe an invalid range.
    """
    if limit is None:
        start, limit = 0, start
    with ops.name_scope(name, "Range", [start, limit, delta]) as scope:
        start = ops.convert_to_tensor(start, dtype=dtype, name="start")
        limit = ops.convert_to_tensor(limit, dtype=dtype, name="limit")
        delta = ops.convert_to_tensor(delta, dtype=dtype, name="delta")
        args = (start, limit, delta)
        for arg in args:
            if arg.get_shape().ndims not in (None, 0):
                raise shape_error(
                    f"Shape must be rank 0 but is rank {arg.get_shape().ndims}",
                    scope,
                    "Range",
                    *args,
                )
        if dtype is None:
            for arg in args:
                check_dtype("start", arg.dtype, _RANGE_TYPES)
            inferred = max((a.dtype.base_dtype for a in args), key=_RANGE_TYPES.index)
            args = tuple(cast(a, inferred) for a in args)
        out_dtype = args[0].dtype.base_dtype
        values = [tensor_util.constant_value(a) for a in args]
        size = None
        if all(v is not None for v in values):
            size, message = range_size_or_error(*(v.item() for v in values))
            if message:
                raise shape_error(message, scope, "Range", *args)
        attrs = {"Tidx": out_dtype}
        return create_tensor(
            "Range", list(args), out_dtype, scope, tensor_shape.TensorShape([size]), attrs
        )
