# %% [markdown]
# # 10. Model averaging and elastic averaging
#
# `SyncReplicasOptimizer` (tutorial 7) keeps one model on the ps and makes the
# workers agree on every step. TF 1.15's `tf.contrib.opt` has two looser ways
# to train on a cluster. In both, each worker trains *its own copy* of the
# model and the copies meet only now and then:
#
# - `ModelAverageOptimizer` (local SGD): every `interval_steps` steps, all
#   workers average their copies, and every copy restarts from the mean.
# - `ElasticAverageOptimizer` (EASGD, Zhang, Choromanska and LeCun, 2015):
#   every `communication_period` steps, each worker on its own pulls its copy
#   and a shared *center* towards each other, like two ends of a spring.
#
# This tutorial shows the *custom getters* that make the copies (which
# variables live on the worker and which on the ps), then trains one linear
# regression with both optimizers, and with plain asynchronous SGD, on a
# cluster of 1 ps and 2 worker processes. Every update is replayed in numpy
# and checked, and the three loss curves are drawn. It ends with the paper's
# own two EASGD rules beside TF-contrib's, on a simulated cluster, and the
# stability boundary of synchronous EASGD.
#
# Run it with `.venv/bin/python tutorials/10_model_and_elastic_averaging.py`, or
# open it as a notebook.

# %%
import threading

import matplotlib.pyplot as plt
import numpy as np

import minitf as tf
from minitf import notebook
from minitf.cluster import LocalCluster
from minitf.contrib.opt import (
    ElasticAverageCustomGetter,
    ElasticAverageOptimizer,
    ModelAverageCustomGetter,
    ModelAverageOptimizer,
)

out = notebook.out_dir("10_model_and_elastic_averaging")

# %% [markdown]
# ## The problem, and its gradient by hand
#
# A linear regression, `y = x · w_true + 1` on 8 features, as in TF's
# distributed trainer (`minitf/examples/trainer.py`), plus noise of standard
# deviation 0.3: no model does better than a loss of 0.3² = 0.09. Each worker
# has its own stream of batches. The loss is the mean squared error, so its gradient is
# `2 xᵀr / n` for `w` and `2 mean(r)` for `b`, with `r = x · w + b − y`. The
# numpy functions below are the oracle: every value the cluster computes is
# checked against them.

# %%
FEATURES = 8
W_TRUE = np.linspace(-1.0, 1.0, FEATURES)
NOISE = 0.3
LEARNING_RATE = 0.05
PERIOD = 10  # interval_steps of model averaging, communication_period of EASGD
STEPS = notebook.sized(300, 60)  # local steps per worker (a multiple of PERIOD)
BATCH = 16
WORKERS = 2


def make_batch(rng, n):
    x = rng.normal(size=(n, FEATURES))
    y = x @ W_TRUE + 1.0 + NOISE * rng.normal(size=n)
    return x.astype(np.float32), y.astype(np.float32)


rng = np.random.default_rng(0)
batches = [[make_batch(rng, BATCH) for _ in range(STEPS)] for _ in range(WORKERS)]
eval_x, eval_y = make_batch(rng, 512)


def mse(w, b, x=eval_x, y=eval_y):
    """The loss of the model (w, b) on a batch (by default the evaluation set)."""
    return float(np.mean((x.astype(np.float64) @ w + b - y) ** 2))


def gradient(w, b, x, y):
    """d loss / d (w, b), by hand."""
    x = x.astype(np.float64)
    r = x @ w + b - y
    return 2 * x.T @ r / len(x), 2 * r.mean()


# %% [markdown]
# ## One model builder for the three ways of training
#
# Between-graph replication, as in TF: each worker builds its own graph under
# `replica_device_setter`. The only difference between the three ways is the
# custom getter around the model and the optimizer around plain SGD.
#
# A custom getter sees every `tf.get_variable` call, never a `tf.Variable` one,
# so the model uses `get_variable`. It is entered *inside* the device setter,
# so that the device it asks for the local copy (the worker) takes precedence
# over the setter's choice (a ps task).


