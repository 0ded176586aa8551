"""A traced function kept as data: the body of a ``Dataset.map``.

TF traces ``map_func`` once into a ``FunctionDef`` that the dataset op names
in its ``f`` attribute. minitf has no function library: ``Dataset.map`` calls
``map_func`` once on placeholders in a `Graph` of its own and keeps that
graph, described op by op (`function_def`), in the op's ``f`` attribute —
plain data that exports with the graph and travels with a partition to
whichever task runs the op. There the op's kernel rebuilds it once
(`FunctionBody`) and runs its ops in the order they were created, calling
each op's registered kernel with the calling step's context, one element at
a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitf.framework import errors, ops
from minitf.framework.graph import Graph
from minitf.framework.op_registry import get_kernel_def


class FuncGraph(Graph):
    """The graph a function is traced into; a tensor of another graph becomes an argument.

    As TF's ``FuncGraph``: an op built from a tensor of the outer graph gets a
    placeholder in its place (`captures` maps one to the other), and the
    op that runs the function passes the outer tensor's value in.
    """

    def __init__(self):
        super().__init__()
        self.captures: dict[ops.Tensor, ops.Tensor] = {}

    @property
    def building_function(self) -> bool:
        """True: ops built while it is the default graph go into it."""
        return True

    def create_op(self, op_type: str, inputs: list, *args, **kwargs) -> ops.Operation:
        """Adds an op (`Graph.create_op`), capturing the inputs that belong to another graph."""
        inputs = [self.captured(t) for t in inputs]
        return super().create_op(op_type, inputs, *args, **kwargs)

    def captured(self, t: ops.Tensor) -> ops.Tensor:
        """``t`` if it is this graph's, else the placeholder that captures it."""
        return t if t.graph is self else self._capture(t)

    def _capture(self, outer: ops.Tensor) -> ops.Tensor:
        if outer not in self.captures:
            with ops.control_dependencies(None):
                op = super().create_op(
                    "Placeholder",
                    [],
                    [outer.dtype.base_dtype],
                    name="captured",
                    attrs={"dtype": outer.dtype.base_dtype, "shape": outer.get_shape()},
                    shapes=[outer.get_shape()],
                )
            self.captures[outer] = op.outputs[0]
        return self.captures[outer]


def _describe(op: ops.Operation) -> dict:
    return {
        "op": op.type,
        "name": op.name,
        "inputs": [[t.op.name, t.value_index] for t in op.inputs],
        "control_inputs": [c.name for c in op.control_inputs],
        "attr": dict(op.node_def["attr"]),
        "dtypes": [t.dtype for t in op.outputs],
        "shapes": [t.get_shape() for t in op.outputs],
    }


def function_def(graph: Graph, args: list[ops.Tensor], results: list[ops.Tensor]) -> dict:
    """A traced function as an attr value (TF's ``FunctionDef``, in plain data).

    Args:
        graph: The graph the function was traced into.
        args: The placeholders that take the arguments, in order.
        results: The tensors it returns, in order.

    Returns:
        ``{"nodes": [...], "args": [...], "results": [...]}``: each op's type,
        name, inputs, attrs, output dtypes and shapes; the names of the
        argument and result tensors. It exports with the graph and travels
        with a partition like any other attr.
    """
    return {
        "nodes": [_describe(op) for op in graph.get_operations()],
        "args": [t.name for t in args],
        "results": [t.name for t in results],
    }


class FunctionBody:
    """A `function_def` rebuilt into a graph of its own, ready to run element by element.

    Args:
        fdef: What `function_def` returned.
    """

    def __init__(self, fdef: dict):
        graph = Graph()
        for node in fdef["nodes"]:
            tensors = [graph.get_tensor_by_name(f"{n}:{i}") for n, i in node["inputs"]]
            controls = [graph.get_operation_by_name(n) for n in node["control_inputs"]]
            graph._import_op(
                node["op"], node["name"], tensors, node["dtypes"], node["shapes"], controls,
                node["attr"], "",
            )  # fmt: skip
        ops_ = graph.get_operations()
        self._steps = [(op, _kernel(op)) for op in ops_ if op.type != "Placeholder"]
        self._args = [graph.get_tensor_by_name(n) for n in fdef["args"]]
        self._results = [graph.get_tensor_by_name(n) for n in fdef["results"]]

    def call(self, ctx, values: tuple) -> tuple:
        """Runs the body on one element's components; returns the results' values.

        Args:
            ctx: The step context of the op that asks (its kernels run in it).
            values: One value per argument.
        """
        env: dict[ops.Tensor, Any] = dict(zip(self._args, values))
        for op, compute in self._steps:
            out = compute(ctx, *[env[t] for t in op.inputs])
            outputs = op.outputs
            if len(outputs) == 1:
                env[outputs[0]] = out
            else:
                env.update(zip(outputs, out or ()))
        return tuple(env[t] for t in self._results)


def _kernel(op: ops.Operation) -> Callable:
    kernel_def = get_kernel_def(op.type)
    if kernel_def is None or kernel_def.is_async:
        raise errors.UnimplementedError(
            op.node_def,
            op,
            f"Op '{op.type}' ({op.name}) cannot run in a Dataset.map function: "
            "only kernels that do not wait can.",
        )
    return kernel_def.builder(op)
