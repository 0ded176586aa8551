"""tf.contrib.layers.batch_norm: ports of contrib's ``layers_test.py`` ``BatchNormTest``
(names, collections, the three implementations' moving averages); values by numpy, with
TF's Bessel correction where TF1 uses its fused kernel."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

layers = tf.contrib.layers
BATCH, HEIGHT, WIDTH, CHANNELS = 10, 2, 2, 3
# (fused, data_format) as BatchNormTest runs them; TF runs fused NCHW on GPUs only.
FORMATS = [(False, "NHWC"), (False, "NCHW"), (True, "NHWC"), (True, "NCHW")]


def _named(name):
    return [v for v in tf.global_variables() if v.op.name.split("/")[-1] == name]


def _images(data_format, seed=1):
    """Random images and their per-channel batch mean and (biased) variance by numpy."""
    shape = (BATCH, HEIGHT, WIDTH, CHANNELS)
    axes = (0, 1, 2)
    if data_format == "NCHW":
        shape, axes = (BATCH, CHANNELS, HEIGHT, WIDTH), (0, 2, 3)
    values = np.random.RandomState(seed).rand(*shape)
    return values, values.mean(axis=axes), values.var(axis=axes)


def _bessel(variance, fused):
    """TF's fused kernel moves the average towards the unbiased variance."""
    n = BATCH * HEIGHT * WIDTH
    return variance * n / (n - 1) if fused else variance


def _moving():
    return _named("moving_mean")[0], _named("moving_variance")[0]


def test_variables_names_and_model_variables():
    layers.batch_norm(tf.random_uniform((5, 3, 3, 3), seed=1), scale=True)
    names = [v.op.name for v in tf.model_variables()]
    assert sorted(names) == [
        "BatchNorm/beta",
        "BatchNorm/gamma",
        "BatchNorm/moving_mean",
        "BatchNorm/moving_variance",
    ]
    assert sorted(v.op.name for v in tf.trainable_variables()) == [
        "BatchNorm/beta",
        "BatchNorm/gamma",
    ]


@pytest.mark.parametrize("fused", [None, False])
def test_defaults_center_without_scale(fused):
    out = layers.batch_norm(np.ones((5, 3, 3, 4), np.float32), fused=fused)
    assert out.get_shape().as_list() == [5, 3, 3, 4]
    assert _named("gamma") == [] and len(_named("beta")) == 1
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == []


