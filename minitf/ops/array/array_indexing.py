"""Indexing by index tensors and masks: ``gather``, ``one_hot``, ``where``, segment sums.

``gather`` reads rows at given indices and ``unsorted_segment_sum`` adds rows
into given indices (its inverse, and the densification of `IndexedSlices`);
``one_hot`` encodes indices; ``unique`` lists the distinct values of a vector
and where each element went; ``where`` selects by a mask or lists the true
coordinates; ``dynamic_partition`` and ``dynamic_stitch`` split rows by a
partition index and merge them back. TF keeps ``unsorted_segment_sum`` in
``math_ops`` and the partition/stitch pair in ``data_flow_ops``; here they stay
with the other index-driven ops (and in ``array_ops.__all__``).

Part of TF's ``array_ops`` (re-exported by `minitf.ops.array.array_ops`); kernels in
`minitf.ops.array.array_indexing_kernels`, gradients in `minitf.ops.array.array_grad`.
"""

from __future__ import annotations

import collections
import numbers

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.common_shapes import (
    merge_shapes,
    shape_error,
    shape_error_suffix,
    shape_str,
    static_int,
)
from minitf.ops.op_def_library import convert_list, create_op, index_tensor


def gather(params, indices, validate_indices=None, name=None, axis=0, batch_dims=0) -> ops.Tensor:
    """Gathers slices of ``params`` along ``axis`` at ``indices`` (op ``GatherV2``).

    The result has shape ``params.shape[:axis] + indices.shape +
    params.shape[axis + 1:]``. Its gradient with respect to ``params`` along
    axis 0 is an `IndexedSlices`. A resource variable reads only the rows it
    needs (its ``sparse_read``).

    Args:
        params: The tensor (or variable) to gather from; at least 1-D.
        indices: An int32 or int64 tensor of indices into dimension ``axis``.
        validate_indices: Deprecated and ignored, as in TF.
        name: A name for the operation (optional).
        axis: The dimension of ``params`` to gather along.
        batch_dims: Must be 0 (batched gathers are not supported).

    Raises:
        TypeError: if ``indices`` is not int32 or int64.
        ValueError: if ``params`` is a scalar or ``axis`` is out of range.
        NotImplementedError: if ``batch_dims`` is not 0.
    """
    del validate_indices
    if batch_dims != 0:
        raise NotImplementedError("minitf's gather supports batch_dims=0 only")
    if axis is None:
        axis = batch_dims
    sparse_read = getattr(params, "sparse_read", None)
    if sparse_read is not None and isinstance(axis, numbers.Integral) and axis == 0:
        return sparse_read(indices, name=name)
    with ops.name_scope(name, "GatherV2", [params, indices, axis]) as scope:
        params_t = ops.convert_to_tensor(params, name="params")
        indices_t = index_tensor(indices, "indices", "GatherV2")
        axis_t = index_tensor(axis, "axis", "GatherV2")
        out = _gather_shape(params_t, indices_t, axis_t, scope)
        op = create_op(
            "GatherV2",
            [params_t, indices_t, axis_t],
            [params_t.dtype.base_dtype],
            scope,
            {
                "Tparams": params_t.dtype.base_dtype,
                "Tindices": indices_t.dtype.base_dtype,
                "Taxis": axis_t.dtype.base_dtype,
                "batch_dims": 0,
            },
            [out],
        )
    return op.outputs[0]


def _check_rank_at_least(tensor, rank: int, scope, op_type, inputs) -> None:
    ndims = tensor.get_shape().ndims
    if ndims is not None and ndims < rank:
        raise ValueError(
            f"Shape must be at least rank {rank} but is rank {ndims}"
            + shape_error_suffix(scope, op_type, inputs)
        )


