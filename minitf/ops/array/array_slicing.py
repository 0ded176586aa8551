"""Slicing: ``tf.slice``, ``tf.strided_slice`` and ``tensor[...]`` (numpy's basic indexing).

``tensor[1:, ..., tf.newaxis, 0]`` becomes one ``StridedSlice`` op: begin,
end and strides vectors plus five bit masks that say which entries are
``:``-ranges, ``...``, new axes or single indices (`_slice_spec_entries`).
`minitf.ops.array.slice_spec.strided_slice_index` turns such a spec back into the
numpy index it stands for; the kernels, the constant folders and static
shape inference share it.

Part of TF's ``array_ops`` (re-exported by `minitf.ops.array.array_ops`); kernels in
`minitf.ops.array.array_indexing_kernels`, gradients in `minitf.ops.array.array_grad`.
"""

from __future__ import annotations

import numbers

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.array import constant_op
from minitf.ops.array.array_filling import ones_like
from minitf.ops.array.array_joining import stack
from minitf.ops.array.slice_spec import MASK_NAMES
from minitf.ops.common_shapes import shape_error_suffix, static_ints
from minitf.ops.math.math_unary import cast
from minitf.ops.op_def_library import create_op, index_tensor

# ``slice`` is the op below; spec-to-index conversion needs Python's.
_builtin_slice = slice


def slice(input_, begin, size, name=None) -> ops.Tensor:  # noqa: A001
    """Extracts the block of ``input_`` that starts at ``begin`` with ``size`` (op ``Slice``).

    A ``size`` entry of -1 takes every element from ``begin`` to the end of that dimension.

    Args:
        input_: A tensor.
        begin: An int32 or int64 tensor, the start of the block in each dimension.
        size: The size of the block in each dimension (-1: to the end).
        name: A name for the operation (optional).

    Raises:
        ValueError: if the block is known not to fit in ``input_``.
    """
    with ops.name_scope(name, "Slice", [input_, begin, size]) as scope:
        value = ops.convert_to_tensor(input_, name="input")
        begin_t = index_tensor(begin, "begin", "Slice")
        size_t = ops.convert_to_tensor(size, dtype=begin_t.dtype.base_dtype, name="size")
        out = _sliced_shape(value, begin_t, size_t, scope)
        op = create_op(
            "Slice",
            [value, begin_t, size_t],
            [value.dtype.base_dtype],
            scope,
            {"T": value.dtype.base_dtype, "Index": begin_t.dtype.base_dtype},
            [out],
        )
    return op.outputs[0]


def slice_bounds_error(dims, begins, sizes) -> str | None:
    """TF's message for a block that does not fit, or None if it fits."""
    for i, (d, b, s) in enumerate(zip(dims, begins, sizes)):
        if d is None:
            continue
        if b is not None and not 0 <= b <= d:
            return f"Expected begin[{i}] in [0, {d}], but got {b}"
        if b is not None and s is not None and s != -1 and not 0 <= s <= d - b:
            return f"Expected size[{i}] in [0, {d - b}], but got {s}"
    return None


def _sliced_shape(value, begin_t, size_t, scope) -> tensor_shape.TensorShape:
    static = value.get_shape()
    begins, sizes = static_ints(begin_t), static_ints(size_t)
    n = len(sizes) if sizes is not None else (len(begins) if begins is not None else None)
    if n is None:
        n = begin_t.get_shape()[0].value if begin_t.get_shape().ndims == 1 else None
    suffix = shape_error_suffix(scope, "Slice", [value, begin_t, size_t])
    if static.ndims is not None and n is not None and n != static.ndims:
        raise ValueError(f"Dimension must be {static.ndims} but is {n}" + suffix)
    if sizes is None:
        return tensor_shape.unknown_shape(static.ndims if static.ndims is not None else n)
    dims = static.as_list() if static.ndims is not None else [None] * len(sizes)
    begins_or_none = begins if begins is not None else [None] * len(sizes)
    message = slice_bounds_error(dims, begins_or_none, sizes)
    if message:
        raise ValueError(message + suffix)
    out = []
    for d, b, s in zip(dims, begins_or_none, sizes):
        if s != -1:
            out.append(s)
        else:
            out.append(None if d is None or b is None else d - b)
    return tensor_shape.TensorShape(out)


