"""tf.nn.rnn_cell: each cell against its formula in numpy, TF's variable names, ports of TF's tests.

The expected values come from `tests.ops.nn.rnn_oracle` (the formulas in
numpy, fed the same weights) or are the literals of TF's own
``core_rnn_cell_test.py`` (``constant_initializer(0.5)`` cases).
"""

import numpy as np
import pytest

import minitf as tf
from tests.ops.nn import rnn_oracle as oracle

pytestmark = pytest.mark.timeout(60)

RNG = np.random.RandomState(42)
X = RNG.randn(3, 2)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def _names(variables):
    return [v.name for v in variables]


def _const(array):
    return tf.constant_initializer(np.asarray(array, dtype=np.float32))


def test_tf_names_the_cells_in_both_namespaces():
    assert tf.nn.rnn_cell.BasicLSTMCell is tf.contrib.rnn.BasicLSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    for name in ("RNNCell", "BasicRNNCell", "GRUCell", "LSTMCell", "MultiRNNCell"):
        assert getattr(tf.nn.rnn_cell, name) is getattr(tf.contrib.rnn, name)


# -- each cell against its formula -------------------------------------------------------


def test_basic_rnn_cell_is_tanh_of_inputs_and_state_times_kernel_plus_bias():
    kernel, bias = RNG.randn(2 + 4, 4), RNG.randn(4)
    x = tf.placeholder(tf.float32, [3, 2])
    h = tf.placeholder(tf.float32, [3, 4])
    with tf.variable_scope("root/basic_rnn_cell"):  # the variables exist before the cell
        tf.get_variable("kernel", initializer=kernel.astype(np.float32))
        tf.get_variable("bias", initializer=bias.astype(np.float32))
    cell = tf.nn.rnn_cell.BasicRNNCell(4, reuse=True)
    with tf.variable_scope("root"):
        out, state = cell(x, h)
    assert len(tf.global_variables()) == 2
    h_value = RNG.randn(3, 4)
    got_out, got_state = _run([out, state], {x: X, h: h_value})
    expected, _ = oracle.basic_rnn_step(X, h_value, kernel, bias)
    np.testing.assert_allclose(got_out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state, expected, rtol=1e-5, atol=1e-6)


def test_basic_rnn_cell_variables_have_tf_names_shapes_and_a_zero_bias():
    cell = tf.nn.rnn_cell.BasicRNNCell(4)
    with tf.variable_scope("root", initializer=tf.constant_initializer(0.5)):
        cell(tf.zeros([1, 3]), tf.zeros([1, 4]))
    assert _names(cell.trainable_variables) == [
        "root/basic_rnn_cell/kernel:0",
        "root/basic_rnn_cell/bias:0",
    ]
    assert not cell.non_trainable_variables
    assert [v.shape.as_list() for v in cell.weights] == [[7, 4], [4]]
    kernel, bias = _run(cell.weights)
    np.testing.assert_array_equal(kernel, np.full((7, 4), 0.5))
    np.testing.assert_array_equal(bias, np.zeros(4))


def test_gru_cell_against_numpy_with_tf_variable_layout():
    units = 3
    gk, gb = RNG.randn(2 + units, 2 * units), RNG.randn(2 * units)
    ck, cb = RNG.randn(2 + units, units), RNG.randn(units)
    x = tf.placeholder(tf.float32, [3, 2])
    h = tf.placeholder(tf.float32, [3, units])
    cell = tf.nn.rnn_cell.GRUCell(units, kernel_initializer=None)
    out, _ = cell(x, h)
    assert _names(cell.weights) == [
        "gru_cell/gates/kernel:0",
        "gru_cell/gates/bias:0",
        "gru_cell/candidate/kernel:0",
        "gru_cell/candidate/bias:0",
    ]
    h_value = RNG.randn(3, units)
    with tf.Session() as sess:
        for variable, value in zip(cell.weights, (gk, gb, ck, cb)):
            variable.load(value.astype(np.float32), sess)
        got = sess.run(out, {x: X, h: h_value})
    expected, _ = oracle.gru_step(X, h_value, gk, gb, ck, cb)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_gru_gate_bias_starts_at_one_and_candidate_bias_at_zero():
    cell = tf.nn.rnn_cell.GRUCell(2)
    cell(tf.zeros([1, 3]), tf.zeros([1, 2]))
    _, gate_bias, _, candidate_bias = _run(cell.weights)
    np.testing.assert_array_equal(gate_bias, np.ones(4))
    np.testing.assert_array_equal(candidate_bias, np.zeros(2))


