"""Shapes and shaping: ``shape``, ``size``, ``rank``, ``reshape``, ``expand_dims``, ``squeeze``.

Shape queries give a constant when the static shape already answers them
(``size``, ``rank``, `shape_internal`). `constant_value_as_shape` reads the
partially known value of a shape argument, such as ``[tf.shape(x)[0], -1]``,
for static shape inference.

Part of TF's ``array_ops`` (re-exported by `minitf.ops.array.array_ops`); kernels in
`minitf.ops.array.array_kernels`, gradients in `minitf.ops.array.array_grad`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.array import constant_op
from minitf.ops.array.slice_spec import MASK_NAMES, constant_slice_index
from minitf.ops.common_shapes import shape_error_suffix, static_int
from minitf.ops.op_def_library import convert_list, create_op, index_tensor


def shape(input, name=None, out_type=dtypes.int32) -> ops.Tensor:  # noqa: A002 - TF's name
    """Returns the shape of ``input`` as a 1-D tensor of ``out_type``.

    Args:
        input: A tensor.
        name: A name for the operation (optional).
        out_type: The dtype of the result: int32 (the default) or int64.
    """
    with ops.name_scope(name, "Shape", [input]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        out_type = dtypes.as_dtype(out_type)
        rank = value.get_shape().ndims
        op = ops.get_default_graph().create_op(
            "Shape",
            [value],
            [out_type],
            name=scope,
            attrs={"T": value.dtype.base_dtype, "out_type": out_type},
            shapes=[tensor_shape.TensorShape([rank])],
        )
    return op.outputs[0]


def shape_n(input, out_type=dtypes.int32, name=None) -> list[ops.Tensor]:  # noqa: A002
    """Returns the shapes of the tensors in ``input``, one 1-D tensor each (op ``ShapeN``).

    Args:
        input: A list of tensors.
        out_type: The dtype of the results: int32 (the default) or int64.
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "ShapeN", list(input)) as scope:
        values = convert_list(list(input), "ShapeN", "input")
        out_type = dtypes.as_dtype(out_type)
        shapes = [tensor_shape.TensorShape([v.get_shape().ndims]) for v in values]
        op = create_op(
            "ShapeN",
            values,
            [out_type] * len(values),
            scope,
            {"N": len(values), "T": values[0].dtype.base_dtype, "out_type": out_type},
            shapes,
        )
    return op.outputs


def size(input, name=None, out_type=dtypes.int32) -> ops.Tensor:  # noqa: A002
    """Returns the number of elements of ``input``.

    Like TF, a fully defined static shape gives a constant; otherwise a ``Size`` op.

    Args:
        input: A tensor.
        name: A name for the operation (optional).
        out_type: The dtype of the result: int32 (the default) or int64.
    """
    with ops.name_scope(name, "Size", [input]) as scope:
        value = ops.convert_to_tensor(input)
        out_type = dtypes.as_dtype(out_type)
        static = value.get_shape()
        if static.is_fully_defined():
            return constant_op.constant(static.num_elements(), out_type, name=scope)
        if static.dims and any(d.value == 0 for d in static.dims):
            return constant_op.constant(0, out_type, name=scope)
        op = create_op(
            "Size",
            [value],
            [out_type],
            scope,
            {"T": value.dtype.base_dtype, "out_type": out_type},
            [tensor_shape.TensorShape([])],
        )
    return op.outputs[0]


def rank(input, name=None) -> ops.Tensor:  # noqa: A002
    """Returns the number of dimensions of ``input`` (int32).

    Like TF, a known static rank gives a constant; otherwise a ``Rank`` op.

    Args:
        input: A tensor.
        name: A name for the operation (optional).
    """
    return rank_internal(input, name)


def rank_internal(input, name=None, optimize: bool = True) -> ops.Tensor:  # noqa: A002
    """`rank`, always as a ``Rank`` op when not ``optimize`` (so that it reads its input)."""
    with ops.name_scope(name, "Rank", [input]) as scope:
        value = ops.convert_to_tensor(input)
        ndims = value.get_shape().ndims
        if optimize and ndims is not None:
            return constant_op.constant(ndims, dtypes.int32, name=scope)
        op = create_op(
            "Rank",
            [value],
            [dtypes.int32],
            scope,
            {"T": value.dtype.base_dtype},
            [tensor_shape.TensorShape([])],
        )
    return op.outputs[0]


