"""tf.nn ops: activations, softmax, cross entropies, l2_loss, bias_add, moments, dropout."""

import logging

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error
from minitf.ops.nn import nn_ops as nn

pytestmark = pytest.mark.timeout(60)

LOGITS = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
LABELS = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _np_log_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _gradient_error(build, x_value, delta=1e-4):
    """Max |theoretical - numerical| Jacobian entry of build(x) at x_value, in float64."""
    x_value = np.asarray(x_value, dtype=np.float64)
    x = tf.placeholder(tf.float64, x_value.shape)
    y = build(x)
    with tf.Session():
        return compute_gradient_error(
            x, list(x_value.shape), y, y.shape.as_list(), x_init_value=x_value, delta=delta
        )


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def minitf_warnings(monkeypatch):
    """Collects the warnings of the ``minitf`` logger, with warn-once state cleared."""
    monkeypatch.setattr(nn, "_warned", set())
    handler = _Capture()
    logger = logging.getLogger("minitf")
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


# -- activations ---------------------------------------------------------------------------

ACTIVATION_INPUT = np.array([[-7.0, -2.5, -0.5], [0.25, 3.0, 6.5]], dtype=np.float32)


@pytest.mark.parametrize(
    "fn, op_type, expected",
    [
        (nn.relu, "Relu", np.maximum(ACTIVATION_INPUT, 0)),
        (nn.relu6, "Relu6", np.minimum(np.maximum(ACTIVATION_INPUT, 0), 6)),
        (
            nn.elu,
            "Elu",
            np.where(ACTIVATION_INPUT < 0, np.exp(ACTIVATION_INPUT) - 1, ACTIVATION_INPUT),
        ),
        (nn.softplus, "Softplus", np.log(np.exp(ACTIVATION_INPUT) + 1)),
        (
            nn.leaky_relu,
            "LeakyRelu",
            np.where(ACTIVATION_INPUT > 0, ACTIVATION_INPUT, 0.2 * ACTIVATION_INPUT),
        ),
    ],
)
def test_activation_values_op_type_and_dtype(fn, op_type, expected):
    y = fn(tf.constant(ACTIVATION_INPUT))
    assert y.op.type == op_type
    assert y.shape.as_list() == [2, 3]
    value = _run(y)
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-7)


def test_relu_keeps_integer_dtype_and_op_name():
    y = nn.relu(tf.constant([-3, 0, 4]), name="act")
    assert y.op.name == "act"
    value = _run(y)
    assert value.dtype == np.int32
    np.testing.assert_array_equal(value, [0, 0, 4])


def test_leaky_relu_alpha_and_integer_input_cast_to_float32():
    y = nn.leaky_relu(tf.constant([-10, 5]), alpha=0.5)
    assert y.dtype == tf.float32
    assert y.op.get_attr("alpha") == 0.5
    np.testing.assert_allclose(_run(y), [-5.0, 5.0])


def test_softplus_is_stable_for_large_inputs():
    value = _run(nn.softplus(tf.constant([-1000.0, 0.0, 1000.0])))
    np.testing.assert_allclose(value, [0.0, np.log(2.0), 1000.0], rtol=1e-6)


def test_elu_and_softplus_reject_integer_features():
    with pytest.raises(TypeError, match="features"):
        nn.elu(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="features"):
        nn.softplus(tf.constant([1, 2]))


@pytest.mark.parametrize("fn", [nn.relu, nn.relu6, nn.elu, nn.softplus, nn.leaky_relu])
def test_activation_gradients(fn):
    # Points away from the kinks at 0 and 6, where finite differences are not defined.
    x_value = np.array([[-3.0, -0.7, 0.4], [2.0, 5.5, 7.0]])
    assert _gradient_error(fn, x_value) < 1e-6


@pytest.mark.parametrize("fn", [nn.relu, nn.relu6, nn.leaky_relu])
def test_piecewise_linear_activation_second_derivative_is_zero(fn):
    x = tf.constant([[-2.0, 1.0, 3.0]], dtype=tf.float64)
    (g,) = tf.gradients(fn(x), x)
    (gg,) = tf.gradients(g, x)
    np.testing.assert_array_equal(_run(gg), np.zeros((1, 3)))


