"""TF1's RNN cells: ``BasicRNNCell``, ``GRUCell``, the two LSTM cells and ``MultiRNNCell``.

Each cell is a few matrix products and activations, written with public ops
as in TF's ``rnn_cell_impl.py``, and keeps TF's variable names and layouts so
that a checkpoint or a line of TF code means the same thing here:

- ``BasicRNNCell``: ``kernel [input + units, units]``, ``bias [units]``;
  ``h' = act([x, h] @ kernel + bias)``.
- ``GRUCell``: ``gates/kernel [input + units, 2 * units]`` and
  ``gates/bias`` (initialised to 1.0), then ``candidate/kernel`` and
  ``candidate/bias``; ``r, u = split(sigmoid(...))``,
  ``c = act([x, r * h] @ candidate/kernel + candidate/bias)``,
  ``h' = u * h + (1 - u) * c``.
- ``BasicLSTMCell`` and ``LSTMCell``: ``kernel [input + h, 4 * units]`` and
  ``bias [4 * units]``, the four column blocks being the gates in the order
  ``i, j, f, o`` (input gate, new input, forget gate, output gate);
  ``c' = c * sigmoid(f + forget_bias) + sigmoid(i) * act(j)``,
  ``h' = act(c') * sigmoid(o)``. The state is an ``LSTMStateTuple(c, h)``.
- ``MultiRNNCell`` stacks cells; the variables of layer ``k`` are under
  ``multi_rnn_cell/cell_k/``.
- ``DropoutWrapper``, ``ResidualWrapper`` and ``DeviceWrapper`` wrap a cell
  and add dropout, a residual sum or a device; the variables stay the
  wrapped cell's, named as without the wrapper.

The base classes and the scope rules are in `minitf.ops.nn.rnn_cell_base`.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.ops.array import array_ops, constant_op
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_ops
from minitf.ops.nn.rnn_cell_base import (
    LayerRNNCell,
    RNNCell,
    assert_like_rnncell,
    build_depth,
    check_rnn_cell_input_dtypes,
    check_supported_dtypes,
)
from minitf.ops.state import init_ops
from minitf.ops.state import variable_scope as vs
from minitf.ops.state.partitioned_variables import fixed_size_partitioner
from minitf.util import nest

__all__ = [
    "RNNCell",
    "LayerRNNCell",
    "LSTMStateTuple",
    "BasicRNNCell",
    "GRUCell",
    "BasicLSTMCell",
    "LSTMCell",
    "MultiRNNCell",
    "DropoutWrapper",
    "ResidualWrapper",
    "DeviceWrapper",
]

_logger = logging.getLogger("minitf")

_BIAS_VARIABLE_NAME = "bias"
_WEIGHTS_VARIABLE_NAME = "kernel"

_ACTIVATIONS = {
    "tanh": math_ops.tanh,
    "sigmoid": math_ops.sigmoid,
    "relu": nn_ops.relu,
    "elu": nn_ops.elu,
    "softplus": nn_ops.softplus,
    "linear": lambda x: x,
}


def _activation(activation):
    """The activation function: ``tanh`` by default, a callable, or a Keras name."""
    if not activation:
        return math_ops.tanh
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"Unknown activation function: {activation}")
        return _ACTIVATIONS[activation]
    return activation


def _concat_inputs_and(inputs, state) -> ops.Tensor:
    return array_ops.concat([inputs, state], 1)


def _add_kernel_and_bias(cell, rows: int, columns: int, initializer=None, partitioner=None):
    """``kernel [rows, columns]`` and a zero-initialised ``bias [columns]`` of ``cell``."""
    kernel = cell.add_variable(
        _WEIGHTS_VARIABLE_NAME,
        shape=[rows, columns],
        initializer=initializer,
        partitioner=partitioner,
    )
    bias = cell.add_variable(
        _BIAS_VARIABLE_NAME,
        shape=[columns],
        initializer=init_ops.zeros_initializer(dtype=cell.dtype),
    )
    return kernel, bias


class _NumUnitsCell(LayerRNNCell):
    """A cell whose state and output are both ``num_units`` wide."""

    _num_units: int

    @property
    def state_size(self) -> int:
        """``num_units``."""
        return self._num_units

    @property
    def output_size(self) -> int:
        """``num_units``."""
        return self._num_units


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The state of an LSTM cell: ``(c, h)``, the cell state and the output, in that order.

    Used when the cell's ``state_is_tuple`` is True (the default).

    Attributes:
        c: The cell state, ``[batch_size, num_units]``.
        h: The output (hidden) state, ``[batch_size, num_units or num_proj]``.
    """

    __slots__ = ()

    @property
    def dtype(self) -> dtypes.DType:
        """The dtype of ``c`` and ``h``.

        Raises:
            TypeError: if they differ.
        """
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