def test_gru_bias_initializer_replaces_both_defaults():
    cell = tf.nn.rnn_cell.GRUCell(2, bias_initializer=tf.constant_initializer(0.25))
    cell(tf.zeros([1, 3]), tf.zeros([1, 2]))
    _, gate_bias, _, candidate_bias = _run(cell.weights)
    np.testing.assert_array_equal(gate_bias, np.full(4, 0.25))
    np.testing.assert_array_equal(candidate_bias, np.full(2, 0.25))


@pytest.mark.parametrize("forget_bias", [1.0, 0.0, 2.5])
def test_basic_lstm_cell_gates_are_i_j_f_o(forget_bias):
    units = 3
    kernel, bias = RNG.randn(2 + units, 4 * units), RNG.randn(4 * units)
    x = tf.placeholder(tf.float32, [3, 2])
    c = tf.placeholder(tf.float32, [3, units])
    h = tf.placeholder(tf.float32, [3, units])
    with tf.variable_scope("root", initializer=tf.zeros_initializer()):
        cell = tf.nn.rnn_cell.BasicLSTMCell(units, forget_bias=forget_bias)
        out, state = cell(x, tf.nn.rnn_cell.LSTMStateTuple(c, h))
    assert _names(cell.weights) == ["root/basic_lstm_cell/kernel:0", "root/basic_lstm_cell/bias:0"]
    assert [v.shape.as_list() for v in cell.weights] == [[2 + units, 4 * units], [4 * units]]
    assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
    c_value, h_value = RNG.randn(3, units), RNG.randn(3, units)
    with tf.Session() as sess:
        cell.weights[0].load(kernel.astype(np.float32), sess)
        cell.weights[1].load(bias.astype(np.float32), sess)
        got = sess.run([out, state.c, state.h], {x: X, c: c_value, h: h_value})
    expected = oracle.lstm_step(X, c_value, h_value, kernel, bias, forget_bias)
    new_h, new_c, _ = expected
    for value, want in zip(got, (new_h, new_c, new_h)):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


def _lstm_with_loaded_weights(cell, x, state, values):
    out, new_state = cell(x, state)
    sess = tf.Session()
    for variable, value in zip(cell.weights, values):
        variable.load(np.asarray(value, dtype=np.float32), sess)
    return sess, out, new_state


def test_lstm_cell_with_peepholes_and_projection_against_numpy():
    units, proj = 4, 2
    kernel, bias = RNG.randn(2 + proj, 4 * units), RNG.randn(4 * units)
    w_f, w_i, w_o = RNG.randn(units), RNG.randn(units), RNG.randn(units)
    proj_kernel = RNG.randn(units, proj)
    cell = tf.nn.rnn_cell.LSTMCell(units, use_peepholes=True, num_proj=proj)
    assert cell.state_size == (units, proj) and cell.output_size == proj
    x = tf.placeholder(tf.float32, [3, 2])
    state = cell.zero_state(3, tf.float32)
    sess, out, new_state = _lstm_with_loaded_weights(
        cell, x, state, [kernel, bias, w_f, w_i, w_o, proj_kernel]
    )
    assert _names(cell.weights) == [
        "lstm_cell/kernel:0",
        "lstm_cell/bias:0",
        "lstm_cell/w_f_diag:0",
        "lstm_cell/w_i_diag:0",
        "lstm_cell/w_o_diag:0",
        "lstm_cell/projection/kernel:0",
    ]
    with sess:
        got_h, got_c = sess.run([out, new_state.c], {x: X})
    zeros_c, zeros_h = np.zeros((3, units)), np.zeros((3, proj))
    want_h, want_c, _ = oracle.lstm_step(
        X, zeros_c, zeros_h, kernel, bias, peepholes=(w_f, w_i, w_o), proj=proj_kernel
    )
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-5, atol=1e-6)


