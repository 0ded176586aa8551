"""Numerical gradient checks (TF1's ``tf.test.compute_gradient`` and ``compute_gradient_error``).

The *theoretical* Jacobian comes from the graph ops that ``tf.gradients``
builds: one backward run per element of ``y`` with a one-hot ``grad_ys``. The
*numerical* Jacobian comes from central finite differences of forward runs.
Both need the default session (``with tf.Session():``).
"""

from __future__ import annotations

import numpy as np

from minitf.framework import ops
from minitf.ops.array import array_ops
from minitf.ops.gradients import gradients_impl

__all__ = ["compute_gradient", "compute_gradient_error"]


def _session():
    sess = ops.get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: use `with tf.Session():`")
    return sess


def _theoretical(x, x_value, x_shape, y, y_shape, extra_feed):
    sess = _session()
    x_size, y_size = int(np.prod(x_shape)), int(np.prod(y_shape))
    dy = array_ops.placeholder(y.dtype.base_dtype, y_shape, name="grad_check_dy")
    (grad,) = gradients_impl.gradients(y, x, grad_ys=dy)
    jacobian = np.zeros((x_size, y_size), dtype=np.float64)
    if grad is None:
        return jacobian
    dy_value = np.zeros(y_shape, dtype=y.dtype.base_dtype.as_numpy_dtype)
    for j in range(y_size):
        dy_value.flat[j] = 1
        value = sess.run(grad, {x: x_value, dy: dy_value, **extra_feed})
        if hasattr(value, "indices"):  # IndexedSlices: densify by hand
            dense = np.zeros(x_shape, dtype=np.float64)
            np.add.at(dense, np.asarray(value.indices), np.asarray(value.values))
            value = dense
        jacobian[:, j] = np.ravel(value)
        dy_value.flat[j] = 0
    return jacobian


def _numerical(x, x_value, x_shape, y, y_shape, delta, extra_feed):
    sess = _session()
    x_size, y_size = int(np.prod(x_shape)), int(np.prod(y_shape))
    jacobian = np.zeros((x_size, y_size), dtype=np.float64)
    probe = np.array(x_value, copy=True)
    for i in range(x_size):
        original = probe.flat[i]
        probe.flat[i] = original + delta
        y_plus = np.asarray(sess.run(y, {x: probe, **extra_feed}), dtype=np.float64)
        probe.flat[i] = original - delta
        y_minus = np.asarray(sess.run(y, {x: probe, **extra_feed}), dtype=np.float64)
        probe.flat[i] = original
        jacobian[i, :] = np.ravel(y_plus - y_minus) / (2 * delta)
    return jacobian


def compute_gradient(
    x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None, extra_feed_dict=None
):
    """Returns the theoretical and numerical Jacobians of ``y`` with respect to ``x``.

    Args:
        x: A tensor (or list of tensors) to perturb.
        x_shape: Its shape (list of shapes for a list).
        y: The output tensor.
        y_shape: Its shape.
        x_init_value: Where to evaluate (default: random values in [0, 1)).
        delta: The finite-difference step.
        init_targets: Ops to run first (e.g. variable initializers).
        extra_feed_dict: More feeds for every run.

    Returns:
        ``(theoretical, numerical)``, each of shape ``[x_size, y_size]``, or a
        list of such pairs if ``x`` is a list.
    """
    if isinstance(x, (list, tuple)):
        inits = x_init_value or [None] * len(x)
        return [
            compute_gradient(xi, si, y, y_shape, vi, delta, init_targets, extra_feed_dict)
            for xi, si, vi in zip(x, x_shape, inits)
        ]
    if init_targets:
        _session().run(init_targets)
    np_dtype = x.dtype.base_dtype.as_numpy_dtype
    if x_init_value is None:
        x_init_value = np.random.default_rng(0).random(x_shape).astype(np_dtype)
    x_value = np.asarray(x_init_value, dtype=np_dtype).reshape(x_shape)
    extra = dict(extra_feed_dict or {})
    return (
        _theoretical(x, x_value, x_shape, y, y_shape, extra),
        _numerical(x, x_value, x_shape, y, y_shape, delta, extra),
    )


def compute_gradient_error(
    x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None, extra_feed_dict=None
) -> float:
    """The largest absolute difference between the theoretical and numerical Jacobians.

    Args:
        x: A tensor (or list of tensors) to perturb.
        x_shape: Its shape (list of shapes for a list).
        y: The output tensor.
        y_shape: Its shape.
        x_init_value: Where to evaluate (default: random values in [0, 1)).
        delta: The finite-difference step.
        init_targets: Ops to run first (e.g. variable initializers).
        extra_feed_dict: More feeds for every run.
    """
    result = compute_gradient(
        x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict
    )
    pairs = result if isinstance(result, list) else [result]
    return max(float(np.max(np.abs(t - n))) if t.size else 0.0 for t, n in pairs)
