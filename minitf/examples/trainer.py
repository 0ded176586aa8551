"""TF1's distributed trainer, as TF's "Distributed TensorFlow" guide writes it.

Between-graph replication with ``tf.train.MonitoredTrainingSession``,
``SyncReplicasOptimizer``, ``StopAtStepHook`` and checkpoints; flags for the
task's role. Written against TF1's API only — with ``import tensorflow as tf``
instead of the ``minitf`` import it is a TF 1.x script. Run it as a local
cluster::

    minitf launch --ps 1 --workers 2 minitf/examples/trainer.py -- \\
        --train_dir /tmp/train_logs --train_steps 200

The model is a linear regression, ``y = x . w_true + 1`` on 8 features, so
that what it learns can be checked by hand. The chief saves a checkpoint
every ``--save_steps`` global steps; started again with the same
``--train_dir`` it restores the newest one and goes on from its step.
"""

import numpy as np

import minitf as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_string("train_dir", "/tmp/train_logs", "Directory for checkpoints")
flags.DEFINE_integer("train_steps", 200, "Global steps to train for")
flags.DEFINE_integer("save_steps", 20, "Save a checkpoint every this many global steps")
flags.DEFINE_boolean("sync_replicas", True, "Aggregate gradients with SyncReplicasOptimizer")
flags.DEFINE_integer("replicas_to_aggregate", None, "Gradients per update (default: workers)")
flags.DEFINE_integer("num_tokens", -1, "The chief's initial tokens (-1: TF's default; 0: strict)")
flags.DEFINE_float("learning_rate", 0.1, "Learning rate")
FLAGS = flags.FLAGS

FEATURES = 8
W_TRUE = np.linspace(-1.0, 1.0, FEATURES).astype(np.float32)


def batches(task_index: int, size: int = 32):
    """This worker's batches: its own seeded sample of x, and y = x . w_true + 1.

    Args:
        task_index: The worker's index: seeds its sample.
        size: The batch size.
    """
    rng = np.random.default_rng(1000 + task_index)
    while True:
        x = rng.normal(size=(size, FEATURES)).astype(np.float32)
        yield x, x @ W_TRUE + 1.0


def main(_):
    """Runs one task: a ps serves; a worker trains in a ``MonitoredTrainingSession``.

    Args:
        _: The command line left after the flags (unused).

    Returns:
        0.
    """
    tf.logging.set_verbosity(tf.logging.INFO)
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return 0

    is_chief = FLAGS.task_index == 0
    num_workers = len(worker_hosts)
    with tf.device(
        tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster
        )
    ):
        x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
        y = tf.placeholder(tf.float32, [None], name="y")
        w = tf.get_variable("w", [FEATURES], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
        prediction = tf.squeeze(tf.matmul(x, tf.expand_dims(w, 1)), [1]) + b
        loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(FLAGS.learning_rate)
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
        if FLAGS.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(
                opt,
                replicas_to_aggregate=FLAGS.replicas_to_aggregate or num_workers,
                total_num_replicas=num_workers,
            )
            hooks.append(opt.make_session_run_hook(is_chief, num_tokens=FLAGS.num_tokens))
        train_op = opt.minimize(loss, global_step=global_step)

    data = batches(FLAGS.task_index)
    with tf.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=is_chief,
        checkpoint_dir=FLAGS.train_dir,
        hooks=hooks,
        save_checkpoint_steps=FLAGS.save_steps,
        save_checkpoint_secs=None,
        log_step_count_steps=50,
    ) as mon_sess:
        step, value = 0, float("nan")
        while not mon_sess.should_stop():
            batch_x, batch_y = next(data)
            _, step, value = mon_sess.run([train_op, global_step, loss], {x: batch_x, y: batch_y})
        print(f"worker {FLAGS.task_index}: stopped at global step {step}, loss {value:.5f}")
    return 0


if __name__ == "__main__":
    tf.app.run()
