"""tf.contrib.opt.ModelAverageOptimizer builds TF 1.15's graph and averages the workers' copies.

Graph tests build one worker's model with the custom getter under
``replica_device_setter`` and check what shared/spec/tf1_semantics.md §7.1
says of names, devices, collections and errors. Cluster tests port TF's
``disabled_test1Workers2Period``: each worker builds its own graph and opens
its own ``MonitoredTrainingSession`` against its task of a `LocalCluster` with
two ps tasks; the averaging step runs in both workers at once (a thread each),
since the chief's average waits for the other worker's offer. Expected numbers
are the spec's, worked by hand: SGD with learning rate 1 and gradients -1
(worker 0) and -2 (worker 1), then the mean of the two copies.
"""

import inspect
import threading

import pytest

import minitf as tf
from minitf.contrib.opt import ModelAverageCustomGetter, ModelAverageOptimizer
from minitf.runtime.distributed.launcher import LocalCluster
from minitf.train.session_run_hook import SessionRunHook


def _spec(workers=3):
    return tf.train.ClusterSpec(
        {"ps": ["ps0:2222", "ps1:2222"], "worker": [f"w{i}:2222" for i in range(workers)]}
    )


def _on_worker(build, index=0):
    """Runs ``build(getter)`` in a new graph, under worker ``index``'s setter of a 2-ps cluster."""
    graph = tf.Graph()
    device = f"/job:worker/task:{index}"
    getter = ModelAverageCustomGetter(worker_device=device)
    setter = tf.train.replica_device_setter(
        cluster=_spec(), worker_device=device, ps_device="/job:ps"
    )
    with graph.as_default(), tf.device(setter), tf.variable_scope("", custom_getter=getter):
        built = build(getter)
    return graph, getter, built


def _collections(graph, var):
    keys = [tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.LOCAL_VARIABLES]
    keys.append(tf.GraphKeys.TRAINABLE_VARIABLES)
    return [key for key in keys if var in graph.get_collection(key)]


def _model(getter, index=0, interval_steps=2, is_chief=True):
    """TF's test model: global step, v0 = 0, v1 = 1, and a ModelAverageOptimizer on the worker."""
    global_step = tf.Variable(0, name="global_step", trainable=False)
    v0 = tf.get_variable(initializer=0.0, name="v0")
    v1 = tf.get_variable(initializer=1.0, name="v1")
    with tf.device(f"/job:worker/task:{index}"):
        opt = ModelAverageOptimizer(
            tf.train.GradientDescentOptimizer(1.0),
            num_worker=2,
            is_chief=is_chief,
            ma_custom_getter=getter,
            interval_steps=interval_steps,
        )
    return global_step, v0, v1, opt


# -- the constructor and the custom getter -----------------------------------------------------


def test_the_optimizer_takes_tfs_arguments_and_defaults():
    params = inspect.signature(ModelAverageOptimizer).parameters
    assert list(params) == [
        "opt",
        "num_worker",
        "is_chief",
        "ma_custom_getter",
        "interval_steps",
        "use_locking",
        "name",
    ]
    assert params["interval_steps"].default == 100
    assert params["use_locking"].default is True
    assert params["name"].default == "ModelAverageOptimizer"
    assert tf.contrib.opt.ModelAverageOptimizer is ModelAverageOptimizer


def test_local_copies_stay_on_the_worker_and_centers_go_round_robin_to_ps():
    def build(getter):
        v = tf.get_variable(initializer=[1, 2], name="v")
        w = tf.get_variable(initializer=[2, 1], name="w")
        return v, w

    _, getter, (v, w) = _on_worker(build)
    assert v.device == w.device == "/job:worker/task:0"
    assert getter._local_2_global[v].device == "/job:ps/task:0"
    assert getter._local_2_global[w].device == "/job:ps/task:1"


def test_global_step_goes_to_a_ps_task_and_local_step_to_the_worker():
    graph, getter, (global_step, v0, v1, _) = _on_worker(_model, index=1)
    (local_step,) = [
        var
        for var in graph.get_collection(tf.GraphKeys.LOCAL_VARIABLES)
        if var.op.name == "local_step"
    ]
    assert global_step.device == "/job:ps/task:0"  # tf.Variable: the getter never sees it
    assert getter._local_2_global[v0].device == "/job:ps/task:1"
    assert getter._local_2_global[v1].device == "/job:ps/task:0"
    assert v0.device == v1.device == local_step.device == "/job:worker/task:1"
    assert _collections(graph, local_step) == [tf.GraphKeys.LOCAL_VARIABLES]


