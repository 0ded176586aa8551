"""Numpy kernels of the neural-network ops of `minitf.ops.nn.nn_ops` and their gradient ops.

The softmax family works on the last axis and shifts the logits by their
maximum first, so that ``exp`` cannot overflow. Gradients are in
`minitf.ops.nn.nn_grad`.

`fused_matmul` is the kernel of a ``MatMul`` followed by its bias, its
activation or its activation's gradient (TF's ``_FusedMatMul``): the runtime
runs it in place of such a chain when nothing else reads the values in
between (`minitf.runtime.speedups.walks`); the graph keeps its ops.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import register_compute, register_kernel
from minitf.ops.math import blas_threads
from minitf.ops.math.math_kernels import reusable
from minitf.ops.nn import conv_spectral


def _is_float_array(x) -> bool:
    return type(x) is np.ndarray and x.ndim > 0 and x.dtype.kind == "f"


ZERO_BLOCK = 4096
"""How many elements `_zeros` gives at least (when ``like`` has as many), in its trailing axes."""


def _trailing(shape: tuple) -> tuple:
    """The shortest run of ``shape``'s trailing axes with `ZERO_BLOCK` elements or more (or all)."""
    size = 1
    for start in range(len(shape) - 1, -1, -1):
        size *= shape[start]
        if size >= ZERO_BLOCK:
            return shape[start:]
    return shape


def _zeros(buffers: list, i: int, like: np.ndarray) -> np.ndarray:
    """Zeros that broadcast against ``like`` (its trailing axes), kept in ``buffers[i]``; only read.

    ``np.maximum(x, zeros)`` gives the bits of ``np.maximum(x, 0)`` (NaN and
    signed zeros included) several times faster: numpy's loop over two arrays
    is vectorised, its loop over an array and a scalar is not. A block of
    `ZERO_BLOCK` zeros or more repeated along the leading axes is still two
    arrays to that loop, and stays in the core's cache where zeros the size of
    ``like`` would be read from memory.
    """
    shape = _trailing(like.shape)
    zeros = buffers[i]
    if zeros is None or zeros.shape != shape or zeros.dtype != like.dtype:
        zeros = buffers[i] = np.zeros(shape, like.dtype)
    return zeros


def _relu_into(x: np.ndarray, out: np.ndarray, buffers: list) -> np.ndarray:
    return np.maximum(x, _zeros(buffers, 1, x), out=out)


def _relu_grad_into(gradients, features, out: np.ndarray, buffers: list) -> np.ndarray:
    mask = buffers[2]  # only ever read by the multiply below
    if mask is None or mask.shape != features.shape:
        mask = buffers[2] = np.empty(features.shape, np.bool_)
    np.greater(features, _zeros(buffers, 1, features), out=mask)
    return np.multiply(gradients, mask, out=out)


RELU_MASK = "relu_mask"
"""The kind under which a step keeps a ``Relu``'s ``output > 0`` for its ``ReluGrad``
(`minitf.ops.nn.conv_spectral.Spectra`)."""
MASK_CHUNK = 1 << 16
"""How many elements `_relu_and_mask` does at a time (its output is still in the cache
when the comparison reads it)."""


def _relu_and_mask(x: np.ndarray, out: np.ndarray, mask: np.ndarray, zeros: np.ndarray):
    """``out = max(x, 0)`` and ``mask = out > 0``, `MASK_CHUNK` elements at a time (contiguous).

    ``zeros``: `MASK_CHUNK` zeros of ``x``'s dtype.
    """
    flat_x, flat_out, flat_mask = x.reshape(-1), out.reshape(-1), mask.reshape(-1)
    for start in range(0, flat_x.size, MASK_CHUNK):
        end = min(start + MASK_CHUNK, flat_x.size)
        part, zero = flat_out[start:end], zeros[: end - start]
        np.maximum(flat_x[start:end], zero, out=part)
        np.greater(part, zero, out=flat_mask[start:end])


