# %% [markdown]
# # 6. Placing variables on ps tasks
#
# Tutorial 5 pinned every variable to the ps by hand. Real TF1 models build
# their graph under `tf.device(tf.train.replica_device_setter(cluster=...))`.
# This device function sends each variable to a ps task and every other op to
# the worker. Which ps task a variable gets is decided by a *placement
# strategy*. The default is round robin: ps 0, 1, 2, 0, 1, ... in the order
# the variables are created, whatever their size.
#
# On a model with a few big matrices and many small ones, round robin can
# put most of the bytes on one ps task. That task then holds the memory,
# serves the reads and applies the updates for most of the model. This
# tutorial measures that imbalance in bytes. It then tries TF1's two remedies:
# `tf.contrib.training.GreedyLoadBalancingStrategy` with `byte_size_load_fn`,
# and *partitioned variables*, which cut a big variable into shards. It ends
# with `tf.nn.embedding_lookup` across the shards of a table and a bar chart
# of each ps task's bytes.
#
# Run it with `.venv/bin/python tutorials/06_replica_device_setter.py`, or
# open it as a notebook.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

import minitf as tf
from minitf import notebook, viz
from minitf.runtime.distributed.launcher import free_ports

out = notebook.out_dir("06_replica_device_setter")
NUM_PS = 3
spec = tf.train.ClusterSpec(
    {"ps": [f"ps{i}.example.com:2222" for i in range(NUM_PS)], "worker": ["w0.example.com:2222"]}
)

# %% [markdown]
# ## An unbalanced model
#
# A small language model: an input embedding and a softmax layer, each with
# one row per word of a 5,000-word vocabulary, and a hidden layer between
# them. Its variables, in the order the model creates them, with their bytes
# computed from shape and dtype alone (elements times bytes per element):

# %%
VOCAB, DIM, HIDDEN = 5000, 64, 128
MODEL = [  # (name, shape, dtype), in creation order; the global step comes last
    ("model/embeddings", [VOCAB, DIM], np.float32),
    ("model/hidden/weights", [DIM, HIDDEN], np.float32),
    ("model/hidden/biases", [HIDDEN], np.float32),
    ("model/softmax/weights", [VOCAB, HIDDEN], np.float32),
    ("model/softmax/biases", [VOCAB], np.float32),
    ("global_step", [], np.int64),
]


def nbytes(shape, dtype):
    """Bytes of a tensor: the number of elements times the size of one."""
    return math.prod(shape) * np.dtype(dtype).itemsize


for name, shape, dtype in MODEL:
    print(f"{name:24} {str(shape):12} {np.dtype(dtype).name:8} {nbytes(shape, dtype):>10,} bytes")
total = sum(nbytes(shape, dtype) for _, shape, dtype in MODEL)
print(f"total {total:,} bytes; an even share over {NUM_PS} ps tasks is {total / NUM_PS:,.0f}")

# %% [markdown]
# ## Round robin, the default
#
# `build` makes the model in a new graph under the setter. The model's scope
# may carry a partitioner (used further down). `placed` reads back which ps
# task each variable op landed on, and its bytes.


# %%
def build(ps_strategy=None, partitioner=None):
    """The model's graph, built under ``replica_device_setter(cluster=spec)``."""
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(cluster=spec, ps_strategy=ps_strategy)
        with tf.device(setter):
            with tf.variable_scope("model", partitioner=partitioner):
                for name, shape, dtype in MODEL[:-1]:
                    tf.get_variable(name[len("model/") :], shape, tf.as_dtype(dtype))
            tf.train.get_or_create_global_step()
            tf.placeholder(tf.int64, [None], name="word_ids")  # one op that is not a variable
    return graph


def placed(graph):
    """``{variable op name: (ps task, bytes)}``, the bytes from the op's shape and dtype."""
    found = {}
    for op in graph.get_operations():
        if op.type == "VariableV2":
            value = op.outputs[0]
            dtype = value.dtype.base_dtype.as_numpy_dtype
            task = tf.DeviceSpec.from_string(op.device).task
            found[op.name] = (task, nbytes(value.shape.as_list(), dtype))
    return found


def ps_loads(placement):
    """Bytes held by each ps task."""
    loads = [0] * NUM_PS
    for task, size in placement.values():
        loads[task] += size
    return loads


