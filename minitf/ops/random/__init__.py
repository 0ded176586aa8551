"""Random ops: normal, uniform, truncated normal, shuffles and categorical samples.

- ``random_ops.py``: the constructors, their kernels (one numpy generator per
  op and session) and their gradients (none: the raw random ops are not
  differentiable).
"""
