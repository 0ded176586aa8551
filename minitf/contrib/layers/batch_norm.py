"""``tf.contrib.layers.batch_norm``: batch normalization the slim way.

The layer normalizes over every axis but the channels (the last with
``data_format="NHWC"``, the second with ``"NCHW"``) in the variable scope
``BatchNorm``, with the model variables ``BatchNorm/beta`` (if ``center``),
``BatchNorm/gamma`` (if ``scale``, off by default: a following ReLU or linear
layer can do the scaling), ``BatchNorm/moving_mean`` and
``BatchNorm/moving_variance``. In training it uses the batch's statistics and
moves the averages towards them, ``moving -= (moving - batch) * (1 - decay)``,
with ops that go to ``updates_collections`` (``UPDATE_OPS``, run them with the
train op) or, with ``updates_collections=None``, run before the output is
computed. Otherwise it uses the averages.

TF1 picks one of three implementations, and they differ in what a user can
see (contrib's ``layers.py``, ``batch_norm``):

- the default (``updates_collections=UPDATE_OPS``, no
  ``zero_debias_moving_mean``, rank other than 2): the core
  `minitf.layers.BatchNormalization` layer, fused for 4-D inputs unless
  ``fused=False``;
- otherwise, for 2-D and 4-D inputs with ``fused`` None or True:
  the fused kernel (float32 variables, ``epsilon`` at least ``1.001e-5``);
- otherwise plain ops (variables of the inputs' dtype).

Where TF1 uses the fused kernel, the moving variance moves towards the
unbiased batch variance (``n / (n - 1)`` times the one the output is
normalized with); minitf computes those numbers with the unfused ops.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from minitf.contrib.framework.arg_scope import add_arg_scope
from minitf.contrib.layers.layers import (
    _add_to_collections,
    _contrib_variable_getter,
    collect_named_outputs,
)
from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.layers import normalization, utils
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_impl
from minitf.ops.state import init_ops
from minitf.ops.state import variable_scope as vs
from minitf.train.moving_averages import assign_moving_average

__all__ = ["batch_norm"]

_DATA_FORMATS = ("NCHW", "NHWC")
_PARAMS = ("beta", "gamma", "moving_mean", "moving_variance")
_DEFAULT_INITIALIZERS = (
    init_ops.zeros_initializer(),
    init_ops.ones_initializer(),
    init_ops.zeros_initializer(),
    init_ops.ones_initializer(),
)


@add_arg_scope
def batch_norm(
    inputs: Any,
    decay: float = 0.999,
    center: bool = True,
    scale: bool = False,
    epsilon: float = 0.001,
    activation_fn: Callable | None = None,
    param_initializers: dict | None = None,
    param_regularizers: dict | None = None,
    updates_collections: Any = GraphKeys.UPDATE_OPS,
    is_training: Any = True,
    reuse: bool | None = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    batch_weights: Any = None,
    fused: bool | None = None,
    data_format: str = "NHWC",
    zero_debias_moving_mean: bool = False,
    scope: str | None = None,
    renorm: bool = False,
    renorm_clipping: dict | None = None,
    renorm_decay: float = 0.99,
    adjustment: Callable | None = None,
) -> ops.Tensor:
    """Batch normalization, usable as the ``normalizer_fn`` of `conv2d` and `fully_connected`.

    Args:
        inputs: A tensor of rank 2 or more, batch first.
        decay: The moving averages' decay (lower it, e.g. to 0.9, if
            evaluation lags training).
        center: Add the offset ``beta``.
        scale: Multiply by ``gamma``.
        epsilon: Added to the variance before its square root.
        activation_fn: Applied to the output; None for linear.
        param_initializers: Initializers by name: ``"beta"``, ``"gamma"``,
            ``"moving_mean"``, ``"moving_variance"`` (default 0, 1, 0, 1).
        param_regularizers: Regularizers of ``"beta"`` and ``"gamma"``.
        updates_collections: Where the two moving-average updates go; None
            to run them before the output, in place.
        is_training: A Python bool or a scalar bool tensor: batch statistics
            and updates if true, the moving averages if false.
        reuse: True to use the existing variables of ``scope``.
        variables_collections: Extra collections of the variables (a list,
            or a dict of lists by the names of ``param_initializers``).
        outputs_collections: Collections to add the output to.
        trainable: Whether ``beta`` and ``gamma`` are trainable.
        batch_weights: Not supported (must be None).
        fused: None or True: TF1's fused kernel where it applies; False: not.
        data_format: ``"NHWC"`` (channels last, default) or ``"NCHW"``.
        zero_debias_moving_mean: Keep the moving mean as TF's zero-debiased
            average (the extra variables ``.../moving_mean/biased`` and
            ``.../local_step``): the mean of the batch means so far, without
            the pull towards 0. Needs a Python bool ``is_training``.
        scope: The variable scope (default ``BatchNorm``, made unique).
        renorm: Not supported (must be False).
        renorm_clipping: Ignored without ``renorm``.
        renorm_decay: Ignored without ``renorm``.
        adjustment: Not supported (must be None).

    Returns:
        The normalized (and activated) tensor, of the inputs' shape.

    Raises:
        NotImplementedError: for ``batch_weights``, ``renorm`` or
            ``adjustment``, or ``zero_debias_moving_mean`` with a tensor
            ``is_training``.
        ValueError: for another ``data_format``, or an input whose rank or
            channels dimension is unknown.
    """
    del renorm_clipping, renorm_decay
    _refuse_unsupported(
        batch_weights=batch_weights is not None,
        renorm=renorm,
        adjustment=adjustment is not None,
    )
    if zero_debias_moving_mean and utils.constant_value(is_training) is None:
        # The debiasing variables would be made inside the tf.cond on is_training,
        # where their initializers could not run.
        raise NotImplementedError(
            "minitf's tf.contrib.layers.batch_norm has zero_debias_moving_mean only with a "
            "Python bool is_training, not a tensor."
        )
    if data_format not in _DATA_FORMATS:
        raise ValueError("data_format has to be either NCHW or NHWC.")
    inputs = ops.convert_to_tensor(inputs)
    rank = inputs.get_shape().ndims
    fused = True if fused is None else fused
    # TF1 tests identity, not equality, against the default collection.
    default_updates = updates_collections is GraphKeys.UPDATE_OPS
    args = _Arguments(
        decay=decay,
        center=center,
        scale=scale,
        epsilon=epsilon,
        initializers=param_initializers or {},
        regularizers=param_regularizers or {},
        updates_collections=updates_collections,
        is_training=is_training,
        variables_collections=variables_collections,
        trainable=trainable,
        data_format=data_format,
        zero_debias=zero_debias_moving_mean,
    )
    with vs.variable_scope(
        scope, "BatchNorm", [inputs], reuse=reuse, custom_getter=_contrib_variable_getter
    ) as sc:
        # TF1's choice (contrib's layers.py): the core layer only for the default
        # collection without debiasing, and not for 2-D inputs, which its fused
        # kernel takes.
        if default_updates and not zero_debias_moving_mean and not (fused and rank == 2):
            outputs = _with_the_layer(inputs, args, fused and rank == 4, sc, reuse)
        else:
            outputs = _with_ops(inputs, args, fused and rank in (2, 4))
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


def _refuse_unsupported(**given: bool) -> None:
    """Raises for the first option of TF1's ``batch_norm`` that minitf does not have."""
    for option, value in given.items():
        if value:
            raise NotImplementedError(
                f"minitf's tf.contrib.layers.batch_norm has no `{option}`: leave it at its default."
            )


