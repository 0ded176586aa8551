"""``tf.contrib``: the few contrib names TF1 parameter-server code uses."""

# ruff: noqa: F401
from minitf.contrib import framework, layers, opt, rnn, slim, training
