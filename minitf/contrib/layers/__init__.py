"""``tf.contrib.layers``: initializers, regularizers and the layer functions."""

# ruff: noqa: F401
from minitf.contrib.layers.batch_norm import batch_norm
from minitf.contrib.layers.initializers import (
    variance_scaling_initializer,
    xavier_initializer,
    xavier_initializer_conv2d,
)
from minitf.contrib.layers.layers import (
    avg_pool2d,
    conv2d,
    convolution2d,
    dropout,
    flatten,
    fully_connected,
    max_pool2d,
)
from minitf.contrib.layers.optimizers import (
    OPTIMIZER_CLS_NAMES,
    OPTIMIZER_SUMMARIES,
    optimize_loss,
)
from minitf.contrib.layers.regularizers import (
    apply_regularization,
    l1_regularizer,
    l2_regularizer,
)
