"""Element-wise functions of one tensor (``tf.abs``, ``tf.exp``, ``tf.sigmoid``, ...) and casts.

Each op has the dtype and the static shape of its input (`_unary_op`), except
``cast``, which changes the dtype. Part of TF's ``math_ops`` (re-exported by
`minitf.ops.math.math_ops`); kernels in `minitf.ops.math.math_kernels`, gradients in
`minitf.ops.math.math_grad`.
"""

from __future__ import annotations

from minitf.framework import dtypes, ops
from minitf.ops.op_def_library import (
    BOOL,
    COMPLEX,
    FLOAT_OR_COMPLEX,
    FLOATS,
    INT32_64,
    NUMERIC,
    SIGNED,
    check_dtype,
    create_tensor,
)

_UNARY_ALLOWED = {
    "Abs": FLOATS + SIGNED,
    "Neg": NUMERIC,
    "Sign": FLOATS + INT32_64 + COMPLEX,
    "Square": NUMERIC,
    "Sqrt": FLOAT_OR_COMPLEX,
    "Rsqrt": FLOAT_OR_COMPLEX,
    "Exp": FLOAT_OR_COMPLEX,
    "Log": FLOAT_OR_COMPLEX,
    "Log1p": FLOAT_OR_COMPLEX,
    "Reciprocal": FLOATS + INT32_64 + COMPLEX,
    "Sigmoid": FLOAT_OR_COMPLEX,
    "Tanh": FLOAT_OR_COMPLEX,
    "Sin": FLOAT_OR_COMPLEX,
    "Cos": FLOAT_OR_COMPLEX,
    "Floor": FLOATS,
    "Ceil": FLOATS,
    "Round": FLOATS + INT32_64 + COMPLEX,
    "LogicalNot": BOOL,
}


def _unary_op(op_type: str, x, name) -> ops.Tensor:
    """Adds the element-wise op ``op_type(x)``: same dtype and shape as ``x``."""
    with ops.name_scope(name, op_type, [x]) as scope:
        x = ops.convert_to_tensor(x, name="x")
        check_dtype("x", x.dtype, _UNARY_ALLOWED[op_type])
        return create_tensor(op_type, [x], x.dtype.base_dtype, scope, x.get_shape())


def abs(x, name=None) -> ops.Tensor:
    """Returns ``|x|`` element-wise (op type ``Abs``).

    Args:
        x: A float or signed integer tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Abs", x, name)


def negative(x, name=None) -> ops.Tensor:
    """Returns ``-x`` element-wise (op type ``Neg``).

    Args:
        x: A numeric tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Neg", x, name)


neg = negative


def sign(x, name=None) -> ops.Tensor:
    """Returns -1, 0 or 1 element-wise by the sign of ``x`` (op type ``Sign``).

    Args:
        x: A float, int32, int64 or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Sign", x, name)


def square(x, name=None) -> ops.Tensor:
    """Returns ``x * x`` element-wise (op type ``Square``).

    Args:
        x: A numeric tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Square", x, name)


