"""Numpy kernels and constant folders of `minitf.ops.array.array_slicing` and `array_indexing`.

Slicing is numpy's basic indexing (`strided_slice_index` builds the index),
gathering, one-hot and selection its advanced indexing. Out-of-range indices
raise TF's ``InvalidArgumentError`` naming the offending position. The other
array kernels are in `minitf.ops.array.array_kernels`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors, tensor_util
from minitf.framework.op_registry import register_compute, register_kernel
from minitf.ops.array.array_kernels import as_outputs
from minitf.ops.array.array_slicing import slice_bounds_error
from minitf.ops.array.slice_spec import MASK_NAMES, constant_slice_index, strided_slice_index


def _index_position(shape_, flat_position: int) -> str:
    """``"[1]"`` or ``"[1,0]"``: the position of a flat index in an array of ``shape_``."""
    if not shape_:
        return ""
    coords = np.unravel_index(flat_position, shape_)
    return "[" + ",".join(str(int(c)) for c in coords) + "]"


def _first_out_of_range(indices, limit: int) -> int | None:
    """The flat position of the first index outside ``[0, limit)``, or None."""
    if np.size(indices) == 0:
        return None
    if np.min(indices) >= 0 and np.max(indices) < limit:
        return None
    flat = np.ravel(indices)
    return int(np.flatnonzero((flat < 0) | (flat >= limit))[0])


def _check_indices(op, what: str, indices, limit: int) -> None:
    """Raises TF's error naming the first entry of ``indices`` outside ``[0, limit)``."""
    bad = _first_out_of_range(indices, limit)
    if bad is not None:
        value = np.ravel(indices)[bad]
        where_ = _index_position(np.shape(indices), bad)
        message = f"{what}{where_} = {value} is not in [0, {limit})"
        raise errors.InvalidArgumentError(op.node_def, op, message)


@register_kernel("Slice")
def _slice_kernel(op):
    def compute(ctx, x, begin, size_):
        dims = np.shape(x)
        message = None
        if len(begin) != len(dims) or len(size_) != len(dims):
            message = (
                f"Expected begin and size arguments to be 1-D tensors of size {len(dims)}, but "
                f"got shapes [{len(begin)}] and [{len(size_)}] instead."
            )
        else:
            message = slice_bounds_error(dims, [int(b) for b in begin], [int(s) for s in size_])
        if message:
            raise errors.InvalidArgumentError(op.node_def, op, message)
        index = tuple(slice(b, d if s == -1 else b + s) for b, s, d in zip(begin, size_, dims))
        return x[index]

    return compute


def _shrink_error(x, index) -> str:
    """TF's message for a single index out of range (found after numpy refused it)."""
    d = 0
    for entry in index:
        if entry is Ellipsis:
            d = np.ndim(x) - sum(1 for e in index if e is not None and e is not Ellipsis) + d
            continue
        if entry is None:
            continue
        if isinstance(entry, int) and not -x.shape[d] <= entry < x.shape[d]:
            return f"slice index {entry} of dimension {d} out of bounds."
        d += 1
    return "strided slice index out of bounds"


@register_kernel("StridedSlice")
def _strided_slice_kernel(op):
    masks = tuple(op.get_attr(m) for m in MASK_NAMES)
    fixed = constant_slice_index(op, masks)

    def compute(ctx, x, begin, end, strides):
        index = fixed if fixed is not None else strided_slice_index(begin, end, strides, masks)
        try:
            return x[index]
        except IndexError as exc:
            raise errors.InvalidArgumentError(op.node_def, op, _shrink_error(x, index)) from exc

    return compute


@register_kernel("StridedSliceGrad")
def _strided_slice_grad_kernel(op):
    masks = tuple(op.get_attr(m) for m in MASK_NAMES)
    np_type = op.get_attr("T").as_numpy_dtype
    fixed = constant_slice_index(op, masks)

    def compute(ctx, x_shape, begin, end, strides, dy):
        index = fixed if fixed is not None else strided_slice_index(begin, end, strides, masks)
        dx = np.zeros(tuple(x_shape), dtype=np_type)
        dx[index] = dy
        return dx

    return compute


