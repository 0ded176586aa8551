"""``tf.parse_example``, ``tf.parse_single_example``, ``tf.decode_raw``, ``tf.decode_csv``.

Each constructor checks what TF checks at graph construction (the feature
specs, ranks, dtypes) and adds one op: ``ParseExample``,
``ParseSingleExample``, ``DecodeRaw`` or ``DecodeCSV``, whose kernels are in
`minitf.ops.parsing.parsing_kernels`. A ``VarLenFeature`` comes back as a
`SparseTensor` made of three of the op's outputs.
"""

from __future__ import annotations

import re
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.framework.sparse_tensor import SparseTensor
from minitf.ops import common_shapes, op_def_library
from minitf.ops.parsing import parsing_config

__all__ = ["decode_csv", "decode_raw", "parse_example", "parse_single_example"]

# DecodeRaw's out_type list (TF's, less bfloat16, which minitf lacks).
DECODE_RAW_TYPES = (
    dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint16, dtypes.uint8,
    dtypes.int16, dtypes.int8, dtypes.int64, dtypes.complex64, dtypes.complex128, dtypes.bool,
)  # fmt: skip
DECODE_CSV_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)


def _default_tensor(param: parsing_config.DenseParam) -> ops.Tensor:
    safe = re.sub(r"[^A-Za-z0-9_.\-/]", "_", param.key)
    return ops.convert_to_tensor(param.default, dtype=param.dtype, name=f"key_{safe}")


def _outputs(features, params, op: ops.Operation) -> dict:
    """The op's outputs by feature key: a `SparseTensor` per sparse feature, else a Tensor."""
    n = len(params.sparse)
    out = {}
    for i, (key, _) in enumerate(params.sparse):
        out[key] = SparseTensor(op.outputs[i], op.outputs[n + i], op.outputs[2 * n + i])
    for i, param in enumerate(params.dense):
        out[param.key] = op.outputs[3 * n + i]
    return {key: out[key] for key in features}


def _parse_attrs(params) -> dict:
    return {
        "sparse_types": [dtype for _, dtype in params.sparse],
        "Tdense": [p.dtype for p in params.dense],
        "dense_shapes": [p.shape for p in params.dense],
    }


def _parse_shapes(params, batch: list) -> list:
    rank = len(batch)
    n = len(params.sparse)
    return (
        [tensor_shape.TensorShape([None, rank + 1])] * n
        + [tensor_shape.TensorShape([None])] * n
        + [tensor_shape.TensorShape([rank + 1])] * n
        + [tensor_shape.TensorShape(batch + p.shape.as_list()) for p in params.dense]
    )


def _parse_dtypes(params) -> list:
    n = len(params.sparse)
    return (
        [dtypes.int64] * n
        + [dtype for _, dtype in params.sparse]
        + [dtypes.int64] * n
        + [p.dtype for p in params.dense]
    )