def test_center_false_nchw_builds():
    layers.batch_norm(
        tf.placeholder(tf.float32, (10, 10, 10, 10)), center=False, data_format="NCHW"
    )
    assert _named("beta") == []


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("param", ["beta", "gamma"])
def test_param_regularizers(fused, param):
    images = np.random.RandomState(0).uniform(size=(5, 3, 3, 3)).astype(np.float32)
    layers.batch_norm(
        images,
        scale=True,
        fused=fused,
        param_regularizers={param: lambda x: 0.1 * tf.reduce_sum(x)},
    )
    (loss,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(loss) == pytest.approx(0.1 * 3 * (1.0 if param == "gamma" else 0.0))


def test_updates_collection_and_variables_collections():
    keys = ["beta", "gamma", "moving_mean", "moving_variance"]
    layers.batch_norm(
        tf.random_uniform((5, 3, 3, 3), seed=1),
        scale=True,
        updates_collections="my_update_ops",
        variables_collections={k: [k] for k in keys},
    )
    mean_update, variance_update = tf.get_collection("my_update_ops")
    assert mean_update.op.name.startswith("BatchNorm/AssignMovingAvg")
    assert variance_update.op.name.startswith("BatchNorm/AssignMovingAvg_1")
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    for key in keys:
        assert [v.op.name for v in tf.get_collection(key)] == [f"BatchNorm/{key}"]


def test_reuse_variables_and_update_ops():
    images = tf.random_uniform((5, 3, 3, 3), seed=1)
    with tf.contrib.framework.arg_scope([layers.batch_norm], updates_collections="updates"):
        layers.batch_norm(images, scale=True, scope="bn")
        assert len(tf.get_collection("updates")) == 2
        layers.batch_norm(images, scale=True, scope="bn", reuse=True)
        assert len(tf.get_collection("updates")) == 4
    assert len(tf.global_variables()) == 4


def test_undefined_rank_channels_and_bad_data_format():
    with pytest.raises(ValueError, match="undefined rank"):
        layers.batch_norm(tf.placeholder(tf.float32))
    with pytest.raises(ValueError, match="undefined rank"):
        layers.batch_norm(tf.placeholder(tf.float32), updates_collections=None)
    with pytest.raises(ValueError, match="data_format has to be either NCHW or NHWC."):
        layers.batch_norm(tf.placeholder(tf.float32), data_format="CHWN")
    for data_format, shape in (("NHWC", (5, 3, 3, None)), ("NCHW", (5, None, 3, 3))):
        for updates in (tf.GraphKeys.UPDATE_OPS, None):
            with pytest.raises(ValueError, match="undefined"):
                layers.batch_norm(
                    tf.placeholder(tf.float32, shape),
                    data_format=data_format,
                    updates_collections=updates,
                )


@pytest.mark.parametrize("option", [{"batch_weights": [1.0] * 5}, {"renorm": True}])
def test_unsupported_options_are_refused(option):
    with pytest.raises(NotImplementedError, match=f"has no `{next(iter(option))}`"):
        layers.batch_norm(tf.zeros((5, 3)), **option)


def _run_ten_steps(output, with_updates):
    """Initializes, then runs ``output`` (after UPDATE_OPS if asked) ten times."""
    if with_updates:
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            output = tf.identity(output)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    np.testing.assert_allclose(sess.run(list(_moving())), [[0] * 3, [1] * 3])
    for _ in range(10):
        sess.run(output)
    return sess


@pytest.mark.parametrize("fused, data_format", FORMATS)
def test_none_updates_collections_update_in_place(fused, data_format):
    # BatchNormTest._testNoneUpdatesCollections: decay 0.1, ten steps reach the batch's moments.
    values, mean, variance = _images(data_format)
    output = layers.batch_norm(
        tf.constant(values, tf.float32),
        decay=0.1,
        updates_collections=None,
        fused=fused,
        data_format=data_format,
    )
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with _run_ten_steps(output, with_updates=False) as sess:
        moving = sess.run(list(_moving()))
    np.testing.assert_allclose(moving[0], mean, rtol=1e-5)
    np.testing.assert_allclose(moving[1], _bessel(variance, fused), rtol=1e-5)


@pytest.mark.parametrize("fused, data_format", FORMATS)
def test_delayed_updates_in_update_ops(fused, data_format):
    # BatchNormTest._testDelayedUpdateMovingVars.
    values, mean, variance = _images(data_format)
    output = layers.batch_norm(
        tf.constant(values, tf.float32), decay=0.1, fused=fused, data_format=data_format
    )
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    with _run_ten_steps(output, with_updates=True) as sess:
        moving = sess.run(list(_moving()))
    np.testing.assert_allclose(moving[0], mean, rtol=1e-5)
    np.testing.assert_allclose(moving[1], _bessel(variance, fused), rtol=1e-5)


@pytest.mark.parametrize("updates_collections", [tf.GraphKeys.UPDATE_OPS, None])
def test_no_updates_when_is_training_false(updates_collections):
    values, _, _ = _images("NHWC")
    output = layers.batch_norm(
        tf.constant(values, tf.float32),
        decay=0.1,
        is_training=False,
        updates_collections=updates_collections,
    )
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with _run_ten_steps(output, with_updates=False) as sess:
        np.testing.assert_allclose(sess.run(list(_moving())), [[0] * 3, [1] * 3])


def _normalized(x, mean, variance, epsilon=0.001, axes=(0, 1, 2)):
    shape = [1] * x.ndim
    shape[[a for a in range(x.ndim) if a not in axes][0]] = -1
    return (x - mean.reshape(shape)) / np.sqrt(variance.reshape(shape) + epsilon)


@pytest.mark.parametrize("updates_collections", [tf.GraphKeys.UPDATE_OPS, None])
@pytest.mark.parametrize("fused, data_format", FORMATS)
def test_is_training_tensor(fused, data_format, updates_collections):
    # BatchNormTest._testIsTrainingVariable and _testNoneUpdatesCollectionIsTrainingVariable.
    values, mean, variance = _images(data_format)
    axes = (0, 1, 2) if data_format == "NHWC" else (0, 2, 3)
    is_training = tf.placeholder(tf.bool, [])
    output = layers.batch_norm(
        tf.constant(values, tf.float32),
        decay=0.1,
        is_training=is_training,
        fused=fused,
        data_format=data_format,
        updates_collections=updates_collections,
    )
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    zeros, ones = np.zeros(3), np.ones(3)
    feed = {is_training: False}
    np.testing.assert_allclose(
        sess.run(output, feed), _normalized(values, zeros, ones, axes=axes), rtol=1e-5
    )
    np.testing.assert_allclose(sess.run(list(_moving())), [zeros, ones])
    train = output
    if updates_collections is not None:
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.identity(output)
    for _ in range(10):
        got = sess.run(train, {is_training: True})
    np.testing.assert_allclose(got, _normalized(values, mean, variance, axes=axes), atol=1e-4)
    moving_mean, moving_variance = sess.run(list(_moving()))
    np.testing.assert_allclose(moving_mean, mean, rtol=1e-5)
    np.testing.assert_allclose(moving_variance, _bessel(variance, fused), rtol=1e-5)
    sess.run(train, feed)  # not training: the averages stay
    np.testing.assert_allclose(sess.run(_moving()[0]), mean, rtol=1e-5)
    sess.close()


def test_fully_connected_input_uses_the_fused_statistics():
    # A 2-D input goes through TF's fused kernel by default: unbiased moving variance.
    x = np.random.RandomState(4).randn(8, 5)
    output = layers.batch_norm(tf.constant(x, tf.float32), decay=0.0)
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        output = tf.identity(output)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(output)
        moving = sess.run(list(_moving()))
    np.testing.assert_allclose(got, _normalized(x, x.mean(0), x.var(0), axes=(0,)), atol=1e-5)
    np.testing.assert_allclose(moving[0], x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(moving[1], x.var(0, ddof=1), rtol=1e-5)


def test_custom_initializers_in_inference():
    # BatchNormTest.testCustomInitializer: (9 - 5) / sqrt(4) * 2 + 5 == 9.
    images = np.full((5, 3, 3, 3), 9.0, np.float32)
    inits = {"beta": 5.0, "gamma": 2.0, "moving_mean": 5.0, "moving_variance": 4.0}
    output = layers.batch_norm(
        images,
        is_training=False,
        scale=True,
        epsilon=0.0,
        param_initializers={k: tf.constant_initializer(v) for k, v in inits.items()},
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(output), images)


@pytest.mark.parametrize("is_training", [True, False])
@pytest.mark.parametrize("shape", [[7, 3, 5], [5, 2, 3, 4], [11, 3, 2, 4, 5]])
def test_nhwc_and_nchw_give_the_same_output(shape, is_training):
    # BatchNormTest._runBatchNormalizationWithFormat, checked against numpy too.
    channels = shape[-1]
    images = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    params = {
        "beta": np.arange(2, channels + 2, dtype=np.float32),
        "gamma": np.arange(10, channels + 10, dtype=np.float32) * 2.0,
        "moving_mean": np.arange(3, channels + 3, dtype=np.float32) * 5.0,
        "moving_variance": np.arange(1, channels + 1, dtype=np.float32) * 4.0,
    }
    to_nchw = [0, len(shape) - 1, *range(1, len(shape) - 1)]
    to_nhwc = [0, *range(2, len(shape)), 1]
    outputs = []
    for data_format in ("NHWC", "NCHW"):
        with tf.Graph().as_default():
            x = tf.constant(images)
            output = layers.batch_norm(
                x if data_format == "NHWC" else tf.transpose(x, to_nchw),
                is_training=is_training,
                scale=True,
                epsilon=0.5,
                param_initializers={k: tf.constant_initializer(v) for k, v in params.items()},
                data_format=data_format,
            )
            if data_format == "NCHW":
                output = tf.transpose(output, to_nhwc)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                outputs.append(sess.run(output))
    axes = tuple(range(len(shape) - 1))
    mean, variance = params["moving_mean"], params["moving_variance"]
    if is_training:
        mean, variance = images.mean(axis=axes), images.var(axis=axes)
    expected = (images - mean) / np.sqrt(variance + 0.5) * params["gamma"] + params["beta"]
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outputs[1], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("updates_collections", [tf.GraphKeys.UPDATE_OPS, None])
def test_float16_inputs_keep_float32_variables(updates_collections):
    images = tf.random_uniform((5, 3, 3, 3), seed=1, dtype=tf.float16)
    output = layers.batch_norm(images, scale=True, updates_collections=updates_collections)
    assert output.dtype == tf.float16
    for name in ("beta", "gamma", "moving_mean", "moving_variance"):
        assert _named(name)[0].dtype.base_dtype == tf.float32


def test_train_moving_vars_keep_outputs_normalized():
    # BatchNormTest._testTrainMovingVars (fused NHWC): inputs near 256, decay 0.2.
    values = np.random.RandomState(1).rand(10, 7, 7, 32) + 256
    images = tf.constant(values, tf.float32)
    output = layers.batch_norm(images, decay=0.2, updates_collections=None)
    (grad,) = tf.gradients(tf.reduce_sum(output), images)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(grad)
        for _ in range(10):
            out, again = sess.run([output, grad])
            np.testing.assert_allclose(out.mean(axis=(0, 1, 2)), 0, atol=1e-3)
            np.testing.assert_allclose(out.var(axis=(0, 1, 2)), 1, rtol=1e-2, atol=1e-2)
            assert np.abs(first - again).max() < 5e-5
        moving = sess.run(list(_moving()))
    np.testing.assert_allclose(moving[0], values.mean(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(moving[1], values.var(axis=(0, 1, 2), ddof=1), rtol=1e-3)


def test_activation_and_outputs_collections():
    output = layers.batch_norm(
        tf.constant([[-1.0, 2.0], [1.0, 0.0]]),
        activation_fn=tf.nn.relu,
        outputs_collections="outputs",
        scope="bn",
    )
    assert tf.get_collection("outputs") == [output]
    assert output.aliases == ["bn"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # Per column: (x - mean) / sqrt(var + 0.001), then ReLU.
        expected = np.maximum(np.array([[-1.0, 1.0], [1.0, -1.0]]) / np.sqrt(1.001), 0)
        np.testing.assert_allclose(sess.run(output), expected, rtol=1e-5)


def test_zero_debias_variables_are_model_variables():
    # BatchNormTest.testMovingAverageVariablesZeroDebias.
    layers.batch_norm(
        tf.random_uniform((5, 3, 3, 3), seed=1),
        scale=True,
        zero_debias_moving_mean=True,
        fused=False,
    )
    assert len(tf.model_variables()) == 6
    assert _named("biased")[0].op.name == "BatchNorm/BatchNorm/moving_mean/biased"
    assert _named("local_step")[0].op.name == "BatchNorm/BatchNorm/moving_mean/local_step"


@pytest.mark.parametrize("updates_collections", [tf.GraphKeys.UPDATE_OPS, None])
@pytest.mark.parametrize("fused, data_format", FORMATS)
def test_zero_debias_moving_mean_is_the_batch_mean_after_each_step(
    fused, data_format, updates_collections
):
    # BatchNormTest.testZeroDebiasMovingMean and the ZeroDebias cases of
    # _testNoneUpdatesCollections/_testDelayedUpdateMovingVars: with one batch the
    # debiased mean is that batch's mean from the first step on.
    values, mean, variance = _images(data_format)
    output = layers.batch_norm(
        tf.constant(values, tf.float32),
        decay=0.1,
        updates_collections=updates_collections,
        zero_debias_moving_mean=True,
        fused=fused,
        data_format=data_format,
    )
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == (0 if updates_collections is None else 2)
    with tf.control_dependencies(updates):
        output = tf.identity(output)
    moving_mean, moving_variance = _moving()
    biased, local_step = _named("biased")[0], _named("local_step")[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run([moving_mean, biased]), [[0] * 3, [0] * 3])
        for step in range(10):
            assert sess.run(local_step) == step
            sess.run(output)
            np.testing.assert_allclose(sess.run(moving_mean), mean, rtol=1e-5)
        np.testing.assert_allclose(sess.run(biased), mean, rtol=1e-5)
        # 1 - 0.1 ** 10 of the way from 1: not debiased.
        expected = 0.1**10 + (1 - 0.1**10) * _bessel(variance, fused)
        np.testing.assert_allclose(sess.run(moving_variance), expected, rtol=1e-5)


def test_zero_debias_with_center_false_and_float16():
    # BatchNormTest.testBatchNormBeta (issue 11673): builds and initializes.
    for dtype in (tf.float32, tf.float16):
        layers.batch_norm(
            tf.placeholder(dtype, (10, 10, 10, 10)),
            center=False,
            data_format="NCHW",
            zero_debias_moving_mean=True,
        )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
    assert all(v.dtype.base_dtype == tf.float32 for v in tf.global_variables())
