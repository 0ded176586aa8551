"""Every step runs with numpy's floating-point warnings off, cheaply.

Kernels never warn about an inf or a nan (TF's do not). ``np.errstate``
would do; this does the same for a tenth of its cost per step, where numpy
allows it (`float_warning_switches`).
"""

from __future__ import annotations

import functools

import numpy as np


def float_warning_switches():
    """How a step turns numpy's floating-point warnings off, and back on.

    Kernels never warn about an inf or a nan (TF's do not), so every step
    runs as in ``np.errstate(all="ignore")``. That context builds numpy's
    error state anew on each entry, 1-1.7 us: more than the rest of the walk
    of a one-op step. numpy 2 keeps the state in a context variable, so a
    step sets a state made once and resets it, for a tenth of that. (The
    state made once keeps the buffer size numpy had at import; a buffer size
    changes speed only.) With another numpy the step uses ``np.errstate``.

    Returns:
        ``(quiet, back)``: ``quiet()`` turns the warnings off and returns what
        ``back(...)`` takes to turn them back on, on the same thread.
    """
    try:
        from numpy._core import _ufunc_config

        state = _ufunc_config._make_extobj(all="ignore")
        variable = _ufunc_config._extobj_contextvar
    except (ImportError, AttributeError, TypeError):

        def quiet():
            context = np.errstate(all="ignore")
            context.__enter__()
            return context

        def back(context) -> None:
            context.__exit__(None, None, None)

        return quiet, back
    return functools.partial(variable.set, state), variable.reset


quiet_floats, floats_back = float_warning_switches()
