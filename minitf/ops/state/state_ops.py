"""Variable ops and their kernels: ``VariableV2``, ``Assign``, ``VarHandleOp``, scatter updates.

A variable's value lives in a `VariableResource` in the resource manager of
the task that runs its op, found by ``(container, shared_name)`` — the op name
when ``shared_name`` is empty. The ``VariableV2`` op outputs a *reference* to
that resource (dtype ``float32_ref``); ops with ``Ref`` inputs such as
``Assign`` receive the resource itself, every other consumer receives its
current value. Resource variables (``VarHandleOp``) output a ``resource``
handle to the same kind of object and read it with ``ReadVariableOp``.

Stored values are frozen (read-only numpy arrays): no kernel can write into
them by mistake. An update writes in place, as TF's do, only when the variable
is the sole holder of its array (`VariableResource.overwrite`); when anything
else holds it — a value read earlier in the step and still in use, a queue, a
fetch on its way to the client, a variable assigned from it — the update
stores a new array instead, so no reader ever sees the value change under it.
As in TF, an update on one thread may still run while another thread reads
the variable (``use_locking`` serialises updates, not reads).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import dtypes, errors, ops, tensor_shape
from minitf.framework.op_registry import (
    NotDifferentiable,
    RegisterGradient,
    register_kernel,
)
from minitf.ops.common_shapes import shape_str
from minitf.ops.op_def_library import INT32_64, check_dtype
from minitf.ops.resource_kernels import resource_kernel

__all__ = [
    "assign",
    "assign_add",
    "assign_sub",
    "count_up_to",
    "is_variable_initialized",
    "scatter_update",
    "scatter_add",
    "scatter_sub",
]


def freeze(value: Any, np_dtype: np.dtype) -> np.ndarray:
    """Returns ``value`` as a read-only array of ``np_dtype`` that no one else can change.

    A value that is already frozen and owns its memory is shared, not copied.
    """
    if (
        isinstance(value, np.ndarray)
        and not value.flags.writeable
        and value.base is None
        and value.dtype == np_dtype
    ):
        return value
    array = np.array(value, dtype=np_dtype, copy=True)
    array.flags.writeable = False
    return array


def _owned(array) -> np.ndarray:
    """Freezes an array the caller has just computed (no copy)."""
    array = np.asarray(array)
    if array.flags.writeable and array.base is None:
        array.flags.writeable = False
        return array
    return freeze(array, array.dtype)


class VariableResource:
    """The state of one variable on one task.

    Args:
        name: The variable's name (used in error messages).
        dtype: Its `DType` (base type).
        shape: Its declared `TensorShape` (possibly unknown).
    """

    def __init__(self, name: str, dtype: dtypes.DType, shape: tensor_shape.TensorShape):
        self.name = name
        self.dtype = dtype.base_dtype
        self.np_dtype = np.dtype(self.dtype.as_numpy_dtype)
        self.shape = shape
        self.value: np.ndarray | None = None
        self.lock = threading.Lock()

    @property
    def is_initialized(self) -> bool:
        """True once a value has been assigned."""
        return self.value is not None

    def read(self) -> np.ndarray:
        """Returns the current (frozen) value.

        Raises:
            FailedPreconditionError: if the variable has no value yet.
        """
        value = self.value
        if value is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}"
            )
        return value

    def assign(self, value: Any, validate_shape: bool = True) -> np.ndarray:
        """Stores a copy of ``value``; returns the stored array.

        Like TF's ``Assign``, a value of the variable's shape and dtype is
        copied into the variable's own array when nothing else holds it
        (`overwrite`); otherwise the copy is a new array. Either way the
        variable never shares memory with the caller's ``value`` unless that
        is already frozen (a fed array may be changed by its owner after the
        run).

        Raises:
            InvalidArgumentError: if ``validate_shape`` and the shapes differ.
        """
        if (
            type(value) is np.ndarray
            and value.dtype == self.np_dtype
            and self.value is not None
            and value.shape == self.value.shape
            and self.overwrite(np.copyto, value)
        ):
            return self.value
        new = freeze(value, self.np_dtype)
        if validate_shape:
            self._check_shape(new.shape, "Assign")
        self.value = new
        return new

    def overwrite(self, write: Callable[..., object], *args: Any) -> bool:
        """Calls ``write(array, *args)`` on the stored array if the variable alone holds it.

        The array is writeable during the call only. The test is TF's
        ``RefCountIsOne`` on the variable's buffer, in Python: the reference
        count of the stored array is two (the variable's reference and this
        call's argument) when no value read earlier is still in use, no queue
        or other variable holds it, and no fetch or send of it is under way.
        Callers hold ``lock``.

        Args:
            write: Writes the new value into the array it is given first.
            *args: What else ``write`` is given.

        Returns:
            True if the stored array was written; False if something else
            holds it (nothing was written).
        """
        if sys.getrefcount(self.value) != 2:
            return False
        value = self.value
        try:
            value.flags.writeable = True
        except ValueError:  # its memory belongs to another object: not ours to write
            return False
        try:
            write(value, *args)
        finally:
            value.flags.writeable = False
        return True

    def subtract(self, amount: np.ndarray) -> None:
        """``value -= amount``: in place when the variable alone holds its array, else a new one.

        Both give the bits of ``value - amount``.

        Args:
            amount: An array of the variable's shape.
        """
        if type(amount) is np.ndarray and amount.dtype == self.np_dtype:
            if self.overwrite(lambda value: np.subtract(value, amount, out=value)):
                return
        self.update(self.read() - amount)

    def update(self, new_value: Any) -> np.ndarray:
        """Stores a freshly computed array (owned by the caller) without copying."""
        if type(new_value) is not np.ndarray or new_value.dtype != self.np_dtype:
            new_value = np.asarray(new_value, dtype=self.np_dtype)
        self.value = _owned(new_value)
        return self.value

    def _check_shape(self, shape: tuple, what: str) -> None:
        current = self.value.shape if self.value is not None else None
        if current is None and self.shape.is_fully_defined():
            current = tuple(self.shape.as_list())
        if current is not None and current != shape:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"{what} requires shapes of both tensors to match. lhs shape= "
                f"{list(current)} rhs shape= {list(shape)}",
            )


def _resource_kernel(op):
    """Kernel of ``VariableV2``/``VarHandleOp``: finds or creates the task's resource."""
    container = op.get_attr("container")
    shared_name = op.get_attr("shared_name") or op.name
    dtype = op.get_attr("dtype")
    shape = op.get_attr("shape")

    def create():
        return VariableResource(shared_name, dtype, shape)

    return resource_kernel(container, shared_name, create)


register_kernel("VariableV2", stateful=True)(_resource_kernel)
register_kernel("VarHandleOp", stateful=True)(_resource_kernel)
NotDifferentiable("VarHandleOp")


def variable_op_v2(
    shape: tensor_shape.TensorShape | list,
    dtype: dtypes.DType,
    name: str = "Variable",
    container: str = "",
    shared_name: str = "",
) -> ops.Tensor:
    """Creates a ``VariableV2`` op; returns its reference tensor (dtype ``<T>_ref``)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    shape = tensor_shape.as_shape(shape)
    op = ops.get_default_graph().create_op(
        "VariableV2",
        [],
        [dtype._as_ref],
        name=name,
        attrs={"shape": shape, "dtype": dtype, "container": container, "shared_name": shared_name},
        shapes=[shape],
    )
    return op.outputs[0]


def var_handle_op(
    shape: tensor_shape.TensorShape | list,
    dtype: dtypes.DType,
    name: str = "VarHandleOp",
    container: str = "",
    shared_name: str = "",
) -> ops.Tensor:
    """Creates a ``VarHandleOp``; returns its ``resource`` handle tensor."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    op = ops.get_default_graph().create_op(
        "VarHandleOp",
        [],
        [dtypes.resource],
        name=name,
        attrs={
            "shape": tensor_shape.as_shape(shape),
            "dtype": dtype,
            "container": container,
            "shared_name": shared_name,
        },
        shapes=[tensor_shape.TensorShape([])],
    )
    return op.outputs[0]


