"""Reading checkpoints without a graph: ``tf.train.NewCheckpointReader``, ``list_variables``, ...

A `CheckpointReader` opens a checkpoint by its prefix and answers what it
holds: names, shapes, dtypes, values. A partitioned variable appears once,
under its full name and full shape, as in TF. `list_variables` and
`load_variable` take a checkpoint prefix or a directory (whose newest
checkpoint they read).

TF source: ``tensorflow/python/training/py_checkpoint_reader.py`` and
``checkpoint_utils.py``.
"""

from __future__ import annotations

import os

import numpy as np

from minitf.framework import dtypes
from minitf.ops.io import tensor_bundle
from minitf.train import checkpoint_management

__all__ = [
    "CheckpointReader",
    "NewCheckpointReader",
    "list_variables",
    "load_checkpoint",
    "load_variable",
]


class CheckpointReader:
    """What one checkpoint holds (TF's ``CheckpointReader``).

    Args:
        filepattern: The checkpoint prefix (``.../model.ckpt-10``).

    Raises:
        NotFoundError: TF's "Unsuccessful TensorSliceReader constructor:
            Failed to find any matching files for ..." if there is no such checkpoint.
        DataLossError: if its index cannot be read.
    """

    def __init__(self, filepattern: str | os.PathLike):
        self._reader = tensor_bundle.BundleReader(os.fspath(filepattern))

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """``{name: shape as a list}`` for every saved tensor."""
        return {name: list(entry["shape"]) for name, entry in self._reader.tensors.items()}

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        """``{name: DType}`` for every saved tensor."""
        return {name: self._reader.dtype(name) for name in self._reader.tensors}

    def has_tensor(self, tensor_str: str) -> bool:
        """Whether the checkpoint holds a tensor of that name."""
        return tensor_str in self._reader.tensors

    def get_tensor(self, tensor_str: str) -> np.ndarray:
        """The saved value (a partitioned variable's shards put together).

        Raises:
            NotFoundError: ``"Key <name> not found in checkpoint ..."``.
        """
        return self._reader.read(tensor_str)

    def debug_string(self) -> bytes:
        """One line per tensor: ``name (dtype) [shape]``, sorted by name."""
        lines = [
            f"{name} ({self._reader.dtype(name).name}) {list(entry['shape'])}\n"
            for name, entry in sorted(self._reader.tensors.items())
        ]
        return "".join(lines).encode()


def NewCheckpointReader(filepattern: str | os.PathLike) -> CheckpointReader:  # noqa: N802 - TF's name
    """Opens the checkpoint at ``filepattern`` (a prefix) for reading; see `CheckpointReader`.

    Args:
        filepattern: The checkpoint prefix (``.../model.ckpt-10``).
    """
    return CheckpointReader(filepattern)


def _checkpoint_filename(ckpt_dir_or_file) -> str | None:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        return checkpoint_management.latest_checkpoint(path)
    return path


def load_checkpoint(ckpt_dir_or_file: str | os.PathLike) -> CheckpointReader:
    """A `CheckpointReader` of a checkpoint prefix, or of a directory's newest checkpoint.

    Args:
        ckpt_dir_or_file: A checkpoint prefix, or a directory whose newest checkpoint to read.

    Raises:
        ValueError: if a directory holds no checkpoint.
        NotFoundError: if the checkpoint does not exist.
    """
    filename = _checkpoint_filename(ckpt_dir_or_file)
    if filename is None:
        raise ValueError(
            "Couldn't find 'checkpoint' file or checkpoints in given directory "
            f"{os.fspath(ckpt_dir_or_file)}"
        )
    return NewCheckpointReader(filename)


def load_variable(ckpt_dir_or_file: str | os.PathLike, name: str) -> np.ndarray:
    """The value of one saved variable (``name`` with or without ``:0``).

    Args:
        ckpt_dir_or_file: A checkpoint prefix, or a directory whose newest checkpoint to read.
        name: The variable's name in the checkpoint.

    Raises:
        NotFoundError: if the checkpoint or the variable does not exist.
    """
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file: str | os.PathLike) -> list[tuple[str, list[int]]]:
    """``[(name, shape)]`` of the saved variables, sorted by name.

    Args:
        ckpt_dir_or_file: A checkpoint prefix, or a directory whose newest checkpoint to read.
    """
    variable_map = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, variable_map[name]) for name in sorted(variable_map)]
