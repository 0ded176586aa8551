"""Gradients of the neural-network ops (TF's ``nn_grad.py``).

Activations differentiate through a gradient op of their own
(``ReluGrad(gradients, features)`` ...), which is differentiable in turn.
The softmax cross entropies reuse the backprop their kernel already computed
(the op's second output).

The ops are built in `minitf.ops.nn.nn_ops`, their kernels in
`minitf.ops.nn.nn_kernels`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import ops, tensor_util
from minitf.framework.op_registry import RegisterGradient
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.nn import lrn_ops, nn_ops
from minitf.ops.op_def_library import create_op


def _activation_grad(op_type: str, gradients, features, **attrs) -> ops.Tensor:
    """An activation's gradient op ``XxxGrad(gradients, features)``."""
    with ops.name_scope(None, op_type, [gradients, features]) as scope:
        dtype = gradients.dtype.base_dtype
        shape = gradients.get_shape().merge_with(features.get_shape())
        op = create_op(
            op_type, [gradients, features], [dtype], scope, {"T": dtype, **attrs}, [shape]
        )
    return op.outputs[0]


@RegisterGradient("Relu")
def _relu_grad(op, grad):
    return _activation_grad("ReluGrad", grad, op.outputs[0])


@RegisterGradient("ReluGrad")
def _relu_grad_grad(op, grad):
    x = op.inputs[1]
    return _activation_grad("ReluGrad", grad, x), array_ops.zeros_like(x)


@RegisterGradient("Relu6")
def _relu6_grad(op, grad):
    return _activation_grad("Relu6Grad", grad, op.outputs[0])


@RegisterGradient("Relu6Grad")
def _relu6_grad_grad(op, grad):
    x = op.inputs[1]
    return _activation_grad("Relu6Grad", grad, x), array_ops.zeros_like(x)


@RegisterGradient("Elu")
def _elu_grad(op, grad):
    return _activation_grad("EluGrad", grad, op.outputs[0])


@RegisterGradient("EluGrad")
def _elu_grad_grad(op, grad):
    # EluGrad(g, y) = g * (y + 1) where y < 0, else g: linear in g, slope g in y.
    gradients, outputs = op.inputs
    return (
        _activation_grad("EluGrad", grad, outputs),
        array_ops.where(outputs < 0, grad * gradients, array_ops.zeros_like(outputs)),
    )


@RegisterGradient("LeakyRelu")
def _leaky_relu_grad(op, grad):
    alpha = op.get_attr("alpha")
    return _activation_grad("LeakyReluGrad", grad, op.inputs[0], alpha=alpha)


@RegisterGradient("LeakyReluGrad")
def _leaky_relu_grad_grad(op, grad):
    x = op.inputs[1]
    alpha = op.get_attr("alpha")
    return _activation_grad("LeakyReluGrad", grad, x, alpha=alpha), array_ops.zeros_like(x)


@RegisterGradient("Softplus")
def _softplus_grad(op, grad):
    return _activation_grad("SoftplusGrad", grad, op.inputs[0])


@RegisterGradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    # SoftplusGrad(g, x) = g * sigmoid(x); d sigmoid / dx = 1 / (exp(-x) + 2 + exp(x)).
    gradients, x = op.inputs
    ddy = _activation_grad("SoftplusGrad", grad, x)
    d2x = grad * gradients / (math_ops.exp(-x) + 2.0 + math_ops.exp(x))
    return ddy, d2x


@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    # d softmax: (grad - sum(grad * softmax)) * softmax, along the last axis.
    softmax_out = op.outputs[0]
    sum_channels = math_ops.reduce_sum(grad * softmax_out, -1, keepdims=True)
    return (grad - sum_channels) * softmax_out


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    softmax_out = math_ops.exp(op.outputs[0])
    return grad - math_ops.reduce_sum(grad, -1, keepdims=True) * softmax_out


def _is_zero(grad) -> bool:
    """True if ``grad`` is known to be all zeros (TF's ``IsZero`` in nn_grad.py)."""
    if grad is None:
        return True
    if grad.op.type in ("ZerosLike", "Zeros"):
        return True
    value = tensor_util.constant_value(grad)
    return value is not None and bool(np.all(value == 0))


def _broadcast_mul(vec: ops.Tensor, mat: ops.Tensor) -> ops.Tensor:
    """``vec[:, None] * mat``."""
    return array_ops.expand_dims(vec, -1) * mat


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad_loss, grad_grad):
    logits = op.inputs[0]
    grad = _broadcast_mul(grad_loss, op.outputs[1])
    if not _is_zero(grad_grad):
        # The backprop output is softmax(logits) - labels: its derivative is softmax's.
        probs = nn_ops.softmax(logits)
        dot = math_ops.reduce_sum(grad_grad * probs, 1, keepdims=True)
        grad = grad + (grad_grad - dot) * probs
    return grad, _broadcast_mul(grad_loss, -nn_ops.log_softmax(logits))


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, grad_loss, grad_backprop):
    # TF does not differentiate the backprop output a second time (PreventGradient).
    return _broadcast_mul(grad_loss, op.outputs[1]), None


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return op.inputs[0] * grad


@RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    data_format = op.get_attr("data_format")
    with ops.name_scope(None, "BiasAddGrad", [grad]) as scope:
        dtype = grad.dtype.base_dtype
        static = op.inputs[1].get_shape()
        attrs = {"T": dtype, "data_format": data_format}
        bias_grad = create_op("BiasAddGrad", [grad], [dtype], scope, attrs, [static]).outputs[0]
    return grad, bias_grad


@RegisterGradient("Selu")
def _selu_grad(op, grad):
    return _activation_grad("SeluGrad", grad, op.outputs[0])


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad_values, grad_indices):
    # Each value's gradient goes back to the position it was taken from.
    x, indices = op.inputs[0], op.outputs[1]
    depth = array_ops.shape(x)[-1]
    spread = array_ops.one_hot(indices, depth, dtype=grad_values.dtype)
    return math_ops.reduce_sum(array_ops.expand_dims(grad_values, -1) * spread, -2), None


ops.NotDifferentiable("InTopKV2")


@RegisterGradient("LRN")
def _lrn_grad(op, grad):
    return lrn_ops.lrn_grad(
        grad,
        op.inputs[0],
        op.outputs[0],
        op.get_attr("depth_radius"),
        op.get_attr("bias"),
        op.get_attr("alpha"),
        op.get_attr("beta"),
    )