def _check_static_assign(op_type: str, ref: ops.Tensor, value: ops.Tensor, scope: str) -> None:
    if not ref.get_shape().is_compatible_with(value.get_shape()):
        raise ValueError(
            f"Shapes must be equal for '{scope.rstrip('/')}' (op: '{op_type}'): the variable "
            f"has shape {ref.get_shape()} but the value has shape {value.get_shape()}."
        )


def _ref_update_op(op_type, ref, value, use_locking, name, attrs=None, validate=True):
    ref_t = ops.internal_convert_to_tensor(ref, as_ref=True)
    if not ref_t.dtype._is_ref_dtype:
        raise TypeError(f"'{op_type}' Op requires that input 'ref' be a mutable tensor: {ref_t}")
    with ops.name_scope(name, op_type, [ref_t, value]) as scope:
        value_t = _value_for(op_type, ref_t, value)
        if validate:
            _check_static_assign(op_type, ref_t, value_t, scope)
        all_attrs = {"T": ref_t.dtype.base_dtype, "use_locking": bool(use_locking)}
        all_attrs.update(attrs or {})
        shape = ref_t.get_shape() if validate else value_t.get_shape()
        op = ops.get_default_graph().create_op(
            op_type,
            [ref_t, value_t],
            [ref_t.dtype],
            name=scope,
            attrs=all_attrs,
            shapes=[shape],
        )
    return op.outputs[0]


