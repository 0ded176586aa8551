"""Control flow: ``no_op``, ``group``, ``tuple``, ``with_dependencies``, and ``cond``.

``cond`` is built from ``Switch`` and ``Merge`` as in TF1; what makes the
branch not taken do nothing is the dead value (`minitf.ops.control_flow.control_flow_kernels`).
"""

from __future__ import annotations

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.control_dependencies import control_input_op
from minitf.framework.indexed_slices import IndexedSlices
from minitf.framework.op_registry import register_compute
from minitf.ops.array import array_ops
from minitf.ops.control_flow.control_flow_util import input_context

__all__ = ["no_op", "group", "tuple", "with_dependencies", "cond"]

_tuple = tuple


def no_op(name=None) -> ops.Operation:
    """An op that does nothing; useful as a control-dependency anchor.

    Args:
        name: A name for the operation (default ``"NoOp"``).
    """
    return ops.get_default_graph().create_op("NoOp", [], [], name=name or "NoOp")


@register_compute("NoOp")
def _no_op_kernel(ctx):
    return None


def control_trigger(name=None) -> ops.Operation:
    """An op that does nothing and is never dead: it runs even when its inputs are dead.

    Args:
        name: A name for the operation (default ``"ControlTrigger"``).
    """
    return ops.get_default_graph().create_op(
        "ControlTrigger", [], [], name=name or "ControlTrigger"
    )


register_compute("ControlTrigger")(_no_op_kernel)


def _flatten(inputs) -> list:
    flat = []
    for item in inputs:
        if isinstance(item, (list, _tuple)):
            flat.extend(_flatten(item))
        else:
            flat.append(item)
    return flat


def _group_on_device(device: str, deps: list, name=None) -> ops.Operation:
    with ops.control_dependencies(deps):
        with ops.device(device):
            return no_op(name=name)