def test_the_local_copy_is_trainable_but_only_a_local_variable_and_the_center_global():
    graph, getter, (global_step, v0, _, _) = _on_worker(_model)
    center = getter._local_2_global[v0]
    assert (v0.name, center.name) == ("v0:0", "global_center_variable/v0:0")
    assert _collections(graph, v0) == [
        tf.GraphKeys.LOCAL_VARIABLES,
        tf.GraphKeys.TRAINABLE_VARIABLES,
    ]
    assert _collections(graph, center) == [tf.GraphKeys.GLOBAL_VARIABLES]
    assert _collections(graph, global_step) == [tf.GraphKeys.GLOBAL_VARIABLES]


def test_the_center_starts_from_the_local_copys_initial_value():
    graph = tf.Graph()
    getter = ModelAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        v = tf.get_variable(initializer=[1.5, -2.0], name="v")
        center = getter._local_2_global[v]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())  # the local copy is not initialized
            assert sess.run(center).tolist() == [1.5, -2.0]


# -- errors ---------------------------------------------------------------------------------


def test_apply_gradients_needs_gradients_and_a_global_step():
    _, _, (global_step, v0, _, opt) = _on_worker(_model)
    with pytest.raises(ValueError, match="Must supply at least one variable"):
        opt.apply_gradients([], global_step)
    with pytest.raises(ValueError, match="Global step is required"):
        opt.apply_gradients([(tf.constant(1.0), v0)])


def test_get_init_op_without_trainable_variables_raises():
    graph = tf.Graph()
    getter = ModelAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        opt = ModelAverageOptimizer(tf.train.GradientDescentOptimizer(1.0), 1, True, getter)
        with pytest.raises(ValueError, match="local_variables should not be empty"):
            opt.get_init_op()


# -- init op and hook (one process) ---------------------------------------------------------


def test_get_init_op_copies_every_center_into_its_local_copy():
    graph = tf.Graph()
    getter = ModelAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        v0 = tf.get_variable(initializer=0.0, name="v0")
        v1 = tf.get_variable(initializer=1.0, name="v1")
        opt = ModelAverageOptimizer(tf.train.GradientDescentOptimizer(1.0), 1, True, getter)
        move = [getter._local_2_global[v0].assign(4.0), getter._local_2_global[v1].assign(5.0)]
        init_op = opt.get_init_op()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(move)
            sess.run(init_op)
            assert sess.run([v0, v1]) == [4.0, 5.0]


class _RecordingSession:
    def __init__(self):
        self.runs = []

    def run(self, *args, **kwargs):
        self.runs.append(args)


def test_the_hook_only_builds_init_ops_and_runs_nothing_as_in_tf_1_15():
    graph = tf.Graph()
    getter = ModelAverageCustomGetter(worker_device="")
    with graph.as_default(), tf.variable_scope("", custom_getter=getter):
        tf.get_variable(initializer=0.0, name="v0")
        opt = ModelAverageOptimizer(tf.train.GradientDescentOptimizer(1.0), 1, True, getter)
        hook = opt.make_session_run_hook()
        before = len(graph.get_operations())
        hook.begin()
        assert len(graph.get_operations()) > before
    session = _RecordingSession()
    hook.after_create_session(session, coord=None)
    assert isinstance(hook, SessionRunHook)
    assert session.runs == []


# -- the averaging graph --------------------------------------------------------------------


