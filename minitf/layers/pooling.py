"""2-D pooling layers: ``MaxPooling2D``, ``AveragePooling2D`` and their functions.

They have no variables; the layer only translates the Keras spelling of
``pool_size``, ``strides``, ``padding`` and ``data_format`` to
`tf.nn.max_pool` / `tf.nn.avg_pool`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import ops
from minitf.layers.base import Layer
from minitf.layers.convolutional import normalize_padding, normalize_tuple, op_data_format
from minitf.layers.core import canonical_data_format
from minitf.ops.nn import conv_ops


class _Pooling2D(Layer):
    """A pooling layer over ``pool_function`` (`tf.nn.max_pool` or `tf.nn.avg_pool`)."""

    _input_ndim = 4
    _pool_function: Callable

    def __init__(
        self,
        pool_size: int | tuple,
        strides: int | tuple,
        padding: str = "valid",
        data_format: str = "channels_last",
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, **kwargs)
        self.pool_size = normalize_tuple(pool_size, 2, "pool_size")
        self.strides = normalize_tuple(strides, 2, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = canonical_data_format(data_format)

    def call(self, inputs: ops.Tensor) -> ops.Tensor:
        """The pooled inputs.

        Args:
            inputs: A 4-D tensor.
        """
        data_format = op_data_format(self.data_format)
        first = [1, 1] if data_format == "NCHW" else [1]
        last = [] if data_format == "NCHW" else [1]
        return type(self)._pool_function(
            inputs,
            ksize=first + list(self.pool_size) + last,
            strides=first + list(self.strides) + last,
            padding=self.padding,
            data_format=data_format,
        )


class MaxPooling2D(_Pooling2D):
    """The maximum of each ``pool_size`` window, moved by ``strides``.

    Args:
        pool_size: An int or a pair: the window's height and width.
        strides: An int or a pair.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
        name: The layer's name.
        **kwargs: As in `Layer`.
    """

    _pool_function = staticmethod(conv_ops.max_pool)


class AveragePooling2D(_Pooling2D):
    """The mean of each ``pool_size`` window, moved by ``strides``.

    Args:
        pool_size: An int or a pair: the window's height and width.
        strides: An int or a pair.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
        name: The layer's name.
        **kwargs: As in `Layer`.
    """

    _pool_function = staticmethod(conv_ops.avg_pool)


def max_pooling2d(
    inputs: Any,
    pool_size: int | tuple,
    strides: int | tuple,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> ops.Tensor:
    """A `MaxPooling2D` layer applied once to ``inputs``.

    Args:
        inputs: A 4-D tensor.
        pool_size: An int or a pair.
        strides: An int or a pair.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
        name: The layer's name.
    """
    layer = MaxPooling2D(pool_size, strides, padding=padding, data_format=data_format, name=name)
    return layer(inputs)


def average_pooling2d(
    inputs: Any,
    pool_size: int | tuple,
    strides: int | tuple,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> ops.Tensor:
    """An `AveragePooling2D` layer applied once to ``inputs``.

    Args:
        inputs: A 4-D tensor.
        pool_size: An int or a pair.
        strides: An int or a pair.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
        name: The layer's name.
    """
    layer = AveragePooling2D(
        pool_size, strides, padding=padding, data_format=data_format, name=name
    )
    return layer(inputs)


__all__ = [
    "AveragePooling2D",
    "MaxPooling2D",
    "average_pooling2d",
    "max_pooling2d",
]