def _value_for(op_type: str, ref_t: ops.Tensor, value) -> ops.Tensor:
    base = ref_t.dtype.base_dtype
    if isinstance(value, ops.Tensor) and value.dtype.base_dtype != base:
        raise TypeError(
            f"Input 'value' of '{op_type}' Op has type {value.dtype.base_dtype.name} that does "
            f"not match type {base.name} of argument 'ref'."
        )
    return ops.convert_to_tensor(value, dtype=base, name="value")


def assign(
    ref: Any,
    value: Any,
    validate_shape: bool | None = None,
    use_locking: bool | None = None,
    name: str | None = None,
) -> ops.Tensor | ops.Operation:
    """Assigns ``value`` to the variable ``ref``; returns ``ref`` after the assignment.

    Args:
        ref: A variable (or a mutable ``Ref`` tensor); a resource variable uses its own method.
        value: The new value, of the variable's dtype.
        validate_shape: Whether ``value``'s shape must match the variable's (default True); if False
            the variable takes ``value``'s shape.
        use_locking: TF's locking flag (default True), kept as the op's attribute (minitf's kernels
            always hold the variable's lock).
        name: A name for the operation (optional).
    """
    if not _is_ref_tensor_like(ref):
        return ref.assign(value, name=name)
    validate = True if validate_shape is None else bool(validate_shape)
    return _ref_update_op(
        "Assign",
        ref,
        value,
        True if use_locking is None else use_locking,
        name,
        {"validate_shape": validate},
        validate=validate,
    )


def assign_add(
    ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None
) -> ops.Tensor | ops.Operation:
    """Adds ``value`` to the variable ``ref``; returns ``ref`` after the update.

    Args:
        ref: A variable (or a mutable ``Ref`` tensor); a resource variable uses its own method.
        value: The value to add, of the variable's dtype and shape.
        use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold the
            variable's lock).
        name: A name for the operation (optional).
    """
    if not _is_ref_tensor_like(ref):
        return ref.assign_add(value, name=name)
    return _ref_update_op("AssignAdd", ref, value, bool(use_locking), name)


def assign_sub(
    ref: Any, value: Any, use_locking: bool | None = None, name: str | None = None
) -> ops.Tensor | ops.Operation:
    """Subtracts ``value`` from the variable ``ref``; returns ``ref`` after the update.

    Args:
        ref: A variable (or a mutable ``Ref`` tensor); a resource variable uses its own method.
        value: The value to subtract, of the variable's dtype and shape.
        use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold the
            variable's lock).
        name: A name for the operation (optional).
    """
    if not _is_ref_tensor_like(ref):
        return ref.assign_sub(value, name=name)
    return _ref_update_op("AssignSub", ref, value, bool(use_locking), name)


def _is_ref_tensor_like(ref) -> bool:
    if isinstance(ref, ops.Tensor):
        return ref.dtype._is_ref_dtype
    return getattr(ref, "_is_ref_variable", False)


@register_kernel("Assign", ref_inputs=(0,), stateful=True)
def _assign_kernel(op):
    validate = op.get_attr("validate_shape")

    def compute(ctx, ref, value):
        with ref.lock:
            ref.assign(value, validate)
        return ref

    return compute


