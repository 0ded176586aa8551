"""Math ops: element-wise arithmetic, comparisons and logic, matmul, and `Tensor`'s operators.

``math_ops.<name>`` finds every public math op, as in TF. The constructors
defined here are the element-wise binary ops (``Add``, ``Sub``, ``Mul``, the
divisions, ``Pow``, ``Maximum``, ...), the comparisons and logical ops,
``saturate_cast`` and ``matmul``. The others live next door and are
re-exported here:

- `minitf.ops.math.math_unary`: element-wise functions of one tensor (``abs``,
  ``exp``, ``sigmoid``, ...) and ``cast``;
- `minitf.ops.math.math_reductions`: ``reduce_*``, ``argmax``/``argmin``,
  ``add_n``, ``cumsum`` and ``range``.

Their numpy kernels are in `minitf.ops.math.math_kernels` and their gradients in
`minitf.ops.math.math_grad` (TF's ``math_grad.py``); importing any module of
`minitf.ops` registers both.

Element-wise binary ops follow one pattern (`_binary_op`): convert both
operands to tensors of the same dtype, infer the broadcast static shape, add
the op.

Importing this module also installs the Python operators of `Tensor`
(``+ - * / // % ** @ < <= > >= & | ^ ~``, unary ``-`` and ``abs``), with the
op names TF1 gives them: ``a + b`` is an ``AddV2`` op named ``"add"``.
"""