@register_kernel("Relu")
def _relu_kernel(op):
    """``max(x, 0)``; in a training step, also ``output > 0`` for the step's ``ReluGrad``.

    Only a ``Relu`` whose output a ``ReluGrad`` reads as its features (when
    the kernel is made) keeps the mask, computed a chunk at a time while the
    output is in the cache; the ``ReluGrad`` then multiplies by it instead of
    reading the features again.
    """
    marks = any(
        c.type == "ReluGrad" and c.inputs[1] is op.outputs[0] for c in op.outputs[0].consumers()
    )

    def compute(ctx, x):
        return np.maximum(x, 0)

    def with_buffers():
        buffers = [None, None, None, None]  # the result, zeros, the mask, a chunk of zeros

        def compute_into(ctx, x):
            if not _is_float_array(x):
                return np.maximum(x, 0)
            out = reusable(buffers, 0, x.shape, x.dtype)
            spectra = conv_spectral.for_step(ctx) if marks else None
            if spectra is None or not (x.flags.c_contiguous and x.size >= MASK_CHUNK):
                return _relu_into(x, out, buffers)
            mask = reusable(buffers, 2, x.shape, np.dtype(np.bool_))
            zeros = buffers[3]
            if zeros is None or zeros.dtype != x.dtype:
                zeros = buffers[3] = np.zeros(MASK_CHUNK, x.dtype)
            _relu_and_mask(x, out, mask, zeros)
            spectra.get(RELU_MASK, out, None, lambda: mask)
            return out

        return compute_into

    compute.with_buffers = with_buffers
    return compute


@register_compute("ReluGrad")
def _relu_grad_kernel(ctx, gradients, features):
    return gradients * (features > 0)


def _relu_grad_with_buffers():
    buffers = [None, None, None]  # the result, zeros, the mask

    def compute_into(ctx, gradients, features):
        if not (
            _is_float_array(gradients)
            and type(features) is np.ndarray
            and features.shape == gradients.shape
            and features.dtype == gradients.dtype
        ):
            return gradients * (features > 0)
        out = reusable(buffers, 0, gradients.shape, gradients.dtype)
        spectra = conv_spectral.for_step(ctx)
        mask = None if spectra is None else spectra.kept(RELU_MASK, features)
        if mask is not None:
            return np.multiply(gradients, mask, out=out)
        return _relu_grad_into(gradients, features, out, buffers)

    return compute_into


_relu_grad_kernel.with_buffers = _relu_grad_with_buffers


@register_compute("Relu6")
def _relu6_kernel(ctx, x):
    return np.clip(x, 0, 6)


@register_compute("Relu6Grad")
def _relu6_grad_kernel(ctx, gradients, features):
    return gradients * ((features > 0) & (features < 6))


@register_compute("Elu")
def _elu_kernel(ctx, x):
    return np.where(x < 0, np.expm1(np.minimum(x, 0)), x)


@register_compute("EluGrad")
def _elu_grad_kernel(ctx, gradients, outputs):
    return np.where(outputs < 0, gradients * (outputs + 1), gradients)


@register_kernel("LeakyRelu")
def _leaky_relu_kernel(op):
    alpha = np.asarray(op.get_attr("alpha"), dtype=op.get_attr("T").as_numpy_dtype)

    def compute(ctx, x):
        return np.where(x > 0, x, x * alpha)

    return compute


@register_kernel("LeakyReluGrad")
def _leaky_relu_grad_kernel(op):
    alpha = np.asarray(op.get_attr("alpha"), dtype=op.get_attr("T").as_numpy_dtype)

    def compute(ctx, gradients, features):
        return np.where(features > 0, gradients, gradients * alpha)

    return compute


@register_compute("Softplus")
def _softplus_kernel(ctx, x):
    return np.logaddexp(0, x)


@register_compute("SoftplusGrad")
def _softplus_grad_kernel(ctx, gradients, features):
    return gradients / (1 + np.exp(-features))


def _shifted_logits(x):
    return x - np.max(x, axis=-1, keepdims=True)


def _log_sum_exp(shifted):
    return np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


@register_compute("Softmax")
def _softmax_kernel(ctx, x):
    exps = np.exp(_shifted_logits(x))
    return exps / np.sum(exps, axis=-1, keepdims=True)


@register_compute("LogSoftmax")
def _log_softmax_kernel(ctx, x):
    shifted = _shifted_logits(x)
    return shifted - _log_sum_exp(shifted)


