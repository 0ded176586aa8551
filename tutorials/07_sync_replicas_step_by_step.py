# %% [markdown]
# # 7. SyncReplicasOptimizer, step by step
#
# `tf.train.SyncReplicasOptimizer` turns asynchronous parameter-server training
# into synchronous training with two kinds of state on the parameter servers: a
# *conditional accumulator* per variable, where the workers' gradients gather,
# and a *token queue* beside the global step, from which each worker takes
# permission for its next step. The chief worker runs a queue runner whose
# step takes the average gradient, applies it, and hands out one token per
# worker.
#
# This tutorial draws every op the optimizer builds, shows what waits when the
# chief's part is forgotten, and then steps one whole global step across one
# ps and two worker processes, one move at a time.
#
# Run it with `.venv/bin/python tutorials/07_sync_replicas_step_by_step.py`, or
# open it as a notebook.

# %%
import io

import numpy as np

import minitf as tf
from minitf import notebook, viz
from minitf.examples import sync_mlp
from minitf.stepper import Stepper
from minitf.stepper.terminal import describe_event
from minitf.viz import render

OUT = notebook.out_dir("07_sync_replicas")

# %% [markdown]
# ## Every op it builds
#
# A linear model on a cluster of one ps and two workers, placed by
# `replica_device_setter` as a worker's graph would be (between-graph
# replication: each worker builds this same graph). `opt.minimize` adds the
# usual gradients, then:
#
# - an accumulator per variable on that variable's ps task, and the ops that
#   apply a gradient to it (each worker's step) and take the average from it
#   (the chief's step);
# - `sync_token_q`, the token queue, beside the global step;
# - `sync_rep_local_step`, a *local* variable on each worker: the global step
#   its gradients belong to.

