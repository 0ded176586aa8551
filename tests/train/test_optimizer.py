import numpy as np
import pytest

import minitf as tf
from minitf.ops.state import state_ops

pytestmark = pytest.mark.timeout(60)

f32 = np.float32


def _quadratic():
    w = tf.Variable(np.array([1.0, -2.0], f32), name="w")
    b = tf.Variable(np.array(0.5, f32), name="b")
    loss = tf.reduce_sum(w * w) + b * 3.0
    return w, b, loss


def test_compute_gradients_pairs_every_trainable_variable():
    w, b, loss = _quadratic()
    tf.Variable([7.0], name="frozen", trainable=False)
    pairs = tf.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
    assert [v for _, v in pairs] == [w, b]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        gw, gb = sess.run([g for g, _ in pairs])
    np.testing.assert_allclose(gw, [2.0, -4.0])
    np.testing.assert_allclose(gb, 3.0)


def test_compute_gradients_includes_trainable_resource_variables_collection():
    w, _, loss = _quadratic()
    r = tf.Variable([1.0], name="r", use_resource=True, collections=[])
    tf.add_to_collection(tf.GraphKeys.TRAINABLE_RESOURCE_VARIABLES, r)
    pairs = tf.train.GradientDescentOptimizer(0.1).compute_gradients(loss + tf.reduce_sum(r))
    assert pairs[-1][1] is r


def test_minimize_with_var_list_updates_only_those_variables():
    w, b, loss = _quadratic()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=[b])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [1.0, -2.0])
        np.testing.assert_allclose(sess.run(b), 0.5 - 0.1 * 3.0, rtol=1e-6)


def test_train_op_structure_without_global_step():
    w, b, loss = _quadratic()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    assert train.name == "GradientDescent" and train.type == "NoOp"
    assert {op.name for op in train.control_inputs} == {
        "GradientDescent/update_w/ApplyGradientDescent",
        "GradientDescent/update_b/ApplyGradientDescent",
    }
    assert tf.get_collection(tf.GraphKeys.TRAIN_OP) == [train]
    update_w = tf.get_default_graph().get_operation_by_name(
        "GradientDescent/update_w/ApplyGradientDescent"
    )
    assert update_w.colocation_groups() == [b"loc:@w"]
    assert update_w.inputs[0].op is w.op


def test_train_op_structure_with_global_step_and_custom_name():
    _, _, loss = _quadratic()
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs, name="train")
    graph = tf.get_default_graph()
    assert train.name == "train" and train.type == "AssignAdd"
    assert train.colocation_groups() == [b"loc:@global_step"]
    update = graph.get_operation_by_name("train/update")
    assert update.type == "NoOp"
    # The increment runs after the update group (through its value's control input).
    deps = {op.name for op in train.control_inputs}
    deps |= {c.name for t in train.inputs for c in t.op.control_inputs}
    assert "train/update" in deps


def test_update_ops_are_placed_with_their_variable():
    with tf.device("/job:ps/task:1"):
        w = tf.Variable([1.0], name="w")
    with tf.device("/job:worker/task:0"):
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(w * w))
    update = tf.get_default_graph().get_operation_by_name("Momentum/update_w/ApplyMomentum")
    assert update.device == w.device
    # TF's group() puts a NoOp whose inputs all share one device on that device.
    assert train.device == w.device


@pytest.mark.parametrize(
    "gate",
    [tf.train.Optimizer.GATE_NONE, tf.train.Optimizer.GATE_OP, tf.train.Optimizer.GATE_GRAPH],
)
def test_gating_does_not_change_the_numbers(gate):
    w, b, loss = _quadratic()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, gate_gradients=gate)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.8, -1.6], rtol=1e-6)


def test_grad_loss_scales_the_gradient():
    w, _, loss = _quadratic()
    pairs = tf.train.GradientDescentOptimizer(0.1).compute_gradients(
        loss, var_list=[w], grad_loss=tf.constant(2.0)
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(pairs[0][0]), [4.0, -8.0])


def test_constraint_is_applied_after_the_update():
    w = tf.Variable(np.array([0.05, 1.0], f32), constraint=lambda v: tf.maximum(v, 0.0))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.0, 0.9], rtol=1e-6)


def test_apply_gradients_accepts_processed_gradients():
    w, b, loss = _quadratic()
    opt = tf.train.GradientDescentOptimizer(1.0)
    pairs = opt.compute_gradients(loss)
    train = opt.apply_gradients([(g * 0.5, v) for g, v in pairs])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.0, 0.0])


