"""``tf.gfile``: TF1's file API on the local disk (`minitf.ops.io.gfile`)."""

from minitf.ops.io.gfile import FileIO as GFile
from minitf.ops.io.gfile import copy as Copy
from minitf.ops.io.gfile import create_dir as MkDir
from minitf.ops.io.gfile import delete_file as Remove
from minitf.ops.io.gfile import delete_recursively as DeleteRecursively
from minitf.ops.io.gfile import file_exists as Exists
from minitf.ops.io.gfile import get_matching_files as Glob
from minitf.ops.io.gfile import is_directory as IsDirectory
from minitf.ops.io.gfile import list_directory as ListDirectory
from minitf.ops.io.gfile import recursive_create_dir as MakeDirs
from minitf.ops.io.gfile import rename as Rename
from minitf.ops.io.gfile import stat as Stat
from minitf.ops.io.gfile import walk as Walk

# TF1 keeps two more names for the same class: ``Open`` and the deprecated ``FastGFile``.
Open = GFile
FastGFile = GFile

__all__ = [
    "Copy",
    "DeleteRecursively",
    "Exists",
    "FastGFile",
    "GFile",
    "Glob",
    "IsDirectory",
    "ListDirectory",
    "MakeDirs",
    "MkDir",
    "Open",
    "Remove",
    "Rename",
    "Stat",
    "Walk",
]
