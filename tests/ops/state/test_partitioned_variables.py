"""Partitioned variables: shards, their values, lookups, updates and placement (TF 1.x, spec §3)."""

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

FULL = np.arange(15, dtype=np.float32).reshape(5, 3)


def shard_shapes(pv):
    return [s.get_shape().as_list() for s in pv]


@pytest.mark.parametrize(
    "shape, shards, expected",
    [
        ([5, 3], 2, [[3, 3], [2, 3]]),
        ([7, 2], 3, [[3, 2], [2, 2], [2, 2]]),
        ([2, 4], 5, [[1, 4], [1, 4]]),  # never more shards than rows
        ([6], 3, [[2], [2], [2]]),
    ],
)
def test_fixed_size_shards_are_named_and_sized_like_tf(shape, shards, expected):
    pv = tf.get_variable("v", shape, partitioner=tf.fixed_size_partitioner(shards))
    assert shard_shapes(pv) == expected
    assert [s.op.name for s in pv] == [f"v/part_{i}" for i in range(len(expected))]
    assert pv.get_shape().as_list() == shape and len(pv) == len(expected)
    assert [v.op.name for v in tf.global_variables()] == [s.op.name for s in pv]


def test_fixed_size_partitioner_on_axis_1():
    pv = tf.get_variable("w", [2, 5], partitioner=tf.fixed_size_partitioner(2, axis=1))
    assert shard_shapes(pv) == [[2, 3], [2, 2]]


def test_min_max_partitioner_counts():
    # 1024 x 256 float32 = 1 MB; 256 KB slices -> 4 shards, capped by max_partitions.
    p = tf.min_max_variable_partitioner(max_partitions=3, min_slice_size=256 << 10)
    assert p(shape=tf.TensorShape([1024, 256]), dtype=tf.float32) == [3, 1]
    p = tf.min_max_variable_partitioner(max_partitions=10, min_slice_size=256 << 10)
    assert p(shape=tf.TensorShape([1024, 256]), dtype=tf.float32) == [4, 1]
    assert p(shape=tf.TensorShape([2, 256]), dtype=tf.float32) == [1, 1]
    with pytest.raises(ValueError, match="along axis 2"):
        tf.min_max_variable_partitioner(axis=2)(shape=tf.TensorShape([4, 4]), dtype=tf.float32)


def test_variable_axis_size_partitioner_counts():
    # Rows of 4 float32 = 16 bytes; 40-byte shards hold 2 rows; 5 rows -> 3 shards.
    p = tf.variable_axis_size_partitioner(max_shard_bytes=40)
    assert p(shape=tf.TensorShape([5, 4]), dtype=tf.float32) == [3, 1]
    p = tf.variable_axis_size_partitioner(max_shard_bytes=40, max_shards=2)
    assert p(shape=tf.TensorShape([5, 4]), dtype=tf.float32) == [2, 1]
    with pytest.raises(ValueError, match="positive"):
        tf.variable_axis_size_partitioner(max_shard_bytes=0)


def test_a_partitioner_may_cut_only_one_axis():
    with pytest.raises(ValueError, match="one dimension"):
        tf.get_variable("v", [4, 4], partitioner=lambda shape, dtype: [2, 2])


def test_shards_of_a_constant_initial_value_are_its_slices():
    pv = tf.get_variable(
        "emb", initializer=tf.constant(FULL), partitioner=tf.fixed_size_partitioner(2)
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        parts = sess.run(list(pv))
        full = sess.run(tf.convert_to_tensor(pv))
    np.testing.assert_array_equal(parts[0], FULL[:3])
    np.testing.assert_array_equal(parts[1], FULL[3:])
    np.testing.assert_array_equal(full, FULL)


def test_a_partitioned_variable_is_usable_as_a_tensor():
    pv = tf.get_variable(
        "w", initializer=tf.constant(FULL), partitioner=tf.fixed_size_partitioner(3)
    )
    y = tf.matmul(tf.ones([1, 5]), pv)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), FULL.sum(axis=0, keepdims=True))


@pytest.mark.parametrize("strategy", ["div", "mod"])
def test_embedding_lookup_over_shards(strategy):
    pv = tf.get_variable(
        "emb", initializer=tf.constant(FULL), partitioner=tf.fixed_size_partitioner(2)
    )
    ids = np.array([0, 4, 2, 1, 3])
    looked = tf.nn.embedding_lookup(pv, ids, partition_strategy=strategy)
    shards = [FULL[:3], FULL[3:]]
    if strategy == "div":  # id -> the shard holding it contiguously
        expected = FULL[ids]
    else:  # id -> shard id % 2, row id // 2 (TF's default, for mod-sharded tables)
        expected = np.stack([shards[i % 2][i // 2] for i in ids])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(looked), expected)


def test_reuse_returns_the_same_shards():
    with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(2)):
        a = tf.get_variable("v", [4, 2])
    with tf.variable_scope("s", reuse=True, partitioner=tf.fixed_size_partitioner(2)):
        b = tf.get_variable("v", [4, 2])
    assert a is b and a.name == "s/v"
    with pytest.raises(ValueError, match="does not exist"):
        with tf.variable_scope("s", reuse=True):
            tf.get_variable("w", [4, 2], partitioner=tf.fixed_size_partitioner(2))


def test_minimize_updates_every_shard():
    pv = tf.get_variable(
        "w", initializer=tf.constant(FULL), partitioner=tf.fixed_size_partitioner(2)
    )
    c = np.linspace(-1.0, 1.0, 15, dtype=np.float32).reshape(5, 3)
    loss = tf.reduce_sum(tf.convert_to_tensor(pv) * c)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        parts = sess.run(list(pv))
    expected = FULL - np.float32(0.5) * c  # d(sum(w * c))/dw = c
    np.testing.assert_allclose(np.concatenate(parts), expected, rtol=1e-6)


def test_replica_device_setter_spreads_shards_over_ps_tasks():
    setter = tf.train.replica_device_setter(ps_tasks=2)
    with tf.device(setter):
        pv = tf.get_variable("big", [6, 2], partitioner=tf.fixed_size_partitioner(3))
        other = tf.get_variable("small", [2])
    assert [s.op.device for s in pv] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert other.op.device == "/job:ps/task:1"