@dataclasses.dataclass
class _Arguments:
    """The arguments both implementations read; ``initializers`` completed with the defaults."""

    decay: float
    center: bool
    scale: bool
    epsilon: float
    initializers: dict
    regularizers: dict
    updates_collections: Any
    is_training: Any
    variables_collections: Any
    trainable: bool
    data_format: str
    zero_debias: bool

    def __post_init__(self) -> None:
        self.initializers = {
            name: self.initializers.get(name, default)
            for name, default in zip(_PARAMS, _DEFAULT_INITIALIZERS, strict=True)
        }


def _with_the_layer(inputs, args: _Arguments, fused: bool, sc, reuse) -> ops.Tensor:
    """The default implementation: a core `BatchNormalization` layer in the scope ``sc``."""
    init = args.initializers
    layer = normalization.BatchNormalization(
        axis=1 if args.data_format == "NCHW" else -1,
        momentum=args.decay,
        epsilon=args.epsilon,
        center=args.center,
        scale=args.scale,
        beta_initializer=init["beta"],
        gamma_initializer=init["gamma"],
        moving_mean_initializer=init["moving_mean"],
        moving_variance_initializer=init["moving_variance"],
        beta_regularizer=args.regularizers.get("beta"),
        gamma_regularizer=args.regularizers.get("gamma"),
        trainable=args.trainable,
        fused=fused,
        name=sc.name,
        _scope=sc,
        _reuse=reuse,
    )
    outputs = layer(inputs, training=args.is_training)
    for name in _PARAMS:
        variable = getattr(layer, name)
        if variable is not None:
            _add_to_collections(variable, args.variables_collections, name)
    return outputs


