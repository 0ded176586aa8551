"""Numpy kernels and constant folders of `array_ops` and its siblings but slicing and indexing.

Kernels check what only the values can tell (a concatenation of mismatched
shapes, an uneven split) and raise TF's ``InvalidArgumentError`` with TF's
message. The constant folders compute an op's static value from the static
values of its inputs, which is how ``tf.reshape(x, tf.shape(y))`` gets a
static shape. The slicing and indexing kernels are in
`minitf.ops.array.array_indexing_kernels`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, errors, tensor_util
from minitf.framework.op_registry import register_compute, register_kernel
from minitf.ops.array.array_joining import resolved_split_sizes
from minitf.ops.common_shapes import shape_str


def as_outputs(values) -> np.ndarray | tuple:
    """A kernel's result for several outputs: a tuple, or the value itself for one output."""
    values = tuple(values)
    return values[0] if len(values) == 1 else values


def kernel_type_name(dtype: dtypes.DType) -> str:
    """The dtype as TF's kernels spell it in messages ("float", "double", "int32")."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(
        dtype.base_dtype.name, dtype.base_dtype.name
    )


@register_kernel("Placeholder")
def _placeholder_kernel(op):
    message = (
        f"You must feed a value for placeholder tensor '{op.name}' with dtype "
        f"{kernel_type_name(op.get_attr('dtype'))}"
    )
    if op.get_attr("shape").ndims is not None:
        message += f" and shape {shape_str(op.get_attr('shape'))}"

    def compute(ctx):
        raise errors.InvalidArgumentError(op.node_def, op, message)

    return compute


@register_compute("PlaceholderWithDefault")
def _placeholder_with_default_kernel(ctx, x):
    return x


@register_compute("Identity")
def _identity_kernel(ctx, x):
    return x


@register_compute("StopGradient")
def _stop_gradient_kernel(ctx, x):
    return x


@register_kernel("Fill")
def _fill_kernel(op):
    np_type = op.get_attr("T").as_numpy_dtype

    def compute(ctx, dims, value):
        return np.full(tuple(dims), value, dtype=np_type)

    return compute


@register_compute("ZerosLike")
def _zeros_like_kernel(ctx, x):
    return np.zeros_like(x)


@register_kernel("Shape")
def _shape_kernel(op):
    np_type = op.get_attr("out_type").as_numpy_dtype

    def compute(ctx, x):
        return np.array(x.shape, dtype=np_type)

    return compute


@register_kernel("ShapeN")
def _shape_n_kernel(op):
    np_type = op.get_attr("out_type").as_numpy_dtype

    def compute(ctx, *xs):
        return as_outputs(np.array(np.shape(x), dtype=np_type) for x in xs)

    return compute


@register_kernel("Size")
def _size_kernel(op):
    np_type = op.get_attr("out_type").as_numpy_dtype

    def compute(ctx, x):
        return np_type(np.size(x))

    return compute


@register_compute("Rank")
def _rank_kernel(ctx, x):
    return np.int32(np.ndim(x))


@register_compute("Reshape")
def _reshape_kernel(ctx, x, new_shape):
    try:
        try:
            # The method np.reshape calls, without its layers, given a list:
            # numpy reads a list of ints much faster than an array of them.
            return x.reshape(new_shape.tolist())
        except AttributeError:  # not numpy values: np.reshape makes them arrays
            return np.reshape(x, new_shape)
    except ValueError:
        raise _reshape_error(np.size(x), [int(d) for d in np.ravel(new_shape)]) from None


def _reshape_error(size: int, dims: list[int]) -> errors.InvalidArgumentError:
    """TF's error for a reshape of ``size`` values to ``dims`` that numpy refused."""
    unknown = [i for i, d in enumerate(dims) if d == -1]
    negative = [(i, d) for i, d in enumerate(dims) if d < -1]
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    if len(unknown) > 1:
        message = f"Only one input size may be -1, not both {unknown[0]} and {unknown[1]}"
    elif negative:
        message = f"Size {negative[0][0]} must be non-negative, not {negative[0][1]}"
    elif unknown and known == 0:
        message = (
            "Reshape cannot infer the missing input size for an empty tensor unless all "
            "specified input sizes are non-zero"
        )
    elif unknown:
        message = (
            f"Input to reshape is a tensor with {size} values, but the requested shape "
            f"requires a multiple of {known}"
        )
    else:
        message = (
            f"Input to reshape is a tensor with {size} values, but the requested shape has {known}"
        )
    return errors.InvalidArgumentError(None, None, message)


