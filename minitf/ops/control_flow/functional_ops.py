"""``tf.foldl``, ``tf.foldr`` and ``tf.scan``: a ``tf.while_loop`` over the rows of tensors.

Each is built as TF1 builds it (``tensorflow/python/ops/functional_ops.py``),
from the two pieces it is made of — no op of its own:

* the tensors of ``elems`` are unstacked into `TensorArray` s before the loop
  (one ``TensorArrayScatterV3`` each), and the body reads row ``i`` with
  ``TensorArrayReadV3``;
* a ``tf.while_loop`` carries the counter and the accumulator ``a``, calling
  ``fn(a, row)`` once to build the body; ``scan`` also writes every ``a``
  to an output array, stacked after the loop.

Gradients come from the two as well: the gradient loop runs the loop
backwards, and the arrays' gradient arrays carry the rows' gradients
(`minitf.ops.data_flow.tensor_array_grad`). ``tf.map_fn`` is the same
construction without an accumulator (`minitf.ops.control_flow.map_fn`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from minitf.framework import ops, tensor_shape
from minitf.ops.array import array_ops, constant_op
from minitf.ops.control_flow.while_loop import while_loop
from minitf.ops.data_flow.tensor_array_ops import TensorArray
from minitf.ops.state import variable_scope as vs
from minitf.util import nest

__all__ = ["foldl", "foldr", "scan"]


def check_callable(fn: Any) -> None:
    """Raises TF's TypeError if ``fn`` is not callable."""
    if not callable(fn):
        raise TypeError("fn must be callable.")


@contextlib.contextmanager
def variables_read_where_used() -> Iterator[None]:
    """Variables ``fn`` makes are read on the device of the op that reads them.

    TF sets this caching device on the current variable scope for the time
    the loop is built, so that a variable on a ps is read once per step, not
    once per iteration across the network.
    """
    varscope = vs.get_variable_scope()
    was_none = varscope.caching_device is None
    if was_none:
        varscope.set_caching_device(lambda op: op.device)
    try:
        yield
    finally:
        if was_none:
            varscope.set_caching_device(None)


def number_of_rows(elems_flat: list[ops.Tensor]) -> Any:
    """The length of the first tensor's first axis: static if known (and not 0), else a tensor."""
    static = tensor_shape.dimension_value(elems_flat[0].get_shape()[0])
    return static or array_ops.shape(elems_flat[0])[0]


def unstacked(elem: ops.Tensor, n: Any, element_shape=None) -> TensorArray:
    """``elem``'s rows in a new `TensorArray` of size ``n`` (a ``TensorArrayScatterV3``)."""
    array = TensorArray(
        dtype=elem.dtype, size=n, dynamic_size=False, element_shape=element_shape, infer_shape=True
    )
    return array.unstack(elem)


def stacked(arrays: list[TensorArray], elems_flat: list[ops.Tensor]) -> list[ops.Tensor]:
    """Each array stacked, with the first dimension of ``elems`` (all of which must agree).

    Raises:
        ValueError: if a tensor of ``elems`` is a scalar, or two have first
            dimensions that differ.
    """
    rows = [tensor_shape.Dimension(e.get_shape().with_rank_at_least(1)[0]) for e in elems_flat]
    for other in rows[1:]:
        rows[0].merge_with(other)
    results = [array.stack() for array in arrays]
    for r in results:
        r.set_shape(tensor_shape.TensorShape([rows[0]]).concatenate(r.get_shape()[1:]))
    return results


def _read_all(elems_ta, i):
    return nest.map_structure(lambda ta: ta.read(i), elems_ta)


def _fold_setup(elems) -> tuple[Any, Any]:
    """``elems`` as tensors, unstacked into arrays in ``elems``' structure; and their length."""
    elems_flat = [ops.convert_to_tensor(e, name="elem") for e in nest.flatten(elems)]
    n = number_of_rows(elems_flat)
    arrays = [unstacked(e, n) for e in elems_flat]
    return nest.pack_sequence_as(elems, arrays) if nest.is_sequence(elems) else arrays[0], n


