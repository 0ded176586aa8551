"""The symbolic graph: `Graph`, `Operation` and `Tensor`.

A graph is plain data. An `Operation` has a type, a name, inputs (Tensors),
control inputs (Operations), attributes and a requested device; its outputs
are `Tensor` objects that carry a dtype and a static shape. Nothing here runs
anything: sessions (``minitf/runtime``) read the graph and execute it.

The graph also keeps the *construction context* that TF1 code manipulates with
``with`` blocks: the name-scope stack, the device-function stack
(``tf.device``), the colocation stack (``tf.colocate_with``) and the
control-dependency stack (``tf.control_dependencies``). `Graph.create_op`
applies all four to every new op, in TF's order.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from minitf.framework import device as pydev
from minitf.framework import dtypes, tensor_shape
from minitf.framework.op_registry import (  # noqa: F401 - re-exported, TF has them here
    NotDifferentiable,
    RegisterGradient,
    get_kernel_def,
    no_gradient,
)

if TYPE_CHECKING:
    from minitf.runtime.core.session import BaseSession

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/>]*$")


class Tensor:
    """A symbolic handle to one output of an `Operation`.

    A Tensor holds no value: its value is computed when a session runs the
    graph. ``Tensor.name`` is ``"<op name>:<output index>"``. Tensors are
    created by `Operation`, never directly.

    Args:
        op: The `Operation` that produces this tensor.
        value_index: The index of this tensor among ``op``'s outputs.
        dtype: The `DType` (or anything `as_dtype` accepts) of its elements.
        shape: Its static shape, or None for an unknown shape.
    """

    # Lets numpy defer to Tensor operators (``np.float32(2) * t`` builds an op).
    __array_priority__ = 100

    def __init__(
        self,
        op: Operation,
        value_index: int,
        dtype: dtypes.DType,
        shape: tensor_shape.TensorShape | list | None = None,
    ):
        self._op = op
        self._value_index = value_index
        self._dtype = dtypes.as_dtype(dtype)
        self._shape = tensor_shape.as_shape(shape) if shape is not None else _unknown()
        self._consumers: list[Operation] = []

    @property
    def op(self) -> Operation:
        """The `Operation` that produces this tensor."""
        return self._op

    @property
    def value_index(self) -> int:
        """The index of this tensor among its op's outputs."""
        return self._value_index

    @property
    def dtype(self) -> dtypes.DType:
        """The `DType` of the elements of this tensor."""
        return self._dtype

    @property
    def graph(self) -> Graph:
        """The `Graph` that contains this tensor."""
        return self._op.graph

    @property
    def name(self) -> str:
        """The tensor's name, ``"<op name>:<index>"``."""
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        """The requested device of the producing op."""
        return self._op.device

    @property
    def shape(self) -> tensor_shape.TensorShape:
        """The static (possibly partial) shape inferred at graph construction."""
        return self._shape

    def get_shape(self) -> tensor_shape.TensorShape:
        """Alias of `shape` (TF1 name)."""
        return self._shape

    def set_shape(self, shape: tensor_shape.TensorShape | list) -> None:
        """Refines the static shape by merging it with ``shape``.

        Args:
            shape: A `TensorShape`, or a list of dimensions (None for unknown).

        Raises:
            ValueError: if ``shape`` is not compatible with the current shape.
        """
        self._shape = self._shape.merge_with(tensor_shape.as_shape(shape))

    def consumers(self) -> list[Operation]:
        """The ops that take this tensor as an input."""
        return list(self._consumers)

    def eval(self, feed_dict: dict | None = None, session: BaseSession | None = None) -> Any:
        """Evaluates this tensor in ``session`` or the default session.

        Args:
            feed_dict: Values to feed, as in `Session.run`.
            session: The session to use; None means the default session.

        Returns:
            The tensor's value, a numpy array.

        Raises:
            ValueError: if there is no session to use, or its graph is not this
                tensor's graph.
        """
        return _eval_using_default_session(self, feed_dict, self.graph, session)

    def _as_node_def_input(self) -> str:
        return self._op.name if self._value_index == 0 else self.name

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    # TF1 semantics: tensors compare and hash by identity; use tf.equal for values.
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError(
            "Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
            "instead of `if t:` to test if a tensor is defined, and use TensorFlow ops such "
            "as tf.cond to execute subgraphs conditioned on the value of a tensor."
        )

    def __iter__(self):
        raise TypeError(
            "Tensor objects are only iterable when eager execution is enabled. "
            "To iterate over this tensor use tf.map_fn."
        )

    def __len__(self):
        raise TypeError(
            f"len is not well defined for symbolic Tensors. ({self.name}) Please call "
            "`x.shape` rather than `len(x)` for shape information."
        )

    @classmethod
    def _override_operator(cls, operator: str, func: Callable) -> None:
        """Installs ``func`` as ``Tensor.<operator>`` (used by math_ops)."""
        setattr(cls, operator, func)


def _unknown() -> tensor_shape.TensorShape:
    return tensor_shape.unknown_shape()


