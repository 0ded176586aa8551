"""Gradients of the TensorArray ops (TF's ``tensor_array_grad.py``).

The gradient of a TensorArray is another TensorArray of the same size, made
by ``TensorArrayGradV3`` in the step's container and found again by every
op of one ``tf.gradients`` call through its *source*: the call's name scope
(``"gradients"``, ``"gradients_1"``, ...), so two gradient computations of
one forward array never add into each other's array.

Each forward op's gradient is its mirror on the gradient array:

* a read (gather, concat) writes the incoming gradient (scatters it,
  splits it) into the gradient array and returns that write's flow as the
  gradient of its flow input; a gradient array sums writes to one index, so
  an element read twice gets the sum of both gradients;
* a write (scatter, split) reads its index (gathers, concatenates) from
  the gradient array — after the writes above, because it waits for the
  flow gradient it receives — and returns the value read as the gradient of
  the value written. An index nobody read reads as zeros of the right shape.
"""

from __future__ import annotations

from minitf.framework import ops
from minitf.framework.op_registry import RegisterGradient
from minitf.ops.array.array_identity import identity
from minitf.ops.data_flow.tensor_array_ops import TensorArray


def _grad_source(tensor: ops.Tensor) -> str:
    """The name scope of the ``tf.gradients`` call that built ``tensor`` (TF's ``_GetGradSource``).

    Raises:
        ValueError: if ``tensor``'s name has no part starting with ``gradients``.
    """
    parts = tensor.name.split("/")
    found = [i for i, part in enumerate(parts) if part.startswith("gradients")]
    if not found:
        raise ValueError(
            "Expected op/tensor name to start with gradients (excluding scope), got: "
            f"{tensor.name}. This means that a tf.gradients op with this op in its dependency "
            "path has a custom name that does not start with 'gradients'. Please make sure all "
            "calls to tf.gradients that have non-empty `name` arguments use names that start "
            "with 'gradients'."
        )
    return "/".join(parts[: found[-1] + 1])


def _gradient_array(op: ops.Operation, dtype, source: str, flow: ops.Tensor) -> TensorArray:
    """The gradient array of the array ``op`` uses, made after ``flow``."""
    forward = TensorArray(
        dtype=dtype, handle=op.inputs[0], flow=flow, colocate_with_first_write_call=False
    )
    return forward.grad(source=source, flow=flow)


def _after_forward(op: ops.Operation, flow: ops.Tensor) -> ops.Tensor:
    """``flow`` (the gradient of a write's flow), made to wait for the forward write too."""
    flow_out = identity(op.outputs[0], "flow_out")
    with ops.control_dependencies([flow_out]):
        return identity(flow, "write_barrier")


@RegisterGradient("TensorArrayReadV3")
def _read_grad(op: ops.Operation, grad: ops.Tensor):
    """Writes ``grad`` at the index read; its flow is the gradient of the read's flow."""
    index, flow = op.inputs[1], op.inputs[2]
    g = _gradient_array(op, op.get_attr("dtype"), _grad_source(grad), flow)
    return [None, None, g.write(index, grad).flow]


@RegisterGradient("TensorArrayWriteV3")
def _write_grad(op: ops.Operation, flow: ops.Tensor):
    """Reads the gradient of the value written from the gradient array."""
    index = op.inputs[1]
    source = _grad_source(flow)
    flow = _after_forward(op, flow)
    g = _gradient_array(op, op.get_attr("T"), source, flow)
    return [None, None, g.read(index), flow]


@RegisterGradient("TensorArrayGatherV3")
def _gather_grad(op: ops.Operation, grad: ops.Tensor):
    """Scatters ``grad`` to the indices gathered."""
    indices, flow = op.inputs[1], op.inputs[2]
    g = _gradient_array(op, op.get_attr("dtype"), _grad_source(grad), flow)
    return [None, None, g.scatter(indices, grad).flow]


@RegisterGradient("TensorArrayScatterV3")
def _scatter_grad(op: ops.Operation, flow: ops.Tensor):
    """Gathers the gradients of the values scattered."""
    indices = op.inputs[1]
    source = _grad_source(flow)
    flow = _after_forward(op, flow)
    g = _gradient_array(op, op.get_attr("T"), source, flow)
    return [None, None, g.gather(indices), flow]


@RegisterGradient("TensorArrayConcatV3")
def _concat_grad(op: ops.Operation, grad: ops.Tensor, unused_lengths_grad):
    """Splits ``grad`` by the lengths the concat saw."""
    del unused_lengths_grad
    flow, lengths = op.inputs[1], op.outputs[1]
    g = _gradient_array(op, op.get_attr("dtype"), _grad_source(grad), flow)
    return [None, g.split(grad, lengths=lengths).flow]


@RegisterGradient("TensorArraySplitV3")
def _split_grad(op: ops.Operation, flow: ops.Tensor):
    """Concatenates the gradients of the pieces written."""
    source = _grad_source(flow)
    flow = _after_forward(op, flow)
    g = _gradient_array(op, op.get_attr("T"), source, flow)
    return [None, g.concat(), None, flow]
