"""tf.nn.dynamic_rnn, bidirectional_dynamic_rnn and the cell wrappers, against independent values.

Expected values come from `static_rnn` on the same cell and weights (TF's
own ``testDynamicEquivalentToStaticRNN`` idea), from `tests.ops.nn.rnn_oracle`
(the cells' formulas in numpy), from the arithmetic of the cells of TF's
rnn_test.py, from finite differences, and — for the training run — from
TensorFlow itself (see `test_an_lstm_on_dynamic_rnn_trains_as_in_tensorflow`).
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error
from tests.ops.nn import rnn_oracle as oracle
from tests.ops.nn.test_rnn import Plus1RNNCell, _load

pytestmark = pytest.mark.timeout(60)

RNG = np.random.RandomState(11)


def _values(build, x_value, seed=3):
    """``(values, gradients, variable names)`` of ``build(x)`` in a fresh graph."""
    from minitf.util import nest

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, x_value.shape)
        init = tf.random_uniform_initializer(-0.6, 0.6, seed=seed)
        with tf.variable_scope("net", initializer=init):
            fetched = nest.flatten(build(x))
        loss = tf.add_n([tf.reduce_sum(t * t) for t in fetched])
        variables = tf.trainable_variables()
        grads = tf.gradients(loss, [x] + variables)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values, grad_values = sess.run([fetched, grads], {x: x_value})
        return values, grad_values, [v.name for v in variables]


def _assert_same(a, b, rtol=1e-9, atol=1e-12):
    values_a, grads_a, names_a = a
    values_b, grads_b, names_b = b
    assert names_a == names_b
    assert len(values_a) == len(values_b)
    for got, want in zip(values_a + grads_a, values_b + grads_b):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _static(cell_fn, lengths=None, time_major=False):
    def build(x):
        steps = tf.unstack(x, axis=0 if time_major else 1)
        outputs, state = tf.nn.static_rnn(
            cell_fn(), steps, dtype=tf.float64, sequence_length=lengths
        )
        return tf.stack(outputs, axis=0 if time_major else 1), state

    return build


def _dynamic(cell_fn, lengths=None, time_major=False):
    def build(x):
        return tf.nn.dynamic_rnn(
            cell_fn(), x, dtype=tf.float64, sequence_length=lengths, time_major=time_major
        )

    return build


def _lstm():
    return tf.nn.rnn_cell.BasicLSTMCell(3)


def _stacked_lstms():
    return tf.nn.rnn_cell.MultiRNNCell(
        [tf.nn.rnn_cell.LSTMCell(3, use_peepholes=True), tf.nn.rnn_cell.BasicLSTMCell(2)]
    )


# -- dynamic_rnn computes what static_rnn does --------------------------------------------


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("lengths", [None, [4, 1, 3]])
def test_dynamic_rnn_equals_static_rnn_values_and_gradients(lengths, time_major):
    shape = (4, 3, 2) if time_major else (3, 4, 2)
    x_value = RNG.randn(*shape)
    static = _values(_static(_lstm, lengths, time_major), x_value)
    dynamic = _values(_dynamic(_lstm, lengths, time_major), x_value)
    _assert_same(static, dynamic)
    assert dynamic[2] == ["net/rnn/basic_lstm_cell/kernel:0", "net/rnn/basic_lstm_cell/bias:0"]


def test_dynamic_rnn_of_stacked_lstms_equals_static_rnn():
    x_value = RNG.randn(3, 5, 2)
    lengths = [5, 2, 0]
    static = _values(_static(_stacked_lstms, lengths), x_value)
    dynamic = _values(_dynamic(_stacked_lstms, lengths), x_value)
    _assert_same(static, dynamic)
    assert dynamic[2][0] == "net/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0"


@pytest.mark.parametrize("lengths", [None, [3, 1, 2]])
def test_bidirectional_dynamic_rnn_equals_static_bidirectional_rnn(lengths):
    x_value = RNG.randn(3, 3, 2)

    def static(x):
        outputs, fw, bw = tf.nn.static_bidirectional_rnn(
            _lstm(),
            tf.nn.rnn_cell.GRUCell(2),
            tf.unstack(x, axis=1),
            dtype=tf.float64,
            sequence_length=lengths,
        )
        return tf.stack(outputs, 1), fw, bw

    def dynamic(x):
        (out_fw, out_bw), (fw, bw) = tf.nn.bidirectional_dynamic_rnn(
            _lstm(), tf.nn.rnn_cell.GRUCell(2), x, dtype=tf.float64, sequence_length=lengths
        )
        return tf.concat([out_fw, out_bw], 2), fw, bw

    static_result, dynamic_result = _values(static, x_value), _values(dynamic, x_value)
    _assert_same(static_result, dynamic_result)
    assert dynamic_result[2][0] == "net/bidirectional_rnn/fw/basic_lstm_cell/kernel:0"
    assert dynamic_result[2][2] == "net/bidirectional_rnn/bw/gru_cell/gates/kernel:0"


def test_bidirectional_dynamic_rnn_time_major_reads_the_time_axis_backwards():
    cell_fw, cell_bw = Plus1RNNCell(), Plus1RNNCell()
    x_value = RNG.randn(4, 2, 5)  # [time, batch, depth]
    x = tf.constant(x_value, tf.float32)
    (out_fw, out_bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
        cell_fw, cell_bw, x, dtype=tf.float32, time_major=True
    )
    with tf.Session() as sess:
        got_fw, got_bw, s_fw, s_bw = sess.run([out_fw, out_bw, state_fw, state_bw])
    # Plus1's output is its input + 1 in both directions, put back in time order.
    np.testing.assert_allclose(got_fw, x_value + 1, rtol=1e-6)
    np.testing.assert_allclose(got_bw, x_value + 1, rtol=1e-6)
    np.testing.assert_array_equal(s_fw, 4 * np.ones((2, 5)))
    np.testing.assert_array_equal(s_bw, 4 * np.ones((2, 5)))


# -- against numpy by hand ------------------------------------------------------------------


def test_dynamic_basic_rnn_matches_numpy_with_an_initial_state():
    units, steps, batch, depth = 3, 5, 2, 4
    cell = tf.nn.rnn_cell.BasicRNNCell(units)
    x = tf.placeholder(tf.float32, [batch, None, depth])  # time known only at run time
    h0 = tf.placeholder(tf.float32, [batch, units])
    outputs, state = tf.nn.dynamic_rnn(cell, x, initial_state=h0)
    assert outputs.get_shape().as_list() == [batch, None, units]
    kernel, bias = RNG.randn(depth + units, units), RNG.randn(units)
    x_value, h_value = RNG.randn(batch, steps, depth), RNG.randn(batch, units)
    with tf.Session() as sess:
        _load(sess, cell, kernel, bias)
        got_outputs, got_state = sess.run([outputs, state], {x: x_value, h0: h_value})
    h = h_value
    for t in range(steps):
        out, h = oracle.basic_rnn_step(x_value[:, t], h, kernel, bias)
        np.testing.assert_allclose(got_outputs[:, t], out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state, h, rtol=1e-5, atol=1e-6)


def test_dynamic_lstm_with_sequence_length_matches_numpy():
    units, steps, batch, depth = 2, 5, 4, 3
    lengths = [5, 2, 0, 3]
    cell = tf.nn.rnn_cell.BasicLSTMCell(units)
    x = tf.placeholder(tf.float32, [None, steps, depth])
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    kernel, bias = RNG.randn(depth + units, 4 * units), RNG.randn(4 * units)
    x_value = RNG.randn(batch, steps, depth)
    with tf.Session() as sess:
        _load(sess, cell, kernel, bias)
        got_outputs, got_state = sess.run([outputs, state], {x: x_value})
    want_outputs, want_c, want_h = oracle.static_lstm(
        [x_value[:, t] for t in range(steps)], kernel, bias, units, lengths
    )
    np.testing.assert_allclose(got_outputs, np.stack(want_outputs, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.c, want_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.h, want_h, rtol=1e-5, atol=1e-6)


def test_dynamic_rnn_builds_one_loop_over_tensor_arrays():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(2), x, dtype=tf.float32)
    ops = tf.get_default_graph().get_operations()
    types = {op.type for op in ops}
    assert {"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayReadV3"} <= types
    assert {"TensorArrayWriteV3", "TensorArrayGatherV3", "LoopCond", "Transpose"} <= types
    names = {op.name for op in ops}
    assert "rnn/while/Exit_3" in names  # counter, time, the output flow, the state
    assert sum(op.type == "MatMul" for op in ops) == 2  # the cell's body, built once


# -- gradients ---------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_dynamic_lstm_gradients_match_finite_differences():
    units, steps, batch, depth = 2, 3, 2, 2
    cell = tf.nn.rnn_cell.BasicLSTMCell(units)
    x = tf.placeholder(tf.float64, [batch, steps, depth])
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[3, 2], dtype=tf.float64)
    loss = tf.reduce_sum(outputs * RNG.randn(batch, steps, units)) + tf.reduce_sum(
        state.c * RNG.randn(batch, units)
    )
    x_value = RNG.randn(batch, steps, depth)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for variable in cell.weights:
            shape = variable.shape.as_list()
            error = compute_gradient_error(
                variable,
                shape,
                loss,
                [],
                x_init_value=RNG.randn(*shape),
                delta=1e-6,
                extra_feed_dict={x: x_value},
            )
            assert error < 1e-6, (variable.name, error)
        error = compute_gradient_error(x, [batch, steps, depth], loss, [], x_init_value=x_value)
        assert error < 1e-6


# -- ports of TF's rnn_test.py -------------------------------------------------------------------


class ScalarStateRNNCell(tf.nn.rnn_cell.RNNCell):
    """TF rnn_test.py's cell with an int32 scalar state that counts the steps."""

    @property
    def output_size(self):
        return 1

    @property
    def state_size(self):
        return tf.TensorShape([])

    def zero_state(self, batch_size, dtype):
        return tf.zeros([], dtype=tf.int32)

    def __call__(self, input_, state, scope=None):
        return input_, state + 1