class Operation:
    """A node of the graph: an op type applied to input tensors.

    Ops are created by op constructors (``tf.matmul``, ``tf.Variable``, ...)
    through `Graph.create_op`, never directly.

    Args:
        graph: The `Graph` the op belongs to.
        op_type: The op type, e.g. ``"MatMul"``.
        name: The op's unique name in ``graph``.
        inputs: The input tensors.
        output_types: The `DType` of each output.
        output_shapes: The static shape of each output (None: all unknown).
        control_inputs: The ops that must run before this one.
        attrs: The op's attribute values.

    Raises:
        ValueError: if ``output_shapes`` and ``output_types`` differ in length.
    """

    def __init__(
        self,
        graph: Graph,
        op_type: str,
        name: str,
        inputs: list[Tensor],
        output_types: list,
        output_shapes: list | None,
        control_inputs: list[Operation],
        attrs: dict[str, Any],
    ):
        self._graph = graph
        self._type = op_type
        self._name = name
        self._inputs = tuple(inputs)
        self._control_inputs: list[Operation] = list(control_inputs)
        self._attrs = dict(attrs)
        self._device = ""
        self._device_assignments: list[tuple[str, str]] = []
        self._id = graph._next_id()
        shapes = output_shapes if output_shapes is not None else [None] * len(output_types)
        if len(shapes) != len(output_types):
            raise ValueError(
                f"Op '{name}' ({op_type}): {len(output_types)} output types "
                f"but {len(shapes)} output shapes"
            )
        self._outputs = [
            Tensor(self, i, dt, shape) for i, (dt, shape) in enumerate(zip(output_types, shapes))
        ]
        for t in self._inputs:
            t._consumers.append(self)

    @property
    def name(self) -> str:
        """The op's unique name in its graph."""
        return self._name

    @property
    def type(self) -> str:
        """The TF op type, e.g. ``"MatMul"`` or ``"VariableV2"``."""
        return self._type

    @property
    def graph(self) -> Graph:
        """The `Graph` this op belongs to."""
        return self._graph

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """The data inputs of this op."""
        return self._inputs

    @property
    def outputs(self) -> list[Tensor]:
        """The output tensors of this op."""
        return list(self._outputs)

    @property
    def control_inputs(self) -> list[Operation]:
        """The ops that must run before this one (no data flows)."""
        return list(self._control_inputs)

    @property
    def device(self) -> str:
        """The requested device, a canonical device string ("" if unconstrained)."""
        return self._device

    @property
    def device_assignments(self) -> tuple[tuple[str, str], ...]:
        """What set the requested device, in order: ``(source, device it gave)`` pairs.

        A source is ``"tf.device('/job:ps')"``, a device function
        (``"replica_device_setter(ps_tasks=2, ...)"``) or ``"colocate_with(<op>)"``;
        only the ones that changed the device are listed (TF keeps the same
        record as ``Operation._device_assignments``). Pictures show it in tooltips.
        """
        return tuple(self._device_assignments)

    @property
    def node_def(self) -> dict:
        """A NodeDef-like dict: name, op, input (``^name`` for control inputs), device, attr."""
        inputs = [t._as_node_def_input() for t in self._inputs]
        inputs += ["^" + op.name for op in self._control_inputs]
        return {
            "name": self._name,
            "op": self._type,
            "input": inputs,
            "device": self._device,
            "attr": dict(self._attrs),
        }

    def values(self) -> tuple[Tensor, ...]:
        """The output tensors, as a tuple."""
        return tuple(self._outputs)

    def get_attr(self, name: str) -> Any:
        """Returns the value of attribute ``name``.

        Args:
            name: The attribute name.

        Raises:
            ValueError: if the op has no such attribute.
        """
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def _set_attr(self, name: str, value: Any) -> None:
        self._attrs[name] = value

    def _attr_names(self) -> list[str]:
        return sorted(self._attrs)

    def _set_device(self, device, source: str | None = None) -> None:
        self._device = pydev.canonical_name(device)
        if source is not None and (
            not self._device_assignments or self._device_assignments[-1][1] != self._device
        ):
            self._device_assignments.append((source, self._device))

    def colocation_groups(self) -> list[bytes]:
        """The colocation groups of this op (``[b"loc:@<name>"]`` by default)."""
        groups = [g for g in self._attrs.get("_class", []) if g.startswith(b"loc:@")]
        return groups or [f"loc:@{self._name}".encode()]

    def _add_control_input(self, op: Operation) -> None:
        if not isinstance(op, Operation):
            raise TypeError(f"op must be an Operation: {op!r}")
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            self._graph._bump_version()

    def _add_control_inputs(self, ops) -> None:
        for op in ops:
            self._add_control_input(op)

    def run(self, feed_dict: dict | None = None, session: BaseSession | None = None) -> None:
        """Runs this op in ``session`` or the default session.

        Args:
            feed_dict: Values to feed, as in `Session.run`.
            session: The session to use; None means the default session.

        Raises:
            ValueError: if there is no session to use, or its graph is not this
                op's graph.
        """
        _run_using_default_session(self, feed_dict, self.graph, session)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"


