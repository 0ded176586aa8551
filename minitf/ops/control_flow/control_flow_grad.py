"""The gradients of a loop's ops (TF1's ``control_flow_grad.py``).

They are called by ``tf.gradients`` inside the gradient loop of the op's
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

from minitf.framework import ops
from minitf.framework.op_registry import NotDifferentiable, RegisterGradient
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.control_flow.control_flow_util import LOOP_ENTER_TYPES
from minitf.ops.control_flow.while_context import enter, exit, next_iteration

NotDifferentiable("LoopCond")
NotDifferentiable("ControlTrigger")


def _no_cond_gradient(op) -> LookupError:
    return LookupError(
        f"No gradient defined for operation '{op.name}' (op type: {op.type}): minitf's tf.cond "
        "does not carry gradients; compute gradients of tensors outside the cond instead"
    )


def _grad_context():
    return ops.get_default_graph()._get_control_flow_context()


def _is_loop_merge(op: ops.Operation) -> bool:
    return op._control_flow_context is not None and op.inputs[0].op.type in LOOP_ENTER_TYPES


@RegisterGradient("Merge")
def _merge_grad(op, grad, _):
    """A loop's Merge: the gradient goes out or round again, on the gradient loop's predicate."""
    if not _is_loop_merge(op):
        raise _no_cond_gradient(op)
    return control_flow_ops.switch(grad, _grad_context().pivot)


@RegisterGradient("Switch")
def _switch_grad(op, *grad):
    """A loop's Switch: the gradient loop's Merge of the exit's gradient and the body's."""
    if op._control_flow_context is None:
        raise _no_cond_gradient(op)
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