def _gather_shape(params_t, indices_t, axis_t, scope) -> tensor_shape.TensorShape:
    _check_rank_at_least(params_t, 1, scope, "GatherV2", [params_t, indices_t, axis_t])
    static, idx = params_t.get_shape(), indices_t.get_shape()
    axis = static_int(axis_t)
    if static.ndims is None or idx.ndims is None:
        return tensor_shape.unknown_shape()
    if axis is None:
        return tensor_shape.unknown_shape(static.ndims + idx.ndims - 1)
    if not -static.ndims <= axis < static.ndims:
        raise ValueError(
            f"Expected axis in the range [{-static.ndims}, {static.ndims}), but got {axis}"
            + shape_error_suffix(scope, "GatherV2", [params_t, indices_t, axis_t])
        )
    axis %= static.ndims
    return tensor_shape.TensorShape(static.dims[:axis] + idx.dims + static.dims[axis + 1 :])


def unsorted_segment_sum(data, segment_ids, num_segments, name=None) -> ops.Tensor:
    """Sums the slices of ``data`` that have the same segment id (op ``UnsortedSegmentSum``).

    ``output[i] = sum(data[j...] for j... where segment_ids[j...] == i)``; the
    output has shape ``[num_segments] + data.shape[segment_ids.rank:]``, rows
    without any id are zero and negative ids are dropped.

    Args:
        data: A numeric tensor.
        segment_ids: An integer tensor whose shape is a prefix of ``data``'s.
        num_segments: The number of segments, a scalar integer.
        name: A name for the operation (optional).

    Raises:
        TypeError: if ``segment_ids`` is not an integer tensor.
        ValueError: if ``segment_ids``' shape is not a prefix of ``data``'s shape.
    """
    with ops.name_scope(name, "UnsortedSegmentSum", [data, segment_ids, num_segments]) as scope:
        data_t = ops.convert_to_tensor(data, name="data")
        ids_t = index_tensor(segment_ids, "segment_ids", "UnsortedSegmentSum")
        num_t = index_tensor(num_segments, "num_segments", "UnsortedSegmentSum")
        out = _segment_shape(data_t, ids_t, num_t, scope)
        op = create_op(
            "UnsortedSegmentSum",
            [data_t, ids_t, num_t],
            [data_t.dtype.base_dtype],
            scope,
            {
                "T": data_t.dtype.base_dtype,
                "Tindices": ids_t.dtype.base_dtype,
                "Tnumsegments": num_t.dtype.base_dtype,
            },
            [out],
        )
    return op.outputs[0]


def _segment_shape(data_t, ids_t, num_t, scope) -> tensor_shape.TensorShape:
    data_shape, ids_shape = data_t.get_shape(), ids_t.get_shape()
    if data_shape.ndims is None or ids_shape.ndims is None:
        return tensor_shape.unknown_shape()
    prefix = data_shape[: ids_shape.ndims] if data_shape.ndims >= ids_shape.ndims else None
    if prefix is None or not prefix.is_compatible_with(ids_shape):
        raise ValueError(
            f"segment_ids.shape = {shape_str(ids_shape)} must be a prefix of "
            f"data.shape = {shape_str(data_shape)}"
            + shape_error_suffix(scope, "UnsortedSegmentSum", [data_t, ids_t, num_t])
        )
    return tensor_shape.TensorShape([static_int(num_t)]).concatenate(data_shape[ids_shape.ndims :])


