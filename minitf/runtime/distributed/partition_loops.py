"""What partitioning does about ``tf.while_loop``: a *control loop* on every task a loop spans.

A value may enter a loop from another task (a ``_Recv`` in the parent frame
feeds the ``Enter``) and leave it for another (the ``Exit`` feeds a
``_Send``): those are edges of the enclosing frame, partitioned like any.
An edge between tasks *inside* a loop is different: its ``_Send`` and
``_Recv`` run once per iteration, and the receiving task must know how
many iterations there are. TF's partitioner (``graph_partition.cc``,
``AddControlFlow``) gives that task a copy of the loop's control, built of
a dummy value:

```
Const ─► Enter ─► Merge ─► Switch ─(true)─► NextIteration ─┐
                    ▲        ▲                              │
                    │    LoopCond (a _Recv from the task    │
                    │    that computes it)                  │
                    └───────────────────────────────────────┘
```

The ``Merge`` runs once in every iteration the loop makes, so each
``_Recv`` of the loop on that task gets a control input from it and runs
once per iteration too; the ``LoopCond`` of the loop is sent to the task
every iteration, and its ``Switch`` starts the next iteration or ends the
frame. A loop nested in a loop gets its control loop's ``Enter`` from the
outer control loop's ``Merge``. The rendezvous key of a tensor sent inside
a loop names the frame and the iteration
(`minitf.runtime.core.step_context.StepContext.rendezvous_key`), so
iterations do not collide; a dead value (the last iteration's body, or a loop on a
``tf.cond`` branch not taken) crosses as dead, as with ``tf.cond``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np

from minitf.framework import dtypes, errors, tensor_shape
from minitf.framework.ops import Graph, Operation, Tensor
from minitf.ops.control_flow.control_flow_util import output_context

_DUMMY_SHAPE = tensor_shape.TensorShape([0])
CONTROL_LOOP = "_cloop/"
"""The name prefix of a control loop's ops (TF's ``_cloop``)."""


class ControlLoops:
    """The control loops of one step's partitions, one per (loop, task) that receives in it.

    Args:
        devices: The assigned device of each op of the step.
        add: ``add(task, name, op_type, inputs, attrs, out_dtypes, shapes)``
            appends an op to the task's partition, on the task's device.
    """

    def __init__(self, devices: dict, add: Callable):
        self._devices = devices
        self._add = add
        self._merges: dict[tuple, str] = {}  # (loop, task) -> its control loop's Merge

    def gate(self, producer: Operation, task: str) -> list[str]:
        """The control inputs of a ``_Recv`` on ``task`` of an output of ``producer``.

        Inside a loop, the ``Merge`` of the loop's control loop on ``task``
        (built now if it is the first): the ``_Recv`` runs once per iteration.
        Outside every loop, none.

        Args:
            producer: The op whose output (or whose end, for a control edge) is sent.
            task: The receiving task.
        """
        loop = output_context(producer)
        if loop is None:
            return []
        return [self._merge(loop, task)]

    def _merge(self, loop, task: str) -> str:
        """The ``Merge`` of ``loop``'s control loop on ``task``; adds its head if new."""
        key = (loop, task)
        if key in self._merges:
            return self._merges[key]
        if loop.outer_context is None:
            dummy = self._node(task, loop, "Const", [], _const_attrs(), [dtypes.float32])
        else:
            dummy = self._merge(loop.outer_context, task)
        enter_attrs = {
            "T": dtypes.float32,
            "frame_name": loop.name,
            "is_constant": False,
            "parallel_iterations": loop.parallel_iterations,
        }
        enter = self._node(task, loop, "Enter", [(dummy, 0)], enter_attrs, [dtypes.float32])
        back = (_name(loop, "NextIteration"), 0)  # added by `finish`
        merge_attrs = {"T": dtypes.float32, "N": 2}
        merge_dtypes = [dtypes.float32, dtypes.int32]  # the value, and which input came
        merge = self._node(task, loop, "Merge", [(enter, 0), back], merge_attrs, merge_dtypes)
        self._merges[key] = merge
        return merge

    def finish(self, recv_input: Callable[[Tensor, str], tuple[str, int]]) -> None:
        """Adds each control loop's ``Switch`` and ``NextIteration``, driven by the loop's pred.

        Args:
            recv_input: ``recv_input(tensor, task)``: the ``_Recv`` of ``tensor``
                on ``task`` (made if new), for a task that does not compute it.

        Raises:
            InvalidArgumentError: TF's error for a loop whose ``LoopCond`` is not
                in the step.
        """
        for (loop, task), merge in list(self._merges.items()):
            pred = loop.pivot
            if pred is None or pred.op not in self._devices:
                raise errors.InvalidArgumentError(
                    None, None, f"A cross-device loop must have a pivot predicate: {loop.name}"
                )
            local = self._devices[pred.op].startswith(task + "/")
            pred_in = (pred.op.name, pred.value_index) if local else recv_input(pred, task)
            inputs = [(merge, 0), pred_in]
            attrs = {"T": dtypes.float32}
            switch = self._node(task, loop, "Switch", inputs, attrs, [dtypes.float32] * 2)
            self._node(task, loop, "NextIteration", [(switch, 1)], attrs, [dtypes.float32])

    def _node(self, task: str, loop, op_type: str, inputs, attrs: dict, out_dtypes) -> str:
        name = _name(loop, op_type)
        shapes = [_DUMMY_SHAPE if d == dtypes.float32 else tensor_shape.TensorShape([])
                  for d in out_dtypes]  # fmt: skip
        self._add(task, name, op_type, inputs, attrs, list(out_dtypes), shapes)
        return name


def _name(loop, op_type: str) -> str:
    """A control loop's op name: ``_cloop/while/while_context/Merge``."""
    return f"{CONTROL_LOOP}{loop.name}/{op_type}"


def _const_attrs() -> dict:
    """The dummy value a control loop carries round (TF's: an empty float tensor)."""
    return {"value": np.zeros([0], np.float32), "dtype": dtypes.float32}


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
