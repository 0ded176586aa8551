"""The classic TF1 input pipeline, unchanged: record files of tf.train.Example -> a filename
queue -> TFRecordReader -> parse_single_example -> a batch queue -> a model.

The files hold rows of a linear function. With one reader thread, an unshuffled
filename queue and plain gradient descent, the batches arrive in file order, so
the weights after the last step are fixed by the data: numpy computes them
again by hand, batch by batch, from the same rows (the oracle). The record and
epoch counts come from the files: 3 files of 7 rows, 2 epochs.
"""

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


def test_the_classic_pipeline_reads_every_record_of_every_epoch_and_trains_as_by_hand(tmp_path):
    paths = write_files(tmp_path)
    filename_queue = tf.train.string_input_producer(paths, num_epochs=EPOCHS, shuffle=False)
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "x": tf.FixedLenFeature([2], tf.float32),
            "y": tf.FixedLenFeature([], tf.float32),
            "id": tf.FixedLenFeature([], tf.int64),
        },
    )
    x, y, ids = tf.train.batch(
        [features["x"], features["y"], features["id"]],
        batch_size=BATCH,
        capacity=16,
        allow_smaller_final_batch=True,
    )
    w = tf.Variable(tf.zeros([2]))
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) + b - y))
    train_op = tf.train.GradientDescentOptimizer(RATE).minimize(loss)

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

    total = FILES * ROWS_PER_FILE
    # Every record of every file, in file order, once per epoch.
    assert seen == list(range(total)) * EPOCHS
    assert produced == total * EPOCHS
    want_w, want_b = oracle_weights(seen)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_b, want_b, rtol=1e-4, atol=1e-5)