def test_lstm_cell_clips_the_cell_state_and_the_projection():
    units = 2
    kernel = np.full((2 + 1, 4 * units), 3.0)
    cell = tf.nn.rnn_cell.LSTMCell(units, cell_clip=0.5, num_proj=1, proj_clip=0.1)
    x = tf.placeholder(tf.float32, [1, 2])
    state = (tf.constant(np.full((1, units), 5.0, np.float32)), tf.zeros([1, 1]))
    sess, out, new_state = _lstm_with_loaded_weights(
        cell, x, state, [kernel, np.zeros(4 * units), np.ones((units, 1))]
    )
    with sess:
        got_out, got_c = sess.run([out, new_state.c], {x: np.ones((1, 2))})
    np.testing.assert_allclose(got_c, [[0.5, 0.5]])  # unclipped: 5 * sigmoid(7) + ... > 5
    np.testing.assert_allclose(got_out, [[0.1]])


def test_lstm_cell_without_options_equals_basic_lstm_cell():
    x = tf.constant(X, tf.float32)
    with tf.variable_scope("s", initializer=tf.constant_initializer(0.3)):
        a, _ = tf.nn.rnn_cell.BasicLSTMCell(3)(
            x, tf.nn.rnn_cell.BasicLSTMCell(3).zero_state(3, tf.float32)
        )
        b, _ = tf.nn.rnn_cell.LSTMCell(3)(x, tf.nn.rnn_cell.LSTMCell(3).zero_state(3, tf.float32))
    got_a, got_b = _run([a, b])
    np.testing.assert_allclose(got_a, got_b, rtol=1e-6)


def test_zero_state_shapes_and_structure():
    lstm = tf.nn.rnn_cell.BasicLSTMCell(3)
    zero = lstm.zero_state(5, tf.float32)
    assert isinstance(zero, tf.nn.rnn_cell.LSTMStateTuple)
    assert zero.c.shape.as_list() == [5, 3] and zero.dtype == tf.float32
    batch = tf.placeholder(tf.int32, [])
    multi = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(2), lstm])
    dynamic = multi.zero_state(batch, tf.float64)
    assert dynamic[0].shape.as_list() == [None, 2]
    values = _run(dynamic, {batch: 4})
    np.testing.assert_array_equal(values[0], np.zeros((4, 2)))
    np.testing.assert_array_equal(values[1].h, np.zeros((4, 3)))
    concatenated = tf.nn.rnn_cell.BasicLSTMCell(3, state_is_tuple=False).zero_state(2, tf.float32)
    assert concatenated.shape.as_list() == [2, 6]


# -- variable scopes and reuse ------------------------------------------------------------


def test_a_second_call_reuses_the_variables():
    cell = tf.nn.rnn_cell.GRUCell(2)
    x = tf.zeros([1, 2])
    h, _ = cell(x, tf.zeros([1, 2]))
    cell(x, h)
    assert len(tf.global_variables()) == 4


def test_two_cells_in_one_scope_get_unique_scopes_and_names():
    first, second = tf.nn.rnn_cell.BasicLSTMCell(2), tf.nn.rnn_cell.BasicLSTMCell(2)
    assert (first.name, second.name) == ("basic_lstm_cell", "basic_lstm_cell_1")
    x = tf.zeros([1, 2])
    first(x, first.zero_state(1, tf.float32))
    second(x, second.zero_state(1, tf.float32))
    assert [v.op.name for v in tf.global_variables()] == [
        "basic_lstm_cell/kernel",
        "basic_lstm_cell/bias",
        "basic_lstm_cell_1/kernel",
        "basic_lstm_cell_1/bias",
    ]
    assert second.scope_name == "basic_lstm_cell_1"


def test_scope_argument_names_the_cells_scope():
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    cell(tf.zeros([1, 2]), tf.zeros([1, 2]), scope="my_rnn")
    assert _names(cell.weights) == ["my_rnn/kernel:0", "my_rnn/bias:0"]