@register_compute("SoftmaxCrossEntropyWithLogits")
def _xent_kernel(ctx, logits, labels):
    if logits.shape != labels.shape:
        logits, labels = np.broadcast_arrays(logits, labels)
    shifted = _shifted_logits(logits)
    log_probs = shifted - _log_sum_exp(shifted)
    loss = -np.sum(labels * log_probs, axis=-1)
    return loss, np.exp(log_probs) - labels


_UNSIGNED = {np.dtype(np.int32): np.dtype(np.uint32), np.dtype(np.int64): np.dtype(np.uint64)}


@register_kernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_kernel(op):
    # As TF's kernel: shift by the row maximum, exponentiate once, and derive
    # both the loss (log of the row sum minus the label's shifted logit) and the
    # gradient (probabilities minus the one-hot labels) from those values.
    def check_labels(labels, num_classes: int) -> None:
        # One pass: as unsigned integers, negative labels are the largest.
        if labels.size and labels.view(_UNSIGNED[labels.dtype]).max() >= num_classes:
            bad = labels[(labels < 0) | (labels >= num_classes)]
            raise errors.InvalidArgumentError(
                op.node_def,
                op,
                f"Received a label value of {bad[0]} which is outside the valid range "
                f"of [0, {num_classes}).  Label values: {' '.join(str(v) for v in labels)}",
            )

    def compute(ctx, logits, labels):
        check_labels(labels, logits.shape[1])
        shifted = logits - logits.max(axis=-1, keepdims=True)
        exps = np.exp(shifted)
        sums = exps.sum(axis=-1, keepdims=True)
        rows = np.arange(labels.shape[0])
        loss = np.log(sums[:, 0]) - shifted[rows, labels]
        backprop = np.divide(exps, sums, out=exps)
        backprop[rows, labels] -= 1
        return loss, backprop

    def with_buffers():
        # The loss and the gradient (the step's values), then scratch that only
        # this kernel ever sees (`_XentScratch`). The same operations as
        # compute, written into them; the label's entry of each row is reached
        # by its index in the flat array, which numpy's take and put find
        # faster than a pair of index arrays.
        buffers = [None, None, None]

        def compute_into(ctx, logits, labels):
            if not (_is_float_array(logits) and logits.ndim == 2):
                return compute(ctx, logits, labels)
            check_labels(labels, logits.shape[1])
            n, dtype = logits.shape[0], logits.dtype
            scratch = buffers[2]
            if scratch is None or not scratch.fits(logits):
                scratch = buffers[2] = _XentScratch(logits)
            shifted, maxima, sums, picked, flat = scratch.arrays
            logits.max(axis=-1, keepdims=True, out=maxima)
            np.subtract(logits, maxima, out=shifted)
            backprop = np.exp(shifted, out=reusable(buffers, 1, logits.shape, dtype))
            backprop.sum(axis=-1, keepdims=True, out=sums)
            np.add(scratch.row_starts, labels, out=flat)
            loss = np.log(scratch.sums_column, out=reusable(buffers, 0, (n,), dtype))
            np.subtract(loss, shifted.take(flat, out=picked, mode="wrap"), out=loss)
            np.divide(backprop, sums, out=backprop)
            backprop.put(
                flat, np.subtract(backprop.take(flat, out=picked, mode="wrap"), 1, out=picked)
            )
            return loss, backprop

        return compute_into

    compute.with_buffers = with_buffers
    return compute


class _XentScratch:
    """The arrays `SparseSoftmaxCrossEntropyWithLogits` computes in, for one shape of logits.

    Attributes:
        arrays: The shifted logits, the row maxima and row sums (columns), the
            label's entry of each row, and that entry's flat index.
        row_starts: The flat index of each row's first entry.
        sums_column: The row sums as a vector.
    """

    def __init__(self, logits: np.ndarray):
        n, k = logits.shape
        column = np.empty((n, 1), logits.dtype)
        sums = column.copy()
        self.arrays = (np.empty_like(logits), column, sums, np.empty(n, logits.dtype))
        self.arrays += (np.empty(n, np.intp),)
        self.row_starts = np.arange(n, dtype=np.intp) * k
        self.sums_column = sums[:, 0]

    def fits(self, logits: np.ndarray) -> bool:
        """Whether these arrays are for logits of this shape and dtype."""
        shifted = self.arrays[0]
        return shifted.shape == logits.shape and shifted.dtype == logits.dtype


