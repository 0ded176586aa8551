"""The ``tf.losses`` namespace (re-exports only)."""

# ruff: noqa: F401, F403
from minitf.ops.losses.losses_impl import *
from minitf.ops.losses.util import *
