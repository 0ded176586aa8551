"""Recurrent networks: unrolled (``static_rnn``) or looped (``dynamic_rnn``), and bidirectional.

``static_rnn`` calls the cell once per element of a Python list of inputs,
so a sequence of length T becomes T copies of the cell's ops in the graph,
all reading the same variables (the cell's scope is reused from the second
step on). That is the whole idea of an unrolled RNN, and the graph shows it.

With ``sequence_length``, each example of the batch stops at its own
length: from step ``sequence_length[b]`` on, row ``b`` of the output is
zero and row ``b`` of the state is copied through unchanged, so the final
state is each sequence's state at its last real step. This is done with
``Select`` ops (``tf.where`` on a ``[batch]`` condition) after each step,
the way TF does it; TF's ``static_rnn`` also wraps each step in two
``tf.cond`` so that steps past the longest sequence are not computed at
all, which changes the time spent, not the values.

``dynamic_rnn`` builds the cell once, inside a ``tf.while_loop`` over time
that reads each step's input from a ``TensorArray`` and writes its output to
another (TF's ``_dynamic_rnn_loop``); it shares `_rnn_step` with
``static_rnn``, so both compute the same values with the same variables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.array import array_ops, constant_op
from minitf.ops.control_flow.while_loop import while_loop
from minitf.ops.data_flow.tensor_array_ops import TensorArray
from minitf.ops.debugging import logging_ops
from minitf.ops.math import math_ops
from minitf.ops.nn.rnn_cell_base import RNNCell, assert_like_rnncell, concat_sizes
from minitf.ops.state import variable_scope as vs
from minitf.util import nest

__all__ = [
    "static_rnn",
    "static_bidirectional_rnn",
    "dynamic_rnn",
    "bidirectional_dynamic_rnn",
]


def _check_inputs_sequence(inputs) -> None:
    if not nest.is_sequence(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")


def _first_input(inputs) -> ops.Tensor:
    first = inputs
    while nest.is_sequence(first):
        first = first[0]
    return ops.convert_to_tensor(first)


def _static_batch_dimension(inputs) -> tensor_shape.Dimension:
    """The batch dimension all inputs agree on; every input depth must be known.

    Raises:
        ValueError: if an input has rank < 2 or an unknown depth, or the
            batch sizes disagree.
    """
    first = _first_input(inputs)
    if first.get_shape().ndims == 1:
        return first.get_shape()[0]
    batch = first.get_shape().with_rank_at_least(2)[0]
    for flat_input in nest.flatten(inputs):
        shape = ops.convert_to_tensor(flat_input).get_shape().with_rank_at_least(2)
        batch = batch.merge_with(shape[0])
        for i, size in enumerate(shape[1:].dims):
            if size.value is None:
                raise ValueError(
                    f"Input size (dimension {i} of inputs) must be accessible via shape "
                    "inference, but saw value None."
                )
    return batch


def _initial_state(cell, initial_state, dtype, batch_size):
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If no initial_state is provided, dtype must be specified")
    if getattr(cell, "get_initial_state", None) is not None:
        return cell.get_initial_state(inputs=None, batch_size=batch_size, dtype=dtype)
    return cell.zero_state(batch_size, dtype)


def _infer_state_dtype(explicit_dtype, state) -> dtypes.DType:
    """``explicit_dtype`` if given, else the one dtype of every tensor of ``state``.

    Raises:
        ValueError: if the state's tensors have different dtypes.
    """
    if explicit_dtype is not None:
        return dtypes.as_dtype(explicit_dtype)
    inferred = {tensor.dtype for tensor in nest.flatten(state)}
    if len(inferred) != 1:
        raise ValueError(
            f"State has tensors of different inferred_dtypes. Unable to infer a "
            f"single representative dtype. Dtypes received: {sorted(inferred, key=str)}"
        )
    return inferred.pop()


def _zero_output(cell, batch_size, static_batch, dtype):
    """Zeros shaped like the cell's output (a structure if ``output_size`` is one)."""

    def zeros(size):
        output = array_ops.zeros(concat_sizes(batch_size, size), dtype)
        output.set_shape(concat_sizes(static_batch, size, static=True))
        return output

    return nest.map_structure(zeros, cell.output_size)


