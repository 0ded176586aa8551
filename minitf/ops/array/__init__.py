"""Array ops: constants, placeholders, shapes, joining, slicing and indexing (``tf.gather`` ...).

- ``array_ops.py``: the constructors users call; it re-exports
  ``array_shaping.py``, ``array_joining.py``, ``array_slicing.py`` and
  ``array_indexing.py``. ``constant_op.py`` builds ``tf.constant`` and holds
  its kernel (TF registers ``Const`` with the array ops).
- ``array_kernels.py`` and ``array_indexing_kernels.py`` (slicing and
  indexing): the numpy kernels and constant folders.
- ``array_grad.py``: the gradients.
"""
