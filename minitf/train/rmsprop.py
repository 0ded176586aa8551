"""``tf.train.RMSPropOptimizer``: steps scaled by a moving average of squared gradients.

Per step, TF1's ``ApplyRMSProp``::

    ms  = rho * ms + (1 - rho) * grad^2
    mom = momentum * mom + learning_rate * grad / sqrt(ms + epsilon)
    var -= mom

``centered=True`` uses ``ApplyCenteredRMSProp``, which also keeps the moving
average of the gradients ``mg`` and divides by ``sqrt(ms - mg^2 + epsilon)``,
an estimate of the gradient's variance. The slots are ``"rms"`` (``ms``,
initialised to ones, variable ``<var>/RMSProp``), ``"momentum"``
(``<var>/RMSProp_1``) and, centered, ``"mg"`` (then ``<var>/RMSProp_1``, and
momentum ``<var>/RMSProp_2``). ``decay`` is the kernels' ``rho``.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import ops
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.training import training_ops
from minitf.train import optimizer

__all__ = ["RMSPropOptimizer"]


class RMSPropOptimizer(optimizer.Optimizer):
    """The RMSProp optimizer.

    Args:
        learning_rate: A float, a scalar float tensor, or a callable returning one.
        decay: The discount of the moving averages (``rho``).
        momentum: The momentum of the steps.
        epsilon: Added to the denominator's average to keep it away from zero.
        use_locking: If True, the updates hold the variables' locks.
        centered: Normalise by the gradient's estimated variance.
        name: The name scope of the update ops and the slot suffix.
    """

    def __init__(
        self,
        learning_rate: Any,
        decay: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: Any = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        name: str = "RMSProp",
    ):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered
        self._tensors: dict[str, ops.Tensor] = {}

    def _create_slots(self, var_list) -> None:
        from minitf.ops.state import init_ops

        for v in var_list:
            dtype = v.dtype.base_dtype
            if v.get_shape().is_fully_defined():
                init = init_ops.ones_initializer(dtype=dtype)
            else:
                init = self._ones_like(v)
            self._get_or_make_slot_with_initializer(
                v, init, v.get_shape(), dtype, "rms", self._name
            )
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    @staticmethod
    def _ones_like(v):
        def init(*args, **kwargs):
            del args, kwargs
            return array_ops.ones_like(v)

        return init

    def _prepare(self) -> None:
        hyper = {
            "learning_rate": self._learning_rate,
            "decay": self._decay,
            "momentum": self._momentum,
            "epsilon": self._epsilon,
        }
        for name, value in hyper.items():
            value = self._call_if_callable(value)
            self._tensors[name] = ops.convert_to_tensor(value, name=name)

    def _hyper(self, dtype) -> list[ops.Tensor]:
        names = ("learning_rate", "decay", "momentum", "epsilon")
        return [math_ops.cast(self._tensors[n], dtype.base_dtype) for n in names]

    def _slot_args(self, var, handles: bool) -> list:
        names = ("mg", "rms", "momentum") if self._centered else ("rms", "momentum")
        slots = [self.get_slot(var, n) for n in names]
        return [s.handle for s in slots] if handles else slots

    def _apply(self, kernels, var, grad, dtype, *indices, handles: bool = False):
        """Calls the plain or the centered kernel of ``kernels`` with TF's input order."""
        kernel = kernels[1] if self._centered else kernels[0]
        target = var.handle if handles else var
        args = [target, *self._slot_args(var, handles), *self._hyper(dtype), grad, *indices]
        return kernel(*args, use_locking=self._use_locking)

    def _apply_dense(self, grad, var):
        kernels = (training_ops.apply_rms_prop, training_ops.apply_centered_rms_prop)
        return self._apply(kernels, var, grad, var.dtype).op

    def _resource_apply_dense(self, grad, var):
        kernels = (
            training_ops.resource_apply_rms_prop,
            training_ops.resource_apply_centered_rms_prop,
        )
        return self._apply(kernels, var, grad, grad.dtype, handles=True)

    def _apply_sparse(self, grad, var):
        kernels = (training_ops.sparse_apply_rms_prop, training_ops.sparse_apply_centered_rms_prop)
        return self._apply(kernels, var, grad.values, var.dtype, grad.indices).op

    def _resource_apply_sparse(self, grad, var, indices):
        kernels = (
            training_ops.resource_sparse_apply_rms_prop,
            training_ops.resource_sparse_apply_centered_rms_prop,
        )
        return self._apply(kernels, var, grad, grad.dtype, indices, handles=True)
