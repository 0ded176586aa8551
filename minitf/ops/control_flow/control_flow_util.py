"""Where an op stands among loops: the frame it runs in, the frame its outputs live in.

An op's ``_control_flow_context`` is the `minitf.ops.control_flow.while_context.WhileContext`
it was built in (None outside every loop). An ``Enter`` belongs to its loop
but runs in the enclosing frame; an ``Exit`` belongs to its loop but its
output lives in the enclosing frame (TF's ``control_flow_util``). An op built
in a ``tf.cond`` branch records it as its ``_cond_context``.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import ops

LOOP_ENTER_TYPES = frozenset({"Enter", "RefEnter"})
LOOP_EXIT_TYPES = frozenset({"Exit", "RefExit"})
SWITCH_TYPES = frozenset({"Switch", "RefSwitch"})


def output_context(op: ops.Operation) -> Any:
    """The loop whose frame ``op``'s outputs live in: an ``Exit``'s are the enclosing loop's."""
    context = op._control_flow_context
    if context is not None and op.type in LOOP_EXIT_TYPES:
        return context.outer_context
    return context


def input_context(op: ops.Operation) -> Any:
    """The loop whose frame ``op`` runs in: an ``Enter`` runs in the enclosing loop's."""
    context = op._control_flow_context
    if context is not None and op.type in LOOP_ENTER_TYPES:
        return context.outer_context
    return context


def is_loop_constant_enter(op: ops.Operation) -> bool:
    """True for an ``Enter`` of a loop invariant (``is_constant``)."""
    return op.type in LOOP_ENTER_TYPES and bool(op.get_attr("is_constant"))


def cond_switch_context(op: ops.Operation) -> Any:
    """The ``tf.cond`` branch that ``op`` is the Switch of a read value for, or None.

    Such a Switch (``CondContext.AddValue``) routes a tensor from outside the
    branch into it; a cond's other Switches, and a loop's, are not.
    """
    context = op._cond_context
    if context is not None and context.is_switch(op):
        return context
    return None


def is_loop_switch(op: ops.Operation) -> bool:
    """True for a ``tf.while_loop``'s Switch (TF's ``IsLoopSwitch``)."""
    return (
        op.type in SWITCH_TYPES
        and op._control_flow_context is not None
        and cond_switch_context(op) is None
    )
