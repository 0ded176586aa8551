"""`Graph`: the ops of a computation, and the context TF1 code builds them in.

A graph is plain data: its ops in creation order, found by name; rules about
what may be fed or fetched; collections; and the construction context
(names, devices, colocation, control dependencies) that `Graph.create_op`
applies to every new op. Nothing here runs anything: sessions
(``minitf/runtime``) read the graph and execute it.

Each thread has a default graph (`get_default_graph`), the one op
constructors add to; ``with g.as_default():`` changes it for a block.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from minitf.framework import device as pydev
from minitf.framework.colocation import ColocationStack, op_to_colocate_with
from minitf.framework.control_dependencies import ControlDependencyStack, control_input_ops
from minitf.framework.default_session import _DefaultStack
from minitf.framework.device_stack import DeviceFunctionStack
from minitf.framework.graph_collections import GraphCollections
from minitf.framework.graph_elements import find_element
from minitf.framework.name_scope import GraphNames, is_valid_op_name
from minitf.framework.op_registry import get_kernel_def
from minitf.framework.operation import Operation
from minitf.framework.tensor import Tensor


class Graph(GraphCollections):
    """A TensorFlow computation, as a dataflow graph of `Operation` objects.

    Besides its ops, a graph keeps what TF1 code changes with ``with``
    blocks, each an object of its own module: the names and name scopes
    (`minitf.framework.name_scope`), the device-function stack
    (`minitf.framework.device_stack`), the colocation stack
    (`minitf.framework.colocation`) and the control-dependency blocks
    (`minitf.framework.control_dependencies`). `create_op` applies all four
    to every new op, in TF's order. Its collections
    (``tf.GraphKeys.GLOBAL_VARIABLES`` and the like) are
    `minitf.framework.graph_collections.GraphCollections`.
    """

    def __init__(self):
        super().__init__()
        self._lock = threading.RLock()
        self._ops_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._names = GraphNames()
        self._finalized = False
        self._version = 0
        self._last_id = 0
        self._unfeedable: set[Tensor] = set()
        self._unfetchable: set = set()
        self._gradient_override_map: dict[str, str] = {}
        self.seed: int | None = None
        self._device_function_stack = DeviceFunctionStack()
        self._colocation_stack = ColocationStack()
        self._control_dependencies_stack = ControlDependencyStack()
        # Attribute scopes are per thread, like name scopes.
        self._thread_local = threading.local()

    # -- per-thread construction state -------------------------------------------------

    def _local(self, attr: str, factory):
        value = getattr(self._thread_local, attr, None)
        if value is None:
            value = factory()
            setattr(self._thread_local, attr, value)
        return value

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
    def building_function(self) -> bool:
        """True for a graph a function is traced into (a ``Dataset.map`` body)."""
        return False

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

    def as_default(self) -> AbstractContextManager[Graph]:
        """Makes this graph the default graph of the current thread for a block."""
        return _AsDefault(self)

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
        op = self._ops_by_name.get(name)
        if op is not None and ":" not in name:
            return op  # the common case (a partition rebuilt): no lock needed
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

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
        # The common case (a partition rebuilt) without the lock; anything else
        # (a bad index, a missing op) takes the full path and its errors.
        op_name, _, index = name.rpartition(":")
        op = self._ops_by_name.get(op_name)
        if op is not None and index.isdecimal() and int(index) < len(op._outputs):
            return op._outputs[int(index)]
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
            return find_element(self, self._ops_by_name, obj, allow_tensor, allow_operation)

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
        return self._names.current_scope

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """Returns ``name`` under the current scope, made unique by a ``_<n>`` suffix.

        Args:
            name: The name to prefix with the current scope.
            mark_as_used: Whether to reserve the returned name, so that the next
                call with the same ``name`` gives another one.
        """
        return self._names.unique_name(name, mark_as_used)

    def name_scope(self, name: str | None) -> AbstractContextManager[str]:
        """Opens a name scope; yields the scope string with a trailing ``/``.

        ``None`` or ``""`` resets to the root scope; a name ending in ``/`` re-enters
        an existing scope verbatim; any other name is made unique.

        Args:
            name: The scope name.

        Raises:
            ValueError: if ``name`` is not a valid scope name.
        """
        return self._names.scope(name)

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
        with self._device_function_stack.push(device_name_or_function):
            yield

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
        op = op_to_colocate_with(op)
        with self._device_function_stack.cleared():
            with self._colocation_stack.push(op, ignore_existing):
                yield

    def control_dependencies(
        self, control_inputs: Iterable[Operation | Tensor] | None
    ) -> contextlib.AbstractContextManager:
        """Makes ops created in the block depend on ``control_inputs`` (None clears).

        Args:
            control_inputs: The `Operation` or `Tensor` objects that must run
                before the ops created in the block, or None to clear every
                enclosing control dependency for the block.
        """
        if control_inputs is None:
            return self._control_dependencies_stack.block(None)
        return self._control_dependencies_stack.block(control_input_ops(self, control_inputs))

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
            control = self._control_dependencies_stack.for_inputs([t.op for t in inputs])
            attrs = {**self._local("attr_scope", dict), **(attrs or {})}
            if op_type in self._gradient_override_map:
                attrs["_gradient_op_type"] = self._gradient_override_map[op_type]
            op = Operation(self, op_type, name, inputs, list(dtypes or []), shapes, control, attrs)
            if compute_device:
                self._device_function_stack.apply(op)
            self._colocation_stack.apply(op)
            self._add_op(op)
        context = self._get_control_flow_context()
        if context is not None:
            # A loop's context takes the op in: outside inputs enter its frame.
            context.AddOp(op)
        else:
            for t in inputs:
                if t.op._control_flow_context is not None:
                    t.op._control_flow_context.check_consumer(op, t.op)
        return op

    def _get_control_flow_context(self):
        """The control-flow context (a ``WhileContext``) new ops are built in, or None."""
        return getattr(self._thread_local, "control_flow_context", None)

    def _set_control_flow_context(self, context) -> None:
        """Makes ``context`` (or None) the control-flow context of the ops built next."""
        self._thread_local.control_flow_context = context

    def _import_op(
        self,
        op_type,
        name,
        inputs,
        out_dtypes,
        shapes,
        control_inputs,
        attrs,
        device,
        device_assignments=(),
    ) -> Operation:
        """Adds an op exactly as described: its name, device and control inputs as given.

        For graphs rebuilt from a description (a partition sent to a task):
        no device functions, colocation or control-dependency scopes apply.
        ``device_assignments`` is the record of what set the device in the
        graph the description came from (`Operation.device_assignments`).
        """
        with self._lock:
            if name in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            self._names.reserve(name)
            # Operation copies the inputs, control inputs and attributes.
            op = Operation(
                self, op_type, name, inputs, list(out_dtypes), list(shapes), control_inputs, attrs
            )
            for source, assigned in device_assignments:
                op._set_device(assigned, source)
            op._set_device(device)
            self._add_op(op)
        return op

    def _op_name(self, name: str) -> str:
        if name.endswith("/"):
            name = name[:-1]
            if name in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            self._names.reserve(name)
            return name
        full_name = self.unique_name(name)
        if not is_valid_op_name(full_name):
            raise ValueError(f"'{full_name}' is not a valid node name")
        return full_name

    def _add_op(self, op: Operation) -> None:
        self._ops_by_name[op.name] = op
        self._ops.append(op)
        self._control_dependencies_stack.record(op)
        self._version += 1

    def __repr__(self) -> str:
        return f"<minitf.Graph with {len(self._ops)} ops>"


def _ref_inputs(op_type: str, inputs: list[Tensor]) -> list[Tensor]:
    kernel_def = get_kernel_def(op_type)
    if kernel_def is None or not kernel_def.ref_inputs:
        return []
    return [t for i, t in enumerate(inputs) if i in kernel_def.ref_inputs and t.dtype._is_ref_dtype]


class _AsDefault:
    """The block of `Graph.as_default` (a class: every ``tf.name_scope`` enters one)."""

    __slots__ = ("_graph",)

    def __init__(self, graph: Graph):
        self._graph = graph

    def __enter__(self) -> Graph:
        _default_graph_stack.push(self._graph)
        return self._graph

    def __exit__(self, *exc_info) -> None:
        _default_graph_stack.pop(self._graph)


class _DefaultGraphStack(_DefaultStack):
    """Each thread's stack of default graphs, over one process-wide graph (TF's)."""

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


def get_default_graph() -> Graph:
    """Returns the default graph of the current thread."""
    return _default_graph_stack.get()


def reset_default_graph() -> None:
    """Clears the default graph stack and replaces the global default graph.

    Raises:
        AssertionError: if called inside a ``with graph.as_default()`` block.
    """
    _default_graph_stack.reset()
