"""A traced function kept as data: the body of a ``Dataset.map``.

TF traces ``map_func`` once into a ``FunctionDef`` that the dataset op names
in its ``f`` attribute. minitf has no function library: `trace` calls
``map_func`` once on placeholders in a `Graph` of its own and keeps that
graph, described op by op, as a `FunctionBody` — plain data that travels with
the op's attributes to whichever task runs it. There `call` rebuilds the graph
once and runs its ops in the order they were created, calling each op's
registered kernel with the calling step's context, for one element at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from minitf.framework import errors, ops
from minitf.framework.graph import Graph
from minitf.framework.op_registry import get_kernel_def


def _describe(op: ops.Operation) -> tuple:
    inputs = [(t.op.name, t.value_index) for t in op.inputs]
    dtypes = [t.dtype for t in op.outputs]
    shapes = [t.get_shape() for t in op.outputs]
    controls = [c.name for c in op.control_inputs]
    return op.type, op.name, inputs, controls, dict(op.node_def["attr"]), dtypes, shapes


class FunctionBody:
    """A function's graph as data: its ops, its argument placeholders and its results.

    Args:
        graph: The graph the function was traced into.
        args: The placeholders that take the arguments, in order.
        results: The tensors it returns, in order.
    """

    def __init__(self, graph: Graph, args: list[ops.Tensor], results: list[ops.Tensor]):
        self.nodes = [_describe(op) for op in graph.get_operations()]
        self.arg_names = [t.name for t in args]
        self.result_names = [t.name for t in results]
        self._lock = threading.Lock()
        self._runnable: tuple | None = None

    def __getstate__(self) -> dict:
        return {"nodes": self.nodes, "arg_names": self.arg_names, "result_names": self.result_names}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._runnable = None

    def __repr__(self) -> str:
        return f"<function body: {len(self.nodes)} ops>"

    def _build(self) -> tuple:
        """The rebuilt graph's ops, each with its kernel, and the argument and result tensors."""
        graph = Graph()
        for op_type, name, inputs, controls, attrs, dtypes, shapes in self.nodes:
            tensors = [graph.get_tensor_by_name(f"{n}:{i}") for n, i in inputs]
            control_ops = [graph.get_operation_by_name(n) for n in controls]
            graph._import_op(op_type, name, tensors, dtypes, shapes, control_ops, attrs, "")
        steps = [(op, _kernel(op)) for op in graph.get_operations() if op.type != "Placeholder"]
        args = [graph.get_tensor_by_name(n) for n in self.arg_names]
        results = [graph.get_tensor_by_name(n) for n in self.result_names]
        return steps, args, results

    def call(self, ctx, values: tuple) -> tuple:
        """Runs the body on one element's components; returns the results' values.

        Args:
            ctx: The step context of the op that asks (its kernels run in it).
            values: One value per argument.
        """
        with self._lock:
            if self._runnable is None:
                self._runnable = self._build()
        steps, args, results = self._runnable
        env: dict[ops.Tensor, Any] = dict(zip(args, values))
        for op, compute in steps:
            out = compute(ctx, *[env[t] for t in op.inputs])
            outputs = op.outputs
            if len(outputs) == 1:
                env[outputs[0]] = out
            else:
                env.update(zip(outputs, out or ()))
        return tuple(env[t] for t in results)


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
