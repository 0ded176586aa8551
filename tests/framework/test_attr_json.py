"""Attr values as JSON: every kind an op's attrs hold comes back exactly, with its type."""

import json
import math

import numpy as np
import pytest

import minitf as tf
from minitf.framework import attr_json

pytestmark = pytest.mark.timeout(60)


def same_value(a, b) -> bool:
    """Equality that also checks array dtypes and container types (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and _array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, tf.TensorShape):
        # Shapes with unknown dimensions never compare equal (as in TF): compare the lists.
        return a.ndims == b.ndims and (a.ndims is None or a.as_list() == b.as_list())
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and _array_equal(np.asarray(a), np.asarray(b))
    return a == b


def _array_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind in "fc":
        return np.array_equal(a, b, equal_nan=True)
    return np.array_equal(a, b)


ATTR_VALUES = [
    None,
    True,
    7,
    -2.5,
    float("nan"),
    float("-inf"),
    "text",
    b"loc:@w",
    b"\x00\xff\x80 bytes",
    [b"loc:@a", b"loc:@b"],
    [],
    (1, 2),
    {"k": [1, (2.0, b"x")]},
    tf.float32,
    tf.int64_ref,
    tf.string,
    [tf.float32, tf.int32],
    tf.TensorShape([2, None]),
    tf.TensorShape(None),
    tf.TensorShape([]),
    [tf.TensorShape([3]), tf.TensorShape(None)],
    np.float32(0.1),
    np.int8(-3),
    1 + 2j,
    np.arange(6, dtype=np.float16).reshape(2, 3) / 7,
    np.array([0.1, 1e-30, 3.4e38], np.float32),
    np.array([0.1, np.pi, -0.0], np.float64),
    np.array([[1, -2], [3, 4]], np.int8),
    np.array([2**63 - 1, -(2**63)], np.int64),
    np.array([2**64 - 1], np.uint64),
    np.array([True, False]),
    np.array([1 + 2j, np.nan - 1j], np.complex64),
    np.array([b"a", b"bc", b"\xff"], dtype=object),
    np.array(["ab", "c"]),
    np.array(5, np.int32),
    np.zeros((0, 3), np.float32),
]


@pytest.mark.parametrize("value", ATTR_VALUES, ids=repr)
def test_attr_values_survive_json_exactly(value):
    text = json.dumps(attr_json.encode_attr_value(value), allow_nan=False)
    assert same_value(attr_json.decode_attr_value(json.loads(text)), value)


def test_attr_values_json_cannot_hold_are_refused():
    with pytest.raises(TypeError, match="function"):
        attr_json.encode_attr_value(lambda: None)
    with pytest.raises(ValueError, match="Unknown attr value"):
        attr_json.decode_attr_value({"pickle": "..."})
