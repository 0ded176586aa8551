"""The core layers: ``Dense``, ``Flatten``, ``Dropout`` and their functions ``tf.layers.dense``, ...

Each class is a `minitf.layers.base.Layer`; each function makes a layer and
calls it once, the way TF1 code most often uses them::

    hidden = tf.layers.dense(x, 64, activation=tf.nn.relu)  # dense/kernel, dense/bias
    logits = tf.layers.dense(hidden, 10)                     # dense_1/kernel, ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import ops, tensor_shape
from minitf.layers import utils
from minitf.layers.base import Layer
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_ops
from minitf.ops.state import init_ops


class Dense(Layer):
    """A densely connected layer: ``activation(inputs @ kernel + bias)``.

    Inputs of rank above 2 are multiplied along their last axis (every other
    axis is kept). The variables are ``<scope>/kernel`` of shape
    ``[input depth, units]`` and ``<scope>/bias`` of shape ``[units]``.

    Args:
        units: The output depth.
        activation: A function applied to the output, or None (linear).
        use_bias: Whether to add a bias.
        kernel_initializer: Default: the scope's initializer, else Glorot uniform.
        bias_initializer: Default: zeros.
        kernel_regularizer: ``f(kernel) -> loss`` for ``REGULARIZATION_LOSSES``.
        bias_regularizer: ``f(bias) -> loss``.
        activity_regularizer: ``f(outputs) -> loss``.
        kernel_constraint: A projection recorded on the kernel variable.
        bias_constraint: A projection recorded on the bias variable.
        trainable: Whether the variables are trainable.
        name: The layer's name (and variable scope).
        **kwargs: ``dtype``, ``_reuse``, ``_scope`` as in `Layer`.
    """

    _input_min_ndim = 2

    def __init__(
        self,
        units: int,
        activation: Callable | None = None,
        use_bias: bool = True,
        kernel_initializer: Any = None,
        bias_initializer: Any = init_ops.zeros_initializer(),
        kernel_regularizer: Callable | None = None,
        bias_regularizer: Callable | None = None,
        activity_regularizer: Callable | None = None,
        kernel_constraint: Callable | None = None,
        bias_constraint: Callable | None = None,
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(
            trainable=trainable, name=name, activity_regularizer=activity_regularizer, **kwargs
        )
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.kernel = None
        self.bias = None

    def build(self, input_shape: tensor_shape.TensorShape) -> None:
        """Creates ``kernel`` (and ``bias``) once the input depth is known.

        Args:
            input_shape: The inputs' shape.

        Raises:
            ValueError: if the last dimension of the inputs is not known.
        """
        depth = tensor_shape.dimension_value(tensor_shape.as_shape(input_shape)[-1])
        if depth is None:
            raise ValueError(
                "The last dimension of the inputs to `Dense` should be defined. Found `None`."
            )
        self.kernel = self.add_weight(
            "kernel",
            shape=[depth, self.units],
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                shape=[self.units],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def call(self, inputs: ops.Tensor) -> ops.Tensor:
        """``activation(inputs @ kernel + bias)``, along the last axis of ``inputs``.

        Args:
            inputs: A tensor of rank 2 or more.
        """
        if inputs.dtype.base_dtype != self.kernel.dtype.base_dtype:
            inputs = math_ops.cast(inputs, self.kernel.dtype.base_dtype)
        if inputs.get_shape().ndims > 2:
            outputs = self._matmul_last_axis(inputs)
        else:
            outputs = math_ops.matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        return outputs if self.activation is None else self.activation(outputs)

    def _matmul_last_axis(self, inputs: ops.Tensor) -> ops.Tensor:
        """TF's ``tensordot(inputs, kernel, [[rank - 1], [0]])``: flatten, multiply, reshape."""
        depth = tensor_shape.dimension_value(inputs.get_shape()[-1])
        flat = array_ops.reshape(inputs, [-1, depth])
        outer = array_ops.shape(inputs)[:-1]
        outputs = array_ops.reshape(
            math_ops.matmul(flat, self.kernel), array_ops.concat([outer, [self.units]], 0)
        )
        outputs.set_shape(inputs.get_shape()[:-1].concatenate([self.units]))
        return outputs


