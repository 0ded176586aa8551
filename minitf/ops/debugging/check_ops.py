"""TF1's checks: ``tf.assert_equal``, ``tf.assert_less``, ``tf.assert_rank``, ...

Each builds a ``tf.Assert`` whose data say what was expected, and — as TF1
does — checks at graph construction what it can: a comparison of two
tensors whose values are known (`minitf.framework.tensor_util.constant_value`)
raises ``InvalidArgumentError`` right away, a rank known from the static shape
raises ``ValueError``, and a dtype is always checked statically (``TypeError``).
When the static check passes for a rank or dtype, the result is a ``NoOp``.
The messages follow TF 1.15's ``tensorflow/python/ops/check_ops.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops, tensor_util
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.debugging.logging_ops import Assert
from minitf.ops.math import math_ops

__all__ = [
    "assert_equal",
    "assert_none_equal",
    "assert_less",
    "assert_less_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_positive",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_rank",
    "assert_type",
]


def _constant_text(item) -> str:
    """``item`` as the static error writes it: a known tensor as its numpy value."""
    if not isinstance(item, ops.Tensor):
        return str(item)
    value = tensor_util.constant_value(item)
    return str(item) if value is None else str(value)


def _assert_static(condition: bool, data: list) -> None:
    """Raises the error the ``Assert`` would raise, now (TF's ``_assert_static``)."""
    if not condition:
        raise errors.InvalidArgumentError(None, None, "\n".join(_constant_text(d) for d in data))


def _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize, message, name):
    """``Assert(reduce_all(op_func(x, y)))``, checked now when ``x`` and ``y`` are known."""
    with ops.name_scope(name, opname, [x, y, data]):
        x = ops.convert_to_tensor(x, name="x")
        y = ops.convert_to_tensor(y, name="y")
        if data is None:
            data = [
                f"Condition x {sym} y did not hold element-wise:",
                f"x ({x.name}) = ",
                x,
                f"y ({y.name}) = ",
                y,
            ]
        if message is not None:
            data = [message] + list(data)
        condition = math_ops.reduce_all(op_func(x, y))
        x_static, y_static = tensor_util.constant_value(x), tensor_util.constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(bool(np.all(static_func(x_static, y_static))), data)
        return Assert(condition, data, summarize=summarize)


_BINARY_DOC = """Asserts ``x {sym} y`` element-wise (broadcast); empty inputs pass.

    Args:
        x: A numeric tensor.
        y: A numeric tensor of the dtype of ``x``, broadcastable to it.
        data: The tensors the error writes (default: the condition, ``x`` and ``y``).
        summarize: How many elements of each tensor the error writes.
        message: A string written before the data.
        name: A name for the operation (optional).

    Returns:
        The ``Assert`` op to run or depend on.

    Raises:
        InvalidArgumentError: at once, if ``x`` and ``y`` are known and the
            condition fails; else when the op runs and it fails.
    """


def _binary(opname: str, sym: str, op_func, static_func):
    """The public check ``opname``: ``x {sym} y``, by ``op_func`` (now: ``static_func``)."""

    def check(
        x: Any,
        y: Any,
        data: list | None = None,
        summarize: int | None = None,
        message: str | None = None,
        name: str | None = None,
    ) -> ops.Operation:
        return _binary_assert(
            sym, opname, op_func, static_func, x, y, data, summarize, message, name
        )

    check.__name__ = check.__qualname__ = opname
    check.__doc__ = _BINARY_DOC.format(sym=sym)
    return check


assert_equal = _binary("assert_equal", "==", math_ops.equal, np.equal)
assert_none_equal = _binary("assert_none_equal", "!=", math_ops.not_equal, np.not_equal)
assert_less = _binary("assert_less", "<", math_ops.less, np.less)
assert_less_equal = _binary("assert_less_equal", "<=", math_ops.less_equal, np.less_equal)
assert_greater = _binary("assert_greater", ">", math_ops.greater, np.greater)
assert_greater_equal = _binary(
    "assert_greater_equal", ">=", math_ops.greater_equal, np.greater_equal
)


_SIGN_DOC = """Asserts ``x {sym} 0`` element-wise; an empty ``x`` passes.

    Args:
        x: A numeric tensor.
        data: The tensors the error writes (default: the condition and ``x``).
        summarize: How many elements of each tensor the error writes.
        message: A string written first.
        name: A name for the operation (optional).

    Returns:
        The ``Assert`` op to run or depend on.

    Raises:
        InvalidArgumentError: at once, if ``x`` is known and fails; else when
            the op runs and it fails.
    """


