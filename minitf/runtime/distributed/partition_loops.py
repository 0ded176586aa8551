"""What partitioning does about ``tf.while_loop``: a loop stays on one task.

A value may enter a loop from another task (a ``_Recv`` in the parent frame
feeds the ``Enter``) and leave it for another (the ``Exit`` feeds a
``_Send``); an edge between tasks *inside* a loop would need TF's
control-loop state machinery in the partitioner — a copy of the loop's
control on every task, with a ``_Send``/``_Recv`` per iteration — which
minitf does not build: `check_outside_loops` refuses such a step, naming
the loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from minitf.framework import errors
from minitf.framework.ops import Graph, Operation, Tensor
from minitf.ops.control_flow.control_flow_util import input_context, output_context


def _task(device: str) -> str:
    return device.split("/device:")[0]


def check_outside_loops(src: Operation, dst: Operation, devices: dict) -> None:
    """Raises if an edge between tasks runs inside a ``tf.while_loop``'s frame.

    Values may enter a loop from another task and leave it for another task;
    an edge inside a loop would need TF's control-loop state machinery in the
    partitioner (a Send/Recv per iteration, driven by the loop's predicate on
    every task), which minitf does not build.

    Raises:
        UnimplementedError: naming the loop and the edge.
    """
    loop = output_context(src) or input_context(dst)
    if loop is None:
        return
    raise errors.UnimplementedError(
        None,
        dst,
        f"The while loop '{loop.name}' has ops on more than one task: '{src.name}' on "
        f"{_task(devices[src])} feeds '{dst.name}' on {_task(devices[dst])}. minitf runs "
        "a loop on one task: place its ops on one device (values may enter and leave the "
        "loop from other tasks).",
    )


@contextlib.contextmanager
def loop_inputs(graph: Graph) -> Iterator[Callable]:
    """Gives a function ``node -> input tensors`` for rebuilding a partition, producers first.

    A loop's ``Merge`` reads a ``NextIteration`` that comes after it (the back
    edge): it is built reading its first input twice, like TF's
    ``Merge([enter, enter])``, and the back edge is set when the block ends.
    """
    back_edges: list[tuple[str, int, str]] = []

    def input_tensors(node) -> list[Tensor]:
        inputs = []
        for position, (name, index) in enumerate(node.inputs):
            tensor = f"{name}:{index}"
            if node.op == "Merge" and position > 0 and not _has_op(graph, name):
                back_edges.append((node.name, position, tensor))
                inputs.append(inputs[0])
            else:
                inputs.append(graph.get_tensor_by_name(tensor))
        return inputs

    yield input_tensors
    for merge, position, tensor in back_edges:
        graph.get_operation_by_name(merge)._update_input(position, graph.get_tensor_by_name(tensor))


def _has_op(graph: Graph, name: str) -> bool:
    try:
        graph.get_operation_by_name(name)
    except KeyError:
        return False
    return True
