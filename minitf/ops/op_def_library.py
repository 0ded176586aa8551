"""What TF's ``op_def_library`` does for every op constructor: check input dtypes, add the op.

An op constructor converts its arguments to tensors, checks their dtypes
against the types the op accepts (TF's type lists, below), and adds the op
to the default graph. The checks raise TF's own ``TypeError`` messages, so
that a wrong dtype reads the same as in TF ("Value passed to parameter 'x'
has DataType ... not in list of allowed values: ...").

Shared by the op families (`minitf.ops.math.math_ops`, `array_ops`, `nn_ops` and
their sibling modules); static-shape helpers are in `minitf.ops.common_shapes`.
"""

from __future__ import annotations

from minitf.framework import dtypes, ops

FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
COMPLEX = (dtypes.complex64, dtypes.complex128)
SIGNED = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
UNSIGNED = (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
REAL = FLOATS + SIGNED + UNSIGNED
NUMERIC = REAL + COMPLEX
FLOAT_OR_COMPLEX = FLOATS + COMPLEX
INT32_64 = (dtypes.int32, dtypes.int64)
BOOL = (dtypes.bool,)


def check_dtype(arg: str, dtype: dtypes.DType, allowed, op_type: str = "") -> dtypes.DType:
    """Returns ``dtype``'s base dtype if it is one of the op's ``allowed`` types.

    Args:
        arg: The name of the op's parameter, for the message.
        dtype: The dtype of the argument.
        allowed: The dtypes the op accepts (e.g. `FLOATS`).
        op_type: The op's type; if given, the message ends naming it.

    Raises:
        TypeError: TF's message, if ``dtype`` is not allowed.
    """
    if dtype.base_dtype not in allowed:
        raise TypeError(
            f"Value passed to parameter '{arg}' has DataType {dtype.base_dtype.name} not in "
            f"list of allowed values: {', '.join(d.name for d in allowed)}"
            + (f" (op '{op_type}')" if op_type else "")
        )
    return dtype.base_dtype


def is_tensor_like(value) -> bool:
    """Tensors and objects that stand for one (variables) — not IndexedSlices."""
    if isinstance(value, ops.Tensor):
        return True
    return hasattr(value, "_as_graph_element") and hasattr(value, "dtype")


def binary_operands(x, y, op_type: str) -> tuple[ops.Tensor, ops.Tensor]:
    """Converts ``x`` and ``y`` to tensors of one dtype, or raises TF's errors.

    Like TF's op-def library, a non-tensor operand takes the dtype of the tensor
    one (``x * 2`` with float32 ``x`` multiplies by a float32 2).

    Raises:
        TypeError: if the two dtypes differ.
    """
    if isinstance(x, ops.Tensor) or not isinstance(y, ops.Tensor):
        x = ops.convert_to_tensor(x, name="x")
        y = _convert_like(y, x.dtype.base_dtype, "y")
    else:
        y = ops.convert_to_tensor(y, name="y")
        x = _convert_like(x, y.dtype.base_dtype, "x")
    if x.dtype.base_dtype != y.dtype.base_dtype:
        raise TypeError(
            f"Input 'y' of '{op_type}' Op has type {y.dtype.base_dtype.name} that does not match "
            f"type {x.dtype.base_dtype.name} of argument 'x'."
        )
    return x, y


def _convert_like(value, dtype: dtypes.DType, name: str) -> ops.Tensor:
    """Converts ``value`` to ``dtype``; a tensor-like of another dtype keeps its own."""
    if isinstance(value, ops.Tensor):
        return value
    try:
        return ops.convert_to_tensor(value, dtype=dtype, name=name)
    except ValueError:  # e.g. a variable of another dtype: let the caller name both types
        return ops.convert_to_tensor(value, name=name)


def convert_list(values, op_type: str, arg: str = "values") -> list[ops.Tensor]:
    """Converts a list argument like TF's op-def library: one dtype, taken from the tensors.

    Raises:
        TypeError: if the converted values do not all have one dtype.
    """
    dtype = next((v.dtype.base_dtype for v in values if is_tensor_like(v)), None)
    tensors = [
        ops.convert_to_tensor(v, dtype=None if is_tensor_like(v) else dtype, name=f"{arg}_{i}")
        for i, v in enumerate(values)
    ]
    found = [t.dtype.base_dtype for t in tensors]
    if any(d != found[0] for d in found):
        raise TypeError(
            f"Tensors in list passed to '{arg}' of '{op_type}' Op have types "
            f"[{', '.join(d.name for d in found)}] that don't all match."
        )
    return tensors


def index_tensor(value, name: str, op_type: str, arg: str = "") -> ops.Tensor:
    """Converts an index-like argument to an int32 (or int64) tensor.

    Raises:
        TypeError: if the value converts to another dtype.
    """
    tensor = ops.convert_to_tensor(value, name=name, preferred_dtype=dtypes.int32)
    if tensor.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(
            f"Value passed to parameter '{arg or name}' has DataType {tensor.dtype.base_dtype.name}"
            f" not in list of allowed values: int32, int64 (op '{op_type}')"
        )
    return tensor


def create_op(op_type: str, inputs, out_dtypes, scope: str, attrs: dict, shapes) -> ops.Operation:
    """Adds an op named ``scope`` to the default graph, with its static output ``shapes``."""
    return ops.get_default_graph().create_op(
        op_type, inputs, out_dtypes, name=scope, attrs=attrs, shapes=shapes
    )


def create_tensor(op_type: str, inputs, out_dtype, scope: str, shape, attrs=None) -> ops.Tensor:
    """Adds a one-output op and returns its output.

    ``attrs`` default to ``{"T": <first input's dtype>}``.
    """
    if attrs is None:
        attrs = {"T": inputs[0].dtype.base_dtype}
    op = ops.get_default_graph().create_op(
        op_type, list(inputs), [out_dtype], name=scope, attrs=attrs, shapes=[shape]
    )
    return op.outputs[0]