@pytest.mark.parametrize("fn", [nn.elu, nn.softplus])
def test_smooth_activation_second_derivatives(fn):
    x_value = np.array([[-3.0, -0.7, 0.4], [2.0, 5.5, 7.0]])
    assert _gradient_error(lambda x: tf.gradients(fn(x), x)[0], x_value) < 1e-6


def test_relu_gradient_is_a_relugrad_op():
    x = tf.constant([-1.0, 2.0])
    (g,) = tf.gradients(nn.relu(x), x)
    assert g.op.type == "ReluGrad"
    np.testing.assert_array_equal(_run(g), [0.0, 1.0])


# -- softmax and log_softmax ------------------------------------------------------------------


def test_softmax_matches_numpy():
    y = nn.softmax(tf.constant(LOGITS, dtype=tf.float32))
    assert y.op.type == "Softmax"
    value = _run(y)
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, _np_softmax(LOGITS), rtol=1e-6)


def test_log_softmax_matches_numpy():
    y = nn.log_softmax(tf.constant(LOGITS, dtype=tf.float32))
    assert y.op.type == "LogSoftmax"
    np.testing.assert_allclose(_run(y), _np_log_softmax(LOGITS), rtol=1e-6)


def test_softmax_is_stable_for_huge_logits():
    logits = tf.constant([[1000.0, 0.0, -1000.0], [1000.0, 1000.0, 1000.0]])
    probs, log_probs = _run([nn.softmax(logits), nn.log_softmax(logits)])
    assert np.all(np.isfinite(probs)) and np.all(np.isfinite(log_probs))
    np.testing.assert_allclose(probs[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(probs[1], [1 / 3] * 3, rtol=1e-6)
    np.testing.assert_allclose(log_probs[0], [0.0, -1000.0, -2000.0])


def test_softmax_over_another_axis_and_dim_alias():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0
    by_axis = nn.softmax(tf.constant(x), axis=1)
    by_dim = nn.log_softmax(tf.constant(x), dim=0)
    assert by_axis.shape.as_list() == [2, 3, 4]
    got_axis, got_dim = _run([by_axis, by_dim])
    np.testing.assert_allclose(got_axis, _np_softmax(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(got_dim, _np_log_softmax(x, axis=0), rtol=1e-5, atol=1e-6)


def test_softmax_errors():
    with pytest.raises(ValueError, match="at least rank 1"):
        nn.softmax(tf.constant(1.0))
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"Dimension \(3\) must be in the range"
    ):
        nn.softmax(tf.constant(LOGITS), axis=3)
    with pytest.raises(ValueError, match="Cannot specify both"):
        nn.softmax(tf.constant(LOGITS), axis=0, dim=0)


def test_softmax_and_log_softmax_gradients():
    assert _gradient_error(nn.softmax, LOGITS) < 1e-6
    assert _gradient_error(nn.log_softmax, LOGITS) < 1e-6
    assert _gradient_error(lambda x: nn.softmax(x, axis=0), LOGITS) < 1e-6


# -- cross entropies -------------------------------------------------------------------------


def test_softmax_cross_entropy_v2_matches_formula():
    loss = nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.constant(LABELS, dtype=tf.float32), logits=tf.constant(LOGITS, dtype=tf.float32)
    )
    assert loss.op.type == "SoftmaxCrossEntropyWithLogits"
    assert len(loss.op.outputs) == 2
    assert loss.shape.as_list() == [2]
    value, backprop = _run([loss, loss.op.outputs[1]])
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, -np.sum(LABELS * _np_log_softmax(LOGITS), axis=1), rtol=1e-6)
    np.testing.assert_allclose(backprop, _np_softmax(LOGITS) - LABELS, rtol=1e-6, atol=1e-7)


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    loss = nn.softmax_cross_entropy_with_logits_v2(
        labels=[[0.0, 1.0, 0.0]], logits=[[1000.0, 0.0, -1000.0]]
    )
    np.testing.assert_allclose(_run(loss), [1000.0])


def test_softmax_cross_entropy_on_rank3_logits_and_other_axis():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 3, 4))
    labels = _np_softmax(rng.normal(size=(2, 3, 4)))
    last = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    first = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=0)
    assert last.shape.as_list() == [2, 3]
    assert first.shape.as_list() == [3, 4]
    got_last, got_first = _run([last, first])
    np.testing.assert_allclose(got_last, -np.sum(labels * _np_log_softmax(logits), -1), rtol=1e-6)
    np.testing.assert_allclose(
        got_first, -np.sum(labels * _np_log_softmax(logits, axis=0), 0), rtol=1e-6
    )


