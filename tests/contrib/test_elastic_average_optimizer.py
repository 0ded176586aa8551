"""tf.contrib.opt.ElasticAverageOptimizer builds TF 1.15's EASGD and moves copies as EASGD says.

Graph tests build one worker's model with the custom getter (under
``replica_device_setter`` where placement matters) and check what
shared/spec/tf1_semantics.md §7.2 says of names, devices and collections.
Cluster tests port TF's ``test1Workers2Period`` and ``test2Worker1Period``:
each worker builds its own graph and opens its own ``MonitoredTrainingSession``
(with the optimizer's hook) against its task of a `LocalCluster` with two ps
tasks. The expected numbers are the spec's, worked by hand from the update
``local_center := center; diff = local - local_center; local -= α·diff;
center += α·diff``.
"""

import numpy as np
import pytest

import minitf as tf
from minitf.contrib.opt import ElasticAverageCustomGetter, ElasticAverageOptimizer
from minitf.runtime.distributed.launcher import LocalCluster


def _spec(workers=3):
    return tf.train.ClusterSpec(
        {"ps": ["ps0:2222", "ps1:2222"], "worker": [f"w{i}:2222" for i in range(workers)]}
    )


def _on_worker_0(build, partitioner=None):
    """Runs ``build(getter)`` in a new graph, under worker 0's device setter of a 2-ps cluster."""
    graph = tf.Graph()
    getter = ElasticAverageCustomGetter(worker_device="/job:worker/task:0")
    setter = tf.train.replica_device_setter(
        cluster=_spec(), worker_device="/job:worker/task:0", ps_device="/job:ps"
    )
    with graph.as_default(), tf.device(setter):
        with tf.variable_scope("", custom_getter=getter, partitioner=partitioner):
            built = build(getter)
    return graph, getter, built


def _collections(graph, var):
    keys = [tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.LOCAL_VARIABLES]
    keys.append(tf.GraphKeys.TRAINABLE_VARIABLES)
    return [key for key in keys if var in graph.get_collection(key)]


# -- the constructor ------------------------------------------------------------------------


def test_default_moving_rate_is_beta_over_period_over_workers_and_rho_over_the_learning_rate():
    # rho only shows in the gradient: d/dv of rho * l2_loss(v - local_center) is rho * (v - lc).
    graph = tf.Graph()
    getter = ElasticAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        v = tf.get_variable("v", initializer=1.0)
        opt = ElasticAverageOptimizer(
            tf.train.GradientDescentOptimizer(0.9), num_worker=2, ea_custom_getter=getter
        )
        ((grad, var),) = opt.compute_gradients(3.0 * v)
        set_v = v.assign(5.0)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(set_v)
            value = sess.run(grad)
    assert var is v
    assert ElasticAverageOptimizer.BETA == 0.9
    moving_rate = 0.9 / 10 / 2  # BETA / communication_period (default 10) / num_worker
    rho = moving_rate / 0.9
    np.testing.assert_allclose(value, 3.0 + rho * (5.0 - 1.0), rtol=1e-6)


def test_an_explicit_rho_scales_the_elastic_term_of_the_gradient():
    graph = tf.Graph()
    getter = ElasticAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        v = tf.get_variable("v", initializer=[1.0, 2.0])
        opt = ElasticAverageOptimizer(
            tf.train.GradientDescentOptimizer(1.0), 1, getter, moving_rate=0.5, rho=0.25
        )
        ((grad, _),) = opt.compute_gradients(tf.reduce_sum(v * v))
        set_v = v.assign([3.0, -2.0])
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(set_v)
            value = sess.run(grad)
    v_now, local_center = np.array([3.0, -2.0]), np.array([1.0, 2.0])
    np.testing.assert_allclose(value, 2 * v_now + 0.25 * (v_now - local_center), rtol=1e-6)


# -- the custom getter: names, devices, collections ------------------------------------------


def test_local_copies_stay_on_the_worker_and_global_centers_go_round_robin_to_ps():
    def build(getter):
        v = tf.get_variable(initializer=[1, 2], name="v")
        w = tf.get_variable(initializer=[2, 1], name="w")
        return v, w

    _, getter, (v, w) = _on_worker_0(build)
    assert v.device == w.device == "/job:worker/task:0"
    assert getter._global_map[v].device == "/job:ps/task:0"
    assert getter._global_map[w].device == "/job:ps/task:1"
    assert getter._local_map[v].device == getter._local_map[w].device == "/job:worker/task:0"


