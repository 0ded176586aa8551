"""``tf.nn.embedding_lookup``: single and sharded parameters, partition strategies, gradients."""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.gradients.gradient_checker import compute_gradient_error
from minitf.ops.nn import embedding_ops

pytestmark = pytest.mark.timeout(60)

VOCAB = np.arange(20, dtype=np.float32).reshape(10, 2)
IDS = np.array([[1, 7], [3, 9], [0, 1]], dtype=np.int32)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def mod_shards(matrix, n):
    """Row i of the matrix lives in shard i % n (at row i // n)."""
    return [matrix[i::n] for i in range(n)]


def div_shards(matrix, n):
    """Consecutive blocks; the first len % n shards get one row more."""
    q, r = divmod(len(matrix), n)
    sizes = [q + 1] * r + [q] * (n - r)
    return np.split(matrix, np.cumsum(sizes)[:-1])


def test_single_params_is_a_gather_returning_rows():
    params = tf.constant(VOCAB)
    out = embedding_ops.embedding_lookup(params, IDS)
    assert out.shape.as_list() == [3, 2, 2]
    assert out.op.type == "Identity"
    gather = out.op.inputs[0].op
    assert gather.type == "GatherV2" and gather.name == "embedding_lookup"
    np.testing.assert_array_equal(run(out), VOCAB[IDS])


def test_single_params_gather_is_colocated_with_params():
    params = tf.constant(VOCAB, name="emb")
    out = embedding_ops.embedding_lookup(params, IDS)
    assert out.op.inputs[0].op.colocation_groups() == [b"loc:@emb"]
    assert out.op.colocation_groups() == [f"loc:@{out.op.name}".encode()]


@pytest.mark.parametrize("num_shards", [2, 3, 4])
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_lookup_matches_unsharded(strategy, num_shards):
    split = mod_shards if strategy == "mod" else div_shards
    shards = [tf.constant(s) for s in split(VOCAB, num_shards)]
    out = embedding_ops.embedding_lookup(shards, IDS, partition_strategy=strategy)
    assert out.shape.as_list() == [3, 2, 2]
    np.testing.assert_array_equal(run(out), VOCAB[IDS])


def test_div_with_unknown_shard_sizes():
    shards = div_shards(VOCAB, 3)
    phs = [tf.placeholder(tf.float32, [None, 2]) for _ in shards]
    ids = tf.placeholder(tf.int64, [None])
    out = embedding_ops.embedding_lookup(phs, ids, partition_strategy="div")
    assert out.shape.as_list() == [None, 2]
    feed = dict(zip(phs, shards))
    feed[ids] = np.array([9, 0, 4, 3, 7], np.int64)
    np.testing.assert_array_equal(run(out, feed), VOCAB[[9, 0, 4, 3, 7]])


def test_unknown_strategy_and_empty_params():
    shards = [tf.constant(s) for s in mod_shards(VOCAB, 2)]
    with pytest.raises(ValueError, match="Unrecognized partition strategy: foo"):
        embedding_ops.embedding_lookup(shards, IDS, partition_strategy="foo")
    with pytest.raises(ValueError, match="Need at least one param"):
        embedding_ops.embedding_lookup([], IDS)


def test_gradient_wrt_params_is_indexed_slices_with_duplicates_summed():
    params = tf.constant(VOCAB)
    out = embedding_ops.embedding_lookup(params, IDS)
    (grad,) = tf.gradients(out, params)
    assert isinstance(grad, tf.IndexedSlices)
    values, indices, dense_shape, dense = run(
        [grad.values, grad.indices, grad.dense_shape, tf.convert_to_tensor(grad)]
    )
    np.testing.assert_array_equal(indices, IDS.ravel())
    np.testing.assert_array_equal(values, np.ones((6, 2), np.float32))
    np.testing.assert_array_equal(dense_shape, [10, 2])
    expected = np.zeros((10, 2), np.float32)
    np.add.at(expected, IDS.ravel(), 1.0)
    np.testing.assert_array_equal(dense, expected)
    assert expected[1, 0] == 2.0  # id 1 appears twice


def test_sharded_gradients_are_indexed_slices_per_shard():
    shards = [tf.constant(s) for s in mod_shards(VOCAB, 3)]
    out = embedding_ops.embedding_lookup(shards, IDS)
    grads = tf.gradients(out, shards)
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)
    dense = run([tf.convert_to_tensor(g) for g in grads])
    full = np.zeros((10, 2), np.float32)
    np.add.at(full, IDS.ravel(), 1.0)
    for got, want in zip(dense, mod_shards(full, 3)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_gradient_matches_finite_differences(strategy):
    rng = np.random.default_rng(2)
    shard = tf.placeholder(tf.float64, [2, 3])
    other = tf.constant(rng.standard_normal((2, 3)))
    ids = tf.constant([3, 0, 2, 3])
    out = embedding_ops.embedding_lookup([shard, other], ids, partition_strategy=strategy)
    with tf.Session():
        error = compute_gradient_error(
            shard, [2, 3], out * out, [4, 3], x_init_value=rng.standard_normal((2, 3)), delta=1e-6
        )
    assert error < 1e-6


def test_single_gradient_matches_finite_differences():
    params = tf.placeholder(tf.float64, [5, 2])
    out = embedding_ops.embedding_lookup(params, [[4, 1], [1, 1]])
    with tf.Session():
        error = compute_gradient_error(
            params, [5, 2], out, [2, 2, 2], x_init_value=np.arange(10.0).reshape(5, 2), delta=1e-6
        )
    assert error < 1e-6


def test_max_norm_clips_each_embedding():
    params = tf.constant(np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], np.float32))
    out = embedding_ops.embedding_lookup(params, [0, 1, 2], max_norm=1.0)
    np.testing.assert_allclose(run(out), [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]], rtol=1e-6)


def test_variable_params_lookup_and_colocation():
    v = tf.Variable(VOCAB, name="emb")
    out = embedding_ops.embedding_lookup(v, IDS)
    assert out.op.inputs[0].op.colocation_groups() == [b"loc:@emb"]
    (grad,) = tf.gradients(out, v)
    assert isinstance(grad, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(out), VOCAB[IDS])
