"""The gradients of a cond's and a loop's ops (TF1's ``control_flow_grad.py``).

Through a ``tf.cond``, the gradient retraces the branch taken:

* the cond's ``Merge`` → a ``Switch`` of the gradient on the cond's
  predicate (``cond_grad``): the branch taken gets it, the other a dead value;
* a ``Switch`` of a value the branch read → a ``Merge`` (``cond_grad``) of
  the branch's gradient with zeros routed to the other side, so the value's
  gradient is live whichever branch ran: zeros if its branch did not.

Through a loop, the gradients are called by ``tf.gradients`` inside the gradient loop of the op's
forward loop (`minitf.ops.control_flow.control_flow_state`), and build that
loop's cycle from the forward loop's, backwards:

* ``Exit`` → an ``Enter`` into the gradient loop (``b_exit``);
* ``Switch`` → a ``Merge`` (``b_switch``) of the gradient from the exit and,
  once the body's gradient is built, from ``NextIteration``;
* ``Merge`` → a ``Switch`` on the gradient loop's predicate;
* ``NextIteration`` → the gradient itself, to the previous iteration;
* ``Enter`` → an ``Exit`` of the gradient loop, or, for a loop invariant,
  the sum of its gradients over all iterations (``b_acc``).
"""

from __future__ import annotations

from minitf.framework import dtypes, ops
from minitf.framework.op_registry import NotDifferentiable, RegisterGradient
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.control_flow.control_flow_util import (
    LOOP_ENTER_TYPES,
    cond_switch_context,
    is_loop_switch,
)
from minitf.ops.control_flow.while_context import enter, exit, next_iteration

NotDifferentiable("LoopCond")
NotDifferentiable("ControlTrigger")


def _grad_context():
    return ops.get_default_graph()._get_control_flow_context()


def _is_loop_merge(op: ops.Operation) -> bool:
    return op._control_flow_context is not None and op.inputs[0].op.type in LOOP_ENTER_TYPES


@RegisterGradient("Merge")
def _merge_grad(op, grad, _):
    """A loop's Merge: the gradient goes out or round again, on the gradient loop's predicate.

    A cond's Merge: the gradient goes to the branch taken, on the cond's
    predicate (in a loop, the gradient loop reads this iteration's predicate
    from a stack). Any other Merge: to the input that was chosen.
    """
    if _is_loop_merge(op):
        return control_flow_ops.switch(grad, _grad_context().pivot)
    cond_context = op.inputs[0].op._cond_context
    if cond_context is not None:
        return control_flow_ops.switch(grad, cond_context.pred, name="cond_grad")
    from minitf.ops.math import math_ops

    chosen = [math_ops.equal(op.outputs[1], i) for i in range(len(op.inputs))]
    return [control_flow_ops.switch(grad, c)[1] for c in chosen]


@RegisterGradient("Switch")
def _switch_grad(op, *grad):
    """A cond's Switch: the Merge of the branch's gradient and the other side's zeros.

    A loop's Switch: the gradient loop's Merge of the exit's gradient and the
    body's. Any other Switch: the Merge of both outputs' gradients.
    """
    cond_context = cond_switch_context(op)
    if cond_context is not None:
        return _cond_switch_grad(op, cond_context, grad)
    if op._control_flow_context is None:
        false_grad = control_flow_ops.switch(grad[0], op.inputs[1])[0]
        true_grad = control_flow_ops.switch(grad[1], op.inputs[1])[1]
        return control_flow_ops.merge([false_grad, true_grad])[0], None
    state = _grad_context().grad_state
    merge_grad = state.switch_map.get(op)
    if merge_grad is not None:
        # The second visit, from the body: its gradient goes round the loop.
        if grad[1] is not None:
            back = next_iteration(grad[1])
            merge_grad.op._update_input(1, back)
        return None, None
    if grad[0] is not None:
        # The first visit, from the Exit: use it for both inputs until the body's comes.
        merge_grad = control_flow_ops.merge([grad[0], grad[0]], name="b_switch")[0]
        state.switch_map[op] = merge_grad
        return merge_grad, None
    return None, None