round_robin = build()
for name, (task, size) in placed(round_robin).items():
    print(f"{name:24} -> /job:ps/task:{task}  {size:>10,} bytes")
print("word_ids ->", round_robin.get_operation_by_name("word_ids").device)
print("bytes per ps task:", [f"{b:,}" for b in ps_loads(placed(round_robin))])

# %% [markdown]
# Round robin gives the first and fourth variables to ps 0: the embedding
# *and* the softmax weights, 3.84 of the model's 3.89 MB. Ps 2 gets a bias
# and the global step, 520 bytes.
#
# Both strategies can be replayed by hand, from the sizes alone. Round robin
# gives the `i`-th variable task `i % 3`. Greedy gives each variable to the
# task with the fewest bytes so far (ties to the lowest index), then adds the
# variable's bytes to that task. These are TF 1.15's rules
# (`tensorflow/python/training/device_setter.py` and
# `tensorflow/contrib/training/python/training/device_setter.py`).


# %%
def by_hand(sizes, greedy):
    """The ps task of each variable of ``sizes`` (in creation order), by TF's rule."""
    loads, tasks = [0] * NUM_PS, []
    for i, size in enumerate(sizes):
        task = loads.index(min(loads)) if greedy else i % NUM_PS
        loads[task] += size
        tasks.append(task)
    return tasks


sizes = [nbytes(shape, dtype) for _, shape, dtype in MODEL]
assert [task for task, _ in placed(round_robin).values()] == by_hand(sizes, greedy=False)
assert list(placed(round_robin)) == [name for name, _, _ in MODEL]
print("round robin matches the rule: tasks", by_hand(sizes, greedy=False))

# %% [markdown]
# ## Greedy load balancing by bytes
#
# `GreedyLoadBalancingStrategy(num_tasks, load_fn)` keeps a load per ps task.
# `byte_size_load_fn(op)` is the bytes of the op's one output, here the
# variable. A strategy keeps state, so each graph gets a new one.

# %%
greedy = build(
    ps_strategy=tf.contrib.training.GreedyLoadBalancingStrategy(
        NUM_PS, tf.contrib.training.byte_size_load_fn
    )
)
for name, (task, size) in placed(greedy).items():
    print(f"{name:24} -> /job:ps/task:{task}  {size:>10,} bytes")
print("bytes per ps task:", [f"{b:,}" for b in ps_loads(placed(greedy))])
assert [task for task, _ in placed(greedy).values()] == by_hand(sizes, greedy=True)

# %% [markdown]
# Greedy keeps the two big matrices apart: the softmax weights go to ps 2,
# which held only a bias. The busiest task now holds 2.56 MB instead of
# 3.84 MB. But no strategy can do better than the largest variable, because
# it places whole variables. Greedy also depends on the order of creation:
# each choice is final, with no rebalancing later.
#
# ## Partitioned variables
#
# A *partitioner* cuts a variable along one axis into shards. Each shard is
# an ordinary variable, `<name>/part_<i>`, and goes through the setter on
# its own. `tf.fixed_size_partitioner(k)` always makes `k` shards. TF1 cuts
# `dim // k` rows per shard and gives the first `dim % k` shards one more:

