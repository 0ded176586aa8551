"""Recurrent networks unrolled in the graph: ``static_rnn`` and ``static_bidirectional_rnn``.

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

A ``dynamic_rnn`` (a ``tf.while_loop`` over a ``TensorArray``) belongs in
this module beside them and can share `_rnn_step` and the input checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.array import array_ops
from minitf.ops.math import math_ops
from minitf.ops.nn.rnn_cell_base import RNNCell, assert_like_rnncell, concat_sizes
from minitf.ops.state import variable_scope as vs
from minitf.util import nest

__all__ = ["static_rnn", "static_bidirectional_rnn"]


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
    time: int,
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
        time: The Python int step number.
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
