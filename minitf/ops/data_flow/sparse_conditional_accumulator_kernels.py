"""The sparse conditional accumulator: rows of ``IndexedSlices`` gradients, each with its count.

Same staleness rule, counter and global step as the dense accumulator
(`minitf.ops.data_flow.conditional_accumulator_kernels`); the gradients are
merged like a sorted sparse add, each row counting how many gradients
touched it, and ``MEAN`` divides each row by its own count (TF's
``SparseConditionalAccumulator``, ``sparse_conditional_accumulator.h``).
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import register_kernel
from minitf.ops.data_flow.conditional_accumulator_kernels import (
    AccumulatorBase,
    apply_gradient,
    resource_builder,
    scalar_step,
    shape_str,
    take_builder,
)


class SparseConditionalAccumulator(AccumulatorBase):
    """The sparse accumulator resource: rows by index, with a contributor count per row."""

    def __init__(self, name, dtype, shape, reduction_type):
        super().__init__(name, dtype, shape, reduction_type)
        self._rows: dict[int, np.ndarray] = {}
        self._counts: dict[int, int] = {}
        self._row_shape: tuple | None = None

    def apply(self, local_step, indices, values, grad_shape, has_known_shape) -> None:
        """Adds a fresh sparse gradient (lock held); drops a stale one silently."""
        if not self.is_fresh(local_step):
            return
        self._validate(indices, values, grad_shape, has_known_shape)
        for index, row in zip(indices.tolist(), values):
            if index in self._rows:
                np.add(self._rows[index], row, out=self._rows[index])
                self._counts[index] += 1
            else:
                self._rows[index] = np.array(row, dtype=self.dtype.as_numpy_dtype, copy=True)
                self._counts[index] = 1
        if self.counter == 0:
            self._row_shape = tuple(values.shape[1:])
        self.counter += 1

    def _validate(self, indices, values, grad_shape, has_known_shape) -> None:
        def fail(message):
            raise errors.InvalidArgumentError(None, None, message)

        if indices.ndim != 1:
            fail(f"Input indices should be vector but received shape: {shape_str(indices.shape)}")
        if values.ndim < 1:
            fail("Values cannot be 0-dimensional.")
        if values.shape[0] != indices.shape[0]:
            fail(f"Expected {indices.shape[0]} non-empty input values, got {values.shape[0]}")
        declared = self.shape
        if has_known_shape and declared is not None:
            if len(grad_shape) < len(declared):
                fail(f"Shape mismatch: expected shape rank at least {len(declared)}, got "
                     f"{len(grad_shape)}")  # fmt: skip
            for i, d in enumerate(declared):
                if d is not None and d != grad_shape[i]:
                    fail(f"Shape mismatch: expected shape dim {i} to be {d}, got {grad_shape[i]}")
        if declared and declared[0] is not None:
            for i, index in enumerate(indices.tolist()):
                if index >= declared[0]:
                    fail(f"Shape mismatch: index of slice {i} exceeded limits of shape; index is "
                         f"{index} exceeded {declared[0]}")  # fmt: skip
        if self.counter == 0:
            if declared is not None:
                if values.ndim < len(declared):
                    fail(f"Shape mismatch: expected values rank at least {len(declared)}, got "
                         f"{values.ndim}")  # fmt: skip
                for i in range(1, len(declared)):
                    if declared[i] is not None and declared[i] != values.shape[i]:
                        fail(f"Shape mismatch: expected values dim {i} to be {declared[i]}, got "
                             f"{values.shape[i]}")  # fmt: skip
        else:
            if values.ndim != len(self._row_shape) + 1:
                fail(f"Shape mismatch: expected values rank {len(self._row_shape) + 1}, got "
                     f"{values.ndim}")  # fmt: skip
            for i, d in enumerate(self._row_shape, start=1):
                if values.shape[i] != d:
                    fail(f"Shape mismatch: expected values dim {i} to be {d}, got "
                         f"{values.shape[i]}")  # fmt: skip

    def aggregate(self):
        order = sorted(self._rows)
        np_type = self.dtype.as_numpy_dtype
        if order:
            values = np.stack([self._rows[i] for i in order]).astype(np_type, copy=False)
        else:
            values = np.zeros((0,) + (self._row_shape or ()), dtype=np_type)
        if self.reduction_type == "MEAN" and order:
            counts = np.array([self._counts[i] for i in order], dtype=np_type)
            values = values / counts.reshape((-1,) + (1,) * (values.ndim - 1))
        indices = np.array(order, dtype=np.int64)
        dim0 = -1
        if self.shape is not None and len(self.shape) >= 1:
            dim0 = -1 if self.shape[0] is None else self.shape[0]
        shape = np.array([dim0] + list(values.shape[1:]), dtype=np.int64)
        self._rows, self._counts = {}, {}
        return indices, values.astype(np_type, copy=False), shape


register_kernel("SparseConditionalAccumulator", stateful=True)(
    resource_builder(SparseConditionalAccumulator)
)


@register_kernel("SparseAccumulatorApplyGradient", ref_inputs=(0,), stateful=True)
def _sparse_apply_kernel(op):
    has_known_shape = op.get_attr("has_known_shape")

    def compute(ctx, acc, local_step, indices, values, shape):
        step = scalar_step(op, local_step)
        indices, values = np.asarray(indices), np.asarray(values)
        shape = np.asarray(shape).tolist()
        apply_gradient(op, ctx, acc, step, lambda: acc.apply(step, indices, values, shape,
                                                     has_known_shape))  # fmt: skip

    return compute


register_kernel("SparseAccumulatorTakeGradient", ref_inputs=(0,), is_async=True, stateful=True)(
    take_builder
)
