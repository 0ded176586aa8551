"""A loop as dataflow: TF1's ``WhileContext`` and the ops a loop is made of.

``tf.while_loop`` does not run Python in a loop: it builds one copy of the
condition and the body, wired into a cycle by five op types (TF1's
``control_flow_ops.py``):

* ``Enter`` moves a value into the loop's *frame* (its ``frame_name``); a
  *constant* Enter (``is_constant``) makes a value from outside visible to
  every iteration;
* ``Merge`` takes the loop variable from ``Enter`` in iteration 0 and from
  ``NextIteration`` afterwards;
* ``LoopCond`` + ``Switch`` send it to the body (true) or out (false);
* ``NextIteration`` carries the body's result to the next iteration;
* ``Exit`` returns the final value to the enclosing frame.

A `WhileContext` is the graph-building state of one loop: while it is the
graph's control-flow context, every op built is taken in by `WhileContext.AddOp`
— a tensor from outside the loop is replaced by a constant ``Enter`` of it,
an op with no input gets a control input from the loop's pivot, so that it
runs once per iteration, not once per step. The executor runs what this
builds (`minitf.runtime.core.frames`).
"""

from __future__ import annotations

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.array import array_ops, constant_op
from minitf.ops.common_shapes import shape_error
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.control_flow.control_flow_util import (
    input_context,
    is_loop_constant_enter,
    output_context,
)


def _is_within(context: WhileContext | None, outer: WhileContext) -> bool:
    """True if ``context`` is ``outer`` or a loop nested in it."""
    while context is not None:
        if context is outer:
            return True
        context = context.outer_context
    return False


class _Wiring:
    """The context of a loop's own ops while they are built: they are wired by hand."""

    def AddOp(self, op: ops.Operation) -> None:  # noqa: N802 - TF's name
        """Leaves ``op`` as it is."""


class _NoContext:
    """Builds ops outside every loop's processing (the loop's own ops are wired by hand)."""

    _wiring = _Wiring()

    def __init__(self, graph):
        self._graph = graph

    def __enter__(self):
        self._saved = self._graph._get_control_flow_context()
        self._graph._set_control_flow_context(self._wiring)

    def __exit__(self, *exc):
        self._graph._set_control_flow_context(self._saved)


def _loop_op(op_type: str, data: ops.Tensor, name: str, attrs: dict, shape=None) -> ops.Tensor:
    """One ``Enter``/``Exit``/``NextIteration``/``LoopCond`` op, forwarding ``data``."""
    graph = ops.get_default_graph()
    dtype = data.dtype if op_type.startswith("Ref") else data.dtype.base_dtype
    with _NoContext(graph):
        op = graph.create_op(
            op_type,
            [data],
            [dtype],
            name=name,
            attrs={"T": data.dtype.base_dtype, **attrs},
            shapes=[data.get_shape() if shape is None else shape],
        )
    # It belongs to the loop being built (an Enter's builder says which loop it enters).
    op._control_flow_context = graph._get_control_flow_context()
    return op.outputs[0]


def enter(data, frame_name: str, is_constant=False, parallel_iterations=10, shape=None, name=None):
    """``Enter``: ``data`` in the child frame ``frame_name`` (TF's ``_Enter``; not processed).

    Args:
        data: The tensor entering.
        frame_name: The loop's frame.
        is_constant: A loop invariant: the value is seen by every iteration.
        parallel_iterations: How many iterations of the frame may run at once.
        shape: The static shape of the output (default: ``data``'s).
        name: The op name (default ``"Enter"``).
    """
    data = ops.convert_to_tensor(data)
    op_type = "RefEnter" if data.dtype._is_ref_dtype else "Enter"
    attrs = {
        "frame_name": frame_name,
        "is_constant": bool(is_constant),
        "parallel_iterations": int(parallel_iterations),
    }
    return _loop_op(op_type, data, name or "Enter", attrs, shape)


def exit(data, name=None):  # noqa: A001 - TF's name
    """``Exit``: ``data`` back in the enclosing frame."""
    return _loop_op("Exit", ops.convert_to_tensor(data), name or "Exit", {})


