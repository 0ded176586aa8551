"""A strided-slice spec and the numpy index it stands for.

``tensor[1:, ..., tf.newaxis, 0]`` becomes a ``StridedSlice`` op with begin,
end and strides vectors and five bit masks (`MASK_NAMES`) that say which
entries are ``:``-ranges, ``...``, new axes or single indices.
`strided_slice_index` turns such a spec back into the numpy index; the
kernels, the constant folders and static shape inference share it.
"""

from __future__ import annotations

from minitf.framework import ops, tensor_util

MASK_NAMES = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def strided_slice_index(begin, end, strides, masks) -> tuple:
    """The numpy index equivalent to a strided-slice spec whose values are known.

    TF designed StridedSlice to match Python slicing, so begin/end clamping and
    negative indices need no special handling here.
    """
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask = masks
    index = []
    for i in range(len(begin)):
        bit = 1 << i
        if ellipsis_mask & bit:
            index.append(Ellipsis)
        elif new_axis_mask & bit:
            index.append(None)
        elif shrink_axis_mask & bit:
            index.append(int(begin[i]))
        else:
            if strides[i] == 0:
                raise ValueError(f"strides[{i}] must be non-zero")
            start = None if begin_mask & bit else int(begin[i])
            stop = None if end_mask & bit else int(end[i])
            index.append(slice(start, stop, int(strides[i])))
    return tuple(index)


def constant_slice_index(op: ops.Operation, masks) -> tuple | None:
    """The numpy index of a StridedSlice whose begin/end/strides are constants, else None."""
    values = [tensor_util.constant_value(t) for t in op.inputs[1:4]]
    if any(v is None for v in values):
        return None
    return strided_slice_index(*values, masks)