class BasicRNNCell(_NumUnitsCell):
    """The most basic RNN cell: ``output = new_state = act([inputs, state] @ kernel + bias)``.

    Args:
        num_units: The number of units.
        activation: The nonlinearity (default ``tanh``).
        reuse: True to find the variables in an existing scope.
        name: The cell's name and variable scope (default ``basic_rnn_cell``).
        dtype: The variables' dtype (default: the inputs').

    Raises:
        ValueError: if ``dtype`` is not a float or complex type.
    """

    def __init__(
        self,
        num_units: int,
        activation: Callable | str | None = None,
        reuse: bool | None = None,
        name: str | None = None,
        dtype: dtypes.DType | None = None,
    ):
        super().__init__(name=name, dtype=dtype, _reuse=reuse)
        check_supported_dtypes(self.dtype)
        self._num_units = num_units
        self._activation = _activation(activation)

    def build(self, inputs_shape: tensor_shape.TensorShape) -> None:
        """Creates ``kernel [input_depth + num_units, num_units]`` and ``bias [num_units]``.

        Args:
            inputs_shape: The inputs' shape; its last dimension must be known.
        """
        rows = build_depth(self, inputs_shape) + self._num_units
        self._kernel, self._bias = _add_kernel_and_bias(self, rows, self._num_units)

    def call(self, inputs: ops.Tensor, state: ops.Tensor) -> tuple[ops.Tensor, ops.Tensor]:
        """``act([inputs, state] @ kernel + bias)``, as both output and new state.

        Args:
            inputs: ``[batch_size, input_size]``.
            state: ``[batch_size, num_units]``.
        """
        check_rnn_cell_input_dtypes([inputs, state])
        gate_inputs = math_ops.matmul(_concat_inputs_and(inputs, state), self._kernel)
        output = self._activation(nn_ops.bias_add(gate_inputs, self._bias))
        return output, output


