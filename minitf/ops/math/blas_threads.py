"""A matrix product on one BLAS thread, or, when it is large, on the process's share of cores.

The kernels of ``MatMul``, ``BatchMatMulV2`` and the fused chains call
`matmul`. Which threads a large product gets is decided where the process's
BLAS pool is set (`minitf.runtime.speedups.intra_op.configure`, for a
session or a server); until then, and when the user chose the threads
(``OPENBLAS_NUM_THREADS``, ``intra_op_parallelism_threads``), `matmul` is
``np.matmul``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

LARGE_PRODUCT = 1 << 24
"""Multiply-adds (``m * k * n``, times the batch) from which a product uses several threads."""

_large_threads: int | None = None
_set_threads: Callable[[int], None] | None = None


def use(set_threads: Callable[[int], None] | None, large: int | None) -> None:
    """Runs large products on ``large`` threads, small ones on the pool's one thread.

    Args:
        set_threads: Sets the BLAS pool's threads (the pool is kept at one).
        large: The threads a large product takes for its call; None: every
            product runs on the pool as it is.
    """
    global _large_threads, _set_threads
    _set_threads, _large_threads = set_threads, large


def large_product_threads() -> int | None:
    """The threads a large product takes for its call, or None (the pool as it is)."""
    return _large_threads


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.matmul(a, b, out=out)``; a product of `LARGE_PRODUCT` multiply-adds or more
    raises the pool to the process's share of the cores for its own call."""
    large = _large_threads
    if large is None or a.size * (b.shape[-1] if b.ndim > 1 else 1) < LARGE_PRODUCT:
        return np.matmul(a, b, out=out)
    _set_threads(large)
    try:
        return np.matmul(a, b, out=out)
    finally:
        _set_threads(1)