def foldl(
    fn: Callable,
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """``fn`` applied cumulatively to the rows of ``elems``, first to last (TF1's ``tf.foldl``).

    ``a = fn(a, row)`` for each row; ``a`` starts as ``initializer``, or as
    the first row (then the fold starts at the second).

    Args:
        fn: A callable ``(accumulator, row) -> accumulator``.
        elems: A tensor, or a (nested) structure of tensors with the same
            first dimension; a row is the structure of their rows.
        initializer: The accumulator's first value (a tensor or structure).
        parallel_iterations: How many iterations of the loop may run at once.
        back_prop: Whether gradients flow through the loop.
        swap_memory: Accepted as in TF (there is no device memory to swap).
        name: The name scope (default ``"foldl"``).

    Returns:
        The last accumulator, in the structure ``fn`` returns.

    Raises:
        TypeError: if ``fn`` is not callable.
    """
    return _fold(fn, elems, initializer, name, False, parallel_iterations, back_prop, swap_memory)


def foldr(
    fn: Callable,
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    name: str | None = None,
) -> Any:
    """``fn`` applied cumulatively to the rows of ``elems``, last to first (TF1's ``tf.foldr``).

    Like `foldl` from the other end: without ``initializer`` the last row
    starts the accumulator.

    Args:
        fn: A callable ``(accumulator, row) -> accumulator``.
        elems: A tensor, or a (nested) structure of tensors with the same
            first dimension.
        initializer: The accumulator's first value (a tensor or structure).
        parallel_iterations: How many iterations of the loop may run at once.
        back_prop: Whether gradients flow through the loop.
        swap_memory: Accepted as in TF (there is no device memory to swap).
        name: The name scope (default ``"foldr"``).

    Returns:
        The last accumulator, in the structure ``fn`` returns.

    Raises:
        TypeError: if ``fn`` is not callable.
    """
    return _fold(fn, elems, initializer, name, True, parallel_iterations, back_prop, swap_memory)


def _fold(fn, elems, initializer, name, from_end, parallel_iterations, back_prop, swap_memory):
    """The loop of `foldl` (``from_end`` False) and `foldr` (True), as TF builds each.

    `foldl`'s counter is the next row; `foldr`'s is the number of rows left,
    and its next row is the one before.
    """
    check_callable(fn)
    scope = "foldr" if from_end else "foldl"
    with ops.name_scope(name, scope, nest.flatten(elems)), variables_read_where_used():
        elems_ta, n = _fold_setup(elems)
        if initializer is None:
            i = n - 1 if from_end else constant_op.constant(1)
            a = _read_all(elems_ta, i if from_end else 0)
        else:
            i, a = (n if from_end else constant_op.constant(0)), initializer

        def compute(i, a):
            row = i - 1 if from_end else i
            return [row if from_end else i + 1, fn(a, _read_all(elems_ta, row))]

        _, r_a = while_loop(
            (lambda i, a: i > 0) if from_end else (lambda i, a: i < n), compute, [i, a],
            parallel_iterations=parallel_iterations, back_prop=back_prop,
            swap_memory=swap_memory, maximum_iterations=n,
        )  # fmt: skip
        return r_a


class Packing:
    """How values shaped like ``structure`` are flattened for a loop and packed again.

    TF's ``input_flatten``/``input_pack`` and ``output_flatten``/``output_pack``:
    a single tensor is a list of one.

    Args:
        structure: A tensor (or dtype), or a (nested) structure of them.
    """

    def __init__(self, structure: Any):
        self.structure = structure
        self.is_sequence = nest.is_sequence(structure)

    def flatten(self, value: Any) -> list:
        """``value``'s leaves (``[value]`` for a single one)."""
        return nest.flatten(value) if self.is_sequence else [value]

    def pack(self, flat: list) -> Any:
        """``flat`` in the structure (its one element for a single one)."""
        return nest.pack_sequence_as(self.structure, flat) if self.is_sequence else flat[0]


def scan(
    fn: Callable,
    elems: Any,
    initializer: Any = None,
    parallel_iterations: int = 10,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    reverse: bool = False,
    name: str | None = None,
) -> Any:
    """Every accumulator of a fold over the rows of ``elems``, stacked (TF1's ``tf.scan``).

    Row ``t`` of the result is ``a_t = fn(a_{t-1}, elems[t])``; ``a`` starts
    as ``initializer``, or as the first row (which is then row 0 of the
    result). With ``reverse`` the rows are taken last to first, and the
    result keeps their positions.

    Args:
        fn: A callable ``(accumulator, row) -> accumulator``, returning the
            structure of ``initializer`` (of ``elems`` without one).
        elems: A tensor, or a (nested) structure of tensors with the same
            first dimension.
        initializer: The accumulator's first value (a tensor or structure).
        parallel_iterations: How many iterations of the loop may run at once.
        back_prop: Whether gradients flow through the loop.
        swap_memory: Accepted as in TF (there is no device memory to swap).
        infer_shape: Whether every accumulator must have the first one's shape.
        reverse: Scan from the last row to the first.
        name: The name scope (default ``"scan"``).

    Returns:
        The stacked accumulators, in the structure of ``initializer`` (of
        ``elems`` without one).

    Raises:
        TypeError: if ``fn`` is not callable.
        ValueError: if ``fn`` returns another structure than the accumulator's.
    """
    check_callable(fn)
    inputs = Packing(elems)
    outputs = inputs if initializer is None else Packing(initializer)
    elems_flat = inputs.flatten(elems)
    with ops.name_scope(name, "scan", elems_flat), variables_read_where_used():
        elems_flat = [ops.convert_to_tensor(e, name="elem") for e in elems_flat]
        n = tensor_shape.dimension_value(elems_flat[0].get_shape()[0])
        if n is None:
            n = array_ops.shape(elems_flat[0])[0]
        elems_ta = [unstacked(e, n, e.get_shape()[1:]) for e in elems_flat]
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            i = 1
        else:
            a_flat = [ops.convert_to_tensor(init) for init in outputs.flatten(initializer)]
            i = 0
        accs_ta = [_accumulator_array(a, n, infer_shape) for a in a_flat]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs_ta, a_flat)]

        def compute(i, a_flat, tas):
            a_out = fn(outputs.pack(a_flat), inputs.pack([ta.read(i) for ta in elems_ta]))
            nest.assert_same_structure(outputs.structure, a_out)
            flat_a_out = outputs.flatten(a_out)
            tas = [ta.write(i, value) for ta, value in zip(tas, flat_a_out)]
            return (i - 1 if reverse else i + 1, flat_a_out, tas)

        if reverse:
            initial_i, condition = n - 1 - i, lambda i, _1, _2: i >= 0
        else:
            initial_i, condition = i, lambda i, _1, _2: i < n
        _, _, r_a = while_loop(
            condition, compute, (initial_i, a_flat, accs_ta),
            parallel_iterations=parallel_iterations, back_prop=back_prop,
            swap_memory=swap_memory, maximum_iterations=n,
        )  # fmt: skip
        return outputs.pack(stacked(r_a, elems_flat))


def _accumulator_array(a: ops.Tensor, n: Any, infer_shape: bool) -> TensorArray:
    """The array that keeps each accumulator of a scan."""
    return TensorArray(
        dtype=a.dtype,
        size=n,
        element_shape=a.get_shape() if infer_shape else None,
        dynamic_size=False,
        infer_shape=infer_shape,
    )