def test_the_getter_leaves_the_global_step_on_a_ps_and_puts_local_step_on_the_worker():
    def build(getter):
        global_step = tf.train.get_or_create_global_step()  # not trainable: forwarded as is
        v = tf.get_variable(initializer=1.0, name="v")
        with tf.device("/job:worker/task:0"):
            opt = ElasticAverageOptimizer(tf.train.GradientDescentOptimizer(1.0), 2, getter)
        return global_step, v, opt

    graph, getter, (global_step, v, _) = _on_worker_0(build)
    (local_step,) = [
        var
        for var in graph.get_collection(tf.GraphKeys.LOCAL_VARIABLES)
        if var.op.name == "local_step"
    ]
    assert global_step.device == "/job:ps/task:0"
    assert getter._global_map[v].device == "/job:ps/task:1"
    assert local_step.device == "/job:worker/task:0"
    assert _collections(graph, local_step) == [tf.GraphKeys.LOCAL_VARIABLES]


def test_copies_are_named_after_the_variable_and_only_the_local_copy_is_trainable():
    graph, getter, v = _on_worker_0(lambda getter: tf.get_variable(initializer=1.0, name="v"))
    global_center, local_center = getter._global_map[v], getter._local_map[v]
    assert (v.name, global_center.name, local_center.name) == (
        "v:0",
        "global_center_variable/v:0",
        "local_center_variable/v:0",
    )
    assert _collections(graph, v) == [
        tf.GraphKeys.LOCAL_VARIABLES,
        tf.GraphKeys.TRAINABLE_VARIABLES,
    ]
    assert _collections(graph, global_center) == [tf.GraphKeys.GLOBAL_VARIABLES]
    assert _collections(graph, local_center) == [tf.GraphKeys.LOCAL_VARIABLES]


def test_reuse_returns_the_local_copy_without_making_more_centers():
    def build(getter):
        v = tf.get_variable(initializer=1.0, name="v")
        with tf.variable_scope("", reuse=True):
            again = tf.get_variable("v")
        return v, again

    graph, getter, (v, again) = _on_worker_0(build)
    assert again is v
    assert len(graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)) == 1
    assert len(graph.get_collection(tf.GraphKeys.LOCAL_VARIABLES)) == 2


def test_a_partitioned_variable_gets_partitioned_centers_paired_shard_by_shard():
    def build(getter):
        return tf.get_variable("partition_var", shape=[2, 4], initializer=tf.ones_initializer())

    graph, getter, var = _on_worker_0(build, partitioner=tf.fixed_size_partitioner(2, axis=0))
    shards = list(var)
    assert [getter._global_map[s].name for s in shards] == [
        "global_center_variable/partition_var/part_0:0",
        "global_center_variable/partition_var/part_1:0",
    ]
    assert [getter._local_map[s].name for s in shards] == [
        "local_center_variable/partition_var/part_0:0",
        "local_center_variable/partition_var/part_1:0",
    ]
    assert [s.device for s in shards] == ["/job:worker/task:0"] * 2
    assert [getter._global_map[s].device for s in shards] == ["/job:ps/task:0", "/job:ps/task:1"]
    assert all(s in graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) for s in shards)


# -- errors -----------------------------------------------------------------------------------


def test_get_init_op_without_variables_and_swapping_saver_before_the_model_raise():
    graph = tf.Graph()
    getter = ElasticAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        opt = ElasticAverageOptimizer(tf.train.GradientDescentOptimizer(1.0), 1, getter)
        with pytest.raises(ValueError, match="should not be empty"):
            opt.get_init_op(0)
        with pytest.raises(RuntimeError, match="global_center_variable is empty"):
            opt.swapping_saver()


# -- the hook and the swapping saver (one process) ------------------------------------------


def _local_model():
    """v0, v1 with their centers, in a graph for a local session; centers set apart from locals."""
    graph = tf.Graph()
    getter = ElasticAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        v0 = tf.get_variable(initializer=0.0, name="v0")
        v1 = tf.get_variable(initializer=1.0, name="v1")
        opt = ElasticAverageOptimizer(tf.train.GradientDescentOptimizer(1.0), 1, getter)
        move_centers = [getter._global_map[v0].assign(2.0), getter._global_map[v1].assign(3.0)]
    return graph, getter, opt, (v0, v1), move_centers


