# %% [markdown]
# # 12. Input pipelines and loops as dataflow
#
# Two more pieces of TF1 are dataflow through and through. An *input
# pipeline* is a chain of queues, each filled by its own threads (queue
# runners) and emptied by the ops after it: file names, then records, then
# shuffled batches. A *loop* is a cycle in the graph: `tf.while_loop` builds
# it from six small ops, and the executor runs the same ops again and again,
# each time in a new *iteration* of the loop's *frame*.
#
# This tutorial writes a few record files, reads them through the classic
# pipeline into a model, steps that pipeline until the shuffle queue makes a
# dequeue wait, then builds a loop, draws it and steps it iteration by
# iteration. It ends with an LSTM on `tf.nn.dynamic_rnn`, which is such a loop.
#
# Run it with `.venv/bin/python tutorials/12_input_pipelines_and_loops.py`, or
# open it as a notebook.

# %%
import threading

import numpy as np

import minitf as tf
from minitf import notebook, viz
from minitf.stepper import HeldScheduler, Stepper
from minitf.stepper.describe import describe_event

out = notebook.out_dir("12_input_pipelines_and_loops")
FILES, ROWS_PER_FILE, EPOCHS, BATCH = 3, 8, 5, 4
W_TRUE, B_TRUE = np.array([2.0, -1.0], np.float32), 0.5

# %% [markdown]
# ## Record files of `tf.train.Example`
#
# A TFRecord file is a sequence of records, each a length, a checksum, the
# bytes and their checksum. The bytes are usually a serialized
# `tf.train.Example`: named features, each a list of floats, integers or byte
# strings. These are the very bytes TensorFlow writes and reads.

# %%
rng = np.random.default_rng(0)
x_all = rng.normal(size=(FILES * ROWS_PER_FILE, 2)).astype(np.float32)
y_all = (x_all @ W_TRUE + B_TRUE).astype(np.float32)
paths = []
for f in range(FILES):
    path = str(out / f"part-{f}.tfrecord")
    with tf.python_io.TFRecordWriter(path) as writer:
        for i in range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE):
            features = {
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=x_all[i])),
                "y": tf.train.Feature(float_list=tf.train.FloatList(value=[y_all[i]])),
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())
    paths.append(path)
first = next(tf.python_io.tf_record_iterator(paths[0]))
print(f"{len(paths)} files of {ROWS_PER_FILE} records; the first record is {len(first)} bytes:")
print(tf.train.Example.FromString(first))

# %% [markdown]
# ## The classic pipeline
#
# Each stage below is a queue with the threads that fill it:
#
# - `string_input_producer` puts the file names in a queue, shuffled, once per
#   epoch; after the last epoch it closes the queue;
# - a `TFRecordReader` takes a file name from that queue whenever it has read
#   a file to its end, and each `read` gives the next record;
# - `parse_single_example` turns the record's bytes into tensors;
# - `shuffle_batch` puts the parsed rows in a `RandomShuffleQueue`, filled by
#   its own queue runner, and takes `BATCH` random rows out at a time, but
#   only once the queue holds more than `min_after_dequeue` rows: those stay
#   behind to be mixed with the rows that come next.
#
# When the file-name queue is closed and every queue behind it is empty, the
# dequeue raises `OutOfRangeError`: that is how a TF1 training loop learns
# that the data are done.


# %%
def pipeline(seed):
    """The records of every file, EPOCHS times, in shuffled batches: (x, y, ids)."""
    filenames = tf.train.string_input_producer(paths, num_epochs=EPOCHS, seed=seed)
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filenames)
    row = tf.parse_single_example(
        serialized,
        features={
            "x": tf.FixedLenFeature([2], tf.float32),
            "y": tf.FixedLenFeature([], tf.float32),
            "id": tf.FixedLenFeature([], tf.int64),
        },
    )
    return tf.train.shuffle_batch(
        [row["x"], row["y"], row["id"]],
        batch_size=BATCH,
        capacity=12,
        min_after_dequeue=4,
        seed=seed,
        allow_smaller_final_batch=True,
    )


x, y, ids = pipeline(seed=1)
w = tf.Variable(tf.zeros([2]), name="w")
b = tf.Variable(0.0, name="b")
loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) + b - y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
print("queue runners:", [qr.name for qr in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)])

# %% [markdown]
# The pipeline drawn: the three queues, the reader, the parsing and the
# model. (The gradients are folded into one box.)

# %%
pipeline_picture = viz.draw(tf.get_default_graph(), collapse=["gradients"])
pipeline_picture.save(out / "pipeline")
notebook.show(pipeline_picture)

# %% [markdown]
# ## Running it: every record once per epoch
#
# The queue runners are started by `start_queue_runners`, which needs the
# local variable that counts the epochs initialized. The loop trains until
# `OutOfRangeError`.

# %%
seen, losses = [], []
with tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    try:
        while not coord.should_stop():
            _, batch_loss, batch_ids = sess.run([train_op, loss, ids])
            seen.extend(batch_ids.tolist())
            losses.append(batch_loss)
    except tf.errors.OutOfRangeError:
        print("OutOfRangeError: the file-name queue is closed and every queue is empty")
    finally:
        coord.request_stop()
    coord.join(threads, stop_grace_period_secs=10)
    print(f"{len(losses)} batches, loss {losses[0]:.3f} -> {losses[-1]:.4f}")
    print("w, b =", sess.run(w), sess.run(b), " (the data's:", W_TRUE, B_TRUE, ")")
total = FILES * ROWS_PER_FILE
assert sorted(seen) == sorted(list(range(total)) * EPOCHS)  # each record once per epoch
print("the first ids, shuffled:", seen[:12])

