"""Neural-network ops (``tf.nn``): activations, softmax, cross entropies, dropout, embeddings.

- ``nn_ops.py``: the constructors; its ``__all__`` is the ``tf.nn``
  namespace. ``nn_impl.py`` (``moments``, sigmoid cross entropy) and
  ``embedding_ops.py`` (``embedding_lookup`` over sharded parameters) are
  written in Python over other ops, with no kernel or gradient of their own.
- ``nn_kernels.py``: the numpy kernels, and the fused ``MatMul`` kernel.
- ``nn_grad.py``: the gradients.
- ``conv_ops.py``, ``conv_kernels.py``, ``conv_grad.py``: ``conv2d`` and its
  gradient ops, ``conv2d_transpose``, ``max_pool``, ``avg_pool`` (im2col
  kernels; ``conv_spectral.py``: the stride-1 convolutions with many channels
  as products of spectra).
- ``lrn_ops.py``: ``lrn`` / ``local_response_normalization`` and ``LRNGrad``
  (kernels in ``nn_kernels.py``, gradient in ``nn_grad.py``).
- ``candidate_sampling_ops.py`` (``log_uniform_candidate_sampler``) and
  ``sampled_losses.py`` (``nce_loss``, ``sampled_softmax_loss``).
"""
