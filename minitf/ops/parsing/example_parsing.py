"""Serialized ``tf.train.Example`` records into the arrays ``tf.parse_example`` returns.

`parse_examples` reads a batch: each record is parsed with
`minitf.framework.example_pb2` and each requested feature is checked the way
TF's fast parser checks it (tensorflow/core/util/example_proto_fast_parsing.cc),
with its messages:

* a dense feature an example lacks takes its default, or is an error when it
  has none (a feature with no list set counts as missing);
* the list kind must be the requested dtype (``float_list`` for float32,
  ``int64_list`` for int64, ``bytes_list`` for string);
* a fixed-length feature must have exactly as many values as its shape, a
  sequence feature a whole number of rows.

A batch's messages say which example failed ("Name: <name>, Key: <key>,
Index: <i>."); a single example's (``ParseSingleExample``) name only the key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minitf.framework import dtypes
from minitf.framework.example_pb2 import DecodeError, Example
from minitf.ops.parsing.parsing_config import DenseParam

_KIND_DTYPES = {
    "float_list": dtypes.float32,
    "int64_list": dtypes.int64,
    "bytes_list": dtypes.string,
}
# TF's DataTypeString, and the word its count messages use for a list kind.
_TYPE_NAMES = {dtypes.float32: "float", dtypes.int64: "int64", dtypes.string: "string"}
_VALUE_NAMES = {dtypes.float32: "float", dtypes.int64: "int64", dtypes.string: "bytes"}


class ParseError(Exception):
    """A record or a feature that does not fit the request (the kernel's InvalidArgumentError)."""


@dataclass(frozen=True)
class _Where:
    """Which example a message is about: TF's prefix for a batch or for a single example."""

    name: str
    index: int
    single: bool

    def key(self, key: str) -> str:
        if self.single:
            return f"Key: {key}.  "
        return f"Name: {self.name}, Key: {key}, Index: {self.index}.  "

    def feature(self, key: str) -> str:
        return f"Feature: {key}" if self.single else f"Name: {self.name}, Feature: {key}"


def _features(serialized: bytes):
    try:
        return Example.FromString(serialized).features.feature
    except DecodeError:
        value = serialized.decode("latin-1")
        raise ParseError(f"Could not parse example input, value: '{value}'") from None


def _values(feature, dtype, where: _Where, key: str, dense: bool) -> list | None:
    """The values of ``feature`` if it has a list of ``dtype``; None if it has none."""
    kind = feature.WhichOneof("kind") if feature is not None else None
    if kind is None:
        return None
    found = _KIND_DTYPES[kind]
    if found != dtype:
        expected, actual = _TYPE_NAMES[dtype], _TYPE_NAMES[found]
        if dense:
            detail = f"Data type: {actual} but expected type: {expected}"
        else:
            detail = f"Expected type: {expected}, Actual type: {actual}"
        raise ParseError(f"{where.key(key)}Data types don't match. {detail}")
    return list(getattr(feature, kind).value)


def _shape_text(shape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def _dense_value(param: DenseParam, values: list | None, where: _Where) -> np.ndarray:
    """One example's value of a dense feature: ``shape``, or ``[rows, *row shape]``."""
    dims = param.shape.as_list()
    numpy_dtype = param.dtype.as_numpy_dtype
    noun = _VALUE_NAMES[param.dtype]
    if param.variable_length:
        row = int(np.prod(dims[1:], dtype=np.int64))
        values = values or []
        if row == 0 or len(values) % row:
            raise ParseError(
                f"{where.key(param.key)}Number of {noun} values is not a multiple of stride "
                f"length. Saw {len(values)} values but output shape is: {_shape_text(param.shape)}"
            )
        return np.array(values, dtype=numpy_dtype).reshape([len(values) // row, *dims[1:]])
    if values is None:
        if param.default.size == 0:  # TF's test for "no default", even for a 0-size shape
            raise ParseError(
                f"{where.feature(param.key)} (data type: {_TYPE_NAMES[param.dtype]}) is required "
                "but could not be found."
            )
        return param.default.reshape(dims)
    if len(values) != int(np.prod(dims, dtype=np.int64)):
        raise ParseError(
            f"{where.key(param.key)}Number of {noun} values != expected.  Values size: "
            f"{len(values)} but output shape: {_shape_text(param.shape)}"
        )
    return np.array(values, dtype=numpy_dtype).reshape(dims)


def _padding(param: DenseParam):
    if param.default.size:
        return param.default.item()
    return b"" if param.dtype == dtypes.string else 0


def _stack_dense(param: DenseParam, rows: list[np.ndarray]) -> np.ndarray:
    """The batch of a dense feature; sequences padded to the longest."""
    dims = param.shape.as_list()
    numpy_dtype = param.dtype.as_numpy_dtype
    if not param.variable_length:
        out = np.empty([len(rows), *dims], dtype=numpy_dtype)
        for i, value in enumerate(rows):
            out[i] = value
        return out
    longest = max((len(r) for r in rows), default=0)
    out = np.full([len(rows), longest, *dims[1:]], _padding(param), dtype=numpy_dtype)
    for i, value in enumerate(rows):
        out[i, : len(value)] = value
    return out


def _sparse_triple(dtype, lists: list[list]):
    """``(indices [N, 2], values [N], dense_shape [2])`` of one sparse feature over a batch."""
    indices = [(i, j) for i, values in enumerate(lists) for j in range(len(values))]
    flat = [v for values in lists for v in values]
    longest = max((len(v) for v in lists), default=0)
    return (
        np.array(indices, dtype=np.int64).reshape(-1, 2),
        np.array(flat, dtype=dtype.as_numpy_dtype).reshape(-1),
        np.array([len(lists), longest], dtype=np.int64),
    )


def parse_examples(serialized, names, sparse, dense, single: bool = False):
    """Parses a batch of serialized Examples.

    Args:
        serialized: The records (``bytes``), in batch order.
        names: One name per record for messages, or empty (``<unknown>``).
        sparse: ``(key, dtype)`` per sparse feature.
        dense: A `DenseParam` per dense feature.
        single: Word the messages for ``ParseSingleExample``.

    Returns:
        ``(sparse triples, dense arrays)``: per sparse feature its
        ``(indices, values, dense_shape)`` over the batch; per dense feature
        its ``[batch, ...]`` array.

    Raises:
        ParseError: TF's message for the first record that does not fit.
    """
    sparse_lists = [[] for _ in sparse]
    dense_rows = [[] for _ in dense]
    for index, record in enumerate(serialized):
        where = _Where(names[index] if len(names) else "<unknown>", index, single)
        features = _features(record)
        for lists, (key, dtype) in zip(sparse_lists, sparse):
            lists.append(_values(features.get(key), dtype, where, key, dense=False) or [])
        for rows, param in zip(dense_rows, dense):
            values = _values(features.get(param.key), param.dtype, where, param.key, dense=True)
            rows.append(_dense_value(param, values, where))
    return (
        [_sparse_triple(dtype, lists) for lists, (_, dtype) in zip(sparse_lists, sparse)],
        [_stack_dense(param, rows) for rows, param in zip(dense_rows, dense)],
    )