@register_compute("L2Loss")
def _l2_loss_kernel(ctx, x):
    return np.sum(np.square(x)) / 2


def _bias_view(bias, ndim: int, data_format: str):
    """``bias`` reshaped to broadcast along the channel axis."""
    if data_format == "NHWC":
        return bias
    return np.reshape(bias, (-1,) + (1,) * (ndim - 2))


def _add_by_rows(value: np.ndarray, bias: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``value + bias`` (channels last, ``value`` at least 3-D) into ``out``, a row at a time.

    numpy adds a broadcast bias a run of channels at a time, a short loop per
    pixel; the bias repeated along the second-to-last axis is one long row,
    added to each row of ``value``. The same additions, so the same bits.
    """
    if not (value.flags.c_contiguous and out.flags.c_contiguous):
        return np.add(value, bias, out=out)
    row = value.shape[-2] * value.shape[-1]
    shape = (value.size // row if row else 0, row)
    np.add(value.reshape(shape), np.tile(bias, value.shape[-2]), out=out.reshape(shape))
    return out


@register_kernel("BiasAdd")
def _bias_add_kernel(op):
    data_format = op.get_attr("data_format")

    def compute(ctx, value, bias):
        return value + _bias_view(bias, np.ndim(value), data_format)

    def with_buffers():
        buffers = [None]

        def compute_into(ctx, value, bias):
            if not (
                _is_float_array(value)
                and type(bias) is np.ndarray
                and bias.ndim == 1
                and bias.dtype == value.dtype
            ):
                return compute(ctx, value, bias)
            out = reusable(buffers, 0, value.shape, value.dtype)
            if data_format == "NHWC" and value.ndim > 2 and value.shape[-1] == bias.shape[0]:
                return _add_by_rows(value, bias, out)
            try:
                return np.add(value, _bias_view(bias, value.ndim, data_format), out=out)
            except ValueError:
                return compute(ctx, value, bias)  # TF's error for a bias of the wrong size

        return compute_into

    compute.with_buffers = with_buffers
    return compute


class FusionDeclined(Exception):
    """Raised by a fused kernel, before it has done anything, for inputs it does not handle.

    The runtime then runs the chain's ops one by one, each with its own kernel
    and its own errors.
    """


EPILOGUES = ("BiasAdd", "Relu", "ReluGrad")
"""What `fused_matmul` can do to a matrix product, in place: add a bias vector to
every row, apply ``Relu``, or multiply by ``Relu``'s gradient mask (``ReluGrad``
with the product as its incoming gradient)."""


def fused_matmul(
    transpose_a: bool, transpose_b: bool, dtype, epilogue: tuple[str, ...], copies: int = 1
) -> Callable[[], Callable]:
    """The kernel of a ``MatMul`` and the `EPILOGUES` that follow it, like TF's ``_FusedMatMul``.

    The product is written into a buffer the kernel keeps between steps
    (`minitf.ops.math.math_kernels.reusable`), then each epilogue step rewrites it
    in place with the ufunc the op's own kernel uses, so the bits are those
    of the ops run one by one. The kernel writes nothing but its own buffers,
    so inputs it cannot take as they are (another dtype, shapes that do not
    fit) make it raise `FusionDeclined` whatever step found them.

    Args:
        transpose_a: The ``MatMul``'s ``transpose_a``.
        transpose_b: The ``MatMul``'s ``transpose_b``.
        dtype: The ops' numpy dtype (a float type).
        epilogue: The steps after the product, in order (from `EPILOGUES`).
        copies: How many outputs the kernel returns: 1 returns the result, more a
            tuple with the result that many times (for the value slots that
            read it).

    Returns:
        A function that makes a compute function with buffers of its own:
        ``compute(ctx, a, b, *extras)`` where ``extras`` are the bias of each
        ``BiasAdd`` step and the features of each ``ReluGrad`` step, in order.

    Raises:
        ValueError: for an unknown epilogue step.
    """
    unknown = [step for step in epilogue if step not in EPILOGUES]
    if unknown:
        raise ValueError(f"fused_matmul cannot fuse {unknown}; it fuses {list(EPILOGUES)}")
    dtype = np.dtype(dtype)
    rows, cols = (1 if transpose_a else 0), (0 if transpose_b else 1)
    # Each step with the index of its extra input (-1 for Relu, which has none).
    steps, taken = [], 0
    for step in epilogue:
        steps.append((step, -1 if step == "Relu" else taken))
        taken += step != "Relu"

    def with_buffers():
        buffers = [None, None, None]  # the result, zeros, the ReluGrad mask

        def compute(ctx, a, b, *extras):
            try:
                # Another dtype would be cast into the buffer: not what the ops compute.
                for value in (a, b, *extras):
                    if value.dtype is not dtype and value.dtype != dtype:
                        raise FusionDeclined
                out = reusable(buffers, 0, (a.shape[rows], b.shape[cols]), dtype)
                blas_threads.matmul(a.T if transpose_a else a, b.T if transpose_b else b, out=out)
                for step, i in steps:
                    if step == "BiasAdd":
                        np.add(out, extras[i], out=out)
                    elif step == "Relu":
                        _relu_into(out, out, buffers)
                    else:
                        _relu_grad_into(out, extras[i], out, buffers)
            except Exception:  # noqa: BLE001 - the ops, run one by one, say what was wrong
                raise FusionDeclined from None
            return out if copies == 1 else (out,) * copies

        return compute

    return with_buffers


def _ones(ones: list, rows: int, dtype) -> np.ndarray:
    """A vector of ``rows`` ones of ``dtype``, kept in ``ones[0]``; only ever read."""
    vector = ones[0]
    if vector is None or vector.shape[0] != rows or vector.dtype != dtype:
        vector = ones[0] = np.ones(rows, dtype)
    return vector


@register_kernel("BiasAddGrad")
def _bias_add_grad_kernel(op):
    """Sums the gradient over every axis but the channel's.

    With channels last, a float32 or float64 gradient is a ``[rows, C]``
    matrix: its column sums are one product with a vector of ones (numpy's sum
    over the first axis of a matrix adds row after row, a short loop per row
    for few channels). The product adds ``1 * g`` exactly as the sum adds
    ``g``; NaN and infinities go through as in a sum.
    """
    data_format = op.get_attr("data_format")
    ones = [None]

    def compute(ctx, out_backprop):
        ndim = np.ndim(out_backprop)
        channel = 1 if data_format == "NCHW" else ndim - 1
        if (
            channel == ndim - 1
            and ndim > 1
            and type(out_backprop) is np.ndarray
            and out_backprop.dtype in (np.float32, np.float64)
            and out_backprop.flags.c_contiguous
            and out_backprop.size
        ):
            rows = out_backprop.reshape(-1, out_backprop.shape[-1])
            return blas_threads.matmul(_ones(ones, rows.shape[0], rows.dtype), rows)
        return np.sum(out_backprop, axis=tuple(i for i in range(ndim) if i != channel))

    return compute


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@register_compute("Selu")
def _selu_kernel(ctx, x):
    negative = SELU_SCALE * SELU_ALPHA * np.expm1(np.minimum(x, 0))
    return np.where(x < 0, negative, SELU_SCALE * x).astype(x.dtype, copy=False)


@register_compute("SeluGrad")
def _selu_grad_kernel(ctx, gradients, outputs):
    slope = np.where(outputs < 0, outputs + SELU_SCALE * SELU_ALPHA, SELU_SCALE)
    return (gradients * slope).astype(gradients.dtype, copy=False)


def top_k_indices(x: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` largest entries of each row, largest first, ties by index."""
    n = x.shape[-1]
    # A stable ascending sort of the reversed row, read backwards: largest
    # first, and among equal values the lowest index first; no negation, so
    # unsigned and the lowest integer sort right.
    order = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    return (n - 1 - order[..., :k]).astype(np.int32)


