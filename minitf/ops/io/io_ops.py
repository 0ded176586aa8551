"""Checkpoint ops: ``SaveV2``, ``RestoreV2``, ``ShardedFilename``, ``MergeV2Checkpoints``.

These are the graph ops a `tf.train.Saver` builds (TF's ``gen_io_ops``). A
save or restore is a session run like any other: the ops are placed,
partitioned and executed, so in a cluster a ``SaveV2`` placed on a ps task
writes its file from that task's process, and the tensors it saves travel to
it like any other input. Their kernels are in `minitf.ops.io.io_kernels`; the
files they write are described in `minitf.ops.io.tensor_bundle`.
"""

from __future__ import annotations

from minitf.framework import dtypes as _dtypes
from minitf.framework import errors, ops, tensor_shape
from minitf.ops.io import tensor_bundle

__all__ = ["save_v2", "restore_v2", "sharded_filename", "merge_v2_checkpoints"]


def _string_vector(values, name: str) -> ops.Tensor:
    return ops.convert_to_tensor(list(values), dtype=_dtypes.string, name=name)


def _check_lengths(op_type: str, scope: str, **lists) -> None:
    lengths = {k: len(v) for k, v in lists.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}: {n}" for k, n in lengths.items())
        raise ValueError(f"'{scope[:-1]}' (op: '{op_type}') needs lists of one length; {shown}")


def save_v2(prefix, tensor_names, shape_and_slices, tensors, name=None) -> ops.Operation:
    """Saves ``tensors`` in a V2 checkpoint at ``prefix`` (TF's ``SaveV2``).

    Args:
        prefix: A string scalar: the checkpoint prefix.
        tensor_names: The name of each tensor in the checkpoint.
        shape_and_slices: For each tensor ``""`` (saved whole) or TF's slice
            spec ``"<full shape> <start,length:...>"`` (one piece of a
            partitioned variable).
        tensors: The tensors to save.
        name: The op name.

    Returns:
        The ``SaveV2`` operation (it has no outputs).

    Raises:
        ValueError: if the three lists differ in length.
    """
    tensor_names, shape_and_slices, tensors = (
        list(tensor_names),
        list(shape_and_slices),
        list(tensors),
    )
    with ops.name_scope(name, "SaveV2", [prefix, *tensors]) as scope:
        _check_lengths("SaveV2", scope, tensor_names=tensor_names,
                       shape_and_slices=shape_and_slices, tensors=tensors)  # fmt: skip
        inputs = [
            ops.convert_to_tensor(prefix, dtype=_dtypes.string, name="prefix"),
            _string_vector(tensor_names, "tensor_names"),
            _string_vector(shape_and_slices, "shape_and_slices"),
        ] + [ops.convert_to_tensor(t) for t in tensors]
        return ops.get_default_graph().create_op(
            "SaveV2",
            inputs,
            [],
            name=scope,
            attrs={"dtypes": [t.dtype.base_dtype for t in inputs[3:]]},
        )


def restore_v2(prefix, tensor_names, shape_and_slices, dtypes, name=None) -> list[ops.Tensor]:
    """Reads tensors (or slices of them) from the V2 checkpoint at ``prefix`` (TF's ``RestoreV2``).

    Args:
        prefix: A string scalar: the checkpoint prefix.
        tensor_names: The name of each tensor to read.
        shape_and_slices: ``""`` for a whole tensor, or TF's slice spec.
        dtypes: The dtype of each tensor (the saved dtype must match).
        name: The op name.

    Returns:
        One tensor per name. Its static shape is the slice's shape, unknown
        for a whole tensor (TF's shape function).

    Raises:
        ValueError: if the lists differ in length, or a slice spec is malformed.
    """
    tensor_names, shape_and_slices = list(tensor_names), list(shape_and_slices)
    out_types = [_dtypes.as_dtype(t).base_dtype for t in dtypes]
    with ops.name_scope(name, "RestoreV2", [prefix]) as scope:
        _check_lengths("RestoreV2", scope, tensor_names=tensor_names,
                       shape_and_slices=shape_and_slices, dtypes=out_types)  # fmt: skip
        op = ops.get_default_graph().create_op(
            "RestoreV2",
            [
                ops.convert_to_tensor(prefix, dtype=_dtypes.string, name="prefix"),
                _string_vector(tensor_names, "tensor_names"),
                _string_vector(shape_and_slices, "shape_and_slices"),
            ],
            out_types,
            name=scope,
            attrs={"dtypes": out_types},
            shapes=[_slice_shape(spec) for spec in shape_and_slices],
        )
    return list(op.outputs)


def _slice_shape(spec: str) -> tensor_shape.TensorShape:
    try:
        parsed = tensor_bundle.parse_shape_and_slice(spec)
    except errors.InvalidArgumentError as e:
        raise ValueError(e.message) from None
    if parsed is None:
        return tensor_shape.unknown_shape()
    return tensor_shape.TensorShape([length for _, length in parsed[1]])


def sharded_filename(basename, shard, num_shards, name=None) -> ops.Tensor:
    """``"<basename>-<shard>-of-<num_shards>"`` with 5-digit numbers (TF's ``ShardedFilename``)."""
    with ops.name_scope(name, "ShardedFilename", [basename, shard, num_shards]) as scope:
        op = ops.get_default_graph().create_op(
            "ShardedFilename",
            [
                ops.convert_to_tensor(basename, dtype=_dtypes.string, name="basename"),
                ops.convert_to_tensor(shard, dtype=_dtypes.int32, name="shard"),
                ops.convert_to_tensor(num_shards, dtype=_dtypes.int32, name="num_shards"),
            ],
            [_dtypes.string],
            name=scope,
            shapes=[tensor_shape.TensorShape([])],
        )
    return op.outputs[0]


def merge_v2_checkpoints(
    checkpoint_prefixes, destination_prefix, delete_old_dirs: bool = True, name=None
) -> ops.Operation:
    """Merges the per-shard checkpoints of a sharded save into one (TF's ``MergeV2Checkpoints``).

    Args:
        checkpoint_prefixes: A string vector (or list of scalars): the shard prefixes.
        destination_prefix: A string scalar: the merged checkpoint's prefix.
        delete_old_dirs: Remove the shards' directories once they are empty.
        name: The op name.
    """
    with ops.name_scope(name, "MergeV2Checkpoints", [destination_prefix]) as scope:
        prefixes = ops.convert_to_tensor(
            checkpoint_prefixes, dtype=_dtypes.string, name="checkpoint_prefixes"
        )
        destination = ops.convert_to_tensor(
            destination_prefix, dtype=_dtypes.string, name="destination_prefix"
        )
        return ops.get_default_graph().create_op(
            "MergeV2Checkpoints",
            [prefixes, destination],
            [],
            name=scope,
            attrs={"delete_old_dirs": bool(delete_old_dirs)},
        )
