"""``tf.train.Optimizer``: the base class of the TF1 optimizers.

``minimize(loss)`` is ``compute_gradients`` (``tf.gradients`` of the loss
with respect to the trainable variables) followed by ``apply_gradients``,
which builds the training step with TF1's structure::

    <name>/                       (name scope, default: the optimizer's name)
        update_<var op name>/     one per variable, colocated with the variable:
            ApplyX / SparseApplyX / ResourceApplyX ...   (the subclass's update)
        update                    group of the updates (when there is a global step)
    <name>                        the returned op: AssignAdd on the global step,
                                  or the group of the updates

Subclasses implement the TF1 hooks: ``_create_slots`` (per-variable state,
created outside any control dependency), ``_prepare`` (tensors for the
hyper-parameters), ``_apply_dense`` / ``_apply_sparse`` and their resource
twins, and ``_finish``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.gradients import gradients_impl
from minitf.ops.state import state_ops, variables
from minitf.train import slot_creator

__all__ = ["Optimizer"]


@contextlib.contextmanager
def _init_scope() -> Iterator[None]:
    """Graph-mode ``ops.init_scope()``: the default graph with no control dependencies.

    Slots and other optimizer state are created here so that their
    initializers do not depend on whatever ops the caller is gating on.
    """
    with ops.get_default_graph().as_default(), ops.control_dependencies(None):
        yield


def _deduplicate_indexed_slices(values, indices):
    """Sums the rows of ``values`` that share an index; returns (summed, unique indices)."""
    from minitf.ops.array import array_ops

    unique_indices, new_index_positions = array_ops.unique(indices)
    summed_values = array_ops.unsorted_segment_sum(
        values, new_index_positions, array_ops.shape(unique_indices)[0]
    )
    return summed_values, unique_indices


def _var_key(var) -> tuple:
    """The key of ``var`` in the slot dictionaries: (graph, op name), as in TF."""
    return (var.op.graph, var.op.name)


def _is_resource_variable(var) -> bool:
    return isinstance(var, variables.ResourceVariable)


def _flatten(values) -> list:
    if isinstance(values, (list, tuple)):
        return [leaf for v in values for leaf in _flatten(v)]
    return [values]


class _RefVariableProcessor:
    """Updates a ``VariableV2`` variable through its reference."""

    def __init__(self, v):
        self._v = v

    def target(self):
        return self._v._ref()

    def update_op(self, optimizer, g):
        if isinstance(g, ops.Tensor):
            return _constrained(self._v, optimizer._apply_dense(g, self._v))
        if self._v.constraint is not None:
            raise RuntimeError("Cannot use a constraint function on a sparse variable.")
        return optimizer._apply_sparse_duplicate_indices(g, self._v)


class _DenseResourceVariableProcessor:
    """Updates a resource variable (``VarHandleOp``) through its handle."""

    def __init__(self, v):
        self._v = v

    def target(self):
        return self._v

    def update_op(self, optimizer, g):
        if isinstance(g, IndexedSlices):
            if self._v.constraint is not None:
                raise RuntimeError("Cannot use a constraint function on a sparse variable.")
            return optimizer._resource_apply_sparse_duplicate_indices(g.values, self._v, g.indices)
        return _constrained(self._v, optimizer._resource_apply_dense(g, self._v))


class _TensorProcessor:
    """Gradients may be computed for a plain tensor, but it cannot be updated."""

    def __init__(self, v):
        self._v = v

    def target(self):
        return self._v

    def update_op(self, optimizer, g):
        raise NotImplementedError(f"Trying to update a Tensor {self._v}")


def _constrained(var, update_op):
    """After the update, projects ``var`` with its constraint (if any), as TF does."""
    if var.constraint is None:
        return update_op
    with ops.control_dependencies([update_op]):
        # TF passes the variable itself and its ``read`` tensor aliases the updated
        # buffer; minitf's stored values are immutable, so the constraint gets a
        # fresh read ordered after the update (same numbers as TF).
        return var.assign(var.constraint(var.read_value()))


def _get_processor(v):
    if isinstance(v, variables.Variable):
        if v.op.type == "VarHandleOp":
            return _DenseResourceVariableProcessor(v)
        return _RefVariableProcessor(v)
    if isinstance(v, ops.Tensor):
        return _TensorProcessor(v)
    raise TypeError(f"Trying to optimize unsupported type {type(v).__name__}: {v!r}")


class Optimizer:
    """Base class for optimizers (TF1 ``tf.train.Optimizer``).

    Use a subclass (`GradientDescentOptimizer`, `MomentumOptimizer`, ...):
    ``train_op = opt.minimize(loss)`` and run ``train_op`` once per step.
    To process gradients before applying them, call `compute_gradients`,
    transform the ``(gradient, variable)`` pairs, then `apply_gradients`.

    Args:
        use_locking: If True, the update ops hold the variables' locks.
        name: A non-empty name, used for the update ops and the slots.

    Raises:
        ValueError: if ``name`` is empty.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        # {slot name: {var key: slot variable}}
        self._slots: dict[str, dict] = {}
        # {(name, graph): variable}
        self._non_slot_dict: dict[tuple, variables.Variable] = {}

    def get_name(self) -> str:
        """The optimizer's name."""
        return self._name

    def minimize(
        self,
        loss: ops.Tensor,
        global_step: variables.Variable | None = None,
        var_list: list | None = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: int | None = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: ops.Tensor | None = None,
    ) -> ops.Operation:
        """Adds ops that update ``var_list`` to minimize ``loss``.

        Args:
            loss: The scalar (or any) float tensor to minimize.
            global_step: Optional integer variable incremented by one per step.
            var_list: Variables to update (default: the trainable variables).
            gate_gradients: `GATE_NONE`, `GATE_OP` or `GATE_GRAPH`.
            aggregation_method: Passed to ``tf.gradients``.
            colocate_gradients_with_ops: Place gradient ops with their forward op.
            name: The name of the returned op (default: the optimizer's name).
            grad_loss: Optional gradient of ``loss`` (default: ones).

        Returns:
            The op that applies the updates (and increments ``global_step``).

        Raises:
            ValueError: if there are no variables, or no variable has a gradient.
        """
        grads_and_vars = self.compute_gradients(
            loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}."
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(
        self,
        loss: ops.Tensor | Callable[[], ops.Tensor],
        var_list: list | None = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: int | None = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: ops.Tensor | None = None,
    ) -> list[tuple]:
        """Computes the gradients of ``loss`` for the variables in ``var_list``.

        Args:
            loss: A float tensor, or a callable returning one.
            var_list: Variables (default: ``TRAINABLE_VARIABLES`` and
                ``TRAINABLE_RESOURCE_VARIABLES``).
            gate_gradients: `GATE_NONE`, `GATE_OP` (each op's input gradients
                are produced together) or `GATE_GRAPH` (all gradients are
                produced before any is used).
            aggregation_method: Passed to ``tf.gradients``.
            colocate_gradients_with_ops: Place gradient ops with their forward op.
            grad_loss: Optional gradient of ``loss``.

        Returns:
            A list of ``(gradient, variable)`` pairs; a gradient is a Tensor,
            an `IndexedSlices`, or None.

        Raises:
            ValueError: on an invalid ``gate_gradients``, a non-float loss or
                variable, or no variables.
            TypeError: if ``var_list`` holds something that is not a variable.
        """
        if callable(loss):
            loss = loss()
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError(
                "gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                f"Optimizer.GATE_GRAPH.  Not {gate_gradients}"
            )
        loss = ops.convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            grad_loss = ops.convert_to_tensor(grad_loss)
            self._assert_valid_dtypes([grad_loss])
        if var_list is None:
            var_list = variables.trainable_variables() + ops.get_collection(
                GraphKeys.TRAINABLE_RESOURCE_VARIABLES
            )
        else:
            var_list = _flatten(var_list)
        processors = [_get_processor(v) for v in var_list]
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients_impl.gradients(
            loss,
            [p.target() for p in processors],
            grad_ys=grad_loss,
            gate_gradients=(gate_gradients == Optimizer.GATE_OP),
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes(
            [v for g, v in grads_and_vars if g is not None and v.dtype != dtypes.resource]
        )
        return grads_and_vars

    def apply_gradients(
        self,
        grads_and_vars: list[tuple],
        global_step: variables.Variable | None = None,
        name: str | None = None,
    ) -> ops.Operation:
        """Applies ``(gradient, variable)`` pairs; the second half of `minimize`.

        Args:
            grads_and_vars: The pairs, as returned by `compute_gradients`.
            global_step: Optional integer variable incremented by one after the updates.
            name: The name of the returned op (default: the optimizer's name).

        Returns:
            The training op: ``AssignAdd`` on ``global_step`` if given (it runs
            after every update), else the group of the updates.

        Raises:
            TypeError: if a gradient is not a Tensor, IndexedSlices or None, or
                a variable is not a variable.
            ValueError: if there are no pairs, or every gradient is None.
        """
        converted = self._convert_grads_and_vars(grads_and_vars)
        var_list = [v for g, v, _ in converted if g is not None]
        if not var_list:
            raise ValueError(
                f"No gradients provided for any variable: {[str(v) for _, v, _ in converted]}."
            )
        with _init_scope():
            self._create_slots(var_list)
        update_ops = []
        with ops.name_scope(name, self._name) as name:
            self._prepare()
            for grad, var, processor in converted:
                if grad is None:
                    continue
                # Every op of one variable's update goes where the variable is.
                with ops.name_scope("update_" + var.op.name), ops.colocate_with(var):
                    update_ops.append(processor.update_op(self, grad))
            if global_step is None:
                apply_updates = self._finish(update_ops, name)
            else:
                with ops.control_dependencies([self._finish(update_ops, "update")]):
                    with ops.colocate_with(global_step):
                        apply_updates = _increment(global_step, name)
            if isinstance(apply_updates, ops.Tensor):
                apply_updates = apply_updates.op
            train_op = ops.get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_op:
                train_op.append(apply_updates)
            return apply_updates

    @staticmethod
    def _convert_grads_and_vars(grads_and_vars) -> tuple:
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                try:
                    g = ops.convert_to_tensor_or_indexed_slices(g)
                except TypeError:
                    raise TypeError(
                        f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {g}"
                    ) from None
                if not isinstance(g, (ops.Tensor, IndexedSlices)):
                    raise TypeError(f"Gradient must be a Tensor, IndexedSlices, or None: {g}")
            converted.append((g, v, _get_processor(v)))
        return tuple(converted)

    # -- slots and other state -------------------------------------------------------------

    def get_slot(self, var: variables.Variable, name: str) -> variables.Variable | None:
        """Returns the slot ``name`` (e.g. ``"momentum"``) created for ``var``, or None.

        Args:
            var: A variable this optimizer updates.
            name: The slot's name, one of `get_slot_names`.
        """
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        """The sorted names of the slots this optimizer has created."""
        return sorted(self._slots)

    def variables(self) -> list:
        """The optimizer's variables in the default graph (slots and non-slot), by name."""
        graph = ops.get_default_graph()
        found = [v for v in self._non_slot_variables() if v.op.graph is graph]
        for slots in self._slots.values():
            found.extend(v for v in slots.values() if v.op.graph is graph)
        return sorted(found, key=lambda v: v.name)

    def _create_non_slot_variable(self, initial_value, name: str, colocate_with):
        """Creates (once per graph) a variable not tied to one variable, e.g. Adam's beta1_power."""
        key = (name, colocate_with.graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with ops.colocate_with(colocate_with):
                v = variables.Variable(
                    initial_value,
                    name=name,
                    trainable=False,
                    use_resource=_is_resource_variable(colocate_with),
                )
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph=None):
        return self._non_slot_dict.get((name, graph))

    def _non_slot_variables(self):
        return self._non_slot_dict.values()

    def _slot_dict(self, slot_name: str) -> dict:
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot(self, var, val, slot_name: str, op_name: str):
        """Finds or creates the slot ``slot_name`` of ``var``, initialized to ``val``."""
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot(var, val, op_name)
        return named_slots[_var_key(var)]

    def _get_or_make_slot_with_initializer(
        self, var, initializer, shape, dtype, slot_name: str, op_name: str
    ):
        """Finds or creates the slot ``slot_name`` of ``var`` with an initializer."""
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot_with_initializer(
                var, initializer, shape, dtype, op_name
            )
        return named_slots[_var_key(var)]

    def _zeros_slot(self, var, slot_name: str, op_name: str):
        """Finds or creates a zero-initialized slot ``slot_name`` of ``var``."""
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_zeros_slot(var, op_name)
        return named_slots[_var_key(var)]

    # -- dtype checks ----------------------------------------------------------------------

    def _valid_dtypes(self) -> set:
        """The dtypes the optimizer accepts for the loss, variables and gradients.

        TF also accepts bfloat16, which minitf does not have.
        """
        return {dtypes.float16, dtypes.float32, dtypes.float64}

    def _assert_valid_dtypes(self, tensors) -> None:
        """Raises ValueError (TF's error class here) if a tensor has an invalid dtype."""
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                expected = sorted(valid, key=lambda d: d.name)
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: {expected}.")

    @staticmethod
    def _call_if_callable(param):
        """Hyper-parameters may be callables (evaluated when the update is built)."""
        return param() if callable(param) else param

    # -- hooks for subclasses --------------------------------------------------------------

    def _create_slots(self, var_list) -> None:
        """Creates the slots the updates need (none by default)."""

    def _prepare(self) -> None:
        """Creates the hyper-parameter tensors, in the update's name scope."""

    def _apply_dense(self, grad, var):
        """Adds the update of a ref variable by a dense gradient."""
        raise NotImplementedError()

    def _resource_apply_dense(self, grad, handle):
        """Adds the update of a resource variable by a dense gradient."""
        raise NotImplementedError()

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices):
        """Sums duplicate indices, then calls `_resource_apply_sparse`."""
        summed_grad, unique_indices = _deduplicate_indexed_slices(grad, indices)
        return self._resource_apply_sparse(summed_grad, handle, unique_indices)

    def _resource_apply_sparse(self, grad, handle, indices):
        """Adds the update of rows ``indices`` (unique) of a resource variable."""
        raise NotImplementedError()

    def _apply_sparse_duplicate_indices(self, grad, var):
        """Sums the slices of repeated indices, then calls `_apply_sparse`.

        Adding first is the correct reading of repeated indices (TF's rule);
        optimizers that handle repeats themselves override this instead.
        """
        summed_values, unique_indices = _deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(
            IndexedSlices(summed_values, unique_indices, grad.dense_shape), var
        )

    def _apply_sparse(self, grad, var):
        """Adds the update of a ref variable by an `IndexedSlices` with unique indices."""
        raise NotImplementedError()

    def _finish(self, update_ops, name_scope):
        """Groups the updates into the op named ``name_scope``."""
        return control_flow_ops.group(*update_ops, name=name_scope)


def _increment(global_step, name):
    """``global_step += 1`` as TF1 does it (``AssignAdd`` / ``AssignAddVariableOp``)."""
    if _is_resource_variable(global_step):
        one = ops.convert_to_tensor(1, dtype=global_step.dtype)
        return state_ops.resource_update_op("AssignAddVariableOp", global_step.handle, one, name)
    return state_ops.assign_add(global_step, 1, name=name)