class _DeviceEntry:
    """One entry of the device-function stack (TF's ``_UserDeviceSpec``)."""

    def __init__(self, device_name_or_function):
        self.raw = device_name_or_function
        self.function = None
        self.spec = None
        self.is_null_merge = False
        if device_name_or_function is None:
            return
        if callable(device_name_or_function) and not isinstance(
            device_name_or_function, (str, pydev.DeviceSpec)
        ):
            self.function = device_name_or_function
            return
        self.spec = _as_device_spec(device_name_or_function)
        self.is_null_merge = self.spec.to_string() == ""
        self.function = self._merge

    def describe(self) -> str:
        """How pictures name this entry: ``tf.device('/job:ps')`` or the device function."""
        if self.spec is not None:
            return f"tf.device({self.spec.to_string()!r})"
        owner = getattr(self.function, "__self__", None)
        if owner is not None and type(owner).__repr__ is not object.__repr__:
            return repr(owner)
        return "device function " + getattr(self.function, "__qualname__", repr(self.function))

    def _merge(self, op: Operation) -> str:
        # The op's current device (set by inner scopes) wins field by field; a
        # "*" index counts as unset because DeviceSpec parses it as None.
        current = pydev.DeviceSpec.from_string(op.device)
        return self.spec.make_merged_spec(current).to_string()


def _as_device_spec(device) -> pydev.DeviceSpec:
    if isinstance(device, pydev.DeviceSpec):
        return pydev.DeviceSpec.from_string(device.to_string())
    if isinstance(device, str):
        return pydev.DeviceSpec.from_string(device)
    raise TypeError(f"tf.device expects a string, a DeviceSpec, a function or None: {device!r}")


class _ControlDependencies:
    """One ``tf.control_dependencies`` block (TF's ``_ControlDependenciesController``)."""

    def __init__(self, graph: Graph, control_inputs: list[Operation] | None):
        self._graph = graph
        self.new_stack = control_inputs is None
        self.control_inputs = [] if control_inputs is None else control_inputs
        self.seen_ops: set[Operation] = set()
        self._saved_stack = None

    def __enter__(self):
        if self.new_stack:
            self._saved_stack = self._graph._control_dependencies_stack
            self._graph._control_dependencies_stack = []
        self._graph._control_dependencies_stack.append(self)

    def __exit__(self, *exc):
        stack = self._graph._control_dependencies_stack
        if not stack or stack[-1] is not self:
            raise RuntimeError("Control dependencies block exited out of order.")
        stack.pop()
        if self.new_stack:
            self._graph._control_dependencies_stack = self._saved_stack