def next_iteration(data, name=None):
    """``NextIteration``: ``data`` in the next iteration of its frame."""
    return _loop_op("NextIteration", ops.convert_to_tensor(data), name or "NextIteration", {})


def loop_cond(pred, name=None):
    """``LoopCond``: the loop's predicate, which its ``Switch`` es route on.

    Raises:
        TypeError: if ``pred`` is not a bool tensor.
        ValueError: if ``pred`` is not a scalar.
    """
    pred = ops.convert_to_tensor(pred)
    if pred.dtype.base_dtype != dtypes.bool:
        raise TypeError(
            f"Input 'input' of 'LoopCond' Op has type {pred.dtype.base_dtype.name} that does "
            "not match expected type of bool."
        )
    scope = ops.get_default_graph().unique_name(name or "LoopCond", mark_as_used=False)
    ndims = pred.get_shape().ndims
    if ndims not in (None, 0):
        raise shape_error(f"Shape must be rank 0 but is rank {ndims}", scope, "LoopCond", pred)
    return _loop_op("LoopCond", pred, name or "LoopCond", {}, tensor_shape.TensorShape([]))


def shape_less_than_or_equal(shape1, shape2) -> bool:
    """True if ``shape1`` is at least as specific as ``shape2`` (TF's ``_ShapeLessThanOrEqual``)."""
    if shape2.dims is None:
        return True
    if shape1.ndims != shape2.ndims:
        return False
    return all(d2 is None or d1 == d2 for d1, d2 in zip(shape1.as_list(), shape2.as_list()))


