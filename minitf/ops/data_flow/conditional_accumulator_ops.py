"""``tf.ConditionalAccumulator`` and ``tf.SparseConditionalAccumulator``: gradient aggregation ops.

Like a queue, an accumulator object only builds ops. The dense one is TF's
resource-handle op ``ResourceConditionalAccumulator`` (one of the ops
``replica_device_setter`` sends to a ps task); the sparse one is TF1's older
reference-typed ``SparseConditionalAccumulator``. The kernels are in
`minitf.ops.data_flow.conditional_accumulator_kernels`.
"""

from __future__ import annotations

from minitf.framework import dtypes as _dtypes
from minitf.framework import ops, tensor_shape
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.math import math_ops
from minitf.ops.op_def_library import NUMERIC, check_dtype


def _check_reduction_type(reduction_type: str) -> str:
    if reduction_type not in ("MEAN", "SUM"):
        raise ValueError(
            f"Value for attr 'reduction_type' of {reduction_type!r} is not in the list of "
            'allowed values: "MEAN", "SUM"'
        )
    return reduction_type


def _int64(value, name: str) -> ops.Tensor:
    return math_ops.cast(ops.convert_to_tensor(value, name=name), _dtypes.int64)


class ConditionalAccumulatorBase:
    """What both accumulators offer: their handle, the counter and the global step.

    Args:
        dtype: The dtype of the gradients.
        shape: The shape of the gradients (may be partial or None).
        accumulator_ref: The accumulator's handle tensor.
    """

    def __init__(
        self,
        dtype: _dtypes.DType,
        shape: tensor_shape.TensorShape | list | None,
        accumulator_ref: ops.Tensor,
    ):
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = (
            tensor_shape.unknown_shape() if shape is None else tensor_shape.as_shape(shape)
        )
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    @property
    def accumulator_ref(self) -> ops.Tensor:
        """The accumulator's handle."""
        return self._accumulator_ref

    @property
    def name(self) -> str:
        """The name of the accumulator op."""
        return self._accumulator_ref.op.name

    @property
    def dtype(self) -> _dtypes.DType:
        """The dtype of the gradients."""
        return self._dtype

    def _op(self, op_type, inputs, out_dtypes, name, attrs=None, shapes=None):
        if shapes is None:
            shapes = [tensor_shape.TensorShape([])] * len(out_dtypes)
        return ops.get_default_graph().create_op(
            op_type, inputs, list(out_dtypes), name=name, attrs=attrs or {}, shapes=shapes
        )

    def _resource(self) -> bool:
        return self._accumulator_ref.dtype == _dtypes.resource

    def num_accumulated(self, name: str | None = None) -> ops.Tensor:
        """An int32 scalar: how many gradients have been accepted since the last take.

        Args:
            name: A name for the op.
        """
        op_type = (
            "ResourceAccumulatorNumAccumulated" if self._resource() else "AccumulatorNumAccumulated"
        )
        op = self._op(op_type, [self._accumulator_ref], [_dtypes.int32], name or op_type)
        return op.outputs[0]

    def set_global_step(
        self, new_global_step: int | ops.Tensor, name: str | None = None
    ) -> ops.Operation:
        """Sets the accumulator's global step (a smaller value only logs a warning).

        Gradients with a ``local_step`` below it are dropped as stale.

        Args:
            new_global_step: The new global step (an int64 scalar).
            name: A name for the op.
        """
        op_type = (
            "ResourceAccumulatorSetGlobalStep" if self._resource() else ("AccumulatorSetGlobalStep")
        )
        step = _int64(new_global_step, "new_global_step")
        return self._op(op_type, [self._accumulator_ref, step], [], name or op_type)


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates dense gradients that are fresh; hands out their mean or sum.

    Args:
        dtype: The dtype of the gradients.
        shape: Their shape; may be partial or None (the first gradient after a
            take then fixes it until the next take).
        shared_name: If set, every accumulator op with that name on the task
            is the same accumulator.
        name: The name of the accumulator op.
        reduction_type: ``"MEAN"`` (the default) or ``"SUM"``.

    Raises:
        TypeError: if ``dtype`` is not a numeric type (TF's ``numbertype``).
        ValueError: for another ``reduction_type``.
    """

    def __init__(
        self,
        dtype: _dtypes.DType,
        shape: tensor_shape.TensorShape | list | None = None,
        shared_name: str | None = None,
        name: str = "conditional_accumulator",
        reduction_type: str = "MEAN",
    ):
        dtype = check_dtype(
            "dtype", _dtypes.as_dtype(dtype), NUMERIC, "ResourceConditionalAccumulator"
        )
        static = tensor_shape.unknown_shape() if shape is None else tensor_shape.as_shape(shape)
        attrs = {
            "dtype": dtype,
            "shape": static,
            "container": "",
            "shared_name": shared_name or "",
            "reduction_type": _check_reduction_type(reduction_type),
        }
        with ops.control_dependencies(None):
            op = ops.get_default_graph().create_op(
                "ResourceConditionalAccumulator",
                [],
                [_dtypes.resource],
                name=name,
                attrs=attrs,
                shapes=[tensor_shape.TensorShape([])],
            )
        super().__init__(dtype, shape, op.outputs[0])

    def apply_grad(
        self, grad: ops.Tensor, local_step: int | ops.Tensor = 0, name: str | None = None
    ) -> ops.Operation:
        """Offers a gradient; when run it is added if ``local_step >=`` the global step.

        A stale gradient (an older ``local_step``) is dropped silently.

        Args:
            grad: The gradient, a tensor of the accumulator's dtype and shape.
            local_step: The global step the gradient was computed at.
            name: A name for the op.

        Raises:
            ValueError: if ``grad``'s static shape is incompatible with the accumulator's.
        """
        grad = ops.convert_to_tensor(grad, self._dtype)
        grad.get_shape().assert_is_compatible_with(self._shape)
        step = _int64(local_step, "local_step")
        return self._op(
            "ResourceAccumulatorApplyGradient",
            [self._accumulator_ref, step, grad],
            [],
            name or "ResourceAccumulatorApplyGradient",
            {"dtype": self._dtype},
        )

    def take_grad(self, num_required: int | ops.Tensor, name: str | None = None) -> ops.Tensor:
        """Waits for ``num_required`` accepted gradients; returns their mean (or sum).

        Taking resets the counter and adds one to the accumulator's global step.
        ``num_required`` is a minimum: every gradient accepted so far is aggregated.

        Args:
            num_required: The number of gradients to wait for (an int32 scalar).
            name: A name for the op.
        """
        with ops.name_scope(name, "ResourceAccumulatorTakeGradient") as scope:
            n = ops.convert_to_tensor(num_required, _dtypes.int32, name="num_required")
            return self._op(
                "ResourceAccumulatorTakeGradient",
                [self._accumulator_ref, n],
                [self._dtype],
                scope,
                {"dtype": self._dtype},
                shapes=[self._shape],
            ).outputs[0]


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates sparse gradients (`IndexedSlices`); rows with one index are summed.

    With ``reduction_type="MEAN"`` each row is divided by the number of
    gradients that contained it.

    Args:
        dtype: The dtype of the gradients.
        shape: The dense shape of the gradients; may be partial or None.
        shared_name: If set, every accumulator op with that name on the task
            is the same accumulator.
        name: The name of the accumulator op.
        reduction_type: ``"MEAN"`` (the default) or ``"SUM"``.

    Raises:
        TypeError: if ``dtype`` is not a numeric type.
        ValueError: for another ``reduction_type``.
    """

    def __init__(
        self,
        dtype: _dtypes.DType,
        shape: tensor_shape.TensorShape | list | None = None,
        shared_name: str | None = None,
        name: str = "sparse_conditional_accumulator",
        reduction_type: str = "MEAN",
    ):
        dtype = check_dtype(
            "dtype", _dtypes.as_dtype(dtype), NUMERIC, "SparseConditionalAccumulator"
        )
        static = tensor_shape.unknown_shape() if shape is None else tensor_shape.as_shape(shape)
        attrs = {
            "dtype": dtype,
            "shape": static,
            "container": "",
            "shared_name": shared_name or "",
            "reduction_type": _check_reduction_type(reduction_type),
        }
        with ops.control_dependencies(None):
            op = ops.get_default_graph().create_op(
                "SparseConditionalAccumulator",
                [],
                [_dtypes.string_ref],
                name=name,
                attrs=attrs,
                shapes=[tensor_shape.TensorShape([2])],
            )
        super().__init__(dtype, shape, op.outputs[0])

    def apply_indexed_slices_grad(
        self, grad: IndexedSlices, local_step: int | ops.Tensor = 0, name: str | None = None
    ) -> ops.Operation:
        """`apply_grad` with the indices, values and dense shape of ``grad``.

        Args:
            grad: The gradient, an `IndexedSlices`.
            local_step: The global step the gradient was computed at.
            name: A name for the op.
        """
        return self.apply_grad(
            grad_indices=grad.indices,
            grad_values=grad.values,
            grad_shape=grad.dense_shape,
            local_step=local_step,
            name=name,
        )

    def apply_grad(
        self,
        grad_indices: ops.Tensor,
        grad_values: ops.Tensor,
        grad_shape: ops.Tensor | list | None = None,
        local_step: int | ops.Tensor = 0,
        name: str | None = None,
    ) -> ops.Operation:
        """Offers a sparse gradient: rows ``grad_values[i]`` at ``grad_indices[i]``.

        Dropped silently if ``local_step`` is older than the global step.

        Args:
            grad_indices: The row indices, a 1-D int64 tensor.
            grad_values: The rows, one per index.
            grad_shape: The dense shape of the gradient, or None.
            local_step: The global step the gradient was computed at.
            name: A name for the op.
        """
        values = ops.convert_to_tensor(grad_values, self._dtype, name="grad_values")
        shape = _int64([] if grad_shape is None else grad_shape, "grad_shape")
        return self._op(
            "SparseAccumulatorApplyGradient",
            [
                self._accumulator_ref,
                _int64(local_step, "local_step"),
                _int64(grad_indices, "grad_indices"),
                values,
                shape,
            ],
            [],
            name or "SparseAccumulatorApplyGradient",
            {"dtype": self._dtype, "has_known_shape": grad_shape is not None},
        )

    def take_grad(
        self, num_required: int | ops.Tensor, name: str | None = None
    ) -> tuple[ops.Tensor, ops.Tensor, ops.Tensor]:
        """Waits for ``num_required`` gradients; returns ``(indices, values, shape)``.

        Indices come sorted; the dense shape's first dimension is the declared
        one (-1 when unknown). As in TF, the three outputs have unknown static
        shapes: what the accumulator holds is only known when it runs.

        Args:
            num_required: The number of gradients to wait for (an int32 scalar).
            name: A name for the op.
        """
        unknown = tensor_shape.TensorShape(None)
        with ops.name_scope(name, "SparseAccumulatorTakeGradient") as scope:
            n = ops.convert_to_tensor(num_required, _dtypes.int32, name="num_required")
            op = self._op(
                "SparseAccumulatorTakeGradient",
                [self._accumulator_ref, n],
                [_dtypes.int64, self._dtype, _dtypes.int64],
                scope,
                {"dtype": self._dtype},
                shapes=[unknown, unknown, unknown],
            )
        return tuple(op.outputs)

    def take_indexed_slices_grad(
        self, num_required: int | ops.Tensor, name: str | None = None
    ) -> IndexedSlices:
        """`take_grad` as an `IndexedSlices`.

        Args:
            num_required: The number of gradients to wait for (an int32 scalar).
            name: A name for the op.
        """
        indices, values, shape = self.take_grad(num_required, name=name)
        return IndexedSlices(indices=indices, values=values, dense_shape=shape)