# %%
def build(kind, cluster_spec, index):
    """Worker `index`'s graph for `kind` in ("model average", "elastic average", "async")."""
    graph = tf.Graph()
    device = f"/job:worker/task:{index}"
    getter = None
    if kind == "model average":
        getter = ModelAverageCustomGetter(worker_device=device)
    elif kind == "elastic average":
        getter = ElasticAverageCustomGetter(worker_device=device)
    setter = tf.train.replica_device_setter(worker_device=device, cluster=cluster_spec)
    with graph.as_default(), tf.device(setter), tf.variable_scope("", custom_getter=getter):
        x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
        y = tf.placeholder(tf.float32, [None], name="y")
        w = tf.get_variable("w", [FEATURES], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [], initializer=tf.zeros_initializer())
        prediction = tf.squeeze(tf.matmul(x, tf.expand_dims(w, 1)), [1]) + b
        loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
        global_step = tf.train.get_or_create_global_step()
        sgd = tf.train.GradientDescentOptimizer(LEARNING_RATE)
        if kind == "model average":
            opt = ModelAverageOptimizer(
                sgd, WORKERS, is_chief=index == 0, ma_custom_getter=getter, interval_steps=PERIOD
            )
            hooks = [opt.make_session_run_hook()]
        elif kind == "elastic average":
            opt = ElasticAverageOptimizer(sgd, WORKERS, getter, communication_period=PERIOD)
            hooks = [opt.make_session_run_hook(index == 0, index)]
        else:
            opt, hooks = sgd, []
        train_op = opt.minimize(loss, global_step=global_step)
        savers = {"Saver()": tf.train.Saver()}
        if kind == "elastic average":
            savers["swapping_saver()"] = opt.swapping_saver()
    return {
        "graph": graph,
        "x": x,
        "y": y,
        "copy": [w, b],
        "global_step": global_step,
        "train_op": train_op,
        "hooks": hooks,
        "savers": savers,
    }


def named(graph, name):
    """The variable called `name` in the graph's global or local variables."""
    candidates = graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
    candidates += graph.get_collection(tf.GraphKeys.LOCAL_VARIABLES)
    (found,) = [v for v in candidates if v.op.name == name]
    return found


def describe(graph):
    """Prints every variable: its device and which of the three collections hold it."""
    keys = {
        "GLOBAL": tf.GraphKeys.GLOBAL_VARIABLES,
        "LOCAL": tf.GraphKeys.LOCAL_VARIABLES,
        "TRAINABLE": tf.GraphKeys.TRAINABLE_VARIABLES,
    }
    rows = {}
    for key in ("GLOBAL", "LOCAL"):
        for var in graph.get_collection(keys[key]):
            rows[var.op.name] = var
    print(f"  {'variable':34s} {'device':22s} collections")
    for name, var in sorted(rows.items(), key=lambda item: item[1].device):
        held = [key for key, coll in keys.items() if var in graph.get_collection(coll)]
        print(f"  {name:34s} {var.device:22s} {' '.join(held)}")


# %% [markdown]
# ## The model-average getter: a local copy and a center
#
# Worker 1's graph, built against the addresses of a cluster (no process is
# needed to build a graph). For each trainable variable the getter makes:
#
# - the **local copy** `w` on the worker: trainable, so the optimizer updates
#   it, but in `LOCAL_VARIABLES` only, not in `GLOBAL_VARIABLES`;
# - the **center** `global_center_variable/w`, a `tf.Variable` in
#   `GLOBAL_VARIABLES`, which the device setter sends to a ps task.
#
# The global step is not trainable, so the getter leaves it to the setter: it
# goes to the ps. The optimizer's `local_step` is a local variable, so the
# getter puts it on the worker.

# %%
addresses = tf.train.ClusterSpec(
    {"ps": ["ps0.example:2222"], "worker": ["w0.example:2222", "w1.example:2222"]}
)
ma = build("model average", addresses, index=1)
describe(ma["graph"])
w = named(ma["graph"], "w")
center = named(ma["graph"], "global_center_variable/w")
assert w.device == "/job:worker/task:1" and center.device == "/job:ps/task:0"
assert w in ma["graph"].get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
assert w not in ma["graph"].get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
assert center not in ma["graph"].get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)

# %% [markdown]
# ## The elastic-average getter: a third copy
#
# EASGD adds a **local center** `local_center_variable/w` on the worker: this
# worker's last view of the global center. Between communications, the
# optimizer adds `rho · l2_loss(w − local_center)` to the loss, so each copy is
# held near where the center was (the *elastic* force).

# %%
ea = build("elastic average", addresses, index=1)
describe(ea["graph"])
local_center = named(ea["graph"], "local_center_variable/w")
assert local_center.device == "/job:worker/task:1"
assert local_center in ea["graph"].get_collection(tf.GraphKeys.LOCAL_VARIABLES)
assert named(ea["graph"], "global_center_variable/w").device == "/job:ps/task:0"

