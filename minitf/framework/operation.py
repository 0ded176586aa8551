"""`Operation`: a node of the graph, an op type applied to input tensors.

An op is plain data: a type, a name, input `Tensor` objects, control inputs
(other ops), attributes, a requested device (and the record of what set it)
and its output tensors, which it creates. It does nothing by itself: what an
op type computes is a kernel registered in `minitf.framework.op_registry`,
run by a session.

`Graph.create_op` makes ops and sets their device and control inputs through
the methods with a leading underscore; an op holds its graph (``op.graph``)
but this module does not import `minitf.framework.graph`.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import device as pydev
from minitf.framework.default_session import SessionInterface, run_using_default_session
from minitf.framework.tensor import Tensor


class Operation:
    """A node of the graph: an op type applied to input tensors.

    Ops are created by op constructors (``tf.matmul``, ``tf.Variable``, ...)
    through `Graph.create_op`, never directly.

    Args:
        graph (Graph): The `Graph` the op belongs to.
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
        graph,
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
        # The ``WhileContext`` the op was built in (None: outside every loop).
        self._control_flow_context = None
        # The innermost ``tf.cond`` branch (a ``CondContext``) the op was built in, or None.
        self._cond_context = None
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
            t._consumers.append(self)  # Tensor._add_consumer, without a call per input

    @property
    def name(self) -> str:
        """The op's unique name in its graph."""
        return self._name

    @property
    def type(self) -> str:
        """The TF op type, e.g. ``"MatMul"`` or ``"VariableV2"``."""
        return self._type

    @property
    def graph(self):
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

    def _update_input(self, index: int, tensor: Tensor) -> None:
        """Replaces input ``index`` by ``tensor`` (a loop's back edge, an input entering a loop).

        Args:
            index: The input's position.
            tensor: The new input, of the same dtype.

        Raises:
            TypeError: if the dtypes differ.
        """
        old = self._inputs[index]
        if old.dtype.base_dtype != tensor.dtype.base_dtype:
            raise TypeError(
                f"Input {index} of '{self._name}' has dtype {old.dtype.name}; cannot replace it "
                f"by {tensor.name} of dtype {tensor.dtype.name}"
            )
        old._consumers.remove(self)
        self._inputs = self._inputs[:index] + (tensor,) + self._inputs[index + 1 :]
        tensor._add_consumer(self)
        self._graph._bump_version()

    def _set_control_inputs(self, ops) -> None:
        """Replaces the control inputs by ``ops``."""
        self._control_inputs = list(ops)
        self._graph._bump_version()

    def _add_control_inputs(self, ops) -> None:
        for op in ops:
            self._add_control_input(op)

    def run(self, feed_dict: dict | None = None, session: SessionInterface | None = None) -> None:
        """Runs this op in ``session`` or the default session.

        Args:
            feed_dict: Values to feed, as in `Session.run`.
            session: The session to use; None means the default session.

        Raises:
            ValueError: if there is no session to use, or its graph is not this
                op's graph.
        """
        run_using_default_session(self, feed_dict, self.graph, session)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"
