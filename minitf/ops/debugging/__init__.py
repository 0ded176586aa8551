"""Debugging ops: ``Print``, ``Assert``, the ``assert_*`` checks and ``py_func``.

- ``summarize.py``: how a tensor's value is written in a message (TF's
  ``Tensor::SummarizeValue``), shared by ``Print`` and ``Assert``.
- ``logging_ops.py``: ``tf.Print`` and ``tf.Assert``, their kernels and gradients.
- ``check_ops.py``: ``tf.assert_equal`` and the other checks built on ``Assert``.
- ``script_ops.py``: ``tf.py_func`` / ``tf.numpy_function``: a Python function as an op.
"""
