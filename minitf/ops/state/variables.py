"""``tf.Variable`` and the functions over the variable collections.

A `Variable` is a Python object that groups the graph ops of one variable: the
variable op (``VariableV2``, or ``VarHandleOp`` with ``use_resource=True``),
its initial value, its initializer (an ``Assign``) and its ``read`` snapshot.
It holds no value: the value lives in the resource manager of the task that
runs the variable op.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from minitf.framework import dtypes, meta_graph, ops, tensor_shape
from minitf.framework.default_session import SessionInterface
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.meta_graph import in_name_scope, prepend_name_scope, strip_name_scope
from minitf.ops.array import array_ops, array_shaping
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.state import state_ops

if TYPE_CHECKING:
    from minitf.framework.indexed_slices import IndexedSlices

__all__ = [
    "Variable",
    "VariableV1",
    "global_variables",
    "all_variables",
    "local_variables",
    "trainable_variables",
    "model_variables",
    "moving_average_variables",
    "variables_initializer",
    "initialize_variables",
    "global_variables_initializer",
    "initialize_all_variables",
    "local_variables_initializer",
    "initialize_local_variables",
    "report_uninitialized_variables",
    "assert_variables_initialized",
]

_OVERLOADABLE_OPERATORS = [
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__lt__", "__le__",
    "__gt__", "__ge__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
    "__getitem__", "__pow__", "__rpow__", "__invert__", "__neg__", "__abs__", "__matmul__",
    "__rmatmul__",
]  # fmt: skip


@contextlib.contextmanager
def _outside_control_flow():
    """Builds the ops of the block outside any ``tf.while_loop`` being built.

    TF's ``control_dependencies(None)`` (in its ``init_scope``) also leaves
    the control-flow context: a variable made by a cell inside a loop's body
    (``dynamic_rnn``) is made, initialised and read once, outside the loop,
    and the loop reads it through an ``Enter``. Without this its initializer
    would be an op of the loop, run only when the loop runs.
    """
    graph = ops.get_default_graph()
    saved = graph._get_control_flow_context()
    graph._set_control_flow_context(None)
    try:
        yield
    finally:
        graph._set_control_flow_context(saved)


def _check_collections(collections) -> list:
    if collections is None:
        return [GraphKeys.GLOBAL_VARIABLES]
    if not isinstance(collections, (list, tuple, set)):
        raise ValueError(
            "collections argument to Variable constructor must be a list, tuple, or set. "
            f"Got {collections} of type {type(collections)}"
        )
    return list(collections)


class Variable:
    """A variable: state that persists across ``Session.run`` calls (TF1 ``tf.Variable``).

    Args:
        initial_value: A tensor, a value convertible to one, or a callable
            returning one (then built under ``tf.device(None)`` with the
            variable's colocation group). Required.
        trainable: If True (default), also added to ``TRAINABLE_VARIABLES``.
        collections: Collections to add the variable to (default ``[GLOBAL_VARIABLES]``).
        validate_shape: If False, the variable's shape may change on assignment.
        caching_device: A device for the ``read`` snapshot (default: with the variable).
        name: The variable's name (default ``"Variable"``).
        variable_def: A ``VariableDef`` dict (`to_proto`): rebuilds the Variable
            object over ops already in the default graph (an imported graph).
        dtype: Converts the initial value to this type.
        expected_shape: Deprecated; ignored, as in TF1.
        import_scope: With ``variable_def``: the name scope the graph was imported into.
        constraint: A projection applied by optimizers after updates (recorded).
        use_resource: If True, a resource variable (``VarHandleOp``).
        synchronization: Accepted for compatibility.
        aggregation: Accepted for compatibility.
        shape: The variable's shape, if it differs from the initial value's
            (with ``validate_shape=False``).

    Raises:
        ValueError: if ``initial_value`` is None or has no fully defined shape,
            if both ``initial_value`` and ``variable_def`` are given, if
            ``constraint`` is not callable, or if ``collections`` is not a
            list, tuple or set.
    """

    _is_ref_variable = True
    __array_priority__ = 100

    def __new__(cls, *args: Any, **kwargs: Any) -> Variable:
        if cls is Variable and kwargs.get("use_resource"):
            cls = ResourceVariable
        return super().__new__(cls)

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool | None = None,
        collections: list | tuple | set | None = None,
        validate_shape: bool = True,
        caching_device: str | None = None,
        name: str | None = None,
        variable_def: dict | None = None,
        dtype: dtypes.DType | None = None,
        expected_shape: tensor_shape.TensorShape | None = None,
        import_scope: str | None = None,
        constraint: Callable | None = None,
        use_resource: bool | None = None,
        synchronization: Any = None,
        aggregation: Any = None,
        shape: tensor_shape.TensorShape | list | None = None,
    ):
        del expected_shape, use_resource, synchronization, aggregation
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        trainable = True if trainable is None else bool(trainable)
        collections = _check_collections(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = collections + [GraphKeys.TRAINABLE_VARIABLES]
        self._trainable = trainable
        self._constraint = constraint
        self._save_slice_info = None
        init_from_fn = callable(initial_value)
        # TF builds variables in an init scope: outer control dependencies do not apply,
        # and a variable made in a loop's body is made outside the loop.
        with (
            _outside_control_flow(),
            ops.control_dependencies(None),
            ops.name_scope(name, "Variable", [] if init_from_fn else [initial_value]) as scope,
        ):
            true_name = scope[:-1]
            self._initial_value = self._build_initial_value(
                initial_value, init_from_fn, true_name, dtype
            )
            var_shape = self._variable_shape(validate_shape, shape)
            self._build(true_name, var_shape, validate_shape, caching_device)
        self._graph().add_to_collections(collections, self)

    # -- VariableDef: the variable in an exported graph ------------------------------------

    def to_proto(self, export_scope: str | None = None) -> dict | None:
        """The ``VariableDef`` of this variable, as a dict (TF's ``Variable.to_proto``).

        Args:
            export_scope: A name scope to strip from the names; a variable
                outside it gives None.
        """
        if not in_name_scope(self.name, export_scope):
            return None
        proto = {
            "variable_name": strip_name_scope(self._variable.name, export_scope),
            "initial_value_name": strip_name_scope(self._initial_value.name, export_scope),
            "initializer_name": strip_name_scope(self._initializer_op.name, export_scope),
            "snapshot_name": strip_name_scope(self._snapshot.name, export_scope),
            "is_resource": not self._is_ref_variable,
            "trainable": self._trainable,
        }
        info = self._save_slice_info
        if info is not None:
            proto["save_slice_info_def"] = {
                "full_name": strip_name_scope(info.full_name, export_scope),
                "full_shape": info.full_shape,
                "var_offset": info.var_offset,
                "var_shape": info.var_shape,
            }
        return proto

    @staticmethod
    def from_proto(variable_def: dict, import_scope: str | None = None) -> Variable:
        """The variable a ``VariableDef`` dict describes (TF's ``Variable.from_proto``).

        Args:
            variable_def: A ``VariableDef`` dict, as `to_proto` returns.
            import_scope: The name scope the graph was imported into, or None.
        """
        cls = ResourceVariable if variable_def.get("is_resource") else Variable
        return cls(variable_def=variable_def, import_scope=import_scope)

    def _init_from_proto(self, variable_def: dict, import_scope: str | None) -> None:
        from minitf.ops.state.partitioned_variables import SaveSliceInfo  # it imports this module

        graph = ops.get_default_graph()

        def element(field: str):
            return graph.as_graph_element(prepend_name_scope(variable_def[field], import_scope))

        self._variable = element("variable_name")
        self._initial_value = element("initial_value_name")
        self._initializer_op = element("initializer_name")
        self._snapshot = element("snapshot_name")
        self._trainable = variable_def.get("trainable", True)
        self._constraint = None
        self._save_slice_info = None
        info = variable_def.get("save_slice_info_def")
        if info is not None:
            self._save_slice_info = SaveSliceInfo(
                prepend_name_scope(info["full_name"], import_scope),
                info["full_shape"],
                info["var_offset"],
                info["var_shape"],
            )

    # -- construction --------------------------------------------------------------------

    @staticmethod
    def _build_initial_value(initial_value, init_from_fn, true_name, dtype) -> ops.Tensor:
        if not init_from_fn:
            return ops.convert_to_tensor(initial_value, name="initial_value", dtype=dtype)
        graph = ops.get_default_graph()
        # Initializers built from a callable go where the variable goes: TF marks
        # them with the variable's colocation group and clears the device stack.
        with graph.name_scope("Initializer"), ops.device(None):
            with graph._attr_scope({"_class": [f"loc:@{true_name}".encode()]}):
                return ops.convert_to_tensor(initial_value(), name="initial_value", dtype=dtype)

    def _variable_shape(self, validate_shape, shape) -> tensor_shape.TensorShape:
        if not validate_shape:
            return (
                tensor_shape.as_shape(shape) if shape is not None else tensor_shape.unknown_shape()
            )
        initial_shape = self._initial_value.get_shape()
        if not initial_shape.is_fully_defined():
            raise ValueError(f"initial_value must have a shape specified: {self._initial_value}")
        if shape is not None and not tensor_shape.as_shape(shape).is_compatible_with(initial_shape):
            raise ValueError(
                f"The initial value's shape ({initial_shape}) is not compatible with the "
                f"explicitly supplied `shape` argument ({tensor_shape.as_shape(shape)})."
            )
        return initial_shape

    def _build(self, true_name, var_shape, validate_shape, caching_device) -> None:
        dtype = self._initial_value.dtype.base_dtype
        self._variable = state_ops.variable_op_v2(var_shape, dtype, name=true_name + "/")
        with ops.colocate_with(self._variable.op):
            self._initializer_op = state_ops.assign(
                self._variable, self._initial_value, validate_shape=validate_shape, name="Assign"
            ).op
        if caching_device is not None:
            with ops.device(caching_device):
                self._snapshot = array_ops.identity(self._variable, name="read")
        else:
            with ops.colocate_with(self._variable.op):
                self._snapshot = array_ops.identity(self._variable, name="read")

    def _graph(self) -> ops.Graph:
        return self._variable.graph

    # -- properties ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name of the variable's tensor, e.g. ``"w:0"``."""
        return self._variable.name

    @property
    def _shared_name(self) -> str:
        return self.name[: self.name.index(":")]

    @property
    def op(self) -> ops.Operation:
        """The variable op (``VariableV2`` or ``VarHandleOp``)."""
        return self._variable.op

    @property
    def dtype(self) -> dtypes.DType:
        """The dtype (a ``_ref`` type for TF1 reference variables)."""
        return self._variable.dtype

    @property
    def device(self) -> str:
        """The variable op's device."""
        return self._variable.device

    @property
    def graph(self) -> ops.Graph:
        """The graph of the variable."""
        return self._graph()

    @property
    def shape(self) -> tensor_shape.TensorShape:
        """The static shape."""
        return self._variable.get_shape()

    def get_shape(self) -> tensor_shape.TensorShape:
        """Alias of `shape`."""
        return self.shape

    @property
    def trainable(self) -> bool:
        """Whether the variable is in ``TRAINABLE_VARIABLES`` by construction."""
        return self._trainable

    @property
    def constraint(self) -> Callable | None:
        """The constraint function, or None."""
        return self._constraint

    @property
    def initializer(self) -> ops.Operation:
        """The op that assigns the initial value."""
        return self._initializer_op

    @property
    def initial_value(self) -> ops.Tensor:
        """The initial-value tensor."""
        return self._initial_value

    # -- reading -------------------------------------------------------------------------

    def value(self) -> ops.Tensor:
        """The ``read`` snapshot tensor (what ops consuming the variable use)."""
        return self._snapshot

    def read_value(self) -> ops.Tensor:
        """A new op reading the current value."""
        return array_ops.identity(self._variable, name="read")

    def initialized_value(self) -> ops.Tensor:
        """The value, or the initial value if the variable is not yet initialized.

        Use it to initialize one variable from another.
        """
        with ops.control_dependencies(None):
            return state_ops.initialized_value_op(
                self._variable, self._initial_value, name=f"{self._shared_name}/initialized_value"
            )

    def eval(self, session: SessionInterface | None = None) -> Any:
        """The current value, computed in ``session`` or the default session.

        Args:
            session: The session to use; None means the default session.
        """
        return self._variable.eval(session=session)

    def _ref(self) -> ops.Tensor:
        return self._variable

    def _as_graph_element(self) -> ops.Tensor:
        return self._variable

    def _differentiable_tensor(self) -> ops.Tensor:
        return self._variable

    def _AsTensor(self) -> ops.Tensor:  # noqa: N802 - TF's name
        return self._snapshot

    def is_initialized(self, name: str | None = None) -> ops.Tensor:
        """A bool tensor: whether the variable has been initialized.

        Args:
            name: Unused; the op is named ``IsVariableInitialized``.
        """
        return state_ops.is_variable_initialized(self._variable)

    # -- writing -------------------------------------------------------------------------

    def assign(
        self,
        value: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> ops.Tensor | ops.Operation:
        """Assigns ``value``; returns the variable's ref after the assignment.

        Args:
            value: The new value, of the variable's dtype.
            use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold
                the variable's lock).
            name: A name for the operation (optional).
            read_value: If True, return the variable's ref after the update; if False, the update
                op.
        """
        result = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def assign_add(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> ops.Tensor | ops.Operation:
        """Adds ``delta``; returns the variable's ref after the update.

        Args:
            delta: The value to add.
            use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold
                the variable's lock).
            name: A name for the operation (optional).
            read_value: If True, return the variable's ref after the update; if False, the update
                op.
        """
        result = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def assign_sub(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> ops.Tensor | ops.Operation:
        """Subtracts ``delta``; returns the variable's ref after the update.

        Args:
            delta: The value to subtract.
            use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold
                the variable's lock).
            name: A name for the operation (optional).
            read_value: If True, return the variable's ref after the update; if False, the update
                op.
        """
        result = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def scatter_sub(
        self, sparse_delta: IndexedSlices, use_locking: bool = False, name: str | None = None
    ) -> ops.Tensor:
        """Subtracts an `IndexedSlices` from rows of the variable.

        Args:
            sparse_delta: An `IndexedSlices`: the rows to subtract and their indices.
            use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold
                the variable's lock).
            name: A name for the operation (optional).
        """
        return state_ops.scatter_sub(
            self._variable, sparse_delta.indices, sparse_delta.values, use_locking, name
        )

    def scatter_add(
        self, sparse_delta: IndexedSlices, use_locking: bool = False, name: str | None = None
    ) -> ops.Tensor:
        """Adds an `IndexedSlices` to rows of the variable.

        Args:
            sparse_delta: An `IndexedSlices`: the rows to add and their indices.
            use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold
                the variable's lock).
            name: A name for the operation (optional).
        """
        return state_ops.scatter_add(
            self._variable, sparse_delta.indices, sparse_delta.values, use_locking, name
        )

    def scatter_update(
        self, sparse_delta: IndexedSlices, use_locking: bool = False, name: str | None = None
    ) -> ops.Tensor:
        """Writes an `IndexedSlices` into rows of the variable.

        Args:
            sparse_delta: An `IndexedSlices`: the new rows and their indices.
            use_locking: TF's locking flag, kept as the op's attribute (minitf's kernels always hold
                the variable's lock).
            name: A name for the operation (optional).
        """
        return state_ops.scatter_update(
            self._variable, sparse_delta.indices, sparse_delta.values, use_locking, name
        )

    def count_up_to(self, limit: int) -> ops.Tensor:
        """Increments the variable until it reaches ``limit``; see `tf.count_up_to`.

        Args:
            limit: The value at which running the op raises ``OutOfRangeError``.

        Returns:
            A tensor that, when run, is the variable's value before the increment.
        """
        return state_ops.count_up_to(self, limit)

    def load(self, value: Any, session: SessionInterface | None = None) -> None:
        """Writes ``value`` into the variable by feeding its initializer's value.

        Args:
            value: The new value (a numpy array or a Python value).
            session: The session to use; None means the default session.

        Raises:
            ValueError: if no session is given and there is no default session.
        """
        if session is None:
            session = ops.get_default_session()
            if session is None:
                raise ValueError(
                    "Either session argument should be provided or default session should be "
                    "established"
                )
        session.run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    def set_shape(self, shape: tensor_shape.TensorShape | list) -> None:
        """Refines the static shape.

        Args:
            shape: A `TensorShape` (or list) compatible with the current shape.
        """
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __bool__(self) -> NoReturn:
        raise TypeError(
            "Using a `tf.Variable` as a Python `bool` is not allowed. Use `if v is not None:`."
        )

    def __iter__(self) -> NoReturn:
        raise TypeError("'Variable' object is not iterable.")

    def __array__(self, dtype: Any = None) -> NoReturn:
        raise TypeError(
            "A symbolic tf.Variable has no numpy value; evaluate it with sess.run(v) first."
        )


def _overload_operator(operator: str) -> None:
    def method(self, *args):
        return getattr(ops.Tensor, operator)(self.value(), *args)

    method.__name__ = operator
    setattr(Variable, operator, method)


for _operator in _OVERLOADABLE_OPERATORS:
    _overload_operator(_operator)

VariableV1 = Variable


class ResourceVariable(Variable):
    """A variable whose op is ``VarHandleOp``: reads and writes go through its handle."""

    _is_ref_variable = False

    def _build(self, true_name, var_shape, validate_shape, caching_device) -> None:
        dtype = self._initial_value.dtype.base_dtype
        self._handle = state_ops.var_handle_op(
            var_shape, dtype, name=true_name + "/", shared_name=true_name
        )
        self._dtype = dtype
        self._shape_attr = var_shape
        with ops.colocate_with(self._handle.op):
            with ops.name_scope("IsInitialized"):
                self._is_initialized_op = state_ops.var_is_initialized_op(self._handle)
            self._initializer_op = state_ops.resource_update_op(
                "AssignVariableOp", self._handle, self._initial_value, name="Assign"
            )
            with ops.name_scope("Read"):
                self._snapshot = state_ops.read_variable_op(self._handle, dtype)
        self._variable = self._handle

    def _init_from_proto(self, variable_def: dict, import_scope: str | None) -> None:
        super()._init_from_proto(variable_def, import_scope)
        self._handle = self._variable
        self._dtype = self._handle.op.get_attr("dtype")
        self._shape_attr = tensor_shape.as_shape(self._handle.op.get_attr("shape"))

    @property
    def handle(self) -> ops.Tensor:
        """The ``resource`` handle tensor."""
        return self._handle

    @property
    def dtype(self) -> dtypes.DType:
        """The variable's dtype (not a ref type)."""
        return self._dtype

    @property
    def shape(self) -> tensor_shape.TensorShape:
        """The static shape."""
        return self._shape_attr

    def _as_graph_element(self) -> ops.Tensor:
        return self._snapshot

    def value(self) -> ops.Tensor:
        """A new ``ReadVariableOp``, so it sees the control dependencies of its caller.

        (A resource variable's value is read when the read op runs; TF creates a
        read per use for the same reason.)
        """
        with ops.colocate_with(self._handle.op):
            return state_ops.read_variable_op(self._handle, self._dtype)

    def _AsTensor(self) -> ops.Tensor:  # noqa: N802 - TF's name
        return self.value()

    def _differentiable_tensor(self) -> ops.Tensor:
        return self._handle

    def _ref(self) -> ops.Tensor:
        return self._handle

    def read_value(self) -> ops.Tensor:
        """A new ``ReadVariableOp``."""
        with ops.name_scope("Read"):
            return state_ops.read_variable_op(self._handle, self._dtype)

    def initialized_value(self) -> ops.Tensor:
        """The value, or the initial value if the variable is not yet initialized."""
        with ops.control_dependencies(None):
            return state_ops.initialized_value_op(
                self._handle, self._initial_value, name=f"{self._shared_name}/initialized_value"
            )

    def eval(self, session: SessionInterface | None = None) -> Any:
        """The current value."""
        return self._snapshot.eval(session=session)

    def is_initialized(self, name: str | None = None) -> ops.Tensor:
        """A bool tensor: whether the variable has been initialized."""
        return state_ops.var_is_initialized_op(self._handle, name=name)

    def _update(self, op_type, value, name, read_value):
        op = state_ops.resource_update_op(op_type, self._handle, value, name=name)
        if not read_value:
            return op
        with ops.control_dependencies([op]):
            return self.read_value()

    def assign(
        self,
        value: Any,
        use_locking: bool | None = None,
        name: str | None = None,
        read_value: bool = True,
    ) -> ops.Tensor | ops.Operation:
        """Assigns ``value``; returns the new value (or the op if not ``read_value``)."""
        return self._update("AssignVariableOp", value, name, read_value)

    def assign_add(
        self,
        delta: Any,
        use_locking: bool | None = None,
        name: str | None = None,
        read_value: bool = True,
    ) -> ops.Tensor | ops.Operation:
        """Adds ``delta``."""
        return self._update("AssignAddVariableOp", delta, name, read_value)

    def assign_sub(
        self,
        delta: Any,
        use_locking: bool | None = None,
        name: str | None = None,
        read_value: bool = True,
    ) -> ops.Tensor | ops.Operation:
        """Subtracts ``delta``."""
        return self._update("AssignSubVariableOp", delta, name, read_value)

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


def _variable_conversion(var, dtype=None, name=None, as_ref=False):
    tensor = var._ref() if as_ref else var.value()
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(tensor.dtype):
        raise ValueError(
            f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' "
            f"for variable of type '{var.dtype.name}'"
        )
    return tensor


ops.register_tensor_conversion_function(Variable, _variable_conversion, 10)


# -- collections and initializers ---------------------------------------------------------


def global_variables(scope: str | None = None) -> list:
    """The variables in ``GLOBAL_VARIABLES`` (filtered by ``scope``).

    Args:
        scope: If given, keep only the variables whose name ``re.match`` matches it.
    """
    return ops.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def all_variables() -> list:
    """Deprecated alias of `global_variables`."""
    return global_variables()


def local_variables(scope: str | None = None) -> list:
    """The variables in ``LOCAL_VARIABLES``.

    Args:
        scope: If given, keep only the variables whose name ``re.match`` matches it.
    """
    return ops.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope: str | None = None) -> list:
    """The variables in ``TRAINABLE_VARIABLES``.

    Args:
        scope: If given, keep only the variables whose name ``re.match`` matches it.
    """
    return ops.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope: str | None = None) -> list:
    """The variables in ``MODEL_VARIABLES``.

    Args:
        scope: If given, keep only the variables whose name ``re.match`` matches it.
    """
    return ops.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list:
    """The variables in ``MOVING_AVERAGE_VARIABLES``.

    Args:
        scope: If given, keep only the variables whose name ``re.match`` matches it.
    """
    return ops.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list: list, name: str = "init") -> ops.Operation:
    """An op running the initializers of ``var_list`` (a ``NoOp`` if empty).

    Args:
        var_list: The variables to initialize.
        name: The name of the op.
    """
    var_list = list(var_list)
    if var_list:
        return control_flow_ops.group(*[v.initializer for v in var_list], name=name)
    return control_flow_ops.no_op(name=name)


def initialize_variables(var_list: list, name: str = "init") -> ops.Operation:
    """Deprecated alias of `variables_initializer`.

    Args:
        var_list: The variables to initialize.
        name: The name of the op.
    """
    return variables_initializer(var_list, name)


def global_variables_initializer() -> ops.Operation:
    """An op initializing all global variables (named ``init``)."""
    return variables_initializer(global_variables())


def initialize_all_variables() -> ops.Operation:
    """Deprecated alias of `global_variables_initializer`."""
    return global_variables_initializer()


def local_variables_initializer() -> ops.Operation:
    """An op initializing all local variables (named ``init``)."""
    return variables_initializer(local_variables())


def initialize_local_variables() -> ops.Operation:
    """Deprecated alias of `local_variables_initializer`."""
    return local_variables_initializer()


def report_uninitialized_variables(
    var_list: list | None = None, name: str = "report_uninitialized_variables"
) -> ops.Tensor:
    """A 1-D string tensor with the names of the uninitialized variables of ``var_list``.

    Built like TF's: one ``IsVariableInitialized`` op per variable (colocated
    with it, so on a cluster each check runs where the variable lives), then a
    mask over a constant list of names, on ``/cpu:0``. Defaults to all global
    and local variables.

    Args:
        var_list: The variables to check; None means every global and local variable.
        name: The name scope of the ops.
    """
    from minitf.ops.array.constant_op import constant
    from minitf.ops.math import math_ops

    if var_list is None:
        var_list = global_variables() + local_variables()
    var_list = list(var_list)
    with ops.name_scope(name):
        checks = [state_ops.is_variable_initialized(v) for v in var_list]
        with ops.device("/cpu:0"):
            if not var_list:
                return constant(np.array([], dtype=object), dtype=dtypes.string)
            uninitialized = math_ops.logical_not(array_ops.stack(checks))
            names = constant(np.array([v.op.name.encode() for v in var_list], dtype=object))
            return _boolean_mask(names, uninitialized)


def _boolean_mask(values: ops.Tensor, mask: ops.Tensor) -> ops.Tensor:
    """``values[mask]`` for 1-D tensors, from ``Where`` and ``GatherV2`` (TF's boolean_mask)."""
    with ops.name_scope(None, "boolean_mask", [values, mask]):
        indices = array_ops.squeeze(array_ops.where(mask), axis=[1])
        return array_ops.gather(values, indices)


def assert_variables_initialized(var_list: list | None = None) -> ops.Tensor | None:
    """An op that fails with FailedPreconditionError if a variable is uninitialized.

    Args:
        var_list: The variables to check; None means every global and local variable.

    Returns:
        A tensor to run (the variables' ranks), or None if there are no variables.
    """
    if var_list is None:
        var_list = global_variables() + local_variables()
    var_list = list(var_list)
    if not var_list:
        return None
    # As TF: the rank of each variable, computed on its device. ``Rank`` reads
    # the variable, which fails while it has no value.
    ranks = []
    for var in var_list:
        with ops.colocate_with(var.op):
            ranks.append(array_shaping.rank_internal(var, optimize=False))
    return ranks[0] if len(ranks) == 1 else array_ops.stack(ranks)


def _variable_to_proto(var: Variable, export_scope: str | None = None) -> dict | None:
    return var.to_proto(export_scope=export_scope)


# Variables in these collections are exported as their VariableDef (TF registers them here too).
for _key in (
    GraphKeys.GLOBAL_VARIABLES,
    GraphKeys.TRAINABLE_VARIABLES,
    GraphKeys.LOCAL_VARIABLES,
    GraphKeys.MODEL_VARIABLES,
    GraphKeys.MOVING_AVERAGE_VARIABLES,
    GraphKeys.METRIC_VARIABLES,
    GraphKeys.GLOBAL_STEP,
):
    meta_graph.register_proto_function(_key, _variable_to_proto, Variable.from_proto)
