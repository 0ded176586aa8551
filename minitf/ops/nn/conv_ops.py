"""Convolution and pooling ops (``tf.nn.conv2d``, ``max_pool``, ``avg_pool``, ...).

The constructors check their attributes and compute static output shapes
with TF's padding arithmetic (`minitf.ops.nn.conv_kernels.window_geometry`),
raising TF's shape errors at graph construction. Tensors are NHWC: the ops
accept ``data_format="NCHW"`` and their kernels refuse it with TF's CPU
error, as TF 1.x does on a CPU. Kernels are in `minitf.ops.nn.conv_kernels`,
gradients in `minitf.ops.nn.conv_grad`.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.nn.conv_kernels import window_geometry
from minitf.ops.op_def_library import FLOATS, check_dtype, create_op

__all__ = [
    "conv2d",
    "conv2d_backprop_input",
    "conv2d_backprop_filter",
    "conv2d_transpose",
    "max_pool",
    "avg_pool",
]

_PADDINGS = ("SAME", "VALID")
_POOL_TYPES = FLOATS + (dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.int8, dtypes.int16)


def _where(scope: str, op_type: str, *shapes) -> str:
    return (
        f"for '{scope.rstrip('/')}' (op: '{op_type}') with input shapes: "
        + ", ".join(str(s) for s in shapes)
        + "."
    )


def _four(value, what: str, op_type: str) -> list[int]:
    """``strides``/``ksize``/``dilations``: 4 ints (an int or 2 ints are spread, as in TF)."""
    if isinstance(value, int):
        value = [value, value]
    value = [int(v) for v in value]
    if len(value) == 2:
        value = [1, *value, 1]
    if len(value) == 1:
        value = [1, value[0], value[0], 1]
    if len(value) != 4:
        raise ValueError(
            f"{what} should be of length 1, 2 or 4 but was {len(value)} (op: '{op_type}')"
        )
    if any(v < 1 for v in value):
        raise ValueError(f"{what} must be positive, got {value} (op: '{op_type}')")
    return value


def _padding(padding, op_type: str) -> str:
    if padding not in _PADDINGS:
        raise ValueError(
            f"Attr 'padding' of '{op_type}' Op passed string '{padding}' not in: "
            '"SAME", "VALID".'
        )
    return padding


def _data_format(data_format, op_type: str) -> str:
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(
            f"Attr 'data_format' of '{op_type}' Op passed string '{data_format}' not in: "
            '"NHWC", "NCHW".'
        )
    return data_format


def _spatial(shape: tensor_shape.TensorShape, data_format: str):
    """``(batch, rows, cols, depth)`` of a rank-4 static shape, in NHWC order."""
    dims = shape.as_list()
    if data_format == "NCHW":
        return dims[0], dims[2], dims[3], dims[1]
    return tuple(dims)


def _output_shape(batch, rows, cols, depth, data_format: str) -> tensor_shape.TensorShape:
    if data_format == "NCHW":
        return tensor_shape.TensorShape([batch, depth, rows, cols])
    return tensor_shape.TensorShape([batch, rows, cols, depth])


def _windowed(size, window, stride, dilation, padding, where: str):
    """One spatial output size (None if unknown); TF's error when no window fits."""
    if size is None or window is None:
        return None
    geometry = window_geometry(size, window, stride, dilation, padding)
    if geometry is None:
        effective = (window - 1) * dilation + 1
        raise ValueError(
            f"Negative dimension size caused by subtracting {effective} from {size} {where}"
        )
    return geometry.out


def _rank4(shape, where: str) -> tensor_shape.TensorShape:
    if shape.ndims is not None and shape.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {shape.ndims} {where}")
    return shape.with_rank(4) if shape.ndims is None else shape