class Graph:
    """A TensorFlow computation, as a dataflow graph of `Operation` objects."""

    def __init__(self):
        self._lock = threading.RLock()
        self._ops_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._version = 0
        self._last_id = 0
        self._unfeedable: set[Tensor] = set()
        self._unfetchable: set = set()
        self._gradient_override_map: dict[str, str] = {}
        self.seed: int | None = None
        self._device_function_stack: list = []
        self._colocation_stack: list = []
        self._control_dependencies_stack: list = []
        # Name scopes are per thread, as in TF1.
        self._thread_local = threading.local()

    # -- per-thread construction state -------------------------------------------------

    def _local(self, attr: str, factory):
        value = getattr(self._thread_local, attr, None)
        if value is None:
            value = factory()
            setattr(self._thread_local, attr, value)
        return value

    @property
    def _name_stack(self) -> str:
        return self._local("name_stack", str)

    @_name_stack.setter
    def _name_stack(self, value: str) -> None:
        self._thread_local.name_stack = value

    # TF1 keeps only the name stack per thread; the device, colocation and
    # control-dependency stacks belong to the graph and all threads see them.

    # -- basic properties ----------------------------------------------------------------

    @property
    def version(self) -> int:
        """A number that grows whenever the graph changes."""
        return self._version

    @property
    def finalized(self) -> bool:
        """True if the graph is finalized (read-only)."""
        return self._finalized

    @property
    def _last_op_id(self) -> int:
        return self._last_id

    def _next_id(self) -> int:
        self._last_id += 1
        return self._last_id

    def _bump_version(self) -> None:
        self._version += 1

    def finalize(self) -> None:
        """Makes the graph read-only: creating an op afterwards raises RuntimeError."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    # -- default graph -------------------------------------------------------------------

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Makes this graph the default graph of the current thread for a block."""
        _default_graph_stack.push(self)
        try:
            yield self
        finally:
            _default_graph_stack.pop(self)

    # -- lookups -------------------------------------------------------------------------

    def get_operations(self) -> list[Operation]:
        """All ops of the graph, in creation order."""
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        """Returns the op called ``name``.

        Args:
            name: The op's name.

        Raises:
            TypeError: if ``name`` is not a string.
            KeyError: if there is no such op (or ``name`` names a tensor).
        """
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        op = self.as_graph_element(name, allow_tensor=False, allow_operation=True)
        return op

    def get_tensor_by_name(self, name: str) -> Tensor:
        """Returns the tensor called ``name`` (``"op:index"``).

        Args:
            name: The tensor's name.

        Raises:
            TypeError: if ``name`` is not a string.
            KeyError: if there is no such tensor, or ``name`` names an op.
        """
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def as_graph_element(
        self, obj: Any, allow_tensor: bool = True, allow_operation: bool = True
    ) -> Tensor | Operation:
        """Returns the Tensor or Operation that ``obj`` (an object or a name) denotes.

        Args:
            obj: A `Tensor`, an `Operation`, their name, or an object with an
                ``_as_graph_element()`` method (a `Variable`).
            allow_tensor: Whether ``obj`` may denote a Tensor.
            allow_operation: Whether ``obj`` may denote an Operation.

        Raises:
            TypeError: if ``obj`` cannot be converted to an allowed element.
            ValueError: if ``obj`` belongs to another graph.
            KeyError: if a name does not exist in this graph.
        """
        if type(obj) is Tensor and allow_tensor and obj.graph is self:
            return obj  # the common case (a feed or a fetch every step): no lock needed
        with self._lock:
            return self._as_graph_element_locked(obj, allow_tensor, allow_operation)

    def _as_graph_element_locked(self, obj, allow_tensor, allow_operation):
        types_str = " or ".join(
            t for t, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok
        )
        conv = getattr(obj, "_as_graph_element", None)
        if conv is not None and callable(conv):
            obj = conv()
        if isinstance(obj, str):
            return self._element_by_name(obj, allow_tensor, allow_operation, types_str)
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError(f"Tensor {obj} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj} is not an element of this graph.")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {types_str}.")

    def _element_by_name(self, name, allow_tensor, allow_operation, types_str):
        if ":" in name and allow_tensor:
            op_name, _, index = name.rpartition(":")
            try:
                out_n = int(index)
            except ValueError:
                raise ValueError(
                    f"The name {name!r} looks a like a Tensor name, but is not a valid one. "
                    'Tensor names must be of the form "<op_name>:<output_index>".'
                ) from None
            if op_name not in self._ops_by_name:
                raise KeyError(
                    f"The name {name!r} refers to a Tensor which does not exist. "
                    f"The operation, {op_name!r}, does not exist in the graph."
                )
            op = self._ops_by_name[op_name]
            if out_n >= len(op._outputs):
                raise KeyError(
                    f"The name {name!r} refers to a Tensor which does not exist. The operation, "
                    f"{op_name!r}, exists but only has {len(op._outputs)} outputs."
                )
            return op._outputs[out_n]
        if ":" in name:
            raise ValueError(f"Name {name!r} appears to refer to a Tensor, not a {types_str}.")
        if not allow_operation:
            if name in self._ops_by_name:
                raise ValueError(
                    f"The name {name!r} refers to an Operation, not a {types_str}. Tensor names "
                    'must be of the form "<op_name>:<output_index>".'
                )
            raise ValueError(
                f"The name {name!r} looks like an (invalid) Operation name, not a {types_str}. "
                'Tensor names must be of the form "<op_name>:<output_index>".'
            )
        if name not in self._ops_by_name:
            raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
        return self._ops_by_name[name]

    # -- feeding and fetching rules -------------------------------------------------------

    def prevent_feeding(self, tensor: Tensor) -> None:
        """Marks ``tensor`` as not feedable.

        Args:
            tensor: The tensor that may not be fed.
        """
        self._unfeedable.add(tensor)

    def is_feedable(self, tensor: Tensor) -> bool:
        """True if ``tensor`` may be fed.

        Args:
            tensor: The tensor to ask about.
        """
        return tensor not in self._unfeedable

    def prevent_fetching(self, op: Operation) -> None:
        """Marks ``op`` as not fetchable.

        Args:
            op: The op that may not be fetched (nor its outputs).
        """
        self._unfetchable.add(op)
        self._version += 1  # what a session kept for fetching it is stale

    def is_fetchable(self, tensor_or_op: Tensor | Operation) -> bool:
        """True if ``tensor_or_op`` may be fetched.

        Args:
            tensor_or_op: The `Tensor` or `Operation` to ask about.
        """
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable

    # -- naming --------------------------------------------------------------------------

    def get_name_scope(self) -> str:
        """The current name scope, without a trailing slash."""
        return self._name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """Returns ``name`` under the current scope, made unique by a ``_<n>`` suffix.

        Args:
            name: The name to prefix with the current scope.
            mark_as_used: Whether to reserve the returned name, so that the next
                call with the same ``name`` gives another one.
        """
        if self._name_stack:
            name = self._name_stack + "/" + name
        # Case-insensitive, like TF: "A" and "a" must not collide on some file systems.
        name_key = name.lower()
        i = self._names_in_use.get(name_key, 0)
        if mark_as_used:
            self._names_in_use[name_key] = i + 1
        if i > 0:
            base_key = name_key
            while name_key in self._names_in_use:
                name_key = f"{base_key}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[name_key] = 1
            name = f"{name}_{i - 1}"
        return name

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Opens a name scope; yields the scope string with a trailing ``/``.

        ``None`` or ``""`` resets to the root scope; a name ending in ``/`` re-enters
        an existing scope verbatim; any other name is made unique.

        Args:
            name: The scope name.

        Raises:
            ValueError: if ``name`` is not a valid scope name.
        """
        if name:
            pattern = _VALID_SCOPE_NAME if self._name_stack else _VALID_OP_NAME
            if not pattern.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
        old_stack = self._name_stack
        if not name:
            new_stack, returned = "", ""
        elif name.endswith("/"):
            new_stack, returned = name[:-1], name
        else:
            new_stack = self.unique_name(name)
            returned = new_stack + "/"
        self._name_stack = new_stack
        try:
            yield returned
        finally:
            self._name_stack = old_stack

    # -- devices, colocation, control dependencies ----------------------------------------

    @contextlib.contextmanager
    def device(
        self, device_name_or_function: str | pydev.DeviceSpec | Callable | None
    ) -> Iterator[None]:
        """Pushes a device string, `DeviceSpec`, device function or None for a block.

        Args:
            device_name_or_function: A device string or `DeviceSpec` to merge
                into the device of each new op, a function ``op -> device``, or
                None to ignore every outer device scope.

        Raises:
            TypeError: if ``device_name_or_function`` is none of these.
            RuntimeError: if the scopes are exited out of order.
        """
        entry = _DeviceEntry(device_name_or_function)
        stack = self._device_function_stack
        stack.append(entry)
        try:
            yield
        finally:
            if not stack or stack[-1] is not entry:
                raise RuntimeError("Exiting device scope without proper scope nesting")
            stack.pop()

    def _apply_device_functions(self, op: Operation) -> None:
        # Innermost first: an inner scope's choice is seen (and by default kept)
        # by the outer ones; a None entry hides everything outside it.
        for entry in reversed(self._device_function_stack):
            if entry.is_null_merge:
                continue
            if entry.function is None:
                break
            before = op.device
            device = entry.function(op)
            op._set_device(device, None if device == before else entry.describe())

    @contextlib.contextmanager
    def colocate_with(self, op: Any, ignore_existing: bool = False) -> Iterator[None]:
        """Places ops created in the block on the device of ``op``.

        The device-function stack is emptied for the block: colocation beats
        every outer ``tf.device`` scope (and, when ``op`` has a device, inner ones).

        Args:
            op: The `Operation`, `Tensor` or `Variable` to colocate with, or
                None (with ``ignore_existing``) to clear the colocation stack.
            ignore_existing: Whether to drop the enclosing colocations.

        Raises:
            ValueError: if ``op`` is None and ``ignore_existing`` is False.
        """
        if op is None and not ignore_existing:
            raise ValueError(
                "Trying to reset colocation (op is None) but ignore_existing is not True"
            )
        op = _op_to_colocate_with(op, self)
        saved_devices = self._device_function_stack
        self._device_function_stack = []
        saved_colocation = None
        if ignore_existing:
            saved_colocation = self._colocation_stack
            self._colocation_stack = []
        if op is not None:
            self._colocation_stack.append(op)
        try:
            yield
        finally:
            self._device_function_stack = saved_devices
            if op is not None:
                self._colocation_stack.pop()
            if ignore_existing:
                self._colocation_stack = saved_colocation

    def _apply_colocation(self, op: Operation) -> None:
        stack = self._colocation_stack
        if not stack:
            return
        groups = set()
        device_set = False
        for target in reversed(stack):
            groups.update(target.colocation_groups())
            if target.device and not device_set:
                op._set_device(target.device, f"colocate_with({target.name})")
                device_set = True
        op._set_attr("_class", sorted(groups))

    def control_dependencies(
        self, control_inputs: Iterable[Operation | Tensor] | None
    ) -> _ControlDependencies:
        """Makes ops created in the block depend on ``control_inputs`` (None clears).

        Args:
            control_inputs: The `Operation` or `Tensor` objects that must run
                before the ops created in the block, or None to clear every
                enclosing control dependency for the block.
        """
        if control_inputs is None:
            return _ControlDependencies(self, None)
        current = {op for block in self._control_dependencies_stack for op in block.control_inputs}
        control_ops = []
        for c in control_inputs:
            c = _control_input_op(self, c)
            if c not in current:
                control_ops.append(c)
                current.add(c)
        return _ControlDependencies(self, control_ops)

    def _control_dependencies_for_inputs(self, input_ops: list[Operation]) -> list[Operation]:
        result = []
        for block in self._control_dependencies_stack:
            # An input created inside the block already depends on its inputs.
            if any(op in block.seen_ops for op in input_ops):
                continue
            result.extend(c for c in block.control_inputs if c not in input_ops)
        return result

    @contextlib.contextmanager
    def _attr_scope(self, attr_map: dict[str, Any]) -> Iterator[None]:
        """Gives every op created in the block these attributes (TF's ``_attr_scope``)."""
        saved = dict(self._local("attr_scope", dict))
        self._thread_local.attr_scope = {**saved, **attr_map}
        try:
            yield
        finally:
            self._thread_local.attr_scope = saved

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]) -> Iterator[None]:
        """Uses other registered gradient functions for ops created in the block.

        Args:
            op_type_map: Maps an op type to the op type whose gradient function
                its ops use instead.

        Raises:
            TypeError: if ``op_type_map`` does not map strings to strings.
        """
        for key, value in op_type_map.items():
            if not (isinstance(key, str) and isinstance(value, str)):
                raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        saved = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = saved

    # -- op creation ---------------------------------------------------------------------

    def create_op(
        self,
        op_type: str,
        inputs: list[Tensor],
        dtypes: list | None = None,
        input_types: list | None = None,
        name: str | None = None,
        attrs: dict | None = None,
        op_def: Any = None,
        compute_shapes: bool = True,
        compute_device: bool = True,
        shapes: list | None = None,
    ) -> Operation:
        """Adds an op to the graph (TF1's ``Graph.create_op``; ``shapes`` is minitf's).

        Args:
            op_type: The op type name (it must have a kernel to be run).
            inputs: The input tensors.
            dtypes: The output dtypes.
            input_types: Unused; accepted for TF1 compatibility.
            name: The op name; made unique unless it ends with ``/``.
            attrs: Attribute values.
            op_def: Unused; accepted for TF1 compatibility.
            compute_shapes: Unused; shapes are inferred by the op constructors.
            compute_device: Whether to apply device functions and colocation.
            shapes: The static shapes of the outputs (None entries: unknown).

        Returns:
            The new `Operation`.

        Raises:
            TypeError: if an input is not a Tensor.
            ValueError: if an input comes from another graph.
        """
        del input_types, op_def, compute_shapes
        self._check_not_finalized()
        inputs = list(inputs)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Input to '{op_type}' is not a Tensor: {t!r}")
            if t.graph is not self:
                raise ValueError(f"{t} must be from the same graph as the op being created.")
        must_colocate = _ref_inputs(op_type, inputs)
        if must_colocate:
            # An op that writes a variable goes where the variable is (TF's
            # op_def_library colocates every op with its Ref inputs).
            with contextlib.ExitStack() as stack:
                for t in must_colocate:
                    stack.enter_context(self.colocate_with(t.op))
                return self._create_op_locked(
                    op_type, inputs, dtypes, name, attrs, compute_device, shapes
                )
        return self._create_op_locked(op_type, inputs, dtypes, name, attrs, compute_device, shapes)

    def _create_op_locked(self, op_type, inputs, dtypes, name, attrs, compute_device, shapes):
        with self._lock:
            name = self._op_name(name or op_type)
            control = self._control_dependencies_for_inputs([t.op for t in inputs])
            attrs = {**self._local("attr_scope", dict), **(attrs or {})}
            if op_type in self._gradient_override_map:
                attrs["_gradient_op_type"] = self._gradient_override_map[op_type]
            op = Operation(self, op_type, name, inputs, list(dtypes or []), shapes, control, attrs)
            if compute_device:
                self._apply_device_functions(op)
            self._apply_colocation(op)
            self._add_op(op)
        return op

    def _import_op(
        self, op_type, name, inputs, out_dtypes, shapes, control_inputs, attrs, device
    ) -> Operation:
        """Adds an op exactly as described: its name, device and control inputs as given.

        For graphs rebuilt from a description (a partition sent to a task):
        no device functions, colocation or control-dependency scopes apply.
        """
        with self._lock:
            if name in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            self._names_in_use.setdefault(name.lower(), 1)
            op = Operation(
                self,
                op_type,
                name,
                list(inputs),
                list(out_dtypes),
                list(shapes),
                list(control_inputs),
                dict(attrs),
            )
            op._set_device(device)
            self._add_op(op)
        return op

    def _op_name(self, name: str) -> str:
        if name.endswith("/"):
            name = name[:-1]
            if name in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            self._names_in_use.setdefault(name.lower(), 1)
            return name
        full_name = self.unique_name(name)
        if not _VALID_OP_NAME.match(full_name):
            raise ValueError(f"'{full_name}' is not a valid node name")
        return full_name

    def _add_op(self, op: Operation) -> None:
        self._ops_by_name[op.name] = op
        self._ops.append(op)
        for block in self._control_dependencies_stack:
            block.seen_ops.add(op)
        self._version += 1

    # -- collections ---------------------------------------------------------------------

    def add_to_collection(self, name: str, value: Any) -> None:
        """Appends ``value`` to the collection ``name``.

        Args:
            name: The collection's key.
            value: The value to add.
        """
        self._check_not_finalized()
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: str | Iterable[str], value: Any) -> None:
        """Appends ``value`` to each collection in ``names`` (a name or an iterable).

        Args:
            names: A collection key, or an iterable of them (each used once).
            value: The value to add.
        """
        names = (names,) if isinstance(names, str) else set(names)
        for name in names:
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        """Returns the collection list itself (mutations change the collection).

        Args:
            name: The collection's key; an empty collection is created if needed.
        """
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list:
        """Returns a copy of collection ``name``, filtered by ``scope`` (a regex on names).

        Args:
            name: The collection's key.
            scope: If given, keep only the items with a ``name`` that
                ``re.match`` matches (items without a name are dropped).
        """
        with self._lock:
            items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [
            item
            for item in items
            if getattr(item, "name", None) is not None and pattern.match(item.name)
        ]

    def get_all_collection_keys(self) -> list[str]:
        """The names of the non-empty collections."""
        with self._lock:
            return [k for k in self._collections if isinstance(k, str)]

    def clear_collection(self, name: str) -> None:
        """Removes collection ``name``.

        Args:
            name: The collection's key.
        """
        self._check_not_finalized()
        with self._lock:
            self._collections.pop(name, None)

    def __repr__(self) -> str:
        return f"<minitf.Graph with {len(self._ops)} ops>"


