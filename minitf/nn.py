"""The ``tf.nn`` namespace: neural-network ops (re-exports only)."""

# ruff: noqa: F401, F403
from minitf.ops.nn.embedding_ops import embedding_lookup
from minitf.ops.nn.nn_ops import *
