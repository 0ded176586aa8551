"""Control flow: ``no_op``, ``group``, ``tuple``, ``with_dependencies``, and ``cond``.

- ``control_flow_ops.py``: the constructors (and the ``NoOp`` kernel).
- ``control_flow_kernels.py``: the ``Switch`` and ``Merge`` kernels, the dead
  value that ``tf.cond`` rests on, and ``Merge``'s gradient, which says that
  gradients do not flow through ``tf.cond`` yet.
"""
