"""The base of every RNN cell: ``RNNCell`` and ``LayerRNNCell``, and how a cell names its variables.

A cell is one step of a recurrent network: ``output, new_state =
cell(inputs, state)``. The functions that unroll a network over time
(`minitf.ops.nn.rnn`) call the same cell once per time step, and every call
must use the same weights. TF1 gets this from its layers machinery
(``tf.layers.Layer``), and minitf keeps exactly its rules, because they decide
the variable names that checkpoints and TF code refer to:

- On its first call a cell opens a variable scope named after its class in
  snake case (``basic_lstm_cell``), made unique in the enclosing scope
  (``basic_lstm_cell_1`` for a second cell), or named ``scope=`` if given,
  and remembers it. Inside ``static_rnn`` that gives ``rnn/basic_lstm_cell``.
- ``LayerRNNCell`` subclasses create their variables in ``build``, called
  once on the first call with the input shape, so the kernel's first
  dimension (input depth + units) is known. Every later call re-enters the
  remembered scope with ``reuse=True``: the variables are found, not created.
- ``RNNCell`` subclasses that call ``tf.get_variable`` in ``call`` themselves
  (the pre-1.4 style, and `MultiRNNCell`) get the same remembered scope and
  the same reuse on later calls.
- The variables a cell created or found are its ``weights``
  (``trainable_weights`` and ``non_trainable_weights``).

The cells themselves are in `minitf.ops.nn.rnn_cell_impl`.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops, tensor_shape, tensor_util
from minitf.layers.base import Layer
from minitf.ops.array import array_ops, constant_op
from minitf.ops.state import variable_scope as vs
from minitf.util import nest


def _hasattr(obj: Any, name: str) -> bool:
    try:
        getattr(obj, name)
    except AttributeError:
        return False
    return True


def assert_like_rnncell(cell_name: str, cell: Any) -> None:
    """Checks that ``cell`` has what an RNN cell needs, as TF does before unrolling it.

    Args:
        cell_name: The argument's name, for the message.
        cell: The object to check.

    Raises:
        TypeError: naming every missing piece (``output_size``, ``state_size``,
            ``zero_state``, being callable).
    """
    checks = [
        (_hasattr(cell, "output_size"), "'output_size' property is missing"),
        (_hasattr(cell, "state_size"), "'state_size' property is missing"),
        (
            _hasattr(cell, "get_initial_state") or _hasattr(cell, "zero_state"),
            "either 'zero_state' or 'get_initial_state' method is required",
        ),
        (callable(cell), "is not callable"),
    ]
    missing = [message for ok, message in checks if not ok]
    if missing:
        raise TypeError(
            f"The argument {cell_name!r} ({cell}) is not an RNNCell: {', '.join(missing)}."
        )


def _as_size_vector(size, what: str):
    """``(tensor or None, static dims or None)`` for a batch size or a state size."""
    if isinstance(size, ops.Tensor):
        static = tensor_util.constant_value(size)
        if size.get_shape().ndims == 0:
            size = array_ops.expand_dims(size, 0)
        elif size.get_shape().ndims != 1:
            raise ValueError(
                f"{what} tensor must be either a scalar or vector, but saw tensor: {size}"
            )
        return size, None if static is None else [int(d) for d in static.reshape(-1)]
    shape = tensor_shape.TensorShape(size)
    dims = shape.as_list() if shape.ndims is not None else None
    tensor = constant_op.constant(dims, dtype=dtypes.int32) if shape.is_fully_defined() else None
    return tensor, dims


def concat_sizes(prefix: Any, suffix: Any, static: bool = False) -> ops.Tensor | list | None:
    """``prefix + suffix`` as a shape: an int32 vector tensor, or a static list if ``static``.

    Either part may be an int, a `TensorShape`, a list or an int32 tensor
    (TF's ``rnn_cell_impl._concat``): it is how a zero state or a zero output
    of shape ``[batch_size] + state_size`` is made when the batch size is
    only known at run time.

    Args:
        prefix: Usually the batch size.
        suffix: Usually a cell's state or output size.
        static: Return a Python list (``None`` for unknown dimensions).

    Raises:
        ValueError: if a tensor part is not a scalar or vector, or a part is
            unknown and a tensor is asked for.
    """
    p, p_static = _as_size_vector(prefix, "prefix")
    s, s_static = _as_size_vector(suffix, "suffix")
    if static:
        shape = tensor_shape.TensorShape(p_static).concatenate(s_static)
        return shape.as_list() if shape.ndims is not None else None
    if p is None or s is None:
        raise ValueError(f"Provided a prefix or suffix of None: {prefix} and {suffix}")
    return array_ops.concat([p, s], 0)


def zero_state_tensors(state_size: Any, batch_size: Any, dtype: dtypes.DType) -> Any:
    """Zeros of shape ``[batch_size] + s`` for every size ``s`` in the structure ``state_size``.

    Args:
        state_size: An int, a `TensorShape`, or a nested tuple of them.
        batch_size: An int or a scalar int32 tensor.
        dtype: The dtype of the zeros.
    """

    def zeros(size):
        tensor = array_ops.zeros(concat_sizes(batch_size, size), dtype=dtype)
        tensor.set_shape(concat_sizes(batch_size, size, static=True))
        return tensor

    return nest.map_structure(zeros, state_size)


def check_supported_dtypes(dtype: dtypes.DType | None) -> None:
    """Checks that an RNN cell can compute in ``dtype`` (a float or complex type).

    Args:
        dtype: A dtype, or None (nothing to check).

    Raises:
        ValueError: for any other dtype (tanh and sigmoid need floats).
    """
    if dtype is None:
        return
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_complex):
        raise ValueError(f"RNN cell only supports floating point inputs, but saw dtype: {dtype}")


def check_rnn_cell_input_dtypes(inputs: Any) -> None:
    """`check_supported_dtypes` for every tensor of the structure ``inputs``.

    Args:
        inputs: A tensor or a nested structure of tensors (inputs or state).

    Raises:
        ValueError: if one of them is not a float or complex tensor.
    """
    for tensor in nest.flatten(inputs):
        check_supported_dtypes(tensor.dtype)


class RNNCell(Layer):
    """An RNN cell: ``output, new_state = cell(inputs, state)``, one time step.

    Subclasses define ``state_size``, ``output_size`` and
    ``call(inputs, state)``; variables are made either in ``build`` (see
    `LayerRNNCell`) or with ``tf.get_variable`` inside ``call``. Calling the
    cell runs ``call`` inside the cell's own variable scope, chosen on the
    first call and reused on every later one (see the module docstring).

    Args:
        trainable: Whether the cell's variables are trainable.
        name: The cell's name, and the name of its variable scope (made
            unique in the enclosing scope); default: the class name in
            snake case.
        dtype: The dtype of the cell's variables; default: the inputs' dtype.
        _reuse: True to find existing variables rather than create them.
        _scope: A variable scope (name or `VariableScope`) to use for the cell.
    """

    def __init__(
        self,
        trainable: bool = True,
        name: str | None = None,
        dtype: dtypes.DType | None = None,
        _reuse: bool | None = None,
        _scope: str | vs.VariableScope | None = None,
    ):
        super().__init__(trainable=trainable, name=name, dtype=dtype, _reuse=_reuse, _scope=_scope)
        self._rnncell_scope = None

    @property
    def state_size(self) -> Any:
        """The size(s) of the state: an int, a `TensorShape`, or a nested tuple of them."""
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self) -> int | tensor_shape.TensorShape:
        """The size of the output: an int or a `TensorShape`."""
        raise NotImplementedError("Abstract method")

    def build(self, inputs_shape: tensor_shape.TensorShape) -> None:
        """Creates the cell's variables; this base class has none.

        Args:
            inputs_shape: The `TensorShape` of the first call's inputs.
        """
        del inputs_shape

    def call(self, inputs: ops.Tensor, state: Any) -> tuple[ops.Tensor, Any]:
        """One step of the cell: ``(output, new_state)``; subclasses define it.

        Args:
            inputs: A ``[batch_size, input_size]`` tensor.
            state: The state, shaped like ``state_size``.
        """
        raise NotImplementedError("Abstract method")

    def zero_state(self, batch_size: Any, dtype: dtypes.DType) -> Any:
        """Zero-filled state: shape ``[batch_size, s]`` for each ``s`` in ``state_size``.

        Args:
            batch_size: An int or a scalar int32 tensor.
            dtype: The dtype of the state.
        """
        with ops.name_scope(f"{type(self).__name__}ZeroState", values=[batch_size]):
            return zero_state_tensors(self.state_size, batch_size, dtypes.as_dtype(dtype))

    def get_initial_state(
        self, inputs: Any = None, batch_size: Any = None, dtype: dtypes.DType | None = None
    ) -> Any:
        """The zero state, with the batch size and dtype taken from ``inputs`` if given.

        Args:
            inputs: A tensor whose first dimension is the batch size (optional).
            batch_size: The batch size, if ``inputs`` is not given.
            dtype: The dtype, if ``inputs`` is not given.

        Raises:
            ValueError: if ``inputs`` disagrees with ``batch_size`` or ``dtype``,
                or neither gives them.
        """
        if inputs is not None:
            inputs = ops.convert_to_tensor(inputs, name="inputs")
            static_batch = tensor_shape.dimension_value(inputs.get_shape()[0])
            if batch_size is not None and not isinstance(batch_size, ops.Tensor):
                if static_batch != batch_size:
                    raise ValueError(
                        "batch size from input tensor is different from the input param. "
                        f"Input tensor batch: {static_batch}, batch_size: {batch_size}"
                    )
            if dtype is not None and inputs.dtype != dtypes.as_dtype(dtype):
                raise ValueError(
                    "dtype from input tensor is different from the input param. "
                    f"Input tensor dtype: {inputs.dtype}, dtype: {dtype}"
                )
            batch_size = static_batch or array_ops.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(
                "batch_size and dtype cannot be None while constructing initial state: "
                f"batch_size={batch_size}, dtype={dtype}"
            )
        return self.zero_state(batch_size, dtype)

    def __call__(
        self, inputs: Any, state: Any, scope: str | vs.VariableScope | None = None
    ) -> tuple[ops.Tensor, Any]:
        """Runs the cell on ``inputs`` from ``state``; returns ``(output, new_state)``.

        Args:
            inputs: A ``[batch_size, input_size]`` tensor.
            state: A ``[batch_size, state_size]`` tensor, or a structure of
                such tensors shaped like ``state_size``.
            scope: The variable scope to use (first call only); default: the
                current one on the first call.
        """
        if scope is not None:
            with vs.variable_scope(scope, custom_getter=self._rnn_get_variable) as opened:
                return self._call_in_scope(inputs, (state,), {}, opened)
        if self._rnncell_scope is None:
            self._rnncell_scope = vs.get_variable_scope()
        with vs.variable_scope(self._rnncell_scope, custom_getter=self._rnn_get_variable):
            return self._call_in_scope(inputs, (state,), {}, None)

    def _rnn_get_variable(self, getter, *args, **kwargs):
        """A custom getter that records each variable ``call`` gets as one of the cell's."""
        variable = getter(*args, **kwargs)
        self._track(variable)
        return variable


