"""``tf.layers``: TF1's object-oriented layers and their functional forms.

- ``base.py``: `Layer`, the variable-scope rules every layer (and RNN cell)
  names its variables by.
- ``core.py``: ``Dense``, ``Flatten``, ``Dropout``.
- ``normalization.py``: ``BatchNormalization``.
- ``convolutional.py``: ``Conv2D``; ``pooling.py``: ``MaxPooling2D``, ``AveragePooling2D``.
- ``utils.py``: ``smart_cond`` for a ``training`` flag that may be a tensor.
"""

# ruff: noqa: F401
from minitf.layers.base import Layer
from minitf.layers.convolutional import Conv2D, conv2d
from minitf.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten
from minitf.layers.normalization import BatchNormalization, batch_normalization
from minitf.layers.pooling import (
    AveragePooling2D,
    MaxPooling2D,
    average_pooling2d,
    max_pooling2d,
)
