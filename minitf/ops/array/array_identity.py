"""``tf.identity`` and ``tf.stop_gradient``: ops that pass a tensor through unchanged.

``Identity`` gives a tensor a new name, device or control dependency;
``StopGradient`` is an identity that ``tf.gradients`` treats as a constant.

Part of TF's ``array_ops`` (re-exported by `minitf.ops.array.array_ops`); kernels in
`minitf.ops.array.array_kernels`, gradients in `minitf.ops.array.array_grad`.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.ops.op_def_library import create_op


def identity(input, name=None) -> ops.Tensor:  # noqa: A002 - TF's name
    """Returns a tensor with the same value as ``input``.

    Args:
        input: A tensor (or a value convertible to one).
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "Identity", [input]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        op = ops.get_default_graph().create_op(
            "Identity",
            [value],
            [value.dtype.base_dtype],
            name=scope,
            attrs={"T": value.dtype.base_dtype},
            shapes=[value.get_shape()],
        )
    return op.outputs[0]


def stop_gradient(input, name=None) -> ops.Tensor:  # noqa: A002
    """Returns ``input``, but ``tf.gradients`` treats it as a constant (op ``StopGradient``).

    Args:
        input: A tensor (or a value convertible to one).
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "StopGradient", [input]) as scope:
        value = ops.convert_to_tensor(input, name="input")
        op = create_op(
            "StopGradient",
            [value],
            [value.dtype.base_dtype],
            scope,
            {"T": value.dtype.base_dtype},
            [value.get_shape()],
        )
    return op.outputs[0]
