"""tf.contrib.layers.optimize_loss: ports of contrib's ``optimizers_test.py`` (values by
hand: ``loss = |var * x|`` from var 10 at x 5 has gradient 5) and its summaries."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

optimize_loss = tf.contrib.layers.optimize_loss


def _setup_model():
    x = tf.placeholder(tf.float32, [])
    var = tf.get_variable("test", [], initializer=tf.constant_initializer(10))
    loss = tf.abs(var * x)
    global_step = tf.train.create_global_step()
    return x, var, loss, global_step


def _train_once(train, x, *fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: 5.0, **(feed or {})})
        return sess.run(list(fetches))


@pytest.mark.parametrize(
    "optimizer",
    [
        "SGD",
        tf.train.GradientDescentOptimizer,
        lambda lr: tf.train.GradientDescentOptimizer(learning_rate=lr),
        "Momentum",  # the first step of momentum is plain SGD
    ],
)
def test_sgd_step_from_a_name_class_or_factory(optimizer):
    x, var, loss, global_step = _setup_model()
    train = optimize_loss(loss, global_step, learning_rate=0.1, optimizer=optimizer)
    assert _train_once(train, x, var, global_step) == [9.5, 1]


def test_an_optimizer_instance_and_a_factory_without_learning_rate():
    x, var, loss, global_step = _setup_model()
    train = optimize_loss(
        loss, global_step, None, lambda: tf.train.GradientDescentOptimizer(learning_rate=0.1)
    )
    assert _train_once(train, x, var, global_step) == [9.5, 1]


@pytest.mark.parametrize(
    "name, expected",
    [
        # Adam's first step moves by lr * m_hat / (sqrt(v_hat) + eps) = lr (nearly).
        ("Adam", 10 - 0.1 * 5 / (5 + 1e-8)),
        # Adagrad: accumulator 0.1 + 25; step lr * g / sqrt(acc).
        ("Adagrad", 10 - 0.1 * 5 / np.sqrt(0.1 + 25)),
        # RMSProp (decay 0.9, from ms 1): ms = 0.9 + 0.1 * 25; step lr * g / sqrt(ms + 1e-10).
        ("RMSProp", 10 - 0.1 * 5 / np.sqrt(0.9 + 2.5 + 1e-10)),
    ],
)
def test_other_optimizer_names_take_one_step_by_their_formula(name, expected):
    x, var, loss, global_step = _setup_model()
    train = optimize_loss(loss, global_step, learning_rate=0.1, optimizer=name)
    value, step = _train_once(train, x, var, global_step)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    assert step == 1


def test_ftrl_name_builds_ftrl():
    _, _, loss, global_step = _setup_model()
    optimize_loss(loss, global_step, learning_rate=0.1, optimizer="Ftrl")
    assert any("Ftrl" in op.type for op in tf.get_default_graph().get_operations())


@pytest.mark.parametrize("optimizer", ["blah", tf.Variable, object(), lambda lr: None])
def test_wrong_optimizer(optimizer):
    _, _, loss, global_step = _setup_model()
    with pytest.raises(ValueError):
        optimize_loss(loss, global_step, learning_rate=0.1, optimizer=optimizer)


def test_bad_arguments():
    _, _, loss, global_step = _setup_model()
    with pytest.raises(ValueError, match="Summaries should be one of"):
        optimize_loss(loss, global_step, 0.1, "SGD", summaries=["loss", "bad_summary"])
    with pytest.raises(ValueError, match="Expected scalar shape"):
        optimize_loss([[1.0]], global_step, 0.1, "SGD")
    with pytest.raises(ValueError, match="Invalid learning_rate -0.1"):
        optimize_loss(loss, global_step, -0.1, "SGD")
    with pytest.raises(ValueError, match="Learning rate should be 0d Tensor or float"):
        optimize_loss(loss, global_step, 1, "SGD")
    with pytest.raises(ValueError, match="Unknown type <class 'str'> for clip_gradients"):
        optimize_loss(loss, global_step, 0.1, "SGD", clip_gradients="x")
    with pytest.raises(TypeError):
        optimize_loss(loss, tf.Variable(0.0, trainable=False), 0.1, "SGD")


def test_gradient_multiply_by_variable_or_name_and_by_a_fed_tensor():
    x, var, loss, global_step = _setup_model()
    train = optimize_loss(loss, global_step, 0.1, "SGD", gradient_multipliers={var: 7.0})
    # var - lr * 7 * 5
    np.testing.assert_allclose(_train_once(train, x, var), [6.5], rtol=1e-6)
    with tf.Graph().as_default():
        x, var, loss, global_step = _setup_model()
        v = tf.placeholder(tf.float64, [])
        train = optimize_loss(loss, global_step, 0.1, "SGD", gradient_multipliers={"test:0": v})
        np.testing.assert_allclose(_train_once(train, x, var, feed={v: 7.0}), [6.5], rtol=1e-6)


def test_gradient_clip_by_global_norm():
    x, var, loss, global_step = _setup_model()
    train = optimize_loss(loss, global_step, 0.1, "SGD", clip_gradients=0.1)
    # The gradient 5 is clipped to 0.1: 10 - 0.1 * 0.1.
    np.testing.assert_allclose(_train_once(train, x, var), [9.99], rtol=1e-6)


def test_callable_clip_receives_the_pairs():
    x, var, loss, global_step = _setup_model()

    def halve(pairs):
        return [(g * 0.5, v) for g, v in pairs]

    train = optimize_loss(loss, global_step, 0.1, "SGD", clip_gradients=halve)
    np.testing.assert_allclose(_train_once(train, x, var), [9.75], rtol=1e-6)


def test_gradient_noise_is_a_truncated_normal_times_the_scale():
    x, var, loss, global_step = _setup_model()
    train = optimize_loss(loss, global_step, 0.1, "SGD", gradient_noise_scale=10.0)
    (value,) = _train_once(train, x, var)
    # var = 10 - 0.1 * (5 + 10 * n), with |n| <= 2 for a truncated normal.
    noise = (10 - 0.1 * 5 - value) / (0.1 * 10)
    assert abs(noise) <= 2 and noise != 0


def test_ignore_variables_with_no_gradients():
    _, _, loss, global_step = _setup_model()
    unused = tf.get_variable("ignore_me", [])
    optimize_loss(
        loss,
        global_step,
        0.1,
        "SGD",
        gradient_noise_scale=10.0,
        gradient_multipliers={unused: 1.0},
        clip_gradients=10.0,
    )


def test_update_ops_and_no_global_step():
    x = tf.placeholder(tf.float32, [])
    var = tf.get_variable("test", [], initializer=tf.constant_initializer(10))
    update_var = tf.get_variable("update", [], initializer=tf.constant_initializer(10))
    train = optimize_loss(tf.abs(var * x), None, 0.1, "SGD", update_ops=[tf.assign(update_var, 20)])
    assert _train_once(train, x, var, update_var) == [9.5, 20]


def test_update_ops_from_the_collection_and_no_increment():
    x, var, loss, global_step = _setup_model()
    update_var = tf.get_variable("update", [], initializer=tf.constant_initializer(10))
    tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign(update_var, 20))
    train = optimize_loss(loss, global_step, 0.1, "SGD", increment_global_step=False)
    assert _train_once(train, x, var, update_var, global_step) == [9.5, 20, 0]


def test_decay_needs_a_global_step():
    x = tf.placeholder(tf.float32, [])
    var = tf.get_variable("test", [], initializer=tf.constant_initializer(10))
    with pytest.raises(ValueError, match="global_step is required for learning_rate_decay_fn"):
        optimize_loss(tf.abs(var * x), None, 0.1, "SGD", learning_rate_decay_fn=lambda lr, s: lr)


def _summary_values(fetch, x, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        merged = tf.summary.merge_all()
        data, _ = sess.run([merged, fetch], {x: 5.0, **(feed or {})})
    return {v.tag: v for v in tf.Summary.FromString(data).value}


def test_default_summaries_are_loss_and_global_gradient_norm():
    x, var, loss, global_step = _setup_model()
    train = optimize_loss(loss, global_step, 0.1, "SGD")
    values = _summary_values(train, x)
    # No learning_rate summary without a decay function, as in TF.
    assert sorted(values) == ["OptimizeLoss/global_norm/gradient_norm", "OptimizeLoss/loss"]
    assert values["OptimizeLoss/loss"].simple_value == 50.0
    assert values["OptimizeLoss/global_norm/gradient_norm"].simple_value == 5.0


def test_all_summaries_with_decay_and_clipping():
    x, var, loss, global_step = _setup_model()

    def decay(lr, step):
        return tf.train.exponential_decay(lr, step, 10, 0.5)

    train = optimize_loss(
        loss,
        global_step,
        0.1,
        "SGD",
        clip_gradients=2.0,
        learning_rate_decay_fn=decay,
        summaries=tf.contrib.layers.OPTIMIZER_SUMMARIES,
        name="opt",
    )
    values = _summary_values(train, x)
    assert sorted(values) == [
        "opt/global_norm/clipped_gradient_norm",
        "opt/global_norm/gradient_norm",
        "opt/gradient_norm/test_0",
        "opt/gradients/test_0",
        # The float rate's variable took the name scope "opt/learning_rate" first (TF too).
        "opt/learning_rate_1",
        "opt/loss",
    ]
    np.testing.assert_allclose(values["opt/learning_rate_1"].simple_value, 0.1)
    assert values["opt/global_norm/gradient_norm"].simple_value == 5.0
    assert values["opt/global_norm/clipped_gradient_norm"].simple_value == 2.0
    assert values["opt/gradient_norm/test_0"].simple_value == 2.0
    histogram = values["opt/gradients/test_0"].histo
    assert (histogram.num, histogram.min, histogram.sum) == (1, 2.0, 2.0)
    assert "opt/learning_rate" in [v.op.name for v in tf.global_variables()]
    assert "opt/learning_rate" not in [v.op.name for v in tf.trainable_variables()]


def test_a_tensor_learning_rate_is_used_as_is():
    x, var, loss, global_step = _setup_model()
    rate = tf.placeholder(tf.float32, [])
    train = optimize_loss(
        loss, global_step, rate, "SGD", learning_rate_decay_fn=lambda lr, step: lr * 0.5
    )
    values = _summary_values(train, x, {rate: 0.2})
    np.testing.assert_allclose(values["OptimizeLoss/learning_rate"].simple_value, 0.1)
    assert tf.global_variables() == [var, global_step]