def _with_ops(inputs, args: _Arguments, fused: bool) -> ops.Tensor:
    """TF1's fused (``fused=True``) or plain implementation, from `moments` and friends."""
    shape = inputs.get_shape()
    if shape.ndims is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    channel_axis = 1 if args.data_format == "NCHW" else shape.ndims - 1
    channels = shape.as_list()[channel_axis]
    if channels is None:
        raise ValueError(f"Inputs {inputs.name} has undefined channels dimension {shape}.")
    dtype = dtypes.float32 if fused else inputs.dtype.base_dtype
    beta, gamma, moving_mean, moving_variance = (
        _variable(name, [channels], dtype, args) for name in _PARAMS
    )
    axes = [a for a in range(shape.ndims) if a != channel_axis]
    if utils.constant_value(args.is_training) is False:
        mean, variance = moving_mean.value(), moving_variance.value()
    else:
        statistics = _BatchStatistics(inputs, axes, dtype, fused, moving_mean, moving_variance)
        mean, variance = statistics.for_training(args)
    broadcast = _broadcaster(shape, channel_axis, inputs.dtype)
    # The fused kernel raises a smaller epsilon to its minimum.
    epsilon = max(args.epsilon, 1.001e-5) if fused else args.epsilon
    outputs = nn_impl.batch_normalization(
        inputs, broadcast(mean), broadcast(variance), broadcast(beta), broadcast(gamma), epsilon
    )
    outputs.set_shape(shape)
    return outputs


def _variable(name: str, shape: list, dtype, args: _Arguments):
    """The model variable ``name`` (None for ``beta``/``gamma`` if not ``center``/``scale``)."""
    if (name == "beta" and not args.center) or (name == "gamma" and not args.scale):
        return None
    moving = name.startswith("moving_")
    variable = vs.get_variable(
        name,
        shape=shape,
        dtype=dtype,
        initializer=args.initializers[name],
        regularizer=None if moving else args.regularizers.get(name),
        trainable=False if moving else args.trainable,
    )
    _add_to_collections(variable, args.variables_collections, name)
    return variable


def _broadcaster(shape, channel_axis: int, dtype) -> Callable:
    """Casts a per-channel vector to ``dtype`` and shapes it to broadcast against the inputs."""
    target = [1] * shape.ndims
    target[channel_axis] = -1

    def broadcast(vector):
        if vector is None:
            return None
        vector = math_ops.cast(vector, dtype)
        return vector if channel_axis == shape.ndims - 1 else array_ops.reshape(vector, target)

    return broadcast


class _BatchStatistics:
    """A batch's mean and variance, and the updates of the moving averages towards them."""

    def __init__(self, inputs, axes, dtype, fused, moving_mean, moving_variance):
        x = math_ops.cast(inputs, dtype)
        self.mean, self.variance = nn_impl.moments(x, axes)
        self.moving_mean = moving_mean
        self.moving_variance = moving_variance
        self.variance_target = self.variance
        if fused:
            count = math_ops.cast(
                math_ops.reduce_prod(array_ops.gather(array_ops.shape(x), axes)), dtype
            )
            self.variance_target = self.variance * count / math_ops.maximum(count - 1.0, 1.0)

    def updates(self, args: _Arguments) -> tuple:
        """The two ``assign_moving_average`` ops (the mean's debiased if asked)."""
        return (
            assign_moving_average(
                self.moving_mean, self.mean, args.decay, zero_debias=args.zero_debias
            ),
            assign_moving_average(
                self.moving_variance, self.variance_target, args.decay, zero_debias=False
            ),
        )

    def moving(self) -> tuple:
        """The moving averages' values."""
        return self.moving_mean.value(), self.moving_variance.value()

    def for_training(self, args: _Arguments) -> tuple:
        """The statistics to normalize with; adds the updates where ``args`` says.

        With a tensor ``is_training`` the choice is a `tf.cond`: batch
        statistics and updates if true, the moving averages if false.
        """
        if args.updates_collections is None:
            return utils.smart_cond(args.is_training, lambda: self._forced(args), self.moving)
        update_mean, update_variance = utils.smart_cond(
            args.is_training, lambda: self.updates(args), self.moving
        )
        ops.add_to_collections(args.updates_collections, update_mean)
        ops.add_to_collections(args.updates_collections, update_variance)
        return utils.smart_cond(args.is_training, lambda: (self.mean, self.variance), self.moving)

    def _forced(self, args: _Arguments) -> tuple:
        """The batch statistics, after the updates (``updates_collections=None``)."""
        with ops.control_dependencies(self.updates(args)):
            return array_ops.identity(self.mean), array_ops.identity(self.variance)
