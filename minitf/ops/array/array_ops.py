"""Array ops: placeholders, transposes, and the conversions TF registers here.

``array_ops.<name>`` finds every array op, as in TF (the ``x as x`` imports
re-export those that are not in ``__all__``). The constructors defined here
are ``placeholder``, ``placeholder_with_default``, ``transpose`` and
``invert_permutation``. The others live next door, grouped as in TF1's
array-ops documentation, and are re-exported here:

- `minitf.ops.array.array_identity`: ``identity`` and ``stop_gradient``;
- `minitf.ops.array.array_filling`: the filled tensors (``zeros``, ``ones``,
  ``fill``, ``zeros_like``, ``ones_like``);
- `minitf.ops.array.array_shaping`: shapes and shaping (``shape``, ``size``,
  ``rank``, ``reshape``, ``expand_dims``, ``squeeze``);
- `minitf.ops.array.array_joining`: ``concat``, ``stack``, ``unstack``, ``split``,
  ``tile``, ``pad``;
- `minitf.ops.array.array_slicing`: ``slice``, ``strided_slice`` and ``tensor[...]``;
- `minitf.ops.array.array_indexing`: ``gather``, ``unsorted_segment_sum``,
  ``one_hot``, ``where``, ``dynamic_partition``/``dynamic_stitch``.

They import each other one way only; ``transpose`` is here, above
`minitf.ops.math.math_ops`, because its default permutation of a tensor of
unknown rank is computed with math ops.

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
from minitf.ops.array.array_filling import fill, ones, ones_like, zeros, zeros_like
from minitf.ops.array.array_identity import identity, stop_gradient
from minitf.ops.array.array_indexing import (
    dynamic_partition,
    dynamic_stitch,
    gather,
    one_hot,
    reverse,
    reverse_sequence,
    reverse_v2,
    unique,
    unsorted_segment_sum,
    where,
)
from minitf.ops.array.array_indexing import parallel_dynamic_stitch as parallel_dynamic_stitch
from minitf.ops.array.array_joining import concat, pack, pad, split, stack, tile, unstack
from minitf.ops.array.array_joining import concat_offset as concat_offset
from minitf.ops.array.array_shaping import constant_value_as_shape as constant_value_as_shape
from minitf.ops.array.array_shaping import (
    expand_dims,
    rank,
    reshape,
    shape,
    shape_n,
    size,
    squeeze,
)
from minitf.ops.array.array_shaping import shape_internal as shape_internal
from minitf.ops.array.array_slicing import slice, strided_slice
from minitf.ops.array.array_slicing import strided_slice_grad as strided_slice_grad
from minitf.ops.common_shapes import check_rank, shape_error_suffix, static_ints
from minitf.ops.math import math_ops
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
    "reverse_sequence",
    "reverse",
    "reverse_v2",
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


def transpose(a, perm=None, name="transpose", conjugate=False) -> ops.Tensor:
    """Permutes the dimensions of ``a`` by ``perm`` (default: reversed) (op ``Transpose``).

    Args:
        a: A tensor.
        perm: A permutation of the dimensions of ``a``; None reverses them.
        name: A name for the operation.
        conjugate: Whether to also conjugate a complex ``a`` (not supported for complex tensors).

    Raises:
        ValueError: if ``perm`` is known and is not a permutation of ``range(rank)``.
        NotImplementedError: if ``conjugate`` is set for a complex ``a``.
    """
    with ops.name_scope(name, "transpose", [a]) as scope:
        a = ops.convert_to_tensor(a, name="a")
        if conjugate and a.dtype.is_complex:
            raise NotImplementedError("minitf has no ConjugateTranspose")
        if perm is None:
            ndims = a.get_shape().ndims
            if ndims is None:
                rank_t = rank(a)
                perm = math_ops.subtract(rank_t - 1, math_ops.range(0, rank_t, 1))
            else:
                perm = np.arange(ndims - 1, -1, -1, dtype=np.int32)
        return _transpose(a, perm, scope)


def _transposed_shape(a, perm_t, scope) -> tensor_shape.TensorShape:
    static = a.get_shape()
    perm = static_ints(perm_t)
    suffix = shape_error_suffix(scope, "Transpose", [a, perm_t])
    perm_len = perm_t.get_shape().dims[0].value if perm_t.get_shape().ndims == 1 else None
    if static.ndims is not None and perm_len is not None and perm_len != static.ndims:
        raise ValueError(f"Dimension must be {static.ndims} but is {perm_len}" + suffix)
    if perm is None:
        return tensor_shape.unknown_shape(static.ndims if static.ndims is not None else perm_len)
    if sorted(p % len(perm) if -len(perm) <= p < len(perm) else p for p in perm) != list(
        range(len(perm))
    ):
        raise ValueError(f"perm {perm} is not a permutation of [0, {len(perm)})" + suffix)
    if static.ndims is None:
        return tensor_shape.unknown_shape(len(perm))
    return tensor_shape.TensorShape([static.dims[p] for p in perm])


def _transpose(a, perm, scope) -> ops.Tensor:
    perm_t = index_tensor(perm, "perm", "Transpose")
    static = _transposed_shape(a, perm_t, scope)
    op = create_op(
        "Transpose",
        [a, perm_t],
        [a.dtype.base_dtype],
        scope,
        {"T": a.dtype.base_dtype, "Tperm": perm_t.dtype.base_dtype},
        [static],
    )
    return op.outputs[0]


def invert_permutation(x, name=None) -> ops.Tensor:
    """Returns ``y`` with ``y[x[i]] = i`` (op ``InvertPermutation``).

    Args:
        x: A 1-D int32 or int64 tensor holding a permutation of ``0..n-1``.
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "InvertPermutation", [x]) as scope:
        x = index_tensor(x, "x", "InvertPermutation")
        check_rank(x, 1, scope, "InvertPermutation", [x])
        op = create_op(
            "InvertPermutation",
            [x],
            [x.dtype.base_dtype],
            scope,
            {"T": x.dtype.base_dtype},
            [x.get_shape()],
        )
    return op.outputs[0]


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
