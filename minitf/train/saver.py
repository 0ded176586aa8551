"""``tf.train.Saver``: save and restore variables, as graph ops, the way TF1 does.

A `Saver` adds ops to the graph once, in a ``save/`` name scope (built by a
saver builder, `minitf.train.saver_builder`), and `Saver.save` /
`Saver.restore` only run them with the checkpoint prefix fed. Their names are
the Saver's `SaverDef` (``filename_tensor_name``, ``save_tensor_name``,
``restore_op_name``), which `Saver.export_meta_graph` stores so that
`import_meta_graph` (``tf.train.import_meta_graph``, here as in TF) can
rebuild the Saver.

**Where the work happens.** By default there is one ``SaveV2`` op on the
default device: in a cluster every variable's value travels to the task that
runs it (the client's). With ``sharded=True`` there is one ``SaveV2`` per
device that holds variables, placed on that device, so each ps task writes
its own data file; a ``MergeV2Checkpoints`` then writes the one index
(in a cluster all tasks must see one filesystem, as TF requires too).
Restoring builds the ``Assign`` of each variable where the variable is (its
reference input puts it there); the ``RestoreV2`` that reads the file is one
op on the default device (TF's ``BulkSaverBuilder``), or, sharded, one per
device next to its variables.

**Checkpoint files** (format in `minitf.ops.io.tensor_bundle`): ``<prefix>.index``
(JSON) and ``<prefix>.data-<i>-of-<n>`` (numpy ``.npz``), each written to a
temporary file, fsync'ed and renamed, the index last; plus
``<prefix>.meta`` (the JSON MetaGraphDef) and the directory's ``checkpoint``
state file (`minitf.train.checkpoint_management`). Old checkpoints beyond
``max_to_keep`` are deleted after each save, except one every
``keep_checkpoint_every_n_hours``.

TF source: ``tensorflow/python/training/saver.py``.
"""

from __future__ import annotations

import logging
import numbers
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from minitf.framework import errors, meta_graph, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.string import string_ops
from minitf.train import checkpoint_management, training_util
from minitf.train.saveable_object_util import all_saveable_objects
from minitf.train.saver_builder import BaseSaverBuilder, BulkSaverBuilder, SaverDef

if TYPE_CHECKING:
    from minitf.ops.state.variables import Variable
    from minitf.runtime.core.session import BaseSession

__all__ = ["BaseSaverBuilder", "BulkSaverBuilder", "Saver", "SaverDef"]

_logger = logging.getLogger("minitf")


class _NotAValidCheckpointError(errors.NotFoundError, ValueError):
    """Restoring from a path that holds no checkpoint.

    TF 1.13+ raises ``ValueError`` with this message, older TF1 a
    ``NotFoundError`` from the ``RestoreV2`` op: this error is both, so code
    written for either catches it.
    """


# -- the Saver -------------------------------------------------------------------------------