def _ref_inputs(op_type: str, inputs: list[Tensor]) -> list[Tensor]:
    kernel_def = get_kernel_def(op_type)
    if kernel_def is None or not kernel_def.ref_inputs:
        return []
    return [t for i, t in enumerate(inputs) if i in kernel_def.ref_inputs and t.dtype._is_ref_dtype]


def _op_to_colocate_with(v, graph: Graph) -> Operation | None:
    if v is None:
        return None
    if isinstance(v, Operation):
        return v
    if isinstance(v, Tensor):
        return v.op
    conv = getattr(v, "_as_graph_element", None)
    if conv is not None:
        elem = conv()
        return elem.op if isinstance(elem, Tensor) else elem
    op = getattr(v, "op", None)
    if isinstance(op, Operation):
        return op
    return convert_to_tensor(v).op


def _control_input_op(graph: Graph, c) -> Operation:
    # IndexedSlices and resource variables stand for their op (a resource
    # variable's control dependency must not read it).
    if type(c).__name__ == "IndexedSlices" or (hasattr(c, "_handle") and hasattr(c, "op")):
        return c.op
    try:
        c = graph.as_graph_element(c)
    except TypeError:
        raise TypeError(f"Control input must be Operation or Tensor: {c}") from None
    if isinstance(c, Tensor):
        return c.op
    return c


