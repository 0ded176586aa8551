"""Numpy kernels of the convolution and pooling ops of `minitf.ops.nn.conv_ops`.

Every op works on NHWC tensors. A convolution is one matrix product over
*patches* (im2col): `numpy.lib.stride_tricks.sliding_window_view` gives each
output position its window of the padded input, without copying, and one
reshape lays the windows out as the rows of a matrix. The filter gradient is
the product of those patches with the incoming gradient; the input gradient
is the product of the gradient with the filter, whose columns are then added
back into the windows they came from (col2im, one strided add per filter tap).
A stride-1 convolution with many channels goes through products of spectra
instead (`minitf.ops.nn.conv_spectral`), when that needs far fewer
multiply-adds.

Padding follows TF's arithmetic (`window_geometry`): ``VALID`` keeps the
windows that fit, ``SAME`` gives ``ceil(size / stride)`` outputs and pads
``total // 2`` before, the rest after.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from minitf.framework import errors
from minitf.framework.op_registry import register_kernel
from minitf.ops.math import blas_threads
from minitf.ops.nn import conv_spectral


class Geometry(NamedTuple):
    """Where the windows of one spatial dimension lie (TF's ``GetWindowedOutputSize``)."""

    out: int
    pad_before: int
    pad_after: int


def window_geometry(
    size: int, window: int, stride: int, dilation: int, padding: str
) -> Geometry | None:
    """The output size and padding of one spatial dimension, or None if no window fits.

    Args:
        size: The input's size in this dimension.
        window: The window (filter or pool) size.
        stride: The step between windows.
        dilation: The step between the taps of a window.
        padding: ``"SAME"`` or ``"VALID"``.

    Returns:
        The geometry, or None when ``VALID`` windows are larger than the input.
    """
    effective = (window - 1) * dilation + 1
    if padding == "VALID":
        if size < effective:
            return None
        return Geometry((size - effective) // stride + 1, 0, 0)
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + effective - size, 0)
    return Geometry(out, total // 2, total - total // 2)


def _geometries(shape, window, strides, dilations, padding) -> tuple[Geometry, Geometry]:
    rows = window_geometry(shape[1], window[0], strides[1], dilations[1], padding)
    cols = window_geometry(shape[2], window[1], strides[2], dilations[2], padding)
    if rows is None or cols is None:
        raise errors.InvalidArgumentError(
            None, None, f"Computed output size would be negative for input shape {list(shape)}"
        )
    return rows, cols


def _pad(x: np.ndarray, rows: Geometry, cols: Geometry, value=0) -> np.ndarray:
    if not (rows.pad_before or rows.pad_after or cols.pad_before or cols.pad_after):
        return x
    widths = ((0, 0), (rows.pad_before, rows.pad_after), (cols.pad_before, cols.pad_after), (0, 0))
    return np.pad(x, widths, constant_values=value)


def _windows(xp: np.ndarray, window, strides, dilations, rows: Geometry, cols: Geometry):
    """The windows of ``xp``: a view ``[N, out_rows, out_cols, C, kh, kw]``."""
    effective = [(k - 1) * d + 1 for k, d in zip(window, dilations[1:3])]
    view = sliding_window_view(xp, effective, axis=(1, 2))
    return view[
        :,
        : (rows.out - 1) * strides[1] + 1 : strides[1],
        : (cols.out - 1) * strides[2] + 1 : strides[2],
        :,
        :: dilations[1],
        :: dilations[2],
    ]


def _tap_slice(i: int, j: int, strides, dilations, rows: Geometry, cols: Geometry):
    """The positions of the padded input that filter tap ``(i, j)`` reads, over all outputs."""
    r0, c0 = i * dilations[1], j * dilations[2]
    return (
        slice(None),
        slice(r0, r0 + (rows.out - 1) * strides[1] + 1, strides[1]),
        slice(c0, c0 + (cols.out - 1) * strides[2] + 1, strides[2]),
    )


def _check_nhwc(op, message: str, error=errors.InvalidArgumentError) -> None:
    if op.get_attr("data_format") != "NHWC":
        raise error(None, None, message)


def _conv_attrs(op):
    return op.get_attr("strides"), op.get_attr("dilations"), op.get_attr("padding")


FEW_CHANNELS = 4
"""Inputs with fewer channels than this get their im2col matrix copied tap by tap."""


def _patches(x: np.ndarray, window, strides, dilations, padding, spectra=None):
    """The im2col matrix of ``x``: ``[N * out_rows * out_cols, kh * kw * C]``, and the geometry.

    The columns are ordered like the filter's ``[kh, kw, C]`` so that the one
    copy reads whole runs of channels (with few channels: a transposed view
    of a copy that reads runs of image columns). ``spectra``: the step's
    `conv_spectral.Spectra`, where the matrix is kept for the step's other
    convolution of ``x`` with the same geometry (the filter gradient), or None.
    """
    if spectra is None:
        return _patches_of(x, window, strides, dilations, padding)
    kind = ("patches", tuple(window), tuple(strides), tuple(dilations), padding)
    return spectra.get(kind, x, None, lambda: _patches_of(x, window, strides, dilations, padding))


def _patches_of(x: np.ndarray, window, strides, dilations, padding):
    """`_patches`, computed."""
    rows, cols = _geometries(x.shape, window, strides, dilations, padding)
    view = _windows(_pad(x, rows, cols), window, strides, dilations, rows, cols)
    if x.shape[3] < FEW_CHANNELS:
        # Runs of C channels are too short to copy well: lay the matrix out
        # tap by tap (runs along the image's rows) and hand out its transpose.
        by_tap = np.ascontiguousarray(view.transpose(4, 5, 3, 0, 1, 2))
        return by_tap.reshape(-1, rows.out * cols.out * x.shape[0]).T, rows, cols
    view = view.transpose(0, 1, 2, 4, 5, 3)
    return view.reshape(-1, view.shape[3] * view.shape[4] * view.shape[5]), rows, cols


def _spectral(x_shape, w_shape, strides, dilations, padding: str, spectra, *values: np.ndarray):
    """The spectral way's matrices when it is the cheaper way for this convolution, else None.

    ``values`` are the op's array inputs: all their elements must be finite
    (`conv_spectral.finite_inputs`, with the step's ``spectra`` or None).
    """
    rows, cols = _geometries(x_shape, w_shape[:2], strides, dilations, padding)
    out = (rows.out, cols.out)
    dtype = values[0].dtype
    if not conv_spectral.pays(x_shape, w_shape, strides, dilations, out, dtype):
        return None
    if not conv_spectral.finite_inputs(spectra, *values):
        return None
    return conv_spectral.transforms(
        (int(x_shape[1]), int(x_shape[2])),
        (int(w_shape[0]), int(w_shape[1])),
        out,
        (rows.pad_before, cols.pad_before),
        np.dtype(dtype),
    )


def conv2d(
    x: np.ndarray, w: np.ndarray, strides, dilations, padding: str, spectra=None
) -> np.ndarray:
    """A 2-D convolution (cross-correlation) of NHWC ``x`` with ``w`` ``[kh, kw, C, O]``.

    ``spectra``: the step's `conv_spectral.Spectra`, or None.
    """
    if x.shape[3] != w.shape[2]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"input depth must be evenly divisible by filter depth: {x.shape[3]} vs {w.shape[2]}",
        )
    spectral = _spectral(x.shape, w.shape, strides, dilations, padding, spectra, x, w)
    if spectral is not None:
        out = conv_spectral.conv2d(x, w, spectral, spectra)
        if conv_spectral.finite(out):
            return out
    patches, rows, cols = _patches(x, w.shape[:2], strides, dilations, padding, spectra)
    out = blas_threads.matmul(patches, w.reshape(-1, w.shape[3]))
    return out.reshape(x.shape[0], rows.out, cols.out, w.shape[3])


def conv2d_backprop_filter(
    x: np.ndarray, filter_shape, grad: np.ndarray, strides, dilations, padding: str, spectra=None
) -> np.ndarray:
    """The gradient of `conv2d` with respect to its filter, of shape ``filter_shape``.

    ``spectra``: the step's `conv_spectral.Spectra`, or None.
    """
    kh, kw, depth, out_depth = (int(d) for d in filter_shape)
    spectral = _spectral(
        x.shape, (kh, kw, depth, out_depth), strides, dilations, padding, spectra, x, grad
    )
    if spectral is not None:
        out = conv_spectral.conv2d_backprop_filter(
            x, (kh, kw, depth, out_depth), grad, spectral, spectra
        )
        if conv_spectral.finite(out):
            return out
    patches, _, _ = _patches(x, (kh, kw), strides, dilations, padding, spectra)
    product = blas_threads.matmul(patches.T, grad.reshape(-1, out_depth))
    return product.reshape(kh, kw, depth, out_depth).astype(x.dtype, copy=False)


def conv2d_backprop_input(
    input_shape, w: np.ndarray, grad: np.ndarray, strides, dilations, padding: str, spectra=None
) -> np.ndarray:
    """The gradient of `conv2d` with respect to its input, of shape ``input_shape``.

    ``spectra``: the step's `conv_spectral.Spectra`, or None.
    """
    input_shape = tuple(int(d) for d in input_shape)
    kh, kw, depth, out_depth = w.shape
    rows, cols = _geometries(input_shape, (kh, kw), strides, dilations, padding)
    if grad.shape[1:3] != (rows.out, cols.out):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Conv2DBackpropInput: Size of out_backprop doesn't match computed: actual = "
            f"{list(grad.shape[1:3])}, computed = {[rows.out, cols.out]}",
        )
    spectral = _spectral(input_shape, w.shape, strides, dilations, padding, spectra, grad, w)
    if spectral is not None:
        out = conv_spectral.conv2d_backprop_input(input_shape, w, grad, spectral, spectra)
        if conv_spectral.finite(out):
            return out
    # [N*out, O] @ [O, kh*kw*C]: each output position's contribution to its window.
    taps = blas_threads.matmul(grad.reshape(-1, out_depth), w.reshape(-1, out_depth).T)
    taps = taps.reshape(grad.shape[:3] + (kh, kw, depth))
    padded = np.zeros(
        (
            input_shape[0],
            input_shape[1] + rows.pad_before + rows.pad_after,
            input_shape[2] + cols.pad_before + cols.pad_after,
            depth,
        ),
        grad.dtype,
    )
    for i in range(kh):
        for j in range(kw):
            padded[_tap_slice(i, j, strides, dilations, rows, cols)] += taps[:, :, :, i, j]
    return padded[
        :,
        rows.pad_before : rows.pad_before + input_shape[1],
        cols.pad_before : cols.pad_before + input_shape[2],
    ]


