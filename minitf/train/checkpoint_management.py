"""The ``checkpoint`` state file and finding checkpoints: ``tf.train.latest_checkpoint`` & co.

Next to its checkpoints a `Saver` keeps a small text file, ``checkpoint``
by default, in TF's protocol-buffer text format::

    model_checkpoint_path: "model.ckpt-30"
    all_model_checkpoint_paths: "model.ckpt-20"
    all_model_checkpoint_paths: "model.ckpt-30"

(paths relative to the file's directory when the saver was given a relative
path or ``save_relative_paths=True``). It names the newest checkpoint and
the ones not yet deleted, oldest first. The file is replaced atomically
(written to a temporary file, fsync'ed, renamed), and a checkpoint *exists*
only once its ``.index`` file does, so `latest_checkpoint` never returns a
checkpoint whose save did not finish.

TF source: ``tensorflow/python/training/checkpoint_management.py``.
"""

from __future__ import annotations

import codecs
import glob
import logging
import os
import re
from dataclasses import dataclass, field

from minitf.ops.io import tensor_bundle

__all__ = [
    "CheckpointState",
    "checkpoint_exists",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "latest_checkpoint",
    "meta_graph_filename",
    "remove_checkpoint",
    "update_checkpoint_state",
]

_logger = logging.getLogger("minitf")

# SaverDef.CheckpointFormatVersion (kept here so that this module needs no saver).
_V1, _V2 = 1, 2


@dataclass
class CheckpointState:
    """TF's ``CheckpointState`` proto: what the ``checkpoint`` file records.

    Attributes:
        model_checkpoint_path: The newest checkpoint's prefix.
        all_model_checkpoint_paths: The prefixes not yet deleted, oldest first.
        all_model_checkpoint_timestamps: When each was written (seconds since the epoch).
        last_preserved_timestamp: When the last kept-forever checkpoint was written.
    """

    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list[str] = field(default_factory=list)
    all_model_checkpoint_timestamps: list[float] = field(default_factory=list)
    last_preserved_timestamp: float = 0.0

    def to_text(self) -> str:
        """The state in TF's text format (fields at their default are left out, as TF does)."""
        lines = []
        if self.model_checkpoint_path:
            lines.append(f"model_checkpoint_path: {_quote(self.model_checkpoint_path)}")
        for path in self.all_model_checkpoint_paths:
            lines.append(f"all_model_checkpoint_paths: {_quote(path)}")
        for timestamp in self.all_model_checkpoint_timestamps:
            lines.append(f"all_model_checkpoint_timestamps: {timestamp!r}")
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "".join(line + "\n" for line in lines)

    @classmethod
    def from_text(cls, text: str) -> CheckpointState:
        """Parses TF's text format.

        Raises:
            ValueError: for a line that is not ``field: value`` of a known field.
        """
        state = cls()
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = _FIELD.match(line)
            if not match or match.group(1) not in _FIELDS:
                raise ValueError(f"line {number}: cannot parse {line!r}")
            key, value = match.group(1), match.group(2)
            if key in ("model_checkpoint_path", "all_model_checkpoint_paths"):
                value = _unquote(value, number)
            else:
                value = float(value)
            if key.startswith("all_"):
                getattr(state, key).append(value)
            else:
                setattr(state, key, value)
        return state


_FIELD = re.compile(r"^\s*(\w+)\s*:\s*(.*?)\s*$")
_FIELDS = frozenset(
    [
        "model_checkpoint_path",
        "all_model_checkpoint_paths",
        "all_model_checkpoint_timestamps",
        "last_preserved_timestamp",
    ]
)


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _unquote(value: str, number: int) -> str:
    if len(value) < 2 or value[0] not in "\"'" or value[-1] != value[0]:
        raise ValueError(f"line {number}: expected a quoted string, got {value!r}")
    return codecs.escape_decode(value[1:-1].encode())[0].decode()


