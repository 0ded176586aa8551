"""What a session is fed: each key a feedable tensor, each value an array it fits.

`Feeds` turns a ``feed_dict`` into the fed tensors and their values, with
TF's checks and errors: a key that is no tensor, a value that is a tensor,
an integer too large for the dtype, a shape the tensor's static shape does
not allow, a tensor that may not be fed. A fed array reaches the kernels as
a read-only view: the caller keeps it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitf.framework import ops
from minitf.framework.sparse_tensor import SparseTensor


class Feeds:
    """The feed checks of one session's graph (the static shapes it has seen are kept).

    A kept shape is read again once the tensor's static shape is another object:
    ``Tensor.set_shape`` makes a new one, and a feed is checked against the
    shape the tensor has at that run, as in TF.

    Args:
        graph: The session's graph.
    """

    def __init__(self, graph: ops.Graph):
        self._graph = graph
        self._static_dims: dict[ops.Tensor, tuple] = {}  # tensor -> (static shape, its dims)
        # Per feed key seen before: its tensor, numpy dtype, static dims and the
        # static shape they are of (what a key denotes never changes: ops are
        # never removed; its shape may be refined).
        self._known: dict[Any, tuple] = {}

    def process(self, feed_dict) -> tuple[list[ops.Tensor], list[Any]]:
        """The fed tensors and their values, checked (TF's errors for bad ones).

        Args:
            feed_dict: ``Session.run``'s ``feed_dict``.
        """
        if not feed_dict:
            return [], []
        tensors, values = [], []
        positions: dict[ops.Tensor, int] = {}
        known, is_feedable = self._known, self._graph.is_feedable
        for key, value in feed_dict.items():
            seen = known.get(key) if type(value) is np.ndarray else None
            if (
                seen is not None
                and value.dtype == seen[1]
                and seen[0].get_shape() is seen[3]
                and _fits(seen[2], value.shape)
            ):
                # The common case, without the general checks it passes anyway: an
                # array of the dtype and shape for a key seen before.
                tensor = seen[0]
                if not is_feedable(tensor):
                    raise not_feedable(tensor)
                self._add(tensors, values, positions, tensor, read_only_view(value))
            elif isinstance(key, SparseTensor):
                for part, part_value in _sparse_parts(key, value):
                    tensor = self.tensor(part)
                    converted = self.value(tensor, part_value, part)
                    self._add(tensors, values, positions, tensor, converted)
            else:
                tensor = self.tensor(key)
                converted = self.value(tensor, value, key)
                self._remember(key, tensor)
                self._add(tensors, values, positions, tensor, converted)
        return tensors, values

    @staticmethod
    def _add(tensors: list, values: list, positions: dict, tensor: ops.Tensor, value) -> None:
        index = positions.get(tensor)
        if index is not None:  # the last value fed to a tensor wins, as in TF
            values[index] = value
            return
        positions[tensor] = len(tensors)
        tensors.append(tensor)
        values.append(value)

    def _remember(self, key, tensor: ops.Tensor) -> None:
        """Keeps what the fast path of `process` needs of a key just fed."""
        if len(self._known) >= 1024:
            self._known.clear()
        np_dtype = np.dtype(tensor.dtype.base_dtype.as_numpy_dtype)
        self._known[key] = (tensor, np_dtype, self._dims(tensor), tensor.get_shape())

    def tensor(self, key) -> ops.Tensor:
        try:
            return self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except (TypeError, ValueError, KeyError) as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e.args[0]}") from None

    def value(self, tensor: ops.Tensor, value, key=None, np_dtype=None):
        if np_dtype is None:  # make_callable looks it up once
            np_dtype = tensor.dtype.base_dtype.as_numpy_dtype
        if type(value) is np.ndarray and value.dtype == np_dtype:
            # The common case, kept cheap: an array of the right dtype.
            return self._checked(tensor, value)
        if isinstance(value, ops.Tensor) or hasattr(value, "_as_graph_element"):
            raise TypeError(
                "The value of a feed cannot be a tf.Tensor object. Acceptable feed values "
                "include Python scalars, strings, lists, numpy ndarrays, or TensorHandles. For "
                f"reference, the tensor object was {value} which was passed to the feed with "
                f"key {key if key is not None else tensor}."
            )
        if isinstance(value, int) and not isinstance(value, bool):
            if np.asarray(value).astype(np_dtype) != value:
                raise TypeError(
                    f"Type of feed value {value} with type {type(value)} is not compatible with "
                    f"Tensor type {np_dtype}. Try explicitly setting the type of the feed tensor "
                    "to a larger type (e.g. int64)."
                )
        try:
            np_val = np.asarray(value, dtype=np_dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"Cannot feed value {value!r} for Tensor {tensor.name!r} of dtype "
                f"{tensor.dtype.base_dtype.name}: {e}"
            ) from None
        return self._checked(tensor, np_val)

    def _checked(self, tensor: ops.Tensor, value: np.ndarray) -> np.ndarray:
        """``value`` as the step sees it, once its shape fits and ``tensor`` may be fed."""
        if not self._fits_static_shape(tensor, value.shape):
            raise ValueError(
                f"Cannot feed value of shape {value.shape!r} for Tensor {tensor.name!r}, "
                f"which has shape {str(tensor.get_shape())!r}"
            )
        if not self._graph.is_feedable(tensor):
            raise not_feedable(tensor)
        return read_only_view(value)

    def _fits_static_shape(self, tensor: ops.Tensor, shape: tuple) -> bool:
        """Whether ``shape`` is compatible with the tensor's static shape."""
        dims = self._dims(tensor)
        if dims is None or dims == shape:
            return True
        return len(dims) == len(shape) and all(d is None or d == s for d, s in zip(dims, shape))

    def _dims(self, tensor: ops.Tensor) -> tuple | None:
        """The static dims (None for each unknown one), or None for an unknown rank (cached)."""
        static = tensor.get_shape()
        kept = self._static_dims.get(tensor)
        if kept is None or kept[0] is not static:
            dims = None if static.ndims is None else tuple(static.as_list())
            kept = self._static_dims[tensor] = (static, dims)
        return kept[1]


def _fits(dims: tuple | None, shape: tuple) -> bool:
    """Whether ``shape`` surely fits static ``dims``: any rank, the same, or all but a batch dim.

    False sends a value to the general check (`Feeds._fits_static_shape`).
    """
    if dims is None or dims == shape:
        return True
    return len(dims) == len(shape) and dims[0] is None and dims[1:] == shape[1:]


def _sparse_parts(key: SparseTensor, value):
    """The ``(tensor, value)`` pairs of a `SparseTensor` fed: its three tensors.

    As in TF, a SparseTensor is fed a ``SparseTensorValue`` or an
    ``(indices, values, dense_shape)`` tuple.
    """
    parts = (key.indices, key.values, key.dense_shape)
    if len(value) != 3:
        raise ValueError(
            f"The feed of SparseTensor {key} must be a SparseTensorValue or a tuple "
            f"(indices, values, dense_shape), got {value!r}"
        )
    return zip(parts, value)


def not_feedable(tensor: ops.Tensor) -> ValueError:
    """TF's error for a feed of a tensor the graph keeps from being fed."""
    return ValueError(f"Tensor {tensor} may not be fed.")


def read_only_view(array: np.ndarray) -> np.ndarray:
    """A view kernels cannot write to; what is stored or returned from it gets copied.

    Fed arrays are not copied: nothing in a step may change them, and a value
    that outlives the step (a variable assigned from a feed, a fetch of a fed
    tensor) is copied at that point because the view is read-only.
    """
    view = array.view()
    view.flags.writeable = False
    return view
