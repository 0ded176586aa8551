"""``tf.contrib.layers``' layer functions: the contrib spellings of the core layers.

``fully_connected`` is a `minitf.layers.Dense` in the variable scope
``fully_connected`` (``scope=`` if given), ``conv2d`` a
`minitf.layers.Conv2D` in the variable scope ``Conv``; their variables are
renamed the contrib way, ``weights`` and ``biases``, and are model
variables; their activation defaults to ReLU. ``max_pool2d``,
``avg_pool2d`` and ``dropout`` wrap the pooling and dropout layers with
contrib's defaults (a 2-stride VALID pool, ``keep_prob=0.5``). Each adds its
output to ``outputs_collections`` under an alias, its scope's name
(``output.aliases``), as TF's ``collect_named_outputs`` does.
Every layer function is decorated with ``add_arg_scope``, so an
``arg_scope`` can set its keyword arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.contrib.framework.arg_scope import add_arg_scope
from minitf.contrib.layers.initializers import xavier_initializer
from minitf.framework import ops
from minitf.framework.graph_keys import GraphKeys
from minitf.layers import convolutional, core, pooling
from minitf.ops.nn import nn_ops
from minitf.ops.state import init_ops
from minitf.ops.state import variable_scope as vs

_RENAME = {"kernel": "weights", "bias": "biases"}


def _contrib_variable_getter(getter, name, *args, **kwargs):
    """Renames ``kernel``/``bias`` to ``weights``/``biases`` and makes them model variables."""
    head, _, short = name.rpartition("/")
    short = _RENAME.get(short, short)
    collections = kwargs.pop("collections", None) or [GraphKeys.GLOBAL_VARIABLES]
    if GraphKeys.MODEL_VARIABLES not in collections:
        collections = list(collections) + [GraphKeys.MODEL_VARIABLES]
    return getter(f"{head}/{short}" if head else short, *args, collections=collections, **kwargs)


def _add_to_collections(variable, collections: Any, key: str) -> None:
    """Adds ``variable`` to ``collections`` (a list, or a dict with the list under ``key``)."""
    if isinstance(collections, dict):
        collections = collections.get(key)
    for name in collections or []:
        ops.add_to_collection(name, variable)


def collect_named_outputs(collections: Any, alias: str, outputs: ops.Tensor) -> ops.Tensor:
    """Adds ``outputs`` to ``collections`` with ``alias`` appended to ``outputs.aliases``.

    Args:
        collections: A collection key, a list of them, or None (nothing is done).
        alias: The name to record (a trailing ``/`` is dropped).
        outputs: The tensor.

    Returns:
        ``outputs``.
    """
    if collections:
        alias = alias[:-1] if alias.endswith("/") else alias
        outputs.aliases = [*getattr(outputs, "aliases", []), alias]
        ops.add_to_collections(collections, outputs)
    return outputs


def _weights_arguments(
    normalizer_fn, weights_initializer, weights_regularizer, biases_initializer, biases_regularizer
) -> dict:
    """The core layer's arguments for contrib's: no bias with a normalizer or no initializer."""
    return {
        "use_bias": not normalizer_fn and biases_initializer is not None,
        "kernel_initializer": weights_initializer,
        "bias_initializer": biases_initializer,
        "kernel_regularizer": weights_regularizer,
        "bias_regularizer": biases_regularizer,
    }


def _apply(layer, inputs, variables_collections, normalizer_fn, normalizer_params) -> ops.Tensor:
    """Calls ``layer``, files its variables, and normalizes its output if asked."""
    outputs = layer(inputs)
    _add_to_collections(layer.kernel, variables_collections, "weights")
    if layer.bias is not None:
        _add_to_collections(layer.bias, variables_collections, "biases")
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    return outputs


@add_arg_scope
def fully_connected(
    inputs: Any,
    num_outputs: int,
    activation_fn: Callable | None = nn_ops.relu,
    normalizer_fn: Callable | None = None,
    normalizer_params: dict | None = None,
    weights_initializer: Any = xavier_initializer(),
    weights_regularizer: Callable | None = None,
    biases_initializer: Any = init_ops.zeros_initializer(),
    biases_regularizer: Callable | None = None,
    reuse: bool | None = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: str | None = None,
) -> ops.Tensor:
    """``activation_fn(inputs @ weights + biases)`` with variables ``fully_connected/weights``, ...

    Args:
        inputs: A tensor of rank 2 or more with a known last dimension.
        num_outputs: The output depth.
        activation_fn: Default ReLU; None for linear.
        normalizer_fn: A function applied before the activation instead of
            the biases (e.g. batch normalization).
        normalizer_params: Keyword arguments of ``normalizer_fn``.
        weights_initializer: Default: Xavier uniform.
        weights_regularizer: ``f(weights) -> loss``.
        biases_initializer: Default zeros; None for no biases.
        biases_regularizer: ``f(biases) -> loss``.
        reuse: True to use the existing variables of ``scope``.
        variables_collections: Extra collections of the variables (a list,
            or a dict with ``"weights"`` and ``"biases"`` lists).
        outputs_collections: Collections to add the output to.
        trainable: Whether the variables are trainable.
        scope: The variable scope (default ``fully_connected``, made unique).

    Raises:
        ValueError: if ``num_outputs`` is not an int.
    """
    if not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of {int}, got {type(num_outputs)}.")
    with vs.variable_scope(
        scope,
        "fully_connected",
        [inputs],
        reuse=reuse,
        custom_getter=_contrib_variable_getter,
    ) as sc:
        inputs = ops.convert_to_tensor(inputs)
        layer = core.Dense(
            units=num_outputs,
            **_weights_arguments(
                normalizer_fn,
                weights_initializer,
                weights_regularizer,
                biases_initializer,
                biases_regularizer,
            ),
            trainable=trainable,
            name=sc.name,
            dtype=inputs.dtype.base_dtype,
            _scope=sc,
            _reuse=reuse,
        )
        outputs = _apply(layer, inputs, variables_collections, normalizer_fn, normalizer_params)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> ops.Tensor:
    """``[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]`` in name scope ``Flatten``.

    Args:
        inputs: A tensor of rank 2 or more.
        outputs_collections: Collections to add the output to.
        scope: The name scope.

    Raises:
        ValueError: if ``inputs`` has rank below 2 (or unknown).
    """
    with ops.name_scope(scope, "Flatten", [inputs]) as sc:
        inputs = ops.convert_to_tensor(inputs)
        ndims = inputs.get_shape().ndims
        if ndims is None or ndims < 2:
            raise ValueError(
                f"Inputs must have a least 2 dimensions. Got shape {inputs.get_shape()}"
            )
        outputs = core.flatten(inputs)
    return collect_named_outputs(outputs_collections, sc, outputs)


_CONV_DATA_FORMATS = (None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW")


def _keras_data_format(data_format: str | None) -> str:
    """``"NC..."`` -> ``"channels_first"``; ``None`` and ``"N...C"`` -> ``"channels_last"``."""
    return "channels_first" if data_format and data_format.startswith("NC") else "channels_last"


@add_arg_scope
def convolution2d(
    inputs: Any,
    num_outputs: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: str = "SAME",
    data_format: str | None = None,
    rate: Any = 1,
    activation_fn: Callable | None = nn_ops.relu,
    normalizer_fn: Callable | None = None,
    normalizer_params: dict | None = None,
    weights_initializer: Any = xavier_initializer(),
    weights_regularizer: Callable | None = None,
    biases_initializer: Any = init_ops.zeros_initializer(),
    biases_regularizer: Callable | None = None,
    reuse: bool | None = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: str | None = None,
) -> ops.Tensor:
    """``activation_fn(conv2d(inputs, weights) + biases)`` with variables ``Conv/weights``, ...

    Args:
        inputs: A 4-D tensor ``[batch, height, width, channels]`` (or
            ``[batch, channels, height, width]`` with ``data_format="NCHW"``).
        num_outputs: The number of output channels.
        kernel_size: An int or a pair: the filter's height and width.
        stride: An int or a pair.
        padding: ``"SAME"`` (default) or ``"VALID"``.
        data_format: None or ``"NHWC"`` (channels last), or ``"NCHW"``.
        rate: An int or a pair: the dilation rate (atrous convolution).
        activation_fn: Default ReLU; None for linear.
        normalizer_fn: A function applied before the activation instead of
            the biases (e.g. batch normalization).
        normalizer_params: Keyword arguments of ``normalizer_fn``.
        weights_initializer: Default: Xavier uniform.
        weights_regularizer: ``f(weights) -> loss``.
        biases_initializer: Default zeros; None for no biases.
        biases_regularizer: ``f(biases) -> loss``.
        reuse: True to use the existing variables of ``scope``.
        variables_collections: Extra collections of the variables (a list,
            or a dict with ``"weights"`` and ``"biases"`` lists).
        outputs_collections: Collections to add the output to.
        trainable: Whether the variables are trainable.
        scope: The variable scope (default ``Conv``, made unique).

    Returns:
        The layer's output.

    Raises:
        ValueError: for an unknown ``data_format`` or an input not of rank 4.
    """
    if data_format not in _CONV_DATA_FORMATS:
        raise ValueError(f"Invalid data_format: {data_format!r}")
    with vs.variable_scope(
        scope, "Conv", [inputs], reuse=reuse, custom_getter=_contrib_variable_getter
    ) as sc:
        inputs = ops.convert_to_tensor(inputs)
        rank = inputs.get_shape().ndims
        if rank != 4:
            raise ValueError(f"Convolution expects input with rank 4, got {rank}")
        layer = convolutional.Conv2D(
            filters=num_outputs,
            kernel_size=_pair(kernel_size),
            strides=_pair(stride),
            padding=padding,
            data_format=_keras_data_format(data_format),
            dilation_rate=_pair(rate),
            **_weights_arguments(
                normalizer_fn,
                weights_initializer,
                weights_regularizer,
                biases_initializer,
                biases_regularizer,
            ),
            trainable=trainable,
            name=sc.name,
            dtype=inputs.dtype.base_dtype,
            _scope=sc,
            _reuse=reuse,
        )
        outputs = _apply(layer, inputs, variables_collections, normalizer_fn, normalizer_params)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


conv2d = convolution2d


def _pair(value: Any) -> Any:
    """An int, or a sequence of ints (a `TensorShape`'s dimensions too) as a tuple."""
    if isinstance(value, int):
        return value
    return tuple(int(v) for v in value)


def _pool2d(
    layer_class,
    default_name,
    inputs,
    kernel_size,
    stride,
    padding,
    data_format,
    outputs_collections,
    scope,
):
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("data_format has to be either NCHW or NHWC.")
    with ops.name_scope(scope, default_name, [inputs]) as sc:
        inputs = ops.convert_to_tensor(inputs)
        layer = layer_class(
            pool_size=_pair(kernel_size),
            strides=_pair(stride),
            padding=padding,
            data_format=_keras_data_format(data_format),
            _scope=sc,
        )
        return collect_named_outputs(outputs_collections, sc, layer(inputs))


@add_arg_scope
def max_pool2d(
    inputs: Any,
    kernel_size: Any,
    stride: Any = 2,
    padding: str = "VALID",
    data_format: str = "NHWC",
    outputs_collections: Any = None,
    scope: str | None = None,
) -> ops.Tensor:
    """The maximum of each ``kernel_size`` window, in name scope ``MaxPool2D``.

    Args:
        inputs: A 4-D tensor.
        kernel_size: An int or a pair: the window's height and width.
        stride: An int or a pair (default 2).
        padding: ``"VALID"`` (default) or ``"SAME"``.
        data_format: ``"NHWC"`` (default) or ``"NCHW"``.
        outputs_collections: Collections to add the output to.
        scope: The name scope.

    Returns:
        The pooled tensor.

    Raises:
        ValueError: if ``data_format`` is neither ``"NHWC"`` nor ``"NCHW"``.
    """
    layer = (pooling.MaxPooling2D, "MaxPool2D")
    return _pool2d(
        *layer, inputs, kernel_size, stride, padding, data_format, outputs_collections, scope
    )


@add_arg_scope
def avg_pool2d(
    inputs: Any,
    kernel_size: Any,
    stride: Any = 2,
    padding: str = "VALID",
    data_format: str = "NHWC",
    outputs_collections: Any = None,
    scope: str | None = None,
) -> ops.Tensor:
    """The mean of each ``kernel_size`` window, in name scope ``AvgPool2D``.

    With ``"SAME"`` padding a window at the border averages only the values
    inside the input.

    Args:
        inputs: A 4-D tensor, as for `max_pool2d`.
        kernel_size: The window: an int or a pair.
        stride: The step: an int or a pair (default 2).
        padding: ``"VALID"`` (default) or ``"SAME"``.
        data_format: ``"NHWC"`` (default) or ``"NCHW"``.
        outputs_collections: Where to add the output.
        scope: The name scope (default ``AvgPool2D``).

    Returns:
        The averaged tensor.

    Raises:
        ValueError: for another ``data_format``.
    """
    layer = (pooling.AveragePooling2D, "AvgPool2D")
    return _pool2d(
        *layer, inputs, kernel_size, stride, padding, data_format, outputs_collections, scope
    )


@add_arg_scope
def dropout(
    inputs: Any,
    keep_prob: Any = 0.5,
    noise_shape: Any = None,
    is_training: Any = True,
    outputs_collections: Any = None,
    scope: str | None = None,
    seed: int | None = None,
) -> ops.Tensor:
    """Keeps each value with probability ``keep_prob`` (scaled by ``1 / keep_prob``) in training.

    A `minitf.layers.Dropout` with ``rate = 1 - keep_prob`` in the variable
    scope ``Dropout``.

    Args:
        inputs: The tensor.
        keep_prob: The probability of keeping each value (default 0.5).
        noise_shape: The shape of the keep/drop draws (broadcast to ``inputs``).
        is_training: A Python bool or a bool tensor; when false the inputs pass through.
        outputs_collections: Collections to add the output to.
        scope: The variable scope.
        seed: The op's random seed.

    Returns:
        The tensor with dropout applied when training.
    """
    with vs.variable_scope(scope, "Dropout", [inputs]) as sc:
        inputs = ops.convert_to_tensor(inputs)
        layer = core.Dropout(
            rate=1 - keep_prob, noise_shape=noise_shape, seed=seed, name=sc.name, _scope=sc
        )
        outputs = layer(inputs, training=is_training)
        return collect_named_outputs(outputs_collections, sc.name, outputs)