def _accumulate_kernel(sign: int, op_type: str):
    def builder(op):
        def compute(ctx, ref, value):
            with ref.lock:
                current = ref.read()
                if np.shape(value) != current.shape:
                    raise errors.InvalidArgumentError(
                        op.node_def,
                        op,
                        f"{op_type}: the value's shape {list(np.shape(value))} does not match the "
                        f"variable's shape {list(current.shape)}",
                    )
                ref.update(current + value if sign > 0 else current - value)
            return ref

        return compute

    return builder


register_kernel("AssignAdd", ref_inputs=(0,), stateful=True)(_accumulate_kernel(1, "AssignAdd"))
register_kernel("AssignSub", ref_inputs=(0,), stateful=True)(_accumulate_kernel(-1, "AssignSub"))


@RegisterGradient("Assign")
def _assign_grad(op, grad):
    return [None, None]


NotDifferentiable("AssignAdd")
NotDifferentiable("AssignSub")


def count_up_to(ref: Any, limit: int, name: str | None = None) -> ops.Tensor:
    """Increments the integer variable ``ref`` until it reaches ``limit`` (op ``CountUpTo``).

    Each run returns the value *before* the increment; the run that finds the
    variable already at ``limit`` changes nothing and raises
    ``OutOfRangeError`` ("Reached limit of N"). `tf.train.limit_epochs` and
    the input producers count epochs with it.

    Args:
        ref: A scalar ``int32`` or ``int64`` variable (or its ``Ref`` tensor).
        limit: The value at which the counting stops.
        name: A name for the operation (optional).

    Returns:
        A scalar tensor of the variable's dtype: its value before the increment.

    Raises:
        TypeError: if ``ref`` is not a mutable integer tensor.
        ValueError: if ``ref`` is not a scalar.
    """
    if _is_ref_tensor_like(ref):
        ref_t = ops.internal_convert_to_tensor(ref, as_ref=True)
        op_type, dtype, static = "CountUpTo", ref_t.dtype, ref_t.get_shape()
    elif hasattr(ref, "handle"):  # a resource variable: the same count on its handle
        ref_t = ref.handle
        op_type, dtype, static = "ResourceCountUpTo", ref.dtype, ref.shape
    else:
        raise TypeError(f"'CountUpTo' Op requires that input 'ref' be a mutable tensor: {ref}")
    dtype = check_dtype("ref", dtype, INT32_64)
    with ops.name_scope(name, op_type, [ref_t]) as scope:
        if static.ndims not in (None, 0):
            raise ValueError(
                f"Shape must be rank 0 but is rank {static.ndims} for '{scope.rstrip('/')}' "
                f"(op: '{op_type}') with input shapes: {shape_str(static)}."
            )
        op = ops.get_default_graph().create_op(
            op_type,
            [ref_t],
            [dtype],
            name=scope,
            attrs={"T": dtype, "limit": int(limit)},
            shapes=[tensor_shape.TensorShape([])],
        )
    return op.outputs[0]


@register_kernel("CountUpTo", ref_inputs=(0,), stateful=True)
@register_kernel("ResourceCountUpTo", stateful=True)
def _count_up_to_kernel(op):
    limit = op.get_attr("limit")

    def compute(ctx, ref):
        with ref.lock:
            before = ref.read()
            if before.shape != ():
                raise errors.InvalidArgumentError(
                    op.node_def, op, f"input is not a scalar: {list(before.shape)}"
                )
            if before >= limit:
                raise errors.OutOfRangeError(op.node_def, op, f"Reached limit of {limit}")
            ref.update(before + 1)
        return before

    return compute


NotDifferentiable("CountUpTo")
NotDifferentiable("ResourceCountUpTo")


def is_variable_initialized(variable: Any) -> ops.Tensor:
    """Returns a bool tensor: whether ``variable`` has been initialized.

    Args:
        variable: A variable.
    """
    if not _is_ref_tensor_like(variable):
        return variable.is_initialized()
    ref = ops.internal_convert_to_tensor(variable, as_ref=True)
    op = ops.get_default_graph().create_op(
        "IsVariableInitialized",
        [ref],
        [dtypes.bool],
        name="IsVariableInitialized",
        attrs={"dtype": ref.dtype.base_dtype},
        shapes=[tensor_shape.TensorShape([])],
    )
    return op.outputs[0]


