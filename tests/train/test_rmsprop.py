"""Ports of TF 1.15's rmsprop_test.py: its numpy reference updates and parameter sets."""

import copy
import itertools

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

# learning_rate, decay, momentum, epsilon, centered (rmsprop_test's _TEST_PARAM_VALUES).
_PARAMS = [
    (0.5, 0.9, 0.0, 1e-3, True),
    (0.5, 0.9, 0.0, 1e-3, False),
    (0.1, 0.9, 0.0, 1e-3, True),
    (0.5, 0.95, 0.0, 1e-3, False),
    (0.5, 0.95, 0.0, 1e-5, True),
    (0.5, 0.95, 0.9, 1e-5, True),
]


def _rmsprop_update_numpy(var, g, mg, rms, mom, lr, decay, momentum, epsilon, centered):
    rms_t = rms * decay + (1 - decay) * g * g
    denom_t = rms_t + epsilon
    if centered:
        mg_t = mg * decay + (1 - decay) * g
        denom_t -= mg_t * mg_t
    else:
        mg_t = mg
    mom_t = momentum * mom + lr * g / np.sqrt(denom_t, dtype=denom_t.dtype)
    return var - mom_t, mg_t, rms_t, mom_t


def _sparse_rmsprop_update_numpy(
    var, gindexs, gvalues, mg, rms, mom, lr, decay, momentum, epsilon, centered
):
    mg_t, rms_t, mom_t, var_t = (copy.deepcopy(a) for a in (mg, rms, mom, var))
    for gindex, gvalue in zip(gindexs, gvalues):
        rms_t[gindex] = rms[gindex] * decay + (1 - decay) * gvalue * gvalue
        denom_t = rms_t[gindex] + epsilon
        if centered:
            mg_t[gindex] = mg_t[gindex] * decay + (1 - decay) * gvalue
            denom_t -= mg_t[gindex] * mg_t[gindex]
        mom_t[gindex] = momentum * mom[gindex] + lr * gvalue / np.sqrt(denom_t)
        var_t[gindex] = var[gindex] - mom_t[gindex]
    return var_t, mg_t, rms_t, mom_t


def _check_state(sess, opt, variables, state, centered):
    """Each variable and its slots equal the reference's ``[var, mg, rms, mom]``."""
    names = ["mg", "rms", "momentum"] if centered else ["rms", "momentum"]
    for s, v in zip(state, variables):
        expected = s[1:] if centered else s[2:]
        for name, want in zip(names, expected):
            np.testing.assert_allclose(sess.run(opt.get_slot(v, name)), want, rtol=1e-5)
        np.testing.assert_allclose(sess.run(v), s[0], rtol=1e-5)


@pytest.mark.parametrize(
    ("params", "use_resource"), list(itertools.product(_PARAMS, [False, True]))
)
def test_dense(params, use_resource):
    lr, decay, momentum, epsilon, centered = params
    var_np = [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)]
    grads_np = [np.array([0.1, 0.2], np.float32), np.array([0.01, 0.2], np.float32)]
    variables = [tf.Variable(v, use_resource=use_resource) for v in var_np]
    opt = tf.train.RMSPropOptimizer(lr, decay, momentum, epsilon, centered=centered)
    update = opt.apply_gradients(zip([tf.constant(g) for g in grads_np], variables))
    op_type = "ApplyCenteredRMSProp" if centered else "ApplyRMSProp"
    op_types = {op.type for op in tf.get_default_graph().get_operations()}
    assert ("Resource" + op_type if use_resource else op_type) in op_types
    state = [
        [v, np.zeros_like(v), np.ones_like(v), np.zeros_like(v)] for v in var_np
    ]  # var, mg, rms, mom
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4):
            sess.run(update)
            for s, g in zip(state, grads_np):
                s[:] = _rmsprop_update_numpy(
                    *s[:1], g, *s[1:], lr, decay, momentum, epsilon, centered
                )
            _check_state(sess, opt, variables, state, centered)


