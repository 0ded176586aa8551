"""``TensorProto`` and ``TensorShapeProto``: a tensor as TF writes it into a summary or a graph.

Field numbers from ``tensorflow/core/framework/tensor.proto`` and
``tensor_shape.proto`` (only the fields minitf writes are declared; a parser
skips the others)::

    message TensorShapeProto { message Dim { int64 size = 1; string name = 2; }
                               repeated Dim dim = 2; bool unknown_rank = 3; }
    message TensorProto { DataType dtype = 1; TensorShapeProto tensor_shape = 2;
                          int32 version_number = 3; bytes tensor_content = 4;
                          repeated float float_val = 5; repeated double double_val = 6;
                          repeated int32 int_val = 7; repeated bytes string_val = 8;
                          repeated int64 int64_val = 10; repeated bool bool_val = 11; }

`make_tensor_proto` writes a numpy value as TF's kernels do: strings one
by one in ``string_val`` (``Tensor::AsProtoField``), numbers as their raw
little-endian bytes in ``tensor_content`` (``Tensor::AsProtoTensorContent``).
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes
from minitf.framework.proto_message import (
    BYTES,
    FLOAT,
    INT64,
    Message,
    RepeatedMessage,
    RepeatedScalar,
    SubMessage,
)
from minitf.framework.proto_scalar import BOOL, DOUBLE, ScalarField, enum, single

__all__ = ["DATA_TYPE", "TensorProto", "TensorShapeProto", "make_shape_proto", "make_tensor_proto"]

_TYPE_NAMES = {
    1: "FLOAT", 2: "DOUBLE", 3: "INT32", 4: "UINT8", 5: "INT16", 6: "INT8", 7: "STRING",
    8: "COMPLEX64", 9: "INT64", 10: "BOOL", 14: "BFLOAT16", 17: "UINT16", 18: "COMPLEX128",
    19: "HALF", 20: "RESOURCE", 21: "VARIANT", 22: "UINT32", 23: "UINT64",
}  # fmt: skip

DATA_TYPE = enum(
    {0: "DT_INVALID"}
    | {n: f"DT_{name}" for n, name in _TYPE_NAMES.items()}
    | {n + 100: f"DT_{name}_REF" for n, name in _TYPE_NAMES.items()}
)
"""The ``DataType`` enum of ``types.proto`` (a ``_ref`` type is its number + 100)."""


class _Dim(Message):
    """One dimension: its ``size`` (-1: unknown) and an optional ``name``."""

    FULL_NAME = "tensorflow.TensorShapeProto.Dim"
    FIELDS = (ScalarField("size", 1, single("int64")), ScalarField("name", 2, single("string")))


class TensorShapeProto(Message):
    """A shape: its dimensions (``dim``), or ``unknown_rank``.

    Attributes:
        dim: The dimensions, each a ``TensorShapeProto.Dim`` with a ``size``.
        unknown_rank: True when even the rank is unknown.
    """

    FULL_NAME = "tensorflow.TensorShapeProto"
    Dim = _Dim
    FIELDS = (RepeatedMessage("dim", 2, _Dim), ScalarField("unknown_rank", 3, single("bool")))


class TensorProto(Message):
    """A tensor: its ``dtype``, ``tensor_shape`` and values (one of the ``*_val`` lists or
    ``tensor_content``, the raw bytes)."""

    FULL_NAME = "tensorflow.TensorProto"
    FIELDS = (
        ScalarField("dtype", 1, DATA_TYPE),
        SubMessage("tensor_shape", 2, TensorShapeProto),
        ScalarField("version_number", 3, single("int32")),
        ScalarField("tensor_content", 4, single("bytes")),
        RepeatedScalar("float_val", 5, FLOAT),
        RepeatedScalar("double_val", 6, DOUBLE),
        RepeatedScalar("int_val", 7, INT64),
        RepeatedScalar("string_val", 8, BYTES),
        RepeatedScalar("int64_val", 10, INT64),
        RepeatedScalar("bool_val", 11, BOOL),
    )


def make_shape_proto(dims) -> TensorShapeProto:
    """A `TensorShapeProto` of ``dims`` (a list, None entries unknown) or of an unknown rank (None).

    The shape message is marked present even with no dimensions, as TF writes
    a scalar's shape.
    """
    shape = TensorShapeProto()
    if dims is None:
        shape.unknown_rank = True
    for size in dims or ():
        shape.dim.add(size=-1 if size is None else int(size))
    return shape


def make_tensor_proto(value, dtype: dtypes.DType | None = None) -> TensorProto:
    """``value`` (a numpy array or scalar; strings as bytes) as TF's kernels write it.

    Args:
        value: The value.
        dtype: Its minitf dtype; taken from the numpy type when None.
    """
    array = np.asarray(value)
    dtype = dtypes.as_dtype(array.dtype) if dtype is None else dtype
    proto = TensorProto(dtype=dtype.as_datatype_enum)
    proto.tensor_shape.CopyFrom(make_shape_proto(list(array.shape)))  # present, even if empty
    if dtype.base_dtype == dtypes.string:
        proto.string_val.extend(
            v.encode() if isinstance(v, str) else bytes(v) for v in array.ravel()
        )
    else:
        proto.tensor_content = np.ascontiguousarray(array, dtype.as_numpy_dtype).tobytes()
    return proto