@register_compute("ExpandDims")
def _expand_dims_kernel(ctx, x, axis):
    if type(x) is not np.ndarray:
        x = np.asarray(x)
    axis = int(axis)
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {x.ndim}")
    if axis < 0:
        axis += x.ndim + 1
    return x.reshape(x.shape[:axis] + (1,) + x.shape[axis:])


@register_kernel("Squeeze")
def _squeeze_kernel(op):
    axis = tuple(op.get_attr("squeeze_dims"))

    def compute(ctx, x):
        try:
            try:
                # The method np.squeeze calls, without its layers.
                return x.squeeze(axis) if axis else x.squeeze()
            except AttributeError:  # not a numpy value: np.squeeze makes it an array
                return np.squeeze(x, axis=axis or None)
        except ValueError as exc:
            message = (
                f"Can not squeeze dims {list(axis)} of an input of shape {list(np.shape(x))}: "
                "expected dimensions of size 1"
            )
            raise errors.InvalidArgumentError(op.node_def, op, message) from exc

    return compute


@register_kernel("Transpose")
def _transpose_kernel(op):
    def compute(ctx, x, perm):
        if len(perm) != np.ndim(x) or sorted(perm) != list(range(len(perm))):
            message = (
                f"transpose expects a permutation of [0, {np.ndim(x)}) for an input of shape "
                f"{list(np.shape(x))}, got {list(perm)}"
            )
            raise errors.InvalidArgumentError(op.node_def, op, message)
        return np.transpose(x, perm)

    return compute


@register_compute("InvertPermutation")
def _invert_permutation_kernel(ctx, x):
    return np.argsort(x).astype(x.dtype)


def _concat_runtime_message(values, axis: int) -> str:
    first = np.shape(values[0])
    if len(first) == 0:
        return "ConcatOp : Can't concatenate scalars (use tf.stack instead)"
    if not -len(first) <= axis < len(first):
        return (
            f"ConcatOp : Expected concatenating dimensions in the range [{-len(first)}, "
            f"{len(first)}), but got {axis}"
        )
    for i, v in enumerate(values[1:], 1):
        if np.ndim(v) != len(first):
            return (
                f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                f"{list(first)} vs. shape[{i}] = {list(np.shape(v))}"
            )
    axis %= len(first)
    for i, v in enumerate(values[1:], 1):
        others = [d for j, d in enumerate(np.shape(v)) if j != axis]
        if others != [d for j, d in enumerate(first) if j != axis]:
            return (
                f"ConcatOp : Dimensions of inputs should match: shape[0] = {list(first)} vs. "
                f"shape[{i}] = {list(np.shape(v))}"
            )
    return "ConcatOp : invalid inputs"


@register_kernel("ConcatV2")
def _concat_kernel(op):
    n = op.get_attr("N")

    def compute(ctx, *args):
        values, axis = args[:n], int(args[n])
        try:
            return np.concatenate(values, axis=axis)
        except ValueError as exc:
            message = _concat_runtime_message(values, axis)
            raise errors.InvalidArgumentError(op.node_def, op, message) from exc

    return compute


@register_compute("ConcatOffset")
def _concat_offset_kernel(ctx, dim, *shapes):
    dim = int(dim)
    offsets, start = [], 0
    for s in shapes:
        offset = np.zeros(len(s), dtype=np.int32)
        offset[dim] = start
        start += int(s[dim])
        offsets.append(offset)
    return as_outputs(offsets)


@register_kernel("Pack")
def _pack_kernel(op):
    axis = op.get_attr("axis")

    def compute(ctx, *values):
        try:
            return np.stack(values, axis=axis)
        except ValueError as exc:
            shapes = " != ".join(str(list(np.shape(v))) for v in values)
            message = f"Shapes of all inputs must match: {shapes}"
            raise errors.InvalidArgumentError(op.node_def, op, message) from exc

    return compute


@register_kernel("Unpack")
def _unpack_kernel(op):
    num, axis = op.get_attr("num"), op.get_attr("axis")

    def compute(ctx, x):
        if np.shape(x)[axis] != num:
            message = f"Input shape axis {axis} must equal {num}, got shape {list(np.shape(x))}"
            raise errors.InvalidArgumentError(op.node_def, op, message)
        if axis == 0:
            return as_outputs(x)
        return as_outputs(np.moveaxis(x, axis, 0))

    return compute


