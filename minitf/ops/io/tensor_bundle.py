"""The checkpoint format on disk: a tensor *bundle* is an index file plus data files.

TF writes a V2 checkpoint as ``<prefix>.index`` (a table of every saved
tensor: dtype, shape, slices, which data file and offset) and
``<prefix>.data-<i>-of-<n>`` (the raw bytes), see
``tensorflow/core/util/tensor_bundle/tensor_bundle.h``. minitf keeps the file
names and the division of labour, and uses formats a student can open:

* ``<prefix>.data-00000-of-00001`` — a numpy ``.npz`` archive (uncompressed).
  Its entries are the saved arrays under the keys ``t0``, ``t1``, ... (string
  tensors as two entries, ``tK.lengths`` (int64) and ``tK.bytes`` (uint8), the
  concatenated bytes), plus ``__save_id__``: the random id of the save that
  wrote it.
* ``<prefix>.index`` — JSON, written last::

      {"format": "minitf-tensor-bundle", "version": 1,
       "data_files": [{"file": "model-10.data-00000-of-00001", "save_id": "9f2c..."}],
       "tensors": {
         "global_step": {"dtype": "int64", "shape": [],
                         "pieces": [{"file": 0, "key": "t0", "slice": null}]},
         "emb": {"dtype": "float32", "shape": [5, 3],
                 "pieces": [{"file": 0, "key": "t1", "slice": "0,3:0,3"},
                            {"file": 1, "key": "t0", "slice": "3,2:0,3"}]}}}

  ``data_files`` are named relative to the index's directory (a checkpoint
  can be moved). A tensor saved whole has one piece with ``"slice": null``;
  a partitioned variable is saved as one piece per shard under its full
  name, each with its place in TF's slice notation ``start,length`` per
  dimension, joined by ``:``. Reading assembles the pieces, so a checkpoint
  can be restored into a variable partitioned another way, or not at all.

A *sharded* save writes one small bundle per device (`write`) in a temporary
directory, then `merge` moves their data files to
``<prefix>.data-<i>-of-<n>`` and writes one index for them all.

**Atomic writes.** Every file is written to a temporary file in the same
directory (``<name>.tmp-<random>``), flushed and fsync'ed, then renamed over
its final name with `os.replace`; the index is renamed last. A process killed
mid-save therefore leaves no ``<prefix>.index`` for a new prefix (so
`latest_checkpoint` and `Saver.restore` never see a half checkpoint), only
a stray ``.tmp-`` file. A crash while *overwriting* the same prefix can leave
the old index next to new data files; the ``save_id`` that the index records
and each data file carries makes the reader detect that (``DataLossError``)
instead of mixing two saves.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterable
from typing import BinaryIO

import numpy as np

from minitf.framework import dtypes, errors

FORMAT = "minitf-tensor-bundle"
VERSION = 1
_SAVE_ID_KEY = "__save_id__"


# -- file names and atomic writes -----------------------------------------------------------


def index_filename(prefix: str) -> str:
    """``<prefix>.index``: the file whose presence makes a checkpoint exist."""
    return prefix + ".index"


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    """``<prefix>.data-00000-of-00001``: TF's name of a data file."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def atomic_write(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Writes a file so that readers see the old content or the whole new one, never a part.

    ``write(f)`` writes the content into a temporary file in the same
    directory, which is flushed, fsync'ed and renamed over ``path``.

    Raises:
        NotFoundError, PermissionDeniedError, UnknownError: if the file
            cannot be written (TF's error for the `OSError`).
    """
    directory = os.path.dirname(path) or "."
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        # Mode 0o666 less the umask, like any file the user creates (mkstemp would give 0o600).
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        raise os_error(e, f"create {tmp}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise os_error(e, f"write {path}") from e
        raise
    fsync_directory(directory)


def fsync_directory(directory: str) -> None:
    """Makes renames in ``directory`` durable (a no-op where directories cannot be synced)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def make_parent_directory(prefix: str) -> None:
    """Creates the directory of ``prefix``, one level only, as TF's bundle writer does.

    TF's ``CreateDir`` is not recursive: saving to ``/no/such/dir/model`` fails
    (and ``Saver.save`` says the parent directory does not exist) instead of
    creating ``/no`` and ``/no/such``.

    Raises:
        NotFoundError: if it cannot be created (its own parent is missing).
    """
    directory = os.path.dirname(prefix)
    if directory:
        try:
            os.mkdir(directory)
        except FileExistsError:
            pass
        except OSError as e:
            raise os_error(e, f"create the directory of {prefix}") from e


def os_error(e: OSError, what: str) -> errors.OpError:
    """The TF error for an `OSError` met while trying to do ``what``."""
    if isinstance(e, (FileNotFoundError, NotADirectoryError, FileExistsError)):
        cls = errors.NotFoundError
    elif isinstance(e, PermissionError):
        cls = errors.PermissionDeniedError
    else:
        cls = errors.UnknownError
    return cls(None, None, f"Failed to {what}: {e}")


# -- slices -----------------------------------------------------------------------------------


def parse_shape_and_slice(spec: str) -> tuple[list[int], list[tuple[int, int]]] | None:
    """TF's ``shape_and_slice`` string (``"5 3 0,3:-"``): the full shape and ``(start, length)``s.

    Returns None for ``""`` (the whole tensor).

    Raises:
        InvalidArgumentError: for a malformed spec.
    """
    if not spec:
        return None
    parts = spec.split(" ")
    try:
        full = [int(p) for p in parts[:-1]]
        return full, parse_slice(parts[-1], full)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid shape_and_slice spec '{spec}': expected e.g. '5 3 0,3:0,3'"
        ) from None


