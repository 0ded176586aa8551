"""The ``tf.nn.rnn_cell`` namespace: TF1's RNN cells (re-exports only)."""

# ruff: noqa: F401
from minitf.ops.nn.rnn_cell_impl import (
    BasicLSTMCell,
    BasicRNNCell,
    DeviceWrapper,
    DropoutWrapper,
    GRUCell,
    LayerRNNCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    ResidualWrapper,
    RNNCell,
)