class LayerRNNCell(RNNCell):
    """An `RNNCell` that creates its variables in ``build`` (TF's layer-style cells).

    ``build(inputs_shape)`` runs once, on the first call, inside the cell's
    variable scope and with the input shape known; ``call`` then only uses
    the variables. Unlike a plain `RNNCell`, calling it opens no extra
    variable scope around the cell's own.
    """

    _input_ndim = 2

    def __call__(
        self, inputs: Any, state: Any, scope: str | vs.VariableScope | None = None
    ) -> tuple[ops.Tensor, Any]:
        """Runs the cell on ``inputs`` from ``state``; returns ``(output, new_state)``.

        Args:
            inputs: A ``[batch_size, input_size]`` tensor.
            state: The state, shaped like ``state_size``.
            scope: The variable scope to use (first call only).
        """
        return self._call_in_scope(inputs, (state,), {}, scope)


def build_depth(cell: RNNCell, inputs_shape: tensor_shape.TensorShape | list) -> int:
    """The input depth a cell's ``build`` needs, once its dtype is checked (TF's checks).

    Args:
        cell: The cell being built.
        inputs_shape: The `TensorShape` of the inputs.

    Raises:
        ValueError: if the depth is not known, or the cell's dtype is not a
            float or complex type.
    """
    shape = tensor_shape.as_shape(inputs_shape)
    depth = None if shape.ndims is None else tensor_shape.dimension_value(shape[-1])
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {shape}")
    check_supported_dtypes(cell.dtype)
    return depth
