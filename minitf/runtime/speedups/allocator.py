"""A task process keeps the memory its steps free, as TF's allocator does.

A step on a ps allocates the same arrays every time: the first gradient of a
new accumulation is copied into a fresh 400 KB array, a take hands that array
to the update, and the update's end frees it. glibc's malloc gives such a
block back to the kernel when it is freed at the top of a heap (above
``M_TRIM_THRESHOLD``, 128 KiB at first), so the next step's copy touches
fresh pages: 30–40 page faults per synchronous global step on the ps of
``benchmarks/sync_training.py`` (``docs/distributed.md`` has the measured
cost). TF's CPU device allocates from ``ProcessState``'s CPU allocator, a
``PoolAllocator`` that keeps up to 100 freed buffers for reuse by size (a
``BFCAllocator`` with ``TF_CPU_ALLOCATOR_USE_BFC``,
``tensorflow/core/common_runtime/process_state.cc``): what it freed serves
the next step.

`keep_freed_memory` asks glibc for the same: blocks up to `KEEP_BELOW` come
from the heap, and a heap gives memory back to the kernel only once more than
`TRIM_ABOVE` of it is free. A process keeps at most what it used at its peak.
It is called when a `tf.train.Server` starts: a task's process runs steps
all its life. ``MINITF_KEEP_FREED_MEMORY=0`` (or ``off``, ``false``, ``no``)
leaves malloc as it is, and so
does a process started with glibc's own ``MALLOC_TRIM_THRESHOLD_`` or
``MALLOC_MMAP_THRESHOLD_``. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading

from minitf.runtime.core.config import env_switch

logger = logging.getLogger("minitf")

ENV = "MINITF_KEEP_FREED_MEMORY"
KEEP_BELOW = 32 << 20
"""Blocks smaller than this come from a heap (glibc's largest mmap threshold, 32 MiB)."""
TRIM_ABOVE = 256 << 20
"""A heap gives memory back to the kernel only when more than this is free at its top."""

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3
_GLIBC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")

_lock = threading.Lock()
_applied: bool | None = None  # None until the first call


def keep_freed_memory() -> bool:
    """Makes this process's malloc keep freed blocks for reuse (once per process).

    Returns:
        Whether malloc keeps them now: False where the environment says not
        to, or where malloc is not glibc's.
    """
    global _applied
    with _lock:
        if _applied is None:
            _applied = _apply()
        return _applied


def _apply() -> bool:
    if not env_switch(ENV, "keeping freed memory"):
        return False
    if any(name in os.environ for name in _GLIBC_ENV):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # Both, in this order: setting either turns off glibc's own adjustment of
    # the two, and a trim threshold alone would leave 128 KiB blocks mmapped.
    applied = mallopt(_M_MMAP_THRESHOLD, KEEP_BELOW) == 1
    applied = applied and mallopt(_M_TRIM_THRESHOLD, TRIM_ABOVE) == 1
    if not applied:
        logger.debug("malloc did not take the thresholds; freed memory goes back as before")
    return applied
