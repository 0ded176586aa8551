"""Control flow: ``no_op``, ``group``, ``tuple``, ``with_dependencies``, and ``cond``.

``cond`` is built from ``Switch`` and ``Merge`` as in TF1; what makes the
branch not taken do nothing is the dead value (`minitf.ops.control_flow.control_flow_kernels`).
"""

from __future__ import annotations

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.control_dependencies import control_input_op
from minitf.framework.indexed_slices import IndexedSlices
from minitf.framework.op_registry import get_kernel_def, register_compute
from minitf.ops.array import array_ops
from minitf.ops.control_flow.control_flow_util import LOOP_ENTER_TYPES, input_context

__all__ = ["no_op", "group", "tuple", "with_dependencies", "cond", "CondContext"]

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
    """``(output_false, output_true)``: ``data`` on the output ``pred`` picks; the other is dead.

    A variable's reference goes through a ``RefSwitch``, whose outputs are the
    reference: its consumers read the variable when they run, as in TF1.
    """
    with ops.name_scope(name, "Switch", [data, pred]) as scope:
        data = ops.convert_to_tensor(data, name="data")
        pred = ops.convert_to_tensor(pred, name="pred")
        if pred.dtype.base_dtype != dtypes.bool:
            raise TypeError(f"Switch: pred must be a bool tensor, got {pred.dtype.name}")
        is_ref = data.dtype._is_ref_dtype
        op = ops.get_default_graph().create_op(
            "RefSwitch" if is_ref else "Switch",
            [data, pred],
            [data.dtype if is_ref else data.dtype.base_dtype] * 2,
            name=scope,
            attrs={"T": data.dtype.base_dtype},
            shapes=[data.get_shape()] * 2,
        )
    return op.outputs[0], op.outputs[1]


def merge(inputs, name=None) -> _tuple:
    """``(output, value_index)``: the first input that is not dead, and which one it was.

    If an input is an `IndexedSlices` (a gradient, merged by a ``tf.cond``'s
    gradient), all are, and their values, indices and dense shapes are merged
    one by one (TF1's ``merge``).
    """
    if any(isinstance(t, IndexedSlices) for t in inputs):
        return _merge_indexed_slices(inputs, name)
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
        # The pred the branches route on (in a loop: the Enter of one from outside).
        pred = p_false.op.inputs[1]
        pivot_true = array_ops.identity(taken_true, name="pivot_t")
        results_true = _build_branch(true_fn, CondContext(pred, pivot_true, branch=1))
        pivot_false = array_ops.identity(taken_false, name="pivot_f")
        results_false = _build_branch(false_fn, CondContext(pred, pivot_false, branch=0))
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


def _build_branch(fn, cond_context: CondContext):
    """Runs ``fn`` under the branch's pivot; every op it made depends on the pivot.

    Then `_take_in` gives each tensor from outside that the branch reads its
    ``Switch``. Returns the results, as tensors.
    """
    graph = ops.get_default_graph()
    pivot = cond_context.pivot
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
    made = graph.get_operations()[before:]
    context = graph._get_control_flow_context()
    for op in made:
        if op is pivot.op or pivot.op in op.control_inputs:
            continue
        # The ops of a loop built in the branch are gated by the loop's Enters.
        if input_context(op) is context:
            op._add_control_input(pivot.op)
    _take_in(cond_context, made)
    return _Results(results, branch_results)


def _is_capture_enter(op: ops.Operation, loop) -> bool:
    """True for an ``Enter`` into the loop around the cond (or a loop around that one).

    Such an Enter belongs to the loop, not to the branch that made it: the
    loop reuses it for every reader of the value, in the branch or not.
    """
    if op.type not in LOOP_ENTER_TYPES:
        return False
    while loop is not None:
        if op._control_flow_context is loop:
            return True
        loop = getattr(loop, "outer_context", None)
    return False


def _take_in(cond_context: CondContext, made: list) -> None:
    """Makes the ops a branch built its own (TF1's ``CondContext.AddOp``).

    Each op records the branch (a cond nested in it records it as its outer
    cond); each input from outside the branch is replaced by its ``Switch`` on
    the cond's predicate, whose other output is dead — the gradient of that
    input goes back through the Switch. A variable reference that the op
    writes (an ``Assign``'s) stays as it is: the pivot gates the op.
    """
    loop = cond_context.while_context
    own = {op for op in made if not _is_capture_enter(op, loop)}
    for op in made:
        if op not in own:
            continue
        if op._cond_context is None:
            op._cond_context = cond_context
        else:
            op._cond_context._nest_in(cond_context)
        for index, t in enumerate(op.inputs):
            if t.op in own or t is cond_context.pivot or _writes_ref(op, index):
                continue
            op._update_input(index, cond_context.AddValue(t))