@register_kernel("Conv2D")
def _conv2d_kernel(op):
    _check_nhwc(
        op,
        "The Conv2D op currently only supports the NHWC tensor format on the CPU. The op was "
        f"given the format: {op.get_attr('data_format')}",
        errors.UnimplementedError,
    )
    strides, dilations, padding = _conv_attrs(op)

    def compute(ctx, x, w):
        return conv2d(x, w, strides, dilations, padding, conv_spectral.for_step(ctx))

    return compute


@register_kernel("Conv2DBackpropInput")
def _conv2d_backprop_input_kernel(op):
    _check_nhwc(op, "Conv2DCustomBackpropInputOp only supports NHWC.")
    strides, dilations, padding = _conv_attrs(op)

    def compute(ctx, input_sizes, w, grad):
        return conv2d_backprop_input(
            input_sizes, w, grad, strides, dilations, padding, conv_spectral.for_step(ctx)
        )

    return compute


@register_kernel("Conv2DBackpropFilter")
def _conv2d_backprop_filter_kernel(op):
    _check_nhwc(op, "Conv2DCustomBackpropFilterOp only supports NHWC.")
    strides, dilations, padding = _conv_attrs(op)

    def compute(ctx, x, filter_sizes, grad):
        return conv2d_backprop_filter(
            x, filter_sizes, grad, strides, dilations, padding, conv_spectral.for_step(ctx)
        )

    return compute


