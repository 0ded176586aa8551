"""The ``tf.metrics`` namespace (re-exports only)."""

# ruff: noqa: F401, F403
from minitf.ops.metrics.metrics_impl import *