# %% [markdown]
# ## Local and global variables: who initializes what
#
# The split into collections decides who initializes what, and what a
# checkpoint holds:
#
# - the chief runs `global_variables_initializer()`: the centers and the
#   global step, on the ps, once for the whole cluster;
# - every worker runs `local_variables_initializer()` (the monitored session's
#   local init op) for its own copies and its `local_step`;
# - a `tf.train.Saver()` saves the global variables: the centers, not the
#   copies. `ElasticAverageOptimizer.swapping_saver()` saves each center under
#   its copy's name, so that a plain model (built without the getter) can
#   restore it.
#
# `ModelAverageOptimizer`'s center starts from the local copy's initial value
# (`initialized_value()`). Its session hook, as in TF 1.15, runs nothing more:
# with a random initializer and no seed, the workers' copies would start apart
# until the first averaging. `ElasticAverageOptimizer`'s hook copies the center
# into both local copies when the session starts.

# %%
for kind, built in (("model average", ma), ("elastic average", ea)):
    with built["graph"].as_default():
        globals_ = sorted(v.op.name for v in tf.global_variables())
        locals_ = sorted(v.op.name for v in tf.local_variables())
    print(f"{kind}:\n  the chief initializes {globals_}\n  each worker initializes {locals_}")
    assert "w" in locals_ and "global_center_variable/w" in globals_

# %% [markdown]
# ## Training on a real cluster
#
# `LocalCluster` starts one ps and two worker processes, each a bare
# `tf.train.Server`. This notebook is the client of both workers: each one's
# graph, its `MonitoredTrainingSession` (with the optimizer's hook) and its
# loop run in a thread of their own, as two worker scripts would, and the ops
# run in the task processes. A model-averaging step is a barrier (the chief
# waits for every worker's copy), so the two loops must run at the same time.
#
# After each step, a worker reads its copy, its local center (EASGD) and the
# center on the ps, so that the numpy replay can check every update.


# %%
def train(kind):
    """Trains both workers for STEPS steps; returns each one's reads after every step."""
    history = [[] for _ in range(WORKERS)]
    errors = []
    with LocalCluster({"ps": 1, "worker": WORKERS}, output=None) as cluster:
        workers, sessions = [], []
        try:
            for index in range(WORKERS):  # the chief first: it initializes the ps
                worker = build(kind, cluster.cluster_spec, index)
                graph = worker["graph"]
                if kind == "async":
                    worker["center"], worker["local_center"] = worker["copy"], worker["copy"]
                else:
                    worker["center"] = [named(graph, f"global_center_variable/{v}") for v in "wb"]
                    worker["local_center"] = worker["copy"]
                if kind == "elastic average":
                    worker["local_center"] = [
                        named(graph, f"local_center_variable/{v}") for v in "wb"
                    ]
                with graph.as_default():
                    sessions.append(
                        tf.train.MonitoredTrainingSession(
                            master=cluster.target("worker", index),
                            is_chief=index == 0,
                            hooks=worker["hooks"],
                        )
                    )
                workers.append(worker)

            def loop(index):
                worker, sess = workers[index], sessions[index]
                reads = [worker["copy"], worker["local_center"], worker["center"]]
                reads.append(worker["global_step"])
                try:
                    history[index].append(sess.run(reads))  # the values before step 1
                    for x, y in batches[index]:
                        sess.run(worker["train_op"], {worker["x"]: x, worker["y"]: y})
                        history[index].append(sess.run(reads))
                except Exception as exc:  # reported by the main thread
                    errors.append(exc)

            threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            assert not errors and not any(t.is_alive() for t in threads), errors
            final_center = sessions[0].run(workers[0]["center"])
            checkpoints = save(cluster, workers[0], kind)
        finally:
            for sess in sessions:
                sess.close()
    return history, final_center, checkpoints


def save(cluster, worker, kind):
    """Saves with each of the worker's savers, in a plain session on worker 0's task."""
    checkpoints = {}
    with tf.Session(cluster.target("worker", 0), graph=worker["graph"]) as sess:
        for name, saver in worker["savers"].items():
            prefix = out.resolve() / kind.replace(" ", "_") / name.strip("()")
            checkpoints[name] = saver.save(sess, str(prefix))
    return checkpoints


