"""``tf.train.ProximalGradientDescentOptimizer``: gradient descent with l1/l2 proximal steps.

Per step, TF1's ``ApplyProximalGradientDescent``: ``prox = var - lr * grad``,
then ``var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)``. The l1
term sets small weights exactly to zero. No slots.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import ops
from minitf.ops.math import math_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["ProximalGradientDescentOptimizer"]


class ProximalGradientDescentOptimizer(optimizer.Optimizer):
    """The proximal gradient descent optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        l1_regularization_strength: The l1 strength (not negative).
        l2_regularization_strength: The l2 strength (not negative).
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops.
    """

    def __init__(
        self,
        learning_rate: Any,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "ProximalGradientDescent",
    ):
        super().__init__(use_locking, name)
        self._hyper_values = {
            "learning_rate": learning_rate,
            "l1_regularization_strength": l1_regularization_strength,
            "l2_regularization_strength": l2_regularization_strength,
        }
        self._tensors: dict[str, ops.Tensor] = {}

    def _prepare(self) -> None:
        for name, value in self._hyper_values.items():
            value = self._call_if_callable(value)
            self._tensors[name] = ops.convert_to_tensor(value, name=name)

    def _hyper(self, dtype) -> list[ops.Tensor]:
        return [math_ops.cast(t, dtype.base_dtype) for t in self._tensors.values()]

    def _apply_dense(self, grad, var):
        hyper = self._hyper(var.dtype)
        return training_ops.apply_proximal_gradient_descent(
            var, *hyper, grad, use_locking=self._use_locking
        ).op

    def _resource_apply_dense(self, grad, var):
        hyper = self._hyper(grad.dtype)
        return training_ops.resource_apply_proximal_gradient_descent(
            var.handle, *hyper, grad, use_locking=self._use_locking
        )

    def _apply_sparse(self, grad, var):
        hyper = self._hyper(var.dtype)
        return training_ops.sparse_apply_proximal_gradient_descent(
            var, *hyper, grad.values, grad.indices, use_locking=self._use_locking
        ).op

    def _resource_apply_sparse(self, grad, var, indices):
        hyper = self._hyper(grad.dtype)
        return training_ops.resource_sparse_apply_proximal_gradient_descent(
            var.handle, *hyper, grad, indices, use_locking=self._use_locking
        )