def one_hot(
    indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None
) -> ops.Tensor:
    """A one-hot encoding of ``indices``: ``on_value`` where ``index == i``, else ``off_value``.

    The new dimension of size ``depth`` goes at ``axis`` (default: last). The
    dtype comes from ``dtype``, else ``on_value``/``off_value``, else float32.
    Indices outside ``[0, depth)`` give a row of ``off_value``. (Op ``OneHot``.)

    Args:
        indices: A uint8, int32 or int64 tensor of indices.
        depth: The size of the one-hot dimension.
        on_value: The value where ``indices[j] == i`` (default 1).
        off_value: The value elsewhere (default 0).
        axis: Where the new dimension goes (default -1, the last).
        dtype: The dtype of the result.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes of ``on_value``, ``off_value`` and ``dtype`` disagree.
        ValueError: if ``axis`` is out of range.
    """
    with ops.name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        on_t = ops.convert_to_tensor(on_value, name="on_value") if on_value is not None else None
        off_t = (
            ops.convert_to_tensor(off_value, name="off_value") if off_value is not None else None
        )
        dtype = _one_hot_dtype(on_t, off_t, dtype)
        if on_t is None:
            on_t = ops.convert_to_tensor(1, dtype, name="on_value")
        if off_t is None:
            off_t = ops.convert_to_tensor(0, dtype, name="off_value")
        if on_t.dtype.base_dtype != off_t.dtype.base_dtype:
            raise TypeError(
                f"dtype {on_t.dtype.base_dtype} of on_value does not match dtype "
                f"{off_t.dtype.base_dtype} of off_value"
            )
        indices_t = ops.convert_to_tensor(indices, name="indices")
        if indices_t.dtype.base_dtype not in (dtypes.uint8, dtypes.int32, dtypes.int64):
            raise TypeError(
                f"Value passed to parameter 'indices' has DataType {indices_t.dtype.name} not in "
                "list of allowed values: uint8, int32, int64"
            )
        depth_t = ops.convert_to_tensor(depth, dtype=dtypes.int32, name="depth")
        axis = -1 if axis is None else axis
        out = _one_hot_shape(indices_t, depth_t, axis, scope)
        op = create_op(
            "OneHot",
            [indices_t, depth_t, on_t, off_t],
            [dtype],
            scope,
            {"T": dtype, "TI": indices_t.dtype.base_dtype, "axis": axis},
            [out],
        )
    return op.outputs[0]


def _one_hot_dtype(on_t, off_t, dtype) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype).base_dtype if dtype is not None else None
    for what, t in (("on_value", on_t), ("off_value", off_t)):
        if t is not None and dtype is not None and t.dtype.base_dtype != dtype:
            raise TypeError(
                f"dtype {t.dtype.base_dtype} of {what} does not match dtype parameter {dtype}"
            )
    if dtype is not None:
        return dtype
    for t in (on_t, off_t):
        if t is not None:
            return t.dtype.base_dtype
    return dtypes.float32


def _one_hot_shape(indices_t, depth_t, axis: int, scope) -> tensor_shape.TensorShape:
    static = indices_t.get_shape()
    if static.ndims is None:
        return tensor_shape.unknown_shape()
    if not -1 <= axis <= static.ndims:
        raise ValueError(
            f"Expected axis to be -1 or between [0, {static.ndims + 1}).  But received: {axis}"
            + shape_error_suffix(scope, "OneHot", [indices_t, depth_t])
        )
    dims = list(static.dims)
    dims.insert(static.ndims if axis == -1 else axis, tensor_shape.Dimension(static_int(depth_t)))
    return tensor_shape.TensorShape(dims)


def where(condition, x=None, y=None, name=None) -> ops.Tensor:
    """TF1 ``tf.where``: picks from ``x`` or ``y`` by ``condition``, or lists true coordinates.

    With ``x`` and ``y`` (op ``Select``), they must have the same shape, and
    ``condition`` must be a scalar, have that shape too, or be a vector that
    picks whole rows (its size is ``x``'s first dimension). Without them (op
    ``Where``), the result is the ``[num_true, rank]`` int64 matrix of the
    coordinates of the true elements of ``condition``.

    Args:
        condition: A bool tensor.
        x: The values where ``condition`` is true (optional).
        y: The values where ``condition`` is false, same shape and dtype as ``x`` (optional).
        name: A name for the operation (optional).

    Raises:
        ValueError: if only one of ``x`` and ``y`` is given, or the shapes do not fit.
        TypeError: if ``condition`` is not bool or ``x`` and ``y`` dtypes differ.
    """
    if x is None and y is None:
        with ops.name_scope(name, "Where", [condition]) as scope:
            cond = ops.convert_to_tensor(condition, preferred_dtype=dtypes.bool, name="condition")
            ndims = cond.get_shape().ndims
            op = create_op(
                "Where",
                [cond],
                [dtypes.int64],
                scope,
                {"T": cond.dtype.base_dtype},
                [tensor_shape.TensorShape([None, ndims])],
            )
        return op.outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _select(condition, x, y, name)


