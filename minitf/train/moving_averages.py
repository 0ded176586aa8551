"""Exponential moving averages of variables (``tf.train.ExponentialMovingAverage``).

``ema.apply([w])`` creates a *shadow* variable ``w/ExponentialMovingAverage``
(a slot of ``w``, starting at ``w``'s initial value) and returns an op that
moves it towards ``w``::

    shadow -= (1 - decay) * (shadow - w)

With ``num_updates``, the decay starts small and grows towards ``decay``:
``decay = min(decay, (1 + num_updates) / (10 + num_updates))``. Evaluation
code reads the averages (``ema.average(w)``) or restores them in place of the
variables (``ema.variables_to_restore()``).
"""

from __future__ import annotations

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.math import math_ops
from minitf.ops.state import state_ops, variable_scope, variables
from minitf.train import slot_creator

__all__ = ["ExponentialMovingAverage", "assign_moving_average"]

# TF also accepts bfloat16, which minitf does not have.
_FLOAT_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None) -> ops.Tensor:
    """Updates ``variable`` to ``variable - (1 - decay) * (variable - value)``.

    Args:
        variable: The average, a float variable.
        value: The new value (a tensor of the same shape).
        decay: The decay, a float or scalar tensor (typically close to 1).
        zero_debias: If True, keep a biased average and a step count in two
            extra variables (``<variable>/biased`` and ``<variable>/local_step``)
            and store ``biased / (1 - decay^step)``: the average of the values
            seen so far, without the pull towards the initial value.
        name: The name scope (default ``"AssignMovingAvg"``).

    Returns:
        The variable's reference (or value) after the update.
    """
    with ops.name_scope(name, "AssignMovingAvg", [variable, value, decay]) as scope:
        decay = ops.convert_to_tensor(1.0 - decay, name="decay")
        base = variable.dtype.base_dtype
        if decay.dtype.base_dtype != base:
            decay = math_ops.cast(decay, base)
        if zero_debias:
            return _zero_debias(variable, value, decay)
        return state_ops.assign_sub(variable, (variable - value) * decay, name=scope)


def _unique_in_scope(name: str) -> str:
    """``name``, or ``name_<i>``, whichever is not yet a global variable of the scope."""
    scope = variable_scope.get_variable_scope()
    if scope.reuse:
        return name
    taken = {v.op.name for v in variables.global_variables()}
    full_name = scope.name + "/" + name
    if full_name not in taken:
        return name
    i = 1
    while f"{full_name}_{i}" in taken:
        i += 1
    return f"{name}_{i}"


def _zero_debias(unbiased_var, value, decay):
    """The zero-debiased update (TF's ``_zero_debias``); ``decay`` here is ``1 - decay``."""
    from minitf.ops.state import init_ops

    with variable_scope.variable_scope(unbiased_var.op.name, values=[unbiased_var, value, decay]):
        with ops.colocate_with(unbiased_var):
            with ops.control_dependencies(None):
                biased_var = variable_scope.get_variable(
                    _unique_in_scope("biased"),
                    initializer=init_ops.zeros_initializer(),
                    shape=unbiased_var.get_shape(),
                    dtype=unbiased_var.dtype.base_dtype,
                    trainable=False,
                )
                local_step = variable_scope.get_variable(
                    _unique_in_scope("local_step"),
                    shape=[],
                    dtype=unbiased_var.dtype.base_dtype,
                    initializer=init_ops.zeros_initializer(),
                    trainable=False,
                )
    with ops.colocate_with(unbiased_var):
        update_biased = state_ops.assign_sub(biased_var, (biased_var - value) * decay)
        update_local_step = local_step.assign_add(1)
        bias_factor = 1 - math_ops.pow(1.0 - decay, update_local_step)
        return state_ops.assign(
            unbiased_var,
            update_biased / bias_factor,
            name=ops.get_default_graph().get_name_scope() + "/",
        )