class UnbalancedOutputRNNCell(ScalarStateRNNCell):
    """TF rnn_test.py's cell whose output is a pair of different widths."""

    @property
    def output_size(self):
        return tf.TensorShape(1), tf.TensorShape(2)

    def __call__(self, input_, state, scope=None):
        return (input_, tf.concat([input_, input_], axis=-1)), state + 1


def test_tf_rnn_invalid_sequence_length_shape():
    # TF rnn_test.RNNTest.testInvalidSequenceLengthShape.
    inputs = [tf.placeholder(tf.float32, shape=(3, 4))]
    with pytest.raises(ValueError, match="must be a vector"):
        tf.nn.dynamic_rnn(Plus1RNNCell(), tf.stack(inputs), dtype=tf.float32, sequence_length=[[4]])


def test_tf_rnn_batch_size_from_input():
    # TF rnn_test.RNNTest.testBatchSizeFromInput.
    cell = Plus1RNNCell()
    inputs = tf.placeholder(tf.float32, shape=(3, 4, 5))
    outputs, state = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
    assert outputs.shape[0] == 3 and state.shape[0] == 3
    initial_state = tf.placeholder(tf.float32, shape=(3, 5))
    outputs, state = tf.nn.dynamic_rnn(cell, inputs, initial_state=initial_state)
    assert outputs.shape[0] == 3 and state.shape[0] == 3
    inputs = tf.placeholder(tf.float32, shape=(None, 4, 5))
    outputs, state = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
    assert outputs.shape.dims[0].value is None and state.shape.dims[0].value is None
    initial_state = tf.placeholder(tf.float32, shape=(None, 5))
    outputs, state = tf.nn.dynamic_rnn(cell, inputs, initial_state=initial_state)
    assert outputs.shape.dims[0].value is None and state.shape.dims[0].value is None


