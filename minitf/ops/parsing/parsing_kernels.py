"""The kernels of the parsing ops (`minitf.ops.parsing.parsing_ops`); none has a gradient.

``ParseExample`` and ``ParseSingleExample`` hand their records to
`minitf.ops.parsing.example_parsing`; ``DecodeCSV`` splits and converts
with `minitf.ops.parsing.csv_records`; ``DecodeRaw`` is ``numpy.frombuffer``.
Every refusal is TF's ``InvalidArgumentError`` with TF's message.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.parsing import csv_records, example_parsing
from minitf.ops.parsing.parsing_config import DenseParam
from minitf.ops.string.string_ops import as_bytes


def _strings(value) -> list[bytes]:
    return [as_bytes(v) for v in np.ravel(np.asarray(value, dtype=object))]


def _invalid(op, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(op.node_def, op, message)


def _dense_params(op, keys, defaults) -> list[DenseParam]:
    return [
        DenseParam(key, dtype, shape, np.asarray(default))
        for key, dtype, shape, default in zip(
            keys, op.get_attr("Tdense"), op.get_attr("dense_shapes"), defaults
        )
    ]


def _flatten(sparse, dense) -> list:
    """The op's outputs in order: all indices, all values, all shapes, then the dense values."""
    return [t[0] for t in sparse] + [t[1] for t in sparse] + [t[2] for t in sparse] + dense


@register_kernel("ParseExample")
def _parse_example_kernel(op):
    num_sparse, num_dense = op.get_attr("Nsparse"), op.get_attr("Ndense")
    sparse_types = op.get_attr("sparse_types")

    def compute(ctx, serialized, names, *rest):
        sparse_keys = [as_bytes(k).decode() for k in rest[:num_sparse]]
        dense_keys = [as_bytes(k).decode() for k in rest[num_sparse : num_sparse + num_dense]]
        records, names = _strings(serialized), [n.decode("latin-1") for n in _strings(names)]
        if names and len(names) != len(records):
            raise _invalid(
                op,
                "Expected names have the same shape as serialized: "
                f"name.shape=[{len(names)}], serialized.shape=[{len(records)}]",
            )
        dense = _dense_params(op, dense_keys, rest[num_sparse + num_dense :])
        try:
            sparse_out, dense_out = example_parsing.parse_examples(
                records, names, list(zip(sparse_keys, sparse_types)), dense
            )
        except example_parsing.ParseError as e:
            raise _invalid(op, str(e)) from None
        if np.ndim(serialized) == 0:  # a scalar record: no batch dimension
            return _unbatched(sparse_out, dense_out)
        return _flatten(sparse_out, dense_out)

    return _single_output(compute, op)


@register_kernel("ParseSingleExample")
def _parse_single_example_kernel(op):
    sparse = list(zip(op.get_attr("sparse_keys"), op.get_attr("sparse_types")))
    dense_keys = op.get_attr("dense_keys")

    def compute(ctx, serialized, *defaults):
        dense = _dense_params(op, dense_keys, defaults)
        try:
            sparse_out, dense_out = example_parsing.parse_examples(
                [as_bytes(serialized)], [], sparse, dense, single=True
            )
        except example_parsing.ParseError as e:
            raise _invalid(op, str(e)) from None
        return _unbatched(sparse_out, dense_out)

    return _single_output(compute, op)


def _unbatched(sparse, dense) -> list:
    """The outputs of a batch of one without its batch dimension (a single example's)."""
    return _flatten([(i[:, 1:], v, s[1:]) for i, v, s in sparse], [d[0] for d in dense])


def _single_output(compute, op):
    """``compute``, returning a lone output as itself (the kernel protocol for one output)."""
    if len(op.outputs) != 1:
        return compute
    return lambda ctx, *inputs: compute(ctx, *inputs)[0]


@register_kernel("DecodeRaw")
def _decode_raw_kernel(op):
    out_type = op.get_attr("out_type")
    order = "<" if op.get_attr("little_endian") else ">"
    numpy_dtype = np.dtype(out_type.as_numpy_dtype).newbyteorder(order)

    def compute(ctx, data):
        strings = _strings(data)
        shape = np.shape(data)
        if not strings:
            return np.zeros([*shape, 0], dtype=out_type.as_numpy_dtype)
        size = len(strings[0])
        for i, s in enumerate(strings):
            if len(s) != size:
                raise _invalid(
                    op,
                    "DecodeRaw requires input strings to all be the same size, but element "
                    f"{i} has size {size} != {len(s)}",
                )
        if size % numpy_dtype.itemsize:
            raise _invalid(
                op,
                f"Input to DecodeRaw has length {size} that is not a multiple of "
                f"{numpy_dtype.itemsize}, the size of {out_type.name}",
            )
        flat = np.frombuffer(b"".join(strings), dtype=numpy_dtype)
        return flat.astype(out_type.as_numpy_dtype).reshape([*shape, -1])

    return compute


def _column(op, fields_by_record, col: int, default, dtype) -> np.ndarray:
    """One output column: each record's field ``col`` converted, or the default if empty."""
    na_value = op.get_attr("na_value").encode()
    values = []
    for record, fields in enumerate(fields_by_record):
        field = fields[col]
        if field == b"" or field == na_value:
            if np.size(default) == 0:
                raise _invalid(op, f"Field {col} is required but missing in record {record}!")
            values.append(np.ravel(default)[0])
            continue
        value = csv_records.convert_field(field, dtype)
        if value is None:
            raise _invalid(
                op,
                f"Field {col} in record {record} is not a valid "
                f"{csv_records.type_name(dtype)}: {field.decode('latin-1')}",
            )
        values.append(value)
    return np.array(values, dtype=dtype.as_numpy_dtype)


@register_kernel("DecodeCSV")
def _decode_csv_kernel(op):
    delim, use_quote = op.get_attr("field_delim"), op.get_attr("use_quote_delim")
    select_cols, out_types = op.get_attr("select_cols"), op.get_attr("OUT_TYPE")

    def fields_of(index: int, record: bytes) -> list[bytes]:
        try:
            fields = csv_records.split_record(record, ord(delim), use_quote)
        except csv_records.CsvError as e:
            raise _invalid(op, str(e)) from None
        if select_cols:
            fields = [fields[c] for c in select_cols if c < len(fields)]
        if len(fields) != len(out_types):
            raise _invalid(
                op, f"Expect {len(out_types)} fields but have {len(fields)} in record {index}"
            )
        return fields

    def compute(ctx, records, *defaults):
        if len(delim) != 1:
            raise _invalid(op, "field_delim should be only 1 char")
        fields = [fields_of(i, r) for i, r in enumerate(_strings(records))]
        columns = [
            _column(op, fields, col, default, dtype).reshape(np.shape(records))
            for col, (default, dtype) in enumerate(zip(defaults, out_types))
        ]
        return columns[0] if len(columns) == 1 else columns

    return compute


for _op_type in ("ParseExample", "ParseSingleExample", "DecodeRaw", "DecodeCSV"):
    NotDifferentiable(_op_type)
