"""Training ops (TF's ``training_ops``): the optimizers' update ops, ``ApplyGradientDescent`` ...

- ``training_ops.py``: the constructors the optimizers in ``minitf.train``
  call and their kernels, which update variables in place; none has a
  gradient.
"""