def _pool_attrs(op, what: str):
    _check_nhwc(op, f"Default {what} only supports NHWC on device type CPU")
    ksize, strides = op.get_attr("ksize"), op.get_attr("strides")
    if ksize[0] != 1 or ksize[3] != 1 or strides[0] != 1 or strides[3] != 1:
        raise errors.UnimplementedError(
            None, None, "Pooling is not yet supported on the batch nor depth dimension."
        )
    return tuple(ksize[1:3]), strides, op.get_attr("padding")


_ONES = (1, 1, 1, 1)


def _taps(window, strides, rows: Geometry, cols: Geometry):
    """The positions each window tap reads, in row-major order within the window."""
    for i in range(window[0]):
        for j in range(window[1]):
            yield _tap_slice(i, j, strides, _ONES, rows, cols)


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def max_pool(x: np.ndarray, window, strides, padding: str) -> np.ndarray:
    """The largest value of each window (padding never wins: it is ``-inf``).

    The windows are strided views of the padded input, one per tap: the
    maximum is taken tap by tap, each step over the whole output at once.
    """
    rows, cols = _geometries(x.shape, window, strides, _ONES, padding)
    padded = _pad(x, rows, cols, _lowest(x.dtype))
    taps = _taps(window, strides, rows, cols)
    out = padded[next(taps)].copy()
    for tap in taps:
        np.maximum(out, padded[tap], out=out)
    return out


