"""``tf.python_io``: writing and reading TFRecord files from Python (`minitf.ops.io.tf_record`)."""

# ruff: noqa: F401
from minitf.ops.io.tf_record import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