def _conv_shape(x_shape, w_shape, strides, dilations, padding, data_format, where: str):
    x_shape, w_shape = _rank4(x_shape, where), _rank4(w_shape, where)
    if x_shape.ndims is None:
        return tensor_shape.unknown_shape(4)
    batch, rows, cols, depth = _spatial(x_shape, data_format)
    s = _spatial(tensor_shape.TensorShape(strides), data_format)
    d = _spatial(tensor_shape.TensorShape(dilations), data_format)
    kh, kw, in_depth, out_depth = w_shape.as_list() if w_shape.ndims else [None] * 4
    if depth is not None and in_depth is not None and depth % in_depth:
        raise ValueError(
            f"Depth of input ({depth}) is not a multiple of input depth of filter "
            f"({in_depth}) {where}"
        )
    out_rows = _windowed(rows, kh, s[1], d[1], padding, where)
    out_cols = _windowed(cols, kw, s[2], d[2], padding, where)
    return _output_shape(batch, out_rows, out_cols, out_depth, data_format)


def _conv_attrs(dtype, strides, padding, data_format, dilations, use_cudnn_on_gpu, op_type):
    return {
        "T": dtype,
        "strides": _four(strides, "strides", op_type),
        "padding": _padding(padding, op_type),
        "data_format": _data_format(data_format, op_type),
        "dilations": _four(dilations, "dilations", op_type),
        "use_cudnn_on_gpu": bool(use_cudnn_on_gpu),
    }


def conv2d(
    input: Any,  # noqa: A002 - TF's argument name
    filter: Any = None,  # noqa: A002
    strides: Any = None,
    padding: str | None = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = [1, 1, 1, 1],  # noqa: B006 - TF's default
    name: str | None = None,
    filters: Any = None,
) -> ops.Tensor:
    """A 2-D convolution of ``input`` with ``filter`` (op type ``Conv2D``).

    Each output position is the sum, over a ``filter_height x filter_width``
    window and all input channels, of the input times the filter
    (a cross-correlation: the filter is not flipped).

    Args:
        input: A 4-D float tensor ``[batch, in_height, in_width, in_channels]``.
        filter: A 4-D tensor ``[filter_height, filter_width, in_channels, out_channels]``.
        strides: 4 ints: the step between windows in each dimension of ``input``
            (batch and channel strides must be 1).
        padding: ``"SAME"`` (output size ``ceil(in / stride)``, zero-padded) or
            ``"VALID"`` (only windows that fit).
        use_cudnn_on_gpu: Accepted for compatibility; there is no GPU.
        data_format: ``"NHWC"``; ``"NCHW"`` builds, but its kernel refuses to run,
            as TF's CPU kernel does.
        dilations: 4 ints: the step between filter taps (atrous convolution).
        name: A name for the operation.
        filters: Alias of ``filter``.

    Returns:
        A tensor ``[batch, out_height, out_width, out_channels]``.

    Raises:
        ValueError: for a bad padding, strides, ranks, or depths that do not fit.
    """
    if filter is None:
        filter = filters  # noqa: A001
    with ops.name_scope(name, "Conv2D", [input, filter]) as scope:
        x = ops.convert_to_tensor(input, name="input")
        w = ops.convert_to_tensor(filter, dtype=x.dtype, name="filter")
        dtype = check_dtype("input", x.dtype, FLOATS)
        attrs = _conv_attrs(
            dtype, strides, padding, data_format, dilations, use_cudnn_on_gpu, "Conv2D"
        )
        where = _where(scope, "Conv2D", x.get_shape(), w.get_shape())
        shape = _conv_shape(
            x.get_shape(),
            w.get_shape(),
            attrs["strides"],
            attrs["dilations"],
            attrs["padding"],
            attrs["data_format"],
            where,
        )
        return create_op("Conv2D", [x, w], [dtype], scope, attrs, [shape]).outputs[0]


def _shape_from(sizes: ops.Tensor, rank: int) -> tensor_shape.TensorShape:
    """The static shape a 1-D sizes tensor holds, as far as it is known."""
    value = tensor_util.constant_value(sizes)
    if value is None:
        return tensor_shape.unknown_shape(rank)
    return tensor_shape.TensorShape([int(v) for v in value])


