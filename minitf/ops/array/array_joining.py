"""Joining and splitting: ``tf.concat``, ``stack``, ``unstack``, ``split``, and ``tile``, ``pad``.

``concat``/``split`` (ops ``ConcatV2``, ``Split``, ``SplitV``) and
``stack``/``unstack`` (``Pack``, ``Unpack``) are each other's inverses, which
is how their gradients work; ``tile`` and ``pad`` grow a tensor along its
dimensions.

Part of TF's ``array_ops`` (re-exported by `minitf.ops.array.array_ops`); kernels in
`minitf.ops.array.array_kernels`, gradients in `minitf.ops.array.array_grad`.
"""

from __future__ import annotations

import numbers

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.array.array_identity import identity
from minitf.ops.common_shapes import (
    merge_shapes,
    shape_error_suffix,
    shape_str,
    static_int,
    static_ints,
)
from minitf.ops.op_def_library import convert_list, create_op, index_tensor, is_tensor_like


def _concat_static_shape(values, axis, scope) -> tensor_shape.TensorShape:
    inputs_for_message = list(values)
    ranks = [v.get_shape().ndims for v in values if v.get_shape().ndims is not None]
    if not ranks:
        return tensor_shape.unknown_shape()
    rank_ = ranks[0]
    suffix = shape_error_suffix(scope, "ConcatV2", inputs_for_message)
    if rank_ == 0:
        raise ValueError("Can't concatenate scalars (use tf.stack instead)" + suffix)
    for v in values:
        if v.get_shape().ndims not in (None, rank_):
            raise ValueError(
                f"Shape must be rank {rank_} but is rank {v.get_shape().ndims}" + suffix
            )
    if axis is None:
        return tensor_shape.unknown_shape(rank_)
    if not -rank_ <= axis < rank_:
        raise ValueError(
            f"ConcatOp : Expected concatenating dimensions in the range [{-rank_}, {rank_}), "
            f"but got {axis}" + suffix
        )
    axis %= rank_
    dims = [tensor_shape.Dimension(None)] * rank_
    total = tensor_shape.Dimension(0)
    first = None
    for v in values:
        s = v.get_shape() if v.get_shape().ndims is not None else tensor_shape.unknown_shape(rank_)
        total += s[axis]
        for i in range(rank_):
            if i == axis:
                continue
            if not dims[i].is_compatible_with(s[i]):
                raise ValueError(
                    f"Dimension {i} in both shapes must be equal, but are {dims[i]} and {s[i]}. "
                    f"Shapes are {shape_str(first)} and {shape_str(s)}." + suffix
                )
            dims[i] = dims[i].merge_with(s[i])
        first = first if first is not None else s
    dims[axis] = total
    return tensor_shape.TensorShape(dims)


