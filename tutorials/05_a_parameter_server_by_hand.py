# %% [markdown]
# # 5. A parameter server by hand
#
# A TF1 cluster is a `tf.train.ClusterSpec` (which jobs, which tasks, at which
# addresses) and one `tf.train.Server` per task. In *between-graph
# replication* every worker builds its own copy of the model graph, with the
# variables pinned to the ps job by `tf.device`. The workers share those
# variables because the state lives on the ps task, found by name, and not
# in any worker's graph.
#
# This tutorial does by hand what `tf.train.replica_device_setter` (tutorial 6)
# and `SyncReplicasOptimizer` (tutorial 7) build on. It runs one ps and two
# worker processes and trains a small linear model from two clients. It shows
# where each op lands, the `_Send`/`_Recv` pairs that partitioning adds, and
# numbers that prove both workers update the one copy of the variables on the
# ps. It ends with a timeline of one traced step.
#
# Run it with `.venv/bin/python tutorials/05_a_parameter_server_by_hand.py`, or
# open it as a notebook.

# %%
import io
import textwrap
from contextlib import ExitStack

import matplotlib.text
import numpy as np

import minitf as tf
from minitf import notebook, viz
from minitf.cluster import LocalCluster
from minitf.runtime.distributed.launcher import free_ports
from minitf.runtime.distributed.partition import partition_step
from minitf.viz.timeline import Timeline
from minitf.viz.timeline_plot import plot_timeline

out = notebook.out_dir("05_a_parameter_server_by_hand")
ROUNDS = notebook.sized(20, 4)  # each round: one step of worker 0, then one of worker 1
LEARNING_RATE = 0.1

# %% [markdown]
# ## The cluster: a ClusterSpec
#
# A `ClusterSpec` maps each job to the addresses of its tasks. Task `i` of job
# `j` is the device `/job:j/task:i`. Every process of the cluster is given the
# same spec, so each one knows where all the others are.

