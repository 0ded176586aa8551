"""``tf.train.AdagradOptimizer``: per-coordinate learning rates from summed squared gradients.

Per step, TF1's ``ApplyAdagrad``: ``accum += grad * grad`` then
``var -= learning_rate * grad / sqrt(accum)``. The accumulator is the slot
``"accumulator"`` (variable ``<var>/Adagrad``), initialized to
``initial_accumulator_value``.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["AdagradOptimizer"]


class AdagradOptimizer(optimizer.Optimizer):
    """The Adagrad optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        initial_accumulator_value: The accumulators' starting value; must be positive.
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops and the slot suffix.

    Raises:
        ValueError: if ``initial_accumulator_value`` is not positive.
    """

    def __init__(
        self,
        learning_rate,
        initial_accumulator_value: float = 0.1,
        use_locking: bool = False,
        name: str = "Adagrad",
    ):
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._learning_rate_tensor = None

    def _create_slots(self, var_list) -> None:
        from minitf.ops.state import init_ops

        for v in var_list:
            dtype = v.dtype.base_dtype
            if v.get_shape().is_fully_defined():
                init = init_ops.constant_initializer(self._initial_accumulator_value, dtype=dtype)
            else:
                init = self._init_constant_op(v, dtype)
            self._get_or_make_slot_with_initializer(
                v, init, v.get_shape(), dtype, "accumulator", self._name
            )

    def _init_constant_op(self, v, dtype):
        def init(*args, **kwargs):
            del args, kwargs
            value = array_ops.fill(array_ops.shape(v), self._initial_accumulator_value)
            return math_ops.cast(value, dtype)

        return init

    def _prepare(self) -> None:
        learning_rate = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = ops.convert_to_tensor(learning_rate, name="learning_rate")

    def _lr(self, dtype) -> ops.Tensor:
        return math_ops.cast(self._learning_rate_tensor, dtype.base_dtype)

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad(
            var,
            self.get_slot(var, "accumulator"),
            self._lr(var.dtype),
            grad,
            use_locking=self._use_locking,
        )

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adagrad(
            var.handle,
            self.get_slot(var, "accumulator").handle,
            self._lr(grad.dtype),
            grad,
            use_locking=self._use_locking,
        )

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adagrad(
            var,
            self.get_slot(var, "accumulator"),
            self._lr(var.dtype),
            grad.values,
            grad.indices,
            use_locking=self._use_locking,
        )

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_adagrad(
            var.handle,
            self.get_slot(var, "accumulator").handle,
            self._lr(grad.dtype),
            grad,
            indices,
            use_locking=self._use_locking,
        )