def test_softmax_cross_entropy_shape_mismatch_raises_at_construction():
    with pytest.raises(ValueError, match="SoftmaxCrossEntropyWithLogits"):
        nn.softmax_cross_entropy_with_logits_v2(labels=np.ones((2, 4)), logits=np.ones((2, 3)))


def test_softmax_cross_entropy_v2_gradients_for_logits_and_labels():
    labels = tf.constant(LABELS)
    assert (
        _gradient_error(
            lambda x: nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=x), LOGITS
        )
        < 1e-6
    )
    logits = tf.constant(LOGITS)
    assert (
        _gradient_error(
            lambda z: nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=logits), LABELS
        )
        < 1e-6
    )


def test_softmax_cross_entropy_second_derivative():
    # d/dlogits of the gradient (softmax - labels) is the softmax Jacobian.
    labels = tf.constant(LABELS)

    def grad_of_loss(x):
        loss = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=x)
        return tf.gradients(loss, x)[0]

    assert _gradient_error(grad_of_loss, LOGITS) < 1e-6


def test_softmax_cross_entropy_v1_stops_label_gradient_and_warns(minitf_warnings):
    labels = tf.constant(LABELS)
    logits = tf.constant(LOGITS)
    loss = nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert any("deprecated" in m for m in minitf_warnings)
    grad_labels, grad_logits = tf.gradients(loss, [labels, logits])
    assert grad_labels is None
    np.testing.assert_allclose(_run(grad_logits), _np_softmax(LOGITS) - LABELS, atol=1e-12)
    nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert sum("deprecated" in m for m in minitf_warnings) == 1  # warned once, like TF


def test_softmax_cross_entropy_v1_gradient_for_logits():
    labels = tf.constant(LABELS)
    error = _gradient_error(
        lambda x: nn.softmax_cross_entropy_with_logits(labels=labels, logits=x), LOGITS
    )
    assert error < 1e-6


def test_softmax_cross_entropy_v1_requires_keyword_arguments():
    with pytest.raises(
        ValueError, match="Only call `softmax_cross_entropy_with_logits` with named"
    ):
        nn.softmax_cross_entropy_with_logits(LABELS, LOGITS)


def test_sparse_softmax_cross_entropy_matches_formula():
    labels = np.array([2, 0])
    loss = nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant(labels), logits=tf.constant(LOGITS, dtype=tf.float32)
    )
    assert loss.op.type == "SparseSoftmaxCrossEntropyWithLogits"
    assert loss.op.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"
    value = _run(loss)
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, -_np_log_softmax(LOGITS)[[0, 1], labels], rtol=1e-6)


def test_sparse_softmax_cross_entropy_rank3_and_stability():
    logits = np.array([[[1000.0, 0.0, -1000.0]], [[0.0, 0.0, 0.0]]])
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=[[1], [2]], logits=logits)
    assert loss.shape.as_list() == [2, 1]
    np.testing.assert_allclose(_run(loss), [[1000.0], [np.log(3.0)]], rtol=1e-6)


def test_sparse_softmax_cross_entropy_construction_errors():
    with pytest.raises(ValueError, match="Only call `sparse_softmax_cross_entropy_with_logits`"):
        nn.sparse_softmax_cross_entropy_with_logits([0, 1], LOGITS)
    with pytest.raises(ValueError, match="Both labels and logits must be provided"):
        nn.sparse_softmax_cross_entropy_with_logits(logits=LOGITS)
    with pytest.raises(ValueError, match=r"Rank mismatch: Rank of labels \(received 2\)"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=[[0], [1]], logits=LOGITS)
    with pytest.raises(ValueError, match="Shape mismatch"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 2], logits=LOGITS)
    with pytest.raises(ValueError, match="Logits cannot be scalars"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=0, logits=1.0)


