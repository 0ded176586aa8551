"""Checkpoint ops (TF's ``io_ops``): what a ``tf.train.Saver`` builds and the files they write.

- ``io_ops.py``: the constructors (``SaveV2``, ``RestoreV2``, ...).
- ``io_kernels.py``: their kernels; none has a gradient.
- ``tensor_bundle.py``: the checkpoint format on disk, read and written by
  the kernels and by the checkpoint readers of ``tf.train``.
"""