class GRUCell(_NumUnitsCell):
    """Gated Recurrent Unit cell (Cho et al., 2014).

    Args:
        num_units: The number of units.
        activation: The nonlinearity of the candidate (default ``tanh``).
        reuse: True to find the variables in an existing scope.
        kernel_initializer: The initializer of both kernels (default: the scope's).
        bias_initializer: The initializer of both biases (default: 1.0 for
            the gates, so that they start open, and 0.0 for the candidate).
        name: The cell's name and variable scope (default ``gru_cell``).
        dtype: The variables' dtype (default: the inputs').

    Raises:
        ValueError: if ``dtype`` is not a float or complex type.
    """

    def __init__(
        self,
        num_units: int,
        activation: Callable | str | None = None,
        reuse: bool | None = None,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        name: str | None = None,
        dtype: dtypes.DType | None = None,
    ):
        super().__init__(name=name, dtype=dtype, _reuse=reuse)
        check_supported_dtypes(self.dtype)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def _bias_init(self, default: float):
        if self._bias_initializer is not None:
            return self._bias_initializer
        return init_ops.constant_initializer(default, dtype=self.dtype)

    def build(self, inputs_shape: tensor_shape.TensorShape) -> None:
        """Creates ``gates/kernel``, ``gates/bias``, ``candidate/kernel``, ``candidate/bias``.

        Args:
            inputs_shape: The inputs' shape; its last dimension must be known.
        """
        rows = build_depth(self, inputs_shape) + self._num_units
        self._gate_kernel = self.add_variable(
            f"gates/{_WEIGHTS_VARIABLE_NAME}",
            shape=[rows, 2 * self._num_units],
            initializer=self._kernel_initializer,
        )
        self._gate_bias = self.add_variable(
            f"gates/{_BIAS_VARIABLE_NAME}",
            shape=[2 * self._num_units],
            initializer=self._bias_init(1.0),
        )
        self._candidate_kernel = self.add_variable(
            f"candidate/{_WEIGHTS_VARIABLE_NAME}",
            shape=[rows, self._num_units],
            initializer=self._kernel_initializer,
        )
        self._candidate_bias = self.add_variable(
            f"candidate/{_BIAS_VARIABLE_NAME}",
            shape=[self._num_units],
            initializer=self._bias_init(0.0),
        )

    def call(self, inputs: ops.Tensor, state: ops.Tensor) -> tuple[ops.Tensor, ops.Tensor]:
        """One GRU step; the new state is also the output.

        Args:
            inputs: ``[batch_size, input_size]``.
            state: ``[batch_size, num_units]``.
        """
        check_rnn_cell_input_dtypes([inputs, state])
        gates = math_ops.matmul(_concat_inputs_and(inputs, state), self._gate_kernel)
        value = math_ops.sigmoid(nn_ops.bias_add(gates, self._gate_bias))
        r, u = array_ops.split(value=value, num_or_size_splits=2, axis=1)
        candidate = math_ops.matmul(_concat_inputs_and(inputs, r * state), self._candidate_kernel)
        c = self._activation(nn_ops.bias_add(candidate, self._candidate_bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


def _lstm_state_parts(state, state_is_tuple: bool, c_size: int, h_size: int):
    """``(c, h)`` from a tuple state or from ``[c, h]`` concatenated on axis 1."""
    if state_is_tuple:
        c, h = state
        return c, h
    c = array_ops.slice(state, [0, 0], [-1, c_size])
    h = array_ops.slice(state, [0, c_size], [-1, h_size])
    return c, h


def _lstm_new_state(c, h, state_is_tuple: bool):
    return LSTMStateTuple(c, h) if state_is_tuple else array_ops.concat([c, h], 1)


def _warn_concatenated_state(cell, state_is_tuple: bool) -> None:
    if not state_is_tuple:
        _logger.warning(
            "%s: Using a concatenated state is slower and will soon be deprecated.  "
            "Use state_is_tuple=True.",
            cell,
        )


class BasicLSTMCell(LayerRNNCell):
    """The basic LSTM cell: no peepholes, no clipping, no projection.

    ``forget_bias`` is added to the forget gate's pre-activation, so that a
    new network starts by remembering rather than forgetting. The gates are
    the column blocks ``i, j, f, o`` of ``kernel`` and ``bias``.

    Args:
        num_units: The number of units.
        forget_bias: Added to the forget gate's pre-activation.
        state_is_tuple: If True, the state is an ``LSTMStateTuple(c, h)``;
            if False, ``[c, h]`` concatenated on axis 1.
        activation: The nonlinearity of ``j`` and of the cell state (default ``tanh``).
        reuse: True to find the variables in an existing scope.
        name: The cell's name and variable scope (default ``basic_lstm_cell``).
        dtype: The variables' dtype (default: the inputs').

    Raises:
        ValueError: if ``dtype`` is not a float or complex type.
    """

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Callable | str | None = None,
        reuse: bool | None = None,
        name: str | None = None,
        dtype: dtypes.DType | None = None,
    ):
        super().__init__(name=name, dtype=dtype, _reuse=reuse)
        check_supported_dtypes(self.dtype)
        _warn_concatenated_state(self, state_is_tuple)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self) -> LSTMStateTuple | int:
        """``LSTMStateTuple(num_units, num_units)``, or ``2 * num_units`` if not a tuple."""
        if self._state_is_tuple:
            return LSTMStateTuple(self._num_units, self._num_units)
        return 2 * self._num_units

    @property
    def output_size(self) -> int:
        """``num_units``."""
        return self._num_units

    def build(self, inputs_shape: tensor_shape.TensorShape) -> None:
        """Creates ``kernel [input_depth + num_units, 4 * num_units]`` and ``bias``.

        Args:
            inputs_shape: The inputs' shape; its last dimension must be known.
        """
        rows = build_depth(self, inputs_shape) + self._num_units
        self._kernel, self._bias = _add_kernel_and_bias(self, rows, 4 * self._num_units)

    def call(
        self, inputs: ops.Tensor, state: LSTMStateTuple | ops.Tensor
    ) -> tuple[ops.Tensor, LSTMStateTuple | ops.Tensor]:
        """One LSTM step: ``(h', new_state)``.

        Args:
            inputs: ``[batch_size, input_size]``.
            state: An ``LSTMStateTuple`` of two ``[batch_size, num_units]``
                tensors, or one ``[batch_size, 2 * num_units]`` tensor.
        """
        check_rnn_cell_input_dtypes([inputs, state])
        units = self._num_units
        c, h = _lstm_state_parts(state, self._state_is_tuple, units, units)
        gate_inputs = math_ops.matmul(_concat_inputs_and(inputs, h), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        one = constant_op.constant(1, dtype=dtypes.int32)
        i, j, f, o = array_ops.split(value=gate_inputs, num_or_size_splits=4, axis=one)
        forget_bias = constant_op.constant(self._forget_bias, dtype=f.dtype)
        sigmoid = math_ops.sigmoid
        new_c = math_ops.add(
            math_ops.multiply(c, sigmoid(math_ops.add(f, forget_bias))),
            math_ops.multiply(sigmoid(i), self._activation(j)),
        )
        new_h = math_ops.multiply(self._activation(new_c), sigmoid(o))
        return new_h, _lstm_new_state(new_c, new_h, self._state_is_tuple)


def _clip(t, limit):
    """``t`` clipped to ``[-limit, limit]`` (TF's ``clip_by_value``)."""
    return math_ops.maximum(math_ops.minimum(t, limit), -limit)


class LSTMCell(LayerRNNCell):
    """The full LSTM cell: optional peepholes, cell clipping and an output projection.

    Without the options it computes what `BasicLSTMCell` does, with the same
    variables. ``use_peepholes`` adds the diagonal ``w_f_diag``, ``w_i_diag``
    and ``w_o_diag`` (Sak et al., 2014); ``num_proj`` multiplies the output by
    ``projection/kernel [num_units, num_proj]``, and then ``h`` and the
    output have ``num_proj`` columns.

    Args:
        num_units: The number of units.
        use_peepholes: Add the peephole connections.
        cell_clip: If set, the cell state is clipped to ``[-cell_clip, cell_clip]``.
        initializer: The initializer of the kernels and peepholes.
        num_proj: If set, the output dimension of a projection.
        proj_clip: If set (with ``num_proj``), the projection is clipped to
            ``[-proj_clip, proj_clip]``.
        num_unit_shards: Deprecated: split the kernel in this many shards.
        num_proj_shards: Deprecated: split the projection in this many shards.
        forget_bias: Added to the forget gate's pre-activation.
        state_is_tuple: If True, the state is an ``LSTMStateTuple(c, h)``.
        activation: The nonlinearity (default ``tanh``).
        reuse: True to find the variables in an existing scope.
        name: The cell's name and variable scope (default ``lstm_cell``).
        dtype: The variables' dtype (default: the inputs').

    Raises:
        ValueError: if ``dtype`` is not a float or complex type.
    """

    def __init__(
        self,
        num_units: int,
        use_peepholes: bool = False,
        cell_clip: float | None = None,
        initializer: Any = None,
        num_proj: int | None = None,
        proj_clip: float | None = None,
        num_unit_shards: int | None = None,
        num_proj_shards: int | None = None,
        forget_bias: float = 1.0,
        state_is_tuple: bool = True,
        activation: Callable | str | None = None,
        reuse: bool | None = None,
        name: str | None = None,
        dtype: dtypes.DType | None = None,
    ):
        super().__init__(name=name, dtype=dtype, _reuse=reuse)
        check_supported_dtypes(self.dtype)
        _warn_concatenated_state(self, state_is_tuple)
        if num_unit_shards is not None or num_proj_shards is not None:
            _logger.warning(
                "%s: The num_unit_shards and proj_unit_shards parameters are deprecated and "
                "will be removed in Jan 2017.  Use a variable scope with a partitioner instead.",
                self,
            )
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._num_unit_shards = num_unit_shards
        self._num_proj_shards = num_proj_shards
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)
        h_size = num_proj or num_units
        self._output_size = h_size
        if state_is_tuple:
            self._state_size = LSTMStateTuple(num_units, h_size)
        else:
            self._state_size = num_units + h_size

    @property
    def state_size(self) -> LSTMStateTuple | int:
        """``LSTMStateTuple(num_units, num_proj or num_units)``, or their sum if not a tuple."""
        return self._state_size

    @property
    def output_size(self) -> int:
        """``num_proj`` if set, else ``num_units``."""
        return self._output_size

    def _sharded(self, shards):
        return None if shards is None else fixed_size_partitioner(shards)

    def build(self, inputs_shape: tensor_shape.TensorShape) -> None:
        """Creates ``kernel``, ``bias``, and the peephole and projection variables if asked.

        Args:
            inputs_shape: The inputs' shape; its last dimension must be known.
        """
        units = self._num_units
        self._kernel, self._bias = _add_kernel_and_bias(
            self,
            build_depth(self, inputs_shape) + self._output_size,
            4 * units,
            self._initializer,
            self._sharded(self._num_unit_shards),
        )
        if self._use_peepholes:
            self._w_f_diag, self._w_i_diag, self._w_o_diag = (
                self.add_variable(name, shape=[units], initializer=self._initializer)
                for name in ("w_f_diag", "w_i_diag", "w_o_diag")
            )
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(
                f"projection/{_WEIGHTS_VARIABLE_NAME}",
                shape=[units, self._num_proj],
                initializer=self._initializer,
                partitioner=self._sharded(self._num_proj_shards),
            )

    def _new_c(self, i, j, f, c_prev):
        sigmoid = math_ops.sigmoid
        if self._use_peepholes:
            forget = sigmoid(f + self._forget_bias + self._w_f_diag * c_prev)
            keep_in = sigmoid(i + self._w_i_diag * c_prev)
        else:
            forget = sigmoid(f + self._forget_bias)
            keep_in = sigmoid(i)
        c = forget * c_prev + keep_in * self._activation(j)
        return c if self._cell_clip is None else _clip(c, self._cell_clip)

    def _new_h(self, o, c):
        if self._use_peepholes:
            o = o + self._w_o_diag * c
        h = math_ops.sigmoid(o) * self._activation(c)
        if self._num_proj is None:
            return h
        h = math_ops.matmul(h, self._proj_kernel)
        return h if self._proj_clip is None else _clip(h, self._proj_clip)

    def call(
        self, inputs: ops.Tensor, state: LSTMStateTuple | ops.Tensor
    ) -> tuple[ops.Tensor, LSTMStateTuple | ops.Tensor]:
        """One LSTM step: ``(h', new_state)``.

        Args:
            inputs: ``[batch_size, input_size]``.
            state: An ``LSTMStateTuple(c, h)``, or ``[c, h]`` concatenated.

        Raises:
            ValueError: if the input depth is not known.
        """
        check_rnn_cell_input_dtypes([inputs, state])
        if inputs.get_shape().with_rank(2).dims[1].value is None:
            raise ValueError("Could not infer input size from inputs.get_shape()[-1]")
        c_prev, h_prev = _lstm_state_parts(
            state, self._state_is_tuple, self._num_units, self._output_size
        )
        lstm_matrix = math_ops.matmul(_concat_inputs_and(inputs, h_prev), self._kernel)
        lstm_matrix = nn_ops.bias_add(lstm_matrix, self._bias)
        i, j, f, o = array_ops.split(value=lstm_matrix, num_or_size_splits=4, axis=1)
        c = self._new_c(i, j, f, c_prev)
        h = self._new_h(o, c)
        return h, _lstm_new_state(c, h, self._state_is_tuple)


