"""``tf.contrib.layers.fully_connected`` and ``flatten``: the contrib spellings of the core layers.

``fully_connected`` is a `minitf.layers.Dense` in the variable scope
``fully_connected`` (``scope=`` if given) whose variables are renamed the
contrib way, ``weights`` and ``biases``, and are model variables; its
activation defaults to ReLU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.contrib.layers.initializers import xavier_initializer
from minitf.framework import ops
from minitf.framework.graph_keys import GraphKeys
from minitf.layers import core
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
            use_bias=not normalizer_fn and biases_initializer is not None,
            kernel_initializer=weights_initializer,
            bias_initializer=biases_initializer,
            kernel_regularizer=weights_regularizer,
            bias_regularizer=biases_regularizer,
            trainable=trainable,
            name=sc.name,
            dtype=inputs.dtype.base_dtype,
            _scope=sc,
            _reuse=reuse,
        )
        outputs = layer(inputs)
        _add_to_collections(layer.kernel, variables_collections, "weights")
        if layer.bias is not None:
            _add_to_collections(layer.bias, variables_collections, "biases")
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        for name in outputs_collections or []:
            ops.add_to_collection(name, outputs)
        return outputs


def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> ops.Tensor:
    """``[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]`` in name scope ``Flatten``.

    Args:
        inputs: A tensor of rank 2 or more.
        outputs_collections: Collections to add the output to.
        scope: The name scope.

    Raises:
        ValueError: if ``inputs`` has rank below 2 (or unknown).
    """
    with ops.name_scope(scope, "Flatten", [inputs]):
        inputs = ops.convert_to_tensor(inputs)
        ndims = inputs.get_shape().ndims
        if ndims is None or ndims < 2:
            raise ValueError(
                f"Inputs must have a least 2 dimensions. Got shape {inputs.get_shape()}"
            )
        outputs = core.flatten(inputs)
    for name in outputs_collections or []:
        ops.add_to_collection(name, outputs)
    return outputs