def test_the_hook_copies_the_global_centers_into_both_local_copies_when_the_session_starts():
    graph, getter, opt, (v0, v1), move_centers = _local_model()
    with graph.as_default():
        hook = opt.make_session_run_hook(is_chief=True, task_index=0)
        hook.begin()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(move_centers)
            hook.after_create_session(sess, coord=None)
            local_centers = [getter._local_map[v0], getter._local_map[v1]]
            assert sess.run([v0, v1]) == [2.0, 3.0]
            assert sess.run(local_centers) == [2.0, 3.0]


def test_swapping_saver_saves_the_global_centers_under_the_local_names(tmp_path):
    graph, _, opt, _, move_centers = _local_model()
    with graph.as_default():
        saver = opt.swapping_saver()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(move_centers)
            path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default(), tf.Session() as sess:
        v0 = tf.get_variable(initializer=0.0, name="v0")
        v1 = tf.get_variable(initializer=1.0, name="v1")
        tf.train.Saver(var_list=[v1, v0]).restore(sess, path)
        assert sess.run([v0, v1]) == [2.0, 3.0]


def test_swapping_saver_saves_partitioned_centers_under_the_local_name(tmp_path):
    graph = tf.Graph()
    getter = ElasticAverageCustomGetter(worker_device="")
    partitioner = tf.fixed_size_partitioner(2, axis=0)
    with graph.as_default():
        with tf.variable_scope("", custom_getter=getter, partitioner=partitioner):
            var = tf.get_variable("partition_var", shape=[2, 4], initializer=tf.ones_initializer())
        # The optimizer is made outside the partitioner's scope, as TF's test makes it
        # (its scalar local step has no shape to partition).
        opt = ElasticAverageOptimizer(tf.train.GradientDescentOptimizer(1.0), 1, getter)
        saver = opt.swapping_saver()
        centers = [getter._global_map[shard] for shard in var]
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(
                [c.assign(np.full([1, 4], 7.0 + i, np.float32)) for i, c in enumerate(centers)]
            )
            path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default(), tf.Session() as sess:
        with tf.variable_scope("", partitioner=partitioner):
            restored = tf.get_variable(
                "partition_var", shape=[2, 4], initializer=tf.ones_initializer()
            )
        tf.train.Saver(var_list=[restored]).restore(sess, path)
        np.testing.assert_array_equal(sess.run(restored.as_tensor()), [[7.0] * 4, [8.0] * 4])


# -- over a real cluster --------------------------------------------------------------------


@pytest.fixture
def cluster():
    """Two ps tasks and two worker tasks, each a bare server in its own process."""
    with LocalCluster({"ps": 2, "worker": 2}, output=None) as running:
        yield running


class Worker:
    """One worker's graph and monitored session, as TF's ``_get_workers`` builds them.

    ``v0 = 0`` and ``v1 = 1`` (and, with ``partitioned``, a [2, 4] variable of
    ones in two shards) with constant gradients of -1, trained by SGD with
    learning rate 1.
    """

    def __init__(self, cluster, index, num_workers, period, moving_rate, partitioned=False):
        self.graph = tf.Graph()
        device = f"/job:worker/task:{index}"
        getter = ElasticAverageCustomGetter(worker_device=device)
        setter = tf.train.replica_device_setter(worker_device=device, cluster=cluster.cluster_spec)
        with self.graph.as_default():
            with tf.variable_scope("", custom_getter=getter), tf.device(setter):
                self.global_step = tf.train.get_or_create_global_step()
                self.v0 = tf.get_variable(initializer=0.0, name="v0")
                self.v1 = tf.get_variable(initializer=1.0, name="v1")
            pairs = [(tf.constant(-1.0), self.v0), (tf.constant(-1.0), self.v1)]
            if partitioned:
                partitioner = tf.fixed_size_partitioner(2, axis=0)
                with tf.variable_scope("", custom_getter=getter, partitioner=partitioner):
                    with tf.device(setter):
                        shards = list(
                            tf.get_variable(
                                "partition_var", shape=[2, 4], initializer=tf.ones_initializer()
                            )
                        )
                pairs += [(tf.constant([[-1.0] * 4]), shard) for shard in shards]
                self.center_shards = [getter._global_map[shard] for shard in shards]
            with tf.device(device):
                opt = ElasticAverageOptimizer(
                    tf.train.GradientDescentOptimizer(1.0),
                    num_worker=num_workers,
                    ea_custom_getter=getter,
                    communication_period=period,
                    moving_rate=moving_rate,
                )
                self.train_op = opt.apply_gradients(pairs, self.global_step)
                hook = opt.make_session_run_hook(index == 0, index)
                self.saver = opt.swapping_saver()
            self.centers = [getter._global_map[self.v0], getter._global_map[self.v1]]
            self.sess = tf.train.MonitoredTrainingSession(
                cluster.target("worker", index), is_chief=index == 0, hooks=[hook]
            )

    def step(self):
        self.sess.run(self.train_op)

    def state(self):
        """([v0, v1], [center of v0, center of v1], global step)."""
        local, centers, step = self.sess.run([[self.v0, self.v1], self.centers, self.global_step])
        return local, centers, int(step)


