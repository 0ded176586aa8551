"""Stride-1 convolutions and their gradients as products of spectra (the convolution theorem).

A stride-1 convolution of a zero-padded image with a ``k x k`` filter is the
circular correlation of the two, at a period ``P`` per axis long enough that
no window wraps around onto the image (`period`). In the discrete Fourier
basis a correlation is a product, so the ``kh * kw`` multiply-adds per output
and channel pair of im2col become one complex multiply-add per frequency, and
summing over the input channels is, frequency by frequency, one small matrix
product ``[N, C] @ [C, O]``.

The transforms are matrix products too (no FFT): the discrete Fourier
transform along rows and along columns, with the padding and the cut folded
into the matrices, so that each maps exactly the sizes it needs. Along
columns only ``P // 2 + 1`` frequencies are kept (the images are real; the
others are their conjugates), and the inverse weighs each kept frequency by
the number of frequencies it stands for. Each transform is a linear map, so
the gradients use the same matrices conjugated and transposed:

* forward: ``Y[f] = X[f] @ Wf[f]``, the output ``y = Re(out_h Y out_w^T)``;
* input gradient: ``dX[f] = G[f] @ conj(Wf[f])^T``, ``dx = Re(in_h^H dX in_w^*)``;
* filter gradient: ``dWf[f] = conj(X[f])^T @ G[f]``, ``dw = Re(f_h^H dWf f_w^*)``;

where ``G`` is the spectrum of the incoming gradient under the conjugated
output transform. The results equal im2col's up to rounding (float32: about
``1e-6`` of the largest output). `pays` decides when this is cheaper than
im2col: filters of 9 taps or more, and enough images and channels for the
products to outweigh the transforms and the spectra's memory.

In a training step the forward convolution and the filter gradient transform
the same input (``X``; the filter gradient takes its conjugate), and the two
gradients the same incoming gradient (``G``), the forward convolution and the
input gradient the same filter. A step's `Spectra` keeps each spectrum it
computes for the step's other ops of the same array (and im2col's patch
matrices, which the forward convolution and the filter gradient share).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import numpy as np

SPEED_UP = 1.15
"""How many times cheaper than im2col (by `_work`'s estimate) the spectral way must be to be taken.

With these costs, on one core of the AMD EPYC of the benchmarks, the
estimate's ratio followed the measured one within about 30 % for 5x5 and 3x3
filters (measured ratios 0.34 to 2.3); below 1.15 neither way won by much."""
MIN_ROWS = 8
"""Complex products of fewer images than this take as long as of this many (measured)."""
SPECTRUM_ELEMENT = 40
"""What writing and reading one complex element of a spectrum costs, in multiply-adds."""


class Transforms(NamedTuple):
    """The transform matrices of one geometry (``f``: the kept frequencies)."""

    in_h: np.ndarray  # [Ph, H]: padded input rows -> row frequencies
    in_w: np.ndarray  # [Kw, W]: padded input columns -> the kept column frequencies
    filter_h: np.ndarray  # [Ph, kh], conjugated: correlation, not convolution
    filter_w: np.ndarray  # [Kw, kw]
    out_h: np.ndarray  # [oh, Ph]: row frequencies -> output rows
    out_w: np.ndarray  # [ow, Kw]: kept column frequencies -> output columns (weighted)


def _dft(frequencies: int, size: int, positions: np.ndarray, sign: float) -> np.ndarray:
    """``exp(sign * 2 pi i * f * position / size)``, ``f < frequencies``: ``[F, positions]``."""
    f = np.arange(frequencies)[:, None]
    return np.exp(sign * 2j * np.pi * f * positions[None, :] / size)


def period(size: int, window: int, out: int, pad_before: int) -> int:
    """The shortest period ``P`` of one axis at which the circular correlation is the linear one.

    Output ``o`` reads padded positions ``o + t`` (``t`` a filter tap), below
    ``out + window - 1``; the input lies at ``[pad_before, pad_before + size)``,
    zeros around it. With period ``P`` the read at ``o + t`` also gets what
    lies at ``o + t - P`` and ``o + t + P``: nothing, when the first is always
    before the input (``P >= out + window - 1 - pad_before``) and the second
    always after it (``P >= pad_before + size``). The padding after the input
    then wraps onto the padding before it, so SAME padding costs
    ``max(before, after)``, not their sum (a 14-row input and a 5-row filter:
    16, not 18).
    """
    return max(out + window - 1 - pad_before, pad_before + size)


def _axis(size: int, window: int, out: int, pad_before: int, half: bool, dtype):
    """The matrices of one spatial axis: input, filter, output, in ``dtype`` (complex).

    ``half``: keep only the frequencies up to ``P // 2`` (the others are their conjugates).
    """
    padded = period(size, window, out, pad_before)
    kept = padded // 2 + 1 if half else padded
    into = _dft(kept, padded, np.arange(size) + pad_before, -1.0)
    filt = _dft(kept, padded, np.arange(window), 1.0)
    back = _dft(kept, padded, np.arange(out), 1.0).T / padded
    if kept < padded:  # a half spectrum: each kept frequency but 0 (and P/2) stands for two
        weights = np.full(kept, 2.0)
        weights[0] = 1.0
        if padded % 2 == 0:
            weights[-1] = 1.0
        back = back * weights
    return into.astype(dtype), filt.astype(dtype), back.astype(dtype)


@functools.lru_cache(maxsize=64)
def transforms(
    size: tuple[int, int],
    window: tuple[int, int],
    out: tuple[int, int],
    pad: tuple[int, int],
    dtype,
) -> Transforms:
    """The matrices for ``size`` inputs, ``window`` filters, ``out`` outputs, ``pad`` before.

    Each axis is transformed at its `period` (stride 1): what lies beyond the
    input's ends is zeros, which the matrices leave out.
    """
    complex_dtype = np.result_type(dtype, np.complex64)
    in_h, filter_h, out_h = _axis(size[0], window[0], out[0], pad[0], False, complex_dtype)
    in_w, filter_w, out_w = _axis(size[1], window[1], out[1], pad[1], True, complex_dtype)
    return Transforms(in_h, in_w, filter_h, filter_w, out_h, out_w)


def _spectrum(a: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``rows @ a[m, :, :, d] @ cols^T`` for a real ``[M, A, B, D]``: ``[Fh * Fw, M, D]``.

    Along columns the input is real: the product is two real ones (real and
    imaginary part), which make the complex ``[A, Fw, M * D]`` that the
    product along rows takes as one complex matrix.
    """
    m, a_size, b_size, d = a.shape
    by_row = np.ascontiguousarray(a.transpose(1, 2, 0, 3)).reshape(a_size, b_size, m * d)
    kept = cols.shape[0]
    parts = np.matmul(np.concatenate([cols.real, cols.imag]), by_row)  # [A, 2 Fw, M * D]
    by_cols = np.empty((a_size, kept, m * d), cols.dtype)
    by_cols.real, by_cols.imag = parts[:, :kept], parts[:, kept:]
    both = np.matmul(rows, by_cols.reshape(a_size, -1))  # [Fh, Fw * M * D]
    return both.reshape(-1, m, d)


def _image(spectrum: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The real ``[A, B, M, D]`` image of a ``[Fh * Fw, M, D]`` spectrum; ``rows`` is ``[A, Fh]``.

    Only the real part of the product along columns is wanted: two real products.
    """
    _, m, d = spectrum.shape
    by_rows = np.matmul(rows, spectrum.reshape(rows.shape[1], -1))
    by_rows = by_rows.reshape(rows.shape[0], cols.shape[1], m * d)  # [A, Fw, M * D]
    image = np.matmul(np.ascontiguousarray(cols.real), by_rows.real)
    image -= np.matmul(np.ascontiguousarray(cols.imag), by_rows.imag)
    return image.reshape(rows.shape[0], cols.shape[0], m, d)


class Spectra:
    """The spectra (and patch matrices) one step has computed, for its other convolutions.

    A spectrum is kept under the array it was computed from, the array
    itself held (so that its id is not another array's while the entry lives,
    and so that nothing that writes arrays in place only when no one else holds
    them, `minitf.ops.math.math_kernels.reusable` or a variable's update, writes
    into it), and the transforms it was computed with. The step's kernels get
    the step's own (`for_step`): it goes with the step, never to another one.
    Other forward kernels keep here what their gradient needs the same way:
    a ``MaxPool``'s marks of its maxima, a ``Relu``'s ``output > 0``.
    """

    def __init__(self):
        self._kept: dict[tuple[Hashable, int], tuple] = {}
        self._lock = threading.Lock()

    def get(
        self, kind: Hashable, array: np.ndarray, t: Transforms | None, make: Callable[[], Any]
    ) -> Any:
        """The ``kind`` spectrum of ``array`` under ``t``: the kept one, or ``make()``'s, kept.

        Args:
            kind: Which transform (``"input"``, ``"filter"``, ``"gradient"``; a
                tuple naming its geometry for a patch matrix).
            array: What is transformed.
            t: The geometry's transforms (None: ``kind`` says all).
            make: Computes the spectrum.
        """
        key = (kind, id(array))
        with self._lock:
            entry = self._kept.get(key)
        if entry is not None and entry[0] is array and entry[1] is t:
            return entry[2]
        spectrum = make()
        with self._lock:
            self._kept[key] = (array, t, spectrum)
            if len(self._kept) > KEPT_PER_STEP:  # a loop of many iterations: the oldest goes
                del self._kept[next(iter(self._kept))]
        return spectrum

    def kept(self, kind: Hashable, array: np.ndarray) -> Any:
        """What `get` keeps of ``array`` as ``kind`` (no transforms), or None; computes nothing."""
        with self._lock:
            entry = self._kept.get((kind, id(array)))
        return entry[2] if entry is not None and entry[0] is array else None


_SPECTRA = "__conv_spectra__"
KEPT_PER_STEP = 16
"""The most spectra and patch matrices a step keeps (a ``tf.while_loop`` of
convolutions would otherwise keep one per iteration until the step ends)."""


def for_step(ctx) -> Spectra | None:
    """The `Spectra` of the step ``ctx`` runs in (in its step container), or None if it has none.

    Args:
        ctx: A kernel's context (`minitf.runtime.core.step_context.StepContext`).
    """
    container = getattr(ctx, "step_container", None)
    if container is None:
        return None
    return container.lookup_or_create("", _SPECTRA, Spectra)


def _shared(spectra: Spectra | None, kind, array, t, make) -> np.ndarray:
    return make() if spectra is None else spectra.get(kind, array, t, make)


def _input_spectrum(x: np.ndarray, t: Transforms, spectra: Spectra | None) -> np.ndarray:
    """``X``: the input's spectrum, ``[F, N, C]``."""
    return _shared(spectra, "input", x, t, lambda: _spectrum(x, t.in_h, t.in_w))


def _to_nhwc(image: np.ndarray, dtype) -> np.ndarray:
    """``[A, B, N, D]`` as a contiguous ``[N, A, B, D]`` of ``dtype``."""
    return np.ascontiguousarray(image.transpose(2, 0, 1, 3), dtype)


def _filter_spectrum(w: np.ndarray, t: Transforms, spectra: Spectra | None) -> np.ndarray:
    """``Wf``: the filter's spectrum, ``[F, C, O]``."""
    kh, kw, depth, out_depth = w.shape

    def make():
        spectrum = _spectrum(w.reshape(1, kh, kw, depth * out_depth), t.filter_h, t.filter_w)
        return spectrum.reshape(-1, depth, out_depth)

    return _shared(spectra, "filter", w, t, make)


def _gradient_spectrum(grad: np.ndarray, t: Transforms, spectra: Spectra | None) -> np.ndarray:
    """``G``: the incoming gradient under the adjoint of the output transform, ``[F, N, O]``."""
    return _shared(
        spectra, "gradient", grad, t, lambda: _spectrum(grad, t.out_h.conj().T, t.out_w.conj().T)
    )


def conv2d(
    x: np.ndarray, w: np.ndarray, t: Transforms, spectra: Spectra | None = None
) -> np.ndarray:
    """The stride-1 convolution of NHWC ``x`` with ``w`` ``[kh, kw, C, O]``.

    ``spectra``: the step's (`for_step`), to keep ``x``'s spectrum for the filter gradient
    and ``w``'s for the input gradient.
    """
    products = np.matmul(_input_spectrum(x, t, spectra), _filter_spectrum(w, t, spectra))
    return _to_nhwc(_image(products, t.out_h, t.out_w), x.dtype)


def conv2d_backprop_input(
    input_shape, w: np.ndarray, grad: np.ndarray, t: Transforms, spectra: Spectra | None = None
) -> np.ndarray:
    """The gradient of `conv2d` with respect to its input, of shape ``input_shape``.

    ``spectra``: the step's (`for_step`), to share ``grad``'s spectrum with the filter
    gradient and ``w``'s with the forward convolution.
    """
    # w is real: its spectrum under the conjugated transforms is the conjugate of Wf.
    filters = np.conj(_filter_spectrum(w, t, spectra)).transpose(0, 2, 1)
    products = np.matmul(_gradient_spectrum(grad, t, spectra), filters)
    return _to_nhwc(_image(products, t.in_h.conj().T, t.in_w.conj().T), grad.dtype)


def conv2d_backprop_filter(
    x: np.ndarray, filter_shape, grad: np.ndarray, t: Transforms, spectra: Spectra | None = None
) -> np.ndarray:
    """The gradient of `conv2d` with respect to its filter, of shape ``filter_shape``.

    ``spectra``: the step's (`for_step`), to share ``x``'s spectrum with the forward
    convolution and ``grad``'s with the input gradient.
    """
    # x is real: its spectrum under the conjugated transforms is the conjugate of X.
    inputs = np.conj(_input_spectrum(x, t, spectra)).transpose(0, 2, 1)
    products = np.matmul(inputs, _gradient_spectrum(grad, t, spectra))
    image = _image(products, t.filter_h.conj().T, t.filter_w.conj().T)
    return image.reshape(tuple(int(d) for d in filter_shape)).astype(x.dtype, copy=False)


def _work(n: int, size, window, out, depth: int, out_depth: int) -> tuple[int, int]:
    """The cost of one convolution in real multiply-adds: im2col's, and the spectral way's.

    The spectral way's counts its products (those of fewer than `MIN_ROWS`
    images as if of `MIN_ROWS`: they run no faster, bound by reading the
    filters' spectra), its transforms, and `SPECTRUM_ELEMENT` for each
    element of the three spectra it writes and reads.
    """
    direct = n * out[0] * out[1] * window[0] * window[1] * depth * out_depth
    ph, pw = out[0] + window[0] - 1, out[1] + window[1] - 1
    frequencies = ph * (pw // 2 + 1)
    products = 4 * frequencies * max(n, MIN_ROWS) * depth * out_depth
    per_image = 4 * (pw // 2 + 1) * max(size[0], out[0]) * (max(size[1], out[1]) + ph)
    per_filter = 4 * (pw // 2 + 1) * window[0] * (window[1] + ph)
    transforms_ = per_image * n * (depth + out_depth) + per_filter * depth * out_depth
    elements = frequencies * (n * depth + depth * out_depth + n * out_depth)
    return direct, products + transforms_ + SPECTRUM_ELEMENT * elements


def finite(*arrays: np.ndarray) -> bool:
    """Whether every element of ``arrays`` is finite (their sums are: a NaN or an infinity
    anywhere makes a sum so, and so does an overflowing sum, which is then taken as not).

    A NaN or an infinity in an image spreads over its whole spectrum, and so
    over every output of the image, where im2col confines it to the outputs
    whose windows hold it: a convolution of such values, or one whose
    spectral result is not finite, goes through im2col.
    """
    return all(np.isfinite(np.sum(a)) for a in arrays)


def finite_inputs(spectra: Spectra | None, *arrays: np.ndarray) -> bool:
    """`finite` of ``arrays``, each array's answer kept in the step's ``spectra`` (or None).

    The forward convolution and the filter gradient check the same input, the
    two gradients the same incoming gradient, the forward convolution and the
    input gradient the same filter.
    """
    if spectra is None:
        return finite(*arrays)
    return all(spectra.get("finite", a, None, lambda a=a: finite(a)) for a in arrays)


def pays(x_shape, w_shape, strides, dilations, out, dtype) -> bool:
    """Whether a convolution goes the spectral way: stride 1, no dilation, float, and cheaper.

    Args:
        x_shape: The NHWC input's shape.
        w_shape: The filter's shape ``[kh, kw, C, O]``.
        strides: The op's strides (NHWC).
        dilations: The op's dilations (NHWC).
        out: The output's spatial size.
        dtype: The input's dtype: float32 and float64 only.
    """
    if tuple(strides[1:3]) != (1, 1) or tuple(dilations[1:3]) != (1, 1):
        return False
    if np.dtype(dtype) not in (np.float32, np.float64) or w_shape[0] * w_shape[1] < 9:
        return False
    direct, spectral = _work(
        x_shape[0], x_shape[1:3], w_shape[:2], out, int(w_shape[2]), int(w_shape[3])
    )
    return direct >= SPEED_UP * spectral