@register_kernel("IsVariableInitialized", ref_inputs=(0,), stateful=True)
@register_kernel("VarIsInitializedOp", ref_inputs=(0,), stateful=True)
def _is_initialized_kernel(op):
    def compute(ctx, ref):
        return np.bool_(ref.is_initialized)

    return compute


NotDifferentiable("IsVariableInitialized")
NotDifferentiable("VarIsInitializedOp")


# -- scatter updates (sparse writes to rows of a variable) ---------------------------------


def _scatter_op(op_type, ref, indices, updates, use_locking, name):
    ref_t = ops.internal_convert_to_tensor(ref, as_ref=True)
    with ops.name_scope(name, op_type, [ref_t, indices, updates]) as scope:
        indices_t = ops.convert_to_tensor(indices, name="indices")
        if not indices_t.dtype.is_integer:
            raise TypeError(f"{op_type}: indices must be int32 or int64, got {indices_t.dtype}")
        updates_t = ops.convert_to_tensor(updates, dtype=ref_t.dtype.base_dtype, name="updates")
        expected = indices_t.get_shape().concatenate(ref_t.get_shape()[1:])
        # A scalar update is broadcast to every indexed row (TF 1.15 allows it).
        if updates_t.get_shape().ndims != 0 and not updates_t.get_shape().is_compatible_with(
            expected
        ):
            raise ValueError(
                f"Shapes of updates {updates_t.get_shape()} and indices {indices_t.get_shape()} "
                f"do not fit variable shape {ref_t.get_shape()} for '{scope[:-1]}' "
                f"(op: '{op_type}'): expected updates shape {expected}"
            )
        op = ops.get_default_graph().create_op(
            op_type,
            [ref_t, indices_t, updates_t],
            [ref_t.dtype],
            name=scope,
            attrs={
                "T": ref_t.dtype.base_dtype,
                "Tindices": indices_t.dtype,
                "use_locking": bool(use_locking),
            },
            shapes=[ref_t.get_shape()],
        )
    return op.outputs[0]


