"""``tf.contrib.framework``: the global step of TF 1.0-era scripts, and ``arg_scope``."""

# ruff: noqa: F401
from minitf.contrib.framework.arg_scope import (
    add_arg_scope,
    arg_scope,
    arg_scoped_arguments,
    current_arg_scope,
    has_arg_scope,
)
from minitf.train.training_util import get_global_step, get_or_create_global_step