def concat(values, axis, name="concat") -> ops.Tensor:
    """Concatenates ``values`` along dimension ``axis`` (op ``ConcatV2``; TF1 argument order).

    A single value is returned through ``identity``, as in TF.

    Args:
        values: A list of tensors (or a single one).
        axis: The dimension to concatenate along (a 0-D int32).
        name: A name for the operation.

    Raises:
        ValueError: if the ranks differ, the non-axis dimensions do not match,
            ``axis`` is out of range or the values are scalars.
        TypeError: if the dtypes differ.
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with ops.name_scope(name) as scope:
            axis_t = ops.convert_to_tensor(axis, name="concat_dim", dtype=dtypes.int32)
            axis_t.get_shape().assert_has_rank(0)
            return identity(values[0], name=scope)
    with ops.name_scope(name, "ConcatV2", list(values) + [axis]) as scope:
        tensors = convert_list(values, "ConcatV2")
        axis_t = index_tensor(axis, "axis", "ConcatV2")
        static = _concat_static_shape(tensors, static_int(axis_t), scope)
        dtype = tensors[0].dtype.base_dtype
        op = create_op(
            "ConcatV2",
            tensors + [axis_t],
            [dtype],
            scope,
            {"N": len(tensors), "T": dtype, "Tidx": axis_t.dtype.base_dtype},
            [static],
        )
    return op.outputs[0]


def concat_offset(concat_dim, shape, name=None) -> list[ops.Tensor]:
    """The offsets of each input of a concatenation along ``concat_dim`` (op ``ConcatOffset``).

    Used by the gradient of ``concat``: input ``i`` is the slice of the output
    that starts at ``offsets[i]`` and has ``shape[i]``.
    """
    with ops.name_scope(name, "ConcatOffset", [concat_dim] + list(shape)) as scope:
        dim = ops.convert_to_tensor(concat_dim, dtype=dtypes.int32, name="concat_dim")
        shapes = [ops.convert_to_tensor(s, dtype=dtypes.int32) for s in shape]
        op = create_op(
            "ConcatOffset",
            [dim] + shapes,
            [dtypes.int32] * len(shapes),
            scope,
            {"N": len(shapes)},
            [s.get_shape() for s in shapes],
        )
    return op.outputs


def stack(values, axis=0, name="stack") -> ops.Tensor:
    """Stacks the rank-R tensors ``values`` into one rank-(R+1) tensor (op ``Pack``).

    As in TF, a list of constants with ``axis=0`` becomes one ``Const``.

    Args:
        values: A list of tensors of one shape and dtype.
        axis: The dimension to stack along, in ``[-(R+1), R+1)``.
        name: A name for the operation.

    Raises:
        ValueError: if ``axis`` is out of range or the shapes differ.
    """
    if axis == 0:
        try:
            return ops.convert_to_tensor(values, name=name)
        except (TypeError, ValueError):
            pass
    first = ops.convert_to_tensor(values[0], name=name).get_shape()
    if first.ndims is not None:
        expanded = first.ndims + 1
        if axis < -expanded or axis >= expanded:
            raise ValueError(f"axis = {axis} not in [{-expanded}, {expanded})")
    return pack(values, axis, name)


def pack(values, axis: int, name) -> ops.Tensor:
    """Adds a ``Pack`` op of ``values`` along ``axis`` (`stack` without its constant shortcut).

    Raises:
        ValueError: if the shapes differ or ``axis`` is out of range.
        TypeError: if the dtypes differ.
    """
    with ops.name_scope(name, "Pack", list(values)) as scope:
        tensors = convert_list(values, "Pack")
        merged = merge_shapes([t.get_shape() for t in tensors], "value")
        static = tensor_shape.unknown_shape()
        if merged.ndims is not None:
            dims = list(merged.dims)
            where_ = axis + len(dims) + 1 if axis < 0 else axis
            if not 0 <= where_ <= len(dims):
                raise ValueError(f"axis = {axis} not in [{-len(dims) - 1}, {len(dims) + 1})")
            dims.insert(where_, tensor_shape.Dimension(len(tensors)))
            static = tensor_shape.TensorShape(dims)
        dtype = tensors[0].dtype.base_dtype
        op = create_op(
            "Pack",
            tensors,
            [dtype],
            scope,
            {"N": len(tensors), "T": dtype, "axis": axis},
            [static],
        )
    return op.outputs[0]


def unstack(value, num=None, axis=0, name="unstack") -> list[ops.Tensor]:
    """Splits ``value`` along ``axis`` into ``num`` tensors of one less rank (op ``Unpack``).

    Args:
        value: A tensor of rank R > 0.
        num: The length of dimension ``axis``; None infers it from the static shape.
        axis: The dimension to unstack along, in ``[-R, R)``.
        name: A name for the operation.

    Raises:
        ValueError: if ``num`` is None and cannot be inferred, or ``axis`` is out of range.
    """
    with ops.name_scope(name, "Unpack", [value]) as scope:
        value = ops.convert_to_tensor(value)
        static = value.get_shape()
        if static.ndims is not None:
            if axis < -static.ndims or axis >= static.ndims:
                raise ValueError(f"axis = {axis} not in [{-static.ndims}, {static.ndims})")
            if num is None:
                num = static.dims[axis].value
        if num is None:
            raise ValueError(f"Cannot infer num from shape {static}")
        out_shape = tensor_shape.unknown_shape()
        if static.ndims is not None:
            dims = list(static.dims)
            if dims[axis].value not in (None, num):
                raise ValueError(
                    f"Dimension {axis % len(dims)} must be {num} but is {dims[axis].value}"
                    + shape_error_suffix(scope, "Unpack", [value])
                )
            del dims[axis]
            out_shape = tensor_shape.TensorShape(dims)
        op = create_op(
            "Unpack",
            [value],
            [value.dtype.base_dtype] * num,
            scope,
            {"num": num, "T": value.dtype.base_dtype, "axis": axis},
            [out_shape] * num,
        )
    return op.outputs


def split(value, num_or_size_splits, axis=0, num=None, name="split") -> list[ops.Tensor]:
    """Splits ``value`` along ``axis`` into equal parts (``Split``) or given sizes (``SplitV``).

    Args:
        value: The tensor to split.
        num_or_size_splits: An int (the number of equal parts) or a 1-D list or
            tensor of sizes (one of them may be -1).
        axis: The dimension to split.
        num: The number of outputs when it cannot be inferred from the sizes.
        name: The op name.

    Raises:
        ValueError: if the dimension does not divide evenly, the sizes do not
            add up, or the number of outputs cannot be inferred.
    """
    size_splits = ops.convert_to_tensor(num_or_size_splits)
    if isinstance(num_or_size_splits, (numbers.Integral, tensor_shape.Dimension)):
        return _split_even(value, int(num_or_size_splits), axis, name)
    if size_splits.get_shape().ndims == 0:
        raise ValueError(
            "Rank-0 tensors are not supported as the num_or_size_splits argument to split. "
            f"Argument provided: {num_or_size_splits}"
        )
    if num is None:
        static = size_splits.get_shape()
        if static.ndims:
            num = static.dims[0].value
        if num is None:
            raise ValueError(f"Cannot infer num from shape {num_or_size_splits}")
    return _split_v(value, size_splits, axis, num, name)


def _normalize_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{what}: axis = {axis} not in [{-rank}, {rank})")
    return axis + rank if axis < 0 else axis


def _split_even(value, num_split: int, axis, name) -> list[ops.Tensor]:
    with ops.name_scope(name, "Split", [value, axis]) as scope:
        axis_t = ops.convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim")
        value = ops.convert_to_tensor(value, name="value")
        static = value.get_shape()
        out = tensor_shape.unknown_shape(static.ndims)
        axis_value = static_int(axis_t)
        if static.ndims is not None and axis_value is not None:
            dim = _normalize_axis(axis_value, static.ndims, "Split")
            dims = list(static.dims)
            if dims[dim].value is not None:
                if dims[dim].value % num_split:
                    raise ValueError(
                        f"Dimension size must be evenly divisible by {num_split} but is "
                        f"{dims[dim].value}" + shape_error_suffix(scope, "Split", [axis_t, value])
                    )
                dims[dim] = tensor_shape.Dimension(dims[dim].value // num_split)
            out = tensor_shape.TensorShape(dims)
        op = create_op(
            "Split",
            [axis_t, value],
            [value.dtype.base_dtype] * num_split,
            scope,
            {"num_split": num_split, "T": value.dtype.base_dtype},
            [out] * num_split,
        )
    return op.outputs


def resolved_split_sizes(sizes: list[int], dim: int | None) -> list[int | None]:
    """The ``size_splits`` of ``SplitV`` with its -1 entry resolved against ``dim``.

    Raises:
        ValueError: TF's message, if the sizes cannot split a dimension of ``dim``.
    """
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise ValueError("Only one dimensions can have a value of -1 in size_splits")
    known = sum(s for s in sizes if s != -1)
    if dim is None:
        return [None if s == -1 else s for s in sizes]
    if (unknown and known > dim) or (not unknown and known != dim):
        raise ValueError(
            "Determined shape must either match input shape along split_dim exactly if fully "
            "specified, or be less than the size of the input along split_dim if not fully "
            f"specified.  Got: {known}"
        )
    return [dim - known if s == -1 else s for s in sizes]


def _split_v(value, size_splits, axis, num: int, name) -> list[ops.Tensor]:
    with ops.name_scope(name, "SplitV", [value, size_splits, axis]) as scope:
        value = ops.convert_to_tensor(value, name="value")
        sizes_t = index_tensor(size_splits, "size_splits", "SplitV")
        axis_t = ops.convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim")
        static = value.get_shape()
        outs = [tensor_shape.unknown_shape(static.ndims)] * num
        axis_value, sizes = static_int(axis_t), static_ints(sizes_t)
        if sizes is not None and len(sizes) != num:
            raise ValueError(f"SplitV: {len(sizes)} sizes given for num_split = {num}")
        if static.ndims is not None and axis_value is not None:
            dim = _normalize_axis(axis_value, static.ndims, "SplitV")
            if sizes is not None:
                resolved = resolved_split_sizes(sizes, static.dims[dim].value)
                outs = []
                for s in resolved:
                    dims = list(static.dims)
                    dims[dim] = tensor_shape.Dimension(s)
                    outs.append(tensor_shape.TensorShape(dims))
        op = create_op(
            "SplitV",
            [value, sizes_t, axis_t],
            [value.dtype.base_dtype] * num,
            scope,
            {"num_split": num, "T": value.dtype.base_dtype, "Tlen": sizes_t.dtype.base_dtype},
            outs,
        )
    return op.outputs


def tile(input, multiples, name=None) -> ops.Tensor:  # noqa: A002
    """Repeats ``input`` ``multiples[i]`` times along dimension ``i`` (op ``Tile``).

    Args:
        input: A tensor.
        multiples: A 1-D int32 or int64 tensor, one entry per dimension of ``input``.
        name: A name for the operation (optional).

    Raises:
        ValueError: if ``multiples`` does not have one entry per dimension.
    """
    with ops.name_scope(name, "Tile", [input, multiples]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        multiples_t = index_tensor(multiples, "multiples", "Tile")
        static = value.get_shape()
        reps = static_ints(multiples_t)
        count = multiples_t.get_shape()[0].value if multiples_t.get_shape().ndims == 1 else None
        if static.ndims is not None and count is not None and count != static.ndims:
            raise ValueError(
                f"Shape must be rank {static.ndims} but is rank {count}"
                + shape_error_suffix(scope, "Tile", [value, multiples_t])
            )
        out = tensor_shape.unknown_shape(static.ndims if static.ndims is not None else count)
        if static.ndims is not None and reps is not None:
            out = tensor_shape.TensorShape([d * r for d, r in zip(static.dims, reps)])
        op = create_op(
            "Tile",
            [value, multiples_t],
            [value.dtype.base_dtype],
            scope,
            {"T": value.dtype.base_dtype, "Tmultiples": multiples_t.dtype.base_dtype},
            [out],
        )
    return op.outputs[0]


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0) -> ops.Tensor:
    """Pads ``tensor`` with ``paddings[i] = [before, after]`` entries along each dimension.

    ``CONSTANT`` mode is op ``Pad`` (``PadV2`` for a non-zero ``constant_values``);
    ``REFLECT`` and ``SYMMETRIC`` are ``MirrorPad``.

    Args:
        tensor: A tensor.
        paddings: An int32 tensor of shape ``[rank, 2]``.
        mode: ``"CONSTANT"``, ``"REFLECT"`` or ``"SYMMETRIC"`` (any case).
        name: A name for the operation (optional).
        constant_values: The value to pad with in ``CONSTANT`` mode.

    Raises:
        ValueError: on an unknown mode or a ``paddings`` of the wrong shape.
    """
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    extra = []
    if mode == "CONSTANT":
        is_zero = not is_tensor_like(constant_values) and constant_values == 0
        op_type = "Pad" if is_zero else "PadV2"
    else:
        op_type = "MirrorPad"
    with ops.name_scope(name, op_type, [tensor, paddings]) as scope:
        value = ops.convert_to_tensor(tensor, name="input")
        paddings_t = index_tensor(paddings, "paddings", op_type)
        if op_type == "PadV2":
            extra = [ops.convert_to_tensor(constant_values, value.dtype.base_dtype)]
        out = _padded_shape(value, paddings_t, scope, op_type)
        attrs = {"T": value.dtype.base_dtype, "Tpaddings": paddings_t.dtype.base_dtype}
        if op_type == "MirrorPad":
            attrs["mode"] = mode
        op = create_op(
            op_type, [value, paddings_t] + extra, [value.dtype.base_dtype], scope, attrs, [out]
        )
    return op.outputs[0]


def _padded_shape(value, paddings_t, scope, op_type) -> tensor_shape.TensorShape:
    static = value.get_shape()
    pads_static = paddings_t.get_shape()
    if pads_static.ndims is not None and (
        pads_static.ndims != 2
        or pads_static.dims[1].value not in (None, 2)
        or (static.ndims is not None and pads_static.dims[0].value not in (None, static.ndims))
    ):
        raise ValueError(
            f"paddings must be a matrix of shape [{static.ndims}, 2], got "
            f"{shape_str(pads_static)}" + shape_error_suffix(scope, op_type, [value, paddings_t])
        )
    pads = tensor_util.constant_value(paddings_t)
    if pads is None:
        rank_ = static.ndims if static.ndims is not None else pads_static[0].value
        return tensor_shape.unknown_shape(rank_)
    return tensor_shape.TensorShape(
        [d + int(before) + int(after) for d, (before, after) in zip(static.dims, pads)]
        if static.ndims is not None
        else [None] * len(pads)
    )
