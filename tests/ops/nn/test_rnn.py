"""tf.nn.static_rnn and static_bidirectional_rnn: numpy by hand, ports of TF's rnn_test.py.

Expected values come from `tests.ops.nn.rnn_oracle` (the LSTM formula in
numpy with the same weights), from the arithmetic of TF's ``Plus1RNNCell``
tests, or from finite differences.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error
from tests.ops.nn import rnn_oracle as oracle

pytestmark = pytest.mark.timeout(60)

RNG = np.random.RandomState(7)


class Plus1RNNCell(tf.nn.rnn_cell.RNNCell):
    """TF rnn_test.py's cell: output = input + 1, state = state + 1."""

    @property
    def output_size(self):
        return 5

    @property
    def state_size(self):
        return 5

    def __call__(self, input_, state, scope=None):
        return input_ + 1, state + 1


def _lstm_network(units, steps, batch, depth, sequence_length=None, dtype=tf.float32):
    xs = [tf.placeholder(dtype, [batch, depth]) for _ in range(steps)]
    cell = tf.nn.rnn_cell.BasicLSTMCell(units)
    outputs, state = tf.nn.static_rnn(cell, xs, dtype=dtype, sequence_length=sequence_length)
    return xs, cell, outputs, state


def _load(sess, cell, *values):
    for variable, value in zip(cell.weights, values):
        variable.load(np.asarray(value, dtype=variable.dtype.base_dtype.as_numpy_dtype), sess)


# -- ports of TF's rnn_test.py -------------------------------------------------------------


def test_tf_rnn_plus1_cell_outputs_and_final_state():
    # TF rnn_test.RNNTest.testRNN.
    cell = Plus1RNNCell()
    batch_size, input_size, max_length = 2, 5, 8
    inputs = max_length * [tf.placeholder(tf.float32, shape=(batch_size, input_size))]
    outputs, state = tf.nn.static_rnn(cell, inputs, dtype=tf.float32)
    assert len(outputs) == len(inputs)
    for out, inp in zip(outputs, inputs):
        assert out.get_shape() == inp.get_shape() and out.dtype == inp.dtype
    input_value = RNG.randn(batch_size, input_size)
    with tf.Session() as sess:
        values = sess.run(outputs + [state], {inputs[0]: input_value})
    for v in values[:-1]:
        np.testing.assert_allclose(v, input_value + 1.0, rtol=1e-6)
    np.testing.assert_allclose(values[-1], max_length * np.ones((batch_size, input_size)))


def test_tf_rnn_dynamic_calculation_with_sequence_length():
    # TF rnn_test.RNNTest.testDynamicCalculation.
    cell = Plus1RNNCell()
    sequence_length = tf.placeholder(tf.int64)
    batch_size, input_size, max_length = 2, 5, 8
    inputs = max_length * [tf.placeholder(tf.float32, shape=(batch_size, input_size))]
    with tf.variable_scope("drop_scope"):
        outputs, state = tf.nn.static_rnn(
            cell, inputs, sequence_length=sequence_length, dtype=tf.float32
        )
    assert len(outputs) == len(inputs)
    input_value = RNG.randn(batch_size, input_size)
    with tf.Session() as sess:
        values, state_value = sess.run(
            [outputs, state], {inputs[0]: input_value, sequence_length: [2, 3]}
        )
    for v in values[:2]:  # both entries still running
        np.testing.assert_allclose(v, input_value + 1.0, rtol=1e-6)
    expected_t2 = np.vstack((np.zeros(input_size), 1.0 + input_value[1, :]))
    np.testing.assert_allclose(values[2], expected_t2, rtol=1e-6)
    for v in values[3:]:
        np.testing.assert_array_equal(v, np.zeros_like(input_value))
    # Entry 0 stopped after 2 steps, entry 1 after 3.
    expected_state = np.vstack((2.0 * np.ones(input_size), 3.0 * np.ones(input_size)))
    np.testing.assert_array_equal(state_value, expected_state)