@tensor_util.register_constant_folder("StridedSlice")
def _fold_strided_slice(tensor):
    value = tensor_util.constant_value(tensor.op.inputs[0])
    if value is None:
        return None
    index = constant_slice_index(tensor.op, tuple(tensor.op.get_attr(m) for m in MASK_NAMES))
    if index is None:
        return None
    try:
        return np.asarray(value[index])
    except IndexError:
        return None


@register_kernel("GatherV2")
def _gather_kernel(op):
    def compute(ctx, params, indices, axis):
        axis = int(axis)
        _check_indices(op, "indices", indices, np.shape(params)[axis])
        return np.take(params, indices, axis=axis)

    return compute


@register_kernel("UnsortedSegmentSum")
def _unsorted_segment_sum_kernel(op):
    np_type = op.get_attr("T").as_numpy_dtype

    def compute(ctx, data, segment_ids, num_segments):
        data, ids, n = np.asarray(data), np.asarray(segment_ids), int(num_segments)
        if data.shape[: ids.ndim] != ids.shape:
            message = (
                f"data.shape = {list(data.shape)} does not start with segment_ids.shape = "
                f"{list(ids.shape)}"
            )
            raise errors.InvalidArgumentError(op.node_def, op, message)
        tail = data.shape[ids.ndim :]
        out = np.zeros((n,) + tail, dtype=np_type)
        flat_ids, flat_data = ids.reshape(-1), data.reshape((-1,) + tail)
        if flat_ids.size and np.max(flat_ids) >= n:
            bad = int(np.flatnonzero(flat_ids >= n)[0])
            message = (
                f"segment_ids{_index_position(ids.shape, bad)} = {flat_ids[bad]} is out of "
                f"range [0, {n})"
            )
            raise errors.InvalidArgumentError(op.node_def, op, message)
        if flat_ids.size and np.min(flat_ids) < 0:
            keep = flat_ids >= 0
            flat_ids, flat_data = flat_ids[keep], flat_data[keep]
        np.add.at(out, flat_ids, flat_data)
        return out

    return compute


@register_kernel("OneHot")
def _one_hot_kernel(op):
    axis = op.get_attr("axis")
    np_type = op.get_attr("T").as_numpy_dtype

    def compute(ctx, indices, depth, on_value, off_value):
        if depth < 0:
            message = f"depth must be non-negative, got: {depth}"
            raise errors.InvalidArgumentError(op.node_def, op, message)
        hot = np.expand_dims(indices, -1) == np.arange(depth)
        result = np.where(hot, on_value, off_value).astype(np_type, copy=False)
        if axis != -1 and axis != np.ndim(indices):
            result = np.moveaxis(result, -1, axis)
        return result

    return compute


@register_compute("Where")
def _where_kernel(ctx, condition):
    return np.argwhere(condition).astype(np.int64, copy=False)


def _select_check(cond, x, y) -> str | None:
    if np.shape(x) != np.shape(y):
        return (
            "'then' and 'else' must have the same size.  but received: "
            f"{list(np.shape(x))} vs. {list(np.shape(y))}"
        )
    if np.ndim(cond) == 0 or np.shape(cond) == np.shape(x):
        return None
    if np.ndim(cond) != 1:
        return (
            "'cond' must be a scalar, a vector or have the shape of 'then': "
            f"{list(np.shape(cond))} vs. {list(np.shape(x))}"
        )
    if np.ndim(x) == 0:
        return f"'then' must be at least a vector, but saw shape: {list(np.shape(x))}"
    if np.shape(x)[0] == np.size(cond):
        return None
    return (
        "Number of batches of 'then' must match size of 'cond', but saw: "
        f"{np.shape(x)[0]} vs. {np.size(cond)}"
    )


@register_kernel("Select")
def _select_kernel(op):
    def compute(ctx, cond, x, y):
        if np.shape(cond) != np.shape(x) or np.shape(x) != np.shape(y):
            message = _select_check(cond, x, y)
            if message:
                raise errors.InvalidArgumentError(op.node_def, op, message)
            if np.ndim(cond) == 1:
                cond = np.reshape(cond, (-1,) + (1,) * (np.ndim(x) - 1))
        return np.where(cond, x, y)

    return compute