from __future__ import annotations

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.array.array_shaping import reshape
from minitf.ops.common_shapes import shape_error, shape_str
from minitf.ops.math.math_reductions import (
    add_n,
    argmax,
    argmin,
    cumsum,
    range,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from minitf.ops.math.math_unary import (
    abs,
    cast,
    ceil,
    cos,
    exp,
    floor,
    log,
    log1p,
    logical_not,
    neg,
    negative,
    reciprocal,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    tanh,
    to_double,
    to_float,
    to_int32,
    to_int64,
)
from minitf.ops.op_def_library import (
    BOOL,
    COMPLEX,
    FLOATS,
    INT32_64,
    NUMERIC,
    REAL,
    binary_operands,
    check_dtype,
    create_tensor,
)

__all__ = [
    "add",
    "subtract",
    "sub",
    "multiply",
    "mul",
    "scalar_mul",
    "divide",
    "truediv",
    "div",
    "realdiv",
    "floordiv",
    "floor_div",
    "mod",
    "floormod",
    "pow",
    "maximum",
    "minimum",
    "squared_difference",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "abs",
    "negative",
    "neg",
    "sign",
    "square",
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "log1p",
    "reciprocal",
    "sigmoid",
    "tanh",
    "sin",
    "cos",
    "floor",
    "ceil",
    "round",
    "add_n",
    "cast",
    "saturate_cast",
    "to_float",
    "to_double",
    "to_int32",
    "to_int64",
    "matmul",
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_any",
    "reduce_all",
    "argmax",
    "argmin",
    "range",
    "cumsum",
]


_BINARY_ALLOWED = {
    "Add": NUMERIC + (dtypes.string,),
    "AddV2": NUMERIC,
    "Sub": NUMERIC,
    "Mul": NUMERIC,
    "RealDiv": NUMERIC,
    "FloorDiv": REAL,
    "FloorMod": FLOATS + INT32_64,
    "Pow": FLOATS + INT32_64 + COMPLEX,
    "Maximum": FLOATS + INT32_64,
    "Minimum": FLOATS + INT32_64,
    "SquaredDifference": FLOATS + INT32_64 + COMPLEX,
    "Less": REAL,
    "LessEqual": REAL,
    "Greater": REAL,
    "GreaterEqual": REAL,
    "LogicalAnd": BOOL,
    "LogicalOr": BOOL,
}


def _broadcast_static_shape(x: ops.Tensor, y: ops.Tensor, scope: str, op_type: str):
    """The numpy-broadcast static shape of ``x`` and ``y``, or TF's ValueError."""
    sx, sy = x.get_shape(), y.get_shape()
    try:
        return tensor_shape.broadcast_static_shape(sx, sy)
    except ValueError:
        pass
    for dx, dy in zip(reversed(sx.as_list()), reversed(sy.as_list())):
        if dx is not None and dy is not None and dx != dy and 1 not in (dx, dy):
            break
    raise shape_error(f"Dimensions must be equal, but are {dx} and {dy}", scope, op_type, x, y)


def _binary_op(op_type: str, x, y, name, out_dtype=None) -> ops.Tensor:
    """Adds the element-wise op ``op_type(x, y)`` with numpy broadcasting."""
    with ops.name_scope(name, op_type, [x, y]) as scope:
        x, y = binary_operands(x, y, op_type)
        if op_type in _BINARY_ALLOWED:
            check_dtype("x", x.dtype, _BINARY_ALLOWED[op_type])
        static = _broadcast_static_shape(x, y, scope, op_type)
        return create_tensor(op_type, [x, y], out_dtype or x.dtype.base_dtype, scope, static)


def add(x, y, name=None) -> ops.Tensor:
    """Returns ``x + y`` element-wise, with numpy broadcasting.

    TF1's ``tf.add`` adds an op of type ``Add``; the ``+`` operator adds
    ``AddV2`` (the same arithmetic, without string concatenation).

    Args:
        x: A numeric or string tensor (or value convertible to one).
        y: A tensor of the same dtype as ``x``.
        name: The op name (default ``"Add"``).

    Raises:
        TypeError: if the dtypes differ or are not supported.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Add", x, y, name)


def _add_v2(x, y, name=None) -> ops.Tensor:
    return _binary_op("AddV2", x, y, name)


def subtract(x, y, name=None) -> ops.Tensor:
    """Returns ``x - y`` element-wise, with numpy broadcasting (op type ``Sub``).

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Sub", x, y, name)


def multiply(x, y, name=None) -> ops.Tensor:
    """Returns ``x * y`` element-wise, with numpy broadcasting (op type ``Mul``).

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Mul", x, y, name)


sub = subtract
mul = multiply


def scalar_mul(scalar, x, name=None):
    """Multiplies a tensor or `IndexedSlices` ``x`` by the scalar ``scalar``.

    Args:
        scalar: A 0-D value, converted to ``x``'s dtype.
        x: A tensor or `IndexedSlices`.
        name: A name for the operation (optional).

    Raises:
        ValueError: if ``scalar`` is not 0-D.
    """
    scalar = ops.convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if scalar.get_shape().ndims != 0:
        raise ValueError(f"Only scalar multiply works, got shape {scalar.get_shape()}")
    if type(x).__name__ == "IndexedSlices":
        return type(x)(multiply(scalar, x.values, name=name), x.indices, x.dense_shape)
    return multiply(scalar, x, name=name)


def realdiv(x, y, name=None) -> ops.Tensor:
    """Returns ``x / y`` element-wise (op type ``RealDiv``; integers truncate).

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("RealDiv", x, y, name)


def floor_div(x, y, name=None) -> ops.Tensor:
    """Returns ``floor(x / y)`` element-wise (op type ``FloorDiv``).

    Args:
        x: A real-valued tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("FloorDiv", x, y, name)


def floormod(x, y, name=None) -> ops.Tensor:
    """Returns ``x - floor(x / y) * y`` element-wise, like Python's ``%`` (op type ``FloorMod``).

    Args:
        x: A float, int32 or int64 tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("FloorMod", x, y, name)


mod = floormod


def pow(x, y, name=None) -> ops.Tensor:
    """Returns ``x ** y`` element-wise (op type ``Pow``).

    Integer tensors raised to negative integer powers fail at run time.

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    with ops.name_scope(name, "Pow", [x]) as scope:
        return _binary_op("Pow", x, y, scope)


def maximum(x, y, name=None) -> ops.Tensor:
    """Returns the element-wise maximum of ``x`` and ``y`` (op type ``Maximum``).

    Args:
        x: A float, int32 or int64 tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Maximum", x, y, name)


def minimum(x, y, name=None) -> ops.Tensor:
    """Returns the element-wise minimum of ``x`` and ``y`` (op type ``Minimum``).

    Args:
        x: A float, int32 or int64 tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Minimum", x, y, name)


def squared_difference(x, y, name=None) -> ops.Tensor:
    """Returns ``(x - y) ** 2`` element-wise (op type ``SquaredDifference``).

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("SquaredDifference", x, y, name)


# What ``/`` casts integer operands to before dividing (TF follows numpy here).
_TRUEDIV_TABLE = {
    dtypes.uint8: dtypes.float32,
    dtypes.int8: dtypes.float32,
    dtypes.uint16: dtypes.float32,
    dtypes.int16: dtypes.float32,
    dtypes.int32: dtypes.float64,
    dtypes.int64: dtypes.float64,
    dtypes.float16: None,
    dtypes.float32: None,
    dtypes.float64: None,
    dtypes.complex64: None,
    dtypes.complex128: None,
}


def _same_dtype_operands(x, y):
    x = ops.convert_to_tensor(x, name="x")
    y = ops.convert_to_tensor(y, name="y", preferred_dtype=x.dtype.base_dtype)
    if x.dtype.base_dtype != y.dtype.base_dtype:
        raise TypeError(
            f"x and y must have the same dtype, got {x.dtype.base_dtype!r} != "
            f"{y.dtype.base_dtype!r}"
        )
    return x, y


def _truediv_python3(x, y, name=None) -> ops.Tensor:
    with ops.name_scope(name, "truediv", [x, y]) as scope:
        x, y = _same_dtype_operands(x, y)
        try:
            float_dtype = _TRUEDIV_TABLE[x.dtype.base_dtype]
        except KeyError:
            raise TypeError(f"Invalid dtype {x.dtype.base_dtype!r} in __truediv__") from None
        if float_dtype is not None:
            x, y = cast(x, float_dtype), cast(y, float_dtype)
        return realdiv(x, y, name=scope)


def _div_python2(x, y, name=None) -> ops.Tensor:
    with ops.name_scope(name, "div", [x, y]) as scope:
        x, y = _same_dtype_operands(x, y)
        if x.dtype.is_floating or x.dtype.is_complex:
            return realdiv(x, y, name=scope)
        return floor_div(x, y, name=scope)


def truediv(x, y, name=None) -> ops.Tensor:
    """Divides ``x / y`` element-wise with Python 3 semantics.

    Integer operands are first cast to floats: int8/int16/uint8/uint16 to
    float32, int32/int64 to float64 (as numpy does). The op is a ``RealDiv``
    named ``"truediv"`` by default.

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``.
        name: A name for the operation (optional).

    Raises:
        TypeError: if ``x`` and ``y`` have different dtypes.
    """
    return _truediv_python3(x, y, name)


def div(x, y, name=None) -> ops.Tensor:
    """Divides ``x / y`` with Python 2 semantics: floor division for integers.

    Floats give a ``RealDiv``, integers a ``FloorDiv``; the op is named ``"div"``.

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``.
        name: A name for the operation (optional).

    Raises:
        TypeError: if ``x`` and ``y`` have different dtypes.
    """
    return _div_python2(x, y, name)


def divide(x, y, name=None):
    """Computes Python-style division ``x / y`` (the ``/`` operator of tensors).

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``.
        name: A name for the operation (optional).
    """
    if name is not None:
        return _truediv_python3(x, y, name)
    return x / y


def floordiv(x, y, name=None) -> ops.Tensor:
    """Divides ``x / y`` rounding towards minus infinity (op ``FloorDiv`` named ``"floordiv"``).

    Integer division by zero fails at run time with InvalidArgumentError.

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``.
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "floordiv", [x, y]) as scope:
        return floor_div(x, y, name=scope)


def equal(x, y, name=None) -> ops.Tensor:
    """Returns the bool tensor ``x == y`` element-wise (op type ``Equal``).

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Equal", x, y, name, dtypes.bool)


def not_equal(x, y, name=None) -> ops.Tensor:
    """Returns the bool tensor ``x != y`` element-wise (op type ``NotEqual``).

    Args:
        x: A tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("NotEqual", x, y, name, dtypes.bool)


def less(x, y, name=None) -> ops.Tensor:
    """Returns the bool tensor ``x < y`` element-wise (op type ``Less``).

    Args:
        x: A real-valued tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Less", x, y, name, dtypes.bool)


def less_equal(x, y, name=None) -> ops.Tensor:
    """Returns the bool tensor ``x <= y`` element-wise (op type ``LessEqual``).

    Args:
        x: A real-valued tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("LessEqual", x, y, name, dtypes.bool)


def greater(x, y, name=None) -> ops.Tensor:
    """Returns the bool tensor ``x > y`` element-wise (op type ``Greater``).

    Args:
        x: A real-valued tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("Greater", x, y, name, dtypes.bool)


def greater_equal(x, y, name=None) -> ops.Tensor:
    """Returns the bool tensor ``x >= y`` element-wise (op type ``GreaterEqual``).

    Args:
        x: A real-valued tensor (or a value convertible to one).
        y: A tensor of the same dtype as ``x``, broadcastable with it.
        name: A name for the operation (optional).

    Raises:
        TypeError: if the dtypes differ or the op does not support them.
        ValueError: if the static shapes cannot be broadcast.
    """
    return _binary_op("GreaterEqual", x, y, name, dtypes.bool)


def logical_and(x, y, name=None) -> ops.Tensor:
    """Returns ``x AND y`` for bool tensors (op type ``LogicalAnd``).

    Args:
        x: A bool tensor.
        y: A bool tensor, broadcastable with ``x``.
        name: A name for the operation (optional).

    Raises:
        TypeError: if an operand is not bool.
    """
    return _binary_op("LogicalAnd", x, y, name)


def logical_or(x, y, name=None) -> ops.Tensor:
    """Returns ``x OR y`` for bool tensors (op type ``LogicalOr``).

    Args:
        x: A bool tensor.
        y: A bool tensor, broadcastable with ``x``.
        name: A name for the operation (optional).

    Raises:
        TypeError: if an operand is not bool.
    """
    return _binary_op("LogicalOr", x, y, name)


def logical_xor(x, y, name="LogicalXor") -> ops.Tensor:
    """Returns ``x XOR y`` for bool tensors, built as ``(x | y) & ~(x & y)`` like TF1.

    Args:
        x: A bool tensor.
        y: A bool tensor, broadcastable with ``x``.
        name: The name of the final ``LogicalAnd`` op.
    """
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def saturate_cast(value, dtype, name=None) -> ops.Tensor:
    """Casts ``value`` to ``dtype``, first clamping it to the range ``dtype`` can hold.

    Args:
        value: A tensor (or a value convertible to one).
        dtype: The `DType` to cast to.
        name: A name for the operation (optional).
    """
    with ops.name_scope(name, "saturate_cast", [value]) as scope:
        value = ops.convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype).base_dtype
        if value.dtype.min < dtype.min:
            low = ops.convert_to_tensor(dtype.min, dtype=value.dtype, name="min")
            value = maximum(value, low)
        if value.dtype.max > dtype.max:
            high = ops.convert_to_tensor(dtype.max, dtype=value.dtype, name="max")
            value = minimum(value, high)
        return cast(value, dtype, name=scope)