def test_tf_rnn_scalar_state_is_accepted():
    # TF rnn_test.RNNTest.testScalarStateIsAccepted.
    inputs = tf.placeholder(tf.float32, shape=(1, 4, 1))
    outputs, state = tf.nn.dynamic_rnn(
        ScalarStateRNNCell(), inputs, dtype=tf.float32, sequence_length=[4]
    )
    with tf.Session() as sess:
        outputs, state = sess.run([outputs, state], {inputs: [[[1], [2], [3], [4]]]})
    np.testing.assert_array_equal(outputs, [[[1], [2], [3], [4]]])
    assert state == 4


def test_tf_rnn_unbalanced_output_is_accepted():
    # TF rnn_test.RNNTest.testUnbalancedOutputIsAccepted.
    inputs = tf.placeholder(tf.float32, shape=(1, 4, 1))
    outputs, state = tf.nn.dynamic_rnn(
        UnbalancedOutputRNNCell(), inputs, dtype=tf.float32, sequence_length=[4]
    )
    with tf.Session() as sess:
        outputs, state = sess.run([outputs, state], {inputs: [[[1], [2], [3], [4]]]})
    np.testing.assert_array_equal(outputs[0], [[[1], [2], [3], [4]]])
    np.testing.assert_array_equal(outputs[1], [[[1, 1], [2, 2], [3, 3], [4, 4]]])
    assert state == 4