def sqrt(x, name=None) -> ops.Tensor:
    """Returns the square root of ``x`` element-wise (op type ``Sqrt``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Sqrt", x, name)


def rsqrt(x, name=None) -> ops.Tensor:
    """Returns ``1 / sqrt(x)`` element-wise (op type ``Rsqrt``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Rsqrt", x, name)


def exp(x, name=None) -> ops.Tensor:
    """Returns ``e ** x`` element-wise (op type ``Exp``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Exp", x, name)


def log(x, name=None) -> ops.Tensor:
    """Returns the natural logarithm of ``x`` element-wise (op type ``Log``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Log", x, name)


def log1p(x, name=None) -> ops.Tensor:
    """Returns ``log(1 + x)`` element-wise, accurate for small ``x`` (op type ``Log1p``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Log1p", x, name)


def reciprocal(x, name=None) -> ops.Tensor:
    """Returns ``1 / x`` element-wise (op type ``Reciprocal``).

    Args:
        x: A float, int32, int64 or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Reciprocal", x, name)


def sigmoid(x, name=None) -> ops.Tensor:
    """Returns ``1 / (1 + exp(-x))`` element-wise (op type ``Sigmoid``; also ``tf.nn.sigmoid``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Sigmoid", x, name)


def tanh(x, name=None) -> ops.Tensor:
    """Returns ``tanh(x)`` element-wise (op type ``Tanh``; also ``tf.nn.tanh``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Tanh", x, name)


def sin(x, name=None) -> ops.Tensor:
    """Returns the sine of ``x`` element-wise (op type ``Sin``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Sin", x, name)


def cos(x, name=None) -> ops.Tensor:
    """Returns the cosine of ``x`` element-wise (op type ``Cos``).

    Args:
        x: A float or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Cos", x, name)


def floor(x, name=None) -> ops.Tensor:
    """Returns the largest integer not greater than ``x``, element-wise (op type ``Floor``).

    Args:
        x: A float tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Floor", x, name)


def ceil(x, name=None) -> ops.Tensor:
    """Returns the smallest integer not less than ``x``, element-wise (op type ``Ceil``).

    Args:
        x: A float tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    return _unary_op("Ceil", x, name)


def round(x, name=None) -> ops.Tensor:
    """Rounds ``x`` to the nearest integer, halves to even (op type ``Round``).

    Integer tensors are returned unchanged, as in TF1.

    Args:
        x: A float, int32, int64 or complex tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtype of ``x`` is not supported.
    """
    x = ops.convert_to_tensor(x, name="x")
    if x.dtype.is_integer:
        return x
    return _unary_op("Round", x, name)


def logical_not(x, name=None) -> ops.Tensor:
    """Returns ``NOT x`` for a bool tensor (op type ``LogicalNot``).

    Args:
        x: A bool tensor.
        name: A name for the operation (optional).

    Raises:
        TypeError: if ``x`` is not bool.
    """
    return _unary_op("LogicalNot", x, name)


_CASTABLE = NUMERIC + BOOL


def cast(x, dtype, name=None):
    """Casts ``x`` (a tensor or `IndexedSlices`) to ``dtype`` (op type ``Cast``).

    A tensor that already has ``dtype`` is returned unchanged. Floats cast to
    integers truncate towards zero.

    Args:
        x: A tensor, `IndexedSlices`, or a value convertible to a tensor.
        dtype: The `DType` to cast to.
        name: A name for the operation (optional).

    Raises:
        TypeError: if either type cannot be cast.
    """
    base = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, ops.Tensor) and base == x.dtype:
        return x
    with ops.name_scope(name, "Cast", [x]) as scope:
        if type(x).__name__ == "IndexedSlices":
            return type(x)(cast(x.values, base, name=scope), x.indices, x.dense_shape)
        x = ops.convert_to_tensor(x, name="x")
        if x.dtype.base_dtype == base:
            return x
        if x.dtype.base_dtype not in _CASTABLE or base not in _CASTABLE:
            raise TypeError(f"Cast {x.dtype.base_dtype.name} to {base.name} is not supported")
        attrs = {"SrcT": x.dtype.base_dtype, "DstT": base, "Truncate": False}
        return create_tensor("Cast", [x], base, scope, x.get_shape(), attrs)


def to_float(x, name="ToFloat"):
    """Casts ``x`` to float32 (TF1 helper).

    Args:
        x: A tensor or `IndexedSlices`.
        name: A name for the operation.

    Raises:
        TypeError: if ``x`` cannot be cast to float32.
    """
    return cast(x, dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    """Casts ``x`` to float64 (TF1 helper).

    Args:
        x: A tensor or `IndexedSlices`.
        name: A name for the operation.

    Raises:
        TypeError: if ``x`` cannot be cast to float64.
    """
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    """Casts ``x`` to int32 (TF1 helper).

    Args:
        x: A tensor or `IndexedSlices`.
        name: A name for the operation.

    Raises:
        TypeError: if ``x`` cannot be cast to int32.
    """
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    """Casts ``x`` to int64 (TF1 helper).

    Args:
        x: A tensor or `IndexedSlices`.
        name: A name for the operation.

    Raises:
        TypeError: if ``x`` cannot be cast to int64.
    """
    return cast(x, dtypes.int64, name=name)
