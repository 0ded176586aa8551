"""Stacks: where a loop's gradient keeps the forward values it needs (TF's ``StackV2``).

The gradient of a ``tf.while_loop`` runs the loop backwards, and each of
its iterations needs values that the matching forward iteration computed.
The forward loop pushes them (``StackPushV2``, once per iteration, in
iteration order), the gradient loop pops them (``StackPopV2``) in reverse.

A stack lives for one step, like TF's, which keeps it in the step's
container: ``StackV2`` makes a new one each time it runs, and the handle it
outputs is that stack.
"""

from __future__ import annotations

import threading

from minitf.framework import dtypes, errors, ops, tensor_shape
from minitf.framework.op_registry import NotDifferentiable, register_compute

__all__ = ["stack_v2", "stack_push_v2", "stack_pop_v2"]


class Stack:
    """One step's stack of values (the value of a ``StackV2`` handle).

    Args:
        name: The stack's name (its op's), for errors.
        max_size: The most elements it holds; -1 for no bound.
    """

    def __init__(self, name: str, max_size: int):
        self.name = name
        self.max_size = max_size
        self._values: list = []
        self._lock = threading.Lock()

    def push(self, value):
        """Pushes ``value``; returns it.

        Raises:
            InvalidArgumentError: if the stack is full.
        """
        with self._lock:
            if 0 <= self.max_size <= len(self._values):
                raise errors.InvalidArgumentError(
                    None, None, f"Stack[{self.name}] overflowed its max_size ({self.max_size})"
                )
            self._values.append(value)
        return value

    def pop(self):
        """Pops the value pushed last.

        Raises:
            InvalidArgumentError: if the stack is empty.
        """
        with self._lock:
            if not self._values:
                raise errors.InvalidArgumentError(
                    None, None, f"Stack[{self.name}] is empty when calling Pop()."
                )
            return self._values.pop()


def stack_v2(max_size, elem_type, stack_name="", name=None) -> ops.Tensor:
    """A new stack each time it runs (``StackV2``); its output is the stack's handle.

    Args:
        max_size: A scalar int32 tensor: the most elements; -1 for no bound.
        elem_type: The dtype of the elements.
        stack_name: The stack's name in errors (default: the op's name).
        name: The op name (default ``"StackV2"``).
    """
    max_size = ops.convert_to_tensor(max_size, dtype=dtypes.int32, name="max_size")
    op = ops.get_default_graph().create_op(
        "StackV2",
        [max_size],
        [dtypes.resource],
        name=name or "StackV2",
        attrs={"elem_type": dtypes.as_dtype(elem_type).base_dtype, "stack_name": stack_name},
        shapes=[tensor_shape.TensorShape([])],
    )
    return op.outputs[0]


def stack_push_v2(handle, elem, swap_memory=False, name=None) -> ops.Tensor:
    """Pushes ``elem`` on the stack ``handle`` (``StackPushV2``); outputs ``elem``.

    Args:
        handle: A stack's handle.
        elem: The tensor to push.
        swap_memory: Accepted as TF's (there is no device memory to swap).
        name: The op name (default ``"StackPushV2"``).
    """
    elem = ops.convert_to_tensor(elem)
    op = ops.get_default_graph().create_op(
        "StackPushV2",
        [handle, elem],
        [elem.dtype.base_dtype],
        name=name or "StackPushV2",
        attrs={"T": elem.dtype.base_dtype, "swap_memory": bool(swap_memory)},
        shapes=[elem.get_shape()],
    )
    return op.outputs[0]


def stack_pop_v2(handle, elem_type, name=None) -> ops.Tensor:
    """Pops the value pushed last on the stack ``handle`` (``StackPopV2``).

    Args:
        handle: A stack's handle.
        elem_type: The dtype of the elements.
        name: The op name (default ``"StackPopV2"``).
    """
    elem_type = dtypes.as_dtype(elem_type).base_dtype
    op = ops.get_default_graph().create_op(
        "StackPopV2",
        [handle],
        [elem_type],
        name=name or "StackPopV2",
        attrs={"elem_type": elem_type},
    )
    return op.outputs[0]


@register_compute("StackV2", stateful=True)
def _stack(ctx, max_size):
    return Stack("stack", int(max_size))


@register_compute("StackPushV2", stateful=True)
def _stack_push(ctx, stack, elem):
    return stack.push(elem)


@register_compute("StackPopV2", stateful=True)
def _stack_pop(ctx, stack):
    return stack.pop()


for _op_type in ("StackV2", "StackPushV2", "StackPopV2"):
    NotDifferentiable(_op_type)
