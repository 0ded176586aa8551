# %% [markdown]
# # 4. Queues and accumulators
#
# `SyncReplicasOptimizer` is built from two stateful pieces: a FIFO queue (the
# workers' tokens) and a conditional accumulator per variable (the workers'
# gradients). Both live in the session (on a task, in a cluster), not in the
# Python objects, and both have ops that *wait*. This tutorial shows their
# rules, including the corners the SyncReplicas tutorials rely on, and ends by
# stepping through a dequeue that waits, one move at a time.
#
# Run it with `.venv/bin/python tutorials/04_queues_and_accumulators.py`, or open
# it as a notebook.


# %%
import threading

import numpy as np

import minitf as tf
from minitf.stepper import HeldScheduler, Stepper
from minitf.stepper.describe import describe_event

# %% [markdown]
# ## A FIFO queue
#
# First in, first out; a dequeue waits while the queue is empty.

# %%
q = tf.FIFOQueue(capacity=3, dtypes=tf.int32, shapes=[[]], name="numbers")
with tf.Session() as sess:
    sess.run(q.enqueue_many([[1, 2, 3]]))
    print("dequeue:", sess.run(q.dequeue()), "size now:", sess.run(q.size()))

    # A waiting op does not hold up its step. Drain the queue, then run a
    # dequeue in the same step as the enqueue that provides its element: the
    # dequeue starts first, waits, and the enqueue wakes it.
    print("dequeue_many(2):", sess.run(q.dequeue_many(2)))
    value, _ = sess.run([q.dequeue(), q.enqueue(4)])
    print("dequeued in the same step as its enqueue:", value)
    assert value == 4

    # A timeout instead of a hang: nothing is enqueued, so the run gives up.
    try:
        sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=100))
    except tf.errors.DeadlineExceededError:
        print("dequeue on an empty queue with a 100 ms timeout: DeadlineExceededError")

    # Closing: what is queued can still be dequeued; then OutOfRangeError.
    sess.run(q.enqueue_many([[5, 6]]))
    sess.run(q.close())
    print("after close, dequeue_up_to(10):", sess.run(q.dequeue_up_to(10)))
    try:
        sess.run(q.dequeue())
    except tf.errors.OutOfRangeError:
        print("closed and empty: OutOfRangeError (how input loops end in TF1)")
    try:
        sess.run(q.enqueue(7))
    except tf.errors.CancelledError:
        print("enqueue to a closed queue: CancelledError")

# %% [markdown]
# ## Blocking across threads
#
# A consumer waits until a producer enqueues.

# %%
jobs = tf.FIFOQueue(capacity=2, dtypes=tf.string, shapes=[[]], name="jobs")
job = tf.placeholder(tf.string, [])
with tf.Session() as sess:
    got = []
    consumer = threading.Thread(target=lambda: got.append(sess.run(jobs.dequeue())))
    consumer.start()  # it waits: the queue is empty
    sess.run(jobs.enqueue(job), {job: b"train step 1"})
    consumer.join(10)
    print("the consumer thread received:", got[0])
    assert got == [b"train step 1"]

# %% [markdown]
# ## A conditional accumulator
#
# It averages fresh gradients and drops stale ones.

# %%
acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="grad_accum")
grad = tf.placeholder(tf.float32, [2])
local_step = tf.placeholder(tf.int64, [])
apply = acc.apply_grad(grad, local_step=local_step)
take = acc.take_grad(num_required=2)
with tf.Session() as sess:
    sess.run(apply, {grad: [1.0, 2.0], local_step: 0})
    sess.run(apply, {grad: [3.0, 4.0], local_step: 0})
    print("num_accumulated:", sess.run(acc.num_accumulated()))
    mean = sess.run(take)  # the accumulator's global step becomes 1
    print("take_grad(2):", mean, "= the mean of the two gradients")
    np.testing.assert_allclose(mean, [2.0, 3.0])

    # A gradient computed at local step 0 is now stale (0 < 1) and is dropped
    # silently; one computed at step 1 counts. This is how SyncReplicas
    # ignores the gradients of workers that fell behind.
    sess.run(apply, {grad: [100.0, 100.0], local_step: 0})
    print("after a stale gradient, num_accumulated:", sess.run(acc.num_accumulated()))
    sess.run(apply, {grad: [5.0, 5.0], local_step: 1})
    sess.run(apply, {grad: [7.0, 7.0], local_step: 1})
    print("take_grad(2) after one stale and two fresh:", sess.run(take))

