"""``tf.gradients`` and the numerical gradient checks.

These build no op type of their own: they call the gradient functions the
families register (``<family>_grad.py``).

- ``gradients_impl.py``: ``tf.gradients``, reverse-mode differentiation that
  adds the gradient ops to the graph.
- ``gradient_checker.py``: ``tf.test.compute_gradient`` and
  ``compute_gradient_error``.
"""
