"""How a `Saver` builds its graph: `SaverDef` and the saver builders.

A builder turns the saveables of a ``var_list`` into ops in one name scope
(``save/`` by default) and returns the names a `Saver` needs, its `SaverDef`::

    save/filename, save/Const          the prefix (PlaceholderWithDefault; fed on every run)
    save/SaveV2                        writes the tensors it receives
    save/control_dependency            the prefix again, after SaveV2: the save tensor
    save/RestoreV2, save/Assign_*      read the checkpoint, assign each variable
    save/restore_all                   the restore op

With ``sharded=True`` the save is one ``save/ShardedFilename*`` and
``save/SaveV2*`` per device (on that device) into a temporary directory,
then ``save/MergeV2Checkpoints`` and ``save/Identity`` (the save tensor);
the restore is one ``save/restore_shard*`` group per device, each with its
own ``RestoreV2`` there.

TF source: ``BaseSaverBuilder`` and ``BulkSaverBuilder`` in
``tensorflow/python/training/saver.py``.
"""

from __future__ import annotations

import collections
import uuid

from minitf.framework import device as pydev
from minitf.framework import ops
from minitf.ops.array import array_ops, constant_op
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.io import io_ops
from minitf.ops.string import string_ops
from minitf.train.saveable_object_util import (
    ReferenceVariableSaveable,
    ResourceVariableSaveable,
    SaveableObject,
    SaveSpec,
    set_cpu0,
    validate_and_slice_inputs,
)

__all__ = ["BaseSaverBuilder", "BulkSaverBuilder", "SaverDef"]


