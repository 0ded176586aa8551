"""Array ops: placeholders, identity, filled tensors, and the conversions TF registers here.

``array_ops.<name>`` finds every array op, as in TF (the ``x as x`` imports
re-export those that are not in ``__all__``). The constructors defined here
are ``placeholder``, ``placeholder_with_default``, ``identity``,
``stop_gradient`` and the filled tensors (``zeros``, ``ones``, ``fill``,
``zeros_like``, ``ones_like``). The others live next door, grouped as in
TF1's array-ops documentation, and are re-exported here:

- `minitf.ops.array.array_shaping`: shapes and shaping (``shape``, ``size``,
  ``rank``, ``reshape``, ``expand_dims``, ``squeeze``, ``transpose``);
- `minitf.ops.array.array_joining`: ``concat``, ``stack``, ``unstack``, ``split``,
  ``tile``, ``pad``;
- `minitf.ops.array.array_slicing`: ``slice``, ``strided_slice`` and ``tensor[...]``;
- `minitf.ops.array.array_indexing`: ``gather``, ``unsorted_segment_sum``,
  ``one_hot``, ``where``, ``dynamic_partition``/``dynamic_stitch``.

Kernels are in `minitf.ops.array.array_kernels` and
`minitf.ops.array.array_indexing_kernels`, gradients in `minitf.ops.array.array_grad`;
importing any module of `minitf.ops` registers them.

This module also registers two tensor conversions: *autopacking* (a list
that contains tensors, like ``[tf.shape(x)[0], -1]``, becomes a ``Pack`` op)
and the densification of `IndexedSlices` (an ``UnsortedSegmentSum`` op).
"""

from __future__ import annotations

import logging

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.array import constant_op
from minitf.ops.array.array_indexing import (
    dynamic_partition,
    dynamic_stitch,
    gather,
    one_hot,
    unique,
    unsorted_segment_sum,
    where,
)
from minitf.ops.array.array_indexing import parallel_dynamic_stitch as parallel_dynamic_stitch
from minitf.ops.array.array_joining import concat, pack, pad, split, stack, tile, unstack
from minitf.ops.array.array_joining import concat_offset as concat_offset
from minitf.ops.array.array_shaping import (
    constant_value_as_shape,
    expand_dims,
    invert_permutation,
    rank,
    reshape,
    shape,
    shape_internal,
    shape_n,
    size,
    squeeze,
    transpose,
)
from minitf.ops.array.array_slicing import slice, strided_slice
from minitf.ops.array.array_slicing import strided_slice_grad as strided_slice_grad
from minitf.ops.common_shapes import check_rank
from minitf.ops.op_def_library import create_op, index_tensor, is_tensor_like

__all__ = [
    "placeholder",
    "placeholder_with_default",
    "identity",
    "shape",
    "shape_n",
    "size",
    "rank",
    "reshape",
    "zeros",
    "ones",
    "fill",
    "zeros_like",
    "ones_like",
    "concat",
    "stack",
    "unstack",
    "split",
    "transpose",
    "invert_permutation",
    "expand_dims",
    "squeeze",
    "tile",
    "pad",
    "slice",
    "strided_slice",
    "newaxis",
    "one_hot",
    "where",
    "stop_gradient",
    "gather",
    "unsorted_segment_sum",
    "dynamic_partition",
    "dynamic_stitch",
    "unique",
]

logger = logging.getLogger("minitf")

# ``x[tf.newaxis]`` inserts a dimension of size 1, as in numpy.
newaxis = None


def placeholder(dtype, shape=None, name=None) -> ops.Tensor:
    """A tensor whose value must be fed (``feed_dict``) when it is evaluated.

    Args:
        dtype: The element type.
        shape: The (possibly partial) shape; None means any shape.
        name: The op name (default ``"Placeholder"``).
    """
    dtype = dtypes.as_dtype(dtype)
    static = tensor_shape.as_shape(shape) if shape is not None else tensor_shape.unknown_shape()
    op = ops.get_default_graph().create_op(
        "Placeholder",
        [],
        [dtype],
        name=name or "Placeholder",
        attrs={"dtype": dtype, "shape": static},
        shapes=[static],
    )
    return op.outputs[0]


