"""The ``tf.debugging`` namespace (TF1 spellings; re-exports only)."""

# ruff: noqa: F401, F403
from minitf.ops.debugging.check_ops import *
from minitf.ops.debugging.logging_ops import Assert
