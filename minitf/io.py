"""``tf.io``: TFRecord files (`minitf.ops.io.tf_record`) and whole files as tensors."""

# ruff: noqa: F401
from minitf.ops.io.reader_ops import read_file, write_file
from minitf.ops.io.tf_record import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
