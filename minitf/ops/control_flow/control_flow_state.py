"""The gradient of a ``tf.while_loop``: a second loop that runs the first one backwards.

For each forward loop between ``xs`` and ``ys``, ``tf.gradients`` builds
(TF1's ``control_flow_state.py``):

* a counter in the forward loop (``f_count``) — how many iterations ran;
* a gradient loop in a frame of its own, counting down from that number
  (``b_count``): its iteration ``k`` computes the gradient of forward
  iteration ``n - 1 - k``;
* for each forward value the gradient needs, a stack (``f_acc``): the
  forward loop pushes the value each iteration, the gradient loop pops
  it, so each backward iteration sees its forward iteration's value.

`GradLoopState` is that state for one loop; `ControlFlowState` holds one
per loop and tells ``tf.gradients`` which gradient loop an op's gradient
is built in.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.ops.array import array_ops, constant_op
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.control_flow.control_flow_util import (
    LOOP_EXIT_TYPES,
    input_context,
    is_loop_constant_enter,
    output_context,
)
from minitf.ops.control_flow.while_context import WhileContext, next_iteration
from minitf.ops.data_flow import stack_ops

__all__ = ["ControlFlowState", "GradLoopState", "maybe_create_control_flow_state"]


class GradLoopState:
    """A forward loop and its gradient loop, and what passes between them.

    Args:
        forward_ctxt: The forward loop's `WhileContext`.
        outer_grad_state: The state of the enclosing loop, for a nested loop.
        call_context: The context ``tf.gradients`` was called in.
    """

    def __init__(
        self, forward_ctxt: WhileContext, outer_grad_state: GradLoopState | None, call_context
    ):
        self.call_context = call_context  # where tf.gradients was called
        self.outer_grad_state = outer_grad_state
        self.forward_context = forward_ctxt
        self.history_map: dict[ops.Tensor, ops.Tensor] = {}
        self.switch_map: dict[ops.Operation, ops.Tensor] = {}
        self.unused_exits: list[ops.Tensor] = []
        self.deferred_exits: list[ops.Tensor] = []
        self.forward_loop_exits = list(forward_ctxt.loop_exits)
        self.pending_exits_count = len(forward_ctxt.loop_exits)
        self._grad_sync = None
        self._forward_sync = None
        outer_forward = (
            outer_grad_state.forward_context if outer_grad_state else forward_ctxt.outer_context
        )
        with _entered(outer_forward):
            count, self.forward_index = forward_ctxt.AddForwardLoopCounter(outer_grad_state)
        if outer_grad_state is not None:
            # A nested loop runs once per outer iteration: keep each run's count.
            outer_forward.AddName(count)
            history = outer_grad_state.AddForwardAccumulator(count)
            with _entered(outer_grad_state.grad_context):
                self.grad_context = self._new_grad_context()
                real_count = outer_grad_state.AddBackpropAccumulatedValue(history, count)
                self.grad_index = self.grad_context.AddBackpropLoopCounter(
                    real_count, outer_grad_state
                )
        else:
            with _entered(outer_forward):
                self.grad_context = self._new_grad_context()
                self.grad_index = self.grad_context.AddBackpropLoopCounter(count, None)

    def _new_grad_context(self) -> WhileContext:
        forward = self.forward_context
        return WhileContext(
            maximum_iterations=forward.maximum_iterations,
            parallel_iterations=forward.parallel_iterations,
            back_prop=forward.back_prop,
            swap_memory=forward.swap_memory,
            name=forward.name,
            grad_state=self,
        )

    @property
    def grad_sync(self) -> ops.Operation:
        """A ``ControlTrigger`` the next backward iteration waits for: pops stay in order."""
        if self._grad_sync is None:
            with _entered(_WIRING), ops.control_dependencies(None):
                self._grad_sync = control_flow_ops.control_trigger(name="b_sync")
            self._grad_sync._control_flow_context = self.grad_context
            self.grad_index.op._add_control_input(self._grad_sync)
        return self._grad_sync

    def AddForwardAccumulator(self, value: ops.Tensor) -> ops.Tensor:  # noqa: N802 - TF's name
        """A stack that the forward loop pushes ``value`` on, each iteration, in order.

        Each push runs after the iteration's counter is incremented and before
        the counter goes on to the next iteration, so pushes come in
        iteration order.

        Returns:
            The stack's handle.
        """
        graph = value.graph
        current = graph._get_control_flow_context()
        with ops.control_dependencies(None):
            with _entered(current), ops.colocate_with(value):
                max_size = constant_op.constant(-1, name="f_acc_size")
                acc = stack_ops.stack_v2(max_size, value.dtype.base_dtype, name="f_acc")
            enter_acc = self.forward_context.AddValue(acc)
            with _entered(self.forward_context):
                push = stack_ops.stack_push_v2(enter_acc, value)
        if self._cond_of(value) is None:
            self.forward_index.op._add_control_input(push.op)
        else:
            # A push in a cond's branch is dead when the branch is not taken.
            self.forward_sync._add_control_input(push.op)
        push.op._add_control_input(self.forward_index.op.inputs[0].op)
        return acc

    @property
    def forward_sync(self) -> ops.Operation:
        """A ``ControlTrigger`` the forward counter waits for: it runs after pushes, dead or not."""
        if self._forward_sync is None:
            with _entered(_WIRING), ops.control_dependencies(None):
                self._forward_sync = control_flow_ops.control_trigger(name="f_sync")
            self._forward_sync._control_flow_context = self.forward_context
            self.forward_index.op._add_control_input(self._forward_sync)
        return self._forward_sync

    def _cond_of(self, value: ops.Tensor):
        """The innermost cond branch inside the forward loop that ``value`` is made in, or None."""
        context = value.op._cond_context
        while context is not None and context.while_context is not self.forward_context:
            context = context.outer_context
        return context

    def AddBackpropAccumulatedValue(self, history_value, value):  # noqa: N802 - TF's name
        """The gradient loop's pop of ``history_value``: this backward iteration's ``value``.

        A value of a cond's branch was pushed only in the iterations that took
        the branch: the pop goes through a ``Switch`` on the cond's predicate
        of that iteration (itself popped), so it pops only then.
        """
        cond_context = self._cond_of(value)
        with ops.control_dependencies(None), _entered(self.grad_context):
            if cond_context is not None:
                pred = self.GetRealValue(cond_context.pred)
                history_value = control_flow_ops.switch(history_value, pred)[cond_context.branch]
            pop = stack_ops.stack_pop_v2(history_value, value.dtype.base_dtype)
            pop.set_shape(value.get_shape())
        if self.grad_context.parallel_iterations > 1:
            self.grad_sync._add_control_input(pop.op)
        return pop

    def GetRealValue(self, value: ops.Tensor) -> ops.Tensor:  # noqa: N802 - TF's name
        """What the gradient loop reads for the forward value ``value``.

        A loop invariant is entered as it is; a constant is built again in
        the gradient loop; any other value is pushed by the forward loop and
        popped by the gradient loop.
        """
        real = self.history_map.get(value)
        if real is not None:
            return real
        cur_value, cur_state, history = value, self, None
        while True:
            enter_op = _constant_enter_of(cur_value)
            if enter_op is not None:
                cur_value = enter_op.inputs[0]
                cur_state = cur_state.outer_grad_state
                if cur_state is None:
                    real = self.grad_context.AddValue(cur_value)
                    break
            elif cur_value.op.type == "Const":
                with _entered(self.grad_context):
                    real = constant_op.constant(
                        cur_value.op.get_attr("value"), dtype=cur_value.dtype.base_dtype
                    )
                break
            else:
                # The stack is made where tf.gradients was called.
                with _entered(self.call_context):
                    history = cur_state.AddForwardAccumulator(cur_value)
                break
        if real is None:
            real = cur_state.AddBackpropAccumulatedValue(history, cur_value)
            if cur_state is not self:
                real = self.grad_context.AddValue(real)
        self.history_map[value] = real
        return real


def _constant_enter_of(t: ops.Tensor) -> ops.Operation | None:
    """The constant ``Enter`` that ``t`` comes from, through Identities, or None."""
    op = t.op
    while op.type in ("Identity", "RefIdentity") and op.inputs:
        op = op.inputs[0].op
    return op if is_loop_constant_enter(op) else None


class _Wiring:
    def AddOp(self, op):  # noqa: N802 - TF's name
        pass


_WIRING = _Wiring()


class _entered:  # noqa: N801 - used as a context manager
    """Makes ``context`` the graph's control-flow context for a block (None: outside loops)."""

    def __init__(self, context):
        self._context = context

    def __enter__(self):
        graph = ops.get_default_graph()
        self._saved = graph._get_control_flow_context()
        graph._set_control_flow_context(self._context)

    def __exit__(self, *exc):
        ops.get_default_graph()._set_control_flow_context(self._saved)


