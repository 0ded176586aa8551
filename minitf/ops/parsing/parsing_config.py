"""What ``tf.parse_example`` is asked for: one feature spec per key, checked before any op is built.

``FixedLenFeature(shape, dtype, default_value)`` gives a dense tensor of
``shape`` per example (required when ``default_value`` is None);
``VarLenFeature(dtype)`` a `SparseTensor` of however many values each
example has; ``FixedLenSequenceFeature(shape, dtype, allow_missing=True)``
a dense ``[rows, *shape]`` per example, padded in a batch.

`features_to_params` turns the user's dict into `ParseParams`: sparse and
dense features sorted by key (TF's order), each default an array of its
feature's shape, and TF's ``ValueError``/``TypeError`` for a bad spec.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import numpy as np

from minitf.framework import dtypes, tensor_shape
from minitf.ops import op_def_library

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature"]

# The types an Example holds: float_list, int64_list, bytes_list.
PARSE_TYPES = (dtypes.float32, dtypes.int64, dtypes.string)

_VarLen = collections.namedtuple("VarLenFeature", ["dtype"])
_FixedLen = collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])
_FixedLenSequence = collections.namedtuple(
    "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"]
)


class VarLenFeature(_VarLen):
    """A feature of any length per example, parsed into a `SparseTensor`.

    Attributes:
        dtype: ``tf.float32``, ``tf.int64`` or ``tf.string``.
    """

    __slots__ = ()


class FixedLenFeature(_FixedLen):
    """A feature of a fixed ``shape`` per example, parsed into a dense tensor.

    Attributes:
        shape: The shape of one example's value (its values fill it row-major).
        dtype: ``tf.float32``, ``tf.int64`` or ``tf.string``.
        default_value: The value when an example lacks the feature (as many
            elements as ``shape``); None makes the feature required.
    """

    __slots__ = ()

    def __new__(
        cls,
        shape: tensor_shape.TensorShape | list | tuple | None,
        dtype: dtypes.DType,
        default_value: Any = None,
    ) -> FixedLenFeature:
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(_FixedLenSequence):
    """A feature holding any number of rows of ``shape``, parsed into ``[rows, *shape]``.

    In a batch, examples with fewer rows are padded with ``default_value``
    (or 0 / ``b""``).

    Attributes:
        shape: The shape of one row.
        dtype: ``tf.float32``, ``tf.int64`` or ``tf.string``.
        allow_missing: Must be True: an example without the feature has 0 rows.
        default_value: The scalar padding value.
    """

    __slots__ = ()

    def __new__(
        cls,
        shape: tensor_shape.TensorShape | list | tuple,
        dtype: dtypes.DType,
        allow_missing: bool = False,
        default_value: Any = None,
    ) -> FixedLenSequenceFeature:
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


@dataclass(frozen=True)
class DenseParam:
    """One dense feature as the kernel reads it.

    Attributes:
        key: The feature name.
        dtype: Its dtype.
        shape: A TensorShape; its first dimension is None for a sequence feature.
        default: The default (fixed length: an array of ``shape``; sequence:
            a scalar padding value), or an empty array for none.
    """

    key: str
    dtype: dtypes.DType
    shape: tensor_shape.TensorShape
    default: np.ndarray

    @property
    def variable_length(self) -> bool:
        """Whether this is a sequence feature (its first dimension counts rows)."""
        return self.shape.ndims > 0 and self.shape.as_list()[0] is None


@dataclass(frozen=True)
class ParseParams:
    """The sparse and dense features of one parse, each list sorted by key.

    Attributes:
        sparse: ``(key, dtype)`` of each `VarLenFeature`.
        dense: A `DenseParam` per fixed-length or sequence feature.
    """

    sparse: list
    dense: list


def features_to_params(features: dict) -> ParseParams:
    """Checks ``features`` (a dict of feature specs) and returns the `ParseParams` of a parse.

    Args:
        features: A dict from keys to `FixedLenFeature`, `VarLenFeature` or
            `FixedLenSequenceFeature`.

    Raises:
        ValueError: for no features, a spec TF refuses or a default of the wrong size.
        TypeError: for a dtype an Example cannot hold.
    """
    if features is None:
        raise ValueError(f"Argument `features` cannot be None or falsy. Got {features}")
    if not features:
        raise ValueError("Invalid argument: features cannot be empty.")
    sparse, dense = [], []
    for key in sorted(features):
        feature = features[key]
        if isinstance(feature, VarLenFeature):
            dtype = _checked_dtype(feature.dtype, "sparse_types")
            sparse.append((key, dtype))
        elif isinstance(feature, FixedLenFeature):
            dense.append(_fixed_len_param(key, feature))
        elif isinstance(feature, FixedLenSequenceFeature):
            dense.append(_sequence_param(key, feature))
        else:
            raise ValueError(f"Unsupported {type(feature).__name__} {feature} for key '{key}'")
    return ParseParams(sparse, dense)


def _checked_dtype(dtype, parameter: str) -> dtypes.DType:
    return op_def_library.check_dtype(parameter, dtypes.as_dtype(dtype), PARSE_TYPES)


def _known_dims(key: str, shape) -> list[int]:
    dims = list(tensor_shape.as_shape(shape).as_list())
    if None in dims:
        raise ValueError(
            f"All dimensions of shape for feature {key} need to be known but received {dims}."
        )
    return dims


def _fixed_len_param(key: str, feature: FixedLenFeature) -> DenseParam:
    if feature.shape is None:
        raise ValueError(f"Missing shape for feature {key}. Received feature={_show(feature)}.")
    dims = list(tensor_shape.as_shape(feature.shape).as_list())
    if dims and dims[0] is None:
        raise ValueError(
            f"First dimension of shape for feature {key} unknown. Consider using "
            f"FixedLenSequenceFeature. Received feature={_show(feature)}."
        )
    dims = _known_dims(key, dims)
    dtype = _checked_dtype(feature.dtype, "dense_defaults")
    default = _empty(dtype)
    if feature.default_value is not None:
        default = _as_array(feature.default_value, dtype, key)
        size = int(np.prod(dims, dtype=np.int64))
        if default.size != size:
            raise ValueError(
                f"Cannot reshape a tensor with {default.size} elements to shape "
                f"{_dims_text(dims)} ({size} elements): the default_value of feature {key}"
            )
        default = default.reshape(dims)
    return DenseParam(key, dtype, tensor_shape.TensorShape(dims), default)


def _sequence_param(key: str, feature: FixedLenSequenceFeature) -> DenseParam:
    if not feature.allow_missing:
        raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
    dims = _known_dims(key, feature.shape)
    dtype = _checked_dtype(feature.dtype, "dense_defaults")
    default = _empty(dtype)
    if feature.default_value is not None:
        default = _as_array(feature.default_value, dtype, key)
        if default.size != 1:
            raise ValueError(
                f"Cannot reshape a tensor with {default.size} elements to shape [] (1 elements): "
                f"the padding value (default_value) of feature {key} must be a scalar"
            )
        default = default.reshape(())
    return DenseParam(key, dtype, tensor_shape.TensorShape([None, *dims]), default)


def _empty(dtype: dtypes.DType) -> np.ndarray:
    return np.zeros([0], dtype=dtype.as_numpy_dtype)


def _as_array(value, dtype: dtypes.DType, key: str) -> np.ndarray:
    """A default value as an array of ``dtype`` (strings as ``bytes`` objects)."""
    if dtype == dtypes.string:
        flat = [v.encode() if isinstance(v, str) else bytes(v) for v in np.ravel(np.asarray(value))]
        return np.array(flat, dtype=object).reshape(np.shape(value))
    array = np.asarray(value)
    if dtype.is_integer and array.dtype.kind == "f":
        raise TypeError(f"Expected {dtype.name}, but got {value!r} of type 'float': feature {key}")
    return array.astype(dtype.as_numpy_dtype)


def _dims_text(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _show(feature) -> str:
    """A feature spec as TF prints it in messages (dtypes as ``tf.float32``)."""
    fields = ", ".join(f"{name}={value!r}" for name, value in zip(feature._fields, feature))
    return f"{type(feature).__name__}({fields})"