# -- a BasicLSTMCell unrolled, against numpy ------------------------------------------------


def test_static_lstm_matches_numpy_and_names_variables_under_rnn():
    units, steps, batch, depth = 3, 4, 2, 2
    xs, cell, outputs, state = _lstm_network(units, steps, batch, depth)
    assert [v.name for v in tf.global_variables()] == [
        "rnn/basic_lstm_cell/kernel:0",
        "rnn/basic_lstm_cell/bias:0",
    ]
    assert cell.weights[0].shape.as_list() == [depth + units, 4 * units]
    kernel, bias = RNG.randn(depth + units, 4 * units), RNG.randn(4 * units)
    x_values = [RNG.randn(batch, depth) for _ in range(steps)]
    with tf.Session() as sess:
        _load(sess, cell, kernel, bias)
        got_outputs, got_state = sess.run([outputs, state], dict(zip(xs, x_values)))
    want_outputs, want_c, want_h = oracle.static_lstm(x_values, kernel, bias, units)
    for got, want in zip(got_outputs, want_outputs):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.c, want_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.h, want_h, rtol=1e-5, atol=1e-6)


def test_static_lstm_with_sequence_length_zero_outputs_and_copies_state_through():
    units, steps, batch, depth = 2, 5, 4, 3
    lengths = [5, 2, 0, 3]
    xs, cell, outputs, state = _lstm_network(units, steps, batch, depth, sequence_length=lengths)
    kernel, bias = RNG.randn(depth + units, 4 * units), RNG.randn(4 * units)
    x_values = [RNG.randn(batch, depth) for _ in range(steps)]
    with tf.Session() as sess:
        _load(sess, cell, kernel, bias)
        got_outputs, got_state = sess.run([outputs, state], dict(zip(xs, x_values)))
    want_outputs, want_c, want_h = oracle.static_lstm(x_values, kernel, bias, units, lengths)
    for got, want in zip(got_outputs, want_outputs):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.c, want_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.h, want_h, rtol=1e-5, atol=1e-6)
    assert not np.any(got_state.h[2])  # a length of 0 keeps the zero state


def test_static_rnn_with_an_unknown_batch_size_and_an_initial_state():
    cell = tf.nn.rnn_cell.GRUCell(2)
    xs = [tf.placeholder(tf.float32, [None, 3]) for _ in range(2)]
    h0 = tf.placeholder(tf.float32, [None, 2])
    outputs, state = tf.nn.static_rnn(cell, xs, initial_state=h0, sequence_length=[1, 2, 2])
    feed = {xs[0]: RNG.randn(3, 3), xs[1]: RNG.randn(3, 3), h0: RNG.randn(3, 2)}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        gk, gb, ck, cb = sess.run(cell.weights)
        got_outputs, got_state = sess.run([outputs, state], feed)
    h1, _ = oracle.gru_step(feed[xs[0]], feed[h0], gk, gb, ck, cb)
    h2, _ = oracle.gru_step(feed[xs[1]], h1, gk, gb, ck, cb)
    np.testing.assert_allclose(got_outputs[0], h1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_outputs[1][0], [0.0, 0.0])
    np.testing.assert_allclose(got_state, np.vstack([h1[:1], h2[1:]]), rtol=1e-5, atol=1e-6)


def test_multi_rnn_cell_in_static_rnn_names_its_layers():
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(3) for _ in range(2)])
    xs = [tf.zeros([2, 4]) for _ in range(3)]
    tf.nn.static_rnn(cell, xs, dtype=tf.float32, scope="encoder")
    assert [(v.op.name, v.shape.as_list()) for v in tf.global_variables()] == [
        ("encoder/multi_rnn_cell/cell_0/basic_lstm_cell/kernel", [7, 12]),
        ("encoder/multi_rnn_cell/cell_0/basic_lstm_cell/bias", [12]),
        ("encoder/multi_rnn_cell/cell_1/basic_lstm_cell/kernel", [6, 12]),
        ("encoder/multi_rnn_cell/cell_1/basic_lstm_cell/bias", [12]),
    ]


