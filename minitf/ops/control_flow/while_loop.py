"""``tf.while_loop``: one copy of ``cond`` and ``body``, wired into a cycle of dataflow.

`while_loop` builds, under the name scope ``while/`` (TF1's
``WhileContext.BuildLoop``), for each loop variable::

    Enter ─► Merge ─► Switch ─(true)─► Identity ─► body ─► NextIteration ─┐
               ▲        │                                                 │
               │        └─(false)─► Exit                                  │
               └──────────────────────────────────────────────────────────┘

with one ``LoopCond`` (the value of ``cond``) driving every ``Switch``. The
executor runs it frame by frame, iteration by iteration
(`minitf.runtime.core.frames`); nothing here runs Python per iteration.
"""

from __future__ import annotations

from minitf.framework import ops, tensor_shape
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import array_ops, constant_op
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.control_flow.while_context import (
    WhileContext,
    exit,
    loop_cond,
    next_iteration,
    output_context,
    shape_less_than_or_equal,
)
from minitf.ops.data_flow.tensor_array_ops import TensorArray

__all__ = ["while_loop"]


def _is_sequence(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def flatten(structure) -> list:
    """The leaves of a nest of lists, tuples, namedtuples and dicts (sorted keys), in order."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_sequence_as(structure, flat: list):
    """``flat``'s leaves in the nest ``structure`` (the inverse of `flatten`)."""
    leaves = iter(flat)

    def pack(s):
        if isinstance(s, dict):
            return {k: pack(s[k]) for k in sorted(s)}
        if isinstance(s, (list, tuple)):
            items = [pack(item) for item in s]
            if isinstance(s, list):
                return items
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(leaves)

    return pack(structure)


def _same_structure(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and sorted(a) == sorted(b)
            and all(_same_structure(a[k], b[k]) for k in a)
        )
    if _is_sequence(a) != _is_sequence(b):
        return False
    if not _is_sequence(a):
        return True
    return len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b))


def assert_same_structure(first, second) -> None:
    """Raises TF's ValueError if two nests differ in their lists, tuples and lengths."""
    if not _same_structure(first, second):
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: type={type(first).__name__} str={first}\n\n"
            f"Second structure: type={type(second).__name__} str={second}"
        )


def _to_flow(value):
    """A `TensorArray` loop variable is carried by its flow (TF's ``_convert_tensorarray_to_flow``).

    Args:
        value: A loop variable, or what the body returned for one.
    """
    return value.flow if isinstance(value, TensorArray) else value


def _to_arrays(originals: list, tensors: list) -> list:
    """``tensors``, each flow whose original was a `TensorArray` made an array again.

    The array keeps its handle; the flow is the loop's copy of it (TF's
    ``_convert_flows_to_tensorarrays``).
    """
    return [
        original._with_flow(t) if isinstance(original, TensorArray) else t
        for original, t in zip(originals, tensors)
    ]


def while_loop(
    cond,
    body,
    loop_vars,
    shape_invariants=None,
    parallel_iterations=10,
    back_prop=True,
    swap_memory=False,
    name=None,
    maximum_iterations=None,
    return_same_structure=False,
):
    """Repeats ``body`` while ``cond`` is true, as one cycle of dataflow (TF1's ``tf.while_loop``).

    ``cond`` and ``body`` are each called once, to build the loop; at run
    time the executor runs the loop's frame, up to ``parallel_iterations``
    iterations at a time, each iteration's ops as soon as their inputs are
    ready.

    Args:
        cond: A callable of the loop variables returning a scalar bool tensor.
        body: A callable of the loop variables returning new values of the
            same structure.
        loop_vars: A (nested) tuple, namedtuple or list of tensors and
            `TensorArray` s (carried by their flows; the body sees arrays).
        shape_invariants: The shapes the loop variables keep across
            iterations (default: their initial shapes).
        parallel_iterations: How many iterations may run at once.
        back_prop: Whether gradients flow through the loop.
        swap_memory: Accepted as in TF; there is no device memory to swap.
        name: The name scope of the loop's ops (default ``"while"``).
        maximum_iterations: Stop after this many iterations at most.
        return_same_structure: Return a one-variable result in its structure.

    Returns:
        The loop variables' final values, in ``loop_vars``' structure (a
        single tensor when there is one variable and not
        ``return_same_structure``).

    Raises:
        TypeError: if ``cond`` or ``body`` is not callable, ``parallel_iterations``
            is not positive, or ``cond`` does not return a bool.
        ValueError: if ``loop_vars`` is empty, ``body`` returns another
            structure, or a loop variable's shape changes without a
            shape invariant that allows it.
    """
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    tensors = [v for v in flatten(loop_vars) if isinstance(v, ops.Tensor)] if loop_vars else []
    with ops.name_scope(name, "while", tensors):
        if not loop_vars:
            raise ValueError("'loop_vars' must be provided.")
        try_to_pack = len(loop_vars) == 1 and not return_same_structure
        if maximum_iterations is not None:
            cond, body, loop_vars, shape_invariants = _bounded(
                cond, body, loop_vars, shape_invariants, maximum_iterations, try_to_pack
            )
        context = WhileContext(
            maximum_iterations=maximum_iterations,
            parallel_iterations=parallel_iterations,
            back_prop=back_prop,
            swap_memory=swap_memory,
        )
        if context.outer_context is None:
            ops.add_to_collection(GraphKeys.WHILE_CONTEXT, context)
        result = build_loop(context, cond, body, loop_vars, shape_invariants)
        if maximum_iterations is not None:
            return result[1]
        if return_same_structure:
            return result
        return result[0] if len(flatten(result)) == 1 else result