def _window_counts(shape, window, strides, padding, rows: Geometry, cols: Geometry):
    """How many input (not padding) positions each window covers: ``[1, out_r, out_c, 1]``."""
    ones = _pad(np.ones((1, shape[1], shape[2], 1)), rows, cols)
    return _windows(ones, window, strides, _ONES, rows, cols).sum(axis=(4, 5))


def avg_pool(x: np.ndarray, window, strides, padding: str) -> np.ndarray:
    """The mean of each window over the positions inside the input (TF leaves padding out)."""
    rows, cols = _geometries(x.shape, window, strides, _ONES, padding)
    view = _windows(_pad(x, rows, cols), window, strides, _ONES, rows, cols)
    counts = _window_counts(x.shape, window, strides, padding, rows, cols)
    return (view.sum(axis=(4, 5)) / counts).astype(x.dtype)


def _unpad(padded: np.ndarray, shape, rows: Geometry, cols: Geometry) -> np.ndarray:
    return padded[
        :,
        rows.pad_before : rows.pad_before + shape[1],
        cols.pad_before : cols.pad_before + shape[2],
    ]


def _tiles(shape, window, strides, rows: Geometry, cols: Geometry) -> bool:
    """Whether the windows tile the input exactly: no padding, no overlap, no gap."""
    return (
        tuple(window) == tuple(strides[1:3])
        and rows.out * window[0] == shape[1]
        and cols.out * window[1] == shape[2]
    )


TILE_CHUNK_BYTES = 512 << 10
"""How much input `_max_pool_grad_of_tiles` works on at a time: its taps' strided
passes then read and write what the pass before left in the core's cache."""


