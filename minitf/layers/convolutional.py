"""2-D convolution: ``Conv2D`` and ``tf.layers.conv2d`` over `tf.nn.conv2d`.

The kernel is ``<scope>/kernel`` of shape ``[kernel_height, kernel_width,
in_channels, filters]`` and the bias ``<scope>/bias`` of shape ``[filters]``;
``padding`` and ``data_format`` are spelled the Keras way (``"valid"``,
``"channels_last"``) and translated to the op's (``"VALID"``, ``"NHWC"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import ops, tensor_shape
from minitf.layers.base import Layer
from minitf.layers.core import canonical_data_format
from minitf.ops.nn import conv_ops, nn_ops
from minitf.ops.state import init_ops


def normalize_tuple(value: int | tuple | list, n: int, name: str) -> tuple:
    """``value`` as a tuple of ``n`` ints (an int is repeated).

    Args:
        value: An int or a sequence of ``n`` ints.
        n: The length wanted.
        name: The argument's name, for the message.

    Raises:
        ValueError: if ``value`` is neither.
    """
    if isinstance(value, int):
        return (value,) * n
    try:
        values = tuple(value)
    except TypeError:
        values = ()
    if len(values) != n or not all(isinstance(v, int) for v in values):
        raise ValueError(
            f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
        )
    return values


def normalize_padding(padding: str) -> str:
    """``"valid"`` or ``"same"`` (any case) as the op's ``"VALID"`` or ``"SAME"``.

    Args:
        padding: The layer's ``padding`` argument.

    Raises:
        ValueError: for any other value.
    """
    value = padding.lower() if isinstance(padding, str) else padding
    if value not in ("valid", "same"):
        raise ValueError(
            'The `padding` argument must be one of "valid", "same". Received: ' + str(padding)
        )
    return value.upper()


def op_data_format(data_format: str) -> str:
    """``"channels_last"`` -> ``"NHWC"``, ``"channels_first"`` -> ``"NCHW"``.

    Args:
        data_format: The layer's ``data_format``.
    """
    return "NHWC" if data_format == "channels_last" else "NCHW"


class Conv2D(Layer):
    """A 2-D convolution layer: ``activation(conv2d(inputs, kernel) + bias)``.

    Args:
        filters: The number of output channels.
        kernel_size: An int or a pair: the window's height and width.
        strides: An int or a pair.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` (``[batch, height, width, channels]``)
            or ``"channels_first"``.
        dilation_rate: An int or a pair.
        activation: A function applied to the output, or None.
        use_bias: Whether to add a bias.
        kernel_initializer: Default: the scope's initializer, else Glorot uniform.
        bias_initializer: Default: zeros.
        kernel_regularizer: ``f(kernel) -> loss``.
        bias_regularizer: ``f(bias) -> loss``.
        activity_regularizer: ``f(outputs) -> loss``.
        kernel_constraint: Recorded on the kernel variable.
        bias_constraint: Recorded on the bias variable.
        trainable: Whether the variables are trainable.
        name: The layer's name.
        **kwargs: ``dtype``, ``_reuse``, ``_scope`` as in `Layer`.
    """

    _input_ndim = 4

    def __init__(
        self,
        filters: int,
        kernel_size: int | tuple,
        strides: int | tuple = (1, 1),
        padding: str = "valid",
        data_format: str = "channels_last",
        dilation_rate: int | tuple = (1, 1),
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
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = normalize_tuple(strides, 2, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = canonical_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, 2, "dilation_rate")
        self.activation = activation
        self.use_bias = use_bias
        self._initializers = (kernel_initializer, bias_initializer)
        self._regularizers = (kernel_regularizer, bias_regularizer)
        self._constraints = (kernel_constraint, bias_constraint)
        self.kernel = self.bias = None

    def build(self, input_shape: tensor_shape.TensorShape) -> None:
        """Creates ``kernel`` and ``bias`` once the input channels are known.

        Args:
            input_shape: The inputs' shape.

        Raises:
            ValueError: if the channel dimension is not known.
        """
        shape = tensor_shape.as_shape(input_shape)
        axis = 1 if self.data_format == "channels_first" else -1
        channels = tensor_shape.dimension_value(shape[axis])
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.kernel = self.add_weight(
            "kernel",
            shape=list(self.kernel_size) + [channels, self.filters],
            initializer=self._initializers[0],
            regularizer=self._regularizers[0],
            constraint=self._constraints[0],
        )
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                shape=[self.filters],
                initializer=self._initializers[1],
                regularizer=self._regularizers[1],
                constraint=self._constraints[1],
            )
        self.built = True

    def call(self, inputs: ops.Tensor) -> ops.Tensor:
        """``activation(conv2d(inputs, kernel) + bias)``.

        Args:
            inputs: A 4-D tensor.
        """
        data_format = op_data_format(self.data_format)
        outputs = conv_ops.conv2d(
            inputs,
            self.kernel,
            strides=_four(self.strides, data_format),
            padding=self.padding,
            data_format=data_format,
            dilations=_four(self.dilation_rate, data_format),
        )
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias, data_format=data_format)
        return outputs if self.activation is None else self.activation(outputs)


def _four(pair: tuple, data_format: str) -> list[int]:
    """A (height, width) pair as the op's 4 values, 1 for batch and channels."""
    if data_format == "NCHW":
        return [1, 1, pair[0], pair[1]]
    return [1, pair[0], pair[1], 1]


def conv2d(
    inputs: Any,
    filters: int,
    kernel_size: int | tuple,
    strides: int | tuple = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: int | tuple = (1, 1),
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
    """A `Conv2D` layer applied once to ``inputs``; see that class for the arguments.

    Args:
        inputs: A 4-D tensor.
        filters: The number of output channels.
        kernel_size: An int or a pair.
        strides: An int or a pair.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
        dilation_rate: An int or a pair.
        activation: A function applied to the output, or None.
        use_bias: Whether to add a bias.
        kernel_initializer: Default: Glorot uniform.
        bias_initializer: Default: zeros.
        kernel_regularizer: ``f(kernel) -> loss``.
        bias_regularizer: ``f(bias) -> loss``.
        activity_regularizer: ``f(outputs) -> loss``.
        kernel_constraint: Recorded on the kernel.
        bias_constraint: Recorded on the bias.
        trainable: Whether the variables are trainable.
        name: The layer's name.
        reuse: True to use the existing variables of the layer ``name``.
    """
    layer = Conv2D(
        filters,
        kernel_size,
        strides=strides,
        padding=padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
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
        _reuse=reuse,
        _scope=name,
    )
    return layer(inputs)


__all__ = ["Conv2D", "conv2d"]
