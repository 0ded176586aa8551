"""``tf.io``: parsing ``tf.train.Example`` records and decoding raw bytes and CSV."""

# ruff: noqa: F401
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