_MATMUL_ALLOWED = FLOATS + INT32_64


def _matmul_shape(a, b, ta: bool, tb: bool, scope: str, op_type: str):
    """The static output shape of (batch) matmul, or TF's shape-inference ValueError."""
    sa, sb = a.get_shape(), b.get_shape()
    for s in (sa, sb):
        if s.ndims is None:
            continue
        if op_type == "MatMul" and s.ndims != 2:
            raise shape_error(f"Shape must be rank 2 but is rank {s.ndims}", scope, op_type, a, b)
        if s.ndims < 2:
            raise shape_error(
                f"Shape must be at least rank 2 but is rank {s.ndims}", scope, op_type, a, b
            )
    if sa.ndims is None or sb.ndims is None:
        return tensor_shape.unknown_shape()
    a_dims, b_dims = sa.as_list(), sb.as_list()
    rows, inner_a = (a_dims[-1], a_dims[-2]) if ta else (a_dims[-2], a_dims[-1])
    inner_b, cols = (b_dims[-1], b_dims[-2]) if tb else (b_dims[-2], b_dims[-1])
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise shape_error(
            f"Dimensions must be equal, but are {inner_a} and {inner_b}", scope, op_type, a, b
        )
    try:
        batch = tensor_shape.broadcast_static_shape(sa[:-2], sb[:-2])
    except ValueError:
        raise shape_error(
            f"Incompatible batch dimensions {shape_str(sa[:-2])} and {shape_str(sb[:-2])}",
            scope,
            op_type,
            a,
            b,
        ) from None
    return batch.concatenate([rows, cols])