def dense(
    inputs: Any,
    units: int,
    activation: Callable | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = init_ops.zeros_initializer(),
    kernel_regularizer: Callable | None = None,
    bias_regularizer: Callable | None = None,
    activity_regularizer: Callable | None = None,
    kernel_constraint: Callable | None = None,
    bias_constraint: Callable | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: bool | None = None,
) -> ops.Tensor:
    """A `Dense` layer applied once to ``inputs``: ``activation(inputs @ kernel + bias)``.

    Args:
        inputs: A tensor of rank 2 or more.
        units: The output depth.
        activation: A function applied to the output, or None (linear).
        use_bias: Whether to add a bias.
        kernel_initializer: Default: the scope's initializer, else Glorot uniform.
        bias_initializer: Default: zeros.
        kernel_regularizer: ``f(kernel) -> loss`` for ``REGULARIZATION_LOSSES``.
        bias_regularizer: ``f(bias) -> loss``.
        activity_regularizer: ``f(outputs) -> loss``.
        kernel_constraint: A projection recorded on the kernel variable.
        bias_constraint: A projection recorded on the bias variable.
        trainable: Whether the variables are trainable.
        name: The layer's name (and variable scope).
        reuse: True to use the existing variables of the layer ``name``.

    Returns:
        The output tensor: ``inputs``' shape with the last dimension ``units``.
    """
    layer = Dense(
        units,
        activation=activation,
        use_bias=use_bias,
        kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer,
        kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint,
        bias_constraint=bias_constraint,
        trainable=trainable,
        name=name,
        dtype=inputs.dtype.base_dtype if isinstance(inputs, ops.Tensor) else None,
        _scope=name,
        _reuse=reuse,
    )
    return layer(inputs)


class Flatten(Layer):
    """Flattens every axis but the first: ``[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]``.

    Args:
        data_format: ``"channels_last"`` (default) or ``"channels_first"``
            (the channel axis is moved last first, so the order of the
            elements matches a ``channels_last`` model).
        **kwargs: ``name``, ``trainable``, ``dtype`` as in `Layer`.
    """

    _input_min_ndim = 1

    def __init__(self, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = canonical_data_format(data_format)

    def call(self, inputs: ops.Tensor) -> ops.Tensor:
        """``inputs`` reshaped to ``[batch, -1]``.

        Args:
            inputs: A tensor of rank 1 or more (rank 1 gives ``[batch, 1]``).
        """
        ndims = inputs.get_shape().ndims
        if self.data_format == "channels_first" and ndims is not None and ndims > 2:
            inputs = array_ops.transpose(inputs, [0] + list(range(2, ndims)) + [1])
        batch = tensor_shape.dimension_value(inputs.get_shape()[0])
        outputs = array_ops.reshape(
            inputs, [batch if batch is not None else array_ops.shape(inputs)[0], -1]
        )
        outputs.set_shape(_flat_shape(inputs.get_shape()))
        return outputs


def _flat_shape(shape: tensor_shape.TensorShape) -> tensor_shape.TensorShape:
    dims = shape.as_list()
    rest = dims[1:]
    depth = None if None in rest else int(np.prod(rest))
    return tensor_shape.TensorShape([dims[0], depth])


def canonical_data_format(data_format: str | None) -> str:
    """``"channels_last"`` (the default) or ``"channels_first"``, checked.

    Args:
        data_format: The layer's argument, any case, or None.

    Raises:
        ValueError: for any other value.
    """
    value = (data_format or "channels_last").lower()
    if value not in ("channels_first", "channels_last"):
        raise ValueError(
            'The `data_format` argument must be one of "channels_first", "channels_last". '
            f"Received: {data_format}"
        )
    return value


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> ops.Tensor:
    """A `Flatten` layer applied once: ``[batch, d1, ...] -> [batch, d1 * ...]``.

    Args:
        inputs: A tensor of rank 1 or more.
        name: The layer's name.
        data_format: ``"channels_last"`` or ``"channels_first"``.
    """
    return Flatten(name=name, data_format=data_format)(inputs)


class Dropout(Layer):
    """Drops each element with probability ``rate`` and scales the rest by ``1 / (1 - rate)``.

    Only when called with ``training`` true (a bool or a boolean tensor);
    otherwise the output is the input.

    Args:
        rate: The probability of dropping an element (not of keeping it).
        noise_shape: The shape of the keep/drop mask (see `tf.nn.dropout`).
        seed: The op-level seed of the mask.
        name: The layer's name.
        **kwargs: ``trainable``, ``dtype`` as in `Layer`.
    """

    def __init__(
        self,
        rate: float = 0.5,
        noise_shape: Any = None,
        seed: int | None = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs: ops.Tensor, training: Any = False) -> ops.Tensor:
        """``inputs`` with dropout if ``training``, else ``inputs`` unchanged.

        Args:
            inputs: A floating-point tensor.
            training: A Python bool or a scalar boolean tensor.
        """
        return utils.smart_cond(
            training,
            lambda: nn_ops.dropout(
                inputs, noise_shape=self.noise_shape, seed=self.seed, rate=self.rate
            ),
            lambda: array_ops.identity(inputs),
        )


def dropout(
    inputs: Any,
    rate: float = 0.5,
    noise_shape: Any = None,
    seed: int | None = None,
    training: Any = False,
    name: str | None = None,
) -> ops.Tensor:
    """A `Dropout` layer applied once; only active when ``training`` is true.

    Args:
        inputs: A floating-point tensor.
        rate: The probability of dropping an element.
        noise_shape: The shape of the keep/drop mask.
        seed: The op-level seed of the mask.
        training: A Python bool or a scalar boolean tensor.
        name: The layer's name.
    """
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)(inputs, training=training)


__all__ = ["Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]