# -- the default graph and the default session, per thread ---------------------------------


class _DefaultStack(threading.local):
    """A per-thread stack with a process-wide fallback (TF's _DefaultGraphStack)."""

    def __init__(self):
        super().__init__()
        self.stack: list = []

    def push(self, obj) -> None:
        self.stack.append(obj)

    def pop(self, obj) -> None:
        if not self.stack or self.stack[-1] is not obj:
            raise AssertionError("Nesting violated for default stack of objects")
        self.stack.pop()


class _DefaultGraphStack(_DefaultStack):
    _global_graph: Graph | None = None
    _global_lock = threading.Lock()

    def get(self) -> Graph:
        if self.stack:
            return self.stack[-1]
        with _DefaultGraphStack._global_lock:
            if _DefaultGraphStack._global_graph is None:
                _DefaultGraphStack._global_graph = Graph()
            return _DefaultGraphStack._global_graph

    def reset(self) -> None:
        if self.stack:
            raise AssertionError(
                "Do not use tf.reset_default_graph() to clear nested graphs. If you need a "
                "cleared graph, exit the nesting and create a new graph."
            )
        with _DefaultGraphStack._global_lock:
            _DefaultGraphStack._global_graph = Graph()


_default_graph_stack = _DefaultGraphStack()
_default_session_stack = _DefaultStack()