def parse_example(
    serialized: Any, features: dict, name: str | None = None, example_names: Any = None
) -> dict:
    """Parses a batch of serialized ``tf.train.Example`` records into tensors.

    Args:
        serialized: A string vector: the records.
        features: A dict from feature keys to `FixedLenFeature`,
            `VarLenFeature` or `FixedLenSequenceFeature`.
        name: The name scope (default ``"ParseExample"``).
        example_names: A string vector naming each record in error messages.

    Returns:
        A dict from each key to a Tensor ``[batch, *shape]`` (fixed length),
        ``[batch, rows, *shape]`` (sequence, padded) or a `SparseTensor`
        with indices ``[N, 2]`` and dense shape ``[batch, longest]``.

    Raises:
        ValueError: for a bad feature spec or ``serialized`` of rank above 1.
        TypeError: for a dtype an Example cannot hold.
    """
    params = parsing_config.features_to_params(features)
    with ops.name_scope(name, "ParseExample", [serialized, example_names]) as scope:
        serialized = ops.convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        names = ops.convert_to_tensor(
            [] if example_names is None else example_names, dtype=dtypes.string, name="names"
        )
        sparse_keys = [
            ops.convert_to_tensor(k, dtype=dtypes.string, name=f"sparse_keys_{i}")
            for i, (k, _) in enumerate(params.sparse)
        ]
        dense_keys = [
            ops.convert_to_tensor(p.key, dtype=dtypes.string, name=f"dense_keys_{i}")
            for i, p in enumerate(params.dense)
        ]
        defaults = [_default_tensor(p) for p in params.dense]
        inputs = [serialized, names, *sparse_keys, *dense_keys, *defaults]
        ndims = serialized.get_shape().ndims
        if ndims is not None and ndims > 1:
            raise common_shapes.shape_error(
                f"Shape must be at most rank 1 but is rank {ndims}",
                scope + "ParseExample", "ParseExample", serialized, names
            )  # fmt: skip
        batch = [None] if ndims is None else serialized.get_shape().as_list()
        attrs = {"Nsparse": len(params.sparse), "Ndense": len(params.dense), **_parse_attrs(params)}
        op = op_def_library.create_op(
            "ParseExample", inputs, _parse_dtypes(params), "ParseExample", attrs,
            _parse_shapes(params, batch),
        )  # fmt: skip
    return _outputs(features, params, op)


def parse_single_example(
    serialized: Any, features: dict, name: str | None = None, example_names: Any = None
) -> dict:
    """Parses one serialized ``tf.train.Example`` into tensors.

    As `parse_example` without the batch dimension: dense values have the
    feature's shape, a `SparseTensor` has indices ``[N, 1]`` and dense
    shape ``[N]``.

    Args:
        serialized: A string scalar: the record.
        features: A dict from feature keys to feature specs.
        name: The name scope (default ``"ParseSingleExample"``).
        example_names: Accepted for TF's signature; messages about a single
            example name only the feature, as TF's do.

    Returns:
        A dict from each key to a Tensor or a `SparseTensor`.

    Raises:
        ValueError: for a bad feature spec or a ``serialized`` that is not a scalar.
        TypeError: for a dtype an Example cannot hold.
    """
    del example_names
    params = parsing_config.features_to_params(features)
    with ops.name_scope(name, "ParseSingleExample", [serialized]):
        serialized = ops.convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        if serialized.get_shape().ndims not in (None, 0):
            raise ValueError("Input serialized must be a scalar")
        defaults = [_default_tensor(p) for p in params.dense]
        attrs = {
            "num_sparse": len(params.sparse),
            "sparse_keys": [key for key, _ in params.sparse],
            "dense_keys": [p.key for p in params.dense],
            **_parse_attrs(params),
        }
        op = op_def_library.create_op(
            "ParseSingleExample", [serialized, *defaults], _parse_dtypes(params),
            "ParseSingleExample", attrs, _parse_shapes(params, []),
        )  # fmt: skip
    return _outputs(features, params, op)


def decode_raw(
    input_bytes: Any = None,
    out_type: dtypes.DType | None = None,
    little_endian: bool = True,
    name: str | None = None,
    bytes: Any = None,  # noqa: A002 - TF's name
) -> ops.Tensor:
    """Reinterprets the bytes of each string as a vector of numbers (op ``DecodeRaw``).

    Args:
        input_bytes: A string tensor; all its strings must have one length.
        out_type: The number type (``tf.uint8``, ``tf.float32``, ...).
        little_endian: Whether the bytes are little-endian.
        name: The op name.
        bytes: TF1's old name for ``input_bytes``.

    Returns:
        A tensor of shape ``input_bytes.shape + [length / size of out_type]``.

    Raises:
        ValueError: if ``out_type`` is missing or both byte arguments are given.
        TypeError: if ``out_type`` is not a number type DecodeRaw reads.
    """
    if bytes is not None:
        if input_bytes is not None:
            raise ValueError("Cannot specify both 'input_bytes' and 'bytes'")
        input_bytes = bytes
    if out_type is None:
        raise ValueError("decode_raw_v1() missing 1 positional argument: 'out_type'")
    out_type = op_def_library.check_dtype("out_type", dtypes.as_dtype(out_type), DECODE_RAW_TYPES)
    with ops.name_scope(name, "DecodeRaw", [input_bytes]) as scope:
        tensor = ops.convert_to_tensor(input_bytes, dtype=dtypes.string, name="bytes")
        shape = tensor.get_shape().concatenate([None])
        return op_def_library.create_tensor(
            "DecodeRaw", [tensor], out_type, scope, shape,
            attrs={"out_type": out_type, "little_endian": bool(little_endian)},
        )  # fmt: skip


