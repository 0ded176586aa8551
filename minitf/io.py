"""``tf.io``: TFRecord files (`minitf.ops.io.tf_record`), whole files as tensors, parsing
``tf.train.Example`` records, decoding raw bytes and CSV; and, as in TF1, its queue
classes (but no ``tf.io.FIFOQueue``) beside the ``tf.queue`` names."""

# ruff: noqa: F401
from minitf.ops.data_flow.queue_ops import (
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
from minitf.ops.io import gfile_v2 as gfile
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
