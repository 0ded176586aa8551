"""``tf.data`` as graph ops: datasets, their iterators, and the map function's body.

- ``dataset_ops.py``: ``tf.data.Dataset`` and its transformations; each adds
  one op whose output is a ``variant`` (a description of the dataset).
- ``iterator_ops.py``: ``tf.data.Iterator``: ``IteratorV2``,
  ``OneShotIterator``, ``MakeIterator`` and ``IteratorGetNext``.
- ``function_body.py``: ``map_func`` traced once into a graph of its own, kept
  as an attribute of the ``MapDataset`` op and run op by op per element.
- ``dataset_kernels.py``: what the variants are at run time, the iterator
  resource (in the task's resource manager) and the kernels.
"""