def conv2d_backprop_input(
    input_sizes: Any,
    filter: Any = None,  # noqa: A002
    out_backprop: Any = None,
    strides: Any = None,
    padding: str | None = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = [1, 1, 1, 1],  # noqa: B006 - TF's default
    name: str | None = None,
    filters: Any = None,
) -> ops.Tensor:
    """The gradient of `conv2d` with respect to its input (op type ``Conv2DBackpropInput``).

    Args:
        input_sizes: A 1-D int32 tensor: the shape of the convolution's input.
        filter: The convolution's filter ``[kh, kw, in_channels, out_channels]``.
        out_backprop: The gradient of the convolution's output.
        strides: The convolution's strides (4 ints).
        padding: The convolution's padding.
        use_cudnn_on_gpu: Accepted for compatibility.
        data_format: ``"NHWC"`` (``"NCHW"`` is refused when run).
        dilations: The convolution's dilations.
        name: A name for the operation.
        filters: Alias of ``filter``.

    Returns:
        A tensor of shape ``input_sizes``.
    """
    if filter is None:
        filter = filters  # noqa: A001
    op_type = "Conv2DBackpropInput"
    with ops.name_scope(name, op_type, [input_sizes, filter, out_backprop]) as scope:
        sizes = ops.convert_to_tensor(input_sizes, dtype=dtypes.int32, name="input_sizes")
        w = ops.convert_to_tensor(filter, name="filter")
        grad = ops.convert_to_tensor(out_backprop, dtype=w.dtype, name="out_backprop")
        dtype = check_dtype("filter", w.dtype, FLOATS)
        attrs = _conv_attrs(
            dtype, strides, padding, data_format, dilations, use_cudnn_on_gpu, op_type
        )
        shape = _shape_from(sizes, 4)
        return create_op(op_type, [sizes, w, grad], [dtype], scope, attrs, [shape]).outputs[0]


def conv2d_backprop_filter(
    input: Any,  # noqa: A002 - TF's argument name
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: str | None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = [1, 1, 1, 1],  # noqa: B006 - TF's default
    name: str | None = None,
) -> ops.Tensor:
    """The gradient of `conv2d` with respect to its filter (op type ``Conv2DBackpropFilter``).

    Args:
        input: The convolution's input.
        filter_sizes: A 1-D int32 tensor: the shape of the filter.
        out_backprop: The gradient of the convolution's output.
        strides: The convolution's strides (4 ints).
        padding: The convolution's padding.
        use_cudnn_on_gpu: Accepted for compatibility.
        data_format: ``"NHWC"`` (``"NCHW"`` is refused when run).
        dilations: The convolution's dilations.
        name: A name for the operation.

    Returns:
        A tensor of shape ``filter_sizes``.
    """
    op_type = "Conv2DBackpropFilter"
    with ops.name_scope(name, op_type, [input, filter_sizes, out_backprop]) as scope:
        x = ops.convert_to_tensor(input, name="input")
        sizes = ops.convert_to_tensor(filter_sizes, dtype=dtypes.int32, name="filter_sizes")
        grad = ops.convert_to_tensor(out_backprop, dtype=x.dtype, name="out_backprop")
        dtype = check_dtype("input", x.dtype, FLOATS)
        attrs = _conv_attrs(
            dtype, strides, padding, data_format, dilations, use_cudnn_on_gpu, op_type
        )
        shape = _shape_from(sizes, 4)
        return create_op(op_type, [x, sizes, grad], [dtype], scope, attrs, [shape]).outputs[0]


def conv2d_transpose(
    value: Any = None,
    filter: Any = None,  # noqa: A002
    output_shape: Any = None,
    strides: Any = None,
    padding: str | None = "SAME",
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,  # noqa: A002
    filters: Any = None,
    dilations: Any = None,
) -> ops.Tensor:
    """The transpose of `conv2d` ("deconvolution"): `conv2d_backprop_input` of ``value``.

    Args:
        value: A 4-D tensor ``[batch, height, width, in_channels]``.
        filter: A 4-D tensor ``[height, width, output_channels, in_channels]``.
        output_shape: A 1-D tensor: the shape of the result.
        strides: 4 ints: the strides of the convolution this transposes.
        padding: ``"SAME"`` or ``"VALID"``.
        data_format: ``"NHWC"``.
        name: A name for the operation.
        input: Alias of ``value``.
        filters: Alias of ``filter``.
        dilations: The dilations of the convolution this transposes.

    Returns:
        A tensor of shape ``output_shape``.

    Raises:
        ValueError: if ``output_shape`` is not of length 4 or the channels do not fit.
    """
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    with ops.name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        value = ops.convert_to_tensor(value, name="value")
        filter = ops.convert_to_tensor(filter, name="filter")  # noqa: A001
        channel = 1 if data_format == "NCHW" else 3
        in_depth = value.get_shape().with_rank(4)[channel]
        if not in_depth.is_compatible_with(filter.get_shape().with_rank(4)[3]):
            raise ValueError(
                f"input channels does not match filter's input channels, {in_depth} != "
                f"{filter.get_shape()[3]}"
            )
        sizes = ops.convert_to_tensor(output_shape, name="output_shape")
        if not sizes.get_shape().is_compatible_with(tensor_shape.TensorShape([4])):
            raise ValueError(f"output_shape must have shape (4,), got {sizes.get_shape()}")
        return conv2d_backprop_input(
            sizes,
            filter,
            value,
            strides,
            padding,
            data_format=data_format,
            dilations=[1, 1, 1, 1] if dilations is None else dilations,
            name=scope,
        )


