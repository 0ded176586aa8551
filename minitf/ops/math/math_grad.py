"""Gradients of the math ops (TF's ``math_grad.py``).

Element-wise binary ops sum the incoming gradient back to each input's shape
over the broadcast axes (`_reduce_to_shape`, with the helper ops
``SumToShape`` and ``BroadcastToShape``). Reductions first give the gradient
back its reduced axes (`_reshape_to_kept_dims`) and then broadcast it over
them. ``Sqrt``, ``Sigmoid``, ``Tanh``, ... use TF's gradient helper ops
(``SqrtGrad(y, dy)`` ...), which are differentiable in turn.

The ops are built in `minitf.ops.math.math_ops` (and its siblings), their kernels
in `minitf.ops.math.math_kernels`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import ops, tensor_util
from minitf.framework.op_registry import NotDifferentiable, RegisterGradient
from minitf.ops.array import array_ops, constant_op
from minitf.ops.math import math_ops
from minitf.ops.op_def_library import FLOAT_OR_COMPLEX, binary_operands, create_tensor


def _shape_tensor(t: ops.Tensor) -> ops.Tensor:
    """The shape of ``t`` as an int32 tensor: a constant when it is statically known."""
    static = t.get_shape()
    if static.is_fully_defined():
        return constant_op.constant(np.array(static.as_list(), np.int32), name="Shape")
    return array_ops.shape(t)


def _reduce_to_shape(grad, target: ops.Tensor, other: ops.Tensor | None = None):
    """Sums ``grad`` over the axes along which ``target`` was broadcast.

    ``other`` (the op's other operand) is accepted for callers of the older
    signature; only ``target``'s shape matters.
    """
    del other
    if grad is None:
        return None
    if type(grad).__name__ == "IndexedSlices":
        grad = ops.convert_to_tensor(grad)
    target_shape = target.get_shape()
    if grad.get_shape().is_fully_defined() and grad.get_shape() == target_shape:
        return grad
    return _sum_to_shape(grad, _shape_tensor(target), target_shape)


def _sum_to_shape(grad, shape_tensor, static=None) -> ops.Tensor:
    with ops.name_scope(None, "SumToShape", [grad, shape_tensor]) as scope:
        if static is None:
            static = tensor_util.constant_value_as_shape(shape_tensor)
        return create_tensor(
            "SumToShape", [grad, shape_tensor], grad.dtype.base_dtype, scope, static
        )


def _broadcast_to_shape(value, shape_tensor, static=None) -> ops.Tensor:
    with ops.name_scope(None, "BroadcastToShape", [value, shape_tensor]) as scope:
        if static is None:
            static = tensor_util.constant_value_as_shape(shape_tensor)
        return create_tensor(
            "BroadcastToShape", [value, shape_tensor], value.dtype.base_dtype, scope, static
        )


@RegisterGradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [_broadcast_to_shape(grad, _shape_tensor(op.inputs[0])), None]


@RegisterGradient("BroadcastToShape")
def _broadcast_to_shape_grad(op, grad):
    return [_reduce_to_shape(grad, op.inputs[0]), None]


def _unary_grad_op(op_type: str, y: ops.Tensor, dy: ops.Tensor) -> ops.Tensor:
    with ops.name_scope(None, op_type, [y, dy]) as scope:
        y, dy = binary_operands(y, dy, op_type)
        return create_tensor(op_type, [y, dy], y.dtype.base_dtype, scope, y.get_shape())


@RegisterGradient("Add")
@RegisterGradient("AddV2")
def _add_grad(op, grad):
    x, y = op.inputs
    return [_reduce_to_shape(grad, x), _reduce_to_shape(grad, y)]


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs
    return [_reduce_to_shape(grad, x), _reduce_to_shape(math_ops.negative(grad), y)]


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [
        _reduce_to_shape(math_ops.multiply(grad, y), x),
        _reduce_to_shape(math_ops.multiply(x, grad), y),
    ]


@RegisterGradient("RealDiv")
def _realdiv_grad(op, grad):
    x, y = op.inputs
    grad_y = math_ops.multiply(grad, math_ops.realdiv(math_ops.realdiv(math_ops.negative(x), y), y))
    return [_reduce_to_shape(math_ops.realdiv(grad, y), x), _reduce_to_shape(grad_y, y)]


@RegisterGradient("FloorDiv")
def _floordiv_grad(op, grad):
    return [None, None]


@RegisterGradient("FloorMod")
def _floormod_grad(op, grad):
    x, y = op.inputs
    grad_y = math_ops.multiply(grad, math_ops.negative(math_ops.floor_div(x, y)))
    return [_reduce_to_shape(grad, x), _reduce_to_shape(grad_y, y)]


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    grad_x = math_ops.multiply(math_ops.multiply(grad, y), math_ops.pow(x, math_ops.subtract(y, 1)))
    # d(x**y)/dy = z * log(x), taken as 0 where x <= 0 (TF's choice).
    positive = math_ops.cast(math_ops.greater(x, 0), x.dtype)
    safe_x = math_ops.add(math_ops.multiply(x, positive), math_ops.subtract(1, positive))
    log_x = math_ops.multiply(math_ops.log(safe_x), positive)
    grad_y = math_ops.multiply(math_ops.multiply(grad, z), log_x)
    return [_reduce_to_shape(grad_x, x), _reduce_to_shape(grad_y, y)]


def _select_grad(op, grad, x_wins):
    """Routes ``grad`` to ``x`` where ``x_wins`` holds, to ``y`` elsewhere (ties go to x)."""
    x, y = op.inputs
    x_mask = math_ops.cast(x_wins, grad.dtype)
    grad_x = math_ops.multiply(grad, x_mask)
    grad_y = math_ops.multiply(grad, math_ops.subtract(1, x_mask))
    return [_reduce_to_shape(grad_x, x), _reduce_to_shape(grad_y, y)]


@RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    return _select_grad(op, grad, math_ops.greater_equal(*op.inputs))


@RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    return _select_grad(op, grad, math_ops.less_equal(*op.inputs))


@RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    grad_x = math_ops.multiply(math_ops.multiply(2.0, grad), math_ops.subtract(x, y))
    return [_reduce_to_shape(grad_x, x), _reduce_to_shape(math_ops.negative(grad_x), y)]


for _op_type in (
    "Equal",
    "NotEqual",
    "Less",
    "LessEqual",
    "Greater",
    "GreaterEqual",
    "LogicalAnd",
    "LogicalOr",
    "LogicalNot",
    "ArgMax",
    "ArgMin",
    "Any",
    "All",
    "Range",
):
    NotDifferentiable(_op_type)


@RegisterGradient("Abs")
def _abs_grad(op, grad):
    return math_ops.multiply(grad, math_ops.sign(op.inputs[0]))


@RegisterGradient("Neg")
def _neg_grad(op, grad):
    return math_ops.negative(grad)


@RegisterGradient("Sign")
def _sign_grad(op, grad):
    x = op.inputs[0]
    zero = ops.convert_to_tensor(0, dtype=x.dtype.base_dtype)
    return _broadcast_to_shape(zero, _shape_tensor(x), x.get_shape())


@RegisterGradient("Square")
def _square_grad(op, grad):
    return math_ops.multiply(grad, math_ops.multiply(op.inputs[0], 2.0))


@RegisterGradient("Sqrt")
def _sqrt_grad(op, grad):
    return _unary_grad_op("SqrtGrad", op.outputs[0], grad)


@RegisterGradient("Rsqrt")
def _rsqrt_grad(op, grad):
    return _unary_grad_op("RsqrtGrad", op.outputs[0], grad)


@RegisterGradient("Reciprocal")
def _reciprocal_grad(op, grad):
    return _unary_grad_op("ReciprocalGrad", op.outputs[0], grad)


@RegisterGradient("Sigmoid")
def _sigmoid_grad(op, grad):
    return _unary_grad_op("SigmoidGrad", op.outputs[0], grad)


@RegisterGradient("Tanh")
def _tanh_grad(op, grad):
    return _unary_grad_op("TanhGrad", op.outputs[0], grad)


@RegisterGradient("Exp")
def _exp_grad(op, grad):
    return math_ops.multiply(grad, op.outputs[0])


@RegisterGradient("Log")
def _log_grad(op, grad):
    return math_ops.multiply(grad, math_ops.reciprocal(op.inputs[0]))


@RegisterGradient("Log1p")
def _log1p_grad(op, grad):
    return math_ops.multiply(grad, math_ops.reciprocal(math_ops.add(1, op.inputs[0])))


@RegisterGradient("Sin")
def _sin_grad(op, grad):
    return math_ops.multiply(grad, math_ops.cos(op.inputs[0]))


@RegisterGradient("Cos")
def _cos_grad(op, grad):
    return math_ops.multiply(math_ops.negative(grad), math_ops.sin(op.inputs[0]))


@RegisterGradient("Floor")
@RegisterGradient("Ceil")
@RegisterGradient("Round")
def _piecewise_constant_grad(op, grad):
    return [None]


# Second derivatives: the helper ops are differentiable in both inputs (y, dy).


@RegisterGradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    y, dy = op.inputs
    g_dy = math_ops.multiply(grad, dy)
    return [
        math_ops.subtract(g_dy, math_ops.multiply(math_ops.multiply(2.0, g_dy), y)),
        _unary_grad_op("SigmoidGrad", y, grad),
    ]


@RegisterGradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    y, dy = op.inputs
    return [
        math_ops.multiply(math_ops.multiply(grad, -2.0), math_ops.multiply(dy, y)),
        _unary_grad_op("TanhGrad", y, grad),
    ]


@RegisterGradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    y = op.inputs[0]
    g_over_y = math_ops.realdiv(grad, y)
    return [
        math_ops.multiply(math_ops.negative(g_over_y), op.outputs[0]),
        math_ops.multiply(0.5, g_over_y),
    ]


@RegisterGradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    y, dy = op.inputs
    grad_y = math_ops.multiply(
        math_ops.multiply(math_ops.multiply(-1.5, grad), dy), math_ops.square(y)
    )
    return [grad_y, _unary_grad_op("RsqrtGrad", y, grad)]


@RegisterGradient("ReciprocalGrad")
def _reciprocal_grad_grad(op, grad):
    y, dy = op.inputs
    grad_y = math_ops.multiply(math_ops.multiply(grad, -2.0), math_ops.multiply(dy, y))
    return [grad_y, _unary_grad_op("ReciprocalGrad", y, grad)]


@RegisterGradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    src = op.inputs[0].dtype.base_dtype
    dst = op.outputs[0].dtype.base_dtype
    if src in FLOAT_OR_COMPLEX and dst in FLOAT_OR_COMPLEX:
        return math_ops.cast(grad, src)
    return None


@RegisterGradient("Cumsum")
def _cumsum_grad(op, grad):
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    return [math_ops.cumsum(grad, op.inputs[1], exclusive=exclusive, reverse=not reverse), None]


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return [
            math_ops.matmul(grad, b, transpose_b=True),
            math_ops.matmul(a, grad, transpose_a=True),
        ]
    if not ta and tb:
        return [math_ops.matmul(grad, b), math_ops.matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [math_ops.matmul(b, grad, transpose_b=True), math_ops.matmul(a, grad)]
    return [
        math_ops.matmul(b, grad, transpose_a=True, transpose_b=True),
        math_ops.matmul(grad, a, transpose_a=True, transpose_b=True),
    ]


@RegisterGradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):
    x, y = op.inputs
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not adj_x and not adj_y:
        grad_x, grad_y = (
            math_ops.matmul(grad, y, adjoint_b=True),
            math_ops.matmul(x, grad, adjoint_a=True),
        )
    elif not adj_x:
        grad_x, grad_y = math_ops.matmul(grad, y), math_ops.matmul(grad, x, adjoint_a=True)
    elif not adj_y:
        grad_x, grad_y = math_ops.matmul(y, grad, adjoint_b=True), math_ops.matmul(x, grad)
    else:
        grad_x = math_ops.matmul(y, grad, adjoint_a=True, adjoint_b=True)
        grad_y = math_ops.matmul(grad, x, adjoint_a=True, adjoint_b=True)
    # Batch dimensions broadcast like element-wise operands: sum them back.
    return [_reduce_to_shape(grad_x, x), _reduce_to_shape(grad_y, y)]


def _kept_dims_shape(op: ops.Operation) -> ops.Tensor:
    """The shape of ``op``'s output had it kept its reduced axes (as a tensor)."""
    x, axes = op.inputs
    rank = x.get_shape().ndims
    axes_value = tensor_util.constant_value(axes)
    if rank is None or axes_value is None:
        return math_ops.reduced_shape(array_ops.shape(x), axes)
    reduced = {a % rank for a in np.ravel(axes_value).tolist()} if rank else set()
    is_reduced = np.array([i in reduced for i in range(rank)], dtype=bool)
    dims = x.get_shape().as_list()
    if all(d is not None for i, d in enumerate(dims) if not is_reduced[i]):
        kept = [1 if is_reduced[i] else d for i, d in enumerate(dims)]
        return constant_op.constant(np.array(kept, dtype=np.int32), name="kept_shape")
    keep = constant_op.constant((~is_reduced).astype(np.int32))
    return math_ops.add(
        math_ops.multiply(array_ops.shape(x), keep),
        constant_op.constant(is_reduced.astype(np.int32)),
    )


def _reshape_to_kept_dims(op: ops.Operation, value: ops.Tensor) -> ops.Tensor:
    """``value`` (shaped like ``op``'s output) reshaped to keep the reduced axes as 1s."""
    if op.get_attr("keep_dims"):
        return value
    return array_ops.reshape(value, _kept_dims_shape(op))


@RegisterGradient("Sum")
def _sum_grad(op, grad):
    x = op.inputs[0]
    kept = _reshape_to_kept_dims(op, grad)
    return [_broadcast_to_shape(kept, _shape_tensor(x), x.get_shape()), None]


@RegisterGradient("Mean")
def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    sum_grad = _sum_grad(op, grad)[0]
    in_size, out_size = x.get_shape().num_elements(), y.get_shape().num_elements()
    if in_size is not None and out_size is not None:
        factor = in_size // max(out_size, 1)
        return [
            math_ops.realdiv(sum_grad, ops.convert_to_tensor(factor, dtype=grad.dtype.base_dtype)),
            None,
        ]
    in_size = math_ops.reduce_prod(array_ops.shape(x))
    out_size = math_ops.maximum(math_ops.reduce_prod(array_ops.shape(y)), 1)
    return [
        math_ops.realdiv(
            sum_grad, math_ops.cast(math_ops.floor_div(in_size, out_size), grad.dtype)
        ),
        None,
    ]


def _min_or_max_grad(op, grad):
    # Ties share the gradient equally, as in TF's math_grad._MinOrMaxGrad.
    x, axes = op.inputs
    y = _reshape_to_kept_dims(op, op.outputs[0])
    grad = _reshape_to_kept_dims(op, grad)
    indicators = math_ops.cast(math_ops.equal(y, x), grad.dtype)
    num_selected = math_ops.reduce_sum(indicators, axes, keepdims=True)
    return [math_ops.multiply(math_ops.realdiv(indicators, num_selected), grad), None]


RegisterGradient("Max")(_min_or_max_grad)
RegisterGradient("Min")(_min_or_max_grad)


@RegisterGradient("Prod")
def _prod_grad(op, grad):
    # d prod / d x_i is the product of the other elements. Zeros are handled
    # explicitly instead of dividing by them: with no zero in the slice it is
    # prod / x_i, with exactly one zero it is nonzero only at that zero, with
    # two or more it is 0 everywhere.
    x, axes = op.inputs
    grad = _reshape_to_kept_dims(op, grad)
    is_zero = math_ops.cast(math_ops.equal(x, 0), x.dtype)
    zeros_as_ones = math_ops.add(x, is_zero)
    prod_nonzero = math_ops.reduce_prod(zeros_as_ones, axes, keepdims=True)
    num_zeros = math_ops.reduce_sum(is_zero, axes, keepdims=True)
    no_zero = math_ops.cast(math_ops.equal(num_zeros, 0), x.dtype)
    one_zero = math_ops.cast(math_ops.equal(num_zeros, 1), x.dtype)
    at_nonzero = math_ops.multiply(
        math_ops.multiply(math_ops.subtract(1, is_zero), no_zero),
        math_ops.realdiv(prod_nonzero, zeros_as_ones),
    )
    at_zero = math_ops.multiply(math_ops.multiply(is_zero, one_zero), prod_nonzero)
    return [math_ops.multiply(grad, math_ops.add(at_nonzero, at_zero)), None]


@RegisterGradient("ClipByValue")
def _clip_by_value_grad(op, grad):
    """TF's gradient: ``t`` gets ``grad`` where it was not clipped, each bound where it won."""
    x, y, z = op.inputs
    zeros = array_ops.zeros_like(grad)
    xymask = math_ops.less(x, y)
    xzmask = math_ops.greater(x, z)
    xgrad = array_ops.where(math_ops.logical_or(xymask, xzmask), zeros, grad)
    ygrad = array_ops.where(xymask, grad, zeros)
    zgrad = array_ops.where(xzmask, grad, zeros)
    return xgrad, _reduce_to_shape(ygrad, y), _reduce_to_shape(zgrad, z)
