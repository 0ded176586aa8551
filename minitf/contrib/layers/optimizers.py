"""``tf.contrib.layers.optimize_loss``: a training op from a loss, with TF's summaries.

One call builds what a training loop needs around an optimizer, in the
variable scope ``OptimizeLoss`` (``name`` if given): a ``learning_rate``
variable when the rate is a float (decayed by ``learning_rate_decay_fn``),
the optimizer (by name, class, instance or factory), the gradients (with
noise, per-variable multipliers, clipping), the update with the global
step's increment, and the summaries named in ``summaries``. It returns the
loss with a control dependency on the update, so fetching it trains.

The summaries are those of TF's ``OPTIMIZER_SUMMARIES``; their tags carry the
scope, e.g. ``OptimizeLoss/loss``:

- ``"loss"``: scalar ``loss``;
- ``"learning_rate"``: scalar ``learning_rate`` -- as in TF, written only
  when a ``learning_rate_decay_fn`` is given, and tagged
  ``OptimizeLoss/learning_rate_1`` when the rate is a float (its variable
  took the name ``learning_rate`` first);
- ``"global_gradient_norm"``: scalars ``global_norm/gradient_norm`` and,
  when clipping, ``global_norm/clipped_gradient_norm``;
- ``"gradient_norm"``: those two and one scalar ``gradient_norm/<var>`` per
  variable (``<var>`` is the variable's name with ``:`` as ``_``);
- ``"gradients"``: one histogram ``gradients/<var>`` per variable.

The default is ``["loss", "learning_rate", "global_gradient_norm"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import ops
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.math import clip_ops, math_ops
from minitf.ops.random import random_ops
from minitf.ops.state import init_ops
from minitf.ops.state import variable_scope as vs
from minitf.ops.state import variables as vars_
from minitf.summary import summary
from minitf.train import training_util
from minitf.train.adagrad import AdagradOptimizer
from minitf.train.adam import AdamOptimizer
from minitf.train.ftrl import FtrlOptimizer
from minitf.train.gradient_descent import GradientDescentOptimizer
from minitf.train.momentum import MomentumOptimizer
from minitf.train.optimizer import Optimizer
from minitf.train.rmsprop import RMSPropOptimizer

OPTIMIZER_CLS_NAMES: dict[str, Callable[..., Optimizer]] = {
    "Adagrad": AdagradOptimizer,
    "Adam": AdamOptimizer,
    "Ftrl": FtrlOptimizer,
    "Momentum": lambda learning_rate: MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": RMSPropOptimizer,
    "SGD": GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = [
    "learning_rate",
    "loss",
    "gradients",
    "gradient_norm",
    "global_gradient_norm",
]


def optimize_loss(
    loss: Any,
    global_step: Any,
    learning_rate: Any,
    optimizer: Any,
    gradient_noise_scale: float | None = None,
    gradient_multipliers: dict | None = None,
    clip_gradients: float | Callable | None = None,
    learning_rate_decay_fn: Callable | None = None,
    update_ops: list | None = None,
    variables: list | None = None,
    name: str | None = None,
    summaries: list[str] | None = None,
    colocate_gradients_with_ops: bool = False,
    increment_global_step: bool = True,
) -> ops.Tensor:
    """A training op for ``loss``: the loss, computed after one update of the variables.

    Args:
        loss: A scalar tensor.
        global_step: The step counter to increment (None: the graph's global
            step, if any; with none, no step is counted).
        learning_rate: A float (kept in a ``learning_rate`` variable), a
            scalar tensor, or None when ``optimizer`` needs none.
        optimizer: A name of `OPTIMIZER_CLS_NAMES` (``"SGD"``, ``"Adam"``,
            ``"Adagrad"``, ``"Momentum"`` with momentum 0.9, ``"RMSProp"``,
            ``"Ftrl"``), an `Optimizer` subclass (called with the learning
            rate), an `Optimizer`, or a function of the learning rate (of
            nothing if ``learning_rate`` is None) returning one.
        gradient_noise_scale: Adds ``scale`` times a truncated normal draw to
            each gradient.
        gradient_multipliers: ``{variable or variable name: factor}``.
        clip_gradients: A float: the largest global norm of the gradients
            (`tf.clip_by_global_norm`); or a function of the
            ``(gradient, variable)`` list returning a new one.
        learning_rate_decay_fn: ``f(learning_rate, global_step) -> rate``
            (e.g. a partial `tf.train.exponential_decay`).
        update_ops: Ops to run before the loss (default: ``UPDATE_OPS``).
        variables: The variables to train (default: the trainable ones).
        name: The variable scope (default ``OptimizeLoss``).
        summaries: Which of `OPTIMIZER_SUMMARIES` to write (see the module notes).
        colocate_gradients_with_ops: Passed to ``compute_gradients``.
        increment_global_step: False not to count the step (for a model that
            calls ``optimize_loss`` more than once per step).

    Returns:
        ``loss``, with a control dependency on the update.

    Raises:
        ValueError: for a loss that is not a scalar, a bad learning rate,
            optimizer, summary name or ``clip_gradients``, a decay without a
            global step, or no gradient left after the multipliers.
    """
    loss = _assert_scalar(ops.convert_to_tensor(loss))
    if global_step is None:
        global_step = training_util.get_global_step()
    else:
        training_util.assert_global_step(global_step)
    with vs.variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = set(ops.get_collection(GraphKeys.UPDATE_OPS))
        if update_ops:
            loss = control_flow_ops.with_dependencies(list(update_ops), loss)
        lr = _learning_rate(learning_rate)
        summaries = _summaries(summaries)
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
            if "learning_rate" in summaries:
                summary.scalar("learning_rate", lr)
        opt = _make_optimizer(optimizer, lr, learning_rate)
        if variables is None:
            variables = vars_.trainable_variables()
        gradients = opt.compute_gradients(
            loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops
        )
        gradients = _transform_gradients(
            gradients, gradient_noise_scale, gradient_multipliers, clip_gradients, summaries
        )
        if "loss" in summaries:
            summary.scalar("loss", loss)
        _gradient_summaries(gradients, clip_gradients, summaries)
        grad_updates = opt.apply_gradients(
            gradients, global_step=global_step if increment_global_step else None, name="train"
        )
        return control_flow_ops.with_dependencies([grad_updates], loss)


def _assert_scalar(tensor: ops.Tensor) -> ops.Tensor:
    """TF's ``assert_scalar``: the static shape must be known to be ``[]``."""
    shape = tensor.get_shape()
    if shape.ndims != 0:
        raise ValueError(f"Expected scalar shape for {tensor.name}, saw shape: {shape}.")
    return tensor