def _rnn_step(
    time: int | ops.Tensor,
    sequence_length: ops.Tensor,
    zero_output: Any,
    state: Any,
    call_cell: Callable[[], tuple],
) -> tuple:
    """One step that stops at each example's length: zero output, state copied through.

    Row ``b`` of the result is the cell's new output and state while
    ``time < sequence_length[b]``, and ``zero_output`` and the old state
    after (TF's ``_rnn_step`` with ``skip_conditionals=True``).

    Args:
        time: The step number: a Python int (`static_rnn`) or an int32
            scalar tensor (`dynamic_rnn`'s loop).
        sequence_length: An int32 ``[batch_size]`` tensor.
        zero_output: Zeros shaped like the output (a structure of tensors).
        state: The state before the step (a structure of tensors).
        call_cell: A function returning the cell's ``(output, new_state)``.

    Returns:
        ``(output, new_state)``, shaped like ``zero_output`` and ``state``.
    """
    new_output, new_state = call_cell()
    nest.assert_same_structure(zero_output, new_output)
    nest.assert_same_structure(state, new_state)
    copy_cond = time >= sequence_length

    def copy_through(old, new):
        if old.get_shape().ndims == 0:
            return new
        with ops.colocate_with(new):
            result = array_ops.where(copy_cond, old, new)
        result.set_shape(old.get_shape())
        return result

    return (
        nest.map_structure(copy_through, zero_output, new_output),
        nest.map_structure(copy_through, state, new_state),
    )


def _sequence_length_vector(sequence_length) -> ops.Tensor:
    sequence_length = ops.convert_to_tensor(sequence_length, name="sequence_length")
    if sequence_length.get_shape().ndims not in (None, 1):
        raise ValueError("sequence_length must be a vector of length batch_size")
    return math_ops.cast(sequence_length, dtypes.int32)


def static_rnn(
    cell: RNNCell,
    inputs: list,
    initial_state: Any = None,
    dtype: dtypes.DType | None = None,
    sequence_length: Any = None,
    scope: str | vs.VariableScope | None = None,
) -> tuple[list, Any]:
    """Unrolls ``cell`` over the list ``inputs``: one copy of the cell per time step.

    The same as::

        state = cell.zero_state(batch_size, dtype)
        outputs = []
        for input_ in inputs:
            output, state = cell(input_, state)
            outputs.append(output)
        return outputs, state

    inside the variable scope ``scope`` (default ``"rnn"``), reused from the
    second step on. With ``sequence_length``, example ``b`` stops after
    ``sequence_length[b]`` steps: its later outputs are zero and its state is
    copied through, so the returned state is the state at its last step.

    Args:
        cell: An `RNNCell` (anything with ``state_size``, ``output_size``,
            ``zero_state`` and ``__call__``).
        inputs: A list of T tensors ``[batch_size, input_size]`` (or of
            nested structures of such tensors).
        initial_state: The state before the first step; default: the cell's
            zero state (then ``dtype`` is needed).
        dtype: The dtype of the zero initial state and of the zero outputs.
        sequence_length: Optional int32/int64 ``[batch_size]`` vector of
            lengths, each in ``[0, T]``.
        scope: A variable scope (name or `VariableScope`) for the network.

    Returns:
        ``(outputs, state)``: the list of T outputs and the final state.

    Raises:
        TypeError: if ``cell`` is not an RNN cell or ``inputs`` is not a sequence.
        ValueError: if ``inputs`` is empty, an input's depth is unknown,
            there is neither ``initial_state`` nor ``dtype``, or
            ``sequence_length`` is not a vector.
    """
    assert_like_rnncell("cell", cell)
    _check_inputs_sequence(inputs)
    outputs = []
    with vs.variable_scope(scope or "rnn") as varscope:
        # Read each variable on the device of the op that reads it (TF's choice).
        if varscope.caching_device is None:
            varscope.set_caching_device(lambda op: op.device)
        static_batch = _static_batch_dimension(inputs)
        batch_size = static_batch.value or array_ops.shape(_first_input(inputs))[0]
        state = _initial_state(cell, initial_state, dtype, batch_size)
        if sequence_length is not None:
            sequence_length = _sequence_length_vector(sequence_length)
            zero_output = _zero_output(
                cell, batch_size, static_batch.value, _infer_state_dtype(dtype, state)
            )
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()

            def call_cell(input_=input_, state=state):
                return cell(input_, state)

            if sequence_length is not None:
                output, state = _rnn_step(time, sequence_length, zero_output, state, call_cell)
            else:
                output, state = call_cell()
            outputs.append(output)
        return outputs, state