@pytest.mark.parametrize(
    ("params", "use_resource"), list(itertools.product(_PARAMS, [False, True]))
)
def test_sparse(params, use_resource):
    lr, decay, momentum, epsilon, centered = params
    var_np = [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)]
    grads = [([0], np.array([0.1], np.float32)), ([1], np.array([0.01], np.float32))]
    variables = [tf.Variable(v, use_resource=use_resource) for v in var_np]
    slices = [tf.IndexedSlices(tf.constant(g), tf.constant(i), tf.constant([1])) for i, g in grads]
    opt = tf.train.RMSPropOptimizer(lr, decay, momentum, epsilon, centered=centered)
    update = opt.apply_gradients(zip(slices, variables))
    op_type = "SparseApplyCenteredRMSProp" if centered else "SparseApplyRMSProp"
    op_types = {op.type for op in tf.get_default_graph().get_operations()}
    assert ("Resource" + op_type if use_resource else op_type) in op_types
    state = [[v, np.zeros_like(v), np.ones_like(v), np.zeros_like(v)] for v in var_np]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(4):
            sess.run(update)
            for s, (i, g) in zip(state, grads):
                s[:] = _sparse_rmsprop_update_numpy(
                    s[0], i, g, *s[1:], lr, decay, momentum, epsilon, centered
                )
            _check_state(sess, opt, variables, state, centered)


def test_sparse_duplicate_indices_are_summed_first():
    w0 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    w = tf.Variable(w0, name="w")
    idx = tf.constant([2, 0, 2])
    vals = tf.constant([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    opt = tf.train.RMSPropOptimizer(0.1, momentum=0.5, epsilon=1e-3)
    update = opt.apply_gradients([(tf.IndexedSlices(vals, idx, tf.constant([3, 2])), w)])
    summed_idx = [2, 0]
    summed = np.array([[0.6, 0.8], [0.3, 0.4]], np.float32)
    expected, *_ = _sparse_rmsprop_update_numpy(
        w0, summed_idx, summed, np.zeros_like(w0), np.ones_like(w0), np.zeros_like(w0),
        0.1, 0.9, 0.5, 1e-3, False,
    )  # fmt: skip
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update)
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-5)


@pytest.mark.parametrize(
    ("centered", "names"),
    [
        (False, {"rms": "w/RMSProp", "momentum": "w/RMSProp_1"}),
        (True, {"rms": "w/RMSProp", "mg": "w/RMSProp_1", "momentum": "w/RMSProp_2"}),
    ],
)
def test_slot_names_and_rms_starts_at_ones(centered, names):
    w = tf.Variable(np.zeros(3, np.float32), name="w")
    opt = tf.train.RMSPropOptimizer(0.1, centered=centered)
    opt.minimize(tf.reduce_sum(w))
    assert opt.get_slot_names() == sorted(names)
    assert {n: opt.get_slot(w, n).op.name for n in names} == names
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(opt.get_slot(w, "rms")), np.ones(3))


def test_without_momentum_by_hand():
    # rmsprop_test's testWithoutMomentum, first step: rms = 0.9 * 1 + 0.1 * g^2.
    var0 = tf.Variable([1.0, 2.0])
    opt = tf.train.RMSPropOptimizer(2.0, decay=0.9, momentum=0.0, epsilon=1.0)
    update = opt.apply_gradients([(tf.constant([0.1, 0.1]), var0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update)
        expected = [1.0 - 0.1 * 2.0 / np.sqrt(0.901 + 1.0), 2.0 - 0.1 * 2.0 / np.sqrt(0.901 + 1.0)]
        np.testing.assert_allclose(sess.run(var0), expected, rtol=1e-6)


def test_callable_hyperparameters():
    w = tf.Variable([1.0, 2.0])
    opt = tf.train.RMSPropOptimizer(lambda: 2.0, decay=lambda: 0.9, epsilon=lambda: 1.0)
    update = opt.apply_gradients([(tf.constant([0.1, 0.1]), w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update)
        assert sess.run(w)[0] == pytest.approx(1.0 - 0.2 / np.sqrt(1.901), rel=1e-6)