def test_a_cell_called_elsewhere_keeps_its_first_scope():
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    with tf.variable_scope("first"):
        cell(tf.zeros([1, 2]), tf.zeros([1, 2]))
    with tf.variable_scope("second"):
        cell(tf.zeros([1, 2]), tf.zeros([1, 2]))
    assert _names(tf.global_variables()) == [
        "first/basic_rnn_cell/kernel:0",
        "first/basic_rnn_cell/bias:0",
    ]


def test_reuse_true_finds_the_variables_of_another_cell():
    x = tf.zeros([1, 2])
    original = tf.nn.rnn_cell.BasicRNNCell(2, name="shared")
    original(x, tf.zeros([1, 2]))
    twin = tf.nn.rnn_cell.BasicRNNCell(2, name="shared", reuse=True)
    twin(x, tf.zeros([1, 2]))
    assert len(tf.global_variables()) == 2
    assert all(a is b for a, b in zip(original.weights, twin.weights))


def test_a_second_cell_of_the_same_name_without_reuse_is_refused():
    x = tf.zeros([1, 2])
    tf.nn.rnn_cell.BasicRNNCell(2)(x, tf.zeros([1, 2]), scope="taken")
    with pytest.raises(ValueError, match="taken/kernel already exists"):
        tf.nn.rnn_cell.BasicRNNCell(2)(x, tf.zeros([1, 2]), scope="taken")


class GetVariableCell(tf.nn.rnn_cell.RNNCell):
    """An old-style cell: it asks for its variable with tf.get_variable inside call."""

    state_size = property(lambda self: 2)
    output_size = property(lambda self: 2)

    def call(self, inputs, state):
        w = tf.get_variable("w", [2, 2], initializer=tf.constant_initializer(2.0))
        out = tf.matmul(inputs, w) + state
        return out, out


def test_an_rnn_cell_that_calls_get_variable_reuses_it_on_the_second_call():
    cell = GetVariableCell()
    x = tf.ones([1, 2])
    with tf.variable_scope("outer"):
        out, state = cell(x, tf.zeros([1, 2]))
        out, state = cell(x, state)
    assert _names(tf.global_variables()) == ["outer/get_variable_cell/w:0"]
    assert _names(cell.trainable_weights) == ["outer/get_variable_cell/w:0"]
    np.testing.assert_allclose(_run(out), [[8.0, 8.0]])  # 4 + (4 + 0)


def test_variables_take_the_inputs_dtype():
    cell = tf.nn.rnn_cell.BasicLSTMCell(2)
    x = tf.zeros([1, 3], tf.float64)
    out, _ = cell(x, cell.zero_state(1, tf.float64))
    assert cell.dtype == tf.float64
    assert all(v.dtype.base_dtype == tf.float64 for v in cell.weights)
    assert out.dtype == tf.float64


# -- MultiRNNCell and ports of TF's core_rnn_cell_test.py ----------------------------------


def test_multi_rnn_cell_stacks_layers_under_cell_k():
    cells = [tf.nn.rnn_cell.BasicRNNCell(3), tf.nn.rnn_cell.BasicRNNCell(2)]
    k0, b0, k1, b1 = RNG.randn(2 + 3, 3), RNG.randn(3), RNG.randn(3 + 2, 2), RNG.randn(2)
    multi = tf.nn.rnn_cell.MultiRNNCell(cells)
    assert multi.state_size == (3, 2) and multi.output_size == 2
    x = tf.placeholder(tf.float32, [3, 2])
    with tf.variable_scope("root"):
        out, (s0, s1) = multi(x, multi.zero_state(3, tf.float32))
    assert _names(multi.trainable_weights) == [
        "root/multi_rnn_cell/cell_0/basic_rnn_cell/kernel:0",
        "root/multi_rnn_cell/cell_0/basic_rnn_cell/bias:0",
        "root/multi_rnn_cell/cell_1/basic_rnn_cell/kernel:0",
        "root/multi_rnn_cell/cell_1/basic_rnn_cell/bias:0",
    ]
    with tf.Session() as sess:
        for variable, value in zip(multi.weights, (k0, b0, k1, b1)):
            variable.load(value.astype(np.float32), sess)
        got_out, got_s0 = sess.run([out, s0], {x: X})
    h0, _ = oracle.basic_rnn_step(X, np.zeros((3, 3)), k0, b0)
    h1, _ = oracle.basic_rnn_step(h0, np.zeros((3, 2)), k1, b1)
    np.testing.assert_allclose(got_s0, h0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_out, h1, rtol=1e-5, atol=1e-6)


