"""Numpy kernels of the math ops, and the constant folders that reuse them.

One kernel per TF op type of `minitf.ops.math.math_ops`, `minitf.ops.math.math_unary`
and `minitf.ops.math.math_reductions` (and of the gradient helper ops of
`minitf.ops.math.math_grad`: ``SigmoidGrad``, ``SumToShape``, ...). Integer
division follows TF's C++ kernels, not numpy: it truncates towards zero and
fails on a zero divisor.

The constant folders let static shape inference see through small constant
arithmetic (``tf.shape(x)[0] * 2``): they run the op's own kernel on the
static values of its inputs.

Kernels with buffers: a kernel whose result has a size known from its inputs
may also offer ``compute.with_buffers``, a function that makes a compute
function of the same signature that writes its result into arrays it keeps
from one step to the next (`reusable`) instead of allocating a new one every
time, like TF's allocator handing a kernel the memory of a dead tensor. The
runtime's straight walks use it (`minitf.runtime.speedups.walks`); the result is
bit for bit the same, numpy's ``out=`` runs the same loops.
"""

from __future__ import annotations

from sys import getrefcount

import numpy as np

from minitf.framework import errors, ops, tensor_util
from minitf.framework.op_registry import get_kernel_def, register_compute, register_kernel
from minitf.ops.math import blas_threads
from minitf.ops.math.math_reductions import range_size_or_error

SMALL_RESULT = 1024
"""Results of fewer elements than this are not worth a buffer: numpy allocates
small arrays from a cache of its own, faster than a kernel can check that a
buffer is free (`reusable`)."""