# The StridedSlice mask attributes, in the order of `strided_slice`'s arguments.


def strided_slice(
    input_,
    begin,
    end,
    strides=None,
    begin_mask=0,
    end_mask=0,
    ellipsis_mask=0,
    new_axis_mask=0,
    shrink_axis_mask=0,
    var=None,
    name=None,
) -> ops.Tensor:
    """Python-style slicing ``input_[begin:end:strides]``, one entry per index (``StridedSlice``).

    Bit ``i`` of a mask changes index entry ``i``: ``begin_mask``/``end_mask``
    ignore ``begin[i]``/``end[i]`` (take the whole range), ``ellipsis_mask``
    makes it ``...``, ``new_axis_mask`` makes it ``tf.newaxis`` and
    ``shrink_axis_mask`` makes it the single index ``begin[i]`` (the dimension
    is removed). This is what ``tensor[...]`` builds.

    Args:
        input_: A tensor.
        begin: A 1-D int32 or int64 tensor of start indices.
        end: A 1-D tensor of end indices (exclusive).
        strides: A 1-D tensor of strides (default 1).
        begin_mask: A bitmask; see above.
        end_mask: A bitmask; see above.
        ellipsis_mask: A bitmask; see above.
        new_axis_mask: A bitmask; see above.
        shrink_axis_mask: A bitmask; see above.
        var: Unused; TF uses it to assign to a slice of a variable.
        name: A name for the operation (optional).

    Raises:
        ValueError: if an index is known to be out of range, a stride is 0, or
            there are more index entries than dimensions.
    """
    del var
    if strides is None:
        strides = ones_like(begin)
    with ops.name_scope(name, "StridedSlice", [input_, begin, end, strides]) as scope:
        value = ops.convert_to_tensor(input_, name="input")
        begin_t = index_tensor(begin, "begin", "StridedSlice")
        end_t = ops.convert_to_tensor(end, dtype=begin_t.dtype.base_dtype, name="end")
        strides_t = ops.convert_to_tensor(strides, dtype=begin_t.dtype.base_dtype, name="strides")
        masks = (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
        if ellipsis_mask & (ellipsis_mask - 1):
            raise ValueError("Multiple ellipses in slice spec not allowed")
        out = _strided_slice_shape(value, begin_t, end_t, strides_t, masks, scope)
        attrs = {"T": value.dtype.base_dtype, "Index": begin_t.dtype.base_dtype}
        attrs.update(zip(MASK_NAMES, masks))
        op = create_op(
            "StridedSlice",
            [value, begin_t, end_t, strides_t],
            [value.dtype.base_dtype],
            scope,
            attrs,
            [out],
        )
    return op.outputs[0]


def _sliced_dim(size_, b, e, s, full_begin, full_end) -> int | None:
    if s is None or size_ is None:
        return None
    if (b is None and not full_begin) or (e is None and not full_end):
        return None
    window = _builtin_slice(None if full_begin else b, None if full_end else e, s)
    return len(range(*window.indices(size_)))


def _strided_slice_shape(value, begin_t, end_t, strides_t, masks, scope):
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask = masks
    static = value.get_shape()
    n = begin_t.get_shape()[0].value if begin_t.get_shape().ndims == 1 else None
    if static.ndims is None or n is None:
        return tensor_shape.unknown_shape()
    begin, end, strides = (static_ints(t) for t in (begin_t, end_t, strides_t))
    suffix = shape_error_suffix(scope, "StridedSlice", [value, begin_t, end_t, strides_t])
    dims, out, d = static.as_list(), [], 0
    consumed = sum(1 for i in range(n) if not (ellipsis_mask | new_axis_mask) & (1 << i))
    for i in range(n):
        bit = 1 << i
        if ellipsis_mask & bit:
            covered = max(len(dims) - consumed, 0)
            out.extend(dims[d : d + covered])
            d += covered
            continue
        if new_axis_mask & bit:
            out.append(1)
            continue
        if d >= len(dims):
            raise ValueError(
                f"Index out of range using input dim {d}; input has only {len(dims)} dims" + suffix
            )
        b = None if begin is None else begin[i]
        s = None if strides is None else strides[i]
        if s == 0:
            raise ValueError(f"strides[{i}] must be non-zero" + suffix)
        if shrink_axis_mask & bit:
            if dims[d] is not None and b is not None and not -dims[d] <= b < dims[d]:
                raise ValueError(f"slice index {b} of dimension {d} out of bounds." + suffix)
        else:
            e = None if end is None else end[i]
            out.append(_sliced_dim(dims[d], b, e, s, begin_mask & bit, end_mask & bit))
        d += 1
    out.extend(dims[d:])
    return tensor_shape.TensorShape(out)


def strided_slice_grad(
    shape,  # noqa: F811 - TF's argument name
    begin,
    end,
    strides,
    dy,
    begin_mask=0,
    end_mask=0,
    ellipsis_mask=0,
    new_axis_mask=0,
    shrink_axis_mask=0,
    name=None,
) -> ops.Tensor:
    """The gradient of ``strided_slice``: ``dy`` scattered into zeros of ``shape``."""
    with ops.name_scope(name, "StridedSliceGrad", [shape, begin, end, strides, dy]) as scope:
        dy = ops.convert_to_tensor(dy, name="dy")
        attrs = {"T": dy.dtype.base_dtype, "Index": begin.dtype.base_dtype}
        attrs.update(
            zip(MASK_NAMES, (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask))
        )
        op = create_op(
            "StridedSliceGrad",
            [shape, begin, end, strides, dy],
            [dy.dtype.base_dtype],
            scope,
            attrs,
            [tensor_util.constant_value_as_shape(shape)],
        )
    return op.outputs[0]


_SLICE_TYPE_ERROR = (
    "Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
    "tf.int32/tf.int64 tensors are valid indices"
)


def _check_index(idx) -> None:
    if isinstance(idx, (numbers.Integral, tensor_shape.Dimension)):
        return
    dtype = getattr(idx, "dtype", None)
    ok_dtype = dtype is not None and dtypes.as_dtype(dtype).base_dtype in (
        dtypes.int32,
        dtypes.int64,
    )
    idx_shape = getattr(idx, "shape", None)
    if not ok_dtype or (bool(idx_shape) and len(idx_shape) == 1):
        raise TypeError(_SLICE_TYPE_ERROR + f", got {idx!r}")


def _plain_index(value):
    return value.value if isinstance(value, tensor_shape.Dimension) else value


def _slice_spec_entries(slice_spec):
    """begin/end/strides lists and the masks of ``tensor[slice_spec]`` (TF's ``_slice_helper``)."""
    begin, end, strides = [], [], []
    masks = dict.fromkeys(MASK_NAMES, 0)
    for index, s in enumerate(slice_spec):
        bit = 1 << index
        if isinstance(s, _builtin_slice):
            s = _builtin_slice(*(_plain_index(v) for v in (s.start, s.stop, s.step)))
            if s.start is not None:
                _check_index(s.start)
                begin.append(s.start)
            else:
                begin.append(0)
                masks["begin_mask"] |= bit
            if s.stop is not None:
                _check_index(s.stop)
                end.append(s.stop)
            else:
                end.append(0)
                masks["end_mask"] |= bit
            if s.step is not None:
                _check_index(s.step)
            strides.append(1 if s.step is None else s.step)
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            _check_index(s)
            s = _plain_index(s)
            begin.append(s)
            end.append(s + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    return begin, end, strides, masks


def _slice_helper(tensor, slice_spec, var=None) -> ops.Tensor:
    """``tensor[slice_spec]`` for ints, slices, ``...``, ``tf.newaxis`` and scalar int tensors.

    Raises:
        TypeError: on any other kind of index (lists of indices need ``tf.gather``).
    """
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides, masks = _slice_spec_entries(slice_spec)
    with ops.name_scope(None, "strided_slice", [tensor] + begin + end + strides) as scope:
        if begin:
            packed = [stack(begin), stack(end), stack(strides)]
            if any(p.dtype.base_dtype == dtypes.int64 for p in packed):
                packed = [
                    p if p.dtype.base_dtype == dtypes.int64 else cast(p, dtypes.int64)
                    for p in packed
                ]
        else:
            empty = constant_op.constant([], dtype=dtypes.int32)
            packed = [empty, empty, empty]
        return strided_slice(tensor, *packed, var=var, name=scope, **masks)


ops.Tensor._override_operator("__getitem__", _slice_helper)
