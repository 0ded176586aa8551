"""The ``tf.nn`` namespace: neural-network ops (re-exports only)."""

# ruff: noqa: F401, F403
from minitf.ops.nn import rnn_cell
from minitf.ops.nn.candidate_sampling_ops import log_uniform_candidate_sampler
from minitf.ops.nn.conv_ops import *
from minitf.ops.nn.embedding_ops import embedding_lookup
from minitf.ops.nn.lrn_ops import local_response_normalization, lrn
from minitf.ops.nn.nn_impl import batch_normalization
from minitf.ops.nn.nn_ops import *
from minitf.ops.nn.rnn import (
    bidirectional_dynamic_rnn,
    dynamic_rnn,
    static_bidirectional_rnn,
    static_rnn,
)
from minitf.ops.nn.sampled_losses import nce_loss, sampled_softmax_loss