class WhileContext:
    """The graph-building state of one ``tf.while_loop`` (TF1's ``WhileContext``).

    Args:
        maximum_iterations: The loop's bound, a tensor, or None.
        parallel_iterations: How many iterations may run at once.
        back_prop: Whether gradients flow through the loop.
        swap_memory: Accepted as TF's (there is no device memory to swap to).
        name: The base of the frame name (made unique in the current name scope).
        grad_state: The gradient state, for a loop that computes a gradient.

    Raises:
        ValueError: if ``parallel_iterations`` is not a positive integer.
    """

    def __init__(
        self,
        maximum_iterations=None,
        parallel_iterations=10,
        back_prop=True,
        swap_memory=False,
        name="while_context",
        grad_state=None,
    ):
        if not isinstance(parallel_iterations, int) or parallel_iterations <= 0:
            raise ValueError(
                f"'parallel_iterations' must be a positive integer: {parallel_iterations}"
            )
        self._graph = ops.get_default_graph()
        self._name = self._graph.unique_name(name)
        self._outer_context = self._graph._get_control_flow_context()
        self._maximum_iterations = maximum_iterations
        self._parallel_iterations = parallel_iterations
        self._back_prop = back_prop
        self._swap_memory = swap_memory
        self._grad_state = grad_state
        self._pivot_for_pred = None
        self._pivot_for_body = None
        self._pivot = None
        self._loop_enters: list[ops.Tensor] = []
        self._loop_exits: list[ops.Tensor] = []
        self._values: set[ops.Tensor] = set()
        self._external_values: dict[ops.Tensor, ops.Tensor] = {}
        self._context_stack: list = []

    name = property(lambda self: self._name, doc="The frame name of the loop.")
    outer_context = property(lambda self: self._outer_context, doc="The enclosing loop, or None.")
    parallel_iterations = property(lambda self: self._parallel_iterations)
    maximum_iterations = property(lambda self: self._maximum_iterations)
    back_prop = property(lambda self: self._back_prop, doc="Whether gradients flow.")
    swap_memory = property(lambda self: self._swap_memory)
    pivot = property(lambda self: self._pivot, doc="The ``LoopCond`` output.")
    loop_enters = property(lambda self: self._loop_enters, doc="The loop variables' Enters.")
    loop_exits = property(lambda self: self._loop_exits, doc="The loop variables' Exits.")
    grad_state = property(lambda self: self._grad_state, doc="The gradient state, or None.")

    def GetWhileContext(self) -> WhileContext:  # noqa: N802 - TF's name
        """This loop."""
        return self

    def GetControlPivot(self) -> ops.Tensor:  # noqa: N802 - TF's name
        """The tensor whose op gates the body's ops (the condition's, while it is built)."""
        return self._pivot_for_body if self._pivot_for_body is not None else self._pivot_for_pred

    def Enter(self) -> None:  # noqa: N802 - TF's name
        """Makes this loop the graph's control-flow context."""
        self._context_stack.append(self._graph._get_control_flow_context())
        self._graph._set_control_flow_context(self)

    def Exit(self) -> None:  # noqa: N802 - TF's name
        """Restores the context that was current before `Enter`."""
        self._graph._set_control_flow_context(self._context_stack.pop())

    def AddName(self, tensor: ops.Tensor) -> None:  # noqa: N802 - TF's name
        """Makes ``tensor`` known to the loop as one of its own values."""
        self._values.add(tensor)

    def ExitResult(self, result) -> None:  # noqa: N802 - TF's name
        """Makes the loop's exits values of the enclosing loop."""
        if self._outer_context is not None:
            for t in result:
                self._outer_context.AddName(t)

    def AddValue(self, val: ops.Tensor) -> ops.Tensor:  # noqa: N802 - TF's name
        """The tensor the loop reads for ``val``: ``val``, or a constant ``Enter`` of it.

        A gradient loop reading a value of its forward loop reads it from the
        stack the forward loop pushed it on (`GetRealValue` of its grad state).

        Args:
            val: A tensor an op in the loop reads.
        """
        if val in self._values or val.op._control_flow_context is self:
            return self._external_values.get(val, val)
        self._values.add(val)
        grad_state = self._grad_state
        if grad_state is not None:
            forward = output_context(val.op)
            if forward is not None and forward is grad_state.forward_context:
                real = grad_state.GetRealValue(val)
                self._external_values[val] = real
                return real
        result = val
        if self._outer_context is not None:
            result = self._outer_context.AddValue(val)
        entered = self.enter_value(result, is_constant=True)
        self._values.add(entered)
        self._external_values[val] = entered
        return entered

    def enter_value(self, value: ops.Tensor, is_constant: bool, shape=None, name=None):
        """An ``Enter`` of ``value`` into this loop, with the enclosing loop's control inputs.

        Control inputs of open ``control_dependencies`` blocks that lie in the
        enclosing frame are kept; those inside a loop are not (TF's
        ``_FixControlInputsAndContext``).
        """
        graph = self._graph
        controls = graph._control_dependencies_stack.for_inputs([value.op])
        with ops.control_dependencies(None):
            entered = enter(
                value, self._name, is_constant, self._parallel_iterations, shape=shape, name=name
            )
        entered.op._control_flow_context = self
        graph.prevent_feeding(entered)
        for c in controls:
            if output_context(c) is self._outer_context:
                entered.op._add_control_input(c)
        return entered

    def AddOp(self, op: ops.Operation) -> None:  # noqa: N802 - TF's name
        """Takes a new op of the loop's body or condition in.

        Inputs from outside the loop are replaced by constant ``Enter`` s; control
        inputs from outside are removed (and, for ops with outputs, pulled in
        through an ``Identity``); an op with no input, or whose inputs are all
        loop invariants, gets a control input from the pivot, so that it runs
        in the iterations the loop makes, no more.

        Args:
            op: The op, just created in this context.
        """
        op._control_flow_context = self
        for t in op.inputs:
            if t.op._control_flow_context is not None:
                t.op._control_flow_context.check_consumer(op, t.op)
        if not op.inputs:
            internal, external = self._split_control_inputs(op)
            if not internal:
                op._add_control_input(self.GetControlPivot().op)
        else:
            for index, x in enumerate(op.inputs):
                real = self.AddValue(x)
                if real is not x:
                    op._update_input(index, real)
            _, external = self._split_control_inputs(op)
            self._maybe_add_control_dependency(op)
        self._values.update(op.outputs)
        if external:
            with ops.control_dependencies(None):
                pulled = [array_ops.identity(c.outputs[0]).op for c in external if c.outputs]
            op._add_control_inputs(pulled)
        op.graph.prevent_fetching(op)
        for t in op.outputs:
            op.graph.prevent_feeding(t)

    def _split_control_inputs(self, op: ops.Operation) -> tuple[list, list]:
        """``(internal, external)`` control inputs; only the internal ones stay on ``op``."""
        internal, external = [], []
        for c in op.control_inputs:
            (internal if output_context(c) is self else external).append(c)
        if external:
            op._set_control_inputs(internal)
        return internal, external

    def _maybe_add_control_dependency(self, op: ops.Operation) -> None:
        """Gates an op that reads only loop invariants: else it runs in no iteration's time."""
        if op.control_inputs:
            return
        if all(is_loop_constant_enter(t.op) for t in op.inputs):
            op._add_control_input(self.GetControlPivot().op)

    def check_consumer(self, op: ops.Operation, producer: ops.Operation) -> None:
        """Raises if ``op`` may not read an output of ``producer``, an op of this loop.

        An op reads a loop's tensor only from inside the loop (or a loop nested
        in it), or from the loop's gradient loop; outside, it reads the loop's
        ``Exit`` s (TF's ``CheckInputFromValidContext``).

        Raises:
            ValueError: TF's "Cannot use ... because ... is in a while loop."
        """
        inside = output_context(producer)
        if inside is None:
            return
        context = input_context(op)
        if _is_within(context, inside):
            return
        while context is not None:
            state = context.grad_state
            if state is not None and _is_within(state.forward_context, inside):
                return
            context = context.outer_context
        if input_context(op) is None:
            raise ValueError(
                f"Cannot use '{producer.name}' as input to '{op.name}' because "
                f"'{producer.name}' is in a while loop. See info log for more details."
            )
        raise ValueError(
            f"Cannot use '{producer.name}' as input to '{op.name}' because they are in "
            "different while loops. See info log for more details."
        )

    def AddForwardLoopCounter(self, outer_grad_state):  # noqa: N802 - TF's name
        """Adds a counter of iterations to this (forward) loop: ``(count, next index)``.

        The count exits the loop as the number of iterations the gradient
        loop makes; the next index orders each iteration's stack pushes.
        """
        from minitf.ops.math import math_ops

        n = constant_op.constant(0, name="f_count")
        if outer_grad_state is not None:
            # The count restarts with each execution of this inner loop.
            n.op._add_control_input(outer_grad_state.forward_index.op.inputs[0].op)
        self.Enter()
        self.AddName(n)
        enter_n = self.enter_value(n, is_constant=False, name="f_count")
        self.loop_enters.append(enter_n)
        merge_n = control_flow_ops.merge([enter_n, enter_n])[0]
        switch_n = control_flow_ops.switch(merge_n, self._pivot)
        index = math_ops.add(switch_n[1], 1)
        next_n = next_iteration(index)
        merge_n.op._update_input(1, next_n)
        total = exit(switch_n[0], name="f_count")
        self.loop_exits.append(total)
        self.ExitResult([total])
        self.Exit()
        return total, next_n

    def AddBackpropLoopCounter(self, count, outer_grad_state):  # noqa: N802 - TF's name
        """Adds the gradient loop's own counter, from ``count`` down to 1; returns its index."""
        from minitf.ops.math import math_ops

        one = constant_op.constant(1, name="b_count")
        self.Enter()
        self.AddName(count)
        enter_count = self.enter_value(count, is_constant=False, name="b_count")
        self.loop_enters.append(enter_count)
        merge_count = control_flow_ops.merge([enter_count, enter_count])[0]
        self._pivot_for_pred = merge_count
        pred = math_ops.greater_equal(merge_count, one)
        self._pivot = loop_cond(pred, name="b_count")
        switch_count = control_flow_ops.switch(merge_count, self._pivot)
        index = math_ops.subtract(switch_count[1], one)
        self._pivot_for_body = index
        next_count = next_iteration(index)
        merge_count.op._update_input(1, next_count)
        final_zero = exit(switch_count[0], name="b_count")
        self.loop_exits.append(final_zero)
        if outer_grad_state is not None:
            # Pops in the outer gradient loop wait for this loop to finish.
            outer_grad_state.grad_sync._add_control_input(final_zero.op)
        self.ExitResult([final_zero])
        self.Exit()
        return next_count

    def __repr__(self) -> str:
        return f"<WhileContext '{self._name}'>"