def _reverse_seq(input_seq: list, lengths) -> list:
    """The list ``input_seq`` reversed in time; per example up to its length if ``lengths``.

    With lengths, example ``b``'s first ``lengths[b]`` steps are reversed and
    the padding after them stays where it is (``tf.reverse_sequence`` on the
    stacked ``[time, batch, ...]`` tensor).
    """
    if lengths is None:
        return list(reversed(input_seq))
    flat_steps = [nest.flatten(step) for step in input_seq]
    flat_results = [[] for _ in input_seq]
    for sequence in zip(*flat_steps):
        shape = tensor_shape.unknown_shape(rank=sequence[0].get_shape().ndims)
        for step in sequence:
            shape = shape.merge_with(step.get_shape())
        reversed_steps = array_ops.unstack(
            array_ops.reverse_sequence(array_ops.stack(sequence), lengths, 0, 1)
        )
        for step, flat_result in zip(reversed_steps, flat_results):
            step.set_shape(shape)
            flat_result.append(step)
    return [nest.pack_sequence_as(step, flat) for step, flat in zip(input_seq, flat_results)]


def static_bidirectional_rnn(
    cell_fw: RNNCell,
    cell_bw: RNNCell,
    inputs: list,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: dtypes.DType | None = None,
    sequence_length: Any = None,
    scope: str | vs.VariableScope | None = None,
) -> tuple[list, Any, Any]:
    """A forward and a backward `static_rnn` over the same inputs, outputs concatenated.

    The forward network runs in scope ``<scope>/fw``, the backward one in
    ``<scope>/bw`` (``scope`` defaults to ``"bidirectional_rnn"``) over the
    inputs reversed in time, each example up to its own length when
    ``sequence_length`` is given. Output ``t`` is
    ``concat([forward output t, backward output t], 1)``.

    Args:
        cell_fw: The forward cell.
        cell_bw: The backward cell.
        inputs: A list of T tensors ``[batch_size, input_size]``.
        initial_state_fw: The forward initial state (default: zeros).
        initial_state_bw: The backward initial state (default: zeros).
        dtype: The dtype of zero initial states.
        sequence_length: Optional ``[batch_size]`` vector of lengths.
        scope: A variable scope for both networks.

    Returns:
        ``(outputs, output_state_fw, output_state_bw)``.

    Raises:
        TypeError: if a cell is not an RNN cell or ``inputs`` is not a sequence.
        ValueError: if ``inputs`` is empty (and as `static_rnn`).
    """
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    _check_inputs_sequence(inputs)
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope
            )
        with vs.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            reversed_bw, state_bw = static_rnn(
                cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length, scope=bw_scope
            )
    output_bw = _reverse_seq(reversed_bw, sequence_length)
    outputs = [
        nest.pack_sequence_as(
            fw, [array_ops.concat([f, b], 1) for f, b in zip(nest.flatten(fw), nest.flatten(bw))]
        )
        for fw, bw in zip(output_fw, output_bw)
    ]
    return outputs, state_fw, state_bw


def _transpose_batch_time(x: ops.Tensor) -> ops.Tensor:
    """``x`` with its first two axes swapped (``[batch, time, ...]`` <-> ``[time, batch, ...]``).

    A tensor of rank below 2 is returned as it is; the static shape is kept.

    Args:
        x: A tensor.
    """
    static = x.get_shape()
    if static.ndims is not None and static.ndims < 2:
        return x
    perm = array_ops.concat(([1, 0], math_ops.range(2, array_ops.rank(x))), axis=0)
    x_t = array_ops.transpose(x, perm)
    # An input of unknown rank fails here, as in TF (``dims`` is None).
    x_t.set_shape(
        tensor_shape.TensorShape([static.dims[1].value, static.dims[0].value]).concatenate(
            static[2:]
        )
    )
    return x_t