def test_sparse_softmax_cross_entropy_label_out_of_range_fails_at_run_time():
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 5], logits=LOGITS)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Received a label value of 5 which is outside the valid range of \[0, 3\)",
    ):
        _run(loss)


def test_sparse_softmax_cross_entropy_gradient():
    labels = tf.constant([2, 0])
    error = _gradient_error(
        lambda x: nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x), LOGITS
    )
    assert error < 1e-6


def _np_sigmoid_xent(x, z):
    sig = 1 / (1 + np.exp(-x))
    return -z * np.log(sig) - (1 - z) * np.log(1 - sig)


def test_sigmoid_cross_entropy_matches_formula_and_is_stable():
    x = np.array([[-2.0, 0.0, 3.0]], dtype=np.float32)
    z = np.array([[0.0, 0.5, 1.0]], dtype=np.float32)
    loss = nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    assert loss.op.name == "logistic_loss"
    value = _run(loss)
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, _np_sigmoid_xent(x.astype(np.float64), z), rtol=1e-6)
    huge = _run(
        nn.sigmoid_cross_entropy_with_logits(
            labels=[1.0, 0.0, 1.0], logits=[1000.0, 1000.0, -1000.0]
        )
    )
    np.testing.assert_allclose(huge, [0.0, 1000.0, 1000.0])


def test_sigmoid_cross_entropy_errors():
    with pytest.raises(ValueError, match="logits and labels must have the same shape"):
        nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="named arguments"):
        nn.sigmoid_cross_entropy_with_logits([1.0], [1.0])


def test_sigmoid_cross_entropy_gradient():
    labels = tf.constant(LABELS)
    error = _gradient_error(
        lambda x: nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x), LOGITS
    )
    assert error < 1e-6


# -- l2_loss, bias_add, moments --------------------------------------------------------------


def test_l2_loss_is_half_the_sum_of_squares():
    loss = nn.l2_loss(tf.constant([[1.0, -2.0], [3.0, 0.5]]))
    assert loss.op.type == "L2Loss"
    assert loss.shape.as_list() == []
    value = _run(loss)
    assert value.dtype == np.float32
    assert value == pytest.approx((1 + 4 + 9 + 0.25) / 2)


def test_l2_loss_gradient():
    assert _gradient_error(nn.l2_loss, LOGITS) < 1e-6


