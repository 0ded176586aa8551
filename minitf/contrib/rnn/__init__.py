"""``tf.contrib.rnn``: the RNN cells and the unrolled RNNs, as TF 1.x scripts import them."""

# ruff: noqa: F401, F403
from minitf.ops.nn.rnn import _best_effort_input_batch_size as best_effort_input_batch_size
from minitf.ops.nn.rnn import _transpose_batch_time as transpose_batch_time
from minitf.ops.nn.rnn import static_bidirectional_rnn, static_rnn
from minitf.ops.nn.rnn_cell import *
