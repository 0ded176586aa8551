# %% [markdown]
# # 1. Graphs and sessions
#
# TF1 code does its work in two phases. First it *builds* a graph: every call
# such as `tf.matmul` adds an `Operation` to the default graph and returns a
# symbolic `Tensor`, with no numbers yet. Then a `Session` *runs* parts of the
# graph: `sess.run(fetches, feed_dict)` computes just the ops the fetches
# need, with the placeholders replaced by the fed values.
#
# Run it as a script with `.venv/bin/python tutorials/01_graphs_and_sessions.py`,
# or open it as a notebook (`jupytext --to notebook` or Jupyter with jupytext).

# %%
import numpy as np

import minitf as tf
from minitf import notebook, viz

# %% [markdown]
# ## Building: nothing is computed here

# %%
x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
w = tf.constant([[1.0], [2.0], [3.0]], name="w")
y = tf.matmul(x, w, name="y")
unused = tf.reduce_sum(x * 100.0, name="unused")

print("y is a symbolic tensor:", y)
print("its op:", y.op.name, "of type", y.op.type, "with inputs", [t.name for t in y.op.inputs])
print("static shape inferred at construction:", y.shape)
print("ops in the graph:", [op.name for op in tf.get_default_graph().get_operations()])

# %% [markdown]
# ## Running
#
# The session prunes the graph to what `y` needs (`unused` never runs), builds
# an execution plan once, and walks it for every call.

# %%
with tf.Session() as sess:
    value = sess.run(y, feed_dict={x: np.ones((2, 3), np.float32)})
    print("y =", value.ravel(), "(each row: 1*1 + 1*2 + 1*3 = 6)")
    assert np.allclose(value, 6.0)

    # Fetches can be any nesting of lists, tuples and dicts; names work too.
    result = sess.run({"y": y, "both": [y, "unused:0"]}, {x: np.eye(3, dtype=np.float32)})
    print("a dict fetch: y =", result["y"].ravel(), "and unused =", result["both"][1])
    assert result["both"][1] == 300.0  # 100 times the sum of the 3x3 identity

# %% [markdown]
# ## Mistakes are caught early, with TF's errors

# %%
try:
    tf.matmul(x, tf.constant([[1.0, 2.0]]))
except ValueError as e:
    print("shape error at construction:", str(e).splitlines()[0])
with tf.Session() as sess:
    try:
        sess.run(y)
    except tf.errors.InvalidArgumentError as e:
        print("missing feed at run time:", e.message)

# %% [markdown]
# ## The graph, drawn
#
# Placeholders, constants and the two computations; `unused` is there in the
# graph even though running `y` never touches it.

# %%
notebook.show(viz.draw())