def reusable(buffers: list, i: int, shape: tuple, dtype) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` for a kernel to write into: ``buffers[i]`` if free.

    TF's kernels reuse the memory of a tensor no one references any more (its
    ``RefCountIsOne`` check behind ``forward_input``); in Python the reference
    count tells the same. ``buffers`` belongs to one running step at a time, so
    a count of two — the list's reference and this call's argument — proves
    that the value the array held in an earlier step has gone: not returned
    to a caller, not stored in a variable, a queue or an accumulator, not
    waiting to be sent to another task, not viewed by another array. Anything
    else (the first step, a new shape, a value someone still holds) gets a
    new array, which takes the old one's place in ``buffers``.

    Args:
        buffers: The kernel's list of arrays (``None`` where it has none yet).
        i: Which of them.
        shape: The shape the result needs.
        dtype: Its numpy dtype.
    """
    if getrefcount(buffers[i]) == 2:
        buf = buffers[i]
        if buf.shape == shape and buf.dtype == dtype:
            return buf
    buf = buffers[i] = np.empty(shape, dtype)
    return buf


def _int_division_by_zero(op: ops.Operation) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(op.node_def, op, "Integer division by zero")


def _divides_by_zero(x, y) -> bool:
    """Whether an integer division of ``x`` by ``y`` would divide some element by zero.

    An empty result divides nothing: TF checks each element it computes, so
    ``floormod([], 0)`` is ``[]`` (the reduction indices of a scalar in ``_SumGrad``).
    """
    try:
        scalar = y.ndim == 0
    except AttributeError:  # a Python number
        scalar = True
    # A scalar's truth is np.all's answer; else the reduction np.all runs,
    # without its Python layers.
    has_zero = not y if scalar else not np.logical_and.reduce(y, None, bool)
    return has_zero and np.broadcast(x, y).size > 0


def _truncating_divide(x, y):
    """C++ integer division (rounds towards zero), which is what TF's integer kernels do."""
    q = np.floor_divide(x, y)
    return q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))


@register_kernel("RealDiv")
def _realdiv_kernel(op):
    if not op.get_attr("T").is_integer:
        compute = lambda ctx, x, y: np.true_divide(x, y)  # noqa: E731
        compute.with_buffers = _elementwise_with_buffers(np.true_divide, compute)
        return compute

    def compute(ctx, x, y):
        if _divides_by_zero(x, y):
            raise _int_division_by_zero(op)
        return _truncating_divide(x, y).astype(x.dtype, copy=False)

    return compute


@register_kernel("FloorDiv")
def _floordiv_kernel(op):
    if not op.get_attr("T").is_integer:
        # TF computes floor(x / y); numpy's floor_divide differs in the last bit.
        return lambda ctx, x, y: np.floor(np.true_divide(x, y))

    def compute(ctx, x, y):
        if _divides_by_zero(x, y):
            raise _int_division_by_zero(op)
        return x // y

    return compute


@register_kernel("FloorMod")
def _floormod_kernel(op):
    if not op.get_attr("T").is_integer:
        return lambda ctx, x, y: np.mod(x, y)

    def compute(ctx, x, y):
        if _divides_by_zero(x, y):
            raise _int_division_by_zero(op)
        return np.mod(x, y)

    return compute


def _register_binary_kernel(op_type: str, fn) -> None:
    register_compute(op_type)(lambda ctx, x, y: fn(x, y))


def _squared_difference(x, y):
    d = np.subtract(x, y)
    return d * np.conj(d) if np.iscomplexobj(d) else d * d


def _elementwise_with_buffers(ufunc, compute):
    """``with_buffers`` of a binary elementwise kernel: ``ufunc(x, y, out=...)``.

    The result has the shape of the larger input when the other broadcasts to
    it; anything else (scalars, mixed dtypes, two inputs that both broadcast)
    goes to ``compute``. A small result (`SMALL_RESULT`) is a new array of
    the ufunc's, which is what ``compute`` returns for two arrays of one dtype.
    """

    def with_buffers():
        buffers = [None]

        def compute_into(ctx, x, y):
            try:
                big = x if x.size >= y.size else y
                if big.ndim and (x.dtype is y.dtype or x.dtype == y.dtype):
                    if big.size < SMALL_RESULT:
                        return ufunc(x, y)
                    return ufunc(x, y, out=reusable(buffers, 0, big.shape, x.dtype))
            except (AttributeError, ValueError):  # not arrays; or the result is larger than both
                pass
            return compute(ctx, x, y)

        return compute_into

    return with_buffers


# The commonest binary ops use Python's operators directly: on numpy arrays
# they call the same ufuncs without the extra function-call layer, and they
# sit on the hot path of every small graph.
_ARITHMETIC = {
    "Add": (lambda ctx, x, y: x + y, np.add),
    "AddV2": (lambda ctx, x, y: x + y, np.add),
    "Sub": (lambda ctx, x, y: x - y, np.subtract),
    "Mul": (lambda ctx, x, y: x * y, np.multiply),
}
for _op_type, (_compute, _ufunc) in _ARITHMETIC.items():
    _compute.with_buffers = _elementwise_with_buffers(_ufunc, _compute)
    register_compute(_op_type)(_compute)

for _op_type, _compute in {
    "Equal": lambda ctx, x, y: x == y,
    "NotEqual": lambda ctx, x, y: x != y,
    "Less": lambda ctx, x, y: x < y,
    "LessEqual": lambda ctx, x, y: x <= y,
    "Greater": lambda ctx, x, y: x > y,
    "GreaterEqual": lambda ctx, x, y: x >= y,
}.items():
    register_compute(_op_type)(_compute)

for _op_type, _fn in {
    "Pow": np.power,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
    "SquaredDifference": _squared_difference,
    "LogicalAnd": np.logical_and,
    "LogicalOr": np.logical_or,
}.items():
    _register_binary_kernel(_op_type, _fn)


def _sigmoid(x):
    # exp(-log(1 + exp(-x))) keeps full relative precision in both tails.
    return np.exp(-np.logaddexp(0, -x))


for _op_type, _fn in {
    "Abs": np.abs,
    "Neg": np.negative,
    "Sign": np.sign,
    "Square": np.square,
    "Sqrt": np.sqrt,
    "Rsqrt": lambda x: np.reciprocal(np.sqrt(x)),
    "Exp": np.exp,
    "Log": np.log,
    "Log1p": np.log1p,
    "Reciprocal": np.reciprocal,
    "Sigmoid": _sigmoid,
    "Tanh": np.tanh,
    "Sin": np.sin,
    "Cos": np.cos,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Round": np.rint,
    "LogicalNot": np.logical_not,
}.items():
    register_compute(_op_type)(lambda ctx, x, _fn=_fn: _fn(x))


# The gradient helper ops of TF (``SigmoidGrad(y, dy)`` etc.) take the forward
# output ``y`` and the incoming gradient ``dy``.
for _op_type, _fn in {
    "SigmoidGrad": lambda y, dy: dy * y * (1 - y),
    "TanhGrad": lambda y, dy: dy * (1 - y * y),
    "SqrtGrad": lambda y, dy: dy * 0.5 / y,
    "RsqrtGrad": lambda y, dy: dy * -0.5 * y * y * y,
    "ReciprocalGrad": lambda y, dy: -dy * y * y,
}.items():
    _register_binary_kernel(_op_type, _fn)


@register_compute("AddN")
def _add_n_kernel(ctx, *values):
    total = values[0] + values[1]
    for v in values[2:]:
        total = total + v
    return total


@register_kernel("Cast")
def _cast_kernel(op):
    np_type = op.get_attr("DstT").as_numpy_dtype
    return lambda ctx, x: x.astype(np_type)


def _matmul_size_error(op, a, b) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        op.node_def,
        op,
        f"Matrix size-incompatible: In[0]: {list(np.shape(a))}, In[1]: {list(np.shape(b))}",
    )


@register_kernel("MatMul")
def _matmul_kernel(op):
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")

    def compute(ctx, a, b):
        try:
            return blas_threads.matmul(a.T if ta else a, b.T if tb else b)
        except ValueError:
            raise _matmul_size_error(op, a, b) from None

    dtype = np.dtype(op.get_attr("T").as_numpy_dtype)
    rows, cols = (1 if ta else 0), (0 if tb else 1)

    def with_buffers():
        buffers = [None]

        def compute_into(ctx, a, b):
            try:
                # dtype tests by identity first: numpy's dtypes are shared objects.
                if (
                    a.ndim == 2 == b.ndim
                    and (a.dtype is dtype or a.dtype == dtype)
                    and (b.dtype is dtype or b.dtype == dtype)
                ):
                    shape = (a.shape[rows], b.shape[cols])
                    out = (
                        None
                        if shape[0] * shape[1] < SMALL_RESULT
                        else reusable(buffers, 0, shape, dtype)
                    )
                    return blas_threads.matmul(a.T if ta else a, b.T if tb else b, out=out)
            except (AttributeError, ValueError):  # not arrays; or their sizes do not match
                pass
            return compute(ctx, a, b)

        return compute_into

    compute.with_buffers = with_buffers
    return compute


@register_kernel("BatchMatMulV2")
def _batch_matmul_kernel(op):
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")

    def compute(ctx, x, y):
        try:
            return blas_threads.matmul(
                np.swapaxes(x, -1, -2) if adj_x else x, np.swapaxes(y, -1, -2) if adj_y else y
            )
        except ValueError:
            raise _matmul_size_error(op, x, y) from None

    return compute


# Reductions call the ufunc's ``reduce`` with the arguments that numpy's
# ``np.sum``/``ndarray.sum`` (and the others) pass it in the end: the same
# reduction, without numpy's Python layers, which cost more than the work
# on small tensors. numpy takes negative axes as they are and rejects
# out-of-range or repeated ones (the executor turns its error into
# InvalidArgumentError).
_UFUNC_REDUCTIONS = {
    # op type: (ufunc, whether the reduction runs in the op's dtype ``T``)
    "Sum": (np.add, True),
    "Prod": (np.multiply, True),
    "Max": (np.maximum, False),
    "Min": (np.minimum, False),
}
_LOGICAL_REDUCTIONS = {"Any": np.logical_or, "All": np.logical_and}


def _static_axes(op: ops.Operation) -> tuple | None:
    """The reduction's axes if its input ``reduction_indices`` is a constant, else None."""
    const_axes = tensor_util.constant_value(op.inputs[1])
    return None if const_axes is None else _axes_tuple(const_axes)


def _axes_tuple(axes) -> tuple:
    return tuple(np.ravel(axes).tolist())


def _reduction_kernel(ufunc, dtype_of):
    """The kernel builder of a reduction by ``ufunc`` in the dtype ``dtype_of(op)``."""
    reduce = ufunc.reduce

    def builder(op):
        keep, dtype = op.get_attr("keep_dims"), dtype_of(op)
        fixed = _static_axes(op)
        if fixed is not None:
            return lambda ctx, x, axes: reduce(x, fixed, dtype, None, keep)
        return lambda ctx, x, axes: reduce(x, _axes_tuple(axes), dtype, None, keep)

    return builder


def _op_dtype(op: ops.Operation):
    return op.get_attr("T").as_numpy_dtype


for _op_type, (_ufunc, _typed) in _UFUNC_REDUCTIONS.items():
    register_kernel(_op_type)(_reduction_kernel(_ufunc, _op_dtype if _typed else lambda op: None))
for _op_type, _ufunc in _LOGICAL_REDUCTIONS.items():
    register_kernel(_op_type)(_reduction_kernel(_ufunc, lambda op: bool))


@register_kernel("Mean")
def _mean_kernel(op):
    keep, np_type = op.get_attr("keep_dims"), _op_dtype(op)
    is_integer = np.issubdtype(np_type, np.integer)
    fixed = _static_axes(op)
    add = np.add.reduce

    def compute(ctx, x, axes):
        axes = fixed if fixed is not None else _axes_tuple(axes)
        total = add(x, axes, np_type, None, keep)
        count = 1
        for a in axes:
            count *= x.shape[a]
        if not is_integer:
            # 0 / 0 is NaN, as in TF, for the mean of nothing.
            return total / np_type(count)
        return _truncating_divide(total, np_type(max(count, 1))).astype(np_type, copy=False)

    return compute


def _arg_reduce_kernel(np_fn):
    def builder(op):
        np_type = op.get_attr("output_type").as_numpy_dtype
        return lambda ctx, x, axis: np_fn(x, axis=int(axis)).astype(np_type)

    return builder


register_kernel("ArgMax")(_arg_reduce_kernel(np.argmax))
register_kernel("ArgMin")(_arg_reduce_kernel(np.argmin))


@register_kernel("Range")
def _range_kernel(op):
    np_type = op.get_attr("Tidx").as_numpy_dtype

    def compute(ctx, start, limit, delta):
        size, message = range_size_or_error(start.item(), limit.item(), delta.item())
        if message:
            raise errors.InvalidArgumentError(op.node_def, op, message)
        return start + np.arange(size, dtype=np_type) * delta

    return compute


@register_kernel("Cumsum")
def _cumsum_kernel(op):
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    np_type = op.get_attr("T").as_numpy_dtype

    def compute(ctx, x, axis):
        axis = int(axis)
        if reverse:
            x = np.flip(x, axis)
        out = np.cumsum(x, axis=axis, dtype=np_type)
        # An empty axis (the reduction indices of a scalar) has nothing to shift.
        if exclusive and out.shape[axis] > 0:
            out = np.roll(out, 1, axis)
            out[(slice(None),) * (axis % out.ndim) + (0,)] = 0
        return np.flip(out, axis) if reverse else out

    return compute


@register_kernel("SumToShape")
def _sum_to_shape_kernel(op):
    # The axes to sum depend only on the two shapes, which rarely change
    # between steps: remember them per shape pair.
    axes_for: dict[tuple, tuple] = {}

    def compute(ctx, grad, target_shape):
        if type(grad) is not np.ndarray:
            grad = np.asarray(grad)
        target = tuple(target_shape.tolist())
        key = (grad.shape, target)
        found = axes_for.get(key)
        if found is None:
            found = _summed_axes(grad.shape, target)
            if len(axes_for) < 64:
                axes_for[key] = found
        axes, kept_shape = found
        if not axes:
            return grad
        # np.sum's reduction, without its layers; the reshape only where the
        # summed array has not already the target's shape (leading axes).
        total = np.add.reduce(grad, axes, None, None, True)
        return total if kept_shape == target else total.reshape(target)

    return compute


def _summed_axes(shape: tuple, target: tuple) -> tuple[tuple, tuple]:
    """The axes that `SumToShape` sums to bring ``shape`` to ``target``, and the shape
    the sum keeping its dimensions has."""
    lead = len(shape) - len(target)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(target) if d == 1 and shape[i + lead] != 1
    )
    return axes, tuple(1 if i in axes else d for i, d in enumerate(shape))


@register_compute("BroadcastToShape")
def _broadcast_to_shape_kernel(ctx, value, shape):
    # A new array, not numpy's read-only broadcast view: callers may fetch and
    # modify it. The assignment (np.copyto's copy, of one dtype) raises
    # ValueError when the shapes do not broadcast.
    if type(value) is not np.ndarray:
        value = np.asarray(value)
    out = np.empty(tuple(shape.tolist()), dtype=value.dtype)
    if value.ndim > out.ndim:
        raise ValueError(f"cannot broadcast shape {value.shape} to {out.shape}")
    out[...] = value
    return out


_FOLD_MAX_ELEMENTS = 1000


def _fold_with_kernel(tensor: ops.Tensor):
    """Evaluates a small op whose inputs are all static, with its own kernel."""
    values = [tensor_util.constant_value(t) for t in tensor.op.inputs]
    if any(v is None or np.size(v) > _FOLD_MAX_ELEMENTS for v in values):
        return None
    try:
        compute = get_kernel_def(tensor.op.type).builder(tensor.op)
        return np.asarray(compute(None, *values))
    except (errors.OpError, ArithmeticError, ValueError, TypeError, IndexError):
        return None


for _op_type in (
    "Cast",
    "Range",
    "Add",
    "AddV2",
    "Sub",
    "Mul",
    "RealDiv",
    "FloorDiv",
    "FloorMod",
    "Maximum",
    "Minimum",
    "Neg",
    "Sum",
    "Prod",
):
    tensor_util.register_constant_folder(_op_type)(_fold_with_kernel)


@register_kernel("ClipByValue")
def _clip_by_value_kernel(op):
    """TF's ``ClipOp``: each bound is a scalar or has ``t``'s shape (no broadcasting)."""

    def compute(ctx, t, lo, hi):
        t = np.asarray(t)
        if (np.ndim(lo) and np.shape(lo) != t.shape) or (np.ndim(hi) and np.shape(hi) != t.shape):
            raise errors.InvalidArgumentError(
                op.node_def,
                op,
                "clip_value_min and clip_value_max must be either of the same shape as input, "
                f"or a scalar. input shape: {list(t.shape)} clip_value_min shape: "
                f"{list(np.shape(lo))} clip_value_max shape: {list(np.shape(hi))}",
            )
        return np.maximum(np.minimum(t, hi), lo).astype(t.dtype, copy=False)

    return compute
