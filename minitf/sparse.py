"""``tf.sparse``: `SparseTensor` and its densification under their ``tf.sparse.*`` names."""

# ruff: noqa: F401
from minitf.framework.sparse_tensor import SparseTensor, SparseTensorValue
from minitf.ops.sparse.sparse_ops import sparse_placeholder as placeholder
from minitf.ops.sparse.sparse_ops import sparse_tensor_to_dense as to_dense
