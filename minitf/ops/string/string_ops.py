"""String ops: ``StringJoin`` (what a sharded ``Saver`` builds its temporary prefix with).

Strings are ``bytes`` at run time, in numpy ``object`` arrays (see `minitf.framework.dtypes`).
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.op_registry import NotDifferentiable, register_kernel

__all__ = ["string_join"]


def string_join(inputs, separator: str = "", name=None) -> ops.Tensor:
    """Joins string tensors elementwise (scalars are broadcast): TF's ``tf.strings.join``.

    Args:
        inputs: A list of string tensors of one shape, or scalars.
        separator: Put between the joined strings.
        name: The op name.

    Raises:
        TypeError: if an input is not a string tensor.
        ValueError: if ``inputs`` is empty or the shapes do not broadcast.
    """
    inputs = list(inputs)
    if not inputs:
        raise ValueError("string_join needs at least one input")
    with ops.name_scope(name, "StringJoin", inputs) as scope:
        tensors = [ops.convert_to_tensor(x, dtype=dtypes.string) for x in inputs]
        shape = tensor_shape.TensorShape([])
        for t in tensors:
            if t.get_shape().ndims != 0:
                if shape.ndims == 0:
                    shape = t.get_shape()
                elif not shape.is_compatible_with(t.get_shape()):
                    raise ValueError(
                        f"Inputs of StringJoin '{scope[:-1]}' must be scalars or of one shape: "
                        f"{shape} and {t.get_shape()}"
                    )
        op = ops.get_default_graph().create_op(
            "StringJoin",
            tensors,
            [dtypes.string],
            name=scope,
            attrs={"N": len(tensors), "separator": separator},
            shapes=[shape],
        )
    return op.outputs[0]


def as_bytes(value) -> bytes:
    """A string value at run time (``bytes``, ``str`` or a 0-d array) as ``bytes``."""
    if isinstance(value, np.ndarray):
        value = value.item()
    return value.encode() if isinstance(value, str) else bytes(value)


@register_kernel("StringJoin")
def _string_join_kernel(op):
    separator = op.get_attr("separator").encode()

    def compute(ctx, *values):
        arrays = [np.asarray(v, dtype=object) for v in values]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        if not shape:
            return separator.join(as_bytes(a) for a in arrays)
        out = np.empty(shape, dtype=object)
        broadcast = [np.broadcast_to(a, shape) for a in arrays]
        for index in np.ndindex(shape):
            out[index] = separator.join(as_bytes(a[index]) for a in broadcast)
        return out

    return compute


NotDifferentiable("StringJoin")
