"""A TF1 distributed trainer that any cluster engine can start: flags or ``TF_CONFIG``.

Every task of the cluster runs this same script. It learns who it is from
TF1's flags (``--job_name --task_index --ps_hosts --worker_hosts``), which a
shell script or Slurm's ``srun`` passes, or else from the ``TF_CONFIG``
environment variable, which Kubeflow's TFJob operator sets in every pod::

    {"cluster": {"ps": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]},
     "task": {"type": "worker", "index": 0}, "environment": "cloud"}

Then it does what TF's "Distributed TensorFlow" guide does: a
``replica_device_setter``, ``SyncReplicasOptimizer``, and a
``MonitoredTrainingSession`` whose chief saves checkpoints to ``--train_dir``
(a directory every task can reach: the ps tasks write their shards there). A
chief that is started again restores the newest checkpoint and goes on from
its global step.

The chief is ``worker`` 0, unless the cluster has a ``chief`` job (a TFJob
with a Chief replica spec): then it is ``chief`` 0, and the workers count
from 1.

As in TF, a ps task would wait in ``server.join()`` for ever, and a batch
system (Slurm) would keep the job running until its time limit. So each ps
task waits instead for one token per replica in a shared queue, and every
replica leaves its token when it is done (the workaround of
tensorflow/tensorflow#4713).

Written against TF1's API only: with ``import tensorflow as tf`` it is a TF
1.x script. The model is the linear regression of
``minitf/examples/trainer.py``, ``y = x . w_true + 1`` on 8 features.
"""

import json
import os

import numpy as np

import minitf as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker' (default: from TF_CONFIG)")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_string("train_dir", "/tmp/train_logs", "Checkpoint directory, shared by all tasks")
flags.DEFINE_integer("train_steps", 200, "Global steps to train for")
flags.DEFINE_integer("save_steps", 20, "Save a checkpoint every this many global steps")
flags.DEFINE_integer("log_every", 10, "Print the global step every this many local steps")
flags.DEFINE_float("learning_rate", 0.1, "Learning rate")
FLAGS = flags.FLAGS

FEATURES = 8
W_TRUE = np.linspace(-1.0, 1.0, FEATURES).astype(np.float32)


def task_role():
    """``(cluster dict, job name, task index)``: from the flags, else from ``TF_CONFIG``."""
    if FLAGS.job_name:
        cluster = {"ps": FLAGS.ps_hosts.split(","), "worker": FLAGS.worker_hosts.split(",")}
        return cluster, FLAGS.job_name, FLAGS.task_index
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    if "cluster" not in config or "task" not in config:
        raise SystemExit("give --job_name, --task_index, --ps_hosts, --worker_hosts or TF_CONFIG")
    task = config["task"]
    return config["cluster"], task["type"], int(task["index"])


def batches(replica, size=32):
    """This replica's batches: its own seeded sample of x, and y = x . w_true + 1."""
    rng = np.random.default_rng(1000 + replica)
    while True:
        x = rng.normal(size=(size, FEATURES)).astype(np.float32)
        yield x, x @ W_TRUE + 1.0


def done_queue(ps_index, num_replicas):
    """The queue on ps task ``ps_index`` where each replica leaves a token when it is done."""
    with tf.device(f"/job:ps/task:{ps_index}"):
        return tf.FIFOQueue(num_replicas, tf.int32, shapes=[], shared_name=f"done_queue{ps_index}")


def main(_):
    """Runs this task: a ps serves until every replica is done, a replica trains."""
    tf.logging.set_verbosity(tf.logging.INFO)
    cluster_dict, job, index = task_role()
    cluster = tf.train.ClusterSpec(cluster_dict)
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    replicas = [("chief", 0)] if "chief" in cluster_dict else []
    replicas += [("worker", i) for i in range(len(cluster_dict["worker"]))]
    num_ps = len(cluster_dict["ps"])

    if job == "ps":
        print(f"ps {index}: serving until {len(replicas)} replicas are done", flush=True)
        with tf.Session(server.target) as sess:
            sess.run(done_queue(index, len(replicas)).dequeue_many(len(replicas)))
        print(f"ps {index}: every replica is done", flush=True)
        return 0

    replica = replicas.index((job, index))
    is_chief = replica == 0
    chief_mark = " (chief)" if is_chief else ""
    print(f"{job} {index}: replica {replica} of {len(replicas)}{chief_mark}", flush=True)
    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:{job}/task:{index}", cluster=cluster)
    ):
        x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
        y = tf.placeholder(tf.float32, [None], name="y")
        w = tf.get_variable("w", [FEATURES], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
        prediction = tf.squeeze(tf.matmul(x, tf.expand_dims(w, 1)), [1]) + b
        loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(FLAGS.learning_rate),
            replicas_to_aggregate=len(replicas),
            total_num_replicas=len(replicas),
        )
        train_op = opt.minimize(loss, global_step=global_step)
    # No initial tokens: each step waits for every replica's gradient. With TF's
    # default (one token per replica), a chief whose peers start late trains
    # alone on its own tokens (the K-batch-sync effect, tensorflow#11753),
    # finishes, and leaves them waiting for a token nobody gives: tasks that a
    # cluster engine starts at different times need the barrier from step 1.
    sync_hook = opt.make_session_run_hook(is_chief, num_tokens=0)
    hooks = [sync_hook, tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    say_done = [done_queue(i, len(replicas)).enqueue(replica) for i in range(num_ps)]

    data = batches(replica)
    with tf.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=is_chief,
        checkpoint_dir=FLAGS.train_dir,
        hooks=hooks,
        save_checkpoint_steps=FLAGS.save_steps,
        save_checkpoint_secs=None,
    ) as mon_sess:
        local_step, step, value = 0, 0, float("nan")
        while not mon_sess.should_stop():
            batch_x, batch_y = next(data)
            _, step, value = mon_sess.run([train_op, global_step, loss], {x: batch_x, y: batch_y})
            local_step += 1
            if local_step % FLAGS.log_every == 0:
                print(f"{job} {index}: global step {step}", flush=True)
    print(f"{job} {index}: stopped at global step {step}, loss {value:.5f}", flush=True)
    with tf.Session(server.target) as sess:
        sess.run(say_done)
    return 0


if __name__ == "__main__":
    tf.app.run()
