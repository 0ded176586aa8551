"""Control flow: ``no_op``, ``group``, ``tuple``, ``with_dependencies``, and ``cond``.

- ``control_flow_ops.py``: the constructors (and the ``NoOp`` kernel).
- ``control_flow_kernels.py``: the ``Switch`` and ``Merge`` kernels, the dead
  value that ``tf.cond`` rests on, and the kernels of a loop's ops.
- ``while_context.py``, ``while_loop.py``: ``tf.while_loop`` and the
  ``WhileContext`` that builds it; ``control_flow_util.py``: which loop an op
  is in.
- ``control_flow_grad.py``, ``control_flow_state.py``: gradients through
  ``tf.cond`` (a Switch of the gradient on the predicate, a Merge with zeros
  for each value a branch read) and through loops (a backward loop, with
  stacks of forward values, the predicates of conds in the loop among them).
"""