def test_static_bidirectional_rnn_against_numpy():
    units, steps, batch, depth = 2, 4, 3, 2
    lengths = [4, 1, 3]
    xs = [tf.placeholder(tf.float32, [batch, depth]) for _ in range(steps)]
    fw, bw = tf.nn.rnn_cell.BasicLSTMCell(units), tf.nn.rnn_cell.BasicLSTMCell(units)
    outputs, state_fw, state_bw = tf.nn.static_bidirectional_rnn(
        fw, bw, xs, dtype=tf.float32, sequence_length=lengths
    )
    assert [v.op.name for v in tf.global_variables()] == [
        "bidirectional_rnn/fw/basic_lstm_cell/kernel",
        "bidirectional_rnn/fw/basic_lstm_cell/bias",
        "bidirectional_rnn/bw/basic_lstm_cell/kernel",
        "bidirectional_rnn/bw/basic_lstm_cell/bias",
    ]
    weights = [RNG.randn(depth + units, 4 * units), RNG.randn(4 * units)]
    weights_bw = [RNG.randn(depth + units, 4 * units), RNG.randn(4 * units)]
    x_values = [RNG.randn(batch, depth) for _ in range(steps)]
    with tf.Session() as sess:
        _load(sess, fw, *weights)
        _load(sess, bw, *weights_bw)
        got, got_fw, got_bw = sess.run([outputs, state_fw, state_bw], dict(zip(xs, x_values)))
    want_fw, _, want_fw_h = oracle.static_lstm(x_values, *weights, units, lengths)
    # Backward: each row reads its own first lengths[b] steps in reverse.
    x_array = np.stack(x_values)
    reversed_x = x_array.copy()
    for b, n in enumerate(lengths):
        reversed_x[:n, b] = x_array[:n, b][::-1]
    back, _, want_bw_h = oracle.static_lstm(list(reversed_x), *weights_bw, units, lengths)
    back = np.stack(back)
    want_bw = back.copy()
    for b, n in enumerate(lengths):
        want_bw[:n, b] = back[:n, b][::-1]
    for t in range(steps):
        want = np.concatenate([want_fw[t], want_bw[t]], 1)
        np.testing.assert_allclose(got[t], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_fw.h, want_fw_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_bw.h, want_bw_h, rtol=1e-5, atol=1e-6)