def shape_internal(value: ops.Tensor, out_type=dtypes.int32) -> ops.Tensor:
    """``shape(value)``, as a constant when the static shape is fully defined (TF's optimize)."""
    with ops.name_scope(None, "Shape", [value]) as scope:
        static = value.get_shape()
        if static.is_fully_defined():
            return constant_op.constant(static.as_list(), out_type, name=scope)
        return shape(value, name=scope, out_type=out_type)


def constant_value_as_shape(tensor) -> tensor_shape.TensorShape:
    """`tensor_util.constant_value_as_shape`, also partial through ``Pack`` and ``ConcatV2``.

    ``[tf.shape(x)[0], -1]`` is a ``Pack`` of a non-constant and a constant: its
    static shape is ``[?, ?]`` with the known entries kept, as in TF.
    """
    if isinstance(tensor, ops.Tensor) and tensor_util.constant_value(tensor) is None:
        if tensor.op.type == "Pack":
            dims = []
            for t in tensor.op.inputs:
                value = tensor_util.constant_value(t)
                dims.append(None if value is None or int(value) < 0 else int(value))
            return tensor_shape.TensorShape(dims)
        if tensor.op.type == "ConcatV2":
            result = tensor_shape.TensorShape([])
            for t in tensor.op.inputs[:-1]:
                result = result.concatenate(constant_value_as_shape(t))
            return result
        if tensor.op.type == "StridedSlice" and tensor.op.inputs[0].op.type == "Shape":
            static = constant_value_as_shape(tensor.op.inputs[0])
            index = constant_slice_index(
                tensor.op, tuple(tensor.op.get_attr(m) for m in MASK_NAMES)
            )
            if static.ndims is not None and index is not None and len(index) == 1:
                if isinstance(index[0], slice):
                    return tensor_shape.TensorShape(static.dims[index[0]])
    return tensor_util.constant_value_as_shape(tensor)


def _reshaped_static_shape(input_shape, new_shape, where: str) -> tensor_shape.TensorShape:
    """The static shape of a reshape; ``where`` (TF's "for 'name' (op: ...)" tail) ends errors."""
    target = tensor_shape.as_shape(new_shape)
    if target.ndims is None:
        return target
    dims = target.as_list()
    unknown = [i for i, d in enumerate(dims) if d is None]
    if not input_shape.is_fully_defined():
        return target
    total = input_shape.num_elements()
    if not unknown:
        if int(np.prod(dims, dtype=np.int64)) != total:
            raise ValueError(
                f"Cannot reshape a tensor with {total} elements to shape "
                f"[{','.join(map(str, dims))}] ({int(np.prod(dims, dtype=np.int64))} elements)"
                + where
            )
        return target
    if len(unknown) == 1:
        known = int(np.prod([d for d in dims if d is not None], dtype=np.int64))
        if known == 0 or total % known:
            raise ValueError(
                f"Cannot reshape a tensor with {total} elements to shape "
                f"[{','.join('-1' if d is None else str(d) for d in dims)}]" + where
            )
        dims[unknown[0]] = total // known
    return tensor_shape.TensorShape(dims)


def reshape(tensor, shape, name=None) -> ops.Tensor:  # noqa: F811 - TF's argument name
    """Returns ``tensor`` with its elements rearranged into ``shape`` (one entry may be -1).

    Args:
        tensor: A tensor.
        shape: The new shape, a 1-D int32 or int64 tensor (one entry may be -1).
        name: A name for the operation (optional).

    Raises:
        ValueError: if the element counts are known and differ.
        TypeError: if ``shape`` is not an integer tensor.
    """
    with ops.name_scope(name, "Reshape", [tensor, shape]) as scope:
        value = ops.convert_to_tensor(tensor, name="tensor")
        new_shape = ops.convert_to_tensor(shape, name="shape", preferred_dtype=dtypes.int32)
        if not new_shape.dtype.is_integer:
            raise TypeError(f"Reshape: shape must be int32 or int64, got {new_shape.dtype.name}")
        static = _reshaped_static_shape(
            value.get_shape(),
            constant_value_as_shape(new_shape),
            shape_error_suffix(scope, "Reshape", [value, new_shape]),
        )
        op = ops.get_default_graph().create_op(
            "Reshape",
            [value, new_shape],
            [value.dtype.base_dtype],
            name=scope,
            attrs={"T": value.dtype.base_dtype, "Tshape": new_shape.dtype},
            shapes=[static],
        )
    return op.outputs[0]


