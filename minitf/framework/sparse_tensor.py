"""``tf.SparseTensor``: a tensor given by its non-zero entries, and the value a session returns.

A SparseTensor is three dense tensors: ``indices`` (int64, ``[N, rank]``,
the coordinates of the N entries that are set), ``values`` (``[N]``, their
values) and ``dense_shape`` (int64, ``[rank]``). Every other entry is zero
(or the ``default_value`` of ``tf.sparse.to_dense``). ``tf.parse_example``
returns one for each ``VarLenFeature``.

``Session.run`` fetches the three tensors and returns a `SparseTensorValue`;
a ``feed_dict`` may feed a SparseTensor a `SparseTensorValue` or an
``(indices, values, dense_shape)`` tuple.
"""

from __future__ import annotations

import collections
from typing import Any

from minitf.framework import default_session, dtypes, ops, tensor_shape, tensor_util

__all__ = ["SparseTensor", "SparseTensorValue"]

SparseTensorValue = collections.namedtuple(
    "SparseTensorValue", ["indices", "values", "dense_shape"]
)
SparseTensorValue.__doc__ = """What ``Session.run`` returns for a fetched `SparseTensor`.

Attributes:
    indices: The coordinates of the entries, int64 ``[N, rank]``.
    values: The entries, ``[N]``.
    dense_shape: The shape of the dense tensor, int64 ``[rank]``.
"""


class SparseTensor:
    """A sparse tensor: ``indices``, ``values`` and ``dense_shape`` (TF's ``tf.SparseTensor``).

    Args:
        indices: int64 ``[N, rank]``: where the entries are.
        values: ``[N]``: the entries.
        dense_shape: int64 ``[rank]``: the shape of the dense tensor.

    Raises:
        ValueError: if the static shapes of the three do not fit together.
    """

    def __init__(self, indices: Any, values: Any, dense_shape: Any):
        with ops.name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = ops.convert_to_tensor(indices, name="indices", dtype=dtypes.int64)
            values = ops.convert_to_tensor(values, name="values")
            dense_shape = ops.convert_to_tensor(dense_shape, name="dense_shape", dtype=dtypes.int64)
        indices_shape = indices.get_shape().with_rank(2)
        values_shape = values.get_shape().with_rank(1)
        dense_shape_shape = dense_shape.get_shape().with_rank(1)
        indices_shape[0].merge_with(values_shape[0])
        indices_shape[1].merge_with(dense_shape_shape[0])
        self._indices, self._values, self._dense_shape = indices, values, dense_shape
        self._static_shape = tensor_util.constant_value_as_shape(dense_shape)

    @classmethod
    def from_value(cls, sparse_tensor_value: SparseTensorValue | SparseTensor) -> SparseTensor:
        """A SparseTensor of constants from a `SparseTensorValue` (or returns a SparseTensor).

        Args:
            sparse_tensor_value: A `SparseTensorValue` or a `SparseTensor`.

        Returns:
            A `SparseTensor`.
        """
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(*sparse_tensor_value)

    @property
    def indices(self) -> ops.Tensor:
        """The coordinates of the entries: int64 ``[N, rank]``."""
        return self._indices

    @property
    def values(self) -> ops.Tensor:
        """The entries: ``[N]``."""
        return self._values

    @property
    def dense_shape(self) -> ops.Tensor:
        """The shape of the dense tensor: int64 ``[rank]``."""
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        """The dtype of the values."""
        return self._values.dtype

    @property
    def op(self) -> ops.Operation:
        """The op that produces ``values``."""
        return self._values.op

    @property
    def graph(self) -> ops.Graph:
        """The graph of the three tensors."""
        return self._indices.graph

    @property
    def shape(self) -> tensor_shape.TensorShape:
        """The static dense shape: known where ``dense_shape`` is a constant or was set."""
        return self._static_shape

    def set_shape(self, shape: tensor_shape.TensorShape | list | tuple | None) -> None:
        """Narrows the static dense shape to ``shape`` (it must be compatible).

        Args:
            shape: A (partial) shape.

        Raises:
            ValueError: if ``shape`` is not compatible with the current static shape.
        """
        self._static_shape = self._static_shape.merge_with(tensor_shape.as_shape(shape))

    def get_shape(self) -> tensor_shape.TensorShape:
        """The static dense shape (`shape`)."""
        return self.shape

    def eval(
        self, feed_dict: dict | None = None, session: default_session.SessionInterface | None = None
    ) -> SparseTensorValue:
        """Runs the three tensors in ``session`` (default: the default session).

        Args:
            feed_dict: Feeds for the run.
            session: The session; None uses the default session.

        Raises:
            ValueError: if there is no session to use, or its graph is not this graph.
        """
        return default_session.eval_using_default_session(self, feed_dict, self.graph, session)

    def __repr__(self) -> str:
        return (
            f"SparseTensor(indices={self._indices}, values={self._values}, "
            f"dense_shape={self._dense_shape})"
        )
