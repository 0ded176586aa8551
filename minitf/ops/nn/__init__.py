"""Neural-network ops (``tf.nn``): activations, softmax, cross entropies, dropout, embeddings.

- ``nn_ops.py``: the constructors; its ``__all__`` is the ``tf.nn``
  namespace. ``nn_impl.py`` (``moments``, sigmoid cross entropy) and
  ``embedding_ops.py`` (``embedding_lookup`` over sharded parameters) are
  written in Python over other ops, with no kernel or gradient of their own.
- ``nn_kernels.py``: the numpy kernels, and the fused ``MatMul`` kernel.
- ``nn_grad.py``: the gradients.
"""
