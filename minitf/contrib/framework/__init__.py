"""``tf.contrib.framework``: where TF 1.0-era scripts find the global step."""

# ruff: noqa: F401
from minitf.train.training_util import get_global_step, get_or_create_global_step
