"""``tf.data``: input pipelines as graph ops (`minitf.ops.data`)."""

from minitf.ops.data.dataset_ops import Dataset
from minitf.ops.data.iterator_ops import (
    Iterator,
    make_initializable_iterator,
    make_one_shot_iterator,
)

__all__ = ["Dataset", "Iterator", "make_initializable_iterator", "make_one_shot_iterator"]
