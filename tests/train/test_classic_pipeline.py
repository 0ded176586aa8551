"""The classic TF1 input pipeline, unchanged: record files of tf.train.Example -> a filename
queue -> TFRecordReader -> parse_single_example -> a batch queue -> a model.

The files hold rows of a linear function. With one reader thread, an unshuffled
filename queue and plain gradient descent, the batches arrive in file order, so
the weights after the last step are fixed by the data: numpy computes them
again by hand, batch by batch, from the same rows (the oracle). The record and
epoch counts come from the files: 3 files of 7 rows, 2 epochs.

The second test is the pipeline as TF's docs drew it: shuffled file names,
two reader threads and ``shuffle_batch``. Its order is random, so it checks
what does not depend on the order: every record's id exactly once per epoch,
and a loss over all rows (numpy, from the trained weights) far below that of
the zero weights it starts from (by hand, over thousands of random orders of
the 42 records, 11 steps at rate 0.2 always end below 30% of it)."""

import collections

import numpy as np
import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(60)

FILES, ROWS_PER_FILE, EPOCHS, BATCH, RATE = 3, 7, 2, 4, 0.05
W_TRUE, B_TRUE = np.array([1.5, -2.0], np.float32), 0.5


def rows() -> tuple[np.ndarray, np.ndarray]:
    """Every row of every file, in file order: features ``[n, 2]`` and targets ``[n]``."""
    x = np.random.default_rng(7).normal(size=(FILES * ROWS_PER_FILE, 2)).astype(np.float32)
    return x, (x @ W_TRUE + B_TRUE).astype(np.float32)


def write_files(directory) -> list[str]:
    """Writes the rows as tf.train.Example records, ROWS_PER_FILE per file."""
    x, y = rows()
    paths = []
    for f in range(FILES):
        path = str(directory / f"part-{f}.tfrecord")
        with tf.python_io.TFRecordWriter(path) as writer:
            for i in range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "x": tf.train.Feature(float_list=tf.train.FloatList(value=x[i])),
                            "y": tf.train.Feature(float_list=tf.train.FloatList(value=[y[i]])),
                            "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


def oracle_weights(order: list[int]) -> tuple[np.ndarray, float]:
    """Gradient descent on the mean squared error, by hand, over the rows in ``order``."""
    x, y = rows()
    w, b = np.zeros(2, np.float64), 0.0
    for start in range(0, len(order), BATCH):
        idx = order[start : start + BATCH]
        err = x[idx] @ w + b - y[idx]
        w = w - RATE * 2 * x[idx].T @ err / len(idx)
        b = b - RATE * 2 * err.mean()
    return w, b


def parse(serialized):
    """``parse_single_example`` of one record: ``x`` (2 floats), ``y`` and ``id``."""
    features = tf.parse_single_example(
        serialized,
        features={
            "x": tf.FixedLenFeature([2], tf.float32),
            "y": tf.FixedLenFeature([], tf.float32),
            "id": tf.FixedLenFeature([], tf.int64),
        },
    )
    return [features["x"], features["y"], features["id"]]


def linear_model(x, y, rate):
    """The weights, bias and training op of a linear regression on batches ``x``, ``y``."""
    w = tf.Variable(tf.zeros([2]))
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) + b - y))
    return w, b, tf.train.GradientDescentOptimizer(rate).minimize(loss)


def train_until_the_input_ends(train_op, ids, w, b, reader):
    """Trains until OutOfRangeError; returns the ids seen, w, b and the records read."""
    seen = []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                _, batch_ids = sess.run([train_op, ids])
                seen.extend(batch_ids.tolist())
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        got_w, got_b = sess.run([w, b])
        produced = sess.run(reader.num_records_produced())
    return seen, got_w, got_b, produced


def test_the_classic_pipeline_reads_every_record_of_every_epoch_and_trains_as_by_hand(tmp_path):
    paths = write_files(tmp_path)
    filename_queue = tf.train.string_input_producer(paths, num_epochs=EPOCHS, shuffle=False)
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    x, y, ids = tf.train.batch(
        parse(serialized), batch_size=BATCH, capacity=16, allow_smaller_final_batch=True
    )
    w, b, train_op = linear_model(x, y, RATE)
    seen, got_w, got_b, produced = train_until_the_input_ends(train_op, ids, w, b, reader)

    total = FILES * ROWS_PER_FILE
    # Every record of every file, in file order, once per epoch.
    assert seen == list(range(total)) * EPOCHS
    assert produced == total * EPOCHS
    want_w, want_b = oracle_weights(seen)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_b, want_b, rtol=1e-4, atol=1e-5)


def test_the_pipeline_with_shuffle_batch_sees_every_record_once_per_epoch(tmp_path):
    paths = write_files(tmp_path)
    filename_queue = tf.train.string_input_producer(paths, num_epochs=EPOCHS, seed=1)
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    x, y, ids = tf.train.shuffle_batch(
        parse(serialized),
        batch_size=BATCH,
        capacity=16,
        min_after_dequeue=8,
        num_threads=2,
        seed=2,
        allow_smaller_final_batch=True,
    )
    assert ids.op.inputs[0].op.name == "shuffle_batch/random_shuffle_queue"
    w, b, train_op = linear_model(x, y, 0.2)
    seen, got_w, got_b, produced = train_until_the_input_ends(train_op, ids, w, b, reader)

    total = FILES * ROWS_PER_FILE
    assert collections.Counter(seen) == {i: EPOCHS for i in range(total)}
    assert produced == total * EPOCHS
    assert seen != list(range(total)) * EPOCHS
    features, targets = rows()
    trained_loss = np.mean((features @ got_w + got_b - targets) ** 2)
    assert trained_loss < 0.4 * np.mean(targets**2)  # the loss of w = 0, b = 0
