"""tf.data pipelines feeding a model, locally and from a ps task of a two-process cluster.

The model is a logistic regression on linearly separable points: their labels come
from a known plane, so numpy computes the trained weights' accuracy over all rows
(the untrained model, all logits 0, scores no better than the majority class)."""

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import LocalCluster

ROWS = 200


def separable_data():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(ROWS, 2)).astype(np.float32)
    labels = (features @ np.array([[2.0], [-1.0]]) + 0.5 > 0).astype(np.float32)
    return features, labels


@pytest.mark.timeout(60)
def test_logistic_regression_trains_from_a_shuffled_batched_repeated_dataset():
    features, labels = separable_data()
    dataset = (
        tf.data.Dataset.from_tensor_slices((features, labels))
        .shuffle(ROWS, seed=1)
        .batch(20)
        .repeat()
    )
    x, y = dataset.make_one_shot_iterator().get_next()
    assert x.shape.as_list() == [None, 2] and y.shape.as_list() == [None, 1]
    w = tf.Variable(tf.zeros([2, 1]))
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, w) + b)
    )
    train_op = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(200):  # 20 epochs of 10 batches
            sess.run(train_op)
        got_w, got_b = sess.run([w, b])
    accuracy = np.mean(((features @ got_w + got_b) > 0) == (labels > 0.5))
    assert accuracy > 0.95
    assert max(labels.mean(), 1 - labels.mean()) < 0.8  # what w = 0 would score at best


@pytest.mark.timeout(30)
def test_a_worker_reads_an_iterator_placed_on_the_ps_task():
    with LocalCluster({"ps": 1, "worker": 1}, output=None) as cluster:
        with tf.device("/job:ps/task:0"):
            dataset = tf.data.Dataset.range(10).map(lambda v: v * 3).batch(4)
            iterator = dataset.make_initializable_iterator(shared_name="ps_iterator")
        next_batch = iterator.get_next()
        assert iterator._iterator_resource.device == "/job:ps/task:0"
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(iterator.initializer)
            got = [sess.run(next_batch).tolist() for _ in range(3)]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(next_batch)
        # a second session of the worker reads the same iterator, where it lives: on the ps
        with tf.Session(cluster.target("worker", 0)) as sess:
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(next_batch)
            sess.run(iterator.initializer)
            assert sess.run(next_batch).tolist() == [0, 3, 6, 9]
    assert got == [[0, 3, 6, 9], [12, 15, 18, 21], [24, 27]]