def test_tf_gru_cell_smoke_values():
    # TF core_rnn_cell_test.testGRUCell.
    x2 = tf.placeholder(tf.float32, [1, 2])
    x3 = tf.placeholder(tf.float32, [1, 3])
    m = tf.placeholder(tf.float32, [1, 2])
    with tf.variable_scope("root", initializer=tf.constant_initializer(0.5)):
        g2, _ = tf.nn.rnn_cell.GRUCell(2)(x2, m)
    with tf.variable_scope("other", initializer=tf.constant_initializer(0.5)):
        g3, _ = tf.nn.rnn_cell.GRUCell(2)(x3, m)
    feed = {x2: [[1.0, 1.0]], x3: [[1.0, 1.0, 1.0]], m: [[0.1, 0.1]]}
    res2, res3 = _run([g2, g3], feed)
    np.testing.assert_allclose(res2, [[0.175991, 0.175991]], rtol=1e-5)
    np.testing.assert_allclose(res3, [[0.156736, 0.156736]], rtol=1e-5)


@pytest.mark.parametrize("tuple_outer", [False, True])
def test_tf_basic_lstm_cell_smoke_values(tuple_outer):
    # TF core_rnn_cell_test.testBasicLSTMCell and testBasicLSTMCellWithStateTuple.
    x = tf.placeholder(tf.float32, [1, 2])
    with tf.variable_scope("root", initializer=tf.constant_initializer(0.5)):
        cells = [tf.nn.rnn_cell.BasicLSTMCell(2, state_is_tuple=False) for _ in range(2)]
        cell = tf.nn.rnn_cell.MultiRNNCell(cells, state_is_tuple=tuple_outer)
        if tuple_outer:
            m = (tf.placeholder(tf.float32, [1, 4]), tf.placeholder(tf.float32, [1, 4]))
            feed = {x: [[1.0, 1.0]], m[0]: 0.1 * np.ones([1, 4]), m[1]: 0.1 * np.ones([1, 4])}
        else:
            m = tf.placeholder(tf.float32, [1, 8])
            feed = {x: [[1.0, 1.0]], m: 0.1 * np.ones([1, 8])}
        g, out_m = cell(x, m)
    assert [v.op.name for v in tf.global_variables()] == [
        "root/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
        "root/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
        "root/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
        "root/multi_rnn_cell/cell_1/basic_lstm_cell/bias",
    ]
    res_g, res_m = _run([g, out_m], feed)
    np.testing.assert_allclose(res_g, [[0.24024698, 0.24024698]], rtol=1e-5)
    expected_mem = [0.68967271, 0.68967271, 0.44848421, 0.44848421]
    expected_mem += [0.39897051, 0.39897051, 0.24024698, 0.24024698]
    np.testing.assert_allclose(
        np.concatenate(res_m, 1) if tuple_outer else res_m, [expected_mem], rtol=1e-5
    )


def test_tf_state_tuple_types():
    # TF core_rnn_cell_test.testBasicLSTMCellStateTupleType.
    x = tf.zeros([1, 2])
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(2) for _ in range(2)])
    assert all(isinstance(s, tf.nn.rnn_cell.LSTMStateTuple) for s in cell.state_size)
    m = (tf.zeros([1, 2]),) * 2
    _, (out_m0, out_m1) = cell(x, (m, m))  # plain tuples in, LSTMStateTuples out
    assert isinstance(out_m0, tf.nn.rnn_cell.LSTMStateTuple)
    assert isinstance(out_m1, tf.nn.rnn_cell.LSTMStateTuple)


