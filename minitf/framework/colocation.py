"""Colocation: ``with tf.colocate_with(op):`` puts new ops where ``op`` is.

An op's colocation groups are its ``_class`` attr (``[b"loc:@w"]``): every op
created in the block joins the groups of the ops on the colocation stack and,
if one of them has a device, takes that device. A session then places every
op of a group together (`minitf.runtime.distributed.partition.place`). The graph empties
its device-function stack for the block: colocation beats every ``tf.device``
scope, as in TF.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from minitf.framework.operation import Operation
from minitf.framework.tensor import Tensor
from minitf.framework.tensor_conversion import convert_to_tensor


class ColocationStack:
    """The ops new ops are colocated with, innermost last (TF's ``_colocation_stack``)."""

    def __init__(self):
        self._ops: list[Operation] = []

    @contextlib.contextmanager
    def push(self, op: Operation | None, ignore_existing: bool = False) -> Iterator:
        """Colocates the ops created in a block with ``op``.

        Args:
            op: The op to colocate with, or None to push nothing.
            ignore_existing: Whether to drop the enclosing colocations for the block.
        """
        saved = None
        if ignore_existing:
            saved, self._ops = self._ops, []
        if op is not None:
            self._ops.append(op)
        try:
            yield
        finally:
            if op is not None:
                self._ops.pop()
            if ignore_existing:
                self._ops = saved

    def apply(self, op: Operation) -> None:
        """Puts the new ``op`` in the groups of the stack's ops, on the innermost device.

        Args:
            op: The new op.
        """
        if not self._ops:
            return
        groups = set()
        device_set = False
        for target in reversed(self._ops):
            groups.update(target.colocation_groups())
            if target.device and not device_set:
                op._set_device(target.device, f"colocate_with({target.name})")
                device_set = True
        op._set_attr("_class", sorted(groups))


def op_to_colocate_with(v: Any) -> Operation | None:
    """The op that ``v`` (an op, a tensor, a variable or a value) stands for, or None.

    Args:
        v: What ``tf.colocate_with`` was given.
    """
    if v is None:
        return None
    if isinstance(v, Operation):
        return v
    if isinstance(v, Tensor):
        return v.op
    conv = getattr(v, "_as_graph_element", None)
    if conv is not None:
        elem = conv()
        return elem.op if isinstance(elem, Tensor) else elem
    op = getattr(v, "op", None)
    if isinstance(op, Operation):
        return op
    return convert_to_tensor(v).op