def expand_dims(input, axis=None, name=None, dim=None) -> ops.Tensor:  # noqa: A002
    """Inserts a dimension of size 1 at index ``axis`` (op ``ExpandDims``).

    Args:
        input: A tensor.
        axis: The index at which to insert the dimension; in ``[-rank-1, rank]``.
        name: A name for the operation (optional).
        dim: Deprecated alias of ``axis``.

    Raises:
        ValueError: if neither or both of ``axis`` and the deprecated ``dim`` are
            given, or ``axis`` is out of ``[-rank-1, rank]``.
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    with ops.name_scope(name, "ExpandDims", [input, axis]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        axis_t = index_tensor(axis, "dim", "ExpandDims")
        static = value.get_shape()
        axis_value = static_int(axis_t)
        out = tensor_shape.unknown_shape()
        if static.ndims is not None:
            out = tensor_shape.unknown_shape(static.ndims + 1)
            if axis_value is not None:
                if not -static.ndims - 1 <= axis_value <= static.ndims:
                    raise ValueError(
                        f"Tried to expand dim index {axis_value} for tensor with "
                        f"{static.ndims} dimensions."
                        + shape_error_suffix(scope, "ExpandDims", [value, axis_t])
                    )
                where_ = axis_value if axis_value >= 0 else axis_value + static.ndims + 1
                dims = list(static.dims)
                dims.insert(where_, tensor_shape.Dimension(1))
                out = tensor_shape.TensorShape(dims)
        op = create_op(
            "ExpandDims",
            [value, axis_t],
            [value.dtype.base_dtype],
            scope,
            {"T": value.dtype.base_dtype, "Tdim": axis_t.dtype.base_dtype},
            [out],
        )
    return op.outputs[0]


def squeeze(input, axis=None, name=None, squeeze_dims=None) -> ops.Tensor:  # noqa: A002
    """Removes dimensions of size 1 (all of them, or those in ``axis``) (op ``Squeeze``).

    Args:
        input: A tensor.
        axis: The dimensions to remove (an int or a list); empty or None removes every size-1
            dimension.
        name: A name for the operation (optional).
        squeeze_dims: Deprecated alias of ``axis``.

    Raises:
        ValueError: if a dimension in ``axis`` is known and is not 1.
    """
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    axis = squeeze_dims if axis is None else axis
    if axis is None:
        axis = []
    elif np.isscalar(axis):
        axis = [axis]
    axis = [int(a) for a in axis]
    with ops.name_scope(name, "Squeeze", [input]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        out = _squeezed_shape(value, axis, scope)
        op = create_op(
            "Squeeze",
            [value],
            [value.dtype.base_dtype],
            scope,
            {"T": value.dtype.base_dtype, "squeeze_dims": axis},
            [out],
        )
    return op.outputs[0]


def _squeezed_shape(value, axis: list[int], scope) -> tensor_shape.TensorShape:
    static = value.get_shape()
    if static.ndims is None:
        return tensor_shape.unknown_shape()
    suffix = shape_error_suffix(scope, "Squeeze", [value])
    wanted = set()
    for a in axis:
        if not -static.ndims <= a < static.ndims:
            raise ValueError(
                f"Tried to squeeze dim index {a} for tensor with {static.ndims} dimensions."
                + suffix
            )
        wanted.add(a % static.ndims)
    dims = []
    for i, d in enumerate(static.dims):
        if wanted and i in wanted:
            if d.value not in (None, 1):
                raise ValueError(
                    f"Can not squeeze dim[{i}], expected a dimension of 1, got {d.value}" + suffix
                )
            continue
        if not wanted:
            if d.value is None:
                return tensor_shape.unknown_shape()
            if d.value == 1:
                continue
        dims.append(d)
    return tensor_shape.TensorShape(dims)
