"""Slot variables: per-variable state that optimizers and moving averages keep.

A *slot* is a variable shaped like a primary variable (or tensor) that lives
next to it: Momentum's accumulator for ``w`` is ``w/Momentum``, Adam's
moments are ``w/Adam`` and ``w/Adam_1``, a moving average is
``w/ExponentialMovingAverage``. As in TF, a slot is created with
``get_variable`` inside ``variable_scope(None, default_name=<primary>/<name>)``
— which makes the name unique when the same slot name is asked for twice —
and is colocated with the primary, so it lands on the primary's device
(the same parameter server, in a cluster).
"""

from __future__ import annotations

from minitf.framework import dtypes, ops
from minitf.ops.array import array_ops
from minitf.ops.state import variable_scope, variables

__all__: list[str] = []


def _use_resource(primary) -> bool | None:
    """Slots of resource variables are resource variables; of ref variables, ref ones."""
    if isinstance(primary, variables.ResourceVariable):
        return True
    if isinstance(primary, variables.Variable):
        return False
    return None


def _create_slot_var(primary, val, scope: str, validate_shape: bool, shape, dtype):
    """Creates the slot with ``get_variable`` in the current variable scope."""
    current_scope = variable_scope.get_variable_scope()
    partitioner = current_scope.partitioner
    current_scope.set_partitioner(None)
    try:
        return variable_scope.get_variable(
            scope,
            initializer=val,
            trainable=False,
            use_resource=_use_resource(primary),
            shape=shape if callable(val) else None,
            dtype=None if dtype is None else dtypes.as_dtype(dtype).base_dtype,
            validate_shape=validate_shape,
        )
    finally:
        current_scope.set_partitioner(partitioner)


def _in_slot_scope(primary, name: str, colocate_with_primary: bool, create):
    with variable_scope.variable_scope(None, primary.op.name + "/" + name):
        if colocate_with_primary:
            with ops.colocate_with(primary):
                return create()
        return create()


def create_slot(primary, val, name: str, colocate_with_primary: bool = True) -> variables.Variable:
    """Creates a slot initialized to the tensor ``val``.

    Args:
        primary: The primary `Variable` or `Tensor`.
        val: A `Tensor` with the initial value of the slot (its type and shape
            are the slot's).
        name: The slot's name suffix (the optimizer's name, typically).
        colocate_with_primary: If True, place the slot with ``primary``.

    Returns:
        The slot `Variable`, named ``<primary op name>/<name>`` (made unique).
    """
    validate_shape = val.get_shape().is_fully_defined()
    return _in_slot_scope(
        primary,
        name,
        colocate_with_primary,
        lambda: _create_slot_var(primary, val, "", validate_shape, None, None),
    )


def create_slot_with_initializer(
    primary, initializer, shape, dtype, name: str, colocate_with_primary: bool = True
) -> variables.Variable:
    """Creates a slot initialized by an initializer (``initializer(shape, dtype=...)``).

    Args:
        primary: The primary `Variable` or `Tensor`.
        initializer: An initializer such as ``tf.zeros_initializer()``.
        shape: The slot's `TensorShape`.
        dtype: The slot's dtype.
        name: The slot's name suffix.
        colocate_with_primary: If True, place the slot with ``primary``.

    Returns:
        The slot `Variable`.
    """
    validate_shape = shape.is_fully_defined()
    return _in_slot_scope(
        primary,
        name,
        colocate_with_primary,
        lambda: _create_slot_var(primary, initializer, "", validate_shape, shape, dtype),
    )


def create_zeros_slot(
    primary, name: str, dtype=None, colocate_with_primary: bool = True
) -> variables.Variable:
    """Creates a slot of zeros shaped like ``primary``.

    Args:
        primary: The primary `Variable` or `Tensor`.
        name: The slot's name suffix.
        dtype: The slot's dtype (default: the primary's base dtype).
        colocate_with_primary: If True, place the slot with ``primary``.

    Returns:
        The slot `Variable`.
    """
    from minitf.ops.state import init_ops

    dtype = dtypes.as_dtype(dtype or primary.dtype).base_dtype
    slot_shape = primary.get_shape()
    if slot_shape.is_fully_defined():
        return create_slot_with_initializer(
            primary, init_ops.zeros_initializer(), slot_shape, dtype, name, colocate_with_primary
        )
    source = primary.initialized_value() if isinstance(primary, variables.Variable) else primary
    val = array_ops.zeros(array_ops.shape(source), dtype=dtype)
    return create_slot(primary, val, name, colocate_with_primary=colocate_with_primary)