def _checkpoint_filename(save_dir: str, latest_filename: str | None) -> str:
    return os.path.join(save_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    all_model_checkpoint_timestamps: list[float] | None = None,
    last_preserved_timestamp: float | None = None,
) -> CheckpointState:
    """The `CheckpointState` to record; paths are made relative to a relative ``save_dir``.

    ``model_checkpoint_path`` is appended to ``all_model_checkpoint_paths``
    if it is not its last element.

    Args:
        save_dir: The directory of the checkpoints.
        model_checkpoint_path: The newest checkpoint's prefix.
        all_model_checkpoint_paths: The checkpoints still kept, oldest first
            (``model_checkpoint_path`` is added at the end if missing).
        all_model_checkpoint_timestamps: When each was written (seconds since the epoch), one per
            path, or None.
        last_preserved_timestamp: When the last checkpoint kept forever
            (``keep_checkpoint_every_n_hours``) was written.

    Raises:
        ValueError: if timestamps are given but not one per path.
    """
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    timestamps = list(all_model_checkpoint_timestamps or [])
    if timestamps and len(timestamps) != len(paths):
        raise ValueError(
            "Checkpoint timestamps, if provided, must match checkpoint paths (got paths "
            f"{paths} and timestamps {timestamps})"
        )
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(
        model_checkpoint_path=model_checkpoint_path,
        all_model_checkpoint_paths=paths,
        all_model_checkpoint_timestamps=timestamps,
        last_preserved_timestamp=last_preserved_timestamp or 0.0,
    )


def update_checkpoint_state(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    latest_filename: str | None = None,
    all_model_checkpoint_timestamps: list[float] | None = None,
    last_preserved_timestamp: float | None = None,
) -> None:
    """Rewrites the ``checkpoint`` state file of ``save_dir`` (atomically).

    Args:
        save_dir: The directory of the checkpoints and the state file.
        model_checkpoint_path: The newest checkpoint's prefix.
        all_model_checkpoint_paths: The checkpoints still kept, oldest first
            (``model_checkpoint_path`` is added at the end if missing).
        latest_filename: The state file's name (default ``"checkpoint"``).
        all_model_checkpoint_timestamps: When each was written (seconds since the epoch), one per
            path, or None.
        last_preserved_timestamp: When the last checkpoint kept forever
            (``keep_checkpoint_every_n_hours``) was written.

    Raises:
        RuntimeError: if a checkpoint path is the state file itself.
    """
    update_checkpoint_state_internal(
        save_dir,
        model_checkpoint_path,
        all_model_checkpoint_paths,
        latest_filename,
        save_relative_paths=False,
        all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
        last_preserved_timestamp=last_preserved_timestamp,
    )


def update_checkpoint_state_internal(
    save_dir,
    model_checkpoint_path,
    all_model_checkpoint_paths=None,
    latest_filename=None,
    save_relative_paths=False,
    all_model_checkpoint_timestamps=None,
    last_preserved_timestamp=None,
) -> None:
    """`update_checkpoint_state`, optionally writing paths relative to ``save_dir``."""
    save_dir = os.fspath(save_dir)
    filename = _checkpoint_filename(save_dir, latest_filename)
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        model_checkpoint_path = _relative_to(model_checkpoint_path, save_dir)
        paths = [_relative_to(p, save_dir) for p in paths]
    state = generate_checkpoint_state_proto(
        save_dir, model_checkpoint_path, paths, all_model_checkpoint_timestamps,
        last_preserved_timestamp,
    )  # fmt: skip
    if filename == state.model_checkpoint_path:
        raise RuntimeError(
            f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint "
            "state.  Please use a different save path."
        )
    text = state.to_text().encode()
    tensor_bundle.atomic_write(filename, lambda f: f.write(text))


def _relative_to(path: str, save_dir: str) -> str:
    return os.path.relpath(path, save_dir) if os.path.isabs(path) else path


