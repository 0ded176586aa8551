"""``tf.map_fn``: ``fn`` applied to each row of tensors, by a ``tf.while_loop``.

Built as TF1 builds it (``tensorflow/python/ops/map_fn.py``): the tensors
of ``elems`` are unstacked into `TensorArray` s, the loop's body reads row
``i`` of each, calls ``fn`` on them (once, to build the body) and writes
each result into an output array at ``i``; the output arrays are loop
variables (through their flows) and are stacked after the loop. Iterations
do not depend on each other, so up to ``parallel_iterations`` of them run
at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import ops
from minitf.framework.sparse_tensor import SparseTensor
from minitf.ops.array import constant_op
from minitf.ops.control_flow.functional_ops import (
    Packing,
    check_callable,
    number_of_rows,
    stacked,
    unstacked,
    variables_read_where_used,
)
from minitf.ops.control_flow.while_loop import while_loop
from minitf.ops.data_flow.tensor_array_ops import TensorArray
from minitf.util import nest

__all__ = ["map_fn"]


def _check_elems(elems: Any) -> None:
    """Raises TF's TypeError for a SparseTensor ``elems``."""
    if isinstance(elems, SparseTensor):
        raise TypeError(
            "To perform a map on the values of a sparse tensor use either "
            " SparseTensor(input.indices, fn(input.values), input.dense_shape) or "
            " SparseTensor(input.indices, map_fn(fn, input.values), input.dense_shape)"
        )


def _check_rows(elems_flat: list[ops.Tensor]) -> None:
    """Raises TF's ValueError if the first tensor of ``elems`` is a scalar."""
    if elems_flat[0].get_shape().ndims == 0:
        if len(elems_flat) == 1:
            raise ValueError("elems must be a 1+ dimensional Tensor, not a scalar")
        raise ValueError("elements in elems must be 1+ dimensional Tensors, not scalars")


def map_fn(
    fn: Callable,
    elems: Any,
    dtype: Any = None,
    parallel_iterations: int | None = None,
    back_prop: bool = True,
    swap_memory: bool = False,
    infer_shape: bool = True,
    name: str | None = None,
) -> Any:
    """``fn`` applied to each row of ``elems``, the results stacked (TF1's ``tf.map_fn``).

    ``map_fn(fn, x)`` is ``tf.stack([fn(row) for row in tf.unstack(x)])``, built
    as one loop; ``fn`` is called once, to build it.

    Args:
        fn: A callable of one row: a tensor, or the structure of ``elems``.
        elems: A tensor, or a (nested) structure of tensors with the same
            first dimension.
        dtype: The dtype (or structure of dtypes) of ``fn``'s result; needed
            when it differs from ``elems``' in dtype or structure.
        parallel_iterations: How many rows may be computed at once (default 10).
        back_prop: Whether gradients flow through the loop.
        swap_memory: Accepted as in TF (there is no device memory to swap).
        infer_shape: Whether every result must have the first one's shape.
        name: The name scope (default ``"map"``).

    Returns:
        The stacked results, in the structure of ``dtype`` (of ``elems``
        without one).

    Raises:
        TypeError: if ``fn`` is not callable, ``elems`` is a SparseTensor, or
            ``fn``'s result is a sequence of another type than ``dtype``.
        ValueError: if ``elems`` is a scalar, or ``fn``'s result has another
            structure than ``dtype`` (than ``elems`` without one).
    """
    check_callable(fn)
    _check_elems(elems)
    if not parallel_iterations:
        parallel_iterations = 10
    inputs = Packing(elems)
    outputs = inputs if dtype is None else Packing(dtype)
    elems_flat = inputs.flatten(elems)
    with ops.name_scope(name, "map", elems_flat), variables_read_where_used():
        elems_flat = [ops.convert_to_tensor(e, name="elem") for e in elems_flat]
        dtype = dtype or inputs.pack([e.dtype for e in elems_flat])
        _check_rows(elems_flat)
        n = number_of_rows(elems_flat)
        elems_ta = [unstacked(e, n) for e in elems_flat]
        accs_ta = [
            TensorArray(dtype=dt, size=n, dynamic_size=False, infer_shape=infer_shape)
            for dt in outputs.flatten(dtype)
        ]

        def compute(i, tas):
            result = fn(inputs.pack([ta.read(i) for ta in elems_ta]))
            nest.assert_same_structure(dtype, result)
            tas = [ta.write(i, value) for ta, value in zip(tas, outputs.flatten(result))]
            return (i + 1, tas)

        _, r_a = while_loop(
            lambda i, _: i < n, compute, (constant_op.constant(0), accs_ta),
            parallel_iterations=parallel_iterations, back_prop=back_prop,
            swap_memory=swap_memory, maximum_iterations=n,
        )  # fmt: skip
        return outputs.pack(stacked(r_a, elems_flat))