def pack(w, b):
    """(w, b) as one float64 vector: b is its last element."""
    return np.append(np.asarray(w, np.float64), b)


def as_arrays(read):
    """(copy, local center, center, global step) of one read, each packed."""
    copy, local_center, center, step = read
    return pack(*copy), pack(*local_center), pack(*center), int(step)


def sgd(params, x, y, elastic=None, rho=0.0):
    """One SGD step on the packed (w, b), with EASGD's elastic gradient when given."""
    grad_w, grad_b = gradient(params[:-1], params[-1], x, y)
    grad = np.append(grad_w, grad_b)
    if elastic is not None:
        grad = grad + rho * (params - elastic)  # d/dv of rho * ½‖v − local center‖²
    return params - LEARNING_RATE * grad


# %% [markdown]
# ## Model averaging
#
# Every `interval_steps` local steps, the step does more than SGD. Each worker
# offers its copy to an accumulator next to the center. The chief writes the
# mean of the two offers into the center, adds one to the global step and
# hands the other worker a token. Then every worker copies the center into its
# copy. The checks:
#
# - on a local step, the copy is its previous value after one SGD step;
# - on an averaging step, the center is the mean of the two workers' copies
#   after that step's SGD (the numpy replay), and each copy equals the center
#   exactly, bit for bit;
# - the global step counts averagings, not local steps: `STEPS / PERIOD`.

# %%
ma_history, ma_final, ma_checkpoints = train("model average")
for k in range(1, STEPS + 1):
    reads = [[as_arrays(h[i]) for i in (k - 1, k)] for h in ma_history]
    after_sgd = [sgd(before[0], *batches[i][k - 1]) for i, (before, _) in enumerate(reads)]
    if k % PERIOD:
        for expected, (_, now) in zip(after_sgd, reads):
            np.testing.assert_allclose(now[0], expected, rtol=1e-5, atol=1e-6)
        continue
    mean = np.mean(after_sgd, axis=0)
    for _, now in reads:
        np.testing.assert_allclose(now[2], mean, rtol=1e-5, atol=1e-6)
        assert np.array_equal(now[0], now[2])  # the copy is the center
averagings = STEPS // PERIOD
assert as_arrays(ma_history[0][-1])[3] == averagings
print(f"{STEPS} local steps per worker, {averagings} averagings: global step {averagings}")
print("after every averaging both copies equal the center, the mean of the two copies")
print(f"the center now: w = {np.round(ma_final[0], 3)}, b = {ma_final[1]:.3f}")
saved = [name for name, _ in tf.train.list_variables(ma_checkpoints["Saver()"])]
print("a Saver() saves the global variables, not the copies:", saved)
assert saved == ["global_center_variable/b", "global_center_variable/w", "global_step"]

# %% [markdown]
# ## Elastic averaging
#
# With TF's defaults, the pull's strength is `moving_rate = α = 0.9 / period /
# workers` (the paper's β = 0.9 shared by the workers) and the elastic loss's
# is `rho = α / η`, with η the learning rate. Every `communication_period` local steps, a
# worker, on its own and with no barrier:
#
# 1. copies the center into its local center, `c`;
# 2. computes `diff = v − c` from its copy `v` (after this step's SGD);
# 3. moves its copy by `−α · diff` and the center by `+α · diff`.
#
# So the two pulls of one communication move the center by `α (v₀ − c) + α (v₁
# − c) = 2α (mean(v) − c)`: towards the workers' mean, by a fraction `2α` of
# the distance. The workers pull at their own times, so the `c` each one sees
# depends on who pulled first; but every pull adds `α · diff` to the center,
# and additions commute. Whatever the order, the center ends at its start
# (zero) plus `α` times the sum of every pull's `diff`. The checks replay each
# worker's steps (SGD on the loss plus the elastic term, then the pull) and
# that sum.

# %%
ALPHA = 0.9 / PERIOD / WORKERS
RHO = ALPHA / LEARNING_RATE
ea_history, ea_final, ea_checkpoints = train("elastic average")
pulls = []
for i, history in enumerate(ea_history):
    for k in range(1, STEPS + 1):
        before, now = as_arrays(history[k - 1]), as_arrays(history[k])
        after_sgd = sgd(before[0], *batches[i][k - 1], elastic=before[1], rho=RHO)
        if k % PERIOD:
            np.testing.assert_allclose(now[0], after_sgd, rtol=1e-5, atol=1e-6)
            assert np.array_equal(now[1], before[1])  # no communication: c unchanged
            continue
        diff = after_sgd - now[1]  # now[1]: the center this worker saw
        np.testing.assert_allclose(now[0], after_sgd - ALPHA * diff, rtol=1e-5, atol=1e-6)
        pulls.append(diff)
