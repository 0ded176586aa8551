"""``SparseToDense`` (``tf.sparse.to_dense``) and ``tf.sparse_placeholder``.

A `SparseTensor` becomes dense by writing its values at its indices into a
tensor of ``dense_shape`` filled with ``default_value``. With
``validate_indices`` (the default) the kernel checks what TF checks: each
index inside the shape, and the indices in row-major order without repeats.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops, tensor_shape, tensor_util
from minitf.framework.op_registry import register_kernel
from minitf.framework.sparse_tensor import SparseTensor
from minitf.ops.array import array_ops

__all__ = ["sparse_placeholder", "sparse_tensor_to_dense", "sparse_to_dense"]


def sparse_to_dense(
    sparse_indices: Any,
    output_shape: Any,
    sparse_values: Any,
    default_value: Any = 0,
    validate_indices: bool = True,
    name: str | None = None,
) -> ops.Tensor:
    """A dense tensor of ``output_shape`` with ``sparse_values`` at ``sparse_indices``.

    Args:
        sparse_indices: int ``[N, rank]`` (or ``[N]`` for rank 1, or a scalar).
        output_shape: int ``[rank]``: the shape of the result.
        sparse_values: ``[N]`` values, or a scalar used for every index.
        default_value: The value everywhere else (a scalar).
        validate_indices: Check that the indices are sorted and not repeated.
        name: The op name.
    """
    with ops.name_scope(name, "SparseToDense", [sparse_indices, output_shape, sparse_values]):
        indices = ops.convert_to_tensor(sparse_indices, name="sparse_indices")
        shape = ops.convert_to_tensor(output_shape, name="output_shape", dtype=indices.dtype)
        values = ops.convert_to_tensor(sparse_values, name="sparse_values")
        default = ops.convert_to_tensor(default_value, name="default_value", dtype=values.dtype)
    op = ops.get_default_graph().create_op(
        "SparseToDense",
        [indices, shape, values, default],
        [values.dtype.base_dtype],
        name=name or "SparseToDense",
        attrs={
            "validate_indices": bool(validate_indices),
            "T": values.dtype.base_dtype,
            "Tindices": indices.dtype.base_dtype,
        },
        shapes=[tensor_util.constant_value_as_shape(shape)],
    )
    return op.outputs[0]


def sparse_tensor_to_dense(
    sp_input: SparseTensor,
    default_value: Any = None,
    validate_indices: bool = True,
    name: str | None = None,
) -> ops.Tensor:
    """The dense tensor a `SparseTensor` stands for (``tf.sparse.to_dense``).

    Args:
        sp_input: A `SparseTensor`.
        default_value: The value where ``sp_input`` has no entry (default 0, or
            ``b""`` for strings).
        validate_indices: Check that the indices are sorted and not repeated.
        name: The op name.

    Raises:
        TypeError: if ``sp_input`` is not a `SparseTensor`.
    """
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__}.")
    if default_value is None:
        default_value = b"" if sp_input.dtype.base_dtype == dtypes.string else 0
    return sparse_to_dense(
        sp_input.indices,
        sp_input.dense_shape,
        sp_input.values,
        default_value=default_value,
        validate_indices=validate_indices,
        name=name,
    )


def sparse_placeholder(
    dtype: dtypes.DType,
    shape: tensor_shape.TensorShape | list | tuple | None = None,
    name: str | None = None,
) -> SparseTensor:
    """A `SparseTensor` of placeholders, to be fed a ``SparseTensorValue``.

    Args:
        dtype: The dtype of the values.
        shape: The dense shape; None feeds it too. A known shape (entries may
            be None) is the default of a ``placeholder_with_default``.
        name: The name prefix: ``name/indices``, ``name/values``, ``name/shape``.
    """
    suffixed = (lambda part: f"{name}/{part}") if name is not None else (lambda part: None)
    if shape is None:
        dense_shape = array_ops.placeholder(dtypes.int64, [None], name=suffixed("shape"))
        rank = None
    else:
        static = tensor_shape.as_shape(shape)
        rank = static.ndims
        known = [-1 if d is None else d for d in static.as_list()]
        dense_shape = array_ops.placeholder_with_default(
            np.array(known, dtype=np.int64), [rank], name=suffixed("shape")
        )
    values = array_ops.placeholder(dtype, [None], name=suffixed("values"))
    indices = array_ops.placeholder(dtypes.int64, [None, rank], name=suffixed("indices"))
    result = SparseTensor(indices, values, dense_shape)
    if shape is not None:
        result.set_shape(shape)  # the default of ``name/shape``, which may be fed another
    return result


def _index_text(index) -> str:
    return "[" + ",".join(str(int(i)) for i in np.atleast_1d(index)) + "]"


def _check_indices(op, indices: np.ndarray, shape: np.ndarray, validate: bool) -> None:
    """TF's checks of SparseToDense's indices: in bounds, and (if ``validate``) sorted, unique."""
    for n, index in enumerate(indices):
        if np.any(index < 0) or np.any(index >= shape):
            raise errors.InvalidArgumentError(
                op.node_def,
                op,
                f"indices[{n}] = {_index_text(index)} is out of bounds: need 0 <= index < "
                f"{_index_text(shape)}",
            )
        if validate and n > 0:
            previous = tuple(indices[n - 1])
            if tuple(index) == previous:
                raise errors.InvalidArgumentError(
                    op.node_def, op, f"indices[{n}] = {_index_text(index)} is repeated"
                )
            if tuple(index) < previous:
                raise errors.InvalidArgumentError(
                    op.node_def,
                    op,
                    f"indices[{n}] = {_index_text(index)} is out of order. Many sparse ops "
                    "require sorted indices.",
                )


@register_kernel("SparseToDense")
def _sparse_to_dense_kernel(op):
    validate = op.get_attr("validate_indices")
    dtype = op.get_attr("T").as_numpy_dtype

    def compute(ctx, indices, output_shape, values, default_value):
        shape = np.atleast_1d(np.asarray(output_shape, dtype=np.int64))
        indices = np.asarray(indices, dtype=np.int64).reshape(-1, shape.size)
        _check_indices(op, indices, shape, validate)
        dense = np.full(tuple(shape), default_value, dtype=dtype)
        dense[tuple(indices.T)] = values
        return dense

    return compute
