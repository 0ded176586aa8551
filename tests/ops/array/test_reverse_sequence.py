"""tf.reverse_sequence: numpy by hand, TF's documented example, its gradient and its errors."""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error

pytestmark = pytest.mark.timeout(60)


def _by_hand(x, lengths, seq_axis, batch_axis):
    out = np.array(x, copy=True)
    for b, n in enumerate(lengths):
        index = [slice(None)] * x.ndim
        index[batch_axis] = b
        index[seq_axis] = slice(0, n)
        out[tuple(index)] = np.flip(x[tuple(index)], axis=seq_axis - (seq_axis > batch_axis))
    return out


def test_the_example_of_tfs_documentation():
    x = [[1, 2, 3, 4], [5, 6, 7, 8]]
    with tf.Session() as sess:
        got = sess.run(tf.reverse_sequence(x, [3, 2], seq_axis=1, batch_axis=0))
    np.testing.assert_array_equal(got, [[3, 2, 1, 4], [6, 5, 7, 8]])


@pytest.mark.parametrize("seq_axis,batch_axis", [(0, 1), (1, 0), (2, 1), (1, 2)])
def test_each_batch_entry_reverses_its_own_prefix(seq_axis, batch_axis):
    x = np.arange(4 * 3 * 4).reshape(4, 3, 4).astype(np.float32)
    lengths = [4, 0, 2, 1][: x.shape[batch_axis]]
    lengths = [min(n, x.shape[seq_axis]) for n in lengths]
    y = tf.reverse_sequence(x, np.array(lengths, np.int64), seq_axis, batch_axis)
    assert y.shape.as_list() == list(x.shape)
    with tf.Session() as sess:
        got = sess.run(y)
    np.testing.assert_array_equal(got, _by_hand(x, lengths, seq_axis, batch_axis))


def test_the_old_argument_names_still_work():
    y = tf.reverse_sequence([[1, 2, 3]], [2], seq_dim=1, batch_dim=0)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [[2, 1, 3]])


def test_gradient_matches_finite_differences():
    x_value = np.random.RandomState(0).randn(3, 2, 2)
    x = tf.placeholder(tf.float64, x_value.shape)
    y = tf.reverse_sequence(x, [3, 1], seq_axis=0, batch_axis=1) * np.arange(12.0).reshape(3, 2, 2)
    with tf.Session():
        error = compute_gradient_error(x, [3, 2, 2], y, [3, 2, 2], x_init_value=x_value)
    assert error < 1e-6


def test_bad_arguments_are_refused_while_the_graph_is_built():
    x = tf.zeros([2, 3])
    with pytest.raises(ValueError, match="seq_dim must be < input rank: 2 vs. 2"):
        tf.reverse_sequence(x, [1, 1], seq_axis=2)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.reverse_sequence(x, [1, 1, 1], seq_axis=1)
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.reverse_sequence(x, [[1, 1]], seq_axis=1)
    with pytest.raises(ValueError, match="Cannot specify both 'seq_axis' and 'seq_dim'"):
        tf.reverse_sequence(x, [1, 1], seq_axis=1, seq_dim=1)


def test_a_length_past_the_sequence_fails_the_run():
    lengths = tf.placeholder(tf.int32, [2])
    y = tf.reverse_sequence(tf.zeros([2, 3]), lengths, seq_axis=1)
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"seq_lens\(1\) > input.dims\(1\)"
        ):
            sess.run(y, {lengths: [1, 4]})
