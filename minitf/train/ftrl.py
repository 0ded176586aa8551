"""``tf.train.FtrlOptimizer``: FTRL-Proximal (McMahan et al., 2013), for sparse linear models.

Per step, TF1's ``ApplyFtrl`` (``p = -learning_rate_power``)::

    new_accum = accum + grad^2
    linear   += grad - (new_accum^p - accum^p) / lr * var
    var       = (sign(linear) * l1 - linear) / (new_accum^p / lr + 2 * l2)  if |linear| > l1
                0                                                          otherwise
    accum     = new_accum

With ``l2_shrinkage_regularization_strength > 0`` it is ``ApplyFtrlV2``,
whose ``linear`` sees ``grad + 2 * l2_shrinkage * var``. The slots are
``"accum"`` (``initial_accumulator_value``, variable ``<var>/Ftrl``) and
``"linear"`` (zeros, ``<var>/Ftrl_1``).
"""

from __future__ import annotations

from typing import Any

from minitf.framework import ops
from minitf.ops.math import math_ops
from minitf.ops.state import init_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["FtrlOptimizer"]


def _check_not_negative(what: str, value: float) -> None:
    if value < 0.0:
        raise ValueError(f"{what} {value:f} needs to be positive or zero")


class FtrlOptimizer(optimizer.Optimizer):
    """The FTRL-Proximal optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        learning_rate_power: How the rate falls with the accumulated squares (<= 0).
        initial_accumulator_value: The accumulators' starting value (>= 0).
        l1_regularization_strength: The l1 strength (>= 0).
        l2_regularization_strength: The l2 strength (>= 0).
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops and the slot suffix.
        accum_name: The suffix of the ``accum`` slots (default ``name``).
        linear_name: The suffix of the ``linear`` slots (default ``name``).
        l2_shrinkage_regularization_strength: The l2 shrinkage strength (>= 0).

    Raises:
        ValueError: if a strength or the initial value is negative, or the
            power positive.
    """

    def __init__(
        self,
        learning_rate: Any,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        use_locking: bool = False,
        name: str = "Ftrl",
        accum_name: str | None = None,
        linear_name: str | None = None,
        l2_shrinkage_regularization_strength: float = 0.0,
    ):
        super().__init__(use_locking, name)
        _check_not_negative("initial_accumulator_value", initial_accumulator_value)
        if learning_rate_power > 0.0:
            raise ValueError(
                f"learning_rate_power {learning_rate_power:f} needs to be negative or zero"
            )
        _check_not_negative("l1_regularization_strength", l1_regularization_strength)
        _check_not_negative("l2_regularization_strength", l2_regularization_strength)
        _check_not_negative(
            "l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength
        )
        self._initial_accumulator_value = initial_accumulator_value
        self._v2 = l2_shrinkage_regularization_strength > 0.0
        self._hyper_values = {
            "learning_rate": learning_rate,
            "l1_regularization_strength": l1_regularization_strength,
            "l2_regularization_strength": l2_regularization_strength,
            "l2_shrinkage_regularization_strength": l2_shrinkage_regularization_strength,
            "learning_rate_power": learning_rate_power,
        }
        self._accum_name = accum_name
        self._linear_name = linear_name
        self._tensors: dict[str, ops.Tensor] = {}

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            dtype = v.dtype.base_dtype
            init = init_ops.constant_initializer(self._initial_accumulator_value, dtype=dtype)
            self._get_or_make_slot_with_initializer(
                v, init, v.get_shape(), dtype, "accum", self._accum_name or self._name
            )
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        for name, value in self._hyper_values.items():
            value = self._call_if_callable(value)
            self._tensors[name] = ops.convert_to_tensor(value, name=name)

    def _hyper(self, dtype) -> list[ops.Tensor]:
        """``lr, l1, l2[, l2_shrinkage], lr_power`` in TF's input order."""
        names = list(self._hyper_values)
        if not self._v2:
            names.remove("l2_shrinkage_regularization_strength")
        return [math_ops.cast(self._tensors[n], dtype.base_dtype) for n in names]

    def _vars(self, var, handles: bool) -> list:
        found = [var, self.get_slot(var, "accum"), self.get_slot(var, "linear")]
        return [v.handle for v in found] if handles else found

    def _apply_dense(self, grad, var):
        kernel = training_ops.apply_ftrl_v2 if self._v2 else training_ops.apply_ftrl
        args = [*self._vars(var, False), grad, *self._hyper(var.dtype)]
        return kernel(*args, use_locking=self._use_locking).op

    def _resource_apply_dense(self, grad, var):
        kernel = (
            training_ops.resource_apply_ftrl_v2 if self._v2 else training_ops.resource_apply_ftrl
        )
        args = [*self._vars(var, True), grad, *self._hyper(grad.dtype)]
        return kernel(*args, use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        kernel = training_ops.sparse_apply_ftrl_v2 if self._v2 else training_ops.sparse_apply_ftrl
        args = [*self._vars(var, False), grad.values, grad.indices, *self._hyper(var.dtype)]
        return kernel(*args, use_locking=self._use_locking).op

    def _resource_apply_sparse(self, grad, var, indices):
        kernel = (
            training_ops.resource_sparse_apply_ftrl_v2
            if self._v2
            else training_ops.resource_sparse_apply_ftrl
        )
        args = [*self._vars(var, True), grad, indices, *self._hyper(grad.dtype)]
        return kernel(*args, use_locking=self._use_locking)