RegisterGradient("RefSwitch")(_switch_grad)


def _cond_switch_grad(op, cond_context, grad):
    """``Merge(grad)``: one side is the branch's gradient, the other zeros (both dead never)."""
    zero_grad = grad[1 - cond_context.branch]
    if zero_grad is None:
        # A resource handle has no zeros: its gradient is the branch's, on either side.
        if op.inputs[0].dtype.base_dtype == dtypes.resource:
            taken = grad[cond_context.branch]
            return control_flow_ops.merge([taken, taken], name="cond_resource_grad")[0], None
        return None, None
    return control_flow_ops.merge(list(grad), name="cond_grad")[0], None


def zeros_in_cond(op: ops.Operation, index: int) -> ops.Tensor | None:
    """Zeros for output ``index`` of ``op``, an op of a cond's branch, that no gradient reached.

    They are dead exactly when ``op`` is: for a cond's Switch, zeros on the
    side not taken (the Switch routes them there); for any other op, a
    ``ZerosLike`` of the output itself (not a constant, which would be live
    on a branch not taken). A loop's Switch gets none.
    """
    if cond_switch_context(op) is not None:
        if op.inputs[0].dtype.base_dtype == dtypes.resource:
            return None
        guard = control_flow_ops.switch(op.inputs[0], op.inputs[1])[index]
        return array_ops.zeros_like(guard, optimize=False)
    if is_loop_switch(op):
        return None
    return array_ops.zeros_like(op.outputs[index], optimize=False)


@RegisterGradient("Exit")
def _exit_grad(op, grad):
    """The gradient enters the gradient loop."""
    context = _grad_context()
    if context is None or not context.back_prop:
        return None
    if op._control_flow_context.grad_state is not None:
        raise TypeError("Second-order gradient for while loops not supported.")
    context.AddName(grad)
    result = enter(grad, context.name, False, context.parallel_iterations, name="b_exit")
    result.op._control_flow_context = context
    context.loop_enters.append(result)
    return result


@RegisterGradient("NextIteration")
def _next_iteration_grad(op, grad):
    return grad


@RegisterGradient("Enter")
def _enter_grad(op, grad):
    """The gradient leaves the gradient loop; a loop invariant's is summed over the iterations."""
    context = _grad_context()
    if context is None or not context.back_prop or context.grad_state is None:
        return grad
    if op.get_attr("is_constant"):
        return _backprop_accumulator(context, op, grad)
    result = exit(grad)
    context.loop_exits.append(result)
    context.ExitResult([result])
    return result


RegisterGradient("RefEnter")(_enter_grad)
RegisterGradient("RefExit")(_exit_grad)


def _backprop_accumulator(context, op, grad):
    """A loop in the gradient loop's frame that sums ``grad`` over its iterations (``b_acc``)."""
    from minitf.ops.math import math_ops

    outer = context.outer_context
    graph = ops.get_default_graph()
    graph._set_control_flow_context(outer)
    try:
        shape = grad.get_shape()
        if shape.is_fully_defined():
            acc = array_ops.zeros(shape.as_list(), grad.dtype.base_dtype, name="b_acc")
        else:
            acc = array_ops.zeros_like(op.inputs[0], name="b_acc")
    finally:
        graph._set_control_flow_context(context)
    context.AddName(acc)
    enter_acc = enter(acc, context.name, False, context.parallel_iterations, name="b_acc")
    enter_acc.op._control_flow_context = context
    context.loop_enters.append(enter_acc)
    merge_acc = control_flow_ops.merge([enter_acc, enter_acc], name="b_acc")[0]
    switch_false, switch_true = control_flow_ops.switch(merge_acc, context.pivot)
    add_acc = math_ops.add(switch_true, grad)
    next_acc = next_iteration(add_acc)
    merge_acc.op._update_input(1, next_acc)
    result = exit(switch_false, name="b_acc")
    context.loop_exits.append(result)
    context.ExitResult([result])
    return result