center_now = pack(*ea_final)
np.testing.assert_allclose(center_now, ALPHA * np.sum(pulls, axis=0), rtol=1e-4, atol=1e-5)
assert as_arrays(ea_history[0][-1])[3] <= len(pulls) == WORKERS * STEPS // PERIOD
print(f"moving_rate α = {ALPHA:.4f}, rho = {RHO:.2f}; {len(pulls)} pulls in all")
print(f"the center = α · Σ diff = w {np.round(center_now[:-1], 3)}, b {center_now[-1]:.3f}")
swapped = ea_checkpoints["swapping_saver()"]
print("swapping_saver() saves the center under the copy's name:", tf.train.list_variables(swapped))
np.testing.assert_array_equal(tf.train.load_variable(swapped, "w"), ea_final[0])

# %% [markdown]
# The global step counts the pulls of both workers. It is read by each worker
# right after its own step, so the last read may miss the other worker's last
# pull; hence `<=` above.
#
# ## Asynchronous SGD, for reference
#
# No custom getter: `w` and `b` live on the ps and both workers update them on
# every step, without waiting for each other (tutorial 5).

# %%
async_history, async_final, _ = train("async")
assert as_arrays(async_history[0][-1])[3] <= WORKERS * STEPS
print(f"the shared model: w = {np.round(async_final[0], 3)}, b = {async_final[1]:.3f}")

# %% [markdown]
# ## The three side by side
#
# Left: the model the cluster holds on the ps, the one a checkpoint saves (the
# center, or the shared variables of asynchronous SGD). Right: worker 0's own
# copy. Both against worker 0's local steps, on the same evaluation set; the
# dotted line is the noise, the best any model can do.
#
# - Model averaging's center only moves at an averaging: a staircase. Between
#   two, the copies train alone, ahead of the center.
# - EASGD's center follows the copies at a distance: with TF's default α, the
#   two pulls of a communication close `2α = 9 %` of the gap, so it lags far
#   behind. The copies are held back too: the elastic term pulls each one
#   towards its local center by `η · rho = α` of the distance on every step.
# - Asynchronous SGD updates the shared model on every step of both workers,
#   so it needs the ps on every step. Talking to the ps less often is what the
#   two averaging methods are for; a larger `PERIOD` saves more and lags more.

# %%
losses = {}
for label, history in (("model averaging", ma_history), ("elastic averaging", ea_history),
                       ("async SGD", async_history)):  # fmt: skip
    reads = [as_arrays(read) for read in history[0]]
    losses[label] = {
        "center": [mse(center[:-1], center[-1]) for _, _, center, _ in reads],
        "copy": [mse(copy[:-1], copy[-1]) for copy, _, _, _ in reads],
    }
