"""The ``tf.random`` namespace (TF1 spellings; re-exports only)."""

# ruff: noqa: F401
from minitf.framework.random_seed import get_seed, set_random_seed
from minitf.ops.random.random_ops import categorical, multinomial, truncated_normal
from minitf.ops.random.random_ops import random_normal as normal
from minitf.ops.random.random_ops import random_shuffle as shuffle
from minitf.ops.random.random_ops import random_uniform as uniform
