"""Data-flow ops (TF's ``data_flow_ops``): queues and conditional accumulators.

The state they carry between steps and workers lives in a task's resource
manager; an op that must wait for it is an asynchronous kernel.

- ``data_flow_ops.py``: the namespace users import; ``queue_ops.py``
  (``FIFOQueue``, ``RandomShuffleQueue``, ``PaddingFIFOQueue``,
  ``PriorityQueue``) and ``conditional_accumulator_ops.py`` (the
  accumulators) are the constructors.
- ``queue_base.py``: what every queue resource shares (waiting, closing,
  checks); ``queue_kernels.py`` (the FIFO queue and the kernels of all queue
  ops), ``random_shuffle_queue_kernels.py``, ``padding_fifo_queue_kernels.py``,
  ``priority_queue_kernels.py`` and ``conditional_accumulator_kernels.py``:
  the resources and their kernels.
- ``blocking.py``: the waiting *attempts* both kinds of resource share.

None of these ops has a gradient: the kernel modules declare them not
differentiable.
"""
