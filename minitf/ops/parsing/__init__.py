"""Parsing ops (TF's ``parsing_ops``): ``tf.train.Example`` records and CSV lines into tensors.

- ``parsing_config.py``: ``FixedLenFeature``, ``VarLenFeature``,
  ``FixedLenSequenceFeature``: what a user asks for, checked once at graph
  construction.
- ``example_parsing.py``: how the serialized Examples of a batch become the
  dense arrays and sparse triples of that request (plain numpy, no graph).
- ``csv_records.py``: how a CSV record splits into fields and a field into a number.
- ``parsing_ops.py``: the constructors (``parse_example``,
  ``parse_single_example``, ``decode_raw``, ``decode_csv``).
- ``parsing_kernels.py``: their kernels; none has a gradient.
"""