def test_tf_lstm_cell_with_projection_and_concatenated_state():
    # TF core_rnn_cell_test.testLSTMCell and testLSTMCellVariables.
    num_units, num_proj, batch_size = 8, 6, 3
    state_size = num_units + num_proj
    x = tf.placeholder(tf.float32, [batch_size, 2])
    m = tf.placeholder(tf.float32, [batch_size, state_size])
    with tf.variable_scope("root", initializer=tf.constant_initializer(0.5)):
        cell = tf.nn.rnn_cell.LSTMCell(num_units, num_proj=num_proj, state_is_tuple=False)
        output, state = cell(x, m)
    assert [v.op.name for v in tf.global_variables()] == [
        "root/lstm_cell/kernel",
        "root/lstm_cell/bias",
        "root/lstm_cell/projection/kernel",
    ]
    feed = {x: [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], m: 0.1 * np.ones((batch_size, state_size))}
    res_out, res_state = _run([output, state], feed)
    assert res_out.shape == (batch_size, num_proj)
    assert res_state.shape == (batch_size, state_size)
    # The same numbers from numpy: c is the first num_units columns, h the rest.
    kernel = np.full((2 + num_proj, 4 * num_units), 0.5)
    c0, h0 = 0.1 * np.ones((3, num_units)), 0.1 * np.ones((3, num_proj))
    want_h, want_c, _ = oracle.lstm_step(
        feed[x], c0, h0, kernel, np.zeros(4 * num_units), proj=np.full((num_units, num_proj), 0.5)
    )
    np.testing.assert_allclose(res_out, want_h, rtol=1e-5)
    np.testing.assert_allclose(res_state, np.concatenate([want_c, want_h], 1), rtol=1e-5)


# -- errors ----------------------------------------------------------------------------------


def test_an_integer_dtype_is_refused():
    with pytest.raises(
        ValueError,
        match="RNN cell only supports floating point inputs, but saw dtype: <dtype: 'int32'>",
    ):
        tf.nn.rnn_cell.BasicLSTMCell(2, dtype=tf.int32)


def test_integer_inputs_are_refused():
    cell = tf.nn.rnn_cell.GRUCell(2)
    with pytest.raises(ValueError, match="RNN cell only supports floating point inputs"):
        cell(tf.zeros([1, 2], tf.int32), tf.zeros([1, 2]))


def test_inputs_of_rank_3_are_refused():
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    with pytest.raises(
        ValueError,
        match="Input 0 of layer basic_rnn_cell is incompatible with the layer: "
        "expected ndim=2, found ndim=3",
    ):
        cell(tf.zeros([1, 2, 3]), tf.zeros([1, 2]))


def test_an_unknown_input_depth_is_refused():
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    with pytest.raises(ValueError, match=r"Expected inputs.shape\[-1\] to be known"):
        cell(tf.placeholder(tf.float32, [1, None]), tf.zeros([1, 2]))


def test_multi_rnn_cell_errors():
    with pytest.raises(ValueError, match="Must specify at least one cell for MultiRNNCell."):
        tf.nn.rnn_cell.MultiRNNCell([])
    with pytest.raises(TypeError, match="cells must be a list or tuple"):
        tf.nn.rnn_cell.MultiRNNCell(tf.nn.rnn_cell.GRUCell(2))
    with pytest.raises(
        ValueError,
        match="Some cells return tuples of states, but the flag state_is_tuple is not set",
    ):
        tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(2)], state_is_tuple=False)
    multi = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(2)])
    with pytest.raises(ValueError, match="Expected state to be a tuple of length 1"):
        multi(tf.zeros([1, 2]), tf.zeros([1, 2]))


def test_lstm_state_tuple_dtype_must_agree():
    state = tf.nn.rnn_cell.LSTMStateTuple(tf.zeros([1]), tf.zeros([1], tf.float64))
    with pytest.raises(TypeError, match="Inconsistent internal state"):
        _ = state.dtype


def test_scope_name_before_the_first_call_is_an_error():
    with pytest.raises(ValueError, match="has not been used yet"):
        _ = tf.nn.rnn_cell.GRUCell(2).scope_name
