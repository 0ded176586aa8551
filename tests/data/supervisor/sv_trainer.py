"""A TF1 between-graph trainer on `tf.train.Supervisor`, for the cluster tests.

Worker 0 is the chief. It opens ``--gate`` (a named pipe the test writes to)
before it makes its session, so the test decides when the chief initializes;
its ``init_fn`` sets ``w`` to 7, which a task that initialized the model
itself could not see. Each task counts the global step up to
``--train_steps``; the chief saves a checkpoint every 10 steps. A chief that
started from nothing stops at step ``--pause_at`` and waits there for the
test to kill it; started again, it restores the newest checkpoint.
"""

import threading

import minitf as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_string("logdir", "", "The chief's checkpoint directory")
flags.DEFINE_string("gate", "", "A named pipe the chief reads before it initializes")
flags.DEFINE_integer("train_steps", 30, "Global steps to count to")
flags.DEFINE_integer("pause_at", 25, "Where a chief that started from nothing waits to be killed")
FLAGS = flags.FLAGS


def main(_):
    tf.logging.set_verbosity(tf.logging.INFO)
    cluster = tf.train.ClusterSpec(
        {"ps": FLAGS.ps_hosts.split(","), "worker": FLAGS.worker_hosts.split(",")}
    )
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
    is_chief = FLAGS.task_index == 0
    device = tf.train.replica_device_setter(
        worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster
    )
    with tf.device(device):
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(0.0, name="w")
        set_w = tf.assign(w, 7.0)
        step_up = tf.assign_add(global_step, 1)
    sv = tf.train.Supervisor(
        is_chief=is_chief,
        logdir=FLAGS.logdir,
        global_step=global_step,
        init_fn=lambda sess: sess.run(set_w),
        save_model_secs=0,
        recovery_wait_secs=1,
    )
    if is_chief:
        print("chief waits for the gate", flush=True)
        with open(FLAGS.gate) as gate:
            gate.read()
    else:
        print("worker waits for the chief", flush=True)
    with sv.managed_session(server.target) as sess:
        start, w_value = sess.run([global_step, w])
        print(f"task {FLAGS.task_index} ready at step {start} with w {w_value}", flush=True)
        step = start
        while not sv.should_stop() and step < FLAGS.train_steps:
            step = sess.run(step_up)
            if is_chief and step % 10 == 0:
                sv.saver.save(sess, sv.save_path, global_step=global_step)
                print(f"saved at step {step}", flush=True)
            if is_chief and start == 0 and step == FLAGS.pause_at:
                print(f"paused at step {step}", flush=True)
                threading.Event().wait()  # until the test kills this task
        if is_chief:
            sv.saver.save(sess, sv.save_path, global_step=global_step)
    print(f"task {FLAGS.task_index} done", flush=True)


if __name__ == "__main__":
    tf.app.run()