def _best_effort_input_batch_size(flat_input: list) -> int | ops.Tensor:
    """The static batch size of the time-major inputs if one is known, else a tensor.

    Args:
        flat_input: Tensors ``[max_time, batch_size, ...]``.

    Raises:
        ValueError: if an input of known rank has rank below 2.
    """
    for input_ in flat_input:
        shape = input_.get_shape()
        if shape.ndims is None:
            continue
        if shape.ndims < 2:
            raise ValueError(f"Expected input tensor {input_} to have rank at least 2")
        if shape.dims[1].value is not None:
            return shape.dims[1].value
    return array_ops.shape(flat_input[0])[1]


def _dynamic_sequence_length(sequence_length) -> ops.Tensor:
    """``sequence_length`` as int32 (``<scope>/sequence_length``), checked to be a vector.

    Raises:
        ValueError: if it is not a vector.
    """
    sequence_length = math_ops.cast(sequence_length, dtypes.int32)
    if sequence_length.get_shape().ndims not in (None, 1):
        raise ValueError(
            "sequence_length must be a vector of length batch_size, but saw shape: "
            f"{sequence_length.get_shape()}"
        )
    return array_ops.identity(sequence_length, name="sequence_length")


def _checked_sequence_length(sequence_length: ops.Tensor, batch_size) -> ops.Tensor:
    """``sequence_length`` after an ``Assert`` that it has ``batch_size`` entries (at run time)."""
    x_shape = array_ops.shape(sequence_length)
    packed_shape = array_ops.stack([batch_size])
    check = logging_ops.Assert(
        math_ops.reduce_all(math_ops.equal(x_shape, packed_shape)),
        [
            f"Expected shape for Tensor {sequence_length.name} is ",
            packed_shape,
            " but saw shape: ",
            x_shape,
        ],
    )
    with ops.control_dependencies([check]):
        return array_ops.identity(sequence_length, name="CheckSeqLen")


def _in_while_loop() -> bool:
    """True when the graph is being built inside a ``tf.while_loop``."""
    return ops.get_default_graph()._get_control_flow_context() is not None