def get_default_graph() -> Graph:
    """Returns the default graph of the current thread."""
    return _default_graph_stack.get()


def reset_default_graph() -> None:
    """Clears the default graph stack and replaces the global default graph.

    Raises:
        AssertionError: if called inside a ``with graph.as_default()`` block.
    """
    _default_graph_stack.reset()


def get_default_session():
    """Returns the innermost session entered with ``with sess.as_default()`` (or None)."""
    stack = _default_session_stack.stack
    return stack[-1] if stack else None


@contextlib.contextmanager
def default_session(session) -> Iterator[Any]:
    """Makes ``session`` the default session of the current thread for a block."""
    _default_session_stack.push(session)
    try:
        yield session
    finally:
        _default_session_stack.pop(session)


def _session_for_eval(graph: Graph, session, what: str):
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(
                f"Cannot {what} using `{'eval' if what.startswith('evaluate') else 'run'}()`: "
                "No default session is registered. Use `with sess.as_default()` or pass an "
                f"explicit session to `{'eval' if what.startswith('evaluate') else 'run'}"
                "(session=sess)`"
            )
    if session.graph is not graph:
        raise ValueError(
            f"Cannot use the given session to {what}: the {what.split()[-1]}'s graph is "
            "different from the session's graph. Pass an explicit session to "
            f"`{'eval' if what.startswith('evaluate') else 'run'}(session=sess)`."
        )
    return session


def _eval_using_default_session(tensors, feed_dict, graph, session=None):
    session = _session_for_eval(graph, session, "evaluate tensor")
    return session.run(tensors, feed_dict)


def _run_using_default_session(operation, feed_dict, graph, session=None):
    session = _session_for_eval(graph, session, "execute operation")
    session.run(operation, feed_dict)


# -- module-level scopes (tf.name_scope, tf.device, ...) ----------------------------------


def _graph_elements(values) -> list:
    found = []
    for v in values or ():
        conv = getattr(v, "_as_graph_element", None)
        if conv is not None and callable(conv):
            v = conv()
        if isinstance(v, (Tensor, Operation)):
            found.append(v)
        elif type(v).__name__ == "IndexedSlices":
            found.append(v.values)
    return found


def _get_graph_from_inputs(values) -> Graph:
    """Returns the graph of the graph elements in ``values`` (default graph if none).

    Raises:
        ValueError: if the elements come from different graphs.
    """
    graph = None
    first = None
    for elem in _graph_elements(values):
        if graph is None:
            graph, first = elem.graph, elem
        elif elem.graph is not graph:
            raise ValueError(f"{elem} must be from the same graph as {first}.")
    return graph if graph is not None else get_default_graph()


@contextlib.contextmanager
def name_scope(
    name: str | None, default_name: str | None = None, values: list | None = None
) -> Iterator[str]:
    """Opens a name scope in the graph of ``values`` (TF1's ``tf.name_scope``).

    Enters the graph of ``values`` (or the default graph) and opens
    ``name`` (``default_name`` if ``name`` is None) in it; yields the scope
    string with a trailing ``/``.

    Args:
        name: The scope name (see `Graph.name_scope`).
        default_name: The name to use if ``name`` is None.
        values: The tensors passed to the op function; their graph is entered.

    Raises:
        ValueError: if ``values`` are given but neither ``name`` nor
            ``default_name``, if ``values`` come from different graphs, or if
            the name is not a valid scope name.
    """
    scope_name = default_name if name is None else name
    if scope_name is None and values is not None:
        raise ValueError(
            f"At least one of name ({name}) and default_name ({default_name}) must be provided."
        )
    graph = _get_graph_from_inputs(values)
    with graph.as_default(), graph.name_scope(scope_name) as scope:
        yield scope