def _bounded(cond, body, loop_vars, shape_invariants, maximum_iterations, try_to_pack):
    """The loop with a counter in front: ``(i < maximum_iterations and cond, (i + 1, body))``."""
    from minitf.ops.math import math_ops

    maximum_iterations = ops.convert_to_tensor(maximum_iterations, name="maximum_iterations")
    if maximum_iterations.get_shape().ndims != 0:
        raise ValueError(
            "'maximum_iterations' must be a scalar. Received shape: "
            f"{maximum_iterations.get_shape()}"
        )
    counter = constant_op.constant(0, dtype=maximum_iterations.dtype, name="iteration_counter")
    orig_cond, orig_body = cond, body
    if try_to_pack:
        loop_vars = (counter, loop_vars[0])

        def cond(i, lv):
            return math_ops.logical_and(i < maximum_iterations, orig_cond(lv))

        def body(i, lv):
            return (i + 1, orig_body(lv))
    else:
        loop_vars = (counter, loop_vars)

        def cond(i, lv):
            return math_ops.logical_and(i < maximum_iterations, orig_cond(*lv))

        def body(i, lv):
            return (i + 1, orig_body(*lv))

    if shape_invariants is not None:
        shape_invariants = (tensor_shape.TensorShape([]), shape_invariants)
    return cond, body, loop_vars, shape_invariants


def build_loop(context: WhileContext, cond, body, loop_vars, shape_invariants):
    """Builds the loop in ``context``: Enters, Merges, the condition, Switches, body, Exits.

    Returns:
        The Exits, packed in the structure ``body`` returned.
    """
    original_vars = loop_vars
    flat_vars = [ops.convert_to_tensor(_to_flow(v)) for v in flatten(loop_vars)]
    loop_vars = pack_sequence_as(loop_vars, flat_vars)
    if shape_invariants is None:
        flat_invariants = [v.get_shape() for v in flat_vars]
    else:
        assert_same_structure(loop_vars, shape_invariants)
        flat_invariants = [tensor_shape.as_shape(s) for s in flatten(shape_invariants)]
    # Open control_dependencies blocks gate the loop's Enters, not each op in it.
    graph = ops.get_default_graph()
    controls = graph._control_dependencies_stack.for_inputs([])
    context.Enter()
    try:
        with ops.control_dependencies(None):
            body_result, exits = _build_cycle(
                context, cond, body, original_vars, flat_vars, flat_invariants, controls
            )
    finally:
        context.Exit()
    return pack_sequence_as(body_result, _to_arrays(flatten(body_result), exits))


def _enter_vars(context: WhileContext, flat_vars: list, flat_invariants: list, controls) -> list:
    """The loop variables' Enters, each with its shape invariant as its shape.

    They get the control inputs of the blocks open around the loop that lie
    in the enclosing frame.
    """
    outer = context.outer_context
    real_vars = [outer.AddValue(x) for x in flat_vars] if outer is not None else flat_vars
    enters = []
    for var, invariant in zip(real_vars, flat_invariants):
        if not shape_less_than_or_equal(var.get_shape(), invariant):
            raise ValueError(
                f"The shape invariant specified for {var.name} is not compatible with the "
                "initial shape of the loop variable. It enters the loop with shape "
                f"{var.get_shape()}, but the specified shape invariant is {invariant}."
            )
        entered = context.enter_value(var, is_constant=False, shape=invariant)
        for c in controls:
            if output_context(c) is outer:
                entered.op._add_control_input(c)
        enters.append(entered)
    return enters


def _build_cycle(context, cond, body, loop_vars, flat_vars, flat_invariants, controls):
    """The loop's cycle; ``cond`` and ``body`` see `TensorArray` loop variables as arrays."""
    flat_originals = flatten(loop_vars)
    context._values.update(flat_vars)
    enters = _enter_vars(context, flat_vars, flat_invariants, controls)
    context._values = set(enters)  # the initial values themselves are outside: entered anew
    context._loop_enters = enters
    merges = [control_flow_ops.merge([x, x])[0] for x in enters]
    context._pivot_for_pred = merges[0]
    c = ops.convert_to_tensor(
        cond(*pack_sequence_as(loop_vars, _to_arrays(flat_originals, merges)))
    )
    context._pivot = loop_cond(c, name="LoopCond")
    switches = [control_flow_ops.switch(m, context._pivot) for m in merges]
    body_vars = [array_ops.identity(s[1]) for s in switches]
    context._pivot_for_body = body_vars[0]
    packed_body_vars = pack_sequence_as(loop_vars, _to_arrays(flat_originals, body_vars))
    result = body(*packed_body_vars)
    if not _is_sequence(result):
        result = [result]
    assert_same_structure(list(packed_body_vars), list(result))
    flat_result = [ops.convert_to_tensor(_to_flow(v)) for v in flatten(result)]
    for m, v in zip(merges, flat_result):
        _add_next_and_back_edge(context, m, v)
    exits = []
    for s in switches:
        e = exit(s[0])
        exits.append(e)
    context._loop_exits = exits
    context.ExitResult(exits)
    return result, exits


def _add_next_and_back_edge(context: WhileContext, m: ops.Tensor, v: ops.Tensor) -> None:
    """``NextIteration(v)`` into input 1 of the Merge ``m``, after TF's shape check."""
    v = context.AddValue(v)  # a body that returns a tensor from outside the loop
    n = next_iteration(v)
    if not shape_less_than_or_equal(n.get_shape(), m.get_shape()):
        input_t = m.op.inputs[0].op.inputs[0]
        raise ValueError(
            f"Input tensor '{input_t.name}' enters the loop with shape {input_t.get_shape()}, "
            f"but has shape {n.get_shape()} after one iteration. To allow the shape to vary "
            "across iterations, use the `shape_invariants` argument of tf.while_loop to "
            "specify a less-specific shape."
        )
    m.op._update_input(1, n)