@register_compute("TopKV2")
def _top_k_kernel(ctx, x, k):
    k = int(k)
    if k < 0:
        raise errors.InvalidArgumentError(None, None, f"Need k >= 0, got {k}")
    if x.ndim < 1:
        raise errors.InvalidArgumentError(None, None, "input must be >= 1-D, got shape []")
    if x.shape[-1] < k:
        raise errors.InvalidArgumentError(
            None, None, f"input must have at least k columns. Had {x.shape[-1]}, needed {k}"
        )
    indices = top_k_indices(x, k)
    return np.take_along_axis(x, indices, axis=-1), indices


@register_compute("InTopKV2")
def _in_top_k_kernel(ctx, predictions, targets, k):
    if predictions.ndim != 2 or targets.shape != predictions.shape[:1]:
        raise errors.InvalidArgumentError(
            None,
            None,
            "First dimension of predictions "
            f"{predictions.shape[0] if predictions.ndim else ''} must match length of targets "
            f"{targets.shape[0] if targets.ndim else ''}",
        )
    classes = predictions.shape[1]
    valid = (targets >= 0) & (targets < classes)
    rows = np.arange(predictions.shape[0])
    target_values = predictions[rows, np.where(valid, targets, 0)]
    larger = np.sum(predictions > target_values[:, None], axis=1)
    finite = np.all(np.isfinite(predictions), axis=1)
    return valid & finite & (larger < int(k))


