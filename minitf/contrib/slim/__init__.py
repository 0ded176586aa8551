"""``tf.contrib.slim``: slim's layer functions and ``arg_scope``, the names of ``tf.contrib``.

TF1's slim re-exports ``tf.contrib.layers`` and ``tf.contrib.framework``'s
``arg_scope``; these are the same functions, so ``slim.conv2d`` and
``tf.contrib.layers.conv2d`` share one ``arg_scope`` entry. Slim's
``learning``, ``losses``, ``evaluation`` and variable helpers are not here.
"""

# ruff: noqa: F401
from minitf.contrib.framework.arg_scope import (
    add_arg_scope,
    arg_scope,
    arg_scoped_arguments,
    current_arg_scope,
    has_arg_scope,
)
from minitf.contrib.layers import (
    apply_regularization,
    avg_pool2d,
    batch_norm,
    conv2d,
    convolution2d,
    dropout,
    flatten,
    fully_connected,
    l1_regularizer,
    l2_regularizer,
    max_pool2d,
    variance_scaling_initializer,
    xavier_initializer,
    xavier_initializer_conv2d,
)