def _select_shape(cond, x, y, scope) -> tensor_shape.TensorShape:
    suffix = shape_error_suffix(scope, "Select", [cond, x, y])

    def merge(a, b):
        try:
            return a.merge_with(b)
        except ValueError:
            raise ValueError(
                f"Shapes must be equal rank and compatible, but are {shape_str(a)} and "
                f"{shape_str(b)}" + suffix
            ) from None

    data = merge(x.get_shape(), y.get_shape())
    cond_shape = cond.get_shape()
    if cond_shape.ndims is None or cond_shape.ndims == 0:
        return data
    if cond_shape.ndims != 1 or data.ndims == 0:
        return merge(data, cond_shape)
    if data.ndims is None:
        return data
    merge(cond_shape, tensor_shape.TensorShape([data.dims[0]]))
    return tensor_shape.TensorShape([cond_shape.dims[0].merge_with(data.dims[0])] + data.dims[1:])


def _select(condition, x, y, name) -> ops.Tensor:
    with ops.name_scope(name, "Select", [condition, x, y]) as scope:
        cond = ops.convert_to_tensor(condition, name="condition")
        if cond.dtype.base_dtype != dtypes.bool:
            raise TypeError(
                f"Input 'condition' of 'Select' Op has type {cond.dtype.base_dtype.name} that "
                "does not match expected type of bool."
            )
        x_t, y_t = convert_list([x, y], "Select", "t")
        out = _select_shape(cond, x_t, y_t, scope)
        op = create_op(
            "Select",
            [cond, x_t, y_t],
            [x_t.dtype.base_dtype],
            scope,
            {"T": x_t.dtype.base_dtype},
            [out],
        )
    return op.outputs[0]


