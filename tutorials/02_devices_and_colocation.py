# %% [markdown]
# # 2. Devices and colocation
#
# Every op records a *requested device*. `tf.device` scopes nest: the inner
# scope decides first, outer scopes only fill in the fields still unset; a
# device *function* decides for each op; `tf.colocate_with` overrides them all.
# This is the mechanism `tf.train.replica_device_setter` is built on
# (tutorial 6).
#
# Run it with `.venv/bin/python tutorials/02_devices_and_colocation.py`, or open
# it as a notebook.

# %%
import minitf as tf
from minitf import notebook, viz

# %% [markdown]
# ## Scopes merge field by field, innermost first

# %%
with tf.device("/job:worker"):
    with tf.device("/device:CPU:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:ps/task:1"):
        b = tf.constant(2.0, name="b")
print("a:", a.device)  # /job:worker/device:CPU:0
print("b:", b.device)  # /job:ps/task:1 (the inner job wins)
assert a.device == "/job:worker/device:CPU:0"
assert b.device == "/job:ps/task:1"


# %% [markdown]
# ## A device function sees each op and chooses
#
# This one sends variables to a parameter server and everything else to the
# worker: a tiny `replica_device_setter`.


# %%
def place(op):
    return "/job:ps/task:0" if op.type == "VariableV2" else "/job:worker/task:0"


with tf.device(place):
    w = tf.Variable(3.0, name="w")
    y = w * 2.0
print("w's variable op:", w.op.device)
init = w.initializer
print("w's initializer (colocated with w):", init.device, init.colocation_groups())
print("y = w * 2:", y.device)
assert w.op.device == "/job:ps/task:0"
assert w.initializer.device == "/job:ps/task:0"
assert y.device == "/job:worker/task:0"

# %% [markdown]
# ## Colocation beats device scopes
#
# The op goes where its target is, whatever the scope around it says.

# %%
with tf.device("/job:worker/task:3"):
    with tf.colocate_with(w):
        update = tf.assign_add(w, 1.0)
print("update:", update.device, update.op.colocation_groups())
assert update.device == "/job:ps/task:0"

# %% [markdown]
# ## A local session has one device
#
# Asking for another is TF's error, unless soft placement lets the op fall back
# to the CPU.

# %%
with tf.Session() as sess:
    try:
        sess.run(w.initializer)
    except tf.errors.InvalidArgumentError as e:
        print("local session:", e.message.split(".")[0])
with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
    sess.run(w.initializer)
    print("with soft placement, y =", sess.run(y))

# %% [markdown]
# ## Where each op was placed
#
# One box per task: the variable, its initializer and the colocated update on
# `ps/task:0`; the multiplication on the worker.

# %%
notebook.show(viz.draw())
