"""The RNN cells written again in numpy, from their formulas: the oracle of the RNN tests."""

import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def basic_rnn_step(x, h, kernel, bias, act=np.tanh):
    out = act(np.concatenate([x, h], 1) @ kernel + bias)
    return out, out


def gru_step(x, h, gate_kernel, gate_bias, cand_kernel, cand_bias):
    value = sigmoid(np.concatenate([x, h], 1) @ gate_kernel + gate_bias)
    r, u = np.split(value, 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ cand_kernel + cand_bias)
    new_h = u * h + (1 - u) * c
    return new_h, new_h


def lstm_step(x, c, h, kernel, bias, forget_bias=1.0, peepholes=None, proj=None):
    """One LSTM step; gates are the column blocks i, j, f, o. Returns (h', c', h')."""
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    if peepholes is None:
        new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
        new_h = np.tanh(new_c) * sigmoid(o)
    else:
        w_f, w_i, w_o = peepholes
        new_c = c * sigmoid(f + forget_bias + w_f * c) + sigmoid(i + w_i * c) * np.tanh(j)
        new_h = np.tanh(new_c) * sigmoid(o + w_o * new_c)
    if proj is not None:
        new_h = new_h @ proj
    return new_h, new_c, new_h


def static_lstm(xs, kernel, bias, units, lengths=None, forget_bias=1.0):
    """An unrolled LSTM from a zero state; rows stop at their lengths. Returns (outputs, c, h)."""
    batch = xs[0].shape[0]
    c = np.zeros((batch, units))
    h = np.zeros((batch, units))
    outputs = []
    for t, x in enumerate(xs):
        out, new_c, new_h = lstm_step(x, c, h, kernel, bias, forget_bias)
        if lengths is not None:
            alive = (t < np.asarray(lengths))[:, None]
            out = np.where(alive, out, 0.0)
            new_c, new_h = np.where(alive, new_c, c), np.where(alive, new_h, h)
        outputs.append(out)
        c, h = new_c, new_h
    return outputs, c, h