# %%
spec = tf.train.ClusterSpec(
    {"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]}
)
print("jobs:", spec.jobs)
for job in spec.jobs:
    for i in spec.task_indices(job):
        print(f"  /job:{job}/task:{i} at {spec.task_address(job, i)}")
assert spec.num_tasks("ps") == 1 and spec.num_tasks("worker") == 2

# %% [markdown]
# ## A Server is one task, and it owns that task's state
#
# `tf.train.Server(spec, job_name, task_index)` starts the task's server.
# TF1's own tests start several servers in one process
# (`tf.test.create_local_cluster`), and minitf allows the same. Here are
# three servers on free local ports. A variable pinned to the ps and
# initialized through worker 1's target ends up in the *ps server's*
# resource manager. The client keeps only the graph.

# %%
ports = free_ports(3)
local_spec = tf.train.ClusterSpec(
    {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{p}" for p in ports[1:]]}
)
servers = {}
try:
    for job in local_spec.jobs:
        for i in local_spec.task_indices(job):
            servers[job, i] = tf.train.Server(local_spec, job_name=job, task_index=i)
    for server in servers.values():
        print(f"{server.task_name}: target {server.target}")
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(41, name="counter")
        with tf.Session(servers["worker", 1].target) as sess:
            sess.run(counter.initializer)
            print("counter + 1 =", sess.run(counter + 1))
    held = {task: [name for _, name, _ in s.resource_mgr.items()] for task, s in servers.items()}
    print("resources each task holds:", held)
    assert held == {("ps", 0): ["counter"], ("worker", 0): [], ("worker", 1): []}
finally:
    for server in servers.values():
        server.stop()

# %% [markdown]
# ## Between-graph replication: each worker builds its own graph
#
# In a real deployment every worker process runs the same script and builds
# the same graph. Here `build_replica(i)` plays worker `i`'s script in its own
# `tf.Graph`. The variables go to `/job:ps/task:0`; the input, the model and
# the gradients go to `/job:worker/task:i`. The two graphs share no Python
# object. They share the variables only because both name `w`, `b` and
# `global_step` on the same ps task.


# %%
def build_replica(task_index):
    """Worker ``task_index``'s graph: variables on the ps, computation on the worker."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(tf.zeros([2, 1]), name="w")
            b = tf.Variable(0.0, name="b")
            global_step = tf.train.get_or_create_global_step()
        with tf.device(f"/job:worker/task:{task_index}"):
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
            opt = tf.train.GradientDescentOptimizer(LEARNING_RATE)
            train_op = opt.minimize(loss, global_step=global_step)
    return {"graph": graph, "w": w, "b": b, "global_step": global_step,
            "x": x, "y": y, "loss": loss, "train_op": train_op}  # fmt: skip


replicas = [build_replica(i) for i in range(2)]
for op in replicas[1]["graph"].get_operations():
    if not op.name.startswith("gradients/"):
        print(f"{op.name:46} {op.type:21} {op.device or '(none: colocated)'}")

# %% [markdown]
# The optimizer's updates (`ApplyGradientDescent`) and the global step's
# increment are on the ps. TF1 colocates them with the variables they change.
# The global step's initial value was built from a callable initializer, so
# it has no device of its own: placement puts it with `global_step`.
#
# ## Which task each op lands on
#
# A session on a cluster places every op of a step, then cuts the step into
# one partition per task. `partition_step` is the function the session's
# master calls, so this is exactly what worker 0's session sends to each task for
# one training step (fetch the loss, run `train_op`, feed `x` and `y`).

# %%
r0 = replicas[0]
with r0["graph"].as_default():
    tasks = {job: spec.num_tasks(job) for job in spec.jobs}
    fetches, targets, feeds = [r0["loss"]], [r0["train_op"]], [r0["x"], r0["y"]]
    parts, _ = partition_step(fetches, targets, feeds, tasks, "worker", 0)
for task, part in parts.items():
    own = [n.name for n in part.nodes if n.op not in ("_Send", "_Recv")]
    shown = [name for name in own if not name.startswith("gradients/")]
    folded = len(own) - len(shown)
    listed = ", ".join(shown) + (f", and {folded} gradients/... ops" if folded else "")
    print(f"{task}: {len(own)} ops")
    print(textwrap.fill(listed, 96, initial_indent="    ", subsequent_indent="    "))
assert sorted(parts) == ["/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"]

# %% [markdown]
# ## The Send/Recv pairs that partitioning added
#
# Every edge whose two ends land on different tasks is replaced by a `_Send`
# on the producer's task and a `_Recv` on the consumer's. Both carry one
# rendezvous key, `"<source device>;<destination device>;<tensor>"`. The
# expected pairs can be worked out by hand from the graph above. The
# variables' values go to the worker. The two gradients go to the ps, where
# the updates are. So does the learning rate: the optimizer turned it into a
# constant on the worker, under the worker's device scope.

# %%
pairs = []
for part in parts.values():
    for node in part.nodes:
        if node.op == "_Send":
            source, dest, tensor = node.attrs["tensor_name"].split(";")
            pairs.append((tensor, source.split("/device")[0], dest.split("/device")[0]))
for tensor, source, dest in sorted(pairs, key=lambda p: (p[1], p[0])):
    print(f"  {tensor:48} {source:26} -> {dest}")

to_worker = {t for t, s, _ in pairs if "/job:ps" in s}
to_ps = {t for t, s, _ in pairs if "/job:worker" in s}
assert to_worker == {"w/read:0", "b/read:0"}
assert to_ps == {
    "GradientDescent/learning_rate:0",
    "gradients/MatMul_grad/tuple/control_dependency_1:0",  # d loss / d w
    "gradients/add_grad/tuple/control_dependency_1:0",  # d loss / d b
}
recvs = sum(n.op == "_Recv" for part in parts.values() for n in part.nodes)
assert recvs == len(pairs) == 5

# %% [markdown]
# The same step drawn. Each task is a box. Each `_Send` is joined to its
# `_Recv` by a thick edge, labelled with the tensor's dtype, shape and size.
# The gradient computation is folded into one box.

# %%
step_picture = viz.draw(
    r0["graph"], view="partitioned", targets=[r0["train_op"]], collapse=["gradients"]
)
step_picture.save(out / "partitioned_step")
notebook.show(step_picture)

# %% [markdown]
# One task alone, as the session places it: the ps task holds the three
# variables and everything that changes them.

# %%
notebook.show(viz.draw(r0["graph"], view="/job:ps/task:0"))

# %% [markdown]
# ## Two workers, one set of variables
#
# `LocalCluster` starts one process per task, each running a
# `tf.train.Server` for its role (`python -m minitf.runtime.distributed.task`, whose
# `main` is `server = tf.train.Server(cluster, job_name, task_index)` then
# `server.join()`). Its ports are free ones, but the jobs and tasks are those
# of `spec`. Two clients, one per worker graph, open a session on their own
# worker's target. This is what each worker's script does in TF1.
#
# The workers take turns: worker 0 steps, then worker 1, `ROUNDS` times. Each
# has its own shard of the data. Each step reads `w` and `b` from the ps,
# computes the gradient on the worker and applies it on the ps. If the
# workers shared nothing, each would train its own copy. Because they share,
# the numbers below follow *one* sequence of updates that alternates between
# the two shards.
#
# Everything the cluster runs is in one cell, inside `try/finally`, so the
# processes are stopped whatever happens. At the end, worker 0 runs one more
# step with TF1's `tf.RunOptions(trace_level=FULL_TRACE)`: every task the
# step touches records the ops it ran.

# %%
rng = np.random.default_rng(0)
true_w, true_b = np.array([[2.0], [-3.0]], np.float32), np.float32(1.0)
shards = []
for _ in range(2):
    x_shard = rng.standard_normal((8, 2)).astype(np.float32)
    shards.append((x_shard, x_shard @ true_w + true_b))

log = io.StringIO()  # the task processes' own output, shown if something fails
cluster = LocalCluster({"ps": 1, "worker": 2}, output=log)
losses = []  # (worker, the loss its step computed), in the order of the steps
try:
    cluster.start()
    for job in spec.jobs:
        for i in spec.task_indices(job):
            print(f"/job:{job}/task:{i}: process {cluster.pid(job, i)} at {cluster.target(job, i)}")
    with ExitStack() as stack:
        sessions = [
            stack.enter_context(tf.Session(cluster.target("worker", i), graph=r["graph"]))
            for i, r in enumerate(replicas)
        ]
        r0 = replicas[0]  # the chief's job in TF1: initialize the shared variables once
        sessions[0].run([r0["w"].initializer, r0["b"].initializer, r0["global_step"].initializer])

        def train_step(i):
            """One step of worker ``i`` on its own shard; returns the loss it computed."""
            r = replicas[i]
            feed = {r["x"]: shards[i][0], r["y"]: shards[i][1]}
            return sessions[i].run([r["loss"], r["train_op"]], feed)[0]

        for _ in range(ROUNDS):
            for i in range(2):
                losses.append((i, float(train_step(i))))
        # Each client reads the variables through its own worker: the same numbers.
        seen = [sessions[i].run([replicas[i]["w"], replicas[i]["b"]]) for i in range(2)]
        global_step = sessions[1].run(replicas[1]["global_step"])

        # One more step of worker 0, traced on every task it touches (TF1's way).
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        run_metadata = tf.RunMetadata()
        sessions[0].run(
            replicas[0]["train_op"],
            {replicas[0]["x"]: shards[0][0], replicas[0]["y"]: shards[0][1]},
            options=options,
            run_metadata=run_metadata,
        )
except Exception:
    print(log.getvalue()[-3000:])
    raise
finally:
    cluster.stop()
for k, (i, loss) in enumerate(losses[:6]):
    print(f"step {k + 1}: worker {i} computed loss {loss:.4f}")
print(f"... {len(losses)} steps in all; global_step = {global_step}")
print("w, b read by worker 0:", seen[0][0].ravel(), seen[0][1])
print("w, b read by worker 1:", seen[1][0].ravel(), seen[1][1])

# %% [markdown]
# ## The same numbers by hand
#
# Replay the steps in numpy, in the order they ran, on one shared `w` and
# `b`. Each step uses the gradient of the mean squared error,
# `dL/dw = 2/n X^T (Xw + b - y)` and `dL/db = 2 mean(Xw + b - y)`. The loss
# each worker reported must be the loss at the values the *other* worker
# left, and the final values must be what both clients read.

# %%
w, b = np.zeros((2, 1)), 0.0
for i, reported in losses:
    x_shard, y_shard = shards[i]
    err = x_shard @ w + b - y_shard
    np.testing.assert_allclose(reported, np.mean(err**2), rtol=1e-4)
    w = w - LEARNING_RATE * 2 / len(err) * x_shard.T @ err
    b = b - LEARNING_RATE * 2 * np.mean(err)
np.testing.assert_allclose(seen[0][0], w, rtol=1e-4, atol=1e-6)
np.testing.assert_allclose(seen[0][1], b, rtol=1e-4, atol=1e-6)
for got, want in zip(seen[0], seen[1]):
    np.testing.assert_array_equal(got, want)  # one copy: both read the same bits
assert global_step == 2 * ROUNDS  # every step of both workers counted once
print("numpy replay: w =", w.ravel().round(4), "b =", round(float(b), 4))
print("matches the cluster; global_step counts both workers' steps:", global_step)

# %% [markdown]
# ## A trace of one step
#
# `run_metadata.step_stats` has one entry per task the step touched, each
# with one entry per op it ran, as in TF1. The `_Recv` ops are the ones the
# partitioning listed. On the worker they received `w` (2 float32 values,
# 8 bytes) and `b` (4 bytes); on the ps, the two gradients and the learning
# rate. `Timeline` (TF1's `tensorflow.python.client.timeline`) writes the
# step as a Chrome trace, which opens in [Perfetto](https://ui.perfetto.dev)
# or `chrome://tracing`. `minitf.viz.Tracer` records a whole span of steps
# of every worker the same way.

# %%
step_stats = run_metadata.step_stats
(out / "one_step.json").write_text(Timeline(step_stats).generate_chrome_trace_format())
received = {}
for dev_stats in step_stats.dev_stats:
    task = dev_stats.device.split("/device")[0]
    recvs = [n for n in dev_stats.node_stats if n.op == "_Recv"]
    received[task] = {n.node_name[len("_recv/") : -len("/0")]: n.transfer["bytes"] for n in recvs}
    print(f"{task} ran {len(dev_stats.node_stats)} ops and received:")
    for tensor, size in received[task].items():
        print(f"    {tensor:50} {size} bytes")
assert received == {
    "/job:ps/replica:0/task:0": {
        "GradientDescent/learning_rate": 4,
        "gradients/MatMul_grad/tuple/control_dependency_1": 2 * 4,
        "gradients/add_grad/tuple/control_dependency_1": 4,
    },
    "/job:worker/replica:0/task:0": {"w/read": 2 * 4, "b/read": 4},
}

# %% [markdown]
# The same step as a timeline: one band per task, each op a bar coloured by
# its role, the time an op spent waiting hatched. Both tasks start their part
# of the step at about the same time. The worker's `_Recv` ops wait for `w`
# and `b`. The ps's `_Recv` ops wait for the gradients while the worker
# computes the loss and its gradients and sends them. Only then do the
# updates run on the ps.

# %%
figure = plot_timeline(
    step_stats,
    title="One step of worker 0: its variables and their updates on the ps",
    max_rows_per_task=6,
)
# Bigger letters for a projector; the names inside the bars keep the size they fit at.
for text in figure.findobj(matplotlib.text.Text):
    if text.get_bbox_patch() is None:
        text.set_fontsize(text.get_fontsize() * 1.4)
figure.savefig(out / "one_step_timeline.png", dpi=120, bbox_inches="tight")
notebook.show(figure)
