"""Batch normalization: ``BatchNormalization`` and ``tf.layers.batch_normalization``.

In training the layer normalizes with the batch's mean and (population)
variance over every axis but ``axis``, and adds two ops to
``GraphKeys.UPDATE_OPS`` that move ``moving_mean`` and ``moving_variance``
towards them: ``moving -= (moving - batch) * (1 - momentum)``. They do not run
by themselves: TF1 code runs them with the train op::

    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss)

Outside training it normalizes with the moving averages. For 4-D inputs
normalized over axis 1 or 3 TF1 uses its fused kernel, whose batch variance
for the moving average is the unbiased one (times ``n / (n - 1)``); minitf
computes the same numbers with the unfused ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.layers import utils
from minitf.layers.base import Layer
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_impl
from minitf.ops.state import init_ops, state_ops


class BatchNormalization(Layer):
    """Normalizes its inputs by batch statistics in training, by moving averages otherwise.

    Variables: ``gamma`` (if ``scale``), ``beta`` (if ``center``), and the
    non-trainable ``moving_mean`` and ``moving_variance``, all of the size of
    the ``axis`` dimension.

    Args:
        axis: The axis (or list of axes) kept: usually the features or channels.
        momentum: The moving averages' decay.
        epsilon: Added to the variance before its square root.
        center: Add ``beta``.
        scale: Multiply by ``gamma``.
        beta_initializer: Default zeros.
        gamma_initializer: Default ones.
        moving_mean_initializer: Default zeros.
        moving_variance_initializer: Default ones.
        beta_regularizer: ``f(beta) -> loss``.
        gamma_regularizer: ``f(gamma) -> loss``.
        beta_constraint: A projection recorded on ``beta``.
        gamma_constraint: A projection recorded on ``gamma``.
        renorm: Batch renormalization; minitf has only False.
        fused: None: like TF1, the fused kernel's statistics for 4-D inputs
            over axis 1 or 3; True requires such inputs; False never.
        trainable: Whether ``gamma`` and ``beta`` are trainable.
        virtual_batch_size: Not supported (must be None).
        adjustment: Not supported (must be None).
        name: The layer's name.
        **kwargs: ``dtype``, ``_reuse``, ``_scope`` as in `Layer`.

    Raises:
        NotImplementedError: for ``renorm``, ``virtual_batch_size`` or ``adjustment``.
    """

    def __init__(
        self,
        axis: int | list = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = init_ops.zeros_initializer(),
        gamma_initializer: Any = init_ops.ones_initializer(),
        moving_mean_initializer: Any = init_ops.zeros_initializer(),
        moving_variance_initializer: Any = init_ops.ones_initializer(),
        beta_regularizer: Callable | None = None,
        gamma_regularizer: Callable | None = None,
        beta_constraint: Callable | None = None,
        gamma_constraint: Callable | None = None,
        renorm: bool = False,
        fused: bool | None = None,
        trainable: bool = True,
        virtual_batch_size: int | None = None,
        adjustment: Callable | None = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        for option, value in (
            ("renorm", renorm),
            ("virtual_batch_size", virtual_batch_size),
            ("adjustment", adjustment),
        ):
            if value:
                raise NotImplementedError(f"minitf's BatchNormalization has no `{option}`.")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.fused = fused
        self._initializers = (
            beta_initializer,
            gamma_initializer,
            moving_mean_initializer,
            moving_variance_initializer,
        )
        self._regularizers = (beta_regularizer, gamma_regularizer)
        self._constraints = (beta_constraint, gamma_constraint)

    def build(self, input_shape: tensor_shape.TensorShape) -> None:
        """Resolves ``axis`` against the rank and creates the four variables.

        Args:
            input_shape: The inputs' shape.

        Raises:
            ValueError: if the rank is unknown, an axis is out of range or
                its dimension is unknown, or ``fused=True`` cannot be used.
        """
        shape = tensor_shape.as_shape(input_shape)
        if shape.ndims is None:
            raise ValueError(f"Input has undefined rank: {shape}")
        self.axis = _resolve_axes(self.axis, shape)
        self.fused = _fused(self.fused, shape.ndims, self.axis)
        param_shape = [shape.as_list()[a] for a in self.axis]
        if None in param_shape:
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: {shape}")
        param_shape = param_shape if len(param_shape) > 1 else param_shape[0:1]
        self._make_variables(param_shape)
        self.built = True

    def _make_variables(self, param_shape: list) -> None:
        beta_init, gamma_init, mean_init, var_init = self._initializers
        dtype = self._param_dtype()
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                "gamma", param_shape, dtype, gamma_init, self._regularizers[1],
                constraint=self._constraints[1],
            )  # fmt: skip
        if self.center:
            self.beta = self.add_weight(
                "beta", param_shape, dtype, beta_init, self._regularizers[0],
                constraint=self._constraints[0],
            )  # fmt: skip
        self.moving_mean = self.add_weight(
            "moving_mean", param_shape, dtype, mean_init, trainable=False
        )
        self.moving_variance = self.add_weight(
            "moving_variance", param_shape, dtype, var_init, trainable=False
        )

    def _param_dtype(self) -> dtypes.DType:
        """float32 for float16 inputs (TF keeps the statistics in float32)."""
        if self._dtype == dtypes.float16:
            return dtypes.float32
        return self._dtype or dtypes.float32

    def call(self, inputs: ops.Tensor, training: Any = False) -> ops.Tensor:
        """Normalizes ``inputs``; in training, also adds the moving-average updates.

        Args:
            inputs: The input tensor.
            training: A Python bool or a scalar boolean tensor.
        """
        ndims = inputs.get_shape().ndims
        reduction_axes = [a for a in range(ndims) if a not in self.axis]
        broadcast = self._broadcaster(inputs.get_shape(), ndims)
        gamma = None if self.gamma is None else broadcast(self.gamma)
        beta = None if self.beta is None else broadcast(self.beta)
        if utils.constant_value(training) is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            mean, variance = self._batch_statistics(inputs, reduction_axes, training)
        outputs = nn_impl.batch_normalization(
            inputs,
            math_ops.cast(broadcast(mean), inputs.dtype),
            math_ops.cast(broadcast(variance), inputs.dtype),
            None if beta is None else math_ops.cast(beta, inputs.dtype),
            None if gamma is None else math_ops.cast(gamma, inputs.dtype),
            self.epsilon,
        )
        outputs.set_shape(inputs.get_shape())
        return outputs

    def _broadcaster(self, input_shape: tensor_shape.TensorShape, ndims: int) -> Callable:
        """Reshapes a per-``axis`` vector so it broadcasts against the inputs."""
        dims = input_shape.as_list()
        target = [dims[a] if a in self.axis else 1 for a in range(ndims)]
        if self.axis == [ndims - 1]:
            return lambda v: v
        return lambda v: array_ops.reshape(v, target)

    def _batch_statistics(self, inputs, reduction_axes, training):
        """The batch's mean and variance (or the moving ones if ``training`` is false at run time).

        Adds the two moving-average updates to ``UPDATE_OPS``.
        """
        param_dtype = self.moving_mean.dtype.base_dtype
        mean, variance = nn_impl.moments(
            math_ops.cast(inputs, param_dtype), reduction_axes, keep_dims=len(self.axis) > 1
        )
        if len(self.axis) > 1:
            mean = array_ops.reshape(mean, self.moving_mean.get_shape())
            variance = array_ops.reshape(variance, self.moving_variance.get_shape())
        moving_variance_target = variance * self._bessel(inputs, reduction_axes, param_dtype)
        momentum = utils.smart_cond(
            training,
            lambda: ops.convert_to_tensor(self.momentum, dtype=param_dtype),
            lambda: ops.convert_to_tensor(1.0, dtype=param_dtype),
        )
        self.add_update(_assign_moving_average(self.moving_mean, mean, momentum))
        self.add_update(
            _assign_moving_average(self.moving_variance, moving_variance_target, momentum)
        )
        mean = utils.smart_cond(training, lambda: mean, lambda: self.moving_mean.value())
        variance = utils.smart_cond(
            training, lambda: variance, lambda: self.moving_variance.value()
        )
        return mean, variance

    def _bessel(self, inputs, reduction_axes, dtype):
        """``n / (n - 1)`` where TF1 would use its fused kernel, else 1."""
        if not self.fused:
            return 1.0
        shape = array_ops.shape(inputs)
        n = math_ops.cast(math_ops.reduce_prod(array_ops.gather(shape, reduction_axes)), dtype)
        return n / math_ops.maximum(n - 1.0, 1.0)


def _assign_moving_average(variable, value, momentum) -> ops.Tensor:
    """``variable -= (variable - value) * (1 - momentum)``, in scope ``AssignMovingAvg``."""
    with ops.name_scope(None, "AssignMovingAvg", [variable, value, momentum]):
        delta = (variable.value() - value) * (1.0 - momentum)
        return state_ops.assign_sub(variable, delta)


def _resolve_axes(axis: int | list, shape: tensor_shape.TensorShape) -> list[int]:
    """``axis`` as a sorted list of non-negative axes, checked against the rank."""
    ndims = shape.ndims
    axes = list(axis) if isinstance(axis, list) else [axis]
    resolved = []
    for a in axes:
        if not isinstance(a, int):
            raise TypeError(f"axis must be int or list, type given: {type(a)}")
        if a < -ndims or a >= ndims:
            raise ValueError(f"Invalid axis: {a}")
        resolved.append(a % ndims)
    if len(set(resolved)) != len(resolved):
        raise ValueError(f"Duplicate axis: {axes}")
    return sorted(resolved)


def _fused(fused: bool | None, ndims: int, axis: list[int]) -> bool:
    """Whether TF1 would use its fused kernel (decides the moving variance's statistics)."""
    usable = ndims == 4 and axis in ([1], [3])
    if fused and ndims != 4:
        raise ValueError(
            "Batch normalization layers with fused=True only support 4D input tensors."
        )
    if fused and not usable:
        raise ValueError(
            "Unsupported axis, fused batch norm only supports axis == [1] or axis == [3]"
        )
    return usable if fused is None else bool(fused)


def batch_normalization(
    inputs: Any,
    axis: int | list = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-3,
    center: bool = True,
    scale: bool = True,
    beta_initializer: Any = init_ops.zeros_initializer(),
    gamma_initializer: Any = init_ops.ones_initializer(),
    moving_mean_initializer: Any = init_ops.zeros_initializer(),
    moving_variance_initializer: Any = init_ops.ones_initializer(),
    beta_regularizer: Callable | None = None,
    gamma_regularizer: Callable | None = None,
    beta_constraint: Callable | None = None,
    gamma_constraint: Callable | None = None,
    training: Any = False,
    trainable: bool = True,
    name: str | None = None,
    reuse: bool | None = None,
    renorm: bool = False,
    renorm_clipping: dict | None = None,
    renorm_momentum: float = 0.99,
    fused: bool | None = None,
    virtual_batch_size: int | None = None,
    adjustment: Callable | None = None,
) -> ops.Tensor:
    """A `BatchNormalization` layer applied once; see that class for the arguments.

    Args:
        inputs: The input tensor.
        axis: The axis (or axes) kept.
        momentum: The moving averages' decay.
        epsilon: Added to the variance.
        center: Add ``beta``.
        scale: Multiply by ``gamma``.
        beta_initializer: Default zeros.
        gamma_initializer: Default ones.
        moving_mean_initializer: Default zeros.
        moving_variance_initializer: Default ones.
        beta_regularizer: ``f(beta) -> loss``.
        gamma_regularizer: ``f(gamma) -> loss``.
        beta_constraint: Recorded on ``beta``.
        gamma_constraint: Recorded on ``gamma``.
        training: A Python bool or a scalar boolean tensor: batch statistics
            and updates in ``UPDATE_OPS`` if true.
        trainable: Whether ``gamma`` and ``beta`` are trainable.
        name: The layer's name.
        reuse: True to use the existing variables of the layer ``name``.
        renorm: Not supported (must be False).
        renorm_clipping: Ignored without ``renorm``.
        renorm_momentum: Ignored without ``renorm``.
        fused: As in `BatchNormalization`.
        virtual_batch_size: Not supported (must be None).
        adjustment: Not supported (must be None).
    """
    del renorm_clipping, renorm_momentum
    layer = BatchNormalization(
        axis=axis,
        momentum=momentum,
        epsilon=epsilon,
        center=center,
        scale=scale,
        beta_initializer=beta_initializer,
        gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer,
        gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint,
        gamma_constraint=gamma_constraint,
        renorm=renorm,
        fused=fused,
        trainable=trainable,
        virtual_batch_size=virtual_batch_size,
        adjustment=adjustment,
        name=name,
        _reuse=reuse,
        _scope=name,
    )
    return layer(inputs, training=training)


__all__ = ["BatchNormalization", "batch_normalization"]