def _sign(opname: str, sym: str, zero_first: bool, compare):
    """The public check ``opname``: ``x {sym} 0``, as ``compare(0, x)`` or ``compare(x, 0)``.

    TF1 writes its own message (``message`` first, even when empty) and
    leaves the comparison to ``assert_less`` or ``assert_less_equal``.
    """

    def check(
        x: Any,
        data: list | None = None,
        summarize: int | None = None,
        message: str | None = None,
        name: str | None = None,
    ) -> ops.Operation:
        message = message or ""
        with ops.name_scope(name, opname, [x, data]):
            x = ops.convert_to_tensor(x, name="x")
            if data is None:
                data = [message, f"Condition x {sym} 0 did not hold element-wise:"]
                data += [f"x ({x.name}) = ", x]
            zero = ops.convert_to_tensor(0, dtype=x.dtype)
            left, right = (zero, x) if zero_first else (x, zero)
            return compare(left, right, data=data, summarize=summarize)

    check.__name__ = check.__qualname__ = opname
    check.__doc__ = _SIGN_DOC.format(sym=sym)
    return check


assert_positive = _sign("assert_positive", ">", True, assert_less)
assert_negative = _sign("assert_negative", "<", False, assert_less)
assert_non_negative = _sign("assert_non_negative", ">=", True, assert_less_equal)
assert_non_positive = _sign("assert_non_positive", "<=", False, assert_less_equal)


def assert_rank(
    x: Any,
    rank: Any,
    data: list | None = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> ops.Operation:
    """Asserts that ``x`` has rank ``rank``.

    Args:
        x: A tensor.
        rank: A scalar ``int32`` tensor (or int).
        data: The tensors the error writes (default: the rank and ``x``'s shape).
        summarize: How many elements of each tensor the error writes.
        message: A string written first.
        name: A name for the operation (optional).

    Returns:
        A ``NoOp`` if the static shape already shows the rank is right, else
        the ``Assert`` op.

    Raises:
        ValueError: if the static shape shows the rank is wrong, or ``rank``
            is known and not a scalar.
        TypeError: if ``rank`` is not ``int32``.
    """
    with ops.name_scope(name, "assert_rank", [x, rank] + list(data or [])):
        x = ops.convert_to_tensor(x, name="x")
        rank = ops.convert_to_tensor(rank, name="rank")
        message = message or ""
        if data is None:
            data = [message, f"Tensor {x.name} must have rank", rank, "Received shape: "]
            data.append(array_ops.shape(x))
        assert_type(rank, dtypes.int32)
        rank_static = tensor_util.constant_value(rank)
        if rank_static is not None:
            if np.ndim(rank_static) != 0:
                raise ValueError("Rank must be a scalar.")
            x_rank = x.get_shape().ndims
            if x_rank is not None:
                if x_rank != int(rank_static):
                    raise ValueError(
                        f"{message}.  Tensor {x.name} must have rank {int(rank_static)}.  "
                        f"Received rank {x_rank}, shape {x.get_shape()}"
                    )
                return control_flow_ops.no_op(name="static_checks_determined_all_ok")
        condition = math_ops.equal(array_ops.rank(x), rank)
        if rank_static is None:
            # A rank that is not a scalar would compare element-wise: check it is one.
            rank_check = assert_rank(rank, 0, data=["Rank must be a scalar. Received rank: ", rank])
            condition = control_flow_ops.with_dependencies([rank_check], condition)
        return Assert(condition, data, summarize=summarize)


def assert_type(
    tensor: Any, tf_type: dtypes.DType, message: str | None = None, name: str | None = None
) -> ops.Operation:
    """Asserts, at graph construction, that ``tensor`` has dtype ``tf_type``.

    Args:
        tensor: A tensor.
        tf_type: The expected dtype.
        message: A string written first.
        name: A name for the operation (optional).

    Returns:
        A ``NoOp`` (the check is static).

    Raises:
        TypeError: if the dtype is not ``tf_type``.
    """
    message = message or ""
    tf_type = dtypes.as_dtype(tf_type)
    with ops.name_scope(name, "assert_type", [tensor]):
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(f"{message}  {tensor.name} must be of type {tf_type}")
        return control_flow_ops.no_op("statically_determined_correct_type")