def _writes_ref(op: ops.Operation, index: int) -> bool:
    """True if ``op``'s kernel takes input ``index`` as the variable itself."""
    if not op.inputs[index].dtype._is_ref_dtype:
        return False
    kernel_def = get_kernel_def(op.type)
    return kernel_def is not None and index in kernel_def.ref_inputs


def _merge_indexed_slices(inputs, name) -> _tuple:
    """`merge` of gradients one of which at least is an `IndexedSlices`."""
    slices = [_as_indexed_slices(t) for t in inputs]
    with ops.name_scope(name, "Merge", [s.values for s in slices]) as scope:
        values, chosen = merge([s.values for s in slices], name=scope)
        indices = [s.indices for s in slices]
        if len({i.dtype.base_dtype for i in indices}) > 1:
            from minitf.ops.math import math_ops

            indices = [math_ops.cast(i, dtypes.int64) for i in indices]
        indices = merge(indices, name="indices")[0]
        dense_shape = None
        if all(s.dense_shape is not None for s in slices):
            dense_shape = merge([s.dense_shape for s in slices], name="dense_shape")[0]
    return IndexedSlices(values, indices, dense_shape), chosen


def _variable_beneath(t: ops.Tensor) -> ops.Tensor | None:
    """The variable reference ``t`` is, or is an ``Identity`` (a read) of; else None."""
    while not t.dtype._is_ref_dtype:
        if t.op.type != "Identity" or not t.op.inputs:
            return None
        t = t.op.inputs[0]
    return t


def _as_indexed_slices(t) -> IndexedSlices:
    """``t`` as an `IndexedSlices` (a dense tensor: every row of it)."""
    from minitf.ops.math import math_ops

    if isinstance(t, IndexedSlices):
        return t
    t = ops.convert_to_tensor(t)
    shape = array_ops.shape(t)
    return IndexedSlices(t, math_ops.range(shape[0]), shape)


class CondContext:
    """One branch of a ``tf.cond``: its predicate, pivot and side (TF1's ``CondContext``).

    Unlike a loop's, it is not the graph's control-flow context while the
    branch is built: `cond` takes the branch's ops in once they are made
    (`_take_in`), and each op records it as its ``_cond_context``. The
    gradient reads it: ``Merge``'s gradient is a ``Switch`` on `pred`, the
    gradient of a value the branch read is the ``Merge`` of the branch's
    gradient with zeros from the other side (`minitf.ops.control_flow.control_flow_grad`).

    Args:
        pred: The scalar bool tensor the cond's Switches route on.
        pivot: The tensor that is live exactly when this branch is taken.
        branch: 1 for the true branch, 0 for the false one (the Switch output it takes).
    """

    def __init__(self, pred: ops.Tensor, pivot: ops.Tensor, branch: int):
        self._pred = pred
        self._pivot = pivot
        self._branch = branch
        self._outer_context: CondContext | None = None
        self._while_context = ops.get_default_graph()._get_control_flow_context()
        self._external_values: dict[ops.Tensor, ops.Tensor] = {}
        self._switches: set[ops.Operation] = set()

    pred = property(lambda self: self._pred, doc="The predicate the Switches route on.")
    pivot = property(lambda self: self._pivot, doc="Live exactly when this branch is taken.")
    branch = property(lambda self: self._branch, doc="1: the true branch; 0: the false one.")
    outer_context = property(
        lambda self: self._outer_context, doc="The branch of an enclosing cond, or None."
    )
    while_context = property(
        lambda self: self._while_context, doc="The loop the cond is built in, or None."
    )

    def AddValue(self, val: ops.Tensor) -> ops.Tensor:  # noqa: N802 - TF's name
        """The branch's ``Switch`` output for ``val``, made once.

        Args:
            val: A tensor from outside the branch that an op of the branch reads.
        """
        switched = self._external_values.get(val)
        if switched is None:
            variable = _variable_beneath(val)
            with ops.control_dependencies(None), ops.colocate_with(val.op):
                source = val if variable is None else variable
                switched = switch(source, self._pred)[self._branch]
                self._switches.add(switched.op)
                switched.op._cond_context = self
                if variable is not None and variable is not val:
                    # A read of a variable: read it in the branch, when its reader runs.
                    switched = array_ops.identity(switched)
                    switched.op._cond_context = self
            self._external_values[val] = switched
        return switched

    def is_switch(self, op: ops.Operation) -> bool:
        """True if ``op`` is one of the Switches `AddValue` made.

        Args:
            op: An op.
        """
        return op in self._switches

    def _nest_in(self, outer: CondContext) -> None:
        """Records ``outer`` as the branch around this one's outermost cond."""
        context = self
        while context._outer_context is not None and context._outer_context is not outer:
            context = context._outer_context
        if context is not outer and context._outer_context is None:
            context._outer_context = outer

    def __repr__(self) -> str:
        return f"<CondContext '{self._pivot.op.name}'>"


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