def test_tf_rnn_dynamic_calculation_stops_each_sequence_at_its_length():
    # TF rnn_test.RNNTest.testDynamicCalculation's arithmetic, on the loop.
    batch_size, input_size, max_length = 2, 5, 8
    inputs = tf.placeholder(tf.float32, shape=(batch_size, max_length, input_size))
    sequence_length = tf.placeholder(tf.int64)
    outputs, state = tf.nn.dynamic_rnn(
        Plus1RNNCell(), inputs, sequence_length=sequence_length, dtype=tf.float32
    )
    x_value = RNG.randn(batch_size, max_length, input_size)
    with tf.Session() as sess:
        got, got_state = sess.run([outputs, state], {inputs: x_value, sequence_length: [2, 3]})
    expected = np.where((np.arange(max_length) < np.array([[2], [3]]))[..., None], x_value + 1, 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_array_equal(got_state, [[2.0] * 5, [3.0] * 5])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Expected shape for Tensor"):
            sess.run(outputs, {inputs: x_value, sequence_length: [2, 3, 4]})


# -- wrappers ----------------------------------------------------------------------------------


def test_dropout_wrapper_with_keep_prob_one_adds_no_dropout():
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicRNNCell(2))
    x = tf.zeros([3, 4, 2])
    tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    assert not any("dropout" in op.name for op in tf.get_default_graph().get_operations())
    assert [v.name for v in cell.trainable_weights] == [
        "rnn/basic_rnn_cell/kernel:0",
        "rnn/basic_rnn_cell/bias:0",
    ]


def test_dropout_wrapper_drops_and_scales_with_a_new_mask_each_step():
    keep = 0.5
    cell = tf.nn.rnn_cell.DropoutWrapper(Plus1RNNCell(), output_keep_prob=keep, seed=7)
    x_value = np.ones((64, 6, 5), np.float32)
    outputs, _ = tf.nn.dynamic_rnn(cell, tf.constant(x_value), dtype=tf.float32)
    with tf.Session() as sess:
        got = sess.run(outputs)
    # Each entry is either dropped or (1 + 1) / keep.
    assert set(np.unique(got)) <= {0.0, 2.0 / keep}
    kept = got != 0
    assert 0.4 < kept.mean() < 0.6
    assert not np.array_equal(kept[:, 0], kept[:, 1])  # another mask at the next step


