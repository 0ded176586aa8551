# %% [markdown]
# # 3. Control dependencies and variables
#
# A session runs only what the fetches need. Ops that matter for their side
# effects, such as assigning a variable, run when something depends on them,
# either by data or by a *control dependency*. Variables keep their value
# between `run` calls, in the session, not in the Python object.
#
# Run it with `.venv/bin/python tutorials/03_control_dependencies_and_variables.py`,
# or open it as a notebook.

# %%
import numpy as np

import minitf as tf
from minitf import notebook, viz

# %% [markdown]
# ## What runs, and when
#
# Fetching `doubled` never runs `increment`: nothing needs it. Every evaluation
# of `after` first increments the counter, because of its control dependency.

# %%
counter = tf.Variable(0, name="counter")
increment = tf.assign_add(counter, 1)
doubled = counter * 2
with tf.control_dependencies([increment]):
    after = tf.identity(counter.read_value()) * 2

with tf.Session() as sess:
    try:
        sess.run(counter)
    except tf.errors.FailedPreconditionError as e:
        print("before initialization:", e.message)
    sess.run(tf.global_variables_initializer())
    print("doubled:", sess.run(doubled), sess.run(doubled), "(counter unchanged)")
    print("after:", sess.run(after), sess.run(after), "(counter incremented each time)")
    assert sess.run(counter) == 2

# %% [markdown]
# ## Each session has its own copy of the state

# %%
with tf.Session() as other:
    other.run(counter.initializer)
    print("a new session starts from the initial value:", other.run(counter))
    assert other.run(counter) == 0

# %% [markdown]
# ## Sharing variables by name
#
# `get_variable` and `variable_scope` share variables by name: a model built
# twice with reuse uses one set of weights.


# %%
def dense(x, units, name):
    with tf.variable_scope(name, reuse=tf.AUTO_REUSE):
        w = tf.get_variable("w", [x.shape[1].value, units])
        return tf.matmul(x, w)


x1 = tf.placeholder(tf.float32, [None, 3], name="x1")
x2 = tf.placeholder(tf.float32, [None, 3], name="x2")
y1, y2 = dense(x1, 2, "layer"), dense(x2, 2, "layer")
print("variables:", [v.name for v in tf.trainable_variables()])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    ones = np.ones((1, 3), np.float32)
    a, b = sess.run([y1, y2], {x1: ones, x2: ones})
    assert np.array_equal(a, b)
    print("the two towers agree:", a.ravel())

# %% [markdown]
# ## The graph, with its control edge
#
# The dashed edge from `AssignAdd` into `after`'s read is the control
# dependency: no tensor flows along it, only "run me first". Both towers'
# `MatMul` read the one variable `layer/w`.

# %%
notebook.show(viz.draw(fold_variables=True))
