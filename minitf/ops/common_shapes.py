"""Static-shape helpers shared by the op constructors, and TF's shape-inference messages.

A constructor infers its output's static shape at graph construction and,
when the shapes it can see already contradict each other, raises
``ValueError`` with the message TF's C++ shape functions write: "<what went
wrong> for '<op name>' (op: '<Type>') with input shapes: [2,3], [4]."

Array ops print an input of unknown rank in that message as ``<unknown>``,
math ops as ``?``; both forms are kept so that messages stay as they were.

Shared by the op families (`minitf.ops.math.math_ops`, `array_ops`, `nn_ops` and
their sibling modules); dtype checks are in `minitf.ops.op_def_library`.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import ops, tensor_shape, tensor_util


def shape_str(shape: tensor_shape.TensorShape, unknown_rank: str = "?") -> str:
    """A static shape as TF's shape-inference messages print it ("[2,?]"; ``unknown_rank``)."""
    if shape.ndims is None:
        return unknown_rank
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def shape_error_suffix(scope: str, op_type: str, inputs, unknown_rank: str = "<unknown>") -> str:
    """TF's shape-inference error tail: "for 'name' (op: 'Type') with input shapes: ..."."""
    shapes = ", ".join(shape_str(t.get_shape(), unknown_rank) for t in inputs)
    return f" for '{scope.rstrip('/')}' (op: '{op_type}') with input shapes: {shapes}."


def shape_error(message: str, scope: str, op_type: str, *inputs: ops.Tensor) -> ValueError:
    """``ValueError(message + <TF's tail naming the op and its input shapes>)``."""
    return ValueError(message + shape_error_suffix(scope, op_type, inputs, unknown_rank="?"))


def static_int(tensor) -> int | None:
    """The value of a scalar integer tensor if it is known at graph construction."""
    value = tensor_util.constant_value(tensor)
    if value is None or np.ndim(value) != 0:
        return None
    return int(value)


def static_ints(tensor) -> list[int] | None:
    """The values of a 1-D integer tensor if they are known at graph construction."""
    value = tensor_util.constant_value(tensor)
    return None if value is None else [int(v) for v in np.ravel(value)]


def check_rank(tensor, rank: int, scope: str, op_type: str, inputs) -> None:
    """Raises TF's ValueError if ``tensor``'s static rank is known and is not ``rank``."""
    ndims = tensor.get_shape().ndims
    if ndims is not None and ndims != rank:
        raise ValueError(
            f"Shape must be rank {rank} but is rank {ndims}"
            + shape_error_suffix(scope, op_type, inputs)
        )


def merge_shapes(shapes, what: str) -> tensor_shape.TensorShape:
    """Merges static shapes that must agree (the ``what`` of a list op, e.g. ``"value"``).

    Raises:
        ValueError: naming the first shape that contradicts the previous ones.
    """
    merged = tensor_shape.unknown_shape()
    for i, s in enumerate(shapes):
        try:
            merged = merged.merge_with(s)
        except ValueError:
            raise ValueError(
                f"Shapes {shape_str(merged)} and {shape_str(s)} are "
                f"incompatible: {what} {i} does not match the previous ones"
            ) from None
    return merged