def get_checkpoint_state(
    checkpoint_dir: str | os.PathLike, latest_filename: str | None = None
) -> CheckpointState | None:
    """The `CheckpointState` in ``checkpoint_dir``'s state file, or None if there is none.

    Relative paths in the file are returned joined to ``checkpoint_dir``.
    A file that cannot be parsed is logged and ignored (None), as in TF.

    Args:
        checkpoint_dir: The directory of the checkpoints.
        latest_filename: The state file's name (default ``"checkpoint"``).

    Raises:
        ValueError: if the file names no ``model_checkpoint_path``.
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    filename = _checkpoint_filename(checkpoint_dir, latest_filename)
    try:
        with open(filename, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _logger.warning("%s: %s: Checkpoint ignored", filename, e)
        return None
    try:
        state = CheckpointState.from_text(text)
    except ValueError as e:
        _logger.warning("%s: %s: Checkpoint ignored", filename, e)
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    state.model_checkpoint_path = _joined(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [
        _joined(checkpoint_dir, p) for p in state.all_model_checkpoint_paths
    ]
    return state


def _joined(directory: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(directory, path)


def _prefix_to_checkpoint_path(prefix: str, format_version: int) -> str:
    # A V2 checkpoint is identified by its index file; a V1 one by the prefix itself.
    return tensor_bundle.index_filename(prefix) if format_version == _V2 else prefix


def latest_checkpoint(
    checkpoint_dir: str | os.PathLike, latest_filename: str | None = None
) -> str | None:
    """The prefix of the newest checkpoint in ``checkpoint_dir``, or None.

    The newest is what the state file names, provided its ``.index`` exists.

    Args:
        checkpoint_dir: The directory of the checkpoints.
        latest_filename: The state file's name (default ``"checkpoint"``).
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists_internal(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _logger.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def checkpoint_exists_internal(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint (its ``.index``, or a V1 file) exists at ``checkpoint_prefix``."""
    prefix = os.fspath(checkpoint_prefix)
    return bool(glob.glob(_prefix_to_checkpoint_path(prefix, _V2)) or glob.glob(prefix))


def checkpoint_exists(checkpoint_prefix: str | os.PathLike) -> bool:
    """Whether a checkpoint exists at the prefix (TF1's deprecated ``tf.train.checkpoint_exists``).

    ``checkpoint_prefix`` may be a glob pattern, as in TF.

    Args:
        checkpoint_prefix: A checkpoint prefix, or a glob pattern of one.
    """
    return checkpoint_exists_internal(checkpoint_prefix)


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """The modification times (seconds) of the checkpoints that exist, in order.

    Args:
        checkpoint_prefixes: Checkpoint prefixes (or glob patterns); missing ones are skipped.
    """
    mtimes = []
    for prefix in checkpoint_prefixes:
        for pattern in (_prefix_to_checkpoint_path(prefix, _V2), prefix):
            found = glob.glob(pattern)
            if found:
                mtimes.append(os.stat(found[0]).st_mtime_ns / 1e9)
                break
    return mtimes


def remove_checkpoint(
    checkpoint_prefix: str, checkpoint_format_version: int = _V2, meta_graph_suffix: str = "meta"
) -> None:
    """Deletes a checkpoint's files: its meta graph, index and data files (or its V1 file).

    Args:
        checkpoint_prefix: The checkpoint's prefix.
        checkpoint_format_version: 2 (the default) for index and data files, 1 for a single file.
        meta_graph_suffix: The meta graph file's suffix.
    """
    _delete_files(meta_graph_filename(checkpoint_prefix, meta_graph_suffix))
    if checkpoint_format_version == _V2:
        _delete_files(tensor_bundle.index_filename(checkpoint_prefix))
        _delete_files(checkpoint_prefix + ".data-?????-of-?????")
    else:
        _delete_files(checkpoint_prefix)


def _delete_files(pattern: str) -> None:
    for path in glob.glob(pattern):
        try:
            os.remove(path)
        except FileNotFoundError:
            _logger.warning(
                "Hit NotFoundError when deleting '%s', possibly because another process/thread "
                "is also deleting/moving the same file",
                path,
            )


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    """``model.ckpt-123`` → ``model.ckpt-123.meta`` (a sharded suffix ``-?????-of-N`` dropped)."""
    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return ".".join([basename, meta_graph_suffix])