def test_a_subclass_only_implements_the_hooks():
    class SignDescent(tf.train.Optimizer):
        def __init__(self):
            super().__init__(False, "SignDescent")

        def _apply_dense(self, grad, var):
            return state_ops.assign_sub(var, tf.sign(grad) * 0.5).op

    w, _, loss = _quadratic()
    train = SignDescent().minimize(loss, var_list=[w])
    assert tf.get_default_graph().get_operation_by_name("SignDescent/update_w/AssignSub")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.5, -1.5])


def test_base_optimizer_has_no_slots():
    _, _, loss = _quadratic()
    opt = tf.train.GradientDescentOptimizer(0.1)
    opt.minimize(loss)
    assert opt.get_slot_names() == [] and opt.variables() == []
    assert opt.get_name() == "GradientDescent"


# -- errors -----------------------------------------------------------------------------------


def test_optimizer_name_is_required():
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.Optimizer(False, "")


def test_no_variables_to_optimize():
    with pytest.raises(ValueError, match="No variables to optimize."):
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(1.0) * 2.0)


def test_no_gradients_for_any_variable():
    w = tf.Variable([1.0], name="w")
    tf.Variable([2.0], name="unused")
    with pytest.raises(
        ValueError, match="No gradients provided for any variable, check your graph"
    ):
        tf.train.GradientDescentOptimizer(0.1).minimize(
            tf.reduce_sum(w) * 0.0, var_list=[tf.global_variables()[1]]
        )
    with pytest.raises(ValueError, match=r"No gradients provided for any variable: \["):
        tf.train.GradientDescentOptimizer(0.1).apply_gradients([(None, w)])
    with pytest.raises(ValueError, match="No variables provided."):
        tf.train.GradientDescentOptimizer(0.1).apply_gradients([])


def test_non_float_loss_is_rejected_like_tf1():
    w = tf.Variable([1], name="w")
    with pytest.raises(ValueError, match="Invalid type tf.int32"):
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w))


def test_bad_gate_gradients():
    _, _, loss = _quadratic()
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss, gate_gradients=7)


def test_malformed_grads_and_vars():
    w, _, _ = _quadratic()
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(TypeError, match="Gradient must be"):
        opt.apply_gradients([(object(), w)])
    with pytest.raises(TypeError, match="unsupported type"):
        opt.apply_gradients([(tf.constant([1.0, 1.0]), "w")])
    with pytest.raises(TypeError, match="unsupported type"):
        opt.compute_gradients(tf.reduce_sum(w), var_list=["w"])
    with pytest.raises(NotImplementedError, match="Trying to update a Tensor"):
        t = tf.constant([1.0])
        opt.apply_gradients([(tf.constant([1.0]), t)])


# -- convergence -----------------------------------------------------------------------------


def _blobs(n_per_class, n_classes, dim, seed):
    rng = np.random.RandomState(seed)
    centers = rng.randn(n_classes, dim) * 4.0
    xs = np.concatenate([c + rng.randn(n_per_class, dim) for c in centers]).astype(f32)
    ys = np.repeat(np.arange(n_classes), n_per_class)
    return xs, np.eye(n_classes, dtype=f32)[ys], ys


def test_softmax_regression_converges_with_gradient_descent():
    xs, onehot, labels = _blobs(30, 3, 4, seed=0)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.float32, [None, 3])
    w = tf.get_variable("w", [4, 3], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [3], initializer=tf.zeros_initializer())
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: xs, y: onehot})
        for _ in range(200):
            sess.run(train, {x: xs, y: onehot})
        last, out = sess.run([loss, logits], {x: xs, y: onehot})
    assert first == pytest.approx(np.log(3.0), rel=1e-5)
    assert last < 0.1
    assert np.mean(out.argmax(1) == labels) >= 0.98


def test_one_hidden_layer_mlp_learns_xor_like_data_with_adam():
    rng = np.random.RandomState(1)
    xs = rng.uniform(-1, 1, size=(200, 2)).astype(f32)
    labels = ((xs[:, 0] > 0) != (xs[:, 1] > 0)).astype(np.int64)
    onehot = np.eye(2, dtype=f32)[labels]
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 2])
    w1 = tf.Variable(rng.randn(2, 16).astype(f32), name="w1")
    b1 = tf.Variable(np.zeros(16, f32), name="b1")
    w2 = tf.Variable((rng.randn(16, 2) * 0.1).astype(f32), name="w2")
    b2 = tf.Variable(np.zeros(2, f32), name="b2")
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(300):
            sess.run(train, {x: xs, y: onehot})
        last, out = sess.run([loss, logits], {x: xs, y: onehot})
    assert last < 0.15
    assert np.mean(out.argmax(1) == labels) >= 0.97
