"""The ``tf.test`` namespace: numerical gradient checks (re-exports only)."""

# ruff: noqa: F401
from minitf.ops.gradients.gradient_checker import compute_gradient, compute_gradient_error