def _lrn_attrs(op):
    return (
        op.get_attr("depth_radius"),
        op.get_attr("bias"),
        op.get_attr("alpha"),
        op.get_attr("beta"),
    )


def _check_lrn_rank(what: str, *arrays: np.ndarray) -> None:
    if any(a.ndim != 4 for a in arrays):
        raise errors.InvalidArgumentError(None, None, f"{what} must be 4-dimensional")


def _depth_band(depth: int, depth_radius: int, dtype) -> np.ndarray:
    """The ``[depth, depth]`` 0/1 matrix of pairs of channels at most ``depth_radius`` apart.

    A product with it sums each channel's window, as TF's CPU kernel does.
    """
    index = np.arange(depth)
    return (np.abs(index[:, None] - index[None, :]) <= depth_radius).astype(dtype)


def _lrn_norm(x: np.ndarray, band: np.ndarray, bias: float, alpha: float) -> np.ndarray:
    """``bias + alpha * (sum of x**2 over each channel's window)``."""
    return bias + alpha * blas_threads.matmul((x * x).reshape(-1, x.shape[-1]), band).reshape(
        x.shape
    )


def _compute_type(x: np.ndarray):
    """float16 is computed in float32 and rounded once at the end."""
    return np.float32 if x.dtype == np.float16 else x.dtype


def lrn(x: np.ndarray, depth_radius: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    """Local response normalization of an NHWC array across its depth."""
    xf = x.astype(_compute_type(x), copy=False)
    norm = _lrn_norm(xf, _depth_band(x.shape[-1], depth_radius, xf.dtype), bias, alpha)
    return (xf * norm ** np.asarray(-beta, xf.dtype)).astype(x.dtype, copy=False)


def lrn_grad(
    grads: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    depth_radius: int,
    bias: float,
    alpha: float,
    beta: float,
) -> np.ndarray:
    """The gradient of `lrn` at ``x`` (output ``y``) for output gradients ``grads``.

    With ``N_j = bias + alpha * sum_{k near j} x_k**2`` and ``y_j = x_j * N_j**-beta``,
    ``dy_j/dx_k = [j == k] * N_j**-beta - 2 * alpha * beta * y_j * x_k / N_j``
    for ``k`` within ``depth_radius`` of ``j`` (TF's ``LRNGrad`` CPU kernel).
    """
    ct = _compute_type(x)
    g, xf, yf = (a.astype(ct, copy=False) for a in (grads, x, y))
    band = _depth_band(x.shape[-1], depth_radius, ct)
    norm = _lrn_norm(xf, band, bias, alpha)
    cross = (g * yf / norm * np.asarray(-2.0 * alpha * beta, ct)).reshape(-1, x.shape[-1])
    out = g * norm ** np.asarray(-beta, ct) + xf * blas_threads.matmul(cross, band).reshape(x.shape)
    return out.astype(x.dtype, copy=False)


@register_kernel("LRN")
def _lrn_kernel(op):
    attrs = _lrn_attrs(op)

    def compute(ctx, x):
        _check_lrn_rank("in", x)
        return lrn(x, *attrs)

    return compute


@register_kernel("LRNGrad")
def _lrn_grad_kernel(op):
    attrs = _lrn_attrs(op)

    def compute(ctx, grads, x, y):
        _check_lrn_rank("inputs", grads, x)
        if not grads.shape == x.shape == y.shape:
            raise errors.InvalidArgumentError(
                None, None, "input_grads, input_image, and out_image should have the same shape"
            )
        return lrn_grad(grads, x, y, *attrs)

    return compute
