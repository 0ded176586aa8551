"""Gradients of the array ops (TF's ``array_grad.py``).

Most are the inverse op applied to the incoming gradient: ``Reshape`` and
``ExpandDims`` reshape it back, ``ConcatV2`` slices it, ``Pack`` unstacks it,
``Slice`` pads it, ``Transpose`` applies the inverse permutation. The
gradient of ``GatherV2`` along axis 0 is an `IndexedSlices` that holds only
the gathered rows.

The ops are built in `minitf.ops.array.array_ops` (and its siblings), their kernels
in `minitf.ops.array.array_kernels` and `minitf.ops.array.array_indexing_kernels`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.indexed_slices import IndexedSlices
from minitf.framework.op_registry import NotDifferentiable, RegisterGradient
from minitf.ops.array import array_ops
from minitf.ops.array.slice_spec import MASK_NAMES
from minitf.ops.common_shapes import static_int
from minitf.ops.math import math_ops

NotDifferentiable("Shape")
NotDifferentiable("ShapeN")
NotDifferentiable("Size")
NotDifferentiable("Rank")
NotDifferentiable("ZerosLike")
NotDifferentiable("OnesLike")
NotDifferentiable("ConcatOffset")
NotDifferentiable("InvertPermutation")
NotDifferentiable("Where")
NotDifferentiable("StopGradient")


@RegisterGradient("Identity")
def _identity_grad(op, grad):
    return grad


@RegisterGradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return grad


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    return [None, math_ops.reduce_sum(grad)]


@RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    return [array_ops.reshape(grad, array_ops.shape(op.inputs[0])), None]


@RegisterGradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [array_ops.reshape(grad, array_ops.shape(op.inputs[0])), None]


@RegisterGradient("Squeeze")
def _squeeze_grad(op, grad):
    return array_ops.reshape(grad, array_ops.shape(op.inputs[0]))


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    return [array_ops.transpose(grad, array_ops.invert_permutation(op.inputs[1])), None]


@RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    values, axis = op.inputs[:-1], op.inputs[-1]
    grad = ops.convert_to_tensor(grad)
    static_axis, static_rank = static_int(axis), values[0].get_shape().ndims
    if static_axis is not None and static_rank is not None:
        non_neg_axis = ops.convert_to_tensor(static_axis % static_rank, dtype=dtypes.int32)
    else:
        non_neg_axis = math_ops.floormod(axis, array_ops.rank(values[0]))
    sizes = [array_ops.shape_internal(v) for v in values]
    if any(s.op.type != "Const" for s in sizes):
        sizes = array_ops.shape_n(values)
    offsets = array_ops.concat_offset(non_neg_axis, sizes)
    return [array_ops.slice(grad, begin, size_) for begin, size_ in zip(offsets, sizes)] + [None]


@RegisterGradient("Pack")
def _pack_grad(op, grad):
    return array_ops.unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    return array_ops.stack(list(grads), axis=op.get_attr("axis"))


@RegisterGradient("Split")
def _split_grad(op, *grads):
    return [None, array_ops.concat(list(grads), op.inputs[0])]


@RegisterGradient("SplitV")
def _split_v_grad(op, *grads):
    return [array_ops.concat(list(grads), op.inputs[2]), None, None]


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    # Reshape the gradient to [m0, d0, m1, d1, ...] and sum over the m axes.
    value, multiples = op.inputs
    input_shape = array_ops.shape(value, out_type=multiples.dtype.base_dtype)
    split_shape = array_ops.reshape(
        array_ops.transpose(array_ops.stack([multiples, input_shape])), [-1]
    )
    ndims = value.get_shape().ndims
    if ndims is not None:
        axes = np.arange(0, 2 * ndims, 2, dtype=np.int32)
    else:
        axes = math_ops.range(0, array_ops.size(split_shape), 2)
    input_grad = math_ops.reduce_sum(array_ops.reshape(grad, split_shape), axes)
    input_grad.set_shape(value.get_shape())
    return [input_grad, None]


def _pad_grad_of_input(op, grad):
    """The gradient of a pad is the slice of ``grad`` where the input sits."""
    value, paddings = op.inputs[0], op.inputs[1]
    pad_before = array_ops.slice(paddings, [0, 0], array_ops.stack([array_ops.rank(value), 1]))
    begin = array_ops.reshape(pad_before, [-1])
    return array_ops.slice(grad, begin, array_ops.shape(value, out_type=begin.dtype.base_dtype))


@RegisterGradient("Pad")
def _pad_grad(op, grad):
    return [_pad_grad_of_input(op, grad), None]


@RegisterGradient("PadV2")
def _pad_v2_grad(op, grad):
    return [_pad_grad_of_input(op, grad), None, None]


@RegisterGradient("Slice")
def _slice_grad(op, grad):
    # Pad the gradient with zeros before and after the block.
    value, begin = op.inputs[0], op.inputs[1]
    input_vec = array_ops.shape(value, out_type=begin.dtype.base_dtype)
    slice_size = array_ops.shape(op.outputs[0], out_type=begin.dtype.base_dtype)
    before_pad = array_ops.reshape(begin, array_ops.stack([array_ops.rank(value), 1]))
    after_pad = array_ops.reshape(
        math_ops.subtract(math_ops.subtract(input_vec, slice_size), begin),
        array_ops.stack([array_ops.rank(value), 1]),
    )
    paddings = array_ops.concat([before_pad, after_pad], 1)
    return [array_ops.pad(grad, paddings), None, None]


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    begin, end, strides = op.inputs[1:]
    x_shape = array_ops.shape(op.inputs[0], out_type=begin.dtype.base_dtype)
    masks = {m: op.get_attr(m) for m in MASK_NAMES}
    return [
        array_ops.strided_slice_grad(x_shape, begin, end, strides, grad, **masks),
        None,
        None,
        None,
    ]


@RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    begin, end, strides = op.inputs[1:4]
    masks = {m: op.get_attr(m) for m in MASK_NAMES}
    return [None, None, None, None, array_ops.strided_slice(grad, begin, end, strides, **masks)]


@RegisterGradient("GatherV2")
def _gather_grad(op, grad):
    params, indices, axis = op.inputs
    with ops.colocate_with(params):
        params_shape = array_ops.shape(params)
    indices_size = array_ops.expand_dims(array_ops.size(indices), 0)
    axis_static = static_int(axis)
    grad = ops.convert_to_tensor(grad)
    if axis_static == 0:
        values_shape = array_ops.concat([indices_size, params_shape[1:]], 0)
        values = array_ops.reshape(grad, values_shape)
        if params.get_shape().ndims is not None:
            rows = tensor_shape.TensorShape([indices.get_shape().num_elements()])
            values.set_shape(rows.concatenate(params.get_shape()[1:]))
        flat_indices = array_ops.reshape(indices, indices_size)
        return [IndexedSlices(values, flat_indices, params_shape), None, None]
    return [_gather_grad_other_axis(params, indices, axis, grad, params_shape), None, None]


def _gather_grad_other_axis(params, indices, axis, grad, params_shape):
    """Dense gradient of a gather along ``axis`` != 0: move ``axis`` to the front, segment-sum."""
    ndims, axis_static = params.get_shape().ndims, static_int(axis)
    if ndims is None or axis_static is None:
        raise NotImplementedError(
            "The gradient of gather along a non-zero axis needs a known rank and a constant axis"
        )
    axis_static %= ndims
    outer_shape = params_shape[:axis_static]
    inner_shape = params_shape[axis_static + 1 :]
    indices_size = array_ops.expand_dims(array_ops.size(indices), 0)
    values = array_ops.reshape(grad, array_ops.concat([outer_shape, indices_size, inner_shape], 0))
    flat_indices = array_ops.reshape(indices, indices_size)
    outer, inner = list(range(axis_static)), list(range(axis_static + 1, ndims))
    values_transpose = array_ops.transpose(values, [axis_static] + outer + inner)
    params_grad = array_ops.unsorted_segment_sum(
        values_transpose, flat_indices, params_shape[axis_static]
    )
    return array_ops.transpose(params_grad, [a + 1 for a in outer] + [0] + inner)


@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    # Each data slice receives the gradient of its segment; dropped (negative) ids get zeros.
    ids = op.inputs[1]
    grad = ops.convert_to_tensor(grad)
    gathered = array_ops.gather(grad, math_ops.maximum(ids, array_ops.zeros_like(ids)))
    is_positive = math_ops.greater_equal(ids, 0)
    for _ in range(gathered.get_shape().ndims - is_positive.get_shape().ndims):
        is_positive = array_ops.expand_dims(is_positive, -1)
    is_positive = math_ops.logical_and(
        is_positive, array_ops.ones_like(gathered, dtype=dtypes.bool)
    )
    return [array_ops.where(is_positive, gathered, array_ops.zeros_like(gathered)), None, None]


@RegisterGradient("OneHot")
def _one_hot_grad(op, grad):
    return [None, None, None, None]


@RegisterGradient("Select")
def _select_grad(op, grad):
    cond, x = op.inputs[0], op.inputs[1]
    grad = ops.convert_to_tensor(grad)
    zeros_ = array_ops.zeros_like(x)
    return [None, array_ops.where(cond, grad, zeros_), array_ops.where(cond, zeros_, grad)]


@RegisterGradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    data, partitions = op.inputs
    num = op.get_attr("num_partitions")
    original = array_ops.reshape(
        math_ops.range(array_ops.size(partitions)), array_ops.shape(partitions)
    )
    partitioned = array_ops.dynamic_partition(original, partitions, num)
    stitched = array_ops.parallel_dynamic_stitch(partitioned, list(grads))
    return [array_ops.reshape(stitched, array_ops.shape(data)), None]


def _stitch_grad(op, grad):
    n = op.get_attr("N")
    indices = op.inputs[:n]
    if isinstance(grad, IndexedSlices):
        grad = array_ops.unsorted_segment_sum(
            grad.values, grad.indices, array_ops.shape(op.outputs[0])[0]
        )
    return [None] * n + [array_ops.gather(grad, i) for i in indices]


RegisterGradient("DynamicStitch")(_stitch_grad)
RegisterGradient("ParallelDynamicStitch")(_stitch_grad)


@RegisterGradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    # Reversing the first n entries is its own inverse.
    return [
        array_ops.reverse_sequence(
            grad,
            op.inputs[1],
            seq_axis=op.get_attr("seq_dim"),
            batch_axis=op.get_attr("batch_dim"),
        ),
        None,
    ]


@RegisterGradient("ReverseV2")
def _reverse_v2_grad(op, grad):
    # Reversing the same axes again is the inverse.
    return [array_ops.reverse(grad, op.inputs[1]), None]