@register_kernel("DynamicPartition")
def _dynamic_partition_kernel(op):
    num = op.get_attr("num_partitions")

    def compute(ctx, data, partitions):
        _check_indices(op, "partitions", partitions, num)
        data = np.asarray(data)
        return as_outputs(data[partitions == i] for i in range(num))

    return compute


def _stitch_kernel(op):
    n = op.get_attr("N")
    np_type = op.get_attr("T").as_numpy_dtype

    def compute(ctx, *args):
        indices, data = args[:n], args[n:]
        first = np.asarray(indices[0])
        tail = np.shape(data[0])[first.ndim :]
        rows = max((int(np.max(i)) + 1 for i in indices if np.size(i)), default=0)
        merged = np.zeros((rows,) + tail, dtype=np_type)
        for i, d in zip(indices, data):
            i = np.asarray(i)
            merged[i.reshape(-1)] = np.reshape(d, (-1,) + tail)
        return merged

    return compute


register_kernel("DynamicStitch")(_stitch_kernel)
register_kernel("ParallelDynamicStitch")(_stitch_kernel)


@register_kernel("Unique")
def _unique_kernel(op):
    np_type = op.get_attr("out_idx").as_numpy_dtype

    def compute(ctx, x):
        if np.ndim(x) != 1:
            raise errors.InvalidArgumentError(
                op.node_def, op, f"unique expects a 1D vector. Got shape {list(np.shape(x))}"
            )
        # numpy sorts the distinct values; TF lists them in order of first appearance.
        _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return x[np.sort(first)], rank[inverse].astype(np_type, copy=False)

    return compute


def _reverse_sequence_check(x, lengths, seq_dim: int, batch_dim: int) -> str | None:
    """The message of TF's ReverseSequence kernel for bad axes or lengths, or None."""
    if batch_dim == seq_dim:
        return f"batch_dim == seq_dim == {seq_dim}"
    if seq_dim >= np.ndim(x):
        return f"seq_dim must be < input rank ( {seq_dim} vs. {np.ndim(x)})"
    if batch_dim >= np.ndim(x):
        return f"batch_dim must be < input rank ( {batch_dim} vs. {np.ndim(x)})"
    if np.size(lengths) != np.shape(x)[batch_dim]:
        return (
            f"Length of seq_lens != input.dims({batch_dim}), "
            f"({np.size(lengths)} vs. {np.shape(x)[batch_dim]})"
        )
    for b, length in enumerate(np.ravel(lengths)):
        if length < 0:
            return f"seq_lens({b}) < 0"
        if length > np.shape(x)[seq_dim]:
            return f"seq_lens({b}) > input.dims({seq_dim})"
    return None


@register_kernel("ReverseSequence")
def _reverse_sequence_kernel(op):
    seq_dim, batch_dim = op.get_attr("seq_dim"), op.get_attr("batch_dim")

    def compute(ctx, x, lengths):
        message = _reverse_sequence_check(x, lengths, seq_dim, batch_dim)
        if message:
            raise errors.InvalidArgumentError(op.node_def, op, message)
        # Move the batch and sequence axes to the front, reverse row by row, move back.
        out = np.array(np.moveaxis(x, (batch_dim, seq_dim), (0, 1)), copy=True)
        for b, length in enumerate(np.ravel(lengths)):
            out[b, :length] = out[b, :length][::-1]
        return np.moveaxis(out, (0, 1), (batch_dim, seq_dim))

    return compute


@register_kernel("ReverseV2")
def _reverse_v2_kernel(op):
    def compute(ctx, x, axis):
        axes = [int(a) for a in np.ravel(axis)]
        for a in axes:
            if not -np.ndim(x) <= a < np.ndim(x):
                raise errors.InvalidArgumentError(
                    op.node_def,
                    op,
                    f"'axis'[{axes.index(a)}] = {a} is out of valid range [0, {np.ndim(x) - 1}",
                )
        return np.array(np.flip(x, axis=tuple(axes)), copy=True) if axes else x

    return compute