def matmul(
    a,
    b,
    transpose_a=False,
    transpose_b=False,
    adjoint_a=False,
    adjoint_b=False,
    a_is_sparse=False,
    b_is_sparse=False,
    name=None,
) -> ops.Tensor:
    """Multiplies matrices ``a @ b`` (op ``MatMul``; ``BatchMatMulV2`` above rank 2).

    Args:
        a: A tensor of rank >= 2 (float16/32/64, int32 or int64).
        b: A tensor of the same dtype; its batch dimensions broadcast with ``a``'s.
        transpose_a: Transpose the last two dimensions of ``a`` first.
        transpose_b: Transpose the last two dimensions of ``b`` first.
        adjoint_a: Conjugate-transpose ``a`` (the same as ``transpose_a`` for reals).
        adjoint_b: Conjugate-transpose ``b``.
        a_is_sparse: A hint only; the result is the same.
        b_is_sparse: A hint only; the result is the same.
        name: The op name (default ``"MatMul"``).

    Raises:
        ValueError: if both ``transpose_x`` and ``adjoint_x`` are set, a rank is
            below 2, or the inner dimensions differ.
        TypeError: if the dtypes differ or are not supported.
    """
    del a_is_sparse, b_is_sparse
    with ops.name_scope(name, "MatMul", [a, b]) as scope:
        if transpose_a and adjoint_a:
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        if transpose_b and adjoint_b:
            raise ValueError("Only one of transpose_b and adjoint_b can be True.")
        a = ops.convert_to_tensor(a, name="a")
        b = ops.convert_to_tensor(b, name="b")
        ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
        rank_a, rank_b = a.get_shape().ndims, b.get_shape().ndims
        batched = rank_a is None or rank_a > 2 or rank_b is None or rank_b > 2
        op_type = "BatchMatMulV2" if batched else "MatMul"
        if a.dtype.base_dtype != b.dtype.base_dtype:
            first, second = ("x", "y") if batched else ("a", "b")
            raise TypeError(
                f"Input '{second}' of '{op_type}' Op has type {b.dtype.base_dtype.name} that "
                f"does not match type {a.dtype.base_dtype.name} of argument '{first}'."
            )
        check_dtype("a", a.dtype, _MATMUL_ALLOWED)
        static = _matmul_shape(a, b, ta, tb, scope, op_type)
        dtype = a.dtype.base_dtype
        if batched:
            attrs = {"T": dtype, "adj_x": ta, "adj_y": tb}
        else:
            attrs = {"T": dtype, "transpose_a": ta, "transpose_b": tb}
        return create_tensor(op_type, [a, b], dtype, scope, static, attrs)


