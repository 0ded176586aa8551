"""``tf.train.AdadeltaOptimizer``: steps scaled by the ratio of two moving averages.

Per step, TF1's ``ApplyAdadelta``::

    accum        = rho * accum + (1 - rho) * grad^2
    update       = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
    var         -= learning_rate * update
    accum_update = rho * accum_update + (1 - rho) * update^2

The slots are ``"accum"`` (variable ``<var>/Adadelta``) and ``"accum_update"``
(``<var>/Adadelta_1``), both starting at zeros.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import ops
from minitf.ops.math import math_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["AdadeltaOptimizer"]


class AdadeltaOptimizer(optimizer.Optimizer):
    """The Adadelta optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        rho: The decay of the moving averages.
        epsilon: Keeps the square roots away from zero.
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops and the slot suffix.
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: Any = 0.95,
        epsilon: Any = 1e-8,
        use_locking: bool = False,
        name: str = "Adadelta",
    ):
        super().__init__(use_locking, name)
        self._hyper_values = {"lr": learning_rate, "rho": rho, "epsilon": epsilon}
        self._tensors: dict[str, ops.Tensor] = {}

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        for name, value in self._hyper_values.items():
            value = self._call_if_callable(value)
            self._tensors[name] = ops.convert_to_tensor(value, name=name)

    def _args(self, var, dtype, handles: bool) -> list:
        """``var, accum, accum_update, lr, rho, epsilon`` for the kernels."""
        slots = [var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update")]
        if handles:
            slots = [s.handle for s in slots]
        hyper = [
            math_ops.cast(self._tensors[n], dtype.base_dtype) for n in ("lr", "rho", "epsilon")
        ]
        return slots + hyper

    def _apply_dense(self, grad, var):
        args = self._args(var, var.dtype, handles=False)
        return training_ops.apply_adadelta(*args, grad, use_locking=self._use_locking).op

    def _resource_apply_dense(self, grad, var):
        args = self._args(var, grad.dtype, handles=True)
        return training_ops.resource_apply_adadelta(*args, grad, use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        args = self._args(var, var.dtype, handles=False)
        return training_ops.sparse_apply_adadelta(
            *args, grad.values, grad.indices, use_locking=self._use_locking
        ).op

    def _resource_apply_sparse(self, grad, var, indices):
        args = self._args(var, grad.dtype, handles=True)
        return training_ops.resource_sparse_apply_adadelta(
            *args, grad, indices, use_locking=self._use_locking
        )