class SaverDef(dict):
    """TF's ``SaverDef`` proto: the names of a Saver's ops and its settings.

    A dict (so a MetaGraphDef holds it as JSON) whose fields also read and
    write as attributes, like the proto's: ``saver_def.restore_op_name``.

    Attributes:
        filename_tensor_name: The tensor fed with the checkpoint prefix.
        save_tensor_name: The tensor to fetch to save (its value is the prefix).
        restore_op_name: The op to run to restore.
        max_to_keep: How many recent checkpoints to keep (0: all).
        sharded: Whether the saver writes one data file per device.
        keep_checkpoint_every_n_hours: Keep one checkpoint per this many hours.
        version: The checkpoint format (`V2`).

    Raises:
        ValueError: for a keyword argument that is not one of the fields above.
    """

    LEGACY, V1, V2 = 0, 1, 2
    _FIELDS = {
        "filename_tensor_name": "",
        "save_tensor_name": "",
        "restore_op_name": "",
        "max_to_keep": 0,
        "sharded": False,
        "keep_checkpoint_every_n_hours": 0.0,
        "version": 0,
    }

    def __init__(self, **fields):
        unknown = sorted(set(fields) - set(self._FIELDS))
        if unknown:
            raise ValueError(f"SaverDef has no field {', '.join(unknown)}")
        super().__init__({**self._FIELDS, **fields})

    def __getattr__(self, name: str):
        if name in self._FIELDS:
            return self[name]
        raise AttributeError(f"'SaverDef' has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        if name not in self._FIELDS:
            raise AttributeError(f"'SaverDef' has no field '{name}'")
        self[name] = value


class BaseSaverBuilder:
    """Builds the save and restore ops of a `Saver` (TF's ``BaseSaverBuilder``).

    This builder restores each saveable with its own ``RestoreV2`` op, placed
    on the saveable's device; `BulkSaverBuilder` (the default) reads them all
    with one op.

    Args:
        write_version: The checkpoint format (`SaverDef.V2`).
    """

    SaveSpec = SaveSpec
    SaveableObject = SaveableObject
    VariableSaveable = ReferenceVariableSaveable
    ResourceVariableSaveable = ResourceVariableSaveable

    def __init__(self, write_version: int = SaverDef.V2):
        self._write_version = write_version

    def save_op(self, filename_tensor: ops.Tensor, saveables: list) -> ops.Operation:
        """One ``SaveV2`` that writes every spec of ``saveables`` at ``filename_tensor``."""
        names, slices, tensors = [], [], []
        for saveable in saveables:
            for spec in saveable.specs:
                names.append(spec.name)
                slices.append(spec.slice_spec)
                tensors.append(spec.tensor)
        return io_ops.save_v2(filename_tensor, names, slices, tensors)

    def bulk_restore(self, filename_tensor, saveables, preferred_shard, restore_sequentially):
        """The restored tensors of all ``saveables``: one ``RestoreV2`` per saveable, on its device.

        ``restore_sequentially`` has no effect, as in TF.
        """
        del restore_sequentially
        tensors = []
        for saveable in saveables:
            device = set_cpu0(saveable.device) if saveable.device else None
            with ops.device(device):
                tensors.extend(self.restore_op(filename_tensor, saveable, preferred_shard))
        return tensors

    def restore_op(self, filename_tensor, saveable, preferred_shard) -> list[ops.Tensor]:
        """The tensors of one saveable, read by its own ``RestoreV2`` ops."""
        del preferred_shard
        return [
            io_ops.restore_v2(filename_tensor, [spec.name], [spec.slice_spec], [spec.dtype])[0]
            for spec in saveable.specs
        ]

    def sharded_filename(self, filename_tensor, shard: int, num_shards) -> ops.Tensor:
        """``"<filename>-<shard>-of-<num_shards>"``, computed by a ``ShardedFilename`` op."""
        return io_ops.sharded_filename(filename_tensor, shard, num_shards)

    def _AddSaveOps(self, filename_tensor, saveables) -> ops.Tensor:  # noqa: N802 - TF's name
        """The save op, and the prefix as a tensor that is ready once it has run."""
        save = self.save_op(filename_tensor, saveables)
        return control_flow_ops.with_dependencies([save], filename_tensor)

    def _AddShardedSaveOpsForV2(self, checkpoint_prefix, per_device) -> ops.Tensor:  # noqa: N802
        """One ``SaveV2`` per device into a temporary directory, then one merge.

        Shard ``i`` is written as its own small checkpoint at
        ``<prefix>_temp_<uuid>/part-0000i-of-0000n``, by a ``SaveV2`` on
        that device; ``MergeV2Checkpoints`` (on the last device) moves their
        data files to ``<prefix>.data-0000i-of-0000n``, writes
        ``<prefix>.index`` and removes the temporary directory. Returns the
        prefix, ready once the merge has run.
        """
        with ops.device("/device:CPU:0"):
            suffix = constant_op.constant(f"_temp_{uuid.uuid4().hex}/part")
            tmp_checkpoint_prefix = string_ops.string_join([checkpoint_prefix, suffix])
        num_shards = constant_op.constant(len(per_device), name="num_shards")
        sharded_saves, sharded_prefixes, last_device = [], [], None
        for shard, (device, saveables) in enumerate(per_device):
            last_device = device
            with ops.device(set_cpu0(device)):
                sharded = self.sharded_filename(tmp_checkpoint_prefix, shard, num_shards)
                sharded_prefixes.append(sharded)
                sharded_saves.append(self._AddSaveOps(sharded, saveables))
        with ops.control_dependencies([x.op for x in sharded_saves]):
            with ops.device(set_cpu0(last_device)):
                merge_step = io_ops.merge_v2_checkpoints(
                    sharded_prefixes, checkpoint_prefix, delete_old_dirs=True
                )
                with ops.control_dependencies([merge_step]):
                    return array_ops.identity(checkpoint_prefix)

    def _AddShardedSaveOps(self, filename_tensor, per_device) -> ops.Tensor:  # noqa: N802
        """The sharded save (minitf writes only the V2 layout)."""
        return self._AddShardedSaveOpsForV2(filename_tensor, per_device)

    def _AddRestoreOps(  # noqa: N802 - TF's name
        self, filename_tensor, saveables, restore_sequentially, reshape, preferred_shard=-1,
        name="restore_all",
    ) -> ops.Operation:  # fmt: skip
        """Reads the saveables' tensors and restores each; returns the op grouping it all."""
        all_tensors = self.bulk_restore(
            filename_tensor, saveables, preferred_shard, restore_sequentially
        )
        assign_ops, idx = [], 0
        for saveable in saveables:
            shapes = None
            if reshape:
                shapes = []
                for spec in saveable.specs:
                    tensor = spec.tensor
                    shape = tensor.get_shape()
                    shapes.append(
                        shape.as_list() if shape.is_fully_defined() else array_ops.shape(tensor)
                    )
            restored = all_tensors[idx : idx + len(saveable.specs)]
            idx += len(saveable.specs)
            assign_ops.append(saveable.restore(restored, shapes))
        return control_flow_ops.group(*assign_ops, name=name)

    def _AddShardedRestoreOps(  # noqa: N802 - TF's name
        self, filename_tensor, per_device, restore_sequentially, reshape
    ) -> ops.Operation:
        """One restore group per device, built on that device, and ``restore_all`` over them."""
        sharded_restores = []
        for shard, (device, saveables) in enumerate(per_device):
            with ops.device(device):
                sharded_restores.append(
                    self._AddRestoreOps(filename_tensor, saveables, restore_sequentially,
                                        reshape, preferred_shard=shard, name="restore_shard")
                )  # fmt: skip
        return control_flow_ops.group(*sharded_restores, name="restore_all")

    def _GroupByDevices(self, saveables) -> list[tuple[str, list]]:  # noqa: N802 - TF's name
        """``[(device, saveables)]`` sorted by device name.

        Raises:
            ValueError: if one saveable's tensors are on several devices.
        """
        per_device: dict[str, list] = collections.defaultdict(list)
        for saveable in saveables:
            devices = {pydev.canonical_name(spec.device) for spec in saveable.specs}
            if len(devices) != 1:
                raise ValueError(
                    f"All tensors of a saveable object must be on the same device: {saveable.name}"
                )
            per_device[devices.pop()].append(saveable)
        return sorted(per_device.items(), key=lambda t: t[0])

    def build(self, names_to_saveables, reshape=False, sharded=False, max_to_keep=5,
              keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
              filename="model") -> SaverDef:  # fmt: skip
        """Adds the save and restore ops; returns their `SaverDef`."""
        return self._build_internal(
            names_to_saveables, reshape, sharded, max_to_keep, keep_checkpoint_every_n_hours,
            name, restore_sequentially, filename,
        )  # fmt: skip

    def _build_internal(
        self, names_to_saveables, reshape=False, sharded=False, max_to_keep=5,
        keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
        filename="model", build_save=True, build_restore=True,
    ) -> SaverDef:  # fmt: skip
        """`build`; the graph-mode Saver always builds save and restore together.

        Raises:
            ValueError: if not both ``build_save`` and ``build_restore``, or
                the variables are invalid (see `validate_and_slice_inputs`).
        """
        if not build_save or not build_restore:
            raise ValueError(
                "save and restore operations need to be built together  when eager execution "
                "is not enabled."
            )
        saveables = validate_and_slice_inputs(names_to_saveables)
        with ops.name_scope(name, "save", [s.op for s in saveables]) as name:
            filename_tensor = array_ops.placeholder_with_default(
                filename or "model", shape=(), name="filename"
            )
            # TF keeps the name "Const" for backwards compatibility.
            filename_tensor = array_ops.placeholder_with_default(
                filename_tensor, shape=(), name="Const"
            )
            if sharded:
                per_device = self._GroupByDevices(saveables)
                save_tensor = self._AddShardedSaveOps(filename_tensor, per_device)
                restore_op = self._AddShardedRestoreOps(
                    filename_tensor, per_device, restore_sequentially, reshape
                )
            else:
                save_tensor = self._AddSaveOps(filename_tensor, saveables)
                restore_op = self._AddRestoreOps(
                    filename_tensor, saveables, restore_sequentially, reshape
                )
        return SaverDef(
            filename_tensor_name=filename_tensor.name,
            save_tensor_name=save_tensor.name,
            restore_op_name=restore_op.name,
            max_to_keep=max_to_keep or 0,
            sharded=bool(sharded),
            keep_checkpoint_every_n_hours=float(keep_checkpoint_every_n_hours),
            version=self._write_version,
        )


class BulkSaverBuilder(BaseSaverBuilder):
    """The default builder: one ``RestoreV2`` reads every tensor (per device when sharded)."""

    def bulk_restore(self, filename_tensor, saveables, preferred_shard, restore_sequentially):
        """All tensors, from one ``RestoreV2`` on the current device scope's CPU."""
        del restore_sequentially, preferred_shard
        specs = [spec for saveable in saveables for spec in saveable.specs]
        with ops.device("/device:CPU:0"):
            return io_ops.restore_v2(
                filename_tensor,
                [spec.name for spec in specs],
                [spec.slice_spec for spec in specs],
                [spec.dtype for spec in specs],
            )
