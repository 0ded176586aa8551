"""Gradients of the convolution and pooling ops (TF's ``nn_grad.py``).

A convolution's gradients are ops of their own, ``Conv2DBackpropInput`` and
``Conv2DBackpropFilter``; each of those differentiates into the other two
(which is what makes ``conv2d_transpose`` trainable). ``MaxPool`` and
``AvgPool`` differentiate into ``MaxPoolGrad`` and ``AvgPoolGrad``.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.framework.op_registry import RegisterGradient
from minitf.ops.array import array_ops
from minitf.ops.nn import conv_ops
from minitf.ops.op_def_library import create_op


def _conv_kwargs(op) -> dict:
    return {
        "strides": op.get_attr("strides"),
        "padding": op.get_attr("padding"),
        "use_cudnn_on_gpu": op.get_attr("use_cudnn_on_gpu"),
        "data_format": op.get_attr("data_format"),
        "dilations": op.get_attr("dilations"),
    }


@RegisterGradient("Conv2D")
def _conv2d_grad(op, grad):
    x, w = op.inputs
    kwargs = _conv_kwargs(op)
    return (
        conv_ops.conv2d_backprop_input(array_ops.shape(x), w, grad, **kwargs),
        conv_ops.conv2d_backprop_filter(x, array_ops.shape(w), grad, **kwargs),
    )


@RegisterGradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op, grad):
    _, w, out_backprop = op.inputs
    kwargs = _conv_kwargs(op)
    return (
        None,
        conv_ops.conv2d_backprop_filter(grad, array_ops.shape(w), out_backprop, **kwargs),
        conv_ops.conv2d(grad, w, **kwargs),
    )


@RegisterGradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op, grad):
    x, _, out_backprop = op.inputs
    kwargs = _conv_kwargs(op)
    return (
        conv_ops.conv2d_backprop_input(array_ops.shape(x), grad, out_backprop, **kwargs),
        None,
        conv_ops.conv2d(x, grad, **kwargs),
    )


def _pool_attrs(op) -> dict:
    return {
        "T": op.get_attr("T"),
        "ksize": op.get_attr("ksize"),
        "strides": op.get_attr("strides"),
        "padding": op.get_attr("padding"),
        "data_format": op.get_attr("data_format"),
    }


def _pool_grad(op, op_type: str, inputs):
    x = op.inputs[0]
    attrs = _pool_attrs(op)
    with ops.name_scope(None, op_type, inputs) as scope:
        grad_op = create_op(op_type, inputs, [attrs["T"]], scope, attrs, [x.get_shape()])
    return grad_op.outputs[0]


@RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    return _pool_grad(op, "MaxPoolGrad", [op.inputs[0], op.outputs[0], grad])


@RegisterGradient("AvgPool")
def _avg_pool_grad(op, grad):
    return _pool_grad(op, "AvgPoolGrad", [array_ops.shape(op.inputs[0]), grad])