def test_dropout_wrapper_leaves_an_lstm_memory_alone():
    inner = tf.nn.rnn_cell.BasicLSTMCell(3)
    cell = tf.nn.rnn_cell.DropoutWrapper(inner, state_keep_prob=0.5, seed=1)
    x = tf.constant(RNG.randn(8, 1, 2), tf.float32)
    _, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    _, plain = tf.nn.dynamic_rnn(inner, x, dtype=tf.float32, scope="rnn")  # same weights
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, want = sess.run([state, plain])
    np.testing.assert_allclose(got.c, want.c, rtol=1e-6)
    assert set(np.unique(np.round(got.h / want.h, 5))) <= {0.0, 2.0}


def test_dropout_wrapper_seed_is_tfs_derived_seed():
    cell = tf.nn.rnn_cell.DropoutWrapper(Plus1RNNCell(), input_keep_prob=0.5, seed=42)
    # TF: int(md5(b"42input_0").hexdigest()[:8], 16) & 0x7FFFFFFF.
    import hashlib

    want = int(hashlib.md5(b"42input_0").hexdigest()[:8], 16) & 0x7FFFFFFF
    assert cell._gen_seed("input", 0) == want


def test_residual_wrapper_adds_the_input_to_the_output():
    inner = tf.nn.rnn_cell.BasicRNNCell(3)
    x = tf.constant(RNG.randn(2, 4, 3), tf.float32)
    outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.ResidualWrapper(inner), x, dtype=tf.float32)
    plain, _ = tf.nn.dynamic_rnn(inner, x, dtype=tf.float32, scope="rnn")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, want, x_value = sess.run([outputs, plain, x])
    np.testing.assert_allclose(got, want + x_value, rtol=1e-5, atol=1e-6)


def test_device_wrapper_places_the_cell_ops():
    cell = tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.BasicRNNCell(2), "/device:CPU:0")
    tf.nn.dynamic_rnn(cell, tf.zeros([1, 2, 2]), dtype=tf.float32)
    matmuls = [op for op in tf.get_default_graph().get_operations() if op.type == "MatMul"]
    assert matmuls and all(op.device == "/device:CPU:0" for op in matmuls)


# -- an LSTM trained on dynamic_rnn, against TensorFlow ------------------------------------------

