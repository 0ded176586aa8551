"""``tf.contrib.layers``: initializers, regularizers, ``fully_connected`` and ``flatten``."""

# ruff: noqa: F401
from minitf.contrib.layers.initializers import (
    variance_scaling_initializer,
    xavier_initializer,
    xavier_initializer_conv2d,
)
from minitf.contrib.layers.layers import flatten, fully_connected
from minitf.contrib.layers.regularizers import (
    apply_regularization,
    l1_regularizer,
    l2_regularizer,
)
