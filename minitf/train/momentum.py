"""``tf.train.MomentumOptimizer``: gradient descent with a velocity accumulator.

Per step, TF1's ``ApplyMomentum``: ``accum = momentum * accum + grad`` then
``var -= learning_rate * accum`` (Nesterov: ``var -= learning_rate * (grad +
momentum * accum)``). The accumulator is the slot ``"momentum"`` of each
variable, a variable named ``<var>/Momentum``.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.ops.math import math_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["MomentumOptimizer"]


class MomentumOptimizer(optimizer.Optimizer):
    """The momentum optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        momentum: A float, a scalar float tensor, or a callable returning one.
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops and the slot suffix.
        use_nesterov: Use Nesterov momentum.
    """

    def __init__(
        self,
        learning_rate,
        momentum,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
    ):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        learning_rate = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = ops.convert_to_tensor(learning_rate, name="learning_rate")
        momentum = self._call_if_callable(self._momentum)
        self._momentum_tensor = ops.convert_to_tensor(momentum, name="momentum")

    def _hyper(self, dtype) -> tuple[ops.Tensor, ops.Tensor]:
        dtype = dtype.base_dtype
        return (
            math_ops.cast(self._learning_rate_tensor, dtype),
            math_ops.cast(self._momentum_tensor, dtype),
        )

    def _apply_dense(self, grad, var):
        lr, momentum = self._hyper(var.dtype)
        return training_ops.apply_momentum(
            var,
            self.get_slot(var, "momentum"),
            lr,
            grad,
            momentum,
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        ).op

    def _resource_apply_dense(self, grad, var):
        lr, momentum = self._hyper(grad.dtype)
        return training_ops.resource_apply_momentum(
            var.handle,
            self.get_slot(var, "momentum").handle,
            lr,
            grad,
            momentum,
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        )

    def _apply_sparse(self, grad, var):
        lr, momentum = self._hyper(var.dtype)
        return training_ops.sparse_apply_momentum(
            var,
            self.get_slot(var, "momentum"),
            lr,
            grad.values,
            grad.indices,
            momentum,
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        ).op

    def _resource_apply_sparse(self, grad, var, indices):
        lr, momentum = self._hyper(grad.dtype)
        return training_ops.resource_sparse_apply_momentum(
            var.handle,
            self.get_slot(var, "momentum").handle,
            lr,
            grad,
            indices,
            momentum,
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        )