def dynamic_partition(data, partitions, num_partitions, name=None) -> list[ops.Tensor]:
    """Splits ``data`` into ``num_partitions`` tensors by the index in ``partitions``.

    ``outputs[i]`` holds, in order, the slices ``data[j...]`` with
    ``partitions[j...] == i`` (op ``DynamicPartition``).

    Args:
        data: A tensor.
        partitions: An int32 tensor whose shape is a prefix of ``data``'s, each entry in ``[0,
            num_partitions)``.
        num_partitions: The number of outputs, a Python int.
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "DynamicPartition", [data, partitions]) as scope:
        data_t = ops.convert_to_tensor(data, name="data")
        parts_t = ops.convert_to_tensor(partitions, dtype=dtypes.int32, name="partitions")
        data_shape, parts_shape = data_t.get_shape(), parts_t.get_shape()
        out = tensor_shape.unknown_shape()
        if data_shape.ndims is not None and parts_shape.ndims is not None:
            out = tensor_shape.TensorShape([None]).concatenate(data_shape[parts_shape.ndims :])
        op = create_op(
            "DynamicPartition",
            [data_t, parts_t],
            [data_t.dtype.base_dtype] * num_partitions,
            scope,
            {"num_partitions": num_partitions, "T": data_t.dtype.base_dtype},
            [out] * num_partitions,
        )
    return op.outputs


def _stitch(op_type: str, indices, data, name) -> ops.Tensor:
    with ops.name_scope(name, op_type, list(indices) + list(data)) as scope:
        indices_t = [ops.convert_to_tensor(i, dtype=dtypes.int32) for i in indices]
        data_t = convert_list(data, op_type, "data")
        tails = []
        for i, d in zip(indices_t, data_t):
            if i.get_shape().ndims is not None and d.get_shape().ndims is not None:
                tails.append(d.get_shape()[i.get_shape().ndims :])
        out = tensor_shape.unknown_shape()
        if tails:
            out = tensor_shape.TensorShape([None]).concatenate(merge_shapes(tails, "data"))
        op = create_op(
            op_type,
            indices_t + data_t,
            [data_t[0].dtype.base_dtype],
            scope,
            {"N": len(indices_t), "T": data_t[0].dtype.base_dtype},
            [out],
        )
    return op.outputs[0]


def dynamic_stitch(indices, data, name=None) -> ops.Tensor:
    """Interleaves ``data`` into one tensor: ``merged[indices[m][i...]] = data[m][i...]``.

    The inverse of `dynamic_partition` (op ``DynamicStitch``); later entries win
    when an index repeats.

    Args:
        indices: A list of int32 tensors.
        data: A list of tensors, ``data[m]`` shaped ``indices[m].shape + constant``.
        name: A name for the operation (optional).
    """
    return _stitch("DynamicStitch", indices, data, name)


def parallel_dynamic_stitch(indices, data, name=None) -> ops.Tensor:
    """`dynamic_stitch` for indices that do not repeat (op ``ParallelDynamicStitch``)."""
    return _stitch("ParallelDynamicStitch", indices, data, name)


UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])


def unique(x, out_idx=dtypes.int32, name=None) -> UniqueOutput:
    """The distinct elements of the 1-D ``x``, in order of first appearance (op ``Unique``).

    Returns a named tuple ``(y, idx)`` with ``x == gather(y, idx)``: ``y`` holds
    each distinct value once and ``idx[i]`` is the position of ``x[i]`` in
    ``y``. ``out_idx`` (``tf.int32`` or ``tf.int64``) is the dtype of ``idx``.

    Args:
        x: A 1-D tensor.
        out_idx: The dtype of ``idx``: int32 (the default) or int64.
        name: A name for the operation (optional).

    Raises:
        ValueError: if ``x`` is statically known not to be a vector.
        TypeError: if ``out_idx`` is not an integer type TF allows.
    """
    out_idx = dtypes.as_dtype(out_idx)
    if out_idx not in (dtypes.int32, dtypes.int64):
        raise TypeError(
            f"Value passed to parameter 'out_idx' has DataType {out_idx.name} not in list of "
            "allowed values: int32, int64"
        )
    with ops.name_scope(name, "Unique", [x]) as scope:
        x_t = ops.convert_to_tensor(x, name="x")
        shape = x_t.get_shape()
        if shape.ndims is not None and shape.ndims != 1:
            raise shape_error(
                f"Shape must be rank 1 but is rank {shape.ndims}", scope, "Unique", x_t
            )
        op = create_op(
            "Unique",
            [x_t],
            [x_t.dtype.base_dtype, out_idx],
            scope,
            {"T": x_t.dtype.base_dtype, "out_idx": out_idx},
            [tensor_shape.TensorShape([None]), shape.with_rank(1)],
        )
    return UniqueOutput(*op.outputs)


def _reverse_sequence_shape(value, lengths, seq_dim: int, batch_dim: int, scope: str):
    """The output shape (the input's, with the batch dimension merged with the lengths')."""
    suffix = shape_error_suffix(scope, "ReverseSequence", [value, lengths])
    if lengths.get_shape().ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {lengths.get_shape().ndims}" + suffix)
    shape = value.get_shape()
    if shape.ndims is None:
        return shape
    for what, dim in (("batch_dim", batch_dim), ("seq_dim", seq_dim)):
        if dim >= shape.ndims:
            raise ValueError(f"{what} must be < input rank: {dim} vs. {shape.ndims}" + suffix)
    dims = list(shape.dims)
    try:
        dims[batch_dim] = dims[batch_dim].merge_with(lengths.get_shape().with_rank(1)[0])
    except ValueError:
        raise ValueError(
            f"Dimensions must be equal, but are {dims[batch_dim].value} and "
            f"{lengths.get_shape()[0].value}" + suffix
        ) from None
    return tensor_shape.TensorShape(dims)


def _axis_alias(axis, dim, axis_name: str, dim_name: str):
    if axis is not None and dim is not None:
        raise ValueError(f"Cannot specify both '{axis_name}' and '{dim_name}'")
    return axis if axis is not None else dim


def reverse_sequence(
    input,  # noqa: A002 - TF's name
    seq_lengths,
    seq_axis=None,
    batch_axis=None,
    name=None,
    seq_dim=None,
    batch_dim=None,
) -> ops.Tensor:
    """Reverses each example's first ``seq_lengths[b]`` entries (op ``ReverseSequence``).

    For every ``b`` along ``batch_axis``, the slices ``0 .. seq_lengths[b]-1``
    along ``seq_axis`` come out in reverse order and the slices after them
    stay where they are. A bidirectional RNN reads its inputs backwards this
    way, each sequence up to its own length.

    Args:
        input: A tensor.
        seq_lengths: A 1-D int32 or int64 tensor, one length per batch entry,
            each at most ``input``'s size along ``seq_axis``.
        seq_axis: The axis to reverse (``seq_dim`` is its old name).
        batch_axis: The batch axis, default 0 (``batch_dim`` is its old name).
        name: A name for the operation (optional).
        seq_dim: Deprecated alias of ``seq_axis``.
        batch_dim: Deprecated alias of ``batch_axis``.

    Raises:
        ValueError: if an axis is given twice, the axes are out of range, or
            the lengths are not a vector of the batch size.
        TypeError: if no sequence axis is given.
    """
    seq_axis = _axis_alias(seq_axis, seq_dim, "seq_axis", "seq_dim")
    batch_axis = _axis_alias(batch_axis, batch_dim, "batch_axis", "batch_dim") or 0
    if seq_axis is None:
        raise TypeError("Expected int for argument 'seq_dim' not None.")
    with ops.name_scope(name, "ReverseSequence", [input, seq_lengths]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        lengths = index_tensor(seq_lengths, "seq_lengths", "ReverseSequence")
        shape = _reverse_sequence_shape(value, lengths, int(seq_axis), int(batch_axis), scope)
        attrs = {
            "T": value.dtype.base_dtype,
            "Tlen": lengths.dtype.base_dtype,
            "seq_dim": int(seq_axis),
            "batch_dim": int(batch_axis),
        }
        op = create_op(
            "ReverseSequence", [value, lengths], [value.dtype.base_dtype], scope, attrs, [shape]
        )
    return op.outputs[0]


def _reverse_axes(value: ops.Tensor, axis, scope: str) -> ops.Tensor:
    """``axis`` as an int32 vector, each axis checked against ``value``'s rank when known.

    Raises:
        ValueError: TF's shape-inference errors: ``axis`` not a vector, an
            axis out of range, or the same axis twice.
    """
    axis_t = index_tensor(axis, "axis", "ReverseV2")
    suffix = shape_error_suffix(scope, "ReverseV2", [value, axis_t])
    if axis_t.get_shape().ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {axis_t.get_shape().ndims}" + suffix)
    known = tensor_util.constant_value(axis_t)
    ndims = value.get_shape().ndims
    if known is None or ndims is None:
        return axis_t
    seen = set()
    for a in np.ravel(known).tolist():
        if not -ndims <= a < ndims:
            raise ValueError(
                f"'axis'[{len(seen)}] = {a} is out of valid range [0, {ndims - 1}" + suffix
            )
        if a % ndims in seen:
            raise ValueError(f"axis {a % ndims} specified more than once." + suffix)
        seen.add(a % ndims)
    return axis_t


def reverse(tensor, axis, name=None) -> ops.Tensor:
    """``tensor`` with its entries along each axis in ``axis`` in reverse order (``ReverseV2``).

    ``tf.reverse(x, [1])`` of a ``[batch, time, depth]`` tensor reads every
    sequence backwards: what a bidirectional RNN with no lengths does.

    Args:
        tensor: A tensor.
        axis: An int32 or int64 vector of the axes to reverse (negative
            counts from the end).
        name: A name for the operation (optional).

    Raises:
        ValueError: if ``axis`` is not a vector, or an axis is out of range
            or given twice.
    """
    with ops.name_scope(name, "ReverseV2", [tensor, axis]) as scope:
        value = ops.convert_to_tensor(tensor, name="tensor")
        axis_t = _reverse_axes(value, axis, scope)
        attrs = {"T": value.dtype.base_dtype, "Tidx": axis_t.dtype.base_dtype}
        op = create_op(
            "ReverseV2",
            [value, axis_t],
            [value.dtype.base_dtype],
            scope,
            attrs,
            [value.get_shape()],
        )
    return op.outputs[0]


reverse_v2 = reverse