def device(device_name_or_function: str | pydev.DeviceSpec | Callable | None):
    """``tf.device``: a context manager for the default graph's device stack.

    Args:
        device_name_or_function: A device string, `DeviceSpec`, device function
            or None; see `Graph.device`.
    """
    return get_default_graph().device(device_name_or_function)


def colocate_with(op: Any, ignore_existing: bool = False):
    """``tf.colocate_with``: places new ops in the block with ``op``.

    Args:
        op: The op (or tensor, or variable) to colocate with; see
            `Graph.colocate_with`.
        ignore_existing: Whether to drop the enclosing colocations.
    """
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs: Iterable[Operation | Tensor] | None):
    """``tf.control_dependencies``: new ops in the block depend on ``control_inputs``.

    Args:
        control_inputs: The ops or tensors to depend on, or None to clear the
            enclosing control dependencies; see `Graph.control_dependencies`.
    """
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name: str, value: Any) -> None:
    """Adds ``value`` to collection ``name`` of the default graph.

    Args:
        name: The collection's key.
        value: The value to add.
    """
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: str | Iterable[str], value: Any) -> None:
    """Adds ``value`` to each of the collections ``names`` of the default graph.

    Args:
        names: A collection key, or an iterable of them.
        value: The value to add.
    """
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list:
    """Returns a copy of collection ``key`` of the default graph.

    Args:
        key: The collection's key, e.g. ``tf.GraphKeys.GLOBAL_VARIABLES``.
        scope: If given, keep only the items whose ``name`` ``re.match``
            matches it.
    """
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list:
    """Returns collection ``key`` of the default graph (mutable).

    Args:
        key: The collection's key; an empty collection is created if needed.
    """
    return get_default_graph().get_collection_ref(key)


# -- tensor conversion ---------------------------------------------------------------------

_conversion_functions: list[tuple[int, type, Callable]] = []


def register_tensor_conversion_function(base_type, conversion_func, priority: int = 100):
    """Registers ``conversion_func(value, dtype=None, name=None, as_ref=False)`` for a type.

    Functions with lower ``priority`` are tried first.
    """
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda entry: entry[0])


def convert_to_tensor(
    value: Any,
    dtype: dtypes.DType | None = None,
    name: str | None = None,
    preferred_dtype: dtypes.DType | None = None,
    dtype_hint: dtypes.DType | None = None,
) -> Tensor:
    """Converts ``value`` (a Tensor, Variable, numpy array, Python number or list) to a Tensor.

    Args:
        value: The object to convert.
        dtype: The dtype the result must have; None infers it from ``value``.
        name: The name of a new constant, if one is created.
        preferred_dtype: The dtype to try first when ``dtype`` is None; if the
            conversion to it fails, the inferred dtype is used.
        dtype_hint: TF 2's name for ``preferred_dtype``.

    Raises:
        ValueError: if ``value`` is None, or a tensor of another dtype than ``dtype``.
        TypeError: if ``value`` cannot be converted.
    """
    return internal_convert_to_tensor(
        value, dtype, name, as_ref=False, preferred_dtype=preferred_dtype or dtype_hint
    )


def internal_convert_to_tensor(value, dtype=None, name=None, as_ref=False, preferred_dtype=None):
    """`convert_to_tensor` with ``as_ref`` (Variables then give their reference tensor)."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                f"{value.dtype.name}: {value!r}"
            )
        return value
    if dtype is None and preferred_dtype is not None:
        try:
            result = _convert_with_registry(value, dtypes.as_dtype(preferred_dtype), name, as_ref)
            if result.dtype.base_dtype == dtypes.as_dtype(preferred_dtype).base_dtype:
                return result
        except (TypeError, ValueError):
            pass
    return _convert_with_registry(value, dtype, name, as_ref)


def _convert_with_registry(value, dtype, name, as_ref):
    for _, base_type, func in _conversion_functions:
        if isinstance(value, base_type):
            result = func(value, dtype=dtype, name=name, as_ref=as_ref)
            if result is NotImplemented:
                continue
            if not isinstance(result, Tensor):
                raise RuntimeError(f"Conversion function {func!r} returned non-Tensor: {result!r}")
            if dtype is not None and not dtype.is_compatible_with(result.dtype):
                raise RuntimeError(
                    f"Conversion function {func!r} for type {base_type} returned incompatible "
                    f"dtype: requested = {dtype.name}, actual = {result.dtype.name}"
                )
            return result
    if value is None:
        # TF converts None with tf.constant, which refuses it with a ValueError.
        raise ValueError(
            "None values not supported" + (f" (the value of {name!r})." if name else ".")
        )
    raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: {value}.")


def convert_n_to_tensor(values, dtype=None, name=None, preferred_dtype=None) -> list[Tensor]:
    """Converts each of ``values`` to a Tensor (names ``<name>_<i>``)."""
    return [
        convert_to_tensor(
            v, dtype, None if name is None else f"{name}_{i}", preferred_dtype=preferred_dtype
        )
        for i, v in enumerate(values)
    ]


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """Returns ``value`` if it is `IndexedSlices`, else `convert_to_tensor(value)`."""
    if type(value).__name__ == "IndexedSlices":
        return value
    return convert_to_tensor(value, dtype, name)
