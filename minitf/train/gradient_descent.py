"""``tf.train.GradientDescentOptimizer``: ``var -= learning_rate * grad``."""

from __future__ import annotations

from minitf.framework import ops
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.math import math_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["GradientDescentOptimizer"]


class GradientDescentOptimizer(optimizer.Optimizer):
    """Plain gradient descent (op ``ApplyGradientDescent``; sparse: ``ScatterSub``).

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops.
    """

    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self) -> None:
        learning_rate = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = ops.convert_to_tensor(learning_rate, name="learning_rate")

    def _lr(self, dtype) -> ops.Tensor:
        return math_ops.cast(self._learning_rate_tensor, dtype.base_dtype)

    def _apply_dense(self, grad, var):
        return training_ops.apply_gradient_descent(
            var, self._lr(var.dtype), grad, use_locking=self._use_locking
        ).op

    def _resource_apply_dense(self, grad, handle):
        return training_ops.resource_apply_gradient_descent(
            handle.handle, self._lr(grad.dtype), grad, use_locking=self._use_locking
        )

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices):
        # Scatter-adding handles repeated indices by itself: no need to sum them first.
        return training_ops.resource_scatter_add(
            handle.handle, indices, -grad * self._lr(grad.dtype)
        )

    def _apply_sparse_duplicate_indices(self, grad, var):
        delta = IndexedSlices(grad.values * self._lr(var.dtype), grad.indices, grad.dense_shape)
        return var.scatter_sub(delta, use_locking=self._use_locking)
