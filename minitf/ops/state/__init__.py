"""Variables: the variable ops, ``tf.Variable``, ``get_variable``, partitioners and initializers.

- ``state_ops.py``: the variable ops (``VariableV2``, ``Assign``,
  ``VarHandleOp``, scatter updates) with their kernels and gradients, and the
  `VariableResource` that holds a value in a task's resource manager.
- ``variables.py`` (``tf.Variable`` and the variable collections),
  ``variable_scope.py`` (``get_variable``, ``variable_scope``),
  ``partitioned_variables.py`` (shards and partitioners) and ``init_ops.py``
  (initializers): Python over the ops, with no kernels of their own.
"""