@register_kernel("Split")
def _split_kernel(op):
    num_split = op.get_attr("num_split")

    def compute(ctx, axis, x):
        axis = int(axis)
        if x.shape[axis] % num_split:
            message = (
                "Number of ways to split should evenly divide the split dimension, but got "
                f"split_dim {axis} (size = {x.shape[axis]}) and num_split {num_split}"
            )
            raise errors.InvalidArgumentError(op.node_def, op, message)
        return as_outputs(np.split(x, num_split, axis=axis))

    return compute


@register_kernel("SplitV")
def _split_v_kernel(op):
    def compute(ctx, x, sizes, axis):
        axis = int(axis)
        try:
            resolved = resolved_split_sizes([int(s) for s in sizes], x.shape[axis])
        except ValueError as exc:
            raise errors.InvalidArgumentError(op.node_def, op, str(exc)) from exc
        return as_outputs(np.split(x, np.cumsum(resolved)[:-1], axis=axis))

    return compute


@register_kernel("Tile")
def _tile_kernel(op):
    def compute(ctx, x, multiples):
        if len(multiples) != np.ndim(x):
            message = (
                f"Expected multiples argument to be a vector of length {np.ndim(x)} but got "
                f"length {len(multiples)}"
            )
            raise errors.InvalidArgumentError(op.node_def, op, message)
        return np.tile(x, tuple(multiples))

    return compute


@register_compute("Pad")
def _pad_kernel(ctx, x, paddings):
    return np.pad(x, paddings, mode="constant")


@register_compute("PadV2")
def _pad_v2_kernel(ctx, x, paddings, constant_value):
    return np.pad(x, paddings, mode="constant", constant_values=constant_value)


@register_kernel("MirrorPad")
def _mirror_pad_kernel(op):
    mode = op.get_attr("mode").lower()

    def compute(ctx, x, paddings):
        return np.pad(x, paddings, mode=mode)

    return compute


@tensor_util.register_constant_folder("Identity")
def _fold_identity(tensor):
    return tensor_util.constant_value(tensor.op.inputs[0])


@tensor_util.register_constant_folder("Shape")
def _fold_shape(tensor):
    static = tensor.op.inputs[0].get_shape()
    if static.is_fully_defined():
        return np.array(static.as_list(), dtype=tensor.dtype.as_numpy_dtype)
    return None


@tensor_util.register_constant_folder("Size")
def _fold_size(tensor):
    static = tensor.op.inputs[0].get_shape()
    if not static.is_fully_defined():
        return None
    return np.array(static.num_elements(), dtype=tensor.dtype.as_numpy_dtype)


@tensor_util.register_constant_folder("Rank")
def _fold_rank(tensor):
    ndims = tensor.op.inputs[0].get_shape().ndims
    return None if ndims is None else np.array(ndims, dtype=np.int32)


@tensor_util.register_constant_folder("Reshape")
def _fold_reshape(tensor):
    value = tensor_util.constant_value(tensor.op.inputs[0])
    new_shape = tensor_util.constant_value(tensor.op.inputs[1])
    if value is None or new_shape is None:
        return None
    return np.reshape(value, new_shape)


@tensor_util.register_constant_folder("Fill")
def _fold_fill(tensor):
    dims = tensor_util.constant_value(tensor.op.inputs[0])
    value = tensor_util.constant_value(tensor.op.inputs[1])
    if dims is None or value is None:
        return None
    return np.full(tuple(int(d) for d in dims), value, dtype=tensor.dtype.as_numpy_dtype)


@tensor_util.register_constant_folder("ExpandDims")
def _fold_expand_dims(tensor):
    value = tensor_util.constant_value(tensor.op.inputs[0])
    axis = tensor_util.constant_value(tensor.op.inputs[1])
    if value is None or axis is None:
        return None
    return np.expand_dims(value, int(axis))


@tensor_util.register_constant_folder("InvertPermutation")
def _fold_invert_permutation(tensor):
    value = tensor_util.constant_value(tensor.op.inputs[0])
    return None if value is None else np.argsort(value).astype(value.dtype)


@tensor_util.register_constant_folder("ConcatV2")
def _fold_concat(tensor):
    parts = [tensor_util.constant_value(t) for t in tensor.op.inputs]
    if any(p is None for p in parts):
        return None
    return np.concatenate(parts[:-1], axis=int(parts[-1]))


@tensor_util.register_constant_folder("Pack")
def _fold_pack(tensor):
    parts = [tensor_util.constant_value(t) for t in tensor.op.inputs]
    if any(p is None for p in parts):
        return None
    return np.stack(parts, axis=tensor.op.get_attr("axis")).astype(tensor.dtype.as_numpy_dtype)
