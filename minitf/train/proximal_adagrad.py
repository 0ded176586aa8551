"""``tf.train.ProximalAdagradOptimizer``: Adagrad's rates with l1/l2 proximal steps.

Per step, TF1's ``ApplyProximalAdagrad``: ``accum += grad^2``,
``rate = lr / sqrt(accum)``, ``prox = var - rate * grad``, then
``var = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2)``. The
accumulator is the slot ``"accumulator"`` (``<var>/ProximalAdagrad``),
initialised to ``initial_accumulator_value``.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import ops
from minitf.ops.array import constant_op
from minitf.ops.math import math_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["ProximalAdagradOptimizer"]


class ProximalAdagradOptimizer(optimizer.Optimizer):
    """The proximal Adagrad optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        initial_accumulator_value: The accumulators' starting value; must be positive.
        l1_regularization_strength: The l1 strength (not negative).
        l2_regularization_strength: The l2 strength (not negative).
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops and the slot suffix.

    Raises:
        ValueError: if ``initial_accumulator_value`` is not positive.
    """

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "ProximalAdagrad",
    ):
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._initial_accumulator_value = initial_accumulator_value
        self._hyper_values = {
            "learning_rate": learning_rate,
            "l1_regularization_strength": l1_regularization_strength,
            "l2_regularization_strength": l2_regularization_strength,
        }
        self._tensors: dict[str, ops.Tensor] = {}

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            with ops.colocate_with(v):
                val = constant_op.constant(
                    self._initial_accumulator_value, shape=v.get_shape(), dtype=v.dtype.base_dtype
                )
            self._get_or_make_slot(v, val, "accumulator", self._name)

    def _prepare(self) -> None:
        for name, value in self._hyper_values.items():
            value = self._call_if_callable(value)
            self._tensors[name] = ops.convert_to_tensor(value, name=name)

    def _args(self, var, dtype, handles: bool) -> list:
        """``var, accum, lr, l1, l2`` for the kernels."""
        slots = [var, self.get_slot(var, "accumulator")]
        if handles:
            slots = [s.handle for s in slots]
        return slots + [math_ops.cast(t, dtype.base_dtype) for t in self._tensors.values()]

    def _apply_dense(self, grad, var):
        args = self._args(var, var.dtype, handles=False)
        return training_ops.apply_proximal_adagrad(*args, grad, use_locking=self._use_locking).op

    def _resource_apply_dense(self, grad, var):
        args = self._args(var, grad.dtype, handles=True)
        return training_ops.resource_apply_proximal_adagrad(
            *args, grad, use_locking=self._use_locking
        )

    def _apply_sparse(self, grad, var):
        args = self._args(var, var.dtype, handles=False)
        return training_ops.sparse_apply_proximal_adagrad(
            *args, grad.values, grad.indices, use_locking=self._use_locking
        ).op

    def _resource_apply_sparse(self, grad, var, indices):
        args = self._args(var, grad.dtype, handles=True)
        return training_ops.resource_sparse_apply_proximal_adagrad(
            *args, grad, indices, use_locking=self._use_locking
        )