def parse_slice(text: str, full: list[int]) -> list[tuple[int, int]]:
    """``"0,3:-"`` → ``[(0, 3), (0, full[1])]`` (``-`` is the whole dimension)."""
    dims = text.split(":") if text else []
    if len(dims) != len(full):
        raise ValueError(f"slice '{text}' has {len(dims)} dimensions, shape has {len(full)}")
    result = []
    for dim, size in zip(dims, full):
        if dim == "-":
            result.append((0, size))
            continue
        start, length = (int(x) for x in dim.split(","))
        if start < 0 or length < 0 or start + length > size:
            raise ValueError(f"slice '{text}' is outside the shape {full}")
        result.append((start, length))
    return result


def slice_string(extents: Iterable[tuple[int, int]]) -> str:
    """``[(0, 3), (0, 3)]`` → ``"0,3:0,3"``."""
    return ":".join(f"{start},{length}" for start, length in extents)


# -- writing ------------------------------------------------------------------------------------


def write(prefix: str, entries: list[tuple[str, str, np.ndarray]]) -> None:
    """Writes a one-file bundle: ``<prefix>.data-00000-of-00001`` then ``<prefix>.index``.

    Args:
        prefix: The checkpoint prefix (its directory is created).
        entries: ``(name, shape_and_slice, value)`` per tensor or piece.

    Raises:
        InvalidArgumentError: for a name saved twice, or a piece that does not
            fit its spec.
        NotFoundError, PermissionDeniedError, UnknownError: if a file cannot be written.
    """
    tensors: dict[str, dict] = {}
    arrays: dict[str, np.ndarray] = {}
    for i, (name, spec, value) in enumerate(entries):
        value = np.asarray(value)
        key = f"t{i}"
        _add_piece(tensors, name, spec, value, {"file": 0, "key": key})
        arrays.update(_encode(key, value))
    save_id = uuid.uuid4().hex
    arrays[_SAVE_ID_KEY] = np.frombuffer(save_id.encode(), dtype=np.uint8)
    make_parent_directory(prefix)
    data = data_filename(prefix, 0, 1)
    atomic_write(data, lambda f: np.savez(f, **arrays))
    _write_index(prefix, [{"file": os.path.basename(data), "save_id": save_id}], tensors)


def _add_piece(tensors: dict, name: str, spec: str, value: np.ndarray, where: dict) -> None:
    dtype = dtypes.as_dtype(value.dtype).name
    parsed = parse_shape_and_slice(spec)
    if parsed is None:
        if name in tensors:
            raise errors.InvalidArgumentError(None, None, f"Tensor '{name}' is saved twice.")
        piece = {**where, "slice": None}
        tensors[name] = {"dtype": dtype, "shape": list(value.shape), "pieces": [piece]}
        return
    full, extents = parsed
    if list(value.shape) != [length for _, length in extents]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Slice '{spec}' of tensor '{name}' has shape {[n for _, n in extents]} but its "
            f"value has shape {list(value.shape)}",
        )
    entry = tensors.setdefault(name, {"dtype": dtype, "shape": full, "pieces": []})
    _check_same_tensor(name, entry, {"dtype": dtype, "shape": full, "pieces": [{"slice": spec}]})
    entry["pieces"].append({**where, "slice": slice_string(extents)})


