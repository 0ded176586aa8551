"""``MaxPool`` and ``MaxPoolGrad`` of 2x2 windows that tile the input, as a tournament of pairs.

When the windows are 2x2 with strides 2 and tile the input exactly (no
padding, no overlap, no gap: even sizes, ``VALID`` or ``SAME``), the input
seen as ``[N, rows, 2, cols, 2, C]`` holds each window's four taps at
``[:, :, i, :, j]``. The pool is a tournament: the larger of the two top
taps (``top``), of the two bottom ones (``bottom``), then the larger of
those. Each of these is one numpy pass over a quarter of the input, where the
tap-by-tap way of `minitf.ops.nn.conv_kernels.max_pool` makes four.

The gradient goes to each window's first largest tap in row-major order, as
in TF's CPU kernel (``SpatialMaxPoolWithArgMaxHelper`` visits a window's
taps row by row and keeps the earliest maximum: a later tap takes over only
if it is strictly larger). The tournament gives that tap without comparing
each tap with the maximum: the top row has it when ``top >= bottom`` (ties
go to the earlier row), and within the row the right tap has it when it is
strictly larger than the left one. Four passes write the four taps' share,
where the tap-by-tap way makes sixteen.

``top`` and ``bottom`` are what the gradient needs of the forward pass: the
``MaxPool`` of a training step keeps them in the step's
`minitf.ops.nn.conv_spectral.Spectra` (under the input array, which it
holds), where the step's ``MaxPoolGrad`` of the same input finds them.

A NaN makes the comparisons false where TF's loop keeps its first tap:
inputs with a NaN go the tap-by-tap way, as before this path existed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

KIND = "max_pool_pairs"
"""The key of a step's kept `Pairs` in `minitf.ops.nn.conv_spectral.Spectra`."""

CHUNK_BYTES = 512 << 10
"""How much input `max_pool_grad` works on at a time: its passes then find what
the pass before wrote still in the core's cache."""


class Pairs(NamedTuple):
    """The larger tap of each window's top row, and of its bottom row: ``[N, rows, cols, C]``."""

    top: np.ndarray
    bottom: np.ndarray


def applies(x_shape, window, strides, rows_out: int, cols_out: int, dtype) -> bool:
    """Whether 2x2 windows with strides 2 tile an input of ``x_shape`` exactly, of a float dtype.

    Args:
        x_shape: The NHWC input's shape.
        window: The window's ``(rows, cols)``.
        strides: The op's strides (NHWC).
        rows_out: The number of window rows the op's padding gives.
        cols_out: The number of window columns.
        dtype: The input's dtype.
    """
    return (
        tuple(window) == (2, 2)
        and tuple(strides[1:3]) == (2, 2)
        and 2 * rows_out == x_shape[1]
        and 2 * cols_out == x_shape[2]
        and np.dtype(dtype).kind == "f"
    )


def _taps(x: np.ndarray) -> np.ndarray:
    """``x`` as ``[N, rows, 2, cols, 2, C]``: tap ``(i, j)`` at ``[..., i, :, j, :]``."""
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c)


def _empty(shape, dtype, into: np.ndarray | None) -> np.ndarray:
    return np.empty(shape, dtype) if into is None else into


def pairs(x: np.ndarray, top: np.ndarray | None = None, bottom: np.ndarray | None = None) -> Pairs:
    """The `Pairs` of ``x``, written into ``top`` and ``bottom`` when given.

    Args:
        x: The NHWC input (its windows tile it: `applies`).
        top: An array of the pool's output shape and ``x``'s dtype to write into, or None.
        bottom: Likewise.
    """
    taps = _taps(x)
    shape = taps.shape[:2] + taps.shape[3:4] + taps.shape[5:]
    top = np.maximum(taps[:, :, 0, :, 0], taps[:, :, 0, :, 1], out=_empty(shape, x.dtype, top))
    bottom = _empty(shape, x.dtype, bottom)
    np.maximum(taps[:, :, 1, :, 0], taps[:, :, 1, :, 1], out=bottom)
    return Pairs(top, bottom)


def has_nan(p: Pairs) -> bool:
    """Whether a window's taps hold a NaN (``np.maximum`` carries it into the pairs).

    A sum without NaN says there is none at the cost of a sum; one with NaN
    (a NaN, or infinities of both signs) is looked at element by element.
    """
    return any(np.isnan(np.sum(a)) and np.isnan(a).any() for a in p)


def max_pool(p: Pairs, out: np.ndarray | None = None) -> np.ndarray:
    """The pool's output from the input's `Pairs`: the larger of ``top`` and ``bottom``."""
    return np.maximum(p.top, p.bottom, out=out)


class _Scratch:
    """The arrays `max_pool_grad` computes in, for one chunk of images."""

    def __init__(self, shape, dtype):
        self.upper = np.empty(shape, np.bool_)
        self.right = np.empty(shape, np.bool_)
        self.grads = (np.empty(shape, dtype), np.empty(shape, dtype))

    def fits(self, shape, dtype) -> bool:
        """Whether these arrays are for chunks of this shape and dtype."""
        return self.upper.shape == shape and self.grads[0].dtype == dtype


def _chunk_grad(taps, result, p: Pairs, grad, scratch: _Scratch) -> None:
    """`max_pool_grad` of some images: ``taps`` and ``result`` as ``[n, rows, 2, cols, 2, C]``."""
    n = grad.shape[0]
    upper, right = scratch.upper[:n], scratch.right[:n]
    by_row = [g[:n] for g in scratch.grads]
    np.greater_equal(p.top, p.bottom, out=upper)  # the first maximum is in the top row
    np.multiply(grad, upper, out=by_row[0])
    np.multiply(grad, np.logical_not(upper, out=upper), out=by_row[1])
    for i in range(2):
        np.greater(taps[:, :, i, :, 1], taps[:, :, i, :, 0], out=right)
        np.multiply(by_row[i], right, out=result[:, :, i, :, 1])
        np.multiply(by_row[i], np.logical_not(right, out=right), out=result[:, :, i, :, 0])


def max_pool_grad(
    x: np.ndarray,
    p: Pairs,
    grad: np.ndarray,
    result: np.ndarray | None = None,
    scratch: list | None = None,
) -> np.ndarray:
    """Routes each window's gradient to its first largest tap in row-major order.

    Args:
        x: The pool's NHWC input (its windows tile it: `applies`; no NaN: `has_nan`).
        p: ``x``'s `Pairs`.
        grad: The gradient of the pool's output.
        result: An array of ``x``'s shape and ``grad``'s dtype to write into, or None.
        scratch: A one-element list where the kernel keeps its `_Scratch`
            between calls (None: new arrays).

    Returns:
        The gradient of ``x``: ``grad`` at each window's winning tap, zero at the others
        (``grad * 0``: an infinite gradient leaves NaN there, as ``grad * mask`` does).
    """
    result = _empty(x.shape, grad.dtype, result)
    taps, result_taps = _taps(x), _taps(result)
    step = max(1, CHUNK_BYTES // max(1, x[:1].nbytes))
    shape = (min(step, x.shape[0]),) + grad.shape[1:]
    kept = None if scratch is None else scratch[0]
    if kept is None or not kept.fits(shape, grad.dtype):
        kept = _Scratch(shape, grad.dtype)
        if scratch is not None:
            scratch[0] = kept
    for start in range(0, x.shape[0], step):
        end = start + step
        chunk = Pairs(p.top[start:end], p.bottom[start:end])
        _chunk_grad(taps[start:end], result_taps[start:end], chunk, grad[start:end], kept)
    return result