def _pool(op_type: str, value, ksize, strides, padding, data_format, name, allowed):
    with ops.name_scope(name, op_type, [value]) as scope:
        x = ops.convert_to_tensor(value, name="input")
        dtype = check_dtype("input", x.dtype, allowed)
        attrs = {
            "T": dtype,
            "ksize": _four(ksize, "ksize", op_type),
            "strides": _four(strides, "strides", op_type),
            "padding": _padding(padding, op_type),
            "data_format": _data_format(data_format, op_type),
        }
        shape = _pool_shape(x.get_shape(), attrs, _where(scope, op_type, x.get_shape()))
        return create_op(op_type, [x], [dtype], scope, attrs, [shape]).outputs[0]


def _pool_shape(x_shape, attrs: dict, where: str) -> tensor_shape.TensorShape:
    x_shape = _rank4(x_shape, where)
    if x_shape.ndims is None:
        return tensor_shape.unknown_shape(4)
    fmt = attrs["data_format"]
    batch, rows, cols, depth = _spatial(x_shape, fmt)
    k = _spatial(tensor_shape.TensorShape(attrs["ksize"]), fmt)
    s = _spatial(tensor_shape.TensorShape(attrs["strides"]), fmt)
    out_rows = _windowed(rows, k[1], s[1], 1, attrs["padding"], where)
    out_cols = _windowed(cols, k[2], s[2], 1, attrs["padding"], where)
    return _output_shape(batch, out_rows, out_cols, depth, fmt)


def max_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: str | None,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,  # noqa: A002
) -> ops.Tensor:
    """The maximum of each window of ``value`` (op type ``MaxPool``).

    Args:
        value: A 4-D tensor ``[batch, height, width, channels]``.
        ksize: The window size in each dimension (4 ints, or 1 or 2 for height and width).
        strides: The step between windows (like ``ksize``).
        padding: ``"SAME"`` or ``"VALID"``; SAME padding never wins the maximum.
        data_format: ``"NHWC"`` (``"NCHW"`` is refused when run, as on TF's CPU).
        name: A name for the operation.
        input: Alias of ``value``.

    Returns:
        A tensor ``[batch, out_height, out_width, channels]``.
    """
    value = input if value is None else value
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name, _POOL_TYPES)


def avg_pool(
    value: Any,
    ksize: Any,
    strides: Any,
    padding: str | None,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,  # noqa: A002
) -> ops.Tensor:
    """The mean of each window of ``value`` (op type ``AvgPool``).

    With ``SAME`` padding, a window at the border averages only the positions
    inside the input.

    Args:
        value: A 4-D float tensor ``[batch, height, width, channels]``.
        ksize: The window size in each dimension (4 ints, or 1 or 2 for height and width).
        strides: The step between windows (like ``ksize``).
        padding: ``"SAME"`` or ``"VALID"``.
        data_format: ``"NHWC"`` (``"NCHW"`` is refused when run, as on TF's CPU).
        name: A name for the operation.
        input: Alias of ``value``.

    Returns:
        A tensor ``[batch, out_height, out_width, channels]``.
    """
    value = input if value is None else value
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name, FLOATS)