def _check_same_tensor(name: str, entry: dict, other: dict) -> None:
    whole = [p for p in entry["pieces"] + other["pieces"] if p["slice"] is None]
    if whole and len(entry["pieces"]) + len(other["pieces"]) > 1:
        raise errors.InvalidArgumentError(
            None, None, f"Tensor '{name}' is saved twice, or both whole and in slices."
        )
    if entry["dtype"] != other["dtype"] or entry["shape"] != other["shape"]:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"The slices of tensor '{name}' disagree: {entry['dtype']}{entry['shape']} and "
            f"{other['dtype']}{other['shape']}",
        )


def _encode(key: str, value: np.ndarray) -> dict[str, np.ndarray]:
    if value.dtype.kind not in "OSU":
        return {key: value}
    items = [v.encode() if isinstance(v, str) else bytes(v) for v in value.ravel().tolist()]
    lengths = np.array([len(v) for v in items], dtype=np.int64).reshape(value.shape)
    return {f"{key}.lengths": lengths, f"{key}.bytes": np.frombuffer(b"".join(items), np.uint8)}


def _write_index(prefix: str, data_files: list[dict], tensors: dict) -> None:
    index = {"format": FORMAT, "version": VERSION, "data_files": data_files, "tensors": tensors}
    text = json.dumps(index, indent=1, sort_keys=True).encode()
    atomic_write(index_filename(prefix), lambda f: f.write(text))


def merge(source_prefixes: list[str], destination_prefix: str, delete_old_dirs: bool) -> None:
    """Merges bundles into one: TF's ``MergeV2Checkpoints``.

    The data files of the sources are renamed to
    ``<destination>.data-<i>-of-<n>`` (in the order of ``source_prefixes``),
    then the merged index is written; the source indexes are deleted and,
    with ``delete_old_dirs``, their directories if they are left empty.

    Raises:
        NotFoundError: if a source bundle is missing.
        InvalidArgumentError: if two sources saved the same tensor (or slice).
    """
    sources = [(prefix, read_index(prefix)) for prefix in source_prefixes]
    total = sum(len(index["data_files"]) for _, index in sources)
    make_parent_directory(destination_prefix)
    data_files: list[dict] = []
    tensors: dict[str, dict] = {}
    for prefix, index in sources:
        first = len(data_files)
        for data in index["data_files"]:
            target = data_filename(destination_prefix, len(data_files), total)
            source = os.path.join(os.path.dirname(prefix), data["file"])
            try:
                os.replace(source, target)
            except OSError as e:
                raise os_error(e, f"move {source} to {target}") from e
            data_files.append({"file": os.path.basename(target), "save_id": data["save_id"]})
        for name, entry in index["tensors"].items():
            moved = {**entry, "pieces": [{**p, "file": p["file"] + first} for p in entry["pieces"]]}
            if name in tensors:
                _check_same_tensor(name, tensors[name], moved)
                tensors[name]["pieces"].extend(moved["pieces"])
            else:
                tensors[name] = moved
    fsync_directory(os.path.dirname(destination_prefix))
    _write_index(destination_prefix, data_files, tensors)
    for prefix, _ in sources:
        with contextlib.suppress(OSError):
            os.unlink(index_filename(prefix))
        if delete_old_dirs:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(prefix) or ".")


# -- reading ------------------------------------------------------------------------------------


def read_index(prefix: str) -> dict:
    """The parsed index of the bundle at ``prefix``.

    Raises:
        NotFoundError: TF's "Unsuccessful TensorSliceReader constructor" error
            if there is no ``<prefix>.index``.
        DataLossError: if the index is not a minitf bundle index.
    """
    path = index_filename(prefix)
    try:
        with open(path, "rb") as f:
            index = json.loads(f.read())
    except FileNotFoundError:
        raise errors.NotFoundError(
            None,
            None,
            "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for "
            f"{prefix}",
        ) from None
    except (OSError, ValueError) as e:
        raise errors.DataLossError(
            None, None, f"Unable to read checkpoint index {path}: {e}"
        ) from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise errors.DataLossError(None, None, f"{path} is not a minitf checkpoint index")
    return index


