"""`Tensor`: a symbolic handle to one output of an `Operation`.

A Tensor holds no value. It knows the op that produces it, its index among
that op's outputs, its dtype and its static shape, and the ops that consume
it; a session computes its value. Operators (``a + b``, ``t[1:]``) are
installed on the class by the op modules (`Tensor._override_operator`).

The producing `Operation` creates its tensors; this module does not import
`minitf.framework.operation` (the op only appears here as ``self.op``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes, tensor_shape
from minitf.framework.default_session import SessionInterface, eval_using_default_session


class Tensor:
    """A symbolic handle to one output of an `Operation`.

    A Tensor holds no value: its value is computed when a session runs the
    graph. ``Tensor.name`` is ``"<op name>:<output index>"``. Tensors are
    created by `Operation`, never directly.

    Args:
        op (Operation): The `Operation` that produces this tensor.
        value_index: The index of this tensor among ``op``'s outputs.
        dtype: The `DType` (or anything `as_dtype` accepts) of its elements.
        shape: Its static shape, or None for an unknown shape.
    """

    # Lets numpy defer to Tensor operators (``np.float32(2) * t`` builds an op).
    __array_priority__ = 100

    def __init__(
        self,
        op,
        value_index: int,
        dtype: dtypes.DType,
        shape: tensor_shape.TensorShape | list | None = None,
    ):
        self._op = op
        self._value_index = value_index
        self._dtype = dtypes.as_dtype(dtype)
        self._shape = tensor_shape.as_shape(shape) if shape is not None else _unknown()
        self._consumers: list = []  # the Operations that take this tensor as an input

    @property
    def op(self):
        """The `Operation` that produces this tensor."""
        return self._op

    @property
    def value_index(self) -> int:
        """The index of this tensor among its op's outputs."""
        return self._value_index

    @property
    def dtype(self) -> dtypes.DType:
        """The `DType` of the elements of this tensor."""
        return self._dtype

    @property
    def graph(self):
        """The `Graph` that contains this tensor."""
        return self._op.graph

    @property
    def name(self) -> str:
        """The tensor's name, ``"<op name>:<index>"``."""
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        """The requested device of the producing op."""
        return self._op.device

    @property
    def shape(self) -> tensor_shape.TensorShape:
        """The static (possibly partial) shape inferred at graph construction."""
        return self._shape

    def get_shape(self) -> tensor_shape.TensorShape:
        """Alias of `shape` (TF1 name)."""
        return self._shape

    def set_shape(self, shape: tensor_shape.TensorShape | list) -> None:
        """Refines the static shape by merging it with ``shape``.

        Args:
            shape: A `TensorShape`, or a list of dimensions (None for unknown).

        Raises:
            ValueError: if ``shape`` is not compatible with the current shape.
        """
        self._shape = self._shape.merge_with(tensor_shape.as_shape(shape))

    def consumers(self) -> list:
        """The ops that take this tensor as an input."""
        return list(self._consumers)

    def eval(self, feed_dict: dict | None = None, session: SessionInterface | None = None) -> Any:
        """Evaluates this tensor in ``session`` or the default session.

        Args:
            feed_dict: Values to feed, as in `Session.run`.
            session: The session to use; None means the default session.

        Returns:
            The tensor's value, a numpy array.

        Raises:
            ValueError: if there is no session to use, or its graph is not this
                tensor's graph.
        """
        return eval_using_default_session(self, feed_dict, self.graph, session)

    def _add_consumer(self, op) -> None:
        self._consumers.append(op)

    def _as_node_def_input(self) -> str:
        return self._op.name if self._value_index == 0 else self.name

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    # TF1 semantics: tensors compare and hash by identity; use tf.equal for values.
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError(
            "Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
            "instead of `if t:` to test if a tensor is defined, and use TensorFlow ops such "
            "as tf.cond to execute subgraphs conditioned on the value of a tensor."
        )

    def __iter__(self):
        raise TypeError(
            "Tensor objects are only iterable when eager execution is enabled. "
            "To iterate over this tensor use tf.map_fn."
        )

    def __len__(self):
        raise TypeError(
            f"len is not well defined for symbolic Tensors. ({self.name}) Please call "
            "`x.shape` rather than `len(x)` for shape information."
        )

    @classmethod
    def _override_operator(cls, operator: str, func: Callable) -> None:
        """Installs ``func`` as ``Tensor.<operator>`` (used by math_ops)."""
        setattr(cls, operator, func)


def _unknown() -> tensor_shape.TensorShape:
    return tensor_shape.unknown_shape()