def _check_select_cols(select_cols, record_defaults) -> list[int]:
    if select_cols is None:
        return []
    cols = [int(c) for c in select_cols]
    if any(a >= b for a, b in zip(cols, cols[1:])):
        raise ValueError("select_cols is not strictly increasing.")
    if cols and cols[0] < 0:
        raise ValueError("select_cols contains negative values.")
    if len(cols) != len(record_defaults):
        raise ValueError("Length of select_cols and record_defaults do not match.")
    return cols


def _record_default(value, index: int, scope: str, records: ops.Tensor) -> ops.Tensor:
    default = ops.convert_to_tensor(value, name=f"record_defaults_{index}")
    op_def_library.check_dtype("record_defaults", default.dtype, DECODE_CSV_TYPES)
    shape = default.get_shape()
    if shape.ndims is not None and shape.ndims > 1:
        raise common_shapes.shape_error(
            f"Shape must be at most rank 1 but is rank {shape.ndims}",
            scope + "DecodeCSV", "DecodeCSV", records, default,
        )  # fmt: skip
    if shape.ndims == 1 and shape.as_list()[0] not in (None, 0, 1):
        raise common_shapes.shape_error(
            "Shape of a default must be a length-0 or length-1 vector, or a scalar.",
            scope + "DecodeCSV", "DecodeCSV", records, default,
        )  # fmt: skip
    return default


def decode_csv(
    records: Any,
    record_defaults: list | tuple,
    field_delim: str = ",",
    use_quote_delim: bool = True,
    name: str | None = None,
    na_value: str = "",
    select_cols: list[int] | None = None,
) -> list[ops.Tensor]:
    """Splits CSV records into one tensor per column (op ``DecodeCSV``).

    Args:
        records: A string tensor: one record per element.
        record_defaults: One default per column: a scalar or one-element
            list (used for an empty field), or an empty list (the field is
            required). Its dtype (float32, float64, int32, int64, string) is
            the column's.
        field_delim: The one-character delimiter.
        use_quote_delim: Treat ``"`` as RFC 4180 quoting.
        name: The op name.
        na_value: A field equal to it counts as empty.
        select_cols: Sorted column indices to read (one default per index).

    Returns:
        A list of tensors of ``records``' shape, one per default.

    Raises:
        ValueError: for bad ``select_cols``, no defaults or a default of a wrong shape.
        TypeError: if ``record_defaults`` is not a list or a default has another dtype.
    """
    if not isinstance(record_defaults, (list, tuple)):
        raise TypeError(
            f"Expected list for 'record_defaults' argument to 'DecodeCSV' Op, not "
            f"{record_defaults!r}."
        )
    cols = _check_select_cols(select_cols, record_defaults)
    if not record_defaults:
        raise ValueError(
            "Attr 'OUT_TYPE' of 'DecodeCSV' Op passed list of length 0 less than minimum 1."
        )
    with ops.name_scope(name, "DecodeCSV", [records]) as scope:
        records = ops.convert_to_tensor(records, dtype=dtypes.string, name="records")
        defaults = [_record_default(v, i, scope, records) for i, v in enumerate(record_defaults)]
        out_types = [d.dtype.base_dtype for d in defaults]
        op = op_def_library.create_op(
            "DecodeCSV", [records, *defaults], out_types, scope, {
                "OUT_TYPE": out_types, "field_delim": field_delim,
                "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
                "select_cols": cols,
            }, [records.get_shape()] * len(defaults),
        )  # fmt: skip
    return list(op.outputs)