# %%
with tf.Graph().as_default():
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        table = tf.get_variable("table", [10, 4], partitioner=tf.fixed_size_partitioner(NUM_PS))
    print(table)
    for shard in table:
        print(f"  {shard.op.name:14} shape {shard.shape.as_list()} on {shard.op.device}")
    shapes = [shard.shape.as_list() for shard in table]
    rows = [10 // NUM_PS + (1 if i < 10 % NUM_PS else 0) for i in range(NUM_PS)]
    assert shapes == [[r, 4] for r in rows] == [[4, 4], [3, 4], [3, 4]]
    assert [shard.op.device for shard in table] == [f"/job:ps/task:{i}" for i in range(NUM_PS)]

# %% [markdown]
# `tf.min_max_variable_partitioner(max_partitions, min_slice_size=256 KiB)`
# cuts only what is big: as many shards as needed for slices of at least
# `min_slice_size` bytes, at most `max_partitions`, at most one per row. In
# TF1 the formula is `max(1, min(rows, max_partitions, ceil(bytes /
# min_slice_size)))`. Put on the model's variable scope, it splits the
# embedding and the softmax weights in three and leaves the rest whole. A
# variable with one slice is still named `.../part_0`, as in TF1. The global
# step is a scalar and is never partitioned.

# %%
MIN_SLICE = 256 << 10
partitioner = tf.min_max_variable_partitioner(max_partitions=NUM_PS, min_slice_size=MIN_SLICE)


def shards_by_hand():
    """``(name, bytes)`` of every variable op the partitioned model makes, by TF's rules."""
    made = []
    for name, shape, dtype in MODEL:
        if not shape:  # a scalar: not partitioned
            made.append((name, nbytes(shape, dtype)))
            continue
        k = max(1, min(shape[0], NUM_PS, math.ceil(nbytes(shape, dtype) / MIN_SLICE)))
        for i in range(k):
            rows = shape[0] // k + (1 if i < shape[0] % k else 0)
            made.append((f"{name}/part_{i}", nbytes([rows] + shape[1:], dtype)))
    return made


shards = shards_by_hand()
shard_sizes = [size for _, size in shards]
partitioned = {}
for label in ("round robin", "greedy"):
    strategy = None
    if label == "greedy":
        load_fn = tf.contrib.training.byte_size_load_fn
        strategy = tf.contrib.training.GreedyLoadBalancingStrategy(NUM_PS, load_fn)
    graph = build(ps_strategy=strategy, partitioner=partitioner)
    placement = placed(graph)
    assert [(name, size) for name, (_, size) in placement.items()] == shards
    assert [task for task, _ in placement.values()] == by_hand(shard_sizes, label == "greedy")
    partitioned[label] = placement
    assert max(ps_loads(placement)) < 1.02 * total / NUM_PS
    print(f"{label}, partitioned:")
    for name, (task, size) in placement.items():
        print(f"  {name:30} -> /job:ps/task:{task}  {size:>10,} bytes")

# %% [markdown]
# With shards of about 427 KB and 853 KB, both strategies come within 2 % of
# an even share. Partitioning does the work here: with pieces this even,
# round robin does as well as greedy. The catch is that the shards must be
# put back together to be used. For an embedding, `tf.nn.embedding_lookup`
# reads the rows it needs from each shard, next to that shard.
#
# ## Embedding lookups across shards
#
# A table of 10 rows in 3 shards, on a cluster of three ps tasks and one
# worker, each a `tf.train.Server` in this process (as in tutorial 5). Row
# `i` of the table is `[i.0, i.1, i.2, i.3]`, so the first number of a
# looked-up row says which row it is. `tf.get_variable(initializer=<constant>,
# partitioner=...)` slices the constant into the shards.
#
# `partition_strategy` says which shard holds which id:
#
# - `"div"`: the shards hold consecutive blocks of ids, exactly as the
#   partitioners cut them. Id `i` is row `i` of the full table.
# - `"mod"`, TF1's default: id `i` is in shard `i % 3`, at row `i // 3`. That
#   is the right rule for a table that was *sharded* by `id % 3`. On the
#   shards a partitioner made, it looks up other rows: a fixed permutation of
#   the table. A model that always looks up with `"mod"` is consistent with
#   itself. But row `i` of the full variable (what a checkpoint saves) is then
#   not the embedding of id `i`. That matters as soon as the table is loaded
#   from, or read by, anything else.

# %%
TABLE = np.arange(10, dtype=np.float32)[:, None] + np.arange(4, dtype=np.float32) / 10
IDS = np.array([0, 1, 2, 5, 9, 4])

ports = free_ports(NUM_PS + 1)
local_spec = tf.train.ClusterSpec(
    {"ps": [f"127.0.0.1:{p}" for p in ports[:NUM_PS]], "worker": [f"127.0.0.1:{ports[-1]}"]}
)
lookup_graph = tf.Graph()
with lookup_graph.as_default():
    with tf.device(tf.train.replica_device_setter(cluster=local_spec)):
        table = tf.get_variable(
            "table", initializer=tf.constant(TABLE), partitioner=tf.fixed_size_partitioner(NUM_PS)
        )
        ids = tf.placeholder(tf.int64, [None], name="ids")
        by_div = tf.nn.embedding_lookup(table, ids, partition_strategy="div", name="by_div")
        by_mod = tf.nn.embedding_lookup(table, ids, partition_strategy="mod", name="by_mod")
servers = []
try:
    for job in local_spec.jobs:
        for i in local_spec.task_indices(job):
            servers.append(tf.train.Server(local_spec, job_name=job, task_index=i))
    worker = servers[-1]
    with tf.Session(worker.target, graph=lookup_graph) as sess:
        sess.run([shard.initializer for shard in table])
        got_div, got_mod = sess.run([by_div, by_mod], {ids: IDS})
    held = {s.task_name: sorted(n for _, n, _ in s.resource_mgr.items()) for s in servers}
finally:
    for server in servers:
        server.stop()
for task, names in held.items():
    print(f"{task} holds {names}")
assert [held[f"/job:ps/replica:0/task:{i}"] for i in range(NUM_PS)] == [
    [f"table/part_{i}"] for i in range(NUM_PS)
]

# The offsets of the shards in the full table: [0, 4, 7].
offsets = np.cumsum([0] + [shard.shape.as_list()[0] for shard in table])[:-1]
mod_rows = offsets[IDS % NUM_PS] + IDS // NUM_PS
print("ids:                           ", IDS)
print("div: rows of the table it found", got_div[:, 0].astype(int))
print("mod: rows of the table it found", got_mod[:, 0].astype(int))
np.testing.assert_array_equal(got_div, TABLE[IDS])
np.testing.assert_array_equal(got_mod, TABLE[mod_rows])
assert not np.array_equal(got_mod, TABLE[IDS])

# %% [markdown]
# The `"mod"` lookup's step as the cluster runs it, with the lookup's own
# ops folded into one box per task. Each thick edge between tasks is a
# `_Send`/`_Recv` pair. On the worker, the folded ops turn each id into a
# shard and a row and split the ids by shard (`FloorMod`, `FloorDiv`,
# `DynamicPartition`). Each shard's ids go to its ps task. There the folded
# box is a `GatherV2` colocated with the shard, and only the rows it found
# travel back. `ParallelDynamicStitch` puts them in the order of the ids.
# The `"div"` lookup has the same shape, with more arithmetic to find each
# id's block.

# %%
lookup_picture = viz.draw(
    lookup_graph, view="partitioned", targets=[by_mod], sendrecv="edges", collapse=["by_mod"]
)
lookup_picture.save(out / "embedding_lookup_mod")
notebook.show(lookup_picture)

# %% [markdown]
# ## Bytes per ps task
#
# The four placements side by side, from the graphs minitf built, each
# checked above against the rules replayed by hand. The dashed line is an
# even share. Round robin piles the two big matrices on ps 0. Greedy keeps
# them apart but cannot split them. Partitioning lets either strategy come
# close to an even share.

# %%
configurations = {
    "whole variables": {"round robin": placed(round_robin), "greedy": placed(greedy)},
    "big variables in 3 shards\n(min_max_variable_partitioner)": partitioned,
}
styles = {
    "round robin": {"color": "#E69F00", "hatch": "//"},
    "greedy": {"color": "#0072B2", "hatch": ""},
}
fig, axes = plt.subplots(1, 2, figsize=(13, 6), sharey=True)
x = np.arange(NUM_PS)
for ax, (title, placements) in zip(axes, configurations.items()):
    for k, (label, placement) in enumerate(placements.items()):
        loads = ps_loads(placement)
        assert sum(loads) == total  # every byte is on exactly one ps task
        offset = (k - 0.5) * 0.4
        bars = ax.bar(
            x + offset, np.array(loads) / 1e6, 0.4, label=label, edgecolor="black", **styles[label]
        )
        labels = [f"{b / 1e6:.2f}" if b >= 10_000 else f"{b} B" for b in loads]
        ax.bar_label(bars, labels, fontsize=13, padding=2)
    ax.axhline(total / NUM_PS / 1e6, color="black", linestyle="--", label="even share")
    ax.set_title(title, fontsize=16)
    ax.set_xticks(x, [f"ps {i}" for i in range(NUM_PS)], fontsize=14)
    ax.tick_params(axis="y", labelsize=13)
    ax.set_xlabel("ps task", fontsize=14)
axes[0].set_ylabel("bytes held (MB)", fontsize=14)
axes[0].set_ylim(0, 4.4)
axes[0].legend(fontsize=13, loc="upper right")
fig.suptitle("Variable bytes per ps task: round robin vs greedy by bytes", fontsize=17)
fig.tight_layout()
fig.savefig(out / "bytes_per_ps_task.png", dpi=120)
notebook.show(fig)
