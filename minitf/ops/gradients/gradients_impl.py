"""``tf.gradients``: reverse-mode differentiation that builds graph ops.

Like TF, minitf does not differentiate numbers: it adds the *adjoint* ops to
the graph. Starting from the ``ys``, it visits the ops between ``xs`` and
``ys`` in reverse topological order; for each op it sums the gradients that
reached its outputs and calls the op type's registered gradient function,
which builds the ops computing the gradients of the op's inputs.
"""

from __future__ import annotations

import contextlib
from collections import deque
from typing import TYPE_CHECKING

from minitf.framework import dtypes, ops
from minitf.framework.indexed_slices import IndexedSlices
from minitf.framework.op_registry import get_gradient_function

if TYPE_CHECKING:
    from minitf.ops.state.variables import Variable

__all__ = ["gradients", "AggregationMethod"]


class AggregationMethod:
    """How gradients reaching one tensor are summed (minitf always uses ``AddN``)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


def _as_list(x) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _is_trainable(tensor: ops.Tensor) -> bool:
    dtype = tensor.dtype.base_dtype
    return dtype.is_floating or dtype.is_complex or dtype == dtypes.resource


def _as_x(x):
    """A Variable differentiates through its reference (or resource handle) tensor."""
    handle = getattr(x, "_differentiable_tensor", None)
    if handle is not None:
        return handle()
    return ops.internal_convert_to_tensor(x, as_ref=True)


def _is_backpropagatable(tensor: ops.Tensor) -> bool:
    """True if gradients flow through ``tensor`` (TF's ``_IsBackpropagatable``): not an integer."""
    return _is_trainable(tensor) or tensor.dtype.base_dtype == dtypes.variant


def _reachable_from(xs: list[ops.Tensor]) -> set[ops.Operation]:
    """Ops reached from ``xs`` through tensors gradients flow through (TF's ``_MarkReachedOps``)."""
    reached: set[ops.Operation] = set()
    queue = deque(x.op for x in xs)
    while queue:
        op = queue.popleft()
        if op in reached:
            continue
        reached.add(op)
        for t in op.outputs:
            if _is_backpropagatable(t):
                queue.extend(t.consumers())
    return reached


def _between(xs, ys) -> set[ops.Operation]:
    """Ops on a path from ``xs`` to ``ys``."""
    reached = _reachable_from(xs)
    between: set[ops.Operation] = set()
    queue = deque(y.op for y in ys)
    while queue:
        op = queue.popleft()
        if op in reached and op not in between:
            between.add(op)
            queue.extend(t.op for t in op.inputs)
    return between


def _pending(between: set[ops.Operation]) -> dict[ops.Operation, int]:
    """How many consumers of each op lie between xs and ys (one per input edge)."""
    pending = {op: 0 for op in between}
    for op in between:
        for t in op.inputs:
            if t.op in between:
                pending[t.op] += 1
    return pending


def _aggregate(grads: list, tensor: ops.Tensor):
    """Sums the gradients that reached ``tensor``.

    Dense gradients are added with ``AddN``. If any of them is an `IndexedSlices`,
    all become IndexedSlices (a dense one covers every row) and their values and
    indices are concatenated — TF's rule, which keeps sparse updates sparse.
    """
    from minitf.ops.math import math_ops

    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    if all(isinstance(g, ops.Tensor) for g in grads):
        return math_ops.add_n(grads)
    return _concat_slices([_as_indexed_slices(g) for g in grads])


def _as_indexed_slices(grad) -> IndexedSlices:
    from minitf.ops.array import array_ops
    from minitf.ops.math import math_ops

    if isinstance(grad, IndexedSlices):
        return grad
    grad = ops.convert_to_tensor(grad)
    shape = array_ops.shape(grad)
    return IndexedSlices(grad, math_ops.range(shape[0]), shape)


def _concat_slices(slices: list[IndexedSlices]) -> IndexedSlices:
    from minitf.ops.array import array_ops
    from minitf.ops.math import math_ops

    index_types = {s.indices.dtype.base_dtype for s in slices}
    indices = [s.indices for s in slices]
    if len(index_types) > 1:
        indices = [math_ops.cast(i, dtypes.int64) for i in indices]
    return IndexedSlices(
        array_ops.concat([s.values for s in slices], 0),
        array_ops.concat(indices, 0),
        slices[0].dense_shape,
    )


def _zeros_for(op: ops.Operation, index: int):
    from minitf.ops.array import array_ops

    return array_ops.zeros_like(op.outputs[index])


def _zeros(op: ops.Operation, index: int, loop_state):
    """Zeros for an output no gradient reached (in a loop: none for a loop's ``Switch``).

    In a ``tf.cond`` branch they are dead when the branch is not taken.
    """
    if op._cond_context is not None:
        from minitf.ops.control_flow import control_flow_grad

        return control_flow_grad.zeros_in_cond(op, index)
    if loop_state is not None:
        return loop_state.zeros_like(op, index)
    return _zeros_for(op, index)


def gradients(
    ys: ops.Tensor | list[ops.Tensor],
    xs: ops.Tensor | Variable | list,
    grad_ys: ops.Tensor | list | None = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: int | None = None,
    stop_gradients: ops.Tensor | list[ops.Tensor] | None = None,
) -> list[ops.Tensor | IndexedSlices | None]:
    """Builds the symbolic partial derivatives of ``sum(ys)`` with respect to each of ``xs``.

    Args:
        ys: A tensor or list of tensors to differentiate.
        xs: A tensor, variable, or list of them.
        grad_ys: Optional initial gradients, one per y (default: ones).
        name: The name scope of the gradient ops.
        colocate_gradients_with_ops: Place each gradient op with its forward op.
        gate_gradients: If True, an op's input gradients are produced together
            (TF's ``tuple``), which avoids some races.
        aggregation_method: Accepted for compatibility; minitf sums with ``AddN``.
        stop_gradients: Tensors through which no gradient flows.

    Returns:
        One gradient per x: a Tensor, an `IndexedSlices`, or None if x does not
            influence ys.

    Raises:
        LookupError: if an op between xs and ys has no registered gradient.
        ValueError: if a gradient function returns the wrong number of gradients,
            or ``grad_ys`` does not match ``ys``.
    """
    del aggregation_method
    ys = [ops.convert_to_tensor(y) for y in _as_list(ys)]
    xs = [_as_x(x) for x in _as_list(xs)]
    grad_ys = _as_list(grad_ys) if grad_ys is not None else [None] * len(ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    with ops.name_scope(name, "gradients", ys + xs) as scope:
        grad_ys = _default_grad_ys(ys, grad_ys)
        between = _between(xs, ys)
        loop_state = _loop_state(between)  # adds every exit of a loop to ``between``
        pending = _pending(between)
        stop_ops = _stop_ops(xs, between, stop_gradients)
        grads: dict[ops.Tensor, list] = {}
        for y, gy in zip(ys, grad_ys):
            grads.setdefault(y, []).append(gy)
        ready = deque(op for op in dict.fromkeys(y.op for y in ys) if pending.get(op, 0) == 0)
        if loop_state is not None:
            for y in loop_state.process_unused_loop_exits(pending, set(ready)):
                if _is_trainable(y):
                    grads.setdefault(y, []).append(loop_state.zeros_like_for_exit(y))
                    ready.append(y.op)
        x_set = set(xs)
        options = (colocate_gradients_with_ops, gate_gradients, loop_state)
        while ready:
            op = ready.popleft()
            _backprop_op(op, grads, between, stop_ops, x_set, options)
            _update_pending(op, pending, ready, grads, loop_state)
        if loop_state is not None:
            loop_state.post_processing()
        del scope
        return [_aggregate(grads.get(x, []), x) for x in xs]


def _loop_state(between):
    """The gradient loops' state if a ``tf.while_loop`` lies between xs and ys, else None."""
    if not any(op._control_flow_context is not None for op in between):
        return None
    from minitf.ops.control_flow import control_flow_state

    return control_flow_state.maybe_create_control_flow_state(between)


def _update_pending(op, pending, ready, grads, loop_state) -> None:
    """Counts ``op`` done for its inputs' producers; queues those whose gradients are all in.

    In a loop (TF's ``_UpdatePendingAndEnqueueReady``), a loop's ``Switch`` is
    visited twice — from its ``Exit``, then from the body — and a loop's
    ``Exit`` s wait for one another: once all have come, those with no
    gradient start from zeros.
    """
    for t in op.inputs:
        if t.op not in pending:
            continue
        pending[t.op] -= 1
        is_ready = pending[t.op] == 0
        if loop_state is not None and not is_ready:
            is_ready = pending[t.op] > 0 and _is_loop_switch(t.op)
        if not is_ready:
            continue
        if loop_state is not None and t.op.type in ("Exit", "RefExit"):
            _exit_ready(t, ready, grads, loop_state)
        else:
            ready.append(t.op)


def _is_loop_switch(op) -> bool:
    from minitf.ops.control_flow import control_flow_util

    return control_flow_util.is_loop_switch(op)


def _exit_ready(exit_t, ready, grads, loop_state) -> None:
    state = loop_state.get_grad_state(exit_t.op, before=False)
    state.deferred_exits.append(exit_t)
    state.pending_exits_count -= 1
    if state.pending_exits_count:
        return
    has_grad = False
    for y in state.deferred_exits:
        if any(grads.get(t) for t in y.op.outputs):
            has_grad = True
            ready.append(y.op)
        else:
            state.unused_exits.append(y)
    for y in state.unused_exits:
        if has_grad and _is_trainable(y):
            grads.setdefault(y, []).append(loop_state.zeros_like_for_exit(y))
        ready.append(y.op)


def _stop_ops(xs, between, stop_gradients) -> set[ops.Operation]:
    """Ops whose input gradients are not needed (TF's ``_StopOps``).

    An x's op is a stop op when none of its inputs comes from the region between
    xs and ys (a placeholder, a variable); an x computed from another x is not,
    so gradients flow through it. ``stop_gradients`` ops always stop.
    """
    stop = {x.op for x in xs if x.op in between and not any(t.op in between for t in x.op.inputs)}
    stop.update(ops.convert_to_tensor(t).op for t in _as_list(stop_gradients))
    return stop


def _default_grad_ys(ys, grad_ys) -> list:
    """Each y's initial gradient, made in the call's name scope (TF's ``_DefaultGradYs``).

    A y without one gets ones of its own dtype, an integer y too; a complex y
    must be given one. A given gradient is passed through an ``Identity``
    named ``grad_ys_<i>`` in the scope, so that a TensorArray's gradient
    finds which ``tf.gradients`` call it belongs to.

    Raises:
        TypeError: if a complex, boolean or string y has no grad_ys.
        ValueError: if a grad_ys' shape does not fit its y.
    """
    from minitf.ops.array import array_ops

    result = []
    for i, (y, gy) in enumerate(zip(ys, grad_ys)):
        if gy is None:
            dtype = y.dtype.base_dtype
            if dtype.is_complex:
                raise TypeError(
                    f"Gradients of complex tensors must set grad_ys (y.dtype = {dtype!r})"
                )
            if not (dtype.is_floating or dtype.is_integer):
                raise TypeError(f"Expected {dtype.name}, got 1 of type 'int' instead.")
            with ops.colocate_with(y.op):
                gy = array_ops.ones_like(y, name=f"grad_ys_{i}")
        else:
            gy = array_ops.identity(
                ops.convert_to_tensor(gy, dtype=y.dtype.base_dtype), name=f"grad_ys_{i}"
            )
            if not y.get_shape().is_compatible_with(gy.get_shape()):
                raise ValueError(
                    f"Incompatible shapes between op input and calculated input gradient: "
                    f"grad_ys[{i}] has shape {gy.get_shape()}, ys[{i}] {y.name} has shape "
                    f"{y.get_shape()}"
                )
        result.append(gy)
    return result


def _grad_context(loop_state, op, before: bool):
    """Where ``op``'s gradient ops go: its loop's gradient loop, if it is in a loop."""
    if loop_state is None:
        return contextlib.nullcontext()
    return loop_state.enter_grad_context(op, before)


def _backprop_op(op, grads, between, stop_ops, x_set, options) -> None:
    """Calls ``op``'s gradient function and records the gradients of its inputs."""
    colocate, gate, loop_state = options
    with _grad_context(loop_state, op, before=True):
        out_grads = [_aggregate(grads.get(t, []), t) for t in op.outputs]
    for t, g in zip(op.outputs, out_grads):
        grads[t] = [g] if g is not None else []
    if op not in between or op in stop_ops or all(g is None for g in out_grads):
        return
    grad_fn = get_gradient_function(op)
    if grad_fn is None:
        return
    with _grad_context(loop_state, op, before=False):
        _call_grad_fn(op, grad_fn, out_grads, grads, between, x_set, colocate, gate, loop_state)


def _call_grad_fn(op, grad_fn, out_grads, grads, between, x_set, colocate, gate, loop_state):
    """Builds ``op``'s gradient ops from its output gradients (zeros where none came)."""
    out_grads = [
        g if g is not None or not _is_trainable(t) else _zeros(op, i, loop_state)
        for i, (t, g) in enumerate(zip(op.outputs, out_grads))
    ]
    with ops.name_scope(op.name + "_grad"):
        if colocate:
            with ops.colocate_with(op):
                in_grads = grad_fn(op, *out_grads)
        else:
            in_grads = grad_fn(op, *out_grads)
        in_grads = _as_list(in_grads) if isinstance(in_grads, (list, tuple)) else [in_grads]
        if len(in_grads) != len(op.inputs):
            raise ValueError(
                f"Num gradients {len(in_grads)} generated for op {op.node_def['name']} do not "
                f"match num inputs {len(op.inputs)}"
            )
        if gate and sum(g is not None for g in in_grads) > 1:
            from minitf.ops.control_flow import control_flow_ops

            in_grads = control_flow_ops.tuple(in_grads)
    for t_in, g in zip(op.inputs, in_grads):
        if g is None or not (t_in.op in between or t_in in x_set):
            continue
        if isinstance(g, ops.Tensor) and t_in.dtype.base_dtype != dtypes.resource:
            g.set_shape(t_in.get_shape())
        grads.setdefault(t_in, []).append(g)
