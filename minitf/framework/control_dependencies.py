"""Control dependencies: ``with tf.control_dependencies([a, b]):`` makes new ops wait for a and b.

Each ``with`` block is one `_ControlDependencies` controller on the graph's
stack. A new op gets the control inputs of every enclosing block, except
those it already depends on through its data inputs, and except the blocks
its inputs were created in (such an input already waits for them), as in TF's
``Graph._control_dependencies_for_inputs``. ``tf.control_dependencies(None)``
opens a block with a new, empty stack.
"""

from __future__ import annotations

from collections.abc import Iterable

from minitf.framework.operation import Operation
from minitf.framework.tensor import Tensor


class _ControlDependencies:
    """One ``tf.control_dependencies`` block (TF's ``_ControlDependenciesController``)."""

    def __init__(self, stack: ControlDependencyStack, control_inputs: list[Operation] | None):
        self._stack = stack
        self.new_stack = control_inputs is None
        self.control_inputs = [] if control_inputs is None else control_inputs
        self.seen_ops: set[Operation] = set()
        self._saved_blocks = None

    def __enter__(self):
        if self.new_stack:
            self._saved_blocks, self._stack._blocks = self._stack._blocks, []
        self._stack._blocks.append(self)

    def __exit__(self, *exc):
        blocks = self._stack._blocks
        if not blocks or blocks[-1] is not self:
            raise RuntimeError("Control dependencies block exited out of order.")
        blocks.pop()
        if self.new_stack:
            self._stack._blocks = self._saved_blocks


class ControlDependencyStack:
    """The open ``tf.control_dependencies`` blocks of one graph, outermost first."""

    def __init__(self):
        self._blocks: list[_ControlDependencies] = []

    def block(self, control_ops: list[Operation] | None) -> _ControlDependencies:
        """A controller that adds ``control_ops`` for its block (None: a new, empty stack).

        Ops already in an enclosing block are left out.

        Args:
            control_ops: The ops the block's new ops must wait for.
        """
        if control_ops is None:
            return _ControlDependencies(self, None)
        current = {op for block in self._blocks for op in block.control_inputs}
        new_ops = []
        for op in control_ops:
            if op not in current:
                new_ops.append(op)
                current.add(op)
        return _ControlDependencies(self, new_ops)

    def for_inputs(self, input_ops: list[Operation]) -> list[Operation]:
        """The control inputs of a new op whose data inputs come from ``input_ops``.

        Args:
            input_ops: The producers of the new op's inputs.
        """
        result = []
        for block in self._blocks:
            # An input created inside the block already depends on its inputs.
            if any(op in block.seen_ops for op in input_ops):
                continue
            result.extend(c for c in block.control_inputs if c not in input_ops)
        return result

    def record(self, op: Operation) -> None:
        """Notes that ``op`` was created inside every open block.

        Args:
            op: The new op.
        """
        for block in self._blocks:
            block.seen_ops.add(op)


def control_input_op(graph, c) -> Operation:
    """The op that a control input ``c`` stands for (an op, a tensor, a variable, a name).

    IndexedSlices and resource variables stand for their op (a resource
    variable's control dependency must not read it).

    Args:
        graph: The `Graph` the control input must belong to.
        c: The control input.

    Raises:
        TypeError: if ``c`` is not an element of a graph.
    """
    if type(c).__name__ == "IndexedSlices" or (hasattr(c, "_handle") and hasattr(c, "op")):
        return c.op
    try:
        c = graph.as_graph_element(c)
    except TypeError:
        raise TypeError(f"Control input must be Operation or Tensor: {c}") from None
    if isinstance(c, Tensor):
        return c.op
    return c


def control_input_ops(graph, control_inputs: Iterable) -> list[Operation]:
    """`control_input_op` of each of ``control_inputs``.

    Args:
        graph: The `Graph` the control inputs must belong to.
        control_inputs: Ops, tensors, variables or names.
    """
    return [control_input_op(graph, c) for c in control_inputs]