styles = {
    "model averaging": dict(color="#0072B2", marker="o", linestyle="-"),
    "elastic averaging": dict(color="#D55E00", marker="s", linestyle="--"),
    "async SGD": dict(color="#009E73", marker="^", linestyle=":"),
}
fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5), sharey=True)
steps = np.arange(STEPS + 1)
for label, style in styles.items():
    line = dict(style, markevery=max(1, STEPS // 10), linewidth=2.5, markersize=8, label=label)
    left.plot(steps, losses[label]["center"], **line)
    if label != "async SGD":  # its copy is the shared model
        right.plot(steps, losses[label]["copy"], **line)
left.set_title("the model on the ps", fontsize=17)
right.set_title("worker 0's own copy", fontsize=17)
left.set_ylabel("evaluation loss (MSE, log scale)", fontsize=15)
for ax in (left, right):
    ax.axhline(NOISE**2, color="#000000", linestyle=(0, (1, 3)), linewidth=1.5, label="noise")
    ax.set_yscale("log")
    ax.set_xlabel("worker 0's local step", fontsize=15)
    ax.tick_params(labelsize=13)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=13)
fig.suptitle(f"1 ps + 2 workers, communicating every {PERIOD} steps", fontsize=18)
fig.tight_layout()
fig.savefig(out / "loss_by_step.png", dpi=100)
# Model averaging's center and the shared model of async SGD reach the noise.
assert losses["model averaging"]["center"][-1] < 1.5 * NOISE**2
assert losses["async SGD"]["center"][-1] < 1.5 * NOISE**2
notebook.show(fig)

# %% [markdown]
# ## The paper's EASGD beside TF-contrib's
#
# `ElasticAverageOptimizer` is TF-contrib's reading of EASGD. The paper
# (Zhang, Choromanska and LeCun, NIPS 2015) has two rules of its own, in
# `minitf.cluster.policies` as `SyncEASGD` and `AsyncEASGD`. With learning
# rate η, moving rate α and worker `i`'s gradient `g_i`:
#
# - **Synchronous EASGD** (the paper's equations 3 and 4) goes in rounds.
#   Every worker reads the center `x̃` of the round, then all move at once:
#   `x_i ← x_i − η g_i(x_i) − α (x_i − x̃)` and `x̃ ← x̃ + α Σ_i (x_i − x̃)`.
#   A worker pushes `x_i − x̃` into an accumulator beside the center. The
#   chief takes the `p` pushes of the round, moves the center, and puts a
#   token in each worker's own queue. A worker's next read of the center
#   waits for that token.
# - **Asynchronous EASGD** (the paper's Algorithm 1): each worker on its own.
#   At its step `t` it reads its copy `x`. When `τ` divides `t`, it moves its
#   copy by `−α (x − x̃)` and the center by `+α (x − x̃)`. Then it takes an SGD
#   step with the gradient at `x`.
# - **TF-contrib's rule** pulls *after* the SGD step, on steps `τ, 2τ, …`,
#   from the copy that step made. On every step it also adds the spring
#   `ρ (x − c)` to the gradient, `c` being the center as last read
#   (`ρ = α / η` by default). So its copies are pulled twice.
#
# The problem is one number per worker. Worker `i`'s loss is `h (x − t_i)² / 2`,
# and the targets `t_i` differ, so the copies are pulled apart while the
# springs pull them together. The sum of the losses is smallest at the mean
# of the targets. Synchronous EASGD's center ends exactly there: at its fixed
# point `x̃ = mean(x_i)` and `x_i = (ηh t_i + α x̃) / (ηh + α)`, so
# `x̃ = mean(t_i)`. The gradients are exact, so each run is replayed in numpy
# below, step by step.
#
# The cluster is simulated (`minitf.cluster.SimulatedCluster`): one ps and
# four workers in this process, on a virtual clock. The graphs are the ones
# a real cluster runs. The asynchronous rules are stepped in turn, worker 0,
# 1, 2, 3, 0, …, from one client (the paper's *round-robin* scheme), so the
# order is known and the replay is exact. The synchronous rule needs all four
# workers at once, so each runs in a client of its own.

# %%
from minitf.cluster import SimulatedCluster, policies  # noqa: E402

P = 4
TARGETS = [-3.0, -1.0, 1.0, 3.0]
H, ETA, X0 = 1.0, 0.1, 5.0
EA_ALPHA, TAU = 0.1, 4
ROUNDS = 100  # steps per worker


def build_rule(rule, cluster_spec, index, alpha=EA_ALPHA, eta=ETA, targets=TARGETS, x0=X0):
    """Worker `index`'s graph for `rule`: its copy `x`, the center, the train op, the hook."""
    device = f"/job:worker/task:{index}"
    if rule == "TF-contrib":
        getter = ElasticAverageCustomGetter(worker_device=device)
    else:
        getter = policies.EASGDCustomGetter(device)
    setter = tf.train.replica_device_setter(worker_device=device, cluster=cluster_spec)
    with tf.device(setter), tf.variable_scope("", custom_getter=getter):
        x = tf.get_variable("x", [], initializer=tf.constant_initializer(x0))
        loss = tf.multiply(0.5 * H, tf.square(x - targets[index]), name="loss")
        global_step = tf.train.get_or_create_global_step()
        sgd = tf.train.GradientDescentOptimizer(eta)
        if rule == "TF-contrib":
            opt = ElasticAverageOptimizer(
                sgd, P, getter, communication_period=TAU, moving_rate=alpha
            )
            hook = opt.make_session_run_hook(index == 0, index)
        elif rule == "paper, async":
            opt = policies.AsyncEASGD(sgd, getter, alpha, communication_period=TAU)
            hook = opt.make_session_run_hook(index == 0)
        else:
            opt = policies.SyncEASGD(sgd, P, getter, moving_rate=alpha)
            hook = opt.make_session_run_hook(index == 0)
        train_op = opt.minimize(loss, global_step=global_step)
    center = getter._global_map[x] if rule == "TF-contrib" else getter.center_of(x)
    return {"reads": [x, center], "train_op": train_op, "hook": hook}


def session(cluster, index, built):
    return tf.train.MonitoredTrainingSession(
        master=cluster.target("worker", index), is_chief=index == 0, hooks=[built["hook"]],
        save_checkpoint_secs=None, log_step_count_steps=None,
    )  # fmt: skip


def run_in_turn(rule):
    """Round robin from one client; returns [step][worker] -> (x_i, center) after its step."""
    cluster = SimulatedCluster({"ps": 1, "worker": P})
    history = []

    def client():
        workers, sessions = [], []
        for i in range(P):  # the chief first: it initializes the center
            with tf.Graph().as_default():
                workers.append(build_rule(rule, cluster.cluster_spec, i))
                sessions.append(session(cluster, i, workers[-1]))
        for _ in range(ROUNDS):
            row = []
            for built, sess in zip(workers, sessions):
                sess.run(built["train_op"])
                row.append(sess.run(built["reads"]))
            history.append(row)
        for sess in sessions:
            sess.close()

    cluster.run_clients(client)
    return np.array(history, np.float64)


def run_in_rounds(alpha, eta, rounds, targets=TARGETS, x0=X0):
    """Synchronous EASGD, every worker in its own client; [round][worker] -> (x_i, center)."""
    cluster = SimulatedCluster({"ps": 1, "worker": P})
    history = {}

    def worker(i):
        with tf.Graph().as_default():
            built = build_rule("paper, sync", cluster.cluster_spec, i, alpha, eta, targets, x0)
            with session(cluster, i, built) as sess:
                history[i] = []
                for _ in range(rounds):
                    sess.run(built["train_op"])
                    history[i].append(sess.run(built["reads"]))

    cluster.run_workers(worker)
    return np.array([history[i] for i in range(P)], np.float64).transpose(1, 0, 2)


# %% [markdown]
# The numpy replays, written from the three rules above:


# %%
def replay_paper_async():
    x, center, rows = np.full(P, X0), X0, []
    for t in range(ROUNDS):
        row = []
        for i in range(P):
            start = x[i]
            if t % TAU == 0:
                diff = EA_ALPHA * (start - center)
                x[i] -= diff
                center += diff
            x[i] -= ETA * H * (start - TARGETS[i])
            row.append((x[i], center))
        rows.append(row)
    return np.array(rows)


def replay_contrib():
    rho = EA_ALPHA / ETA
    x, local_center, center, rows = np.full(P, X0), np.full(P, X0), X0, []
    for t in range(1, ROUNDS + 1):
        row = []
        for i in range(P):
            x[i] -= ETA * (H * (x[i] - TARGETS[i]) + rho * (x[i] - local_center[i]))
            if t % TAU == 0:
                local_center[i] = center
                diff = EA_ALPHA * (x[i] - local_center[i])
                x[i] -= diff
                center += diff
            row.append((x[i], center))
        rows.append(row)
    return np.array(rows)


def replay_paper_sync(alpha, eta, rounds, targets=TARGETS, x0=X0):
    x, center, rows = np.full(P, x0), x0, []
    for _ in range(rounds):
        x, center = (
            x - eta * H * (x - np.array(targets)) - alpha * (x - center),
            center + alpha * np.sum(x - center),
        )
        rows.append([(x[i], center) for i in range(P)])
    return np.array(rows)


runs = {
    "TF-contrib": (run_in_turn("TF-contrib"), replay_contrib()),
    "paper, async": (run_in_turn("paper, async"), replay_paper_async()),
    "paper, sync": (run_in_rounds(EA_ALPHA, ETA, ROUNDS), replay_paper_sync(EA_ALPHA, ETA, ROUNDS)),
}
for rule, (ran, replayed) in runs.items():
    np.testing.assert_allclose(ran, replayed, rtol=1e-5, atol=1e-5)
    print(f"{rule:13s} the center after {ROUNDS} steps per worker: {ran[-1, -1, 1]:+.4f}")
assert abs(runs["paper, sync"][0][-1, 0, 1] - np.mean(TARGETS)) < 0.05

# %% [markdown]
# ## The stability boundary of synchronous EASGD
#
# On `h x² / 2`, a round of synchronous EASGD is a linear map of the `p + 1`
# numbers `(x_1 … x_p, x̃)`. With `a = ηh`, the differences between copies
# are multiplied by `1 − a − α` each round. The mean `y` of the copies and
# the center follow a 2 × 2 matrix:
# `y' = (1 − a − α) y + α x̃` and `x̃' = pα y + (1 − pα) x̃`.
# Its eigenvalues are inside the unit circle exactly when
# `α < 2 (2 − ηh) / (2 + p (2 − ηh))` (for `0 < ηh < 2`; the docs derive it).
# `policies.sync_stability_boundary` computes it. At the boundary an
# eigenvalue crosses `−1`. Just above it, the mean and the center swing from
# side to side, further each round.
#
# With `p = 4` and `ηh = 0.5` the boundary is `α = 0.375`. We run α = 0.36 and
# α = 0.39 from `x_i = x̃ = 1`, with every target at 0.

# %%
STAB_ETA = 0.5
boundary = policies.sync_stability_boundary(STAB_ETA * H, P)
STAB_ROUNDS = 60
stability = {}
for alpha in (0.36, 0.39):
    ran = run_in_rounds(alpha, STAB_ETA, STAB_ROUNDS, [0.0] * P, 1.0)
    replayed = replay_paper_sync(alpha, STAB_ETA, STAB_ROUNDS, [0.0] * P, 1.0)
    np.testing.assert_allclose(ran, replayed, rtol=1e-5, atol=1e-7)
    stability[alpha] = ran[:, 0, 1]
    print(f"alpha = {alpha}: |center| after {STAB_ROUNDS} rounds = {abs(ran[-1, 0, 1]):.3g}")
assert boundary == 0.375
assert abs(stability[0.36][-1]) < 0.01 and abs(stability[0.39][-1]) > 10

# %% [markdown]
# Left: the center under each rule, against each worker's steps. Right:
# synchronous EASGD's center on both sides of the boundary (the y axis is
# linear near zero and logarithmic beyond).
#
# - Synchronous EASGD moves the center every round, towards the mean of
#   the copies, and ends at the mean of the targets, 0.
# - The asynchronous rules move it only every `τ = 4` steps, once per
#   worker and in turn, so it moves in steps. TF-contrib's copies are also
#   held back by the spring on every step.
# - Neither asynchronous center settles exactly at 0. The workers pull it
#   one after another, each its own way, and each from where its copy has
#   drifted since its last pull. The replays above give the same values.
# - Below the boundary the center swings and settles. Above it the swings
#   grow, though each worker's own SGD step (`ηh = 0.5`) is stable.

# %%
rule_styles = {
    "TF-contrib": dict(color="#D55E00", marker="s", linestyle="--"),
    "paper, async": dict(color="#0072B2", marker="o", linestyle="-"),
    "paper, sync": dict(color="#009E73", marker="^", linestyle=":"),
}
fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5))
steps = np.arange(1, ROUNDS + 1)
for rule, style in rule_styles.items():
    centers = runs[rule][0][:, -1, 1]
    left.plot(steps, centers, **style, markevery=max(1, ROUNDS // 10), linewidth=2.5,
              markersize=8, label=f"{rule}")  # fmt: skip
left.axhline(np.mean(TARGETS), color="#000000", linestyle=(0, (1, 3)), label="mean of targets")
left.set_title(f"the center, α = {EA_ALPHA}, τ = {TAU} (async rules)", fontsize=16)
left.set_xlabel("each worker's step", fontsize=15)
left.set_ylabel("center x̃", fontsize=15)
rounds = np.arange(1, STAB_ROUNDS + 1)
for alpha, style in ((0.36, rule_styles["paper, sync"]), (0.39, rule_styles["TF-contrib"])):
    side = "below" if alpha < boundary else "above"
    right.plot(rounds, stability[alpha], color=style["color"], marker=style["marker"],
               linewidth=2, markersize=6, markevery=5, label=f"α = {alpha} ({side})")  # fmt: skip
right.set_yscale("symlog", linthresh=0.1)
right.set_title(f"synchronous, p = {P}, ηh = 0.5: boundary α = {boundary}", fontsize=16)
right.set_xlabel("round", fontsize=15)
right.set_ylabel("center x̃ (symlog)", fontsize=15)
for ax in (left, right):
    ax.tick_params(labelsize=13)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=13)
fig.tight_layout()
fig.savefig(out / "easgd_rules.png", dpi=100)
notebook.show(fig)
