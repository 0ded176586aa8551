"""The kernels of the checkpoint ops (`minitf.ops.io.io_ops`).

Each kernel runs on the task its op is placed on and reads or writes that
task's filesystem through `minitf.ops.io.tensor_bundle`. The tensors a
``SaveV2`` saves arrive as its inputs: values read from variables when the
op runs (on another task they came through ``_Send``/``_Recv``).
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.ops.io import tensor_bundle
from minitf.ops.string.string_ops import as_bytes


def _text(value) -> str:
    return as_bytes(value).decode()


def _texts(values) -> list[str]:
    return [_text(v) for v in np.ravel(np.asarray(values, dtype=object))]


@register_kernel("SaveV2", stateful=True)
def _save_v2_kernel(op):
    def compute(ctx, prefix, names, slices, *tensors):
        names, slices = _texts(names), _texts(slices)
        if not len(names) == len(slices) == len(tensors):
            raise errors.InvalidArgumentError(
                op.node_def,
                op,
                f"SaveV2 got {len(names)} names, {len(slices)} slice specs and {len(tensors)} "
                "tensors; they must be as many",
            )
        tensor_bundle.write(_text(prefix), list(zip(names, slices, tensors)))

    return compute


@register_kernel("RestoreV2", stateful=True)
def _restore_v2_kernel(op):
    wanted = op.get_attr("dtypes")

    def compute(ctx, prefix, names, slices):
        reader = tensor_bundle.BundleReader(_text(prefix))
        values = []
        for name, spec, dtype in zip(_texts(names), _texts(slices), wanted):
            saved = reader.dtype(name)
            if saved != dtype:
                raise errors.InvalidArgumentError(
                    op.node_def,
                    op,
                    f"tensor_name = {name}; expected dtype {dtype.name} does not equal original "
                    f"dtype {saved.name} (checkpoint {reader.prefix})",
                )
            values.append(reader.read(name, spec))
        return values[0] if len(values) == 1 else values

    return compute


@register_kernel("ShardedFilename")
def _sharded_filename_kernel(op):
    def compute(ctx, basename, shard, num_shards):
        return f"{_text(basename)}-{int(shard):05d}-of-{int(num_shards):05d}".encode()

    return compute


@register_kernel("MergeV2Checkpoints", stateful=True)
def _merge_v2_checkpoints_kernel(op):
    delete_old_dirs = op.get_attr("delete_old_dirs")

    def compute(ctx, prefixes, destination):
        tensor_bundle.merge(_texts(prefixes), _text(destination), delete_old_dirs)

    return compute


for _op_type in ("SaveV2", "RestoreV2", "ShardedFilename", "MergeV2Checkpoints"):
    NotDifferentiable(_op_type)