class BundleReader:
    """Reads the tensors of one checkpoint (TF's ``BundleReader``).

    Args:
        prefix: The checkpoint prefix.

    Raises:
        NotFoundError, DataLossError: see `read_index`.
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.index = read_index(prefix)
        self._directory = os.path.dirname(prefix)
        self._checked: set[int] = set()

    @property
    def tensors(self) -> dict[str, dict]:
        """``{name: {"dtype", "shape", "pieces"}}`` as stored in the index."""
        return self.index["tensors"]

    def dtype(self, name: str) -> dtypes.DType:
        """The saved dtype of ``name``."""
        return dtypes.as_dtype(self._entry(name)["dtype"])

    def shape(self, name: str) -> list[int]:
        """The saved (full) shape of ``name``."""
        return list(self._entry(name)["shape"])

    def read(self, name: str, shape_and_slice: str = "") -> np.ndarray:
        """The saved value of ``name``, or of one slice of it (TF's spec, ``""`` for all).

        Raises:
            NotFoundError: if the checkpoint has no tensor ``name``, or its
                saved pieces do not cover the requested region.
            InvalidArgumentError: if the spec's full shape is not the saved one.
            DataLossError: if a data file does not belong to this index.
        """
        entry = self._entry(name)
        parsed = parse_shape_and_slice(shape_and_slice)
        if parsed is None:
            extents = [(0, n) for n in entry["shape"]]
        else:
            full, extents = parsed
            if full != entry["shape"]:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"Shape in shape_and_slice spec {full} does not match the shape stored in "
                    f"checkpoint {self.prefix} for '{name}': {entry['shape']}",
                )
        pieces = entry["pieces"]
        if len(pieces) == 1 and pieces[0]["slice"] is None and parsed is None:
            return self._load(pieces[0], entry)
        return self._assemble(name, entry, extents)

    def _entry(self, name: str) -> dict:
        entry = self.tensors.get(name)
        if entry is None:
            raise errors.NotFoundError(
                None, None, f"Key {name} not found in checkpoint {self.prefix}"
            )
        return entry

    def _assemble(self, name: str, entry: dict, extents: list[tuple[int, int]]) -> np.ndarray:
        np_dtype = dtypes.as_dtype(entry["dtype"]).as_numpy_dtype
        out = np.empty([n for _, n in extents], dtype=np_dtype)
        covered = np.zeros(out.shape, dtype=bool)
        for piece in entry["pieces"]:
            if piece["slice"] is None:
                piece_extents = [(0, n) for n in entry["shape"]]
            else:
                piece_extents = parse_slice(piece["slice"], entry["shape"])
            overlap = [
                (max(a, b), min(a + m, b + n)) for (a, m), (b, n) in zip(extents, piece_extents)
            ]
            if any(lo >= hi for lo, hi in overlap):
                continue
            value = self._load(piece, entry)
            src = tuple(slice(lo - b, hi - b) for (lo, hi), (b, _) in zip(overlap, piece_extents))
            dst = tuple(slice(lo - a, hi - a) for (lo, hi), (a, _) in zip(overlap, extents))
            out[dst] = value[src]
            covered[dst] = True
        if not covered.all():
            raise errors.NotFoundError(
                None,
                None,
                f"The slice {slice_string(extents)} of key {name} is not fully covered by the "
                f"pieces saved in checkpoint {self.prefix}",
            )
        return out

    def _load(self, piece: dict, entry: dict) -> np.ndarray:
        path = os.path.join(self._directory, self.index["data_files"][piece["file"]]["file"])
        key = piece["key"]
        try:
            with np.load(path, allow_pickle=False) as archive:
                self._check_save_id(piece["file"], path, archive)
                if entry["dtype"] == "string":
                    return _decode_strings(archive[f"{key}.lengths"], archive[f"{key}.bytes"])
                return archive[key]
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"Data file {path} of checkpoint {self.prefix} does not exist"
            ) from None
        except (OSError, ValueError, KeyError) as e:
            raise errors.DataLossError(
                None, None, f"Unable to read {key} from {path} of checkpoint {self.prefix}: {e}"
            ) from None

    def _check_save_id(self, file: int, path: str, archive) -> None:
        if file in self._checked:
            return
        expected = self.index["data_files"][file]["save_id"]
        found = bytes(archive[_SAVE_ID_KEY]).decode()
        if found != expected:
            raise errors.DataLossError(
                None,
                None,
                f"Checkpoint {self.prefix} is inconsistent: its data file {path} was written by "
                "another save than its index (a save to the same prefix was interrupted).",
            )
        self._checked.add(file)


def _decode_strings(lengths: np.ndarray, blob: np.ndarray) -> np.ndarray:
    data = blob.tobytes()
    ends = np.cumsum(lengths.ravel())
    out = np.empty(lengths.size, dtype=object)
    start = 0
    for i, end in enumerate(ends.tolist()):
        out[i] = data[start:end]
        start = end
    return out.reshape(lengths.shape)
