"""``tf.train.AdamOptimizer``: Kingma and Ba's Adam, as TF1 implements it.

Per step, with ``t`` the step number (from 1)::

    lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad^2
    var -= lr_t * m / (sqrt(v) + epsilon)

``m`` and ``v`` are the slots ``"m"`` and ``"v"`` of each variable (variables
``<var>/Adam`` and ``<var>/Adam_1``). ``beta1^t`` and ``beta2^t`` are two
variables shared by all the updates, ``beta1_power`` and ``beta2_power``,
multiplied by ``beta1``/``beta2`` in `_finish` after every step. TF places
them with the variable whose name sorts first, so every worker of a cluster
agrees on their parameter server.

Sparse gradients decay all of ``m`` and ``v`` and scatter-add the new terms
(TF1's ``_apply_sparse_shared``), which equals the dense update.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.math import math_ops
from minitf.ops.state import state_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["AdamOptimizer"]


class AdamOptimizer(optimizer.Optimizer):
    """The Adam optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        beta1: Decay rate of the first-moment estimates.
        beta2: Decay rate of the second-moment estimates.
        epsilon: Added to ``sqrt(v)`` (TF's "epsilon hat").
        use_locking: If True, the updates hold the variables' locks.
        name: The name scope of the update ops and the slot suffix.
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-08,
        use_locking: bool = False,
        name: str = "Adam",
    ):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._lr_t = None
        self._beta1_t = None
        self._beta2_t = None
        self._epsilon_t = None

    def _get_beta_accumulators(self):
        with optimizer._init_scope():
            graph = ops.get_default_graph()
            return (
                self._get_non_slot_variable("beta1_power", graph=graph),
                self._get_non_slot_variable("beta2_power", graph=graph),
            )

    def _create_slots(self, var_list) -> None:
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = ops.convert_to_tensor(self._call_if_callable(self._lr), name="learning_rate")
        self._beta1_t = ops.convert_to_tensor(self._call_if_callable(self._beta1), name="beta1")
        self._beta2_t = ops.convert_to_tensor(self._call_if_callable(self._beta2), name="beta2")
        self._epsilon_t = ops.convert_to_tensor(
            self._call_if_callable(self._epsilon), name="epsilon"
        )

    def _hyper(self, dtype) -> list[ops.Tensor]:
        """beta1_power, beta2_power, lr, beta1, beta2, epsilon, cast to ``dtype``."""
        beta1_power, beta2_power = self._get_beta_accumulators()
        values = (beta1_power, beta2_power, self._lr_t, self._beta1_t, self._beta2_t,
                  self._epsilon_t)  # fmt: skip
        return [math_ops.cast(x, dtype.base_dtype) for x in values]

    def _apply_dense(self, grad, var):
        return training_ops.apply_adam(
            var,
            self.get_slot(var, "m"),
            self.get_slot(var, "v"),
            *self._hyper(var.dtype),
            grad,
            use_locking=self._use_locking,
        ).op

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adam(
            var.handle,
            self.get_slot(var, "m").handle,
            self.get_slot(var, "v").handle,
            *self._hyper(grad.dtype),
            grad,
            use_locking=self._use_locking,
        )

    def _apply_sparse_shared(self, grad, var, indices, scatter_add):
        beta1_power, beta2_power, lr_t, beta1_t, beta2_t, epsilon_t = self._hyper(var.dtype)
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        # m_t = beta1 * m + (1 - beta1) * g_t
        m = self.get_slot(var, "m")
        m_scaled_g_values = grad * (1 - beta1_t)
        m_t = state_ops.assign(m, m * beta1_t, use_locking=self._use_locking)
        with ops.control_dependencies([m_t]):
            m_t = scatter_add(m, indices, m_scaled_g_values)
        # v_t = beta2 * v + (1 - beta2) * (g_t * g_t)
        v = self.get_slot(var, "v")
        v_scaled_g_values = (grad * grad) * (1 - beta2_t)
        v_t = state_ops.assign(v, v * beta2_t, use_locking=self._use_locking)
        with ops.control_dependencies([v_t]):
            v_t = scatter_add(v, indices, v_scaled_g_values)
        v_sqrt = math_ops.sqrt(v_t)
        var_update = state_ops.assign_sub(
            var, lr * m_t / (v_sqrt + epsilon_t), use_locking=self._use_locking
        )
        return control_flow_ops.group(*[var_update, m_t, v_t])

    def _apply_sparse(self, grad, var):
        def scatter_add(x, i, v):
            return state_ops.scatter_add(x, i, v, use_locking=self._use_locking)

        return self._apply_sparse_shared(grad.values, var, grad.indices, scatter_add)

    @staticmethod
    def _resource_scatter_add(x, i, v):
        with ops.control_dependencies([training_ops.resource_scatter_add(x.handle, i, v)]):
            # A new read, ordered after the scatter (the cached snapshot is not).
            return x.read_value()

    def _resource_apply_sparse(self, grad, var, indices):
        return self._apply_sparse_shared(grad, var, indices, self._resource_scatter_add)

    def _finish(self, update_ops, name_scope):
        with ops.control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators()
            with ops.colocate_with(beta1_power):
                update_beta1 = beta1_power.assign(
                    beta1_power * self._beta1_t, use_locking=self._use_locking
                )
                update_beta2 = beta2_power.assign(
                    beta2_power * self._beta2_t, use_locking=self._use_locking
                )
        return control_flow_ops.group(*update_ops + [update_beta1, update_beta2], name=name_scope)