def _fresh_value(var):
    """A read of ``var`` made here, so it obeys the caller's control dependencies.

    The common TF1 pattern ``with tf.control_dependencies([train_op]):
    ema.apply(...)`` averages the *updated* variables. TF gets that from
    buffer aliasing (ref variables) or a new read (resource variables);
    minitf's cached ``read`` snapshot may be computed before the update, so
    the average reads the variable again.
    """
    if isinstance(var, variables.Variable):
        return var.read_value()
    return var


class ExponentialMovingAverage:
    """Maintains moving averages of variables (TF1 ``tf.train.ExponentialMovingAverage``).

    Args:
        decay: The decay, e.g. 0.999.
        num_updates: Optional step count (a tensor or variable, e.g. the global
            step): the decay used is ``min(decay, (1 + n) / (10 + n))``.
        zero_debias: Debias the averages of tensors (not variables) with
            `assign_moving_average`'s ``zero_debias``.
        name: The name scope of the update op and the shadow-variable suffix.
    """

    def __init__(
        self, decay, num_updates=None, zero_debias: bool = False, name="ExponentialMovingAverage"
    ):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict = {}

    @property
    def name(self) -> str:
        """The name of this object (the suffix of the shadow variables)."""
        return self._name

    def apply(self, var_list=None) -> ops.Operation:
        """Creates the shadow variables of ``var_list`` and returns the op updating them.

        Args:
            var_list: Variables or tensors (float types); default: the
                trainable variables. Shadows of variables start at the
                variable's initial value, shadows of tensors at zero.

        Returns:
            A group op named after this object that updates every average.

        Raises:
            TypeError: if an element is not of a float type.
        """
        if var_list is None:
            var_list = variables.trainable_variables()
        var_list = list(var_list)
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in _FLOAT_TYPES:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var in self._averages:
                continue
            with ops.get_default_graph().as_default(), ops.control_dependencies(None):
                avg = self._create_average(var)
            if avg is not None and not isinstance(var, variables.Variable) and self._zero_debias:
                zero_debias_true.add(avg)
            self._averages[var] = avg
        with ops.name_scope(self._name) as scope:
            decay = ops.convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = []
            for var in var_list:
                avg = self._averages[var]
                value = _fresh_value(var)
                updates.append(
                    assign_moving_average(avg, value, decay, zero_debias=avg in zero_debias_true)
                )
            return control_flow_ops.group(*updates, name=scope)

    def _create_average(self, var):
        if isinstance(var, variables.Variable):
            avg = slot_creator.create_slot(var, var.initialized_value(), self._name)
            # Only variables (not tensors) go to MOVING_AVERAGE_VARIABLES, as in TF.
            ops.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            return avg
        colocate = var.op.type in ("Variable", "VariableV2", "VarHandleOp")
        return slot_creator.create_zeros_slot(var, self._name, colocate_with_primary=colocate)

    def average(self, var):
        """The shadow variable of ``var``, or None if `apply` has not seen it.

        Args:
            var: A variable (or tensor) passed to `apply`.
        """
        return self._averages.get(var)

    def average_name(self, var) -> str:
        """The name of ``var``'s shadow variable (also before `apply`, for restoring).

        Args:
            var: A variable (or tensor).
        """
        if var in self._averages:
            return self._averages[var].op.name
        return ops.get_default_graph().unique_name(
            var.op.name + "/" + self._name, mark_as_used=False
        )

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """A ``{checkpoint name: variable}`` map that restores the averages into the variables.

        Args:
            moving_avg_variables: Variables whose averages to restore (default:
                the trainable and moving-average variables). Every other global
                variable is restored under its own name.
        """
        if moving_avg_variables is None:
            moving_avg_variables = (
                variables.trainable_variables() + variables.moving_average_variables()
            )
        moving_avg_variables = list(dict.fromkeys(moving_avg_variables))
        name_map = {self.average_name(v): v for v in moving_avg_variables}
        averaged_names = {v.name for v in moving_avg_variables}
        for v in dict.fromkeys(variables.global_variables()):
            if v.name not in averaged_names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