# %% [markdown]
# ## The chief pattern in miniature
#
# A `QueueRunner` thread repeatedly takes the average gradient, applies it and
# hands out one token per worker. The main thread plays three workers: each
# sends its gradient, then each waits for a token, whose value is the global
# step its next gradient belongs to.

# %%
w = tf.Variable([0.0, 0.0], name="w")
acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="w_grad_accum")
tokens = tf.FIFOQueue(-1, tf.int64, shapes=[[]], name="tokens")
global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
update = tf.assign_sub(w, 0.1 * acc.take_grad(3))
with tf.control_dependencies([update]):
    step = tf.assign_add(global_step, 1)
chief_op = tokens.enqueue_many([tf.fill([3], step)])
apply = acc.apply_grad(grad, local_step=local_step)
next_token = tokens.dequeue()

coord = tf.train.Coordinator()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    runner = tf.train.QueueRunner(tokens, [chief_op])
    threads = runner.create_threads(sess, coord=coord, start=True)
    steps = [0, 0, 0]
    for _ in range(5):  # five synchronous steps of three workers
        for worker in range(3):
            sess.run(apply, {grad: [1.0, float(worker)], local_step: steps[worker]})
        # Each dequeue waits until the chief's thread has averaged the three
        # gradients ([1, 1]), updated w and enqueued the tokens.
        steps = [sess.run(next_token) for _ in range(3)]
    print("after 5 synchronous steps: global_step", sess.run(global_step), "w", sess.run(w))
    np.testing.assert_allclose(sess.run(w), [-0.5, -0.5], rtol=1e-6)
    coord.request_stop()
# Leaving the session cancels the chief's take_grad, which was waiting for a
# sixth round of gradients; the runner's thread then ends.
coord.join(threads, stop_grace_period_secs=10)
print("the chief's queue runner stopped cleanly")

# %% [markdown]
# ## Stepping through a dequeue that waits
#
# A session made with `scheduler=HeldScheduler()` runs nothing by itself: a
# `Stepper` makes each move. One step fetches `q.dequeue() + 1` and runs
# `q.enqueue(5.0)`. The stepper makes moves until the enqueue is next. By then
# the dequeue has started and *waits*, and the stepper says on what: the queue,
# its size and how many elements it needs. The enqueue makes it ready, and the
# moves after it deliver the element and finish the step.

# %%
q = tf.FIFOQueue(3, tf.float32, shapes=[], name="q")
taken = tf.add(q.dequeue(name="take"), 1.0, name="plus_one")
put = q.enqueue(5.0, name="put")
with tf.Session(scheduler=HeldScheduler()) as sess:
    stepper = Stepper.for_session(sess)
    result = {}
    runner = threading.Thread(target=lambda: result.update(v=sess.run([taken, put])))
    runner.start()  # the step starts, held: nothing runs until the stepper moves
    for event in stepper.until("put"):
        print(" ", describe_event(event))
    (task,) = stepper.state()["tasks"]
    (waiting,) = task["steps"][0]["waiting"]
    print(f"waiting: {waiting['name']} on {waiting['waits_for']}")
    assert waiting["waits_for"]["size"] == 0 and not result
    while (event := stepper.next(wait=0.5)) is not None:
        print(" ", describe_event(event))
    runner.join(10)
print("the step returned", result["v"][0], "= 5 + 1")
assert result["v"][0] == 6.0
