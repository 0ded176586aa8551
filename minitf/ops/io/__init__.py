"""File ops (TF's ``io_ops``): checkpoints, record files and the readers of an input pipeline.

Checkpoints — what a ``tf.train.Saver`` builds and the files they write:

- ``io_ops.py``: the constructors (``SaveV2``, ``RestoreV2``, ...).
- ``io_kernels.py``: their kernels; none has a gradient.
- ``tensor_bundle.py``: the checkpoint format on disk, read and written by
  the kernels and by the checkpoint readers of ``tf.train``.

Record files and readers — what an input pipeline reads:

- ``crc32c.py`` and ``record_io.py``: the TFRecord format (checksums, records,
  compression), shared by ``tf_record.py`` (``tf.python_io``'s writer and
  iterator) and the ``TFRecordReader`` kernel.
- ``reader_ops.py``: the reader classes (``tf.TFRecordReader``, ...) and
  ``tf.read_file``/``tf.write_file``; ``readers.py`` the reader resources
  (TF's ``ReaderBase``), ``reader_state.py`` their serialized state,
  ``reader_kernels.py`` the kernels.
- ``file_io.py``: opening files with TF's errors.
"""