class MultiRNNCell(RNNCell):
    """Cells stacked in layers: each layer's output is the next layer's input.

    The state is the tuple of the layers' states; layer ``k`` runs in the
    variable scope ``cell_k`` inside this cell's scope (``multi_rnn_cell``).

    Args:
        cells: The cells, bottom layer first.
        state_is_tuple: If True, the state is a tuple with one entry per
            layer; if False, the layers' states concatenated on axis 1.

    Raises:
        ValueError: if ``cells`` is empty, or a cell has a tuple state and
            ``state_is_tuple`` is False.
        TypeError: if ``cells`` is not a list or tuple.
    """

    def __init__(self, cells: Sequence[RNNCell], state_is_tuple: bool = True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not nest.is_sequence(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        if len({id(cell) for cell in cells}) < len(cells):
            _logger.warning(
                "At least two cells provided to MultiRNNCell are the same object and will "
                "share weights."
            )
        self._cells = cells
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(nest.is_sequence(c.state_size) for c in cells):
            raise ValueError(
                "Some cells return tuples of states, but the flag state_is_tuple is not set.  "
                f"State sizes are: {[c.state_size for c in cells]}"
            )

    @property
    def state_size(self) -> tuple | int:
        """The tuple of the cells' state sizes (their sum if not ``state_is_tuple``)."""
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self) -> int | tensor_shape.TensorShape:
        """The last cell's output size."""
        return self._cells[-1].output_size

    def zero_state(self, batch_size: Any, dtype: dtypes.DType) -> tuple | ops.Tensor:
        """The cells' zero states (a tuple, or concatenated if not ``state_is_tuple``).

        Args:
            batch_size: An int or a scalar int32 tensor.
            dtype: The dtype of the state.
        """
        with ops.name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    @property
    def trainable_weights(self) -> list:
        """The trainable variables of every cell, bottom layer first."""
        if not self.trainable:
            return []
        return [w for cell in self._cells for w in getattr(cell, "trainable_weights", [])]

    @property
    def non_trainable_weights(self) -> list:
        """The cells' other variables (all of them if this cell is not trainable)."""
        weights = [w for cell in self._cells for w in getattr(cell, "non_trainable_weights", [])]
        if self.trainable:
            return weights
        trainable = [w for cell in self._cells for w in getattr(cell, "trainable_weights", [])]
        return trainable + weights

    def _layer_state(self, state, i: int, position: int):
        """Layer ``i``'s state and the column where the next one starts."""
        cell = self._cells[i]
        if self._state_is_tuple:
            if not nest.is_sequence(state):
                raise ValueError(
                    f"Expected state to be a tuple of length {len(self.state_size)}, "
                    f"but received: {state}"
                )
            return state[i], position
        layer = array_ops.slice(state, [0, position], [-1, cell.state_size])
        return layer, position + cell.state_size

    def call(self, inputs: ops.Tensor, state: tuple | ops.Tensor) -> tuple[ops.Tensor, Any]:
        """Runs the layers in order; returns the top output and the layers' new states.

        Args:
            inputs: ``[batch_size, input_size]``.
            state: The tuple of the layers' states (or their concatenation).

        Raises:
            ValueError: if ``state_is_tuple`` and ``state`` is not a tuple.
        """
        position = 0
        current = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with vs.variable_scope(f"cell_{i}"):
                layer_state, position = self._layer_state(state, i, position)
                current, new_state = cell(current, layer_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return current, tuple(new_states)
        return current, array_ops.concat(new_states, 1)


class _RNNCellWrapper(RNNCell):
    """A cell around another cell: the same sizes, state and variables, plus one thing.

    Calling the wrapper calls the wrapped cell's ``__call__`` directly, so
    the variables are the wrapped cell's, named as if it were not wrapped
    (``rnn/basic_lstm_cell/kernel``).

    Args:
        cell: The cell to wrap.
        name: The wrapper's name.

    Raises:
        TypeError: if ``cell`` is not an RNN cell.
    """

    def __init__(self, cell: RNNCell, name: str | None = None, **kwargs: Any):
        super().__init__(name=name, **kwargs)
        assert_like_rnncell("cell", cell)
        self.cell = cell

    @property
    def wrapped_cell(self) -> RNNCell:
        """The cell inside."""
        return self.cell

    @property
    def state_size(self) -> Any:
        """The wrapped cell's state size."""
        return self.cell.state_size

    @property
    def output_size(self) -> Any:
        """The wrapped cell's output size."""
        return self.cell.output_size

    @property
    def trainable_weights(self) -> list:
        """The wrapped cell's trainable variables."""
        return list(getattr(self.cell, "trainable_weights", []))

    @property
    def non_trainable_weights(self) -> list:
        """The wrapped cell's other variables."""
        return list(getattr(self.cell, "non_trainable_weights", []))

    def zero_state(self, batch_size: Any, dtype: dtypes.DType) -> Any:
        """The wrapped cell's zero state.

        Args:
            batch_size: An int or a scalar int32 tensor.
            dtype: The dtype of the state.
        """
        with ops.name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            return self.cell.zero_state(batch_size, dtype)

    def __call__(
        self, inputs: Any, state: Any, scope: str | vs.VariableScope | None = None
    ) -> tuple[Any, Any]:
        """Runs the wrapped cell (with the wrapper's addition); returns ``(output, new_state)``.

        Args:
            inputs: The wrapped cell's inputs.
            state: The wrapped cell's state.
            scope: Passed to the wrapped cell.
        """
        return self._call_wrapped_cell(inputs, state, self.cell.__call__, scope=scope)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        raise NotImplementedError("Abstract method")


def _default_dropout_state_filter_visitor(substate: Any) -> Any:
    """Drop out every part of a state but an LSTM's memory ``c`` (Gal and Ghahramani)."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _keep_prob(prob: Any, attr: str) -> float | ops.Tensor:
    """A keep probability as a float when it is known, else as a tensor.

    Raises:
        ValueError: if it is known and outside ``[0, 1]``.
    """
    tensor_prob = ops.convert_to_tensor(prob)
    const_prob = tensor_util.constant_value(tensor_prob)
    if const_prob is None:
        return tensor_prob
    if const_prob < 0 or const_prob > 1:
        # TF formats the value with %d.
        raise ValueError(f"Parameter {attr} must be between 0 and 1: {int(const_prob):d}")
    return float(const_prob)


def _should_dropout(p: float | ops.Tensor) -> bool:
    return not isinstance(p, float) or p < 1


class DropoutWrapper(_RNNCellWrapper):
    """Dropout on the inputs, outputs and new state of a cell, a new mask at every step.

    Each keep probability that is not 1 adds a ``tf.nn.dropout`` (with
    ``rate = 1 - keep_prob``): on the inputs before the cell, on its output
    and on its new state after. By default the memory ``c`` of an
    ``LSTMStateTuple`` is never dropped (``dropout_state_filter_visitor``
    chooses otherwise). With ``seed``, each dropout gets its own op seed
    derived from it (TF's: the first 8 hex digits of the MD5 of the seed
    followed by ``input_0``, ``state_1``, ...).

    Args:
        cell: The cell to wrap.
        input_keep_prob: The probability of keeping each input (a float or
            a scalar tensor).
        output_keep_prob: The probability of keeping each output.
        state_keep_prob: The probability of keeping each state entry.
        variational_recurrent: One mask for all steps (not in minitf).
        input_size: The input depths, for ``variational_recurrent``.
        dtype: The dtype, for ``variational_recurrent``.
        seed: The seed the dropouts' seeds are derived from.
        dropout_state_filter_visitor: A function of a part of the state
            returning True (drop out all of it), False (none of it), or a
            one-level structure of bools.
        name: The wrapper's name.

    Raises:
        TypeError: if ``cell`` is not an RNN cell, or the visitor is not callable.
        ValueError: if a known keep probability is outside ``[0, 1]``, or
            ``variational_recurrent`` has no ``dtype``.
        NotImplementedError: for ``variational_recurrent=True``.
    """

    def __init__(
        self,
        cell: RNNCell,
        input_keep_prob: Any = 1.0,
        output_keep_prob: Any = 1.0,
        state_keep_prob: Any = 1.0,
        variational_recurrent: bool = False,
        input_size: Any = None,
        dtype: dtypes.DType | None = None,
        seed: int | None = None,
        dropout_state_filter_visitor: Callable | None = None,
        name: str | None = None,
    ):
        super().__init__(cell, name=name, dtype=dtype)
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        self._dropout_state_filter = (
            dropout_state_filter_visitor or _default_dropout_state_filter_visitor
        )
        with ops.name_scope("DropoutWrapperInit"):
            self._input_keep_prob = _keep_prob(input_keep_prob, "input_keep_prob")
            self._state_keep_prob = _keep_prob(state_keep_prob, "state_keep_prob")
            self._output_keep_prob = _keep_prob(output_keep_prob, "output_keep_prob")
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            raise NotImplementedError(
                "DropoutWrapper(variational_recurrent=True) is not implemented in minitf: "
                "it draws a new dropout mask at every step."
            )
        self._input_size = input_size
        self._seed = seed

    def _gen_seed(self, salt_prefix: str, index: int) -> int | None:
        """The op seed of dropout number ``index`` of ``salt_prefix`` (TF's recipe)."""
        if self._seed is None:
            return None
        string = f"{self._seed}{salt_prefix}_{index:d}".encode()
        return int(hashlib.md5(string).hexdigest()[:8], 16) & 0x7FFFFFFF

    def _dropout(self, values, salt_prefix: str, keep_prob, shallow=None):
        """Dropout on each part of ``values`` that ``shallow`` marks True (default: all)."""
        counter = itertools.count()

        def dropout(do_dropout, value):
            index = next(counter)
            if isinstance(do_dropout, bool) and not do_dropout:
                return value
            seed = self._gen_seed(salt_prefix, index)
            return nn_ops.dropout(value, rate=1.0 - keep_prob, seed=seed)

        shallow = values if shallow is None else shallow
        return nest.map_structure_up_to(shallow, dropout, shallow, values)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        """Dropout on the inputs, the wrapped cell, dropout on its state and output."""
        if _should_dropout(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._input_keep_prob)
        output, new_state = cell_call_fn(inputs, state, **kwargs)
        if _should_dropout(self._state_keep_prob):
            shallow = nest.get_traverse_shallow_structure(self._dropout_state_filter, new_state)
            new_state = self._dropout(new_state, "state", self._state_keep_prob, shallow)
        if _should_dropout(self._output_keep_prob):
            output = self._dropout(output, "output", self._output_keep_prob)
        return output, new_state


class ResidualWrapper(_RNNCellWrapper):
    """A cell whose output is its input plus the wrapped cell's output (a residual connection).

    Args:
        cell: The cell to wrap (its output must have the input's shape).
        residual_fn: ``(inputs, outputs) -> outputs``; default: their sum,
            part by part.
        name: The wrapper's name.

    Raises:
        TypeError: if ``cell`` is not an RNN cell.
    """

    def __init__(self, cell: RNNCell, residual_fn: Callable | None = None, name: str | None = None):
        super().__init__(cell, name=name)
        self._residual_fn = residual_fn

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        """The wrapped cell, then ``residual_fn(inputs, outputs)``.

        Raises:
            TypeError: if inputs and outputs nest differently in type.
            ValueError: if they nest differently, or a part's shapes differ.
        """
        outputs, new_state = cell_call_fn(inputs, state, **kwargs)

        def default_residual_fn(inputs, outputs):
            nest.assert_same_structure(inputs, outputs)
            for inp, out in zip(nest.flatten(inputs), nest.flatten(outputs)):
                inp.get_shape().assert_is_compatible_with(out.get_shape())
            return nest.map_structure(lambda inp, out: inp + out, inputs, outputs)

        return (self._residual_fn or default_residual_fn)(inputs, outputs), new_state


class DeviceWrapper(_RNNCellWrapper):
    """A cell whose ops (and zero state) are built under ``tf.device(device)``.

    Args:
        cell: The cell to wrap.
        device: A device string or device function.
        name: The wrapper's name.

    Raises:
        TypeError: if ``cell`` is not an RNN cell.
    """

    def __init__(self, cell: RNNCell, device: Any, name: str | None = None):
        super().__init__(cell, name=name)
        self._device = device

    def zero_state(self, batch_size: Any, dtype: dtypes.DType) -> Any:
        """The wrapped cell's zero state, built on the device.

        Args:
            batch_size: An int or a scalar int32 tensor.
            dtype: The dtype of the state.
        """
        with ops.name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            with ops.device(self._device):
                return self.cell.zero_state(batch_size, dtype)

    def _call_wrapped_cell(self, inputs, state, cell_call_fn, **kwargs):
        """The wrapped cell, built on the device."""
        with ops.device(self._device):
            return cell_call_fn(inputs, state, **kwargs)