def scatter_update(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> ops.Tensor:
    """Sets ``ref[indices[i]] = updates[i]``.

    Args:
        ref: A reference variable (or ``Ref`` tensor).
        indices: An int32 or int64 tensor of indices into its first dimension.
        updates: The new rows, shaped ``indices.shape + ref.shape[1:]`` (or a scalar).
        use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold the
            variable's lock).
        name: A name for the operation (optional).
    """
    return _scatter_op("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> ops.Tensor:
    """Adds ``updates[i]`` to ``ref[indices[i]]`` (duplicate indices accumulate).

    Args:
        ref: A reference variable (or ``Ref`` tensor).
        indices: An int32 or int64 tensor of indices into its first dimension.
        updates: The rows to add, shaped ``indices.shape + ref.shape[1:]`` (or a scalar).
        use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold the
            variable's lock).
        name: A name for the operation (optional).
    """
    return _scatter_op("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> ops.Tensor:
    """Subtracts ``updates[i]`` from ``ref[indices[i]]`` (duplicate indices accumulate).

    Args:
        ref: A reference variable (or ``Ref`` tensor).
        indices: An int32 or int64 tensor of indices into its first dimension.
        updates: The rows to subtract, shaped ``indices.shape + ref.shape[1:]`` (or a scalar).
        use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold the
            variable's lock).
        name: A name for the operation (optional).
    """
    return _scatter_op("ScatterSub", ref, indices, updates, use_locking, name)


def check_indices(op: ops.Operation, indices: Any, limit: int) -> None:
    """Raises TF's InvalidArgumentError if an index is outside ``[0, limit)``."""
    indices = np.asarray(indices)
    flat = np.ravel(indices)
    bad = np.flatnonzero((flat < 0) | (flat >= limit))
    if bad.size:
        i = int(bad[0])
        where = ",".join(str(int(k)) for k in np.unravel_index(i, indices.shape)) or "0"
        raise errors.InvalidArgumentError(
            op.node_def, op, f"indices[{where}] = {int(flat[i])} is not in [0, {limit})"
        )


def _scatter_kernel(combine):
    def builder(op):
        def compute(ctx, ref, indices, updates):
            with ref.lock:
                current = ref.read()
                check_indices(op, indices, current.shape[0])
                new = np.array(current, copy=True)
                combine(new, np.asarray(indices), np.asarray(updates, dtype=new.dtype))
                ref.update(new)
            return ref

        return compute

    return builder


def _set_rows(target, indices, updates):
    target[indices] = updates


register_kernel("ScatterUpdate", ref_inputs=(0,), stateful=True)(_scatter_kernel(_set_rows))
register_kernel("ScatterAdd", ref_inputs=(0,), stateful=True)(_scatter_kernel(np.add.at))
register_kernel("ScatterSub", ref_inputs=(0,), stateful=True)(_scatter_kernel(np.subtract.at))
for _op_type in ("ScatterUpdate", "ScatterAdd", "ScatterSub"):
    NotDifferentiable(_op_type)


# -- resource-variable ops -----------------------------------------------------------------


def read_variable_op(
    handle: ops.Tensor, dtype: dtypes.DType, name: str | None = None
) -> ops.Tensor:
    """``ReadVariableOp``: the current value of a resource variable."""
    op = ops.get_default_graph().create_op(
        "ReadVariableOp",
        [handle],
        [dtypes.as_dtype(dtype).base_dtype],
        name=name or "ReadVariableOp",
        attrs={"dtype": dtypes.as_dtype(dtype).base_dtype},
        shapes=[handle.op.get_attr("shape") if handle.op.type == "VarHandleOp" else None],
    )
    return op.outputs[0]


@register_kernel("ReadVariableOp", stateful=True)
def _read_variable_kernel(op):
    def compute(ctx, handle):
        return handle.read()

    return compute


@RegisterGradient("ReadVariableOp")
def _read_grad(op, grad):
    return grad


def resource_update_op(
    op_type: str, handle: ops.Tensor, value: Any, name: str | None = None
) -> ops.Operation:
    """``AssignVariableOp``/``AssignAddVariableOp``/``AssignSubVariableOp`` on a handle."""
    dtype = handle.op.get_attr("dtype")
    with ops.name_scope(name, op_type, [handle, value]) as scope:
        value_t = ops.convert_to_tensor(value, dtype=dtype, name="value")
        shape = handle.op.get_attr("shape")
        if not shape.is_compatible_with(value_t.get_shape()):
            raise ValueError(
                f"Shapes must be equal for '{scope[:-1]}' (op: '{op_type}'): the variable has "
                f"shape {shape} but the value has shape {value_t.get_shape()}."
            )
        return ops.get_default_graph().create_op(
            op_type, [handle, value_t], [], name=scope, attrs={"dtype": dtype}
        )


@register_kernel("AssignVariableOp", stateful=True)
def _assign_variable_kernel(op):
    def compute(ctx, handle, value):
        with handle.lock:
            handle.assign(value, validate_shape=True)

    return compute


def _resource_accumulate(sign: int):
    def builder(op):
        def compute(ctx, handle, value):
            with handle.lock:
                current = handle.read()
                handle.update(current + value if sign > 0 else current - value)

        return compute

    return builder


register_kernel("AssignAddVariableOp", stateful=True)(_resource_accumulate(1))
register_kernel("AssignSubVariableOp", stateful=True)(_resource_accumulate(-1))
for _op_type in ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
    NotDifferentiable(_op_type)


def var_is_initialized_op(handle: ops.Tensor, name: str | None = None) -> ops.Tensor:
    """``VarIsInitializedOp``: whether a resource variable has a value."""
    op = ops.get_default_graph().create_op(
        "VarIsInitializedOp",
        [handle],
        [dtypes.bool],
        name=name or "VarIsInitializedOp",
        shapes=[tensor_shape.TensorShape([])],
    )
    return op.outputs[0]


def initialized_value_op(
    variable_tensor: ops.Tensor, initial_value: ops.Tensor, name: str | None = None
) -> ops.Tensor:
    """The variable's value if it is initialized, else ``initial_value``.

    TF builds this with ``tf.cond``; minitf's single op computes the same value.
    """
    op = ops.get_default_graph().create_op(
        "VariableInitializedValue",
        [variable_tensor, initial_value],
        [initial_value.dtype.base_dtype],
        name=name or "initialized_value",
        shapes=[initial_value.get_shape()],
    )
    return op.outputs[0]


@register_kernel("VariableInitializedValue", ref_inputs=(0,), stateful=True)
def _initialized_value_kernel(op):
    def compute(ctx, ref, initial):
        return ref.value if ref.is_initialized else initial

    return compute


NotDifferentiable("VariableInitializedValue")