def dynamic_rnn(
    cell: RNNCell,
    inputs: Any,
    sequence_length: Any = None,
    initial_state: Any = None,
    dtype: dtypes.DType | None = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: str | vs.VariableScope | None = None,
) -> tuple[Any, Any]:
    """Runs ``cell`` over the time axis of ``inputs`` in a ``tf.while_loop``.

    The cell is called once, to build the loop's body; at run time the loop
    reads input ``t`` from a `TensorArray`, runs the cell and writes output
    ``t`` to another one, as many times as the input has steps (a number
    that may be known only when the graph runs). The variables are those
    `static_rnn` makes: ``<scope>/<cell scope>/...`` with ``scope``
    defaulting to ``"rnn"``. With ``sequence_length``, example ``b``'s outputs
    from step ``sequence_length[b]`` on are zero and its state is copied
    through, so the returned state is the one at its last step; the loop
    stops after the longest sequence.

    Args:
        cell: An `RNNCell`.
        inputs: A tensor ``[batch_size, max_time, ...]`` (``[max_time,
            batch_size, ...]`` if ``time_major``), or a nested structure of
            such tensors; the cell gets the same structure at each step.
        sequence_length: Optional int32/int64 ``[batch_size]`` vector of lengths.
        initial_state: The state before the first step; default: the cell's
            zero state (then ``dtype`` is needed).
        dtype: The dtype of the zero initial state and of the outputs.
        parallel_iterations: How many time steps the loop may run at once
            (default 32).
        swap_memory: Accepted as in TF; there is no device memory to swap.
        time_major: Whether ``inputs`` and the outputs have time first.
        scope: A variable scope (name or `VariableScope`) for the network.

    Returns:
        ``(outputs, state)``: the outputs ``[batch_size, max_time,
        output_size]`` (time first if ``time_major``; a structure like
        ``cell.output_size`` if that is one) and the final state.

    Raises:
        TypeError: if ``cell`` is not an RNN cell.
        ValueError: if there is neither ``initial_state`` nor ``dtype``,
            ``sequence_length`` is not a vector, or the inputs have a rank
            below 3, an unknown depth, or disagree on time steps or batch size.
    """
    assert_like_rnncell("cell", cell)
    with vs.variable_scope(scope or "rnn") as varscope:
        # Read each variable where the op that reads it runs, except inside a
        # loop, whose later iterations must see a variable's new value (TF's _should_cache).
        if not _in_while_loop() and varscope.caching_device is None:
            varscope.set_caching_device(lambda op: op.device)
        flat_input = nest.flatten(inputs)
        if not time_major:
            flat_input = [_transpose_batch_time(ops.convert_to_tensor(x)) for x in flat_input]
        else:
            flat_input = [ops.convert_to_tensor(x) for x in flat_input]
        parallel_iterations = parallel_iterations or 32
        if sequence_length is not None:
            sequence_length = _dynamic_sequence_length(sequence_length)
        batch_size = _best_effort_input_batch_size(flat_input)
        state = _dynamic_initial_state(cell, initial_state, dtype, batch_size)
        if sequence_length is not None:
            sequence_length = _checked_sequence_length(sequence_length, batch_size)
        inputs = nest.pack_sequence_as(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(
            cell, inputs, state, parallel_iterations, swap_memory, sequence_length, dtype
        )
        if not time_major:
            outputs = nest.map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _dynamic_initial_state(cell, initial_state, dtype, batch_size):
    if initial_state is None and not dtype:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return _initial_state(cell, initial_state, dtype, batch_size)


def _time_major_shapes(flat_input: list) -> tuple[list, int | None, int | None]:
    """The inputs' static shapes (rank 3 at least) and the time steps and batch size they share.

    Raises:
        ValueError: if an input's rank is below 3 or unknown, its depth is
            unknown, or the inputs disagree on time steps or batch size.
    """
    shapes = [x.get_shape().with_rank_at_least(3) for x in flat_input]
    const_time_steps, const_batch_size = shapes[0].as_list()[:2]
    for shape in shapes:
        if not shape[2:].is_fully_defined():
            raise ValueError(
                "Input size (depth of inputs) must be accessible via shape inference, "
                "but saw value None."
            )
        if shape.dims[0].value != const_time_steps:
            raise ValueError(
                "Time steps is not the same for all the elements in the input in a batch."
            )
        if shape.dims[1].value != const_batch_size:
            raise ValueError("Batch_size is not the same for all the elements in the input.")
    return shapes, const_time_steps, const_batch_size


def _with_flow(ta: TensorArray, flow: ops.Tensor) -> TensorArray:
    """The array of ``ta`` carried by ``flow`` (a loop variable is the flow, not the object)."""
    return TensorArray(dtype=ta.dtype, handle=ta.handle, flow=flow)


def _dynamic_rnn_loop(
    cell, inputs, initial_state, parallel_iterations, swap_memory, sequence_length, dtype
):
    """`dynamic_rnn`'s ``tf.while_loop`` over time-major ``inputs`` (TF's ``_dynamic_rnn_loop``).

    The inputs are unstacked into one `TensorArray` per input tensor; the
    loop variables are the step ``time``, the flows of one output array per
    output tensor, and the state. The outputs are stacked after the loop.

    Returns:
        ``(outputs, final_state)``, the outputs time-major.
    """
    flat_input = nest.flatten(inputs)
    flat_output_size = nest.flatten(cell.output_size)
    time_steps = array_ops.shape(flat_input[0])[0]
    batch_size = _best_effort_input_batch_size(flat_input)
    shapes, const_time_steps, const_batch_size = _time_major_shapes(flat_input)
    out_dtype = _infer_state_dtype(dtype, initial_state)
    zero_output = _zero_output(cell, batch_size, const_batch_size, out_dtype)
    if sequence_length is not None:
        max_sequence_length = math_ops.reduce_max(sequence_length)
    else:
        max_sequence_length = time_steps
    time = constant_op.constant(0, dtype=dtypes.int32, name="time")
    with ops.name_scope("dynamic_rnn") as base_name:
        pass

    def create_ta(name, element_shape, ta_dtype):
        return TensorArray(
            dtype=ta_dtype,
            size=time_steps,
            element_shape=element_shape,
            tensor_array_name=base_name + name,
        )

    output_ta = tuple(
        create_ta(f"output_{i}", concat_sizes(const_batch_size, size, static=True), out_dtype)
        for i, size in enumerate(flat_output_size)
    )
    input_ta = tuple(
        create_ta(f"input_{i}", x.get_shape()[1:], x.dtype).unstack(x)
        for i, x in enumerate(flat_input)
    )

    def time_step(time, output_flows, state):
        input_t = []
        for ta, shape in zip(input_ta, shapes):
            input_ = ta.read(time)
            input_.set_shape(shape[1:])
            input_t.append(input_)
        input_t = nest.pack_sequence_as(inputs, input_t)

        def call_cell():
            return cell(input_t, state)

        if sequence_length is not None:
            output, new_state = _rnn_step(time, sequence_length, zero_output, state, call_cell)
        else:
            output, new_state = call_cell()
        flows = tuple(
            _with_flow(ta, flow).write(time, out).flow
            for ta, flow, out in zip(output_ta, output_flows, nest.flatten(output))
        )
        return time + 1, flows, new_state

    # At least one step, so that the output arrays get an element shape (TF's comment).
    loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_sequence_length))
    _, final_flows, final_state = while_loop(
        cond=lambda time, *_: time < loop_bound,
        body=time_step,
        loop_vars=(time, tuple(ta.flow for ta in output_ta), initial_state),
        parallel_iterations=parallel_iterations,
        maximum_iterations=time_steps,
        swap_memory=swap_memory,
    )
    final_outputs = []
    for ta, flow, size in zip(output_ta, final_flows, flat_output_size):
        output = _with_flow(ta, flow).stack()
        output.set_shape(concat_sizes([const_time_steps, const_batch_size], size, static=True))
        final_outputs.append(output)
    return nest.pack_sequence_as(cell.output_size, final_outputs), final_state


