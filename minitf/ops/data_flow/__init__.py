"""Data-flow ops (TF's ``data_flow_ops``): queues and conditional accumulators.

The state they carry between steps and workers lives in a task's resource
manager; an op that must wait for it is an asynchronous kernel.

- ``data_flow_ops.py``: the namespace users import; ``queue_ops.py``
  (``FIFOQueue``) and ``conditional_accumulator_ops.py`` (the accumulators)
  are the constructors.
- ``queue_kernels.py`` and ``conditional_accumulator_kernels.py``: the
  resources and their kernels.
- ``blocking.py``: the waiting *attempts* both kinds of resource share.

None of these ops has a gradient: the kernel modules declare them not
differentiable.
"""