def test_bias_add_nhwc_and_nchw():
    value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    nhwc = nn.bias_add(value, np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32))
    nchw = nn.bias_add(value, np.array([10.0, 20.0, 30.0], dtype=np.float32), data_format="NCHW")
    assert nhwc.op.type == "BiasAdd"
    assert nhwc.op.get_attr("data_format") == "NHWC"
    got_nhwc, got_nchw = _run([nhwc, nchw])
    np.testing.assert_array_equal(got_nhwc, value + [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(got_nchw, value + np.array([10.0, 20.0, 30.0])[:, None])
    assert got_nhwc.dtype == np.float32


def test_bias_add_shape_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
        nn.bias_add(np.ones((2, 3), np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="at least rank 2"):
        nn.bias_add(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="data_format"):
        nn.bias_add(np.ones((2, 3), np.float32), np.ones(3, np.float32), data_format="HWC")


def test_bias_add_gradients():
    bias = tf.constant([0.5, -1.0, 2.0], dtype=tf.float64)
    value = tf.constant(LOGITS)
    assert _gradient_error(lambda x: nn.bias_add(x, bias), LOGITS) < 1e-6
    assert _gradient_error(lambda b: nn.bias_add(value, b), [0.5, -1.0, 2.0]) < 1e-6
    assert (
        _gradient_error(
            lambda b: nn.bias_add(tf.constant(np.ones((2, 2, 2))), b, data_format="NCHW"),
            [1.0, 2.0],
        )
        < 1e-6
    )


def test_moments_match_numpy_population_variance():
    x = np.array([[1.0, 2.0, 4.0], [3.0, 8.0, 0.0]], dtype=np.float32)
    mean, variance = nn.moments(tf.constant(x), axes=[0])
    assert mean.shape.as_list() == [3]
    got_mean, got_var = _run([mean, variance])
    np.testing.assert_allclose(got_mean, x.mean(axis=0))
    np.testing.assert_allclose(got_var, x.var(axis=0))
    kept_mean, kept_var = nn.moments(tf.constant(x), axes=[0, 1], keepdims=True)
    assert kept_var.shape.as_list() == [1, 1]
    np.testing.assert_allclose(_run(kept_var), [[x.var()]], rtol=1e-6)


def test_moments_variance_gradient():
    assert _gradient_error(lambda x: nn.moments(x, axes=[1])[1], LOGITS) < 1e-6


# -- dropout ---------------------------------------------------------------------------------


def test_dropout_drops_with_rate_and_scales_the_rest():
    x = tf.ones([1000, 100])
    y = nn.dropout(x, rate=0.3, seed=3)
    assert y.shape.as_list() == [1000, 100]
    value = _run(y)
    assert value.dtype == np.float32
    dropped = np.mean(value == 0)
    assert abs(dropped - 0.3) < 0.01
    np.testing.assert_allclose(np.unique(value), [0.0, 1 / 0.7], rtol=1e-6)


def test_dropout_keep_prob_is_tf1_spelling_of_rate(minitf_warnings):
    value = _run(nn.dropout(tf.ones([200, 100]), keep_prob=0.8))
    assert abs(np.mean(value == 0) - 0.2) < 0.02
    np.testing.assert_allclose(np.unique(value), [0.0, 1.25], rtol=1e-6)
    assert any("keep_prob is deprecated" in m for m in minitf_warnings)


def test_dropout_with_keep_prob_one_is_identity():
    x = tf.constant([1.0, 2.0])
    assert nn.dropout(x, keep_prob=1.0) is x
    assert nn.dropout(x, rate=0.0) is x


def test_dropout_noise_shape_drops_whole_rows():
    value = _run(nn.dropout(tf.ones([400, 5]), rate=0.5, noise_shape=[400, 1]))
    row_dropped = np.all(value == 0, axis=1)
    row_kept = np.all(value == 2.0, axis=1)
    assert np.all(row_dropped | row_kept)
    assert 0.35 < row_dropped.mean() < 0.65


def test_dropout_with_a_tensor_keep_prob():
    keep_prob = tf.placeholder(tf.float32, [])
    y = nn.dropout(tf.ones([100, 100]), keep_prob=keep_prob)
    value = _run(y, {keep_prob: 0.5})
    assert abs(np.mean(value == 0) - 0.5) < 0.03
    np.testing.assert_array_equal(_run(y, {keep_prob: 1.0}), np.ones((100, 100)))


def test_dropout_errors():
    x = tf.ones([3])
    with pytest.raises(ValueError, match="You must provide a rate to dropout"):
        nn.dropout(x)
    with pytest.raises(
        ValueError, match=r"rate must be a scalar tensor or a float in the range \[0, 1\)"
    ):
        nn.dropout(x, rate=1.0)
    with pytest.raises(ValueError, match="x has to be a floating point tensor"):
        nn.dropout(tf.constant([1, 2]), rate=0.5)
    with pytest.raises(ValueError, match="Cannot specify both"):
        nn.dropout(x, keep_prob=0.5, rate=0.5)


def test_sigmoid_and_tanh_are_math_ops_functions():
    from minitf.ops.math import math_ops

    assert nn.sigmoid is math_ops.sigmoid
    assert nn.tanh is math_ops.tanh


def test_xw_plus_b_is_matmul_plus_bias_named_xw_plus_b():
    x = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    w = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]], np.float32)
    b = np.array([1.0, -1.0, 0.5], np.float32)
    out = tf.nn.xw_plus_b(x, w, b)
    assert out.name == "xw_plus_b:0"
    assert out.op.type == "BiasAdd"
    assert out.op.inputs[0].op.type == "MatMul"
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(out), x @ w + b)
