"""Local response normalization (``tf.nn.lrn``, op type ``LRN``) and its gradient op ``LRNGrad``.

Each value is divided by a power of the sum of squares of its neighbours
along the depth (last) axis of an NHWC tensor, as in AlexNet::

    sqr_sum[b, r, c, d] = sum(input[b, r, c, d - depth_radius : d + depth_radius + 1] ** 2)
    output = input / (bias + alpha * sqr_sum) ** beta

The kernels are in `minitf.ops.nn.nn_kernels`, the gradient in
`minitf.ops.nn.nn_grad`.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.common_shapes import check_rank
from minitf.ops.op_def_library import check_dtype, create_op

__all__ = ["local_response_normalization", "lrn"]

# TF's LRN is defined for half, bfloat16 and float (no double); minitf has no bfloat16.
_LRN_TYPES = (dtypes.float16, dtypes.float32)


def _lrn_attrs(dtype: dtypes.DType, depth_radius, bias, alpha, beta) -> dict:
    return {
        "T": dtype,
        "depth_radius": int(depth_radius),
        "bias": float(bias),
        "alpha": float(alpha),
        "beta": float(beta),
    }


def local_response_normalization(
    input: Any,  # noqa: A002 - TF's argument name
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    name: str | None = None,
) -> ops.Tensor:
    """Local response normalization across the depth of an NHWC tensor (op type ``LRN``).

    ``output = input / (bias + alpha * sqr_sum) ** beta``, where ``sqr_sum``
    sums the squares of the ``2 * depth_radius + 1`` values around each one
    along the last axis (fewer at the edges).

    Args:
        input: A 4-D float32 or float16 tensor ``[batch, height, width, depth]``.
        depth_radius: Half the width of the summed window (default 5).
        bias: The offset added to the sum (default 1).
        alpha: The scale of the sum (default 1).
        beta: The exponent (default 0.5).
        name: A name for the operation.

    Returns:
        A tensor of the shape and dtype of ``input``.

    Raises:
        TypeError: if ``input`` is not float32 or float16.
        ValueError: if ``input``'s static rank is known and is not 4.
    """
    with ops.name_scope(name, "LRN", [input]) as scope:
        x = ops.convert_to_tensor(input, name="input")
        dtype = check_dtype("input", x.dtype, _LRN_TYPES)
        check_rank(x, 4, scope, "LRN", [x])
        attrs = _lrn_attrs(dtype, depth_radius, bias, alpha, beta)
        return create_op("LRN", [x], [dtype], scope, attrs, [x.get_shape().with_rank(4)]).outputs[0]


lrn = local_response_normalization


def lrn_grad(
    input_grads: Any,
    input_image: Any,
    output_image: Any,
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    name: str | None = None,
) -> ops.Tensor:
    """The gradient of `local_response_normalization` (op type ``LRNGrad``).

    Args:
        input_grads: The gradient of the LRN's output, 4-D.
        input_image: The LRN's input.
        output_image: The LRN's output.
        depth_radius: The LRN's ``depth_radius``.
        bias: The LRN's ``bias``.
        alpha: The LRN's ``alpha``.
        beta: The LRN's ``beta``.
        name: A name for the operation.

    Returns:
        The gradient with respect to ``input_image``.

    Raises:
        ValueError: if an input's static rank is not 4 or the shapes differ.
    """
    with ops.name_scope(name, "LRNGrad", [input_grads, input_image, output_image]) as scope:
        grads = ops.convert_to_tensor(input_grads, name="input_grads")
        dtype = check_dtype("input_grads", grads.dtype, _LRN_TYPES)
        image = ops.convert_to_tensor(input_image, dtype=dtype, name="input_image")
        output = ops.convert_to_tensor(output_image, dtype=dtype, name="output_image")
        inputs = [grads, image, output]
        shape = tensor_shape.unknown_shape(4)
        for t in inputs:
            check_rank(t, 4, scope, "LRNGrad", inputs)
            shape = shape.merge_with(t.get_shape())
        attrs = _lrn_attrs(dtype, depth_radius, bias, alpha, beta)
        return create_op("LRNGrad", inputs, [dtype], scope, attrs, [shape]).outputs[0]