def _max_pool_grad_of_tiles(x: np.ndarray, out: np.ndarray, grad: np.ndarray, window):
    """`max_pool_grad` where the windows tile the input: every position is written once.

    The input seen as ``[N, out_rows, kh, out_cols, kw, C]`` holds tap
    ``(i, j)`` of every window at ``[:, :, i, :, j]``, so each tap writes its
    share of the result in one pass, with no padding and no zeroing. The
    images go a few at a time (`TILE_CHUNK_BYTES`): each tap reads and writes
    every cache line of the chunk.
    """
    n, _, _, c = x.shape
    result = np.empty(x.shape, grad.dtype)
    step = max(1, TILE_CHUNK_BYTES // max(1, x[:1].nbytes))
    unclaimed = np.empty((min(step, n),) + out.shape[1:], np.bool_)
    wins = np.empty_like(unclaimed)
    for start in range(0, n, step):
        end = min(n, start + step)
        tiled = (end - start, out.shape[1], window[0], out.shape[2], window[1], c)
        x_taps = x[start:end].reshape(tiled)
        result_taps = result[start:end].reshape(tiled)
        chunk_out, chunk_grad = out[start:end], grad[start:end]
        chunk_unclaimed, chunk_wins = unclaimed[: end - start], wins[: end - start]
        chunk_unclaimed.fill(True)
        for i in range(window[0]):
            for j in range(window[1]):
                np.equal(x_taps[:, :, i, :, j], chunk_out, out=chunk_wins)
                chunk_wins &= chunk_unclaimed
                chunk_unclaimed ^= chunk_wins
                np.multiply(chunk_grad, chunk_wins, out=result_taps[:, :, i, :, j])
    return result


def _tile_chunks(x_shape, window, out_shape, itemsize: int):
    """Chunks of images of `TILE_CHUNK_BYTES` or so: ``(start, end, tiled shape)`` each."""
    n, c = x_shape[0], x_shape[3]
    step = max(1, TILE_CHUNK_BYTES // max(1, int(np.prod(x_shape[1:])) * itemsize))
    for start in range(0, n, step):
        end = min(n, start + step)
        yield start, end, (end - start, out_shape[1], window[0], out_shape[2], window[1], c)


def max_pool_of_tiles(x: np.ndarray, window) -> tuple[np.ndarray, np.ndarray]:
    """`max_pool` of windows that tile ``x``, and where each window's first maximum is.

    A few images at a time, while they are in the core's cache: the maximum
    tap by tap (the bits of `max_pool`), then, tap by tap in row-major order,
    the positions equal to it that no earlier tap claimed (as
    `max_pool_grad` finds them).

    Returns:
        The pool's output ``[N, out_rows, out_cols, C]`` and ``wins``, a bool
        ``[kh, kw, N, out_rows, out_cols, C]``: ``wins[i, j]`` marks the windows
        whose first maximum is tap ``(i, j)``.
    """
    n, h, w, c = x.shape
    out = np.empty((n, h // window[0], w // window[1], c), x.dtype)
    wins = np.empty(tuple(window) + out.shape, np.bool_)
    taps = [(i, j) for i in range(window[0]) for j in range(window[1])]
    claimed = None
    for start, end, tiled in _tile_chunks(x.shape, window, out.shape, x.itemsize):
        x_taps, chunk_out = x[start:end].reshape(tiled), out[start:end]
        np.copyto(chunk_out, x_taps[:, :, 0, :, 0])
        for i, j in taps[1:]:
            np.maximum(chunk_out, x_taps[:, :, i, :, j], out=chunk_out)
        if claimed is None:
            claimed = np.empty(chunk_out.shape, np.bool_)
        chunk_claimed = claimed[: end - start]
        for t, (i, j) in enumerate(taps):
            chunk_wins = wins[i, j, start:end]
            np.equal(x_taps[:, :, i, :, j], chunk_out, out=chunk_wins)
            if t == 0:
                np.copyto(chunk_claimed, chunk_wins)
                continue
            np.greater(chunk_wins, chunk_claimed, out=chunk_wins)  # equal and not claimed
            if t < len(taps) - 1:
                chunk_claimed |= chunk_wins
    return out, wins


def max_pool_grad_of_wins(wins: np.ndarray, grad: np.ndarray, x_shape) -> np.ndarray:
    """`max_pool_grad` of windows that tile the input, from `max_pool_of_tiles`'s ``wins``.

    Each tap's share of the result is the gradient times its mask, written in
    one pass a few images at a time (the bits of `max_pool_grad`).
    """
    result = np.empty(tuple(x_shape), grad.dtype)
    window = wins.shape[:2]
    for start, end, tiled in _tile_chunks(x_shape, window, grad.shape, grad.itemsize):
        result_taps, chunk_grad = result[start:end].reshape(tiled), grad[start:end]
        for i in range(window[0]):
            for j in range(window[1]):
                np.multiply(chunk_grad, wins[i, j, start:end], out=result_taps[:, :, i, :, j])
    return result


def max_pool_grad(
    x: np.ndarray, out: np.ndarray, grad: np.ndarray, window, strides, padding: str
) -> np.ndarray:
    """Routes each window's gradient to its first largest input (row-major order in the window).

    ``out`` is the pool's output: tap by tap, the positions equal to their
    window's maximum that no earlier tap claimed take the window's gradient.
    """
    rows, cols = _geometries(x.shape, window, strides, _ONES, padding)
    if _tiles(x.shape, window, strides, rows, cols):
        return _max_pool_grad_of_tiles(x, out, grad, window)
    padded_x = _pad(x, rows, cols, _lowest(x.dtype))
    padded = np.zeros(padded_x.shape, grad.dtype)
    unclaimed = np.ones(out.shape, np.bool_)
    wins = np.empty(out.shape, np.bool_)
    for tap in _taps(window, strides, rows, cols):
        np.equal(padded_x[tap], out, out=wins)
        wins &= unclaimed
        unclaimed &= ~wins
        padded[tap] += grad * wins
    return _unpad(padded, x.shape, rows, cols)


def avg_pool_grad(shape, grad: np.ndarray, window, strides, padding: str) -> np.ndarray:
    """Spreads each window's gradient evenly over the input positions it averaged."""
    shape = tuple(int(d) for d in shape)
    rows, cols = _geometries(shape, window, strides, _ONES, padding)
    share = grad / _window_counts(shape, window, strides, padding, rows, cols)
    padded = np.zeros(
        (shape[0], shape[1] + rows.pad_before + rows.pad_after)
        + (shape[2] + cols.pad_before + cols.pad_after, shape[3]),
        grad.dtype,
    )
    for tap in _taps(window, strides, rows, cols):
        padded[tap] += share
    return _unpad(padded, shape, rows, cols)


def _tiled(x, window, strides, padding: str) -> bool:
    """Whether ``x`` is a 4-D numeric array that the pool's windows tile exactly."""
    if type(x) is not np.ndarray or x.ndim != 4 or x.dtype.kind not in "fiu":
        return False
    rows = window_geometry(x.shape[1], window[0], strides[1], 1, padding)
    cols = window_geometry(x.shape[2], window[1], strides[2], 1, padding)
    return rows is not None and cols is not None and _tiles(x.shape, window, strides, rows, cols)


_WINS = "max_pool_wins"
"""The kind under which a step keeps a pool's ``(output, wins)`` (`max_pool_of_tiles`)."""


@register_kernel("MaxPool")
def _max_pool_kernel(op):
    """`max_pool`; windows that tile the input also find each window's first maximum.

    That is `max_pool_of_tiles`, while the input is in the cache: the step
    keeps the output and the masks in its `conv_spectral.Spectra`, where the
    step's ``MaxPoolGrad`` of the same input and output finds them. Only a
    pool whose output a ``MaxPoolGrad`` reads (when the kernel is made) does.
    """
    window, strides, padding = _pool_attrs(op, "MaxPoolingOp")
    marks = any(c.type == "MaxPoolGrad" for c in op.outputs[0].consumers())

    def compute(ctx, x):
        spectra = conv_spectral.for_step(ctx) if marks else None
        if spectra is None or not _tiled(x, window, strides, padding):
            return max_pool(x, window, strides, padding)
        out, wins = max_pool_of_tiles(x, window)
        spectra.get((_WINS, window), x, None, lambda: (out, wins))
        return out

    return compute


@register_kernel("AvgPool")
def _avg_pool_kernel(op):
    window, strides, padding = _pool_attrs(op, "AvgPoolingOp")

    def compute(ctx, x):
        return avg_pool(x, window, strides, padding)

    return compute


@register_kernel("MaxPoolGrad")
def _max_pool_grad_kernel(op):
    window, strides, padding = _pool_attrs(op, "MaxPoolingOp")

    def compute(ctx, orig_input, orig_output, grad):
        spectra = conv_spectral.for_step(ctx)
        kept = None if spectra is None else spectra.kept((_WINS, window), orig_input)
        if (
            kept is not None
            and kept[0] is orig_output
            and type(grad) is np.ndarray
            and grad.shape == orig_output.shape
        ):
            return max_pool_grad_of_wins(kept[1], grad, orig_input.shape)
        return max_pool_grad(orig_input, orig_output, grad, window, strides, padding)

    return compute


@register_kernel("AvgPoolGrad")
def _avg_pool_grad_kernel(op):
    window, strides, padding = _pool_attrs(op, "AvgPoolingOp")

    def compute(ctx, orig_input_shape, grad):
        return avg_pool_grad(orig_input_shape, grad, window, strides, padding)

    return compute