def test_one_shared_accumulator_per_variable_next_to_its_center_and_the_queue_by_global_step():
    def build(getter):
        global_step, v0, v1, opt = _model(getter)
        with tf.device("/job:worker/task:0"):
            opt.apply_gradients([(tf.constant(-1.0), v0), (tf.constant(-1.0), v1)], global_step)
        return global_step, v0, v1

    graph, getter, (global_step, v0, v1) = _on_worker(build)
    accumulators = [
        op for op in graph.get_operations() if op.type == "ResourceConditionalAccumulator"
    ]
    shared = {op.get_attr("shared_name"): op.device for op in accumulators}
    assert shared == {
        "global_center_variable/v0:0/var_accum": getter._local_2_global[v0].device,
        "global_center_variable/v1:0/var_accum": getter._local_2_global[v1].device,
    }
    (queue,) = [op for op in graph.get_operations() if op.type.startswith("FIFOQueue")]
    assert queue.get_attr("shared_name") == "sync_queue"
    assert queue.colocation_groups() == global_step.op.colocation_groups()


# -- over a real cluster --------------------------------------------------------------------


@pytest.fixture
def cluster():
    """Two ps tasks and two worker tasks, each a bare server in its own process."""
    with LocalCluster({"ps": 2, "worker": 2}, output=None) as running:
        yield running


class Worker:
    """One worker's graph and monitored session, as TF's ``_get_workers`` builds them."""

    def __init__(self, cluster, index, interval_steps):
        self.graph = tf.Graph()
        device = f"/job:worker/task:{index}"
        getter = ModelAverageCustomGetter(worker_device=device)
        setter = tf.train.replica_device_setter(worker_device=device, cluster=cluster.cluster_spec)
        with self.graph.as_default():
            with tf.variable_scope("", custom_getter=getter), tf.device(setter):
                self.global_step, self.v0, self.v1, opt = _model(
                    getter, index, interval_steps, is_chief=index == 0
                )
                with tf.device(device):
                    grad = -1.0 - index  # -1 on worker 0, -2 on worker 1
                    pairs = [(tf.constant(grad), self.v0), (tf.constant(grad), self.v1)]
                    self.train_op = opt.apply_gradients(pairs, self.global_step)
            self.centers = [getter._local_2_global[self.v0], getter._local_2_global[self.v1]]
            self.sess = tf.train.MonitoredTrainingSession(
                cluster.target("worker", index),
                is_chief=index == 0,
                hooks=[opt.make_session_run_hook()],
            )

    def step(self):
        self.sess.run(self.train_op)

    def state(self):
        """([v0, v1], [center of v0, center of v1], global step)."""
        local, centers, step = self.sess.run([[self.v0, self.v1], self.centers, self.global_step])
        return local, centers, int(step)


def _step_together(workers):
    """One step of every worker, each in its own thread (an averaging step is a barrier)."""
    errors = []

    def step(worker):
        try:
            worker.step()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=step, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []


def test_tf_test1workers2period_averages_the_copies_every_second_step(cluster):
    workers = [Worker(cluster, i, interval_steps=2) for i in range(2)]
    assert workers[0].state() == ([0.0, 1.0], [0.0, 1.0], 0)
    workers[0].step()  # local steps only
    workers[1].step()
    assert workers[0].state() == ([1.0, 2.0], [0.0, 1.0], 0)
    assert workers[1].state()[0] == [2.0, 3.0]
    # Worker 0: 2, 3; worker 1: 4, 5 -> centers (2 + 4) / 2 = 3 and (3 + 5) / 2 = 4.
    _step_together(workers)
    assert workers[0].state() == ([3.0, 4.0], [3.0, 4.0], 1)
    assert workers[1].state() == ([3.0, 4.0], [3.0, 4.0], 1)
    workers[0].step()  # local step 3: no averaging
    assert workers[0].state() == ([4.0, 5.0], [3.0, 4.0], 1)


def test_with_interval_one_every_step_is_an_averaging_step(cluster):
    workers = [Worker(cluster, i, interval_steps=1) for i in range(2)]
    # Worker 0: 1, 2; worker 1: 2, 3 -> centers 1.5, 2.5.
    _step_together(workers)
    assert workers[0].state() == ([1.5, 2.5], [1.5, 2.5], 1)
    assert workers[1].state() == ([1.5, 2.5], [1.5, 2.5], 1)
    # Worker 0: 2.5, 3.5; worker 1: 3.5, 4.5 -> centers 3, 4.
    _step_together(workers)
    assert workers[0].state() == ([3.0, 4.0], [3.0, 4.0], 2)
    assert workers[1].state() == ([3.0, 4.0], [3.0, 4.0], 2)
