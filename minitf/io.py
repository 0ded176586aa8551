"""``tf.io``: TFRecord files (`minitf.ops.io.tf_record`), whole files as tensors, parsing
``tf.train.Example`` records and decoding raw bytes and CSV."""

# ruff: noqa: F401
from minitf.ops.io.reader_ops import read_file, write_file
from minitf.ops.io.tf_record import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from minitf.ops.parsing.parsing_config import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    VarLenFeature,
)
from minitf.ops.parsing.parsing_ops import (
    decode_csv,
    decode_raw,
    parse_example,
    parse_single_example,
)
