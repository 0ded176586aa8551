"""``tf.Print`` and ``tf.Assert``: ops that write a tensor's value, or fail the step with it.

Both run where they are placed: ``Print`` writes to the standard error of
the process of its task — in a cluster, a ps or worker process, not the
client — and ``Assert`` fails the step there, which aborts it everywhere.
Both kernels are stateful, as TF registers them, so the graph optimizer
never folds them (`minitf.runtime.core.graph_optimizer`).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops
from minitf.framework.op_registry import (
    NotDifferentiable,
    RegisterGradient,
    register_kernel,
)
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.debugging.summarize import summarize_value

__all__ = ["Print", "Assert"]


def Print(  # noqa: N802
    input_: Any,
    data: list,
    message: str | None = None,
    first_n: int | None = None,
    summarize: int | None = None,
    name: str | None = None,
) -> ops.Tensor:
    """Returns ``input_``, writing ``message`` and ``data`` to stderr when it runs.

    Each time the op runs (at most ``first_n`` times, if that is not negative)
    its task's process writes one line to its standard error: ``message``,
    then each tensor of ``data`` in brackets, ``summarize`` elements of each
    (``m:[1 2 3][4]``). The line appears only if the returned tensor is used.

    Args:
        input_: The tensor passed through.
        data: A list of tensors to write.
        message: A string written first (default empty).
        first_n: Write only the first ``first_n`` times (default: every time).
        summarize: How many elements of each tensor to write (default 3;
            negative: all).
        name: A name for the operation (optional).

    Returns:
        A tensor with the value, dtype and shape of ``input_``.
    """
    with ops.name_scope(name, "Print", [input_] + list(data)) as scope:
        value = ops.convert_to_tensor(input_, name="input")
        data = ops.convert_n_to_tensor(list(data), name="data")
        op = ops.get_default_graph().create_op(
            "Print",
            [value] + data,
            [value.dtype.base_dtype],
            name=scope,
            attrs={
                "T": value.dtype.base_dtype,
                "U": [t.dtype.base_dtype for t in data],
                "message": "" if message is None else str(message),
                "first_n": -1 if first_n is None else int(first_n),
                "summarize": 3 if summarize is None else int(summarize),
            },
            shapes=[value.get_shape()],
        )
    return op.outputs[0]


def _summarized(values, summarize: int) -> str:
    return "".join(f"[{summarize_value(v, summarize)}]" for v in values)


@register_kernel("Print", stateful=True)
def _print_kernel(op):
    message = op.get_attr("message")
    first_n = op.get_attr("first_n")
    summarize = op.get_attr("summarize")
    lock = threading.Lock()
    printed = [0]  # like TF's call_counter_: one per kernel, so per session and op

    def compute(ctx, value, *data):
        if first_n >= 0:
            with lock:
                if printed[0] >= first_n:
                    return value
                printed[0] += 1
        # The op's purpose is this line on the task's stderr (TF writes to std::cerr).
        sys.stderr.write(message + _summarized(data, summarize) + "\n")
        sys.stderr.flush()
        return value

    return compute


@RegisterGradient("Print")
def _print_grad(op, *grads):
    return list(grads) + [None] * (len(op.inputs) - 1)


def Assert(  # noqa: N802
    condition: Any, data: list, summarize: int | None = None, name: str | None = None
) -> ops.Operation:
    """An op that fails the step with ``InvalidArgumentError`` when ``condition`` is false.

    The error says ``assertion failed:`` and each tensor of ``data`` in
    brackets (``summarize`` elements of each, default 3). Unless every
    tensor of ``data`` is ``int32`` or ``string``, TF puts the check in a
    ``tf.cond`` named ``AssertGuard`` (the data then need not be copied
    when the condition holds), and so does minitf.

    Args:
        condition: A scalar bool tensor.
        data: The tensors to write in the error.
        summarize: How many elements of each tensor to write.
        name: A name for the operation (optional).

    Returns:
        The op to run (or to use in ``tf.control_dependencies``).
    """
    with ops.name_scope(name, "Assert", [condition] + list(data)):
        tensors = ops.convert_n_to_tensor(list(data))
        if all(t.dtype.base_dtype in (dtypes.string, dtypes.int32) for t in tensors):
            return _assert(condition, tensors, summarize, "Assert")
        condition = ops.convert_to_tensor(condition, name="Condition")
        guarded = control_flow_ops.cond(
            condition,
            control_flow_ops.no_op,
            lambda: _assert(condition, tensors, summarize, "Assert"),
            name="AssertGuard",
        )
        return guarded.op


def _assert(condition, data: list, summarize, name: str) -> ops.Operation:
    """The ``Assert`` op itself (TF's ``gen_logging_ops._assert``)."""
    condition = ops.convert_to_tensor(condition, dtype=dtypes.bool, name="condition")
    return ops.get_default_graph().create_op(
        "Assert",
        [condition] + data,
        [],
        name=name,
        attrs={
            "T": [t.dtype.base_dtype for t in data],
            "summarize": 3 if summarize is None else int(summarize),
        },
    )


def _is_legacy_scalar(shape: tuple) -> bool:
    # TF1's AssertOp takes a scalar or a one-element vector (IsLegacyScalar).
    return shape == () or shape == (1,)


@register_kernel("Assert", stateful=True)
def _assert_kernel(op):
    summarize = op.get_attr("summarize")

    def compute(ctx, condition, *data):
        shape = np.shape(condition)
        if not _is_legacy_scalar(shape):
            raise errors.InvalidArgumentError(
                op.node_def, op, f"In[0] should be a scalar: [{','.join(map(str, shape))}]"
            )
        if not np.asarray(condition).reshape(()):
            raise errors.InvalidArgumentError(
                op.node_def,
                op,
                "assertion failed: " + " ".join(f"[{summarize_value(v, summarize)}]" for v in data),
            )

    return compute


NotDifferentiable("Assert")