def _reverse_time(input_, seq_lengths, seq_axis: int, batch_axis: int) -> ops.Tensor:
    """``input_`` read backwards in time: each example up to its length if ``seq_lengths``."""
    if seq_lengths is not None:
        return array_ops.reverse_sequence(
            input_, seq_lengths, seq_axis=seq_axis, batch_axis=batch_axis
        )
    return array_ops.reverse(input_, axis=[seq_axis])


def bidirectional_dynamic_rnn(
    cell_fw: RNNCell,
    cell_bw: RNNCell,
    inputs: Any,
    sequence_length: Any = None,
    initial_state_fw: Any = None,
    initial_state_bw: Any = None,
    dtype: dtypes.DType | None = None,
    parallel_iterations: int | None = None,
    swap_memory: bool = False,
    time_major: bool = False,
    scope: str | vs.VariableScope | None = None,
) -> tuple[tuple, tuple]:
    """A forward and a backward `dynamic_rnn` over the same inputs.

    The forward network runs in scope ``<scope>/fw``, the backward one in
    ``<scope>/bw`` (``scope`` defaults to ``"bidirectional_rnn"``) over the
    inputs reversed in time — each example up to its own length when
    ``sequence_length`` is given (``tf.reverse_sequence``), else the whole
    time axis (``tf.reverse``) — and its outputs are reversed back, so that
    output ``t`` of both networks belongs to input ``t``.

    Args:
        cell_fw: The forward cell.
        cell_bw: The backward cell.
        inputs: As for `dynamic_rnn`.
        sequence_length: Optional ``[batch_size]`` vector of lengths.
        initial_state_fw: The forward initial state (default: zeros).
        initial_state_bw: The backward initial state (default: zeros).
        dtype: The dtype of zero initial states and outputs.
        parallel_iterations: As for `dynamic_rnn`.
        swap_memory: As for `dynamic_rnn`.
        time_major: As for `dynamic_rnn`.
        scope: A variable scope for both networks.

    Returns:
        ``((output_fw, output_bw), (output_state_fw, output_state_bw))``;
        ``tf.concat(outputs, 2)`` joins the outputs.

    Raises:
        TypeError: if a cell is not an RNN cell.
        ValueError: as `dynamic_rnn`.
    """
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def run(cell, rnn_inputs, initial_state, direction_scope):
        return dynamic_rnn(
            cell=cell,
            inputs=rnn_inputs,
            sequence_length=sequence_length,
            initial_state=initial_state,
            dtype=dtype,
            parallel_iterations=parallel_iterations,
            swap_memory=swap_memory,
            time_major=time_major,
            scope=direction_scope,
        )

    def reverse(x):
        return _reverse_time(x, sequence_length, time_axis, batch_axis)

    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = run(cell_fw, inputs, initial_state_fw, fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            inputs_reverse = nest.map_structure(reverse, inputs)
            tmp, output_state_bw = run(cell_bw, inputs_reverse, initial_state_bw, bw_scope)
    output_bw = reverse(tmp)
    return (output_fw, output_bw), (output_state_fw, output_state_bw)