def test_static_bidirectional_rnn_without_lengths_reverses_the_list():
    fw, bw = tf.nn.rnn_cell.BasicRNNCell(2), tf.nn.rnn_cell.BasicRNNCell(2)
    x_values = [RNG.randn(1, 2) for _ in range(3)]
    xs = [tf.constant(x, tf.float32) for x in x_values]
    outputs, _, state_bw = tf.nn.static_bidirectional_rnn(fw, bw, xs, dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_state, bw_kernel, bw_bias = sess.run([outputs, state_bw] + bw.weights)
    h = np.zeros((1, 2))
    for x in reversed(x_values):
        h, _ = oracle.basic_rnn_step(x, h, bw_kernel, bw_bias)
    np.testing.assert_allclose(h, got_state, rtol=1e-5, atol=1e-6)
    # The backward network read xs[0] last: its output at t=0 is its final state.
    np.testing.assert_allclose(got[0][:, 2:], got_state, rtol=1e-6)


# -- gradients and training -------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_static_lstm_gradients_match_finite_differences():
    units, steps, batch, depth = 2, 3, 2, 2
    xs, cell, outputs, state = _lstm_network(
        units, steps, batch, depth, sequence_length=[3, 2], dtype=tf.float64
    )
    loss = tf.reduce_sum(tf.stack(outputs) * RNG.randn(steps, batch, units)) + tf.reduce_sum(
        state.c * RNG.randn(batch, units)
    )
    feed = {x: RNG.randn(batch, depth) for x in xs}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias = cell.weights
        for variable in (kernel, bias):
            shape = variable.shape.as_list()
            error = compute_gradient_error(
                variable,
                shape,
                loss,
                [],
                x_init_value=RNG.randn(*shape),
                delta=1e-6,
                extra_feed_dict=feed,
            )
            assert error < 1e-6, (variable.name, error)
        others = {x: v for x, v in feed.items() if x is not xs[0]}
        error = compute_gradient_error(
            xs[0], [batch, depth], loss, [], x_init_value=feed[xs[0]], extra_feed_dict=others
        )
        assert error < 1e-6


@pytest.mark.timeout(60)
def test_a_small_lstm_learns_to_remember_the_first_bit():
    """The label is the sign of the first of 4 inputs: the state must carry it to the end."""
    steps, batch, units = 4, 32, 8
    rng = np.random.RandomState(0)
    tf.set_random_seed(1)
    xs = [tf.placeholder(tf.float32, [batch, 1]) for _ in range(steps)]
    labels = tf.placeholder(tf.float32, [batch, 1])
    cell = tf.nn.rnn_cell.BasicLSTMCell(units)
    outputs, _ = tf.nn.static_rnn(cell, xs, dtype=tf.float32)
    w = tf.get_variable("w", [units, 1])
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    logits = tf.matmul(outputs[-1], w) + b
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)

    def batch_feed():
        bits = rng.choice([-1.0, 1.0], size=(steps, batch, 1))
        return {**dict(zip(xs, bits)), labels: (bits[0] > 0).astype(np.float32)}

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = np.mean([sess.run(loss, batch_feed()) for _ in range(5)])
        for _ in range(150):
            sess.run(train, batch_feed())
        last = np.mean([sess.run(loss, batch_feed()) for _ in range(5)])
    assert first > 0.6  # chance: log 2 = 0.69
    assert last < 0.1


# -- errors ---------------------------------------------------------------------------------


def test_no_initial_state_and_no_dtype_is_refused():
    with pytest.raises(
        ValueError, match="If no initial_state is provided, dtype must be specified"
    ):
        tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(2), [tf.zeros([1, 2])])
    assert not tf.global_variables()


def test_inputs_must_be_a_non_empty_sequence():
    cell = tf.nn.rnn_cell.GRUCell(2)
    with pytest.raises(TypeError, match="inputs must be a sequence"):
        tf.nn.static_rnn(cell, tf.zeros([3, 1, 2]), dtype=tf.float32)
    with pytest.raises(ValueError, match="inputs must not be empty"):
        tf.nn.static_rnn(cell, [], dtype=tf.float32)
    with pytest.raises(TypeError, match="inputs must be a sequence"):
        tf.nn.static_bidirectional_rnn(cell, cell, tf.zeros([3, 1, 2]), dtype=tf.float32)


def test_an_unknown_input_depth_is_refused():
    with pytest.raises(
        ValueError, match=r"Input size \(dimension 0 of inputs\) must be accessible"
    ):
        tf.nn.static_rnn(
            tf.nn.rnn_cell.GRUCell(2), [tf.placeholder(tf.float32, [2, None])], dtype=tf.float32
        )


def test_sequence_length_must_be_a_vector():
    with pytest.raises(ValueError, match="sequence_length must be a vector of length batch_size"):
        tf.nn.static_rnn(
            tf.nn.rnn_cell.GRUCell(2),
            [tf.zeros([2, 2])],
            dtype=tf.float32,
            sequence_length=[[1, 2]],
        )


def test_something_that_is_not_a_cell_is_refused():
    with pytest.raises(
        TypeError,
        match=r"The argument 'cell' \(.*\) is not an RNNCell: 'output_size' property is "
        "missing, 'state_size' property is missing",
    ):
        tf.nn.static_rnn(lambda x, s: (x, s), [tf.zeros([1, 2])], dtype=tf.float32)
    with pytest.raises(TypeError, match="The argument 'cell_bw'"):
        tf.nn.static_bidirectional_rnn(tf.nn.rnn_cell.GRUCell(2), object(), [tf.zeros([1, 2])])
