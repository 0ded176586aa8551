"""The kernels of ``Switch`` and ``Merge``, and the dead value that ``tf.cond`` rests on.

``Switch(data, pred)`` forwards ``data`` to one of its two outputs — the
second when ``pred`` is true — and marks the other `DEAD`. An op with a dead
input, or a dead control input, does not run: it is dead too, and so are its
outputs (`minitf.runtime.core.execution`). ``Merge`` forwards the first input that
is not dead, with its index. So the branch ``tf.cond`` did not take is a
chain of dead ops that finishes at once and changes nothing; a dead value
that crosses tasks travels as `DEAD`, so the other task's ops die too.
"""

from __future__ import annotations

import numpy as np

from minitf.framework.op_registry import register_compute


class _Dead:
    """The value of a tensor on a branch not taken (TF's ``is_dead`` flag)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self):
        return (_Dead, ())  # unpickled as the one DEAD of the receiving process

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()
"""The dead value: ``value is DEAD`` tells it."""


@register_compute("Switch")
def _switch_kernel(ctx, data, pred):
    return (DEAD, data) if bool(pred) else (data, DEAD)


# A variable's reference goes through as the variable: its readers read it when they run.
register_compute("RefSwitch", ref_inputs=(0,))(_switch_kernel)


@register_compute("Merge")
def _merge_kernel(ctx, *inputs):
    for index, value in enumerate(inputs):
        # None: an input that has not come in this iteration (a loop's back edge).
        if value is not DEAD and value is not None:
            if not isinstance(value, np.ndarray) and hasattr(value, "read"):
                value = value.read()  # a variable's value, read now (it is not dead)
            return value, np.int32(index)
    return DEAD, DEAD


def _forward(ctx, data):
    return data


# Each only forwards its input: what they do is where the executor puts the
# value — another frame, the next iteration (minitf.runtime.core.frames).
for _loop_op_type in ("Enter", "Exit", "NextIteration", "LoopCond"):
    register_compute(_loop_op_type)(_forward)
for _loop_op_type in ("RefEnter", "RefExit"):
    register_compute(_loop_op_type, ref_inputs=(0,))(_forward)  # the variable itself
