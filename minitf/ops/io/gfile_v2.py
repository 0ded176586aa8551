"""``tf.io.gfile``: the lower-case names TF1.15 gives `minitf.ops.io.gfile` under ``tf.io``."""

from minitf.ops.io.gfile import FileIO as GFile
from minitf.ops.io.gfile import copy, rename, stat, walk
from minitf.ops.io.gfile import create_dir as mkdir
from minitf.ops.io.gfile import delete_file as remove
from minitf.ops.io.gfile import delete_recursively as rmtree
from minitf.ops.io.gfile import file_exists as exists
from minitf.ops.io.gfile import get_matching_files as glob
from minitf.ops.io.gfile import is_directory as isdir
from minitf.ops.io.gfile import list_directory as listdir
from minitf.ops.io.gfile import recursive_create_dir as makedirs

__all__ = [
    "GFile",
    "copy",
    "exists",
    "glob",
    "isdir",
    "listdir",
    "makedirs",
    "mkdir",
    "remove",
    "rename",
    "rmtree",
    "stat",
    "walk",
]
