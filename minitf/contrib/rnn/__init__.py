"""``tf.contrib.rnn``: the RNN cells and the unrolled RNNs, as TF 1.x scripts import them."""

# ruff: noqa: F401, F403
from minitf.ops.nn.rnn import static_bidirectional_rnn, static_rnn
from minitf.ops.nn.rnn_cell import *