def reduced_shape(input_shape, axes) -> ops.Tensor:
    """The shape ``input_shape`` (a 1-D int32 tensor) has after a reduction with ``keep_dims``.

    Built from graph ops, for when the rank or the axes are only known at run time.
    """
    input_shape = cast(input_shape, dtypes.int32)
    axes = cast(axes, dtypes.int32)
    ones = add(multiply(input_shape, 0), 1)
    rank = reduce_sum(ones)
    positions = cumsum(ones, exclusive=True)
    axes = floormod(reshape(axes, [1, -1]), rank)
    is_reduced = reduce_any(equal(reshape(positions, [-1, 1]), axes), axis=1)
    reduced = cast(is_reduced, dtypes.int32)
    return add(multiply(input_shape, subtract(1, reduced)), reduced)


def _override_binary_operator(func, op_name: str) -> None:
    """Installs ``__<op_name>__`` and ``__r<op_name>__`` on `Tensor`.

    Each opens a name scope called ``op_name`` (so ``a + b`` is an op named
    ``"add"``) and converts a non-tensor operand to the tensor's dtype when
    it can (``x + 1`` with float32 ``x`` adds a float32 1).
    """

    def binary_op_wrapper(x, y):
        with ops.name_scope(None, op_name, [x, y]) as name:
            if not isinstance(y, ops.Tensor):
                try:
                    y = ops.convert_to_tensor(y, preferred_dtype=x.dtype.base_dtype, name="y")
                except TypeError:
                    # Let an object that knows tensors implement the reflected operator.
                    if hasattr(type(y), f"__r{op_name}__"):
                        return NotImplemented
                    raise
            return func(x, y, name=name)

    def r_binary_op_wrapper(y, x):
        with ops.name_scope(None, op_name, [x, y]) as name:
            x = ops.convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
            return func(x, y, name=name)

    ops.Tensor._override_operator(f"__{op_name}__", binary_op_wrapper)
    ops.Tensor._override_operator(f"__r{op_name}__", r_binary_op_wrapper)


def _logical_xor_operator(x, y, name=None) -> ops.Tensor:
    return logical_xor(x, y, name=name)


_override_binary_operator(_add_v2, "add")
_override_binary_operator(subtract, "sub")
_override_binary_operator(multiply, "mul")
_override_binary_operator(_truediv_python3, "truediv")
_override_binary_operator(floordiv, "floordiv")
_override_binary_operator(floormod, "mod")
_override_binary_operator(pow, "pow")
_override_binary_operator(matmul, "matmul")
_override_binary_operator(logical_and, "and")
_override_binary_operator(logical_or, "or")
_override_binary_operator(_logical_xor_operator, "xor")
ops.Tensor._override_operator("__neg__", lambda x: negative(x))
ops.Tensor._override_operator("__abs__", lambda x: abs(x))
ops.Tensor._override_operator("__invert__", lambda x: logical_not(x))
ops.Tensor._override_operator("__lt__", lambda x, y: less(x, y))
ops.Tensor._override_operator("__le__", lambda x, y: less_equal(x, y))
ops.Tensor._override_operator("__gt__", lambda x, y: greater(x, y))
ops.Tensor._override_operator("__ge__", lambda x, y: greater_equal(x, y))
# TF1 leaves __eq__/__ne__ as identity comparisons, so tensors stay usable as dict keys.