def placeholder_with_default(input, shape, name=None) -> ops.Tensor:  # noqa: A002 - TF's name
    """A placeholder that yields ``input`` when it is not fed.

    Args:
        input: The default value.
        shape: The (possibly partial) shape of the tensor; must be compatible
            with ``input``'s shape.
        name: The op name.

    Raises:
        ValueError: if ``shape`` is not compatible with the shape of ``input``.
    """
    with ops.name_scope(name, "PlaceholderWithDefault", [input]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        static = tensor_shape.as_shape(shape)
        if not static.is_compatible_with(value.get_shape()):
            raise ValueError(
                f"Shapes {value.get_shape()} and {static} are incompatible: the default value of "
                f"placeholder_with_default '{scope[:-1]}' must fit its shape"
            )
        op = ops.get_default_graph().create_op(
            "PlaceholderWithDefault",
            [value],
            [value.dtype.base_dtype],
            name=scope,
            attrs={"dtype": value.dtype.base_dtype, "shape": static},
            shapes=[static],
        )
    return op.outputs[0]


def identity(input, name=None) -> ops.Tensor:  # noqa: A002 - TF's name
    """Returns a tensor with the same value as ``input``.

    Args:
        input: A tensor (or a value convertible to one).
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "Identity", [input]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        op = ops.get_default_graph().create_op(
            "Identity",
            [value],
            [value.dtype.base_dtype],
            name=scope,
            attrs={"T": value.dtype.base_dtype},
            shapes=[value.get_shape()],
        )
    return op.outputs[0]


def stop_gradient(input, name=None) -> ops.Tensor:  # noqa: A002
    """Returns ``input``, but ``tf.gradients`` treats it as a constant (op ``StopGradient``).

    Args:
        input: A tensor (or a value convertible to one).
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "StopGradient", [input]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        op = create_op(
            "StopGradient",
            [value],
            [value.dtype.base_dtype],
            scope,
            {"T": value.dtype.base_dtype},
            [value.get_shape()],
        )
    return op.outputs[0]


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


_LARGE_SPARSE_NUM_ELEMENTS = 100_000_000


def _indexed_slices_to_tensor(value, dtype=None, name=None, as_ref=False) -> ops.Tensor:
    """Densifies an `IndexedSlices` with ``UnsortedSegmentSum`` (repeated rows are summed).

    Raises:
        ValueError: if ``dtype`` does not match or ``value`` has no ``dense_shape``.
    """
    del as_ref
    if dtype is not None and not dtype.is_compatible_with(value.dtype):
        raise ValueError(
            f"Tensor conversion requested dtype {dtype.name} for IndexedSlices with dtype "
            f"{value.dtype.name}"
        )
    if value.dense_shape is None:
        raise ValueError(
            f"Tensor conversion requested for IndexedSlices without dense_shape: {value}"
        )
    dense_shape = tensor_util.constant_value(value.dense_shape)
    if dense_shape is None:
        logger.warning(
            "Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
            "This may consume a large amount of memory."
        )
    elif int(np.prod(dense_shape, dtype=np.int64)) >= _LARGE_SPARSE_NUM_ELEMENTS:
        logger.warning(
            "Converting sparse IndexedSlices to a dense Tensor with %d elements. "
            "This may consume a large amount of memory.",
            int(np.prod(dense_shape, dtype=np.int64)),
        )
    return unsorted_segment_sum(value.values, value.indices, value.dense_shape[0], name=name)


ops.register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)


def _dtype_in_nested_lists(values) -> dtypes.DType | None:
    for elem in values:
        if is_tensor_like(elem):
            return elem.dtype.base_dtype
        if isinstance(elem, (list, tuple)):
            found = _dtype_in_nested_lists(elem)
            if found is not None:
                return found
    return None


def _autopack(values, dtype: dtypes.DType, name: str):
    """Packs a nested list holding tensors into ``Pack`` ops (returns a list if none)."""
    must_pack, converted = False, []
    with ops.name_scope(name) as scope:
        for i, elem in enumerate(values):
            if is_tensor_like(elem):
                elem = ops.convert_to_tensor(elem)
                if elem.dtype.base_dtype != dtype:
                    raise TypeError(
                        f"Cannot convert a list containing a tensor of dtype {elem.dtype} to "
                        f"{dtype} (Tensor is: {elem!r})"
                    )
                must_pack = True
            elif isinstance(elem, (list, tuple)):
                elem = _autopack(elem, dtype, str(i))
                must_pack = must_pack or isinstance(elem, ops.Tensor)
            converted.append(elem)
        if not must_pack:
            return converted
        tensors = [
            e if isinstance(e, ops.Tensor) else constant_op.constant(e, dtype=dtype, name=str(i))
            for i, e in enumerate(converted)
        ]
        return pack(tensors, 0, scope)


def _autopacking_conversion(values, dtype=None, name=None, as_ref=False):
    """Converts a (nested) list that holds tensors, like ``[tf.shape(x)[0], -1]``, to ``Pack``."""
    if as_ref:
        return NotImplemented
    inferred = _dtype_in_nested_lists(values)
    if inferred is None:
        return NotImplemented
    if dtype is not None and dtype.base_dtype != inferred:
        raise TypeError(
            f"Cannot convert a list containing a tensor of dtype {inferred} to {dtype.base_dtype}"
        )
    return _autopack(values, inferred, name or "packed")


ops.register_tensor_conversion_function((list, tuple), _autopacking_conversion, 99)