def test_tf_test1workers2period_one_worker_pulls_fully_to_the_center_every_other_step(
    cluster, tmp_path
):
    (worker,) = [Worker(cluster, 0, num_workers=1, period=2, moving_rate=1.0)]
    assert worker.state() == ([0.0, 1.0], [0.0, 1.0], 0)
    worker.step()  # local SGD only: v += 1
    assert worker.state() == ([1.0, 2.0], [0.0, 1.0], 0)
    worker.step()  # v = 2, 3; diff = 2, 2; v -= diff; center += diff
    assert worker.state() == ([0.0, 1.0], [2.0, 3.0], 1)
    worker.step()
    assert worker.state() == ([1.0, 2.0], [2.0, 3.0], 1)
    worker.step()  # v = 2, 3 = the centers: diff 0
    assert worker.state() == ([2.0, 3.0], [2.0, 3.0], 2)
    # The Saver runs in a plain session on the same graph: the variables live on the tasks.
    with tf.Session(cluster.target("worker", 0), graph=worker.graph) as raw:
        path = worker.saver.save(raw, str(tmp_path / "model"))
    with tf.Graph().as_default(), tf.Session() as sess:
        v0 = tf.get_variable(initializer=0.0, name="v0")
        v1 = tf.get_variable(initializer=1.0, name="v1")
        tf.train.Saver(var_list=[v1, v0]).restore(sess, path)
        assert sess.run([v0, v1]) == [2.0, 3.0]


def test_tf_test2worker1period_each_worker_pulls_the_center_half_way(cluster):
    workers = [
        Worker(cluster, i, num_workers=2, period=1, moving_rate=0.5, partitioned=True)
        for i in range(2)
    ]
    assert workers[0].state() == ([0.0, 1.0], [0.0, 1.0], 0)
    assert workers[1].state()[0] == [0.0, 1.0]
    # Worker 0: v = 1, 2; local center 0, 1; diff 1, 1 -> v = .5, 1.5; center .5, 1.5.
    workers[0].step()
    # Worker 1: v = 1, 2; local center .5, 1.5; diff .5 -> v = .75, 1.75; center .75, 1.75.
    workers[1].step()
    assert workers[0].state() == ([0.5, 1.5], [0.75, 1.75], 2)
    assert workers[1].state() == ([0.75, 1.75], [0.75, 1.75], 2)
    # The shards start at 1 and follow v1's path: the center ends at 1.75.
    shards = workers[0].sess.run(workers[0].center_shards)
    np.testing.assert_array_equal(np.concatenate(shards), np.full([2, 4], 1.75, np.float32))


def test_synchronous_init_is_a_barrier_of_all_workers(cluster):
    graphs, init_ops, sessions = [], [], []
    for index in range(2):
        graph = tf.Graph()
        device = f"/job:worker/task:{index}"
        getter = ElasticAverageCustomGetter(worker_device=device)
        setter = tf.train.replica_device_setter(worker_device=device, cluster=cluster.cluster_spec)
        with graph.as_default(), tf.variable_scope("", custom_getter=getter), tf.device(setter):
            tf.get_variable(initializer=1.0, name="v")
            opt = ElasticAverageOptimizer(
                tf.train.GradientDescentOptimizer(1.0), 2, getter, synchronous=True
            )
            init_ops.append(opt.get_init_op(index))
            init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        sessions.append(tf.Session(cluster.target("worker", index), graph=graph))
        sessions[-1].run(init)
        graphs.append(graph)
    try:
        alone = tf.RunOptions(timeout_in_ms=500)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sessions[0].run(init_ops[0], options=alone)  # worker 1 has not arrived
        sessions[1].run(init_ops[1])  # worker 0's token is there: it passes
        sessions[0].run(init_ops[0])  # now worker 1's token is there too
    finally:
        for sess in sessions:
            sess.close()