# Made once by running this test's network, the same script line for line,
# with TensorFlow 2.21 as TF1 (``tensorflow.compat.v1`` with
# ``disable_v2_behavior()``; the cell is TF's legacy ``LSTMCell``): the loss
# before each of the 10 steps of plain SGD, and the variables after them.
TF_LOSSES = [
    0.693183,
    0.69012612,
    0.68713421,
    0.68409377,
    0.68090874,
    0.67748976,
    0.67374617,
    0.66958088,
    0.66488659,
    0.65954435,
]
TF_KERNEL = [
    [
        -0.01550058,
        0.26637521,
        0.46766466,
        0.34489489,
        0.17762533,
        -0.11717144,
        -0.38397431,
        -0.38403338,
        -0.25490746,
        0.01166897,
        0.28137612,
        0.4042573,
        0.32106727,
        0.13601306,
        -0.01218689,
        -0.31571257,
    ],
    [
        -0.41302624,
        -0.23950894,
        0.09751396,
        0.27305427,
        0.39336106,
        0.34442973,
        0.25032324,
        -0.18394032,
        -0.35829896,
        -0.38686067,
        -0.21326891,
        0.03137911,
        0.24866009,
        0.40198237,
        0.46042517,
        0.15326934,
    ],
    [
        -0.18508385,
        -0.350701,
        -0.31702012,
        -0.22142887,
        -0.03823947,
        0.2721138,
        0.76508832,
        0.23423916,
        0.10283082,
        -0.16352759,
        -0.31584263,
        -0.37498438,
        -0.26104644,
        0.03622915,
        0.40628868,
        0.44041961,
    ],
    [
        0.32556501,
        0.10186265,
        -0.15881833,
        -0.36380494,
        -0.37076816,
        -0.22921164,
        -0.00435026,
        0.31279171,
        0.40052965,
        0.3242242,
        0.09284134,
        -0.17902866,
        -0.36988217,
        -0.38256535,
        -0.20778176,
        0.04809085,
    ],
    [
        0.289967,
        0.39975563,
        0.33350053,
        0.0886003,
        -0.17626183,
        -0.3707498,
        -0.39340976,
        -0.20337161,
        0.05471237,
        0.29733273,
        0.39899787,
        0.31422815,
        0.0792201,
        -0.1882658,
        -0.35673526,
        -0.37656122,
    ],
    [
        -0.21141668,
        0.06173916,
        0.31832579,
        0.40079987,
        0.31000972,
        0.07593931,
        -0.16964108,
        -0.37931043,
        -0.37676933,
        -0.201915,
        0.06932787,
        0.30493909,
        0.39633298,
        0.30876702,
        0.09275771,
        -0.19565924,
    ],
    [
        -0.37628421,
        -0.37482208,
        -0.20551613,
        0.07367074,
        0.29045981,
        0.4036819,
        0.38003811,
        0.03095509,
        -0.20821142,
        -0.37913752,
        -0.3685545,
        -0.18880394,
        0.08136114,
        0.31325775,
        0.3957144,
        0.30074686,
    ],
]
TF_BIAS = [
    -0.01204106,
    0.00129416,
    0.13510716,
    -0.00862478,
    0.00297119,
    0.02037882,
    -0.04215261,
    0.0122836,
    0.00841011,
    -0.00218954,
    0.02802456,
    -0.03037892,
    -0.00182328,
    -0.00200289,
    0.11204438,
    -0.01284286,
]
TF_W = [
    [0.44986719, 0.27693084],
    [-0.52311838, -0.26487204],
    [-0.52830517, 0.72897375],
    [0.345465, 0.20633815],
]
TF_B = [0.02535689, -0.02535678]


@pytest.mark.timeout(120)
def test_an_lstm_on_dynamic_rnn_trains_as_in_tensorflow():
    units, depth, time, batch, classes, steps, learning_rate = 4, 3, 5, 6, 2, 10, 2.0
    t = np.arange(batch * time * depth, dtype=np.float64)
    x_value = (np.sin(0.37 * t) + 0.1 * np.cos(1.3 * t)).reshape(batch, time, depth)
    lengths_value = np.array([5, 3, 4, 5, 2, 1], np.int32)
    y_value = np.array([0, 1, 1, 0, 1, 0], np.int32)
    k0 = 0.4 * np.sin(np.arange((depth + units) * 4 * units) * 0.7)
    w0 = 0.5 * np.cos(np.arange(units * classes) * 1.1)

    x = tf.placeholder(tf.float32, [batch, time, depth])
    lengths = tf.placeholder(tf.int32, [batch])
    y = tf.placeholder(tf.int32, [batch])
    kernel_init = tf.constant_initializer(k0.reshape(depth + units, 4 * units).astype(np.float32))
    cell = tf.nn.rnn_cell.LSTMCell(units, initializer=kernel_init)
    _, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    w = tf.get_variable("w", initializer=tf.constant(w0.reshape(units, classes).astype(np.float32)))
    b = tf.get_variable("b", [classes], initializer=tf.zeros_initializer())
    logits = tf.matmul(state.h, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss)
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0", "w:0", "b:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: x_value.astype(np.float32), lengths: lengths_value, y: y_value}
        losses = [sess.run([loss, train], feed)[0] for _ in range(steps)]
        final = sess.run(tf.trainable_variables())
    np.testing.assert_allclose(losses, TF_LOSSES, atol=1e-5)
    for got, want in zip(final, [TF_KERNEL, TF_BIAS, TF_W, TF_B]):
        np.testing.assert_allclose(got, want, atol=1e-5)