class Saver:
    """Saves and restores variables (TF1's ``tf.train.Saver``).

    Args:
        var_list: What to save: None (the global variables and the
            ``saveable_objects`` collection), a list of variables (saved under
            their op names; a partitioned variable's shards under its full
            name, each with its slice), or a dict ``{checkpoint name: variable}``.
        reshape: Allow restoring a variable from a saved tensor of another
            shape with as many elements (it is reshaped).
        sharded: One ``SaveV2`` per device holding variables, on that device,
            and one data file per device (see the module docstring).
        max_to_keep: Keep this many recent checkpoints, deleting older ones
            after each save; None or 0 keeps all (and only the newest is
            listed in the state file).
        keep_checkpoint_every_n_hours: Of the checkpoints beyond
            ``max_to_keep``, keep one per this many hours (the default, 10000,
            effectively never).
        name: The name scope of the ops (default ``"save"``); with
            ``saver_def``, the scope the graph was imported into.
        restore_sequentially: No effect, as in TF (its builders ignore it).
        saver_def: A `SaverDef` (or its dict) of ops already in the graph:
            rebuilds a Saver without adding ops (what `import_meta_graph` does).
        builder: A `BaseSaverBuilder` to build the ops (default `BulkSaverBuilder`).
        defer_build: Build the ops only when `build` is called.
        allow_empty: With no variables, make a Saver that does nothing
            (`save` returns None) instead of raising.
        write_version: Accepted; minitf writes one format, recorded as
            `SaverDef.V2` (``V1`` logs a warning).
        pad_step_number: Name checkpoints ``<path>-00000123`` (8 digits).
        save_relative_paths: Write paths relative to the directory in the
            ``checkpoint`` state file (so the directory can be moved).
        filename: The default checkpoint prefix of the ops (``"model"``).

    Raises:
        ValueError: ``"No variables to save"`` if there are none (unless
            ``allow_empty``); for ``var_list`` with ``defer_build``; for two
            variables of one name, or one variable under two names.
        TypeError: if ``var_list`` holds something that is not a variable.
    """

    def __init__(
        self,
        var_list: list | dict | None = None,
        reshape: bool = False,
        sharded: bool = False,
        max_to_keep: int | None = 5,
        keep_checkpoint_every_n_hours: float = 10000.0,
        name: str | None = None,
        restore_sequentially: bool = False,
        saver_def: SaverDef | dict | None = None,
        builder: BaseSaverBuilder | None = None,
        defer_build: bool = False,
        allow_empty: bool = False,
        write_version: int = SaverDef.V2,
        pad_step_number: bool = False,
        save_relative_paths: bool = False,
        filename: str | None = None,
    ):
        if defer_build and var_list:
            raise ValueError(
                "If `var_list` is provided then build cannot be deferred. Either set "
                "defer_build=False or var_list=None."
            )
        if write_version != SaverDef.V2:
            _logger.warning(
                "Saver(write_version=%s): minitf writes its one checkpoint format, recorded "
                "as SaverDef.V2.",
                write_version,
            )
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self.saver_def = SaverDef(**saver_def) if saver_def is not None else None
        self._builder = builder
        self._is_built = False
        self._allow_empty = allow_empty
        self._is_empty = None
        self._write_version = SaverDef.V2
        self._pad_step_number = pad_step_number
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._next_checkpoint_time = None
        if not defer_build:
            self.build()
        if self.saver_def:
            self._check_saver_def()
        self._save_relative_paths = save_relative_paths

    # -- building ----------------------------------------------------------------------------

    def build(self) -> None:
        """Adds the save and restore ops (once; `Saver` does it unless ``defer_build``)."""
        self._build(self._filename, build_save=True, build_restore=True)

    def _build(self, checkpoint_path, build_save: bool, build_restore: bool) -> None:
        if self._is_built:
            return
        self._is_built = True
        if not self.saver_def:
            if self._builder is None:
                self._builder = BulkSaverBuilder(self._write_version)
            if self._var_list is None:
                self._var_list = all_saveable_objects()
            if not self._var_list:
                if self._allow_empty:
                    self._is_empty = True
                    return
                raise ValueError("No variables to save")
            self._is_empty = False
            self.saver_def = self._builder._build_internal(
                self._var_list,
                reshape=self._reshape,
                sharded=self._sharded,
                max_to_keep=self._max_to_keep,
                keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours,
                name=self._name,
                restore_sequentially=self._restore_sequentially,
                filename=checkpoint_path,
                build_save=build_save,
                build_restore=build_restore,
            )
        elif self._name:
            # With a saver_def, ``name`` is the scope the graph was imported into.
            for key in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
                self.saver_def[key] = meta_graph.prepend_name_scope(self.saver_def[key], self._name)
        self._check_saver_def()
        self._next_checkpoint_time = (
            time.time() + self.saver_def.keep_checkpoint_every_n_hours * 3600
        )

    def _check_saver_def(self) -> None:
        if not self.saver_def.save_tensor_name:
            raise ValueError(f"saver_def must specify the save_tensor_name: {self.saver_def}")
        if not self.saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {self.saver_def}")

    def as_saver_def(self) -> SaverDef | None:
        """The `SaverDef` of this saver (None for an empty one)."""
        return self.saver_def

    def to_proto(self, export_scope: str | None = None) -> SaverDef | None:
        """The `SaverDef` with ``export_scope`` removed from its names (None if outside it).

        Args:
            export_scope: A name scope to strip from the op names; None keeps them.
        """
        if export_scope is None:
            return self.saver_def
        names = ("filename_tensor_name", "save_tensor_name", "restore_op_name")
        if not all(self.saver_def[k].startswith(export_scope) for k in names):
            return None
        stripped = SaverDef(**self.saver_def)
        for key in names:
            stripped[key] = meta_graph.strip_name_scope(stripped[key], export_scope)
        return stripped

    @staticmethod
    def from_proto(saver_def: SaverDef | dict, import_scope: str | None = None) -> Saver:
        """A `Saver` over the ops a `SaverDef` names (in ``import_scope``).

        Args:
            saver_def: A `SaverDef` (or its dict), as `to_proto` returns.
            import_scope: The name scope the graph was imported into, or None.
        """
        return Saver(saver_def=saver_def, name=import_scope)

    # -- the list of recent checkpoints -----------------------------------------------------

    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints not yet deleted, oldest first."""
        return [self._CheckpointFilename(p) for p in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        """Deprecated: sets the list of recent checkpoints (never deleted by time).

        Args:
            last_checkpoints: Checkpoint prefixes, oldest first.

        Raises:
            AssertionError: if ``last_checkpoints`` is not a list.
        """
        assert isinstance(last_checkpoints, list)
        self._last_checkpoints = [(s, np.inf) for s in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list) -> None:
        """Sets the list of recent checkpoints as ``(path, timestamp)`` pairs.

        Args:
            last_checkpoints_with_time: ``(prefix, timestamp)`` pairs, oldest first.

        Raises:
            AssertionError: if it is not a list.
        """
        assert isinstance(last_checkpoints_with_time, list)
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Rebuilds the recent-checkpoint list after a restart, from the files that still exist.

        Each path's timestamp is the modification time of its files.

        Args:
            checkpoint_paths: Checkpoint prefixes, oldest first (e.g. the state file's
                ``all_model_checkpoint_paths``).
        """
        with_times = []
        for path in checkpoint_paths:
            mtime = checkpoint_management.get_checkpoint_mtimes([path])
            if mtime:
                with_times.append((path, mtime[0]))
        self.set_last_checkpoints_with_time(with_times)

    def _CheckpointFilename(self, p: tuple[str, float]) -> str:  # noqa: N802 - TF's name
        return p[0]

    def _RecordLastCheckpoint(self, latest_save_path: str) -> None:  # noqa: N802
        """Appends the new checkpoint; queues the oldest for deletion beyond ``max_to_keep``."""
        if not self.saver_def.max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != latest_save_path]
        self._last_checkpoints.append((latest_save_path, time.time()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _MaybeDeleteOldCheckpoints(self, meta_graph_suffix: str = "meta") -> None:  # noqa: N802
        """Deletes the oldest queued checkpoint, unless it is the one kept for its hour.

        A checkpoint written after the next "keep" time is kept and the keep
        time moves on by ``keep_checkpoint_every_n_hours`` (TF's rule).
        """
        if not self._checkpoints_to_be_deleted:
            return
        path, timestamp = self._checkpoints_to_be_deleted.pop(0)
        if timestamp > self._next_checkpoint_time:
            self._next_checkpoint_time += self.saver_def.keep_checkpoint_every_n_hours * 3600
            return
        try:
            checkpoint_management.remove_checkpoint(path, SaverDef.V2, meta_graph_suffix)
        except OSError as e:
            _logger.warning("Ignoring: %s", e)

    # -- saving and restoring ------------------------------------------------------------------

    def save(
        self,
        sess: BaseSession,
        save_path: str | os.PathLike,
        global_step: int | ops.Tensor | Variable | None = None,
        latest_filename: str | None = None,
        meta_graph_suffix: str = "meta",
        write_meta_graph: bool = True,
        write_state: bool = True,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> str | None:
        """Saves the variables: runs the save op with ``save_path`` fed as the prefix.

        Args:
            sess: The session whose variables to save.
            save_path: The checkpoint prefix, e.g. ``"/tmp/train/model.ckpt"``.
            global_step: If given (an int, or a tensor or variable to
                evaluate), the prefix becomes ``<save_path>-<step>``.
            latest_filename: The state file's name (default ``"checkpoint"``).
            meta_graph_suffix: The meta graph file is ``<prefix>.<suffix>``.
            write_meta_graph: Also export the graph (`export_meta_graph`).
            write_state: Update the state file and delete old checkpoints.
            strip_default_attrs: Passed to `export_meta_graph` (no effect in minitf).
            save_debug_info: Accepted; no effect.

        Returns:
            The checkpoint prefix (pass it to `restore`), or None for an empty saver.

        Raises:
            RuntimeError: if the ops were not built (``defer_build``).
            ValueError: if ``latest_filename`` has a directory, collides with
                ``save_path``, or the parent of ``save_path`` is not a directory.
            TypeError: if ``sess`` is not a session.
            FailedPreconditionError: if a variable is not initialized.
        """
        del save_debug_info
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        checkpoint_file = self._checkpoint_file(sess, save_path, global_step, latest_filename)
        if not callable(getattr(sess, "run", None)):
            raise TypeError(f"'sess' must be a Session; {sess}")
        save_path_parent = os.path.dirname(save_path)
        model_checkpoint_path = None
        if not self._is_empty:
            try:
                model_checkpoint_path = _as_str(
                    sess.run(
                        self.saver_def.save_tensor_name,
                        {self.saver_def.filename_tensor_name: checkpoint_file},
                    )
                )
            except (errors.FailedPreconditionError, errors.NotFoundError) as exc:
                if not os.path.isdir(save_path_parent or "."):
                    raise ValueError(
                        f"Parent directory of {save_path} doesn't exist, can't save."
                    ) from exc
                raise
            if write_state:
                self._RecordLastCheckpoint(model_checkpoint_path)
                checkpoint_management.update_checkpoint_state_internal(
                    save_dir=save_path_parent,
                    model_checkpoint_path=model_checkpoint_path,
                    all_model_checkpoint_paths=self.last_checkpoints,
                    latest_filename=latest_filename,
                    save_relative_paths=self._save_relative_paths,
                )
                self._MaybeDeleteOldCheckpoints(meta_graph_suffix=meta_graph_suffix)
        if write_meta_graph:
            filename = checkpoint_management.meta_graph_filename(checkpoint_file, meta_graph_suffix)
            graph = getattr(sess, "graph", None) or ops.get_default_graph()
            with graph.as_default():
                self.export_meta_graph(filename, strip_default_attrs=strip_default_attrs)
        return model_checkpoint_path

    def _checkpoint_file(self, sess, save_path: str, global_step, latest_filename: str) -> str:
        if global_step is not None:
            if not isinstance(global_step, numbers.Integral):
                global_step = training_util.global_step(sess, global_step)
            if self._pad_step_number:
                return f"{save_path}-{int(global_step):08d}"
            return f"{save_path}-{int(global_step)}"
        if os.path.basename(save_path) == latest_filename and not self._sharded:
            raise ValueError(
                f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                f"'{save_path}'"
            )
        return save_path

    def restore(self, sess: BaseSession, save_path: str | os.PathLike) -> None:
        """Restores the variables from the checkpoint at ``save_path`` (runs ``restore_all``).

        The variables need not be initialized: restoring initializes them.

        Args:
            sess: The session to restore the variables in.
            save_path: The checkpoint prefix, as `save` returned it.

        Raises:
            ValueError: if ``save_path`` is None.
            NotFoundError: ``"The passed save_path is not a valid checkpoint:
                ..."`` if there is no checkpoint there (also a ``ValueError``,
                as TF 1.13+ raises); TF's "Restoring from checkpoint failed"
                error naming the key if a variable is not in the checkpoint.
            InvalidArgumentError: the same error naming both shapes (or
                dtypes) if a saved tensor does not fit its variable.
        """
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        checkpoint_prefix = os.fspath(save_path)
        if not checkpoint_management.checkpoint_exists_internal(checkpoint_prefix):
            raise _NotAValidCheckpointError(
                None, None, "The passed save_path is not a valid checkpoint: " + checkpoint_prefix
            )
        _logger.info("Restoring parameters from %s", checkpoint_prefix)
        try:
            sess.run(
                self.saver_def.restore_op_name,
                {self.saver_def.filename_tensor_name: checkpoint_prefix},
            )
        except errors.NotFoundError as err:
            raise _wrap_restore_error_with_msg(
                err, "a Variable name or other graph key that is missing"
            ) from err
        except errors.InvalidArgumentError as err:
            raise _wrap_restore_error_with_msg(
                err, "a mismatch between the current graph and the graph"
            ) from err

    def export_meta_graph(
        self,
        filename: str | os.PathLike | None = None,
        collection_list: list[str] | None = None,
        as_text: bool = False,
        export_scope: str | None = None,
        clear_devices: bool = False,
        clear_extraneous_savers: bool = False,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> dict:
        """Exports the default graph with this saver's `SaverDef` (`tf.train.export_meta_graph`).

        Args:
            filename: Where to write the JSON, or None.
            collection_list: The collection keys to export (default: all).
            as_text: Indent the JSON file.
            export_scope: Export only the ops under this name scope.
            clear_devices: Leave the device of every node empty.
            clear_extraneous_savers: Accepted for compatibility.
            strip_default_attrs: Accepted for compatibility.
            save_debug_info: Accepted for compatibility.

        Returns:
            The MetaGraphDef dict.
        """
        return meta_graph.export_meta_graph(
            filename=filename,
            saver_def=self.saver_def,
            collection_list=collection_list,
            as_text=as_text,
            export_scope=export_scope,
            clear_devices=clear_devices,
            clear_extraneous_savers=clear_extraneous_savers,
            strip_default_attrs=strip_default_attrs,
            save_debug_info=save_debug_info,
        )


def _as_str(value) -> str:
    return string_ops.as_bytes(value).decode()


def _wrap_restore_error_with_msg(err: errors.OpError, extra_verbiage: str) -> errors.OpError:
    message = (
        f"Restoring from checkpoint failed. This is most likely due to {extra_verbiage} from the "
        "checkpoint. Please ensure that you have not altered the graph expected based on the "
        f"checkpoint. Original error:\n\n{err.message}"
    )
    return err.__class__(err.node_def, err.op, message)


def import_meta_graph(
    meta_graph_or_file: dict | str | os.PathLike,
    clear_devices: bool = False,
    import_scope: str | None = None,
    **kwargs: Any,
) -> Saver | None:
    """Adds the graph and collections of a MetaGraphDef to the default graph; returns a Saver.

    The ops are rebuilt exactly as exported (names, types, inputs, control
    inputs, attrs, devices, output dtypes and shapes); variables come back in
    their collections (so ``tf.global_variables_initializer()`` works), queue
    runners in ``QUEUE_RUNNERS``, and ops and tensors in theirs.

    As in TF, the result is a ``tf.train.Saver`` over the imported save and
    restore ops when the MetaGraphDef has a ``saver_def`` (``Saver.save``
    writes one), else a new ``Saver()`` over all variables, or None when the
    graph has no variables to restore. Difference from TF: the
    ``tf.device`` and ``tf.control_dependencies`` scopes around the call do
    not apply to the imported ops.

    Args:
        meta_graph_or_file: A MetaGraphDef dict or the path of its JSON file.
        clear_devices: Leave the device of every imported op empty (needed to
            run a graph placed on ``/job:ps`` in a local session).
        import_scope: A name scope to prepend to every imported name
            (including inputs and ``loc:@`` colocation references).
        **kwargs: ``graph``, ``input_map``, ``unbound_inputs_col_name`` and
            ``restore_collections_predicate``, as for
            `minitf.framework.meta_graph.import_scoped_meta_graph`.

    Returns:
        A ``tf.train.Saver``, or None.

    Raises:
        OSError: if the file is missing (``"File ... does not exist."``) or
            not a MetaGraphDef in JSON.
        ValueError: if the graph already has an op of an imported name (or
            see `minitf.framework.meta_graph.import_scoped_meta_graph`).
    """
    meta_graph_def = meta_graph.as_meta_graph_def(meta_graph_or_file)
    imported_vars = meta_graph.import_scoped_meta_graph(
        meta_graph_def, clear_devices=clear_devices, import_scope=import_scope, **kwargs
    )
    with (kwargs.get("graph") or ops.get_default_graph()).as_default():
        return create_saver_from_imported_meta_graph(meta_graph_def, import_scope, imported_vars)


def create_saver_from_imported_meta_graph(
    meta_graph_def: dict, import_scope: str | None, imported_vars: dict
) -> Saver | None:
    """The Saver `import_meta_graph` returns (TF's rule).

    A Saver over the imported ops of the stored `SaverDef`; without one, a
    new Saver over all variables; None when the graph has no variables.
    """
    saver_def = meta_graph_def.get("saver_def")
    if saver_def:
        scope = import_scope
        if imported_vars:
            sample_key, sample_var = next(iter(imported_vars.items()))
            scope = sample_var.name[: -len(sample_key)]
        return Saver(saver_def=saver_def, name=scope)
    if all_saveable_objects(scope=import_scope):
        return Saver()
    _logger.info("Saver not created because there are no variables in the graph to restore")
    return None


def _saver_to_proto(saver: Saver, export_scope: str | None = None) -> SaverDef | None:
    return saver.to_proto(export_scope=export_scope)


# Savers in the SAVERS collection are exported as their SaverDef, as in TF.
meta_graph.register_proto_function(GraphKeys.SAVERS, _saver_to_proto, Saver.from_proto)