def _learning_rate(learning_rate: Any) -> Any:
    """A scalar tensor as given, a float in a non-trainable ``learning_rate`` variable."""
    if learning_rate is None:
        return None
    if isinstance(learning_rate, ops.Tensor) and learning_rate.get_shape().ndims == 0:
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError(f"Invalid learning_rate {learning_rate}.")
        return vs.get_variable(
            "learning_rate",
            [],
            trainable=False,
            initializer=init_ops.constant_initializer(learning_rate),
        )
    raise ValueError(
        "Learning rate should be 0d Tensor or float. "
        f"Got {learning_rate} of type {type(learning_rate)}"
    )


def _summaries(summaries: list[str] | None) -> list[str]:
    if summaries is None:
        return ["loss", "learning_rate", "global_gradient_norm"]
    for summ in summaries:
        if summ not in OPTIMIZER_SUMMARIES:
            raise ValueError(
                f"Summaries should be one of [{', '.join(OPTIMIZER_SUMMARIES)}], "
                f"you provided {summ}."
            )
    return summaries


def _make_optimizer(optimizer: Any, lr: Any, learning_rate: Any) -> Optimizer:
    """The optimizer from a name, a class, an instance or a factory, as TF accepts them."""
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError(
                f"Learning rate is None, but should be specified if optimizer is string "
                f"({optimizer})."
            )
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(
                f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}], "
                f"you provided {optimizer}."
            )
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, Optimizer):
        if lr is None:
            raise ValueError(
                f"Learning rate is None, but should be specified if optimizer is class "
                f"({optimizer})."
            )
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(opt, Optimizer):
            raise ValueError(
                f"Unrecognized optimizer: function should return subclass of Optimizer. Got {opt}."
            )
        return opt
    raise ValueError(
        "Unrecognized optimizer: should be string, subclass of Optimizer, instance of "
        f"subclass of Optimizer or function with one argument. Got {optimizer}."
    )


def _transform_gradients(gradients, noise_scale, multipliers, clip_gradients, summaries):
    """Noise, multipliers, the global norm summary, then clipping, in TF's order."""
    if noise_scale is not None:
        gradients = _add_scaled_noise_to_gradients(gradients, noise_scale)
    if multipliers is not None:
        gradients = _multiply_gradients(gradients, multipliers)
        if not gradients:
            raise ValueError(
                "Empty list of (gradient, var) pairs encountered. This is most likely to be "
                "caused by an improper value of gradient_multipliers."
            )
    if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
        summary.scalar("global_norm/gradient_norm", _global_norm(gradients))
    if isinstance(clip_gradients, float):
        grads, variables = zip(*gradients)
        clipped, _ = clip_ops.clip_by_global_norm(grads, clip_gradients)
        return list(zip(clipped, variables))
    if callable(clip_gradients):
        return clip_gradients(gradients)
    if clip_gradients is not None:
        raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
    return gradients


def _global_norm(gradients) -> ops.Tensor:
    return clip_ops.global_norm([g for g, _ in gradients])


def _gradient_summaries(gradients, clip_gradients, summaries) -> None:
    """The per-variable histograms and norms, and the clipped global norm."""
    for gradient, variable in gradients:
        values = gradient.values if isinstance(gradient, IndexedSlices) else gradient
        if values is None:
            continue
        var_name = variable.name.replace(":", "_")
        if "gradients" in summaries:
            summary.histogram(f"gradients/{var_name}", values)
        if "gradient_norm" in summaries:
            summary.scalar(f"gradient_norm/{var_name}", clip_ops.global_norm([values]))
    if clip_gradients is not None and (
        "global_gradient_norm" in summaries or "gradient_norm" in summaries
    ):
        summary.scalar("global_norm/clipped_gradient_norm", _global_norm(gradients))


def _add_scaled_noise_to_gradients(gradients, scale: float) -> list:
    """Each gradient plus ``scale`` times a truncated-normal draw of its shape."""
    noisy = []
    for gradient, variable in gradients:
        if gradient is not None:
            if isinstance(gradient, IndexedSlices):
                shape = gradient.dense_shape
            else:
                shape = array_ops.shape(gradient)
            gradient = gradient + random_ops.truncated_normal(shape) * scale
        noisy.append((gradient, variable))
    return noisy


def _multiply_gradients(gradients, multipliers: dict) -> list:
    """Scales the gradients of the variables (or variable names) in ``multipliers``."""
    scaled = []
    for grad, var in gradients:
        key = var if var in multipliers else var.name
        if grad is not None and key in multipliers:
            factor = multipliers[key]
            if isinstance(grad, IndexedSlices):
                grad = IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
            else:
                grad = grad * math_ops.cast(factor, grad.dtype)
        scaled.append((grad, var))
    return scaled
