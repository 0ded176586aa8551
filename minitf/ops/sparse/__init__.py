"""Sparse ops (TF's ``sparse_ops``): densifying a `SparseTensor`, and its placeholder.

- ``sparse_ops.py``: ``sparse_tensor_to_dense`` / ``sparse_to_dense`` (op
  ``SparseToDense``) with its kernel, and ``sparse_placeholder``.
"""
