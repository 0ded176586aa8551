"""The kernels of the reader ops (`minitf.ops.io.reader_ops`) and of ``ReadFile``/``WriteFile``.

A reader op (``TFRecordReaderV2``, ...) finds or creates its reader in the
task's resource manager by ``(container, shared_name)`` — without a shared
name every kernel gets a reader of its own — and outputs it as its handle.
``ReaderReadV2`` and ``ReaderReadUpToV2`` are asynchronous: they may wait for
a file name (`minitf.ops.io.readers`). The others are quick and synchronous.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.data_flow.blocking import private_resource_name
from minitf.ops.io import file_io, readers
from minitf.ops.string.string_ops import as_bytes


def _shape(value) -> str:
    return "[" + ",".join(str(d) for d in np.shape(value)) + "]"


def _check_non_negative(op, *names: str) -> None:
    for name in names:
        if op.get_attr(name) < 0:
            raise errors.InvalidArgumentError(
                None, None, f"{name} must be >= 0 not {op.get_attr(name)}"
            )


def _make_tf_record_reader(op):
    return lambda: readers.TFRecordReader(op.name, op.get_attr("compression_type"))


def _make_text_line_reader(op):
    _check_non_negative(op, "skip_header_lines")
    return lambda: readers.TextLineReader(op.name, op.get_attr("skip_header_lines"))


def _make_fixed_length_record_reader(op):
    _check_non_negative(op, "header_bytes", "record_bytes", "footer_bytes", "hop_bytes")
    attrs = [op.get_attr(a) for a in ("record_bytes", "header_bytes", "footer_bytes", "hop_bytes")]
    encoding = op.get_attr("encoding")
    return lambda: readers.FixedLengthRecordReader(op.name, *attrs, encoding)


_FACTORIES = {
    "TFRecordReaderV2": _make_tf_record_reader,
    "TextLineReaderV2": _make_text_line_reader,
    "FixedLengthRecordReaderV2": _make_fixed_length_record_reader,
    "WholeFileReaderV2": lambda op: lambda: readers.WholeFileReader(op.name),
    "IdentityReaderV2": lambda op: lambda: readers.IdentityReader(op.name),
}


def _reader_kernel(op):
    container = op.get_attr("container")
    name = op.get_attr("shared_name") or private_resource_name(op)
    make_factory = _FACTORIES[op.type]

    def compute(ctx):
        # The attributes are checked when the op runs, as TF's kernel constructor does.
        return ctx.resource_mgr.lookup_or_create(container, name, make_factory(op))

    return compute


for _op_type in _FACTORIES:
    register_kernel(_op_type, stateful=True)(_reader_kernel)


@register_kernel("ReaderReadV2", is_async=True, stateful=True)
def _read_kernel(op):
    def compute(ctx, done, reader, queue):
        reader.read(ctx, queue, done, 1, up_to=False)

    return compute


@register_kernel("ReaderReadUpToV2", is_async=True, stateful=True)
def _read_up_to_kernel(op):
    def compute(ctx, done, reader, queue, num_records):
        wanted = int(num_records)
        if wanted < 0:
            raise errors.InvalidArgumentError(None, None, f"num_records must be >= 0, got {wanted}")
        reader.read(ctx, queue, done, wanted, up_to=True)

    return compute


def _counter_kernel(attribute: str):
    def builder(op):
        def compute(ctx, reader):
            with reader.lock:
                return np.int64(getattr(reader, attribute))

        return compute

    return builder


register_kernel("ReaderNumRecordsProducedV2", stateful=True)(
    _counter_kernel("num_records_produced")
)
register_kernel("ReaderNumWorkUnitsCompletedV2", stateful=True)(_counter_kernel("work_finished"))


@register_kernel("ReaderSerializeStateV2", stateful=True)
def _serialize_state_kernel(op):
    def compute(ctx, reader):
        return reader.serialize_state()

    return compute


@register_kernel("ReaderRestoreStateV2", stateful=True)
def _restore_state_kernel(op):
    def compute(ctx, reader, state):
        if np.ndim(state) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"Reader state must be scalar, but had shape: {_shape(state)}"
            )
        reader.restore_state(as_bytes(state))

    return compute


@register_kernel("ReaderResetV2", stateful=True)
def _reset_kernel(op):
    def compute(ctx, reader):
        reader.reset()

    return compute


def _scalar_path(value, what: str) -> bytes:
    if np.ndim(value) != 0:
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be scalar, but had shape: {_shape(value)}"
        )
    return as_bytes(value)


@register_kernel("ReadFile", stateful=True)
def _read_file_kernel(op):
    def compute(ctx, filename):
        return file_io.read_file(_scalar_path(filename, "Input filename tensor"))

    return compute


@register_kernel("WriteFile", stateful=True)
def _write_file_kernel(op):
    def compute(ctx, filename, contents):
        path = _scalar_path(filename, "Input filename tensor")
        file_io.write_file(path, _scalar_path(contents, "Contents tensor"))

    return compute


for _op_type in (
    *_FACTORIES,
    "ReaderReadV2",
    "ReaderReadUpToV2",
    "ReaderNumRecordsProducedV2",
    "ReaderNumWorkUnitsCompletedV2",
    "ReaderSerializeStateV2",
    "ReaderRestoreStateV2",
    "ReaderResetV2",
    "ReadFile",
    "WriteFile",
):
    NotDifferentiable(_op_type)