class ControlFlowState:
    """The gradient loop states of one ``tf.gradients`` call, one per forward loop."""

    def __init__(self, between: set[ops.Operation]):
        self._map: dict[WhileContext, GradLoopState] = {}
        self._between = between
        self._call_context = ops.get_default_graph()._get_control_flow_context()

    def get_grad_state(self, op: ops.Operation, before: bool) -> GradLoopState | None:
        """The state of the loop whose gradient loop ``op``'s gradient is built in.

        Args:
            op: A forward op.
            before: True for the summing of ``op``'s output gradients: an
                ``Exit``'s happens outside its loop.
        """
        forward = output_context(op) if before else op._control_flow_context
        return self._map.get(forward) if forward is not None else None

    def enter_grad_context(self, op: ops.Operation, before: bool):
        """A block in which new ops go into the gradient loop of ``op`` (or stay outside)."""
        state = self.get_grad_state(op, before)
        return _entered(
            state.grad_context if state else ops.get_default_graph()._get_control_flow_context()
        )

    def add_while_context(self, op: ops.Operation) -> None:
        """Makes a `GradLoopState` for the loop of the exit ``op`` (and the loops around it)."""
        forward = op._control_flow_context
        if forward in self._map:
            return
        outer = forward.outer_context
        outer_state = None
        if self._differentiates_through(outer):
            if outer not in self._map:
                self.add_while_context(outer.loop_exits[0].op)
            outer_state = self._map[outer]
        # The counters are the loops' own: not gated by blocks open around tf.gradients
        # (a cond's branch that calls it gates them through its pivot).
        with ops.control_dependencies(None):
            state = GradLoopState(forward, outer_state, self._call_context)
        self._map[forward] = state
        # Every exit of the loop takes part: those no gradient reaches start from zeros.
        self._between.update(y.op for y in state.forward_loop_exits)

    def _differentiates_through(self, loop: WhileContext | None) -> bool:
        """True if gradients flow through ``loop``: one of its exits lies between xs and ys.

        A loop that ``tf.gradients`` is called inside (its exits not built yet,
        or not on the path) is not differentiated: a loop nested in it gets a
        gradient loop of its own inside it, as in TF's ``AddWhileContext``.
        """
        return loop is not None and any(e.op in self._between for e in loop.loop_exits)

    def states(self) -> list[GradLoopState]:
        """Every loop's state."""
        return list(self._map.values())

    def process_unused_loop_exits(self, pending: dict, ys_ops: set) -> list[ops.Tensor]:
        """Exits no gradient reaches: once all of a loop's are in, they start with zeros."""
        loop_exits = []
        for state in self._map.values():
            for y in state.forward_loop_exits:
                if pending.get(y.op, 0) == 0:
                    state.pending_exits_count -= 1
                    if y.op not in ys_ops:
                        state.unused_exits.append(y)
                    if state.pending_exits_count == 0:
                        loop_exits.extend(state.unused_exits)
            for y in state.forward_context.loop_enters:
                if y.op in pending and pending[y.op] == 0:
                    pending[y.op] = 1
        return loop_exits

    def zeros_like_for_exit(self, val: ops.Tensor) -> ops.Tensor:
        """Zeros for an exit no gradient reaches, built where its gradient would be."""
        forward = output_context(val.op)
        state = self._map.get(forward) if forward is not None else None
        if state is None:
            return array_ops.zeros_like(val)
        with _entered(state.grad_context):
            real = state.GetRealValue(val)
            return array_ops.zeros_like(real)

    def zeros_like(self, op: ops.Operation, index: int) -> ops.Tensor | None:
        """Zeros for output ``index`` of ``op``, which no gradient reached (a loop Switch: None)."""
        if op._control_flow_context is None or op.type in LOOP_EXIT_TYPES:
            return array_ops.zeros_like(op.outputs[index])
        if op.type == "Switch":
            return None
        return array_ops.zeros_like(op.outputs[index])

    def post_processing(self) -> None:
        """A loop variable whose next value does not depend on it: zero gradients after one."""
        for state in self._map.values():
            for b_merge in state.switch_map.values():
                inputs = b_merge.op.inputs
                if inputs[0] is not inputs[1]:
                    continue
                outer = state.grad_context.outer_context
                with _entered(outer):
                    zeros = array_ops.zeros_like(inputs[0].op.inputs[0])
                with _entered(state.grad_context):
                    entered = state.grad_context.AddValue(zeros)
                    zero_next = next_iteration(entered)
                # Only an iteration that goes round again passes zeros on.
                zero_next.op._add_control_input(state.grad_context.GetControlPivot().op)
                b_merge.op._update_input(1, zero_next)


def maybe_create_control_flow_state(between: set[ops.Operation]) -> ControlFlowState | None:
    """A `ControlFlowState` if an op between xs and ys is a loop's Exit; else None."""
    state = None
    for op in sorted(between, key=lambda o: o._id):
        if op.type in LOOP_EXIT_TYPES:
            if state is None:
                state = ControlFlowState(between)
            state.add_while_context(op)
    return state


def in_loop(op: ops.Operation) -> bool:
    """True if ``op`` runs inside a loop."""
    return input_context(op) is not None