# %% [markdown]
# ## Stepping the pipeline: a dequeue that waits for min_after_dequeue
#
# In a session made with `HeldScheduler()` nothing runs until a `Stepper`
# moves it, and that includes the steps of the queue-runner threads. Below,
# the main thread asks for one batch before any runner has started: the
# stepper moves that step until nothing in it can move, and its dequeue
# *waits*; the stepper says on what. Then the runners start, and their steps
# move (file names, reads, parsing, enqueues) until the shuffle queue holds
# more than `min_after_dequeue` rows and the batch comes out.

# %%
tf.reset_default_graph()
x, y, ids = pipeline(seed=2)
with tf.Session(scheduler=HeldScheduler()) as sess:
    stepper = Stepper.for_session(sess)
    initializers = [tf.global_variables_initializer(), tf.local_variables_initializer()]
    init = threading.Thread(target=sess.run, args=(initializers,))
    init.start()
    while stepper.next(wait=0.5) is not None:
        pass  # the initializers' moves
    init.join(10)
    result = {}
    batch = threading.Thread(target=lambda: result.update(ids=sess.run(ids)))
    batch.start()
    (task,) = stepper.state()["tasks"]
    stepper.until_blocked(task["task"])
    (step,) = stepper.state()["tasks"][0]["steps"]
    (waiting,) = step["waiting"]
    print(f"waiting: {waiting['name']} on {waiting['waits_for']}")
    assert not result
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    moves = 0
    while "ids" not in result and stepper.next(wait=1.0) is not None:
        moves += 1
    batch.join(10)
    print(f"after {moves} moves of the runners' steps the batch came out: {result['ids']}")
    coord.request_stop()
    stepper.continue_()  # the rest runs free: the runners see the stop and end
coord.join(threads, stop_grace_period_secs=10)

# %% [markdown]
# ## A loop is a cycle of six ops
#
# `tf.while_loop(cond, body, loop_vars)` builds, for each loop variable:
#
# - `Enter`: the value goes into the loop's frame, in iteration 0;
# - `Merge`: takes the first of its inputs that arrives: the `Enter`'s in
#   iteration 0, the `NextIteration`'s after that;
# - `LoopCond` and `Switch`: the condition sends the value either into the
#   body (true) or out of the loop (false);
# - `NextIteration`: the body's result goes back to the `Merge`, in the next
#   iteration: the back edge that makes the cycle;
# - `Exit`: the last value leaves the frame.
#
# The executor tags every value with its frame and iteration, so the same
# `Merge` runs once per iteration. Below, `x = w ** 5` by repeated
# multiplication; the picture draws the frame as a box and the back edge in
# orange.

# %%
tf.reset_default_graph()
w = tf.constant(2.0, name="w")
i0 = tf.constant(0, name="i")
_, power = tf.while_loop(
    lambda i, acc: i < 5, lambda i, acc: (i + 1, acc * w), [i0, tf.constant(1.0)]
)
loop_picture = viz.draw(tf.get_default_graph(), targets=[power])
loop_picture.save(out / "loop")
notebook.show(loop_picture)
grad = tf.gradients(power, w)[0]  # a second loop, in a frame of its own, runs backwards
with tf.Session() as sess:
    print("w ** 5 =", sess.run(power), " d/dw =", sess.run(grad), "= 5 * w ** 4")

# %% [markdown]
# ## Stepping the loop, iteration by iteration
#
# Every move of the stepper names the iteration it belongs to.
# `until_iteration(2)` runs until iteration 2 of the loop starts, and
# `until("while/mul")` until the body's multiplication is the next move: the
# moves between are the loop's own ops of iteration 2 (the `Exit` of the
# loop counter moves too: it carries a *dead* value, since the loop goes on).

# %%
with tf.Session(scheduler=HeldScheduler()) as sess:
    stepper = Stepper.for_session(sess)
    result = {}
    runner = threading.Thread(target=lambda: result.update(v=sess.run(power)))
    runner.start()
    stepper.until_iteration(2)
    for event in stepper.until("while/mul"):
        print(" ", describe_event(event))
    while stepper.next(wait=0.5) is not None:
        pass
    runner.join(10)
print("the step returned", result["v"])
assert result["v"] == 32.0

# %% [markdown]
# ## An LSTM is such a loop
#
# `tf.nn.dynamic_rnn` runs a cell over time with one `tf.while_loop`: the
# inputs are read from a `TensorArray` each iteration and the outputs written
# to another, stacked after the loop. Here an LSTM learns to say whether the
# first value of a sequence was positive, which it must carry to the end.

# %%
tf.reset_default_graph()
tf.set_random_seed(0)
T, N = 6, 64
seqs = rng.normal(size=(N, T, 1)).astype(np.float32)
labels = (seqs[:, 0, 0] > 0).astype(np.int64)
inputs = tf.placeholder(tf.float32, [None, T, 1])
target = tf.placeholder(tf.int64, [None])
outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(8), inputs, dtype=tf.float32)
out_w = tf.get_variable("out/kernel", [8, 2])
out_b = tf.get_variable("out/bias", [2], initializer=tf.zeros_initializer())
logits = tf.matmul(state.h, out_w) + out_b
xent = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=target, logits=logits))
train = tf.train.AdamOptimizer(0.05).minimize(xent)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    first = sess.run(xent, {inputs: seqs, target: labels})
    for _ in range(notebook.sized(150, 60)):
        sess.run(train, {inputs: seqs, target: labels})
    last = sess.run(xent, {inputs: seqs, target: labels})
print(f"cross-entropy {first:.3f} -> {last:.3f}")
assert last < first
rnn_picture = viz.draw(tf.get_default_graph(), targets=[xent], collapse=["gradients", "Adam"])
rnn_picture.save(out / "dynamic_rnn")
notebook.show(rnn_picture)