def group(*inputs, **kwargs) -> ops.Operation:
    """Creates an op that finishes when all of ``inputs`` have finished.

    Inputs are grouped by device: with one device, one ``NoOp`` on that device
    depends on them all; with several, one ``NoOp`` per device and a final one
    depending on those (TF's two-level tree, so that few control edges cross
    devices).

    Args:
        *inputs: Operations or tensors, possibly in nested lists.
        name: The op name (keyword only).

    Raises:
        ValueError: on unknown keyword arguments.
        TypeError: for an input that is not a graph element.
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError("Unknown keyword arguments: " + ", ".join(kwargs.keys()))
    flat = _flatten(inputs)
    with ops.name_scope(name, "group_deps", flat) as scope:
        if not flat:
            return no_op(name=scope)
        by_device: dict[str, list] = {}
        for item in flat:
            if not hasattr(item, "device"):
                raise TypeError(
                    f"Expected tf.group() expected Tensor arguments not '{item}' with type "
                    f"'{type(item)}'"
                )
            op = control_input_op(ops.get_default_graph(), item)
            by_device.setdefault(op.device, []).append(op)
        if len(by_device) == 1:
            ((device, deps),) = by_device.items()
            return _group_on_device(device, deps, name=scope)
        per_device = [_group_on_device(d, by_device[d]) for d in sorted(by_device)]
        with ops.control_dependencies(per_device):
            return no_op(name=scope)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TF's name
    """Returns the tensors (or ops), each available only once all of them are.

    Args:
        tensors: Tensors, IndexedSlices, Operations or None entries.
        name: The name scope.
        control_inputs: Extra ops that must finish first.

    Raises:
        ValueError: if there is no tensor or op to gate on.
    """
    with ops.name_scope(name, "tuple", tensors):
        gating = [t if isinstance(t, ops.Operation) else t.op for t in tensors if t is not None]
        if control_inputs:
            gating.extend(control_input_op(ops.get_default_graph(), c) for c in control_inputs)
        gating = sorted(set(gating), key=lambda op: op._id)
        if not gating:
            raise ValueError(f"Must have at least one Tensor: {tensors}")
        gate = group(*gating)
        result = []
        for t in tensors:
            if isinstance(t, ops.Operation):
                with ops.control_dependencies([gate]):
                    result.append(group(t))
            elif t is not None:
                result.append(with_dependencies([gate], t))
            else:
                result.append(None)
        return result


def with_dependencies(dependencies, output_tensor, name=None):
    """Returns ``output_tensor``'s value, produced only after ``dependencies`` ran.

    Args:
        dependencies: The ops (or tensors) that must run first.
        output_tensor: The tensor (or `IndexedSlices`) whose value to return.
        name: A name for the operation (optional).

    Returns:
        An identity of ``output_tensor`` (an `IndexedSlices` if it is one), on its device.
    """
    with ops.name_scope(name, "control_dependency", list(dependencies) + [output_tensor]) as scope:
        with ops.colocate_with(output_tensor):
            with ops.control_dependencies(dependencies):
                output = ops.convert_to_tensor_or_indexed_slices(output_tensor)
                if isinstance(output, IndexedSlices):
                    return IndexedSlices(
                        array_ops.identity(output.values, name=scope),
                        output.indices,
                        output.dense_shape,
                    )
                return array_ops.identity(output, name=scope)


def switch(data, pred, name=None) -> _tuple:
    """``(output_false, output_true)``: ``data`` on the output ``pred`` picks; the other is dead."""
    with ops.name_scope(name, "Switch", [data, pred]) as scope:
        data = ops.convert_to_tensor(data, name="data")
        pred = ops.convert_to_tensor(pred, name="pred")
        if pred.dtype.base_dtype != dtypes.bool:
            raise TypeError(f"Switch: pred must be a bool tensor, got {pred.dtype.name}")
        op = ops.get_default_graph().create_op(
            "Switch",
            [data, pred],
            [data.dtype.base_dtype] * 2,
            name=scope,
            attrs={"T": data.dtype.base_dtype},
            shapes=[data.get_shape()] * 2,
        )
    return op.outputs[0], op.outputs[1]


def merge(inputs, name=None) -> _tuple:
    """``(output, value_index)``: the first input that is not dead, and which one it was."""
    with ops.name_scope(name, "Merge", inputs) as scope:
        inputs = [ops.convert_to_tensor(t) for t in inputs]
        dtype = inputs[0].dtype.base_dtype
        if any(t.dtype.base_dtype != dtype for t in inputs):
            raise TypeError(
                "Merge: all inputs must have one dtype, got "
                + ", ".join(t.dtype.name for t in inputs)
            )
        shape = inputs[0].get_shape()
        for t in inputs[1:]:
            shape = shape.most_specific_compatible_shape(t.get_shape())
        op = ops.get_default_graph().create_op(
            "Merge",
            inputs,
            [dtype, dtypes.int32],
            name=scope,
            attrs={"T": dtype, "N": len(inputs)},
            shapes=[shape, tensor_shape.TensorShape([])],
        )
    return op.outputs[0], op.outputs[1]


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """``true_fn()`` if ``pred`` is true, else ``false_fn()``: only that branch runs.

    As in TF1, each branch is built once, when ``cond`` is called, and its
    ops are gated by a *pivot* — an op fed through ``Switch(pred, pred)`` —
    so the branch not taken is dead: none of its ops runs (a ``take_grad``
    or ``dequeue`` there does not wait), and a cluster step tells the other
    tasks so. Every op a branch builds gets a control input from its pivot,
    ops built under ``control_dependencies(None)`` too.

    Args:
        pred: A scalar bool tensor.
        true_fn: A function of no arguments returning tensors, ops, or nested
            lists/tuples/dicts of them; called to build the true branch.
        false_fn: Like ``true_fn``, for the false branch; it must return the
            same structure.
        strict: Return a single-element list as a list (TF's ``strict``).
        name: The name scope.
        fn1: TF's deprecated name of ``true_fn``.
        fn2: TF's deprecated name of ``false_fn``.

    Returns:
        The taken branch's results, in their structure; an op result becomes a
        tensor that is ready once the op has run.

    Raises:
        TypeError: if a branch is not callable, or ``pred`` is not bool.
        ValueError: if the branches return different structures.
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    with ops.name_scope(name, "cond", [pred]):
        pred = ops.convert_to_tensor(pred, name="pred")
        if pred.dtype.base_dtype != dtypes.bool:
            raise TypeError(f"cond: pred must be a bool tensor, got {pred.dtype.name}")
        p_false, p_true = switch(pred, pred, name="switch_pred")
        taken_false = array_ops.identity(p_false, name="switch_f")
        taken_true = array_ops.identity(p_true, name="switch_t")
        results_true = _build_branch(true_fn, array_ops.identity(taken_true, name="pivot_t"))
        results_false = _build_branch(false_fn, array_ops.identity(taken_false, name="pivot_f"))
        flat_true, flat_false = _flatten_results(results_true), _flatten_results(results_false)
        if len(flat_true) != len(flat_false):
            raise ValueError(
                "true_fn and false_fn must return the same number of results: "
                f"{len(flat_true)} and {len(flat_false)}"
            )
        merged = [merge([f, t], name="Merge")[0] for t, f in zip(flat_true, flat_false)]
    result = _pack_results(results_true, merged)
    if not strict and isinstance(result, list) and len(result) == 1:
        return result[0]
    return result


def _build_branch(fn, pivot: ops.Tensor):
    """Runs ``fn`` under ``pivot``; every op it made depends on the pivot; results are tensors."""
    graph = ops.get_default_graph()
    before = len(graph.get_operations())
    with ops.control_dependencies([pivot]):
        results = fn()
        flat = _flatten_results(results)
        branch_results = []
        for item in flat:
            if isinstance(item, ops.Operation):
                # An op: a tensor ready once it has run (TF's _BuildCondTensor).
                with ops.control_dependencies([item]):
                    branch_results.append(array_ops.identity(pivot))
            else:
                # A tensor made outside the branch is live on both: pass it
                # through an op of the branch, so that the untaken side is dead.
                branch_results.append(array_ops.identity(ops.convert_to_tensor(item)))
    context = graph._get_control_flow_context()
    for op in graph.get_operations()[before:]:
        if op is pivot.op or pivot.op in op.control_inputs:
            continue
        # The ops of a loop built in the branch are gated by the loop's Enters.
        if input_context(op) is context:
            op._add_control_input(pivot.op)
    return _Results(results, branch_results)


class _Results:
    """A branch's results as written and as the flat list of tensors merged."""

    def __init__(self, structure, flat: list):
        self.structure = structure
        self.flat = flat


def _flatten_results(results) -> list:
    if isinstance(results, _Results):
        return results.flat
    if results is None:
        return []
    if isinstance(results, dict):
        return [v for k in sorted(results) for v in _flatten_results(results[k])]
    if isinstance(results, (list, _tuple)):
        return [v for item in results for v in _flatten_results(item)]
    return [results]


def _pack_results(results: _Results, merged: list):
    it = iter(merged)

    def pack(structure):
        if structure is None:
            return None
        if isinstance(structure, dict):
            return {k: pack(structure[k]) for k in sorted(structure)}
        if isinstance(structure, (list, _tuple)):
            packed = [pack(item) for item in structure]
            return packed if isinstance(structure, list) else type(structure)(packed)
        return next(it)

    return pack(results.structure)
