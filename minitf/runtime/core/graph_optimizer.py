"""What TF's graph optimizer does to a step before it runs: constant folding, unread ops.

Grappler rewrites every new step signature's graph; minitf does the two
rewrites that change what a step computes and what its trace shows:

* **constant folding** (`fold_constants`): ``Const`` ops and pure ops whose
  inputs are all constant are computed once, when the plan is built; so
  are ``Shape``-like ops of inputs whose static shapes are known;
* **the dependency optimizer** (`unread_ops`): a pure op reached only
  through control edges, whose outputs nothing reads, becomes a ``NoOp``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minitf.framework import dtypes
from minitf.framework.op_registry import get_kernel_def
from minitf.framework.ops import Operation, Tensor
from minitf.runtime.core.plan import SHAPE_READERS, KernelInfo, reads_variable

# Like TF's constant folding limit: larger results are computed at run time.
MAX_FOLDED_BYTES = 10 << 20


class _FoldingContext:
    """The context of kernels run at plan time (pure kernels ignore it)."""

    resource_mgr = None
    step_id = 0


_NEVER_FOLDED = frozenset(
    {
        "Switch",
        "RefSwitch",
        "Merge",
        "Enter",
        "RefEnter",
        "Exit",
        "RefExit",
        "NextIteration",
        "LoopCond",
    }
)
"""Ops TF's constant folding leaves to the run: a folded Switch would hide the
``tf.cond`` from it; a loop's ops put values in other frames and iterations.
A placeholder with a default that the run does not feed folds, as in TF:
Grappler keeps it, and the graph optimizer TF's session runs after Grappler
folds it (``common_runtime/constant_folding.cc``); a run that
feeds it has a plan of its own."""

_FOLDED_WITHOUT_INPUTS = frozenset({"Const", "PyFuncStateless"})
"""Pure ops folded though they have no inputs: TF folds a pure op whose inputs
are all constant, none included, so a ``py_func(..., stateful=False)`` of no
inputs is called once per plan (TF's ``py_func_test.testStateless``)."""


def _try_fold(op: Operation, info: KernelInfo, known: dict[Tensor, object]) -> list | None:
    """Returns the op's output values if it can be computed now, else None."""
    # The op's fields, not its properties, which copy lists: every op of a plan comes here.
    inputs, outputs = op._inputs, op._outputs
    if info.stateful or info.is_async or op._control_inputs or op._type in _NEVER_FOLDED:
        return None
    if op._type not in _FOLDED_WITHOUT_INPUTS and (
        not inputs or any(t not in known for t in inputs)
    ):
        return None
    try:
        result = info.compute(_FoldingContext(), *[known[t] for t in inputs])
    except Exception:  # noqa: BLE001 - the run reports the error, with its step
        return None
    values = [result] if len(outputs) == 1 else list(result or [])
    if len(values) != len(outputs):
        return None
    for value in values:
        if isinstance(value, np.ndarray):
            if value.nbytes > MAX_FOLDED_BYTES:
                return None
            value.flags.writeable = False
    return values


def _materialized_shape(op: Operation, info: KernelInfo, feeds: set[Tensor]) -> list | None:
    """The outputs of a ``Shape``, ``ShapeN``, ``Size`` or ``Rank`` whose inputs have static shapes.

    TF's constant folding does the same before a step runs
    (``ConstantFolding::MaterializeShapes`` in Grappler): the value depends
    only on shapes the graph already knows, so the op becomes a constant, and
    an op read only through it (the loss a ``reduce_mean`` gradient takes the
    shape of) may then go unread (`unread_ops`). Fed inputs, variables and
    handles are left to the run: their value's shape is only known then.
    The op's own kernel computes the value, from a stand-in of that shape.
    """
    if op._type not in SHAPE_READERS:
        return None
    stand_ins = {}
    for t in op.inputs:
        shape = t.get_shape()
        if (
            t in feeds
            or not shape.is_fully_defined()
            or reads_variable(t)
            or t.dtype.base_dtype in (dtypes.resource, dtypes.variant)
        ):
            return None
        stand_ins[t] = np.broadcast_to(np.zeros((), np.bool_), shape.as_list())
    return _try_fold(op, info, stand_ins)


def fold_constants(
    order: list[Operation],
    kernels: dict[Operation, KernelInfo],
    feeds: set[Tensor],
    has_control_flow: bool,
) -> tuple[dict[Tensor, object], list[Operation]]:
    """The values computed now, and the ops they come from (TF's constant folding).

    Args:
        order: The step's ops in a topological order.
        kernels: Each op's kernel.
        feeds: The fed tensors (never folded).
        has_control_flow: Whether the step has a ``tf.cond`` (shapes are then
            left to the run).

    Returns:
        ``(known values by tensor, folded ops)``.
    """
    known: dict[Tensor, object] = {}
    folded: list[Operation] = []
    for op in order:
        if any(t in feeds for t in op._outputs):
            continue
        values = _try_fold(op, kernels[op], known)
        if values is None and not has_control_flow:
            values = _materialized_shape(op, kernels[op], feeds)
        if values is not None:
            known.update(zip(op._outputs, values))
            folded.append(op)
    return known, folded


def folded_frontier(folded: list, known: dict, fetches: list, computed: list) -> tuple:
    """The folded ops whose values are fetched or read by a computed op, with their bytes."""
    used = set(fetches)
    for op in computed:
        used.update(op.inputs)
    return tuple(
        (op, sum(getattr(known[t], "nbytes", 0) for t in op.outputs))
        for op in folded
        if any(t in used for t in op.outputs)
    )


NEVER_SKIPPED = frozenset(
    {
        "Placeholder",
        "PlaceholderV2",
        "PlaceholderWithDefault",
        "Switch",
        "RefSwitch",
        "Merge",
        "Assert",
        "CheckNumerics",
        "Print",
        "PrintV2",
        "_Send",
        "_Recv",
    }
)
"""Op types that always run when the step reaches them, as TF's dependency
optimizer keeps them: a placeholder must stay feedable (and say when it is not
fed), control flow and checks have effects of their own."""


def unread_ops(
    order: list[Operation],
    kernels: dict[Operation, KernelInfo],
    fetches: list[Tensor],
    targets: list[Operation],
    feeds: set[Tensor],
) -> set[Operation]:
    """The ops of a step that need not be computed: nothing reads their outputs.

    TF's dependency optimizer (Grappler, run before every new step signature)
    turns an op into a ``NoOp`` when the pruned graph only reaches it through
    control edges and it is free of side effects. Its outputs have no reader,
    so computing them changes nothing anyone can see, and the ops with a
    control edge from it still wait for its inputs. The rule, op by op from
    the last:

    * no op of the step that is computed reads one of its outputs (a fed
      output is not read from the op), and it is neither fetched nor a target;
    * its kernel is pure (not ``stateful``, not asynchronous), it takes no
      variable by reference, it has outputs, and it is not one of
      `NEVER_SKIPPED` nor a queue op;
    * it is not the ``Identity`` of a variable (TF keeps those: it checks the
      variable has a value).

    Args:
        order: The step's ops in a topological order.
        kernels: Each op's kernel.
        fetches: The fetched tensors.
        targets: The target ops.
        feeds: The fed tensors.
    """
    kept = {t.op for t in fetches} | set(targets)
    in_step = set(order)
    readers = dict.fromkeys(order, 0)
    for op in order:
        for t in op.inputs:
            if t.op in in_step and t not in feeds:
                readers[t.op] += 1
    unread: set[Operation] = set()
    for op in reversed(order):
        if readers[op] or op in kept or not _may_skip(op, kernels[op]):
            continue
        unread.add(op)
        for t in op.inputs:
            if t.op in in_step and t not in feeds:
                readers[t.op] -= 1
    return unread


def _may_skip(op: Operation, info: KernelInfo) -> bool:
    """Whether ``op`` is free of side effects (TF's ``IsFreeOfSideEffect``)."""
    if info.stateful or info.is_async or not op.outputs or op.type in NEVER_SKIPPED:
        return False
    if "Queue" in op.type:
        return False
    kernel_def = get_kernel_def(op.type)
    if kernel_def is not None and kernel_def.ref_inputs:
        return False
    return not (op.type == "Identity" and reads_variable(op.inputs[0]))


def not_computed(op: Operation) -> Callable:
    """The compute of an op in `unread_ops`: no outputs, and a note in a traced step."""
    outputs = len(op.outputs)
    name = op.name

    def compute(ctx, *args):
        ctx.note(name, "not_computed", "nothing in the step reads its outputs")
        return None if outputs == 1 else [None] * outputs

    return compute
