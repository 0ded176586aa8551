"""Math ops: element-wise arithmetic, comparisons, logic, matmul, reductions (``tf.add`` ...).

- ``math_ops.py``: the constructors users call (binary ops, comparisons,
  ``matmul``); it re-exports ``math_unary.py`` (functions of one tensor,
  ``cast``) and ``math_reductions.py`` (``reduce_*``, ``argmax``, ``add_n``,
  ``cumsum``, ``range``).
- ``math_kernels.py``: the numpy kernels and constant folders.
- ``math_grad.py``: the gradients.
"""