# %%
cluster = tf.train.ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"] * 2})
graph = tf.Graph()
with graph.as_default():
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.Variable(tf.zeros([2, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
        global_step = tf.train.get_or_create_global_step()
        before = set(graph.get_operations())
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2, total_num_replicas=2
        )
        train_op = opt.minimize(loss, global_step=global_step)
        (sync_op,) = opt.get_chief_queue_runner().enqueue_ops

STATEFUL = (
    "ConditionalAccumulator",
    "AccumulatorApplyGradient",
    "AccumulatorTakeGradient",
    "AccumulatorSetGlobalStep",
    "FIFOQueueV2",
    "QueueEnqueueManyV2",
    "QueueDequeueV2",
)
built = [op for op in graph.get_operations() if op not in before]
print(f"minimize built {len(built)} ops; the synchronisation's own:")
for op in built:
    if any(op.type.endswith(kind) for kind in STATEFUL):
        print(f"  {op.type:38s} {op.name:40s} {op.device}")
accumulators = [op for op in built if op.type.endswith("ConditionalAccumulator")]
assert len(accumulators) == 2  # one per trainable variable: w and b
assert all(op.device == "/job:ps/task:0" for op in accumulators)
local_step = graph.get_tensor_by_name("sync_rep_local_step:0")
print("the local step:", local_step.op.name, "on", local_step.op.device)
assert local_step.op.device.startswith("/job:worker")

# %% [markdown]
# The whole graph: the model on the worker, the variables, accumulators, the
# token queue and the global step on the ps. Each worker's step (`train_op`)
# applies its gradients and takes a token; the chief's step (`sync_op`) takes
# the averages, updates, and puts new tokens in the queue.

# %%
notebook.show(viz.draw(graph, collapse=["gradients"], fold_variables=True))

# %% [markdown]
# ## What waits if you forget the chief's part
#
# The chief's hook (`opt.make_session_run_hook(is_chief=True)`, which
# `MonitoredTrainingSession` runs for you) does two things after the session is
# created: it puts the initial tokens in the queue and starts the queue runner
# that runs `sync_op`. Forget them and a worker's step waits for a token that
# never comes. In TF1 the cell would hang; here the step has a deadline
# (`timeout_in_ms`), and the error names each op that waits and on what.
#
# One worker (`replicas_to_aggregate=1`) in a local session is enough to see it.


# %%
def one_worker_model():
    """A fresh graph: a 1-variable model trained by SyncReplicas with R = N = 1."""
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(0.0, name="w")
        loss = tf.square(w - 3.0, name="loss")
        step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(0.25), replicas_to_aggregate=1, total_num_replicas=1
        )
        return g, opt, opt.minimize(loss, global_step=step), w, step


def run_with_deadline(sess, fetch):
    """Runs ``fetch`` with a 300 ms deadline; returns the named wait if it times out."""
    try:
        sess.run(fetch, options=tf.RunOptions(timeout_in_ms=300))
        return None
    except tf.errors.DeadlineExceededError as e:
        return e.message


g, opt1, train1, w1, step1 = one_worker_model()
with g.as_default(), tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    waited = run_with_deadline(sess, train1)
    print("no tokens, no queue runner:\n  ", waited)
    assert "sync_token_q" in waited

# %% [markdown]
# With the initial tokens but no queue runner, the first step runs on its
# initial token and the second waits: nobody takes the gradient out of the
# accumulator, so nobody updates `w` or releases a token.

# %%
g, opt1, train1, w1, step1 = one_worker_model()
with g.as_default(), tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    sess.run([opt1.chief_init_op, opt1.get_init_tokens_op()])
    assert run_with_deadline(sess, train1) is None  # the initial token
    waited = run_with_deadline(sess, train1)
    print("initial tokens, no queue runner: the second step\n  ", waited)
    assert "sync_token_q" in waited
    print("w was never updated:", sess.run(w1), "global step", sess.run(step1))
    assert sess.run(w1) == 0.0

# %% [markdown]
# With the hook, as `MonitoredTrainingSession` runs it, every step gets its
# token. A step returns the token it took: the global step its *next* gradient
# belongs to. With one initial token the worker runs one step ahead of the
# updates: its first step takes the initial token (0) before any update, and
# when it holds token 4, four updates have been applied and a fifth gradient
# waits in the accumulator.
#
# Each update is gradient descent on `(w - 3)^2` with rate 0.25,
# `w <- w - 0.25 * 2 (w - 3)`, so `w` halves its distance to 3 at each update.

# %%
g, opt1, train1, w1, step1 = one_worker_model()
with g.as_default():
    hook = opt1.make_session_run_hook(is_chief=True)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        tokens = [sess.run(train1)]
        while tokens[-1] < 4:
            tokens.append(sess.run(train1))
        final_w = sess.run(w1)
expected = 3.0 * (1 - 0.5**4)  # four halvings of the distance from 0 to 3
print(f"tokens taken by {len(tokens)} steps: {[int(t) for t in tokens]}")
print(f"after update 4: w = {final_w:.4f} (by hand: {expected:.4f})")
assert tokens == [0, 1, 2, 3, 4]
np.testing.assert_allclose(final_w, expected, rtol=1e-6)

# %% [markdown]
# ## One global step, stepped across processes
#
# Now the real thing: the SyncReplicas example (`minitf/examples/sync_mlp.py`)
# as a local cluster of one ps and two worker processes, every task held by the
# stepper. The tasks run free until the first gradient is about to reach an
# accumulator. From there the stepper makes one move at a time, until both
# workers have their tokens for global step 1. We print each move that changes
# what a student can see: an accumulator's count, the chief's `take_grad`, the
# global step, the token queue.
#
# `minitf step` gives the same moves at a prompt, and `minitf step --web` as
# buttons in the browser: the docs page *Stepping through a step* shows both.

# %%
PS = "/job:ps/replica:0/task:0"
ACCUMULATOR = "hidden/weights:0/grad_accum"


def seen(state: dict) -> dict:
    """What a student watches: the first accumulator, the global step, the tokens."""
    found = {"global_step": state["global_step"], "count": None, "tokens": None}
    for task in state["tasks"]:
        for r in task["resources"]:
            if r["kind"] == "accumulator" and r["name"] == ACCUMULATOR:
                found["count"] = r["count"]
            if r["kind"] == "queue" and r["name"] == "sync_token_q":
                found["tokens"] = r["size"]
    return found


def ps_pictures(stepper: Stepper, name: str) -> list:
    """The ps task's held steps, outlined: done, about to move, waiting (also saved)."""
    pictures = [p for p in stepper.step_pictures() if p["task"] == PS]
    for i, picture in enumerate(pictures):
        if render.dot_available():
            picture["picture"].save(OUT / f"{name}_{i}")
    return [p["picture"] for p in pictures]


output = io.StringIO()  # the tasks' own output (shown if something fails)
script_args = ["--steps", "2", "--optimizer", "sgd", "--num_tokens", "0"]
stepper = Stepper.launch(
    sync_mlp.__file__,
    {"ps": 1, "worker": 2},
    script_args,
    breaks=["ResourceAccumulatorApplyGradient"],
    output=output,
)

# %% [markdown]
# Moves, from the breakpoint to both tokens. The picture is the ps task at the
# moment one accumulator holds one gradient of two: the chief's `take_grad`s
# wait (dashed), a worker's part of its step is done up to its token.

# %%
try:
    before = seen(stepper.state())
    print(f"at the breakpoint: {before}")
    waiting_pictures, took, tokens_out = [], False, 0
    while tokens_out < 2:
        event = stepper.next()
        if event is None:
            raise RuntimeError("nothing could move:\n" + output.getvalue()[-2000:])
        now = seen(stepper.state())
        first_take = not took and "TakeGradient" in event["op"]
        took = took or first_take
        if now != before or first_take:
            print(f"{len(stepper.events):3d}. {describe_event(event)}")
            print(f"     now {now}")
        if now["count"] == 1 and not waiting_pictures:
            waiting_pictures = ps_pictures(stepper, "ps_one_of_two")
        if event["move"] == "deliver" and event["op"] == "_recv/sync_token_q_Dequeue/0":
            tokens_out += 1  # a worker has its token for the next global step
        before = now
    print(f"One global step took {len(stepper.events)} moves on 3 processes.")
    assert seen(stepper.state())["global_step"] == 1
except BaseException:
    stepper.close()
    stepper.cluster.stop()
    raise

# %%
for picture in waiting_pictures:
    notebook.show(picture)

# %% [markdown]
# ## Back, and forward again
#
# `back(3)` undoes three moves: the stepper starts the same script again and
# replays its recorded moves up to that point, so every process is where it was.
# Forward three moves, and the state is the same. Then the script runs free to
# its end.

# %%
try:
    here = seen(stepper.state())
    stepper.back(3)
    print(f"back 3 moves (the script ran again, replayed): {seen(stepper.state())}")
    for _ in range(3):
        print("  ", describe_event(stepper.next()))
    assert seen(stepper.state()) == here, "the replayed run went another way"
    print(f"...and forward again to the same state: {here}")
    stepper.continue_()
    code = stepper.wait(120)
    print(f"The script ran to its end (exit code {code}).")
    assert code == 0, output.getvalue()[-2000:]
finally:
    stepper.close()
    if stepper.cluster is not None:
        stepper.cluster.stop()
