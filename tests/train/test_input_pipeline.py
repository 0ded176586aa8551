"""A whole TF1 input pipeline feeding a model: numpy rows -> slice_input_producer ->
shuffle_batch -> SGD.

The expected counts come from the data: 2 epochs of 50 rows is 100 records,
each row exactly twice, in batches of 8 (12 full ones and a final 4: a
shuffling queue's dequeue_up_to gives full batches until it is closed and
fewer are left). The model is a linear regression whose targets are an exact
linear function of the inputs: numpy computes the loss of the trained weights
over all 50 rows, which must be far below that of the zero weights it started
from (by hand, over thousands of random orders of the 100 records, 13 steps
of SGD always end below 3% of it). The second test places the shuffle queue
on a ps task of a two-process cluster and reads it from the worker."""

import re
from pathlib import Path

import numpy as np
import pytest

import minitf as tf
from minitf.cluster import LocalCluster

pytestmark = pytest.mark.timeout(60)

ROWS, EPOCHS, BATCH = 50, 2, 8


def data():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(ROWS, 3)).astype(np.float32)
    targets = features @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
    return np.arange(ROWS, dtype=np.int32), features, targets


def pipeline(ids, features, targets, batch_device=None):
    """The pipeline: shuffled slices of the rows for EPOCHS epochs, shuffled again and batched."""
    row = tf.train.slice_input_producer([ids, features, targets], num_epochs=EPOCHS, seed=3)
    with tf.device(batch_device):
        return tf.train.shuffle_batch(
            row,
            batch_size=BATCH,
            capacity=20,
            min_after_dequeue=10,
            seed=4,
            allow_smaller_final_batch=True,
        )


def train_until_the_input_ends(sess, train_op, loss, id_batch):
    """Runs ``train_op`` until OutOfRangeError; returns the ids seen, batch sizes and losses."""
    seen, sizes, losses = [], [], []
    while True:
        try:
            _, batch_loss, batch_ids = sess.run([train_op, loss, id_batch])
        except tf.errors.OutOfRangeError:
            return seen, sizes, losses
        seen.extend(batch_ids.tolist())
        sizes.append(len(batch_ids))
        losses.append(batch_loss)


def test_a_model_trains_on_every_record_of_two_epochs_exactly_twice():
    id_batch, x, y = pipeline(*data())
    assert x.shape.as_list() == [None, 3]
    w = tf.Variable(tf.zeros([3, 1]))
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        seen, sizes, _ = train_until_the_input_ends(sess, train_op, loss, id_batch)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        got_w, got_b = sess.run([w, b])
    assert len(seen) == ROWS * EPOCHS
    assert sorted(seen) == sorted(list(range(ROWS)) * EPOCHS)
    assert sizes == [BATCH] * (ROWS * EPOCHS // BATCH) + [ROWS * EPOCHS % BATCH]
    assert seen[:ROWS] != list(range(ROWS))  # the producer shuffled the rows
    _, features, targets = data()
    trained_loss = np.mean((features @ got_w + got_b - targets) ** 2)
    assert trained_loss < 0.1 * np.mean(targets**2)  # the loss of w = 0, b = 0


@pytest.mark.timeout(30)
def test_a_worker_reads_batches_from_a_queue_on_the_ps_task():
    ids, features, targets = data()
    with LocalCluster({"ps": 1, "worker": 1}, output=None) as cluster:
        id_batch, _, _ = pipeline(ids, features, targets, batch_device="/job:ps/task:0")
        (producer_runner, batch_runner) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert producer_runner.queue.queue_ref.device == ""  # the session's task: the worker
        assert batch_runner.queue.queue_ref.device == "/job:ps/task:0"
        assert batch_runner.queue.queue_ref.op.type == "RandomShuffleQueueV2"
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            seen = []
            with pytest.raises(tf.errors.OutOfRangeError):
                while True:
                    seen.extend(sess.run(id_batch).tolist())
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    assert sorted(seen) == sorted(list(range(ROWS)) * EPOCHS)


@pytest.mark.parametrize("index", [0, 1], ids=["files-shuffle_batch", "numpy-batch"])
def test_each_example_of_the_docs_page_reads_100_records(index, capsys):
    page = Path(__file__).resolve().parents[2] / "docs" / "input-pipelines-queues.md"
    examples = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(examples) == 2
    exec(compile(examples[index], str(page), "exec"), {})
    assert capsys.readouterr().out == "done: 100 records\n"
