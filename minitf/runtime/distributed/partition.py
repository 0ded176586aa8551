"""Placement and partitioning: one step's graph, cut into one graph per task.

A distributed step (see DESIGN.md, "How a step runs") is planned in three
moves, all here:

1. **place** — every op gets a full device
   (``/job:ps/replica:0/task:1/device:CPU:0``): its requested device, with the
   unset fields filled from the session's default task; an op that uses a
   resource (a queue or accumulator handle, a resource variable) runs where
   that resource lives, as TF's placer colocates resource consumers, and an
   op in another op's colocation group (``_class = [b"loc:@w"]``) runs where
   that op runs;
2. **partition** — the ops are grouped by task; every data edge that crosses
   tasks becomes a ``_Send`` in the producer's partition and a ``_Recv`` in the
   consumer's, both carrying one *rendezvous key*
   ``"<src device>;<dst device>;<tensor name>"`` (the step id is added at run
   time); a control edge that crosses tasks becomes a ``_Send``/``_Recv`` of
   an empty value, and the consumer waits on the ``_Recv``; a task that
   receives inside a ``tf.while_loop`` gets a copy of the loop's control
   (`minitf.runtime.distributed.partition_loops`);
3. **describe** — each partition becomes a list of node descriptions that
   can be pickled to its task, which rebuilds the ops (`import_partition`)
   and plans them like a local session would.

Fed tensors become ``Placeholder`` ops in the partitions that read them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from minitf.framework import device as pydev
from minitf.framework import dtypes, errors, tensor_shape
from minitf.framework.ops import Graph, Operation, Tensor
from minitf.runtime.core.pipeline import order_step
from minitf.runtime.distributed.partition_loops import ControlLoops, loop_inputs

SEND, RECV = "_Send", "_Recv"


@functools.lru_cache(maxsize=4096)
def task_of(device: str) -> str:
    """``"/job:ps/replica:0/task:1/device:CPU:0"`` → ``"/job:ps/replica:0/task:1"``."""
    spec = pydev.DeviceSpec.from_string(device)
    return pydev.DeviceSpec(job=spec.job, replica=spec.replica, task=spec.task).to_string()


def full_device(job: str, task: int) -> str:
    """The one device of a task: ``/job:<job>/replica:0/task:<task>/device:CPU:0``.

    Args:
        job: The job's name.
        task: The task's index.
    """
    return f"/job:{job}/replica:0/task:{task}/device:CPU:0"


def place(
    ops: list[Operation],
    default_job: str,
    default_task: int,
    tasks: dict[str, int],
    allow_soft_placement: bool = False,
) -> dict[Operation, str]:
    """Assigns a full device to each op (``ops`` in topological order).

    Args:
        ops: The ops of the step, producers before consumers.
        default_job: The session's job; fills an unset job.
        default_task: The session's task index; fills an unset task in the
            session's job (in another job, an unset task is 0).
        tasks: ``{job: number of tasks}`` of the cluster.
        allow_soft_placement: Put ops whose device does not exist on the
            default task instead of failing.

    Raises:
        InvalidArgumentError: TF's "Cannot assign a device" error.
    """
    assigned: dict[Operation, str] = {}
    by_name = {op.name: op for op in ops}
    for op in ops:
        if op in assigned:
            continue
        # An op goes where the op it must stay with goes: the producer of the
        # resource it uses, else the op of its colocation group (TF's placer
        # puts a colocation group on one device; an initializer built from a
        # callable has no device of its own, only the group of its variable).
        chain = [op]
        owner = _owner(op, by_name)
        while owner is not None and owner not in assigned and owner not in chain:
            chain.append(owner)
            owner = _owner(owner, by_name)
        device = assigned.get(owner) if owner is not None else None
        for member in reversed(chain):
            if device is None:
                device = _requested_device(member, default_job, default_task, tasks,
                                           allow_soft_placement)  # fmt: skip
            assigned[member] = device
    return assigned


def _owner(op: Operation, by_name: dict[str, Operation]) -> Operation | None:
    """The op ``op`` must be placed with, if any (see `place`)."""
    owner = _resource_producer(op)
    if owner is not None:
        return owner
    for group in op.colocation_groups():
        target = by_name.get(group.decode()[len("loc:@") :])
        if target is not None and target is not op:
            return target
    return None


def _requested_device(op, default_job, default_task, tasks, allow_soft_placement) -> str:
    """The full device ``op``'s requested device names, with the session's task filling gaps.

    Raises:
        InvalidArgumentError: TF's "Cannot assign a device" error.
    """
    requested = pydev.DeviceSpec.from_string(op.device)
    job = requested.job or default_job
    task = (
        requested.task
        if requested.task is not None
        else (default_task if job == default_job else 0)
    )
    ok = (
        job in tasks
        and 0 <= task < tasks[job]
        and requested.replica in (None, 0)
        and (requested.device_type or "CPU").upper() == "CPU"
        and requested.device_index in (None, 0)
    )
    if not ok:
        if not allow_soft_placement:
            known = ", ".join(full_device(j, t) for j in sorted(tasks) for t in range(tasks[j]))
            raise errors.InvalidArgumentError(
                op.node_def,
                op,
                f"Cannot assign a device for operation {op.name}: Operation was explicitly "
                f"assigned to {op.device} but available devices are [ {known} ]. Make sure "
                "the device specification refers to a valid device.",
            )
        job, task = default_job, default_task
    return full_device(job, task)


def _resource_producer(op: Operation) -> Operation | None:
    """The op whose resource (or reference) ``op`` uses, if any: ``op`` must run next to it."""
    for t in op.inputs:
        if t.dtype is dtypes.resource or t.dtype._is_ref_dtype:  # interned DTypes
            return t.op
    return None


@dataclass
class NodeDesc:
    """A picklable description of one op of a partition.

    Args:
        name: The op's name.
        op: Its type.
        inputs: ``(producer name, output index)`` of each input.
        control_inputs: The names of its control inputs.
        device: Its full device.
        attrs: Its attributes.
        dtypes: The dtype of each output.
        shapes: The static shape of each output.
        device_assignments: What set its device, as ``Operation.device_assignments``
            (kept for pictures; empty in the partitions a step sends).
    """

    name: str
    op: str
    inputs: list[tuple[str, int]]
    control_inputs: list[str]
    device: str
    attrs: dict
    dtypes: list
    shapes: list
    device_assignments: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Partition:
    """The part of a step that one task runs.

    Attributes:
        task: ``/job:<j>/replica:0/task:<i>``.
        nodes: The ops, producers first.
        feeds: ``(placeholder name, client tensor name)``: values the client sends.
        fetches: Names (``op:index``) of the tensors the client wants from this task.
        targets: Names of the ops to run for their effect (including every ``_Send``).
        client: The task whose session runs the step (its master's task); kernels
            see it as ``ctx.client`` (an accumulator records who pushed).
        session: The session's handle: a task keeps one kernel per stateful
            op and session, so a queue without ``shared_name`` lives as long
            as the session, whatever runs use it (TF's ``OpSegment``).
        dead_values: Whether a value of the step can be dead: only if the
            step has a ``Switch`` (a ``tf.cond``) on some task. Then a
            ``_Recv`` may receive a dead value, and its consumers must check.
    """

    task: str
    client: str = ""
    session: str = ""
    dead_values: bool = True
    nodes: list[NodeDesc] = field(default_factory=list)
    feeds: list[tuple[str, str]] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)


def partition(
    ops: list[Operation],
    devices: dict[Operation, str],
    fetches: list[Tensor],
    targets: list[Operation],
    feeds: list[Tensor],
) -> dict[str, Partition]:
    """Splits the placed ops of one step into one `Partition` per task.

    Args:
        ops: The pruned ops of the step, producers first.
        devices: Their assigned devices (`place`).
        fetches: Tensors the client fetches (fed ones are answered by the client).
        targets: Ops the client runs.
        feeds: Tensors the client feeds.
    """
    fed = set(feeds)
    parts: dict[str, Partition] = {}
    dead_values = any(op.type in ("Switch", "RefSwitch") for op in ops)
    sent: dict[tuple, str] = {}  # (tensor or ^op, dst task) -> name of the _Recv
    fed_as: dict[tuple[Tensor, str], str] = {}

    def part_for(task: str) -> Partition:
        if task not in parts:
            parts[task] = Partition(task, dead_values=dead_values)
        return parts[task]

    def add_node(task, name, op_type, inputs, attrs, out_dtypes, shapes) -> None:
        node = NodeDesc(name, op_type, inputs, [], full_device_of(task), attrs, out_dtypes, shapes)
        part_for(task).nodes.append(node)

    loops = ControlLoops(devices, add_node)

    def feed_input(t: Tensor, task: str) -> tuple[str, int]:
        key = (t, task)
        if key not in fed_as:
            name = f"_feed/{t.op.name}/{t.value_index}"
            fed_as[key] = name
            p = part_for(task)
            p.nodes.append(
                NodeDesc(
                    name,
                    "Placeholder",
                    [],
                    [],
                    full_device_of(task),
                    _ph(t),
                    [t.dtype],
                    [t.get_shape()],
                )
            )
            p.feeds.append((name, t.name))
        return (fed_as[key], 0)

    def add_pair(producer: Operation, task: str, what: str, send: str, recv: str, sent_in: list,
                 sent_ctrl: list, dtype, shape) -> None:  # fmt: skip
        """Adds a ``_Send`` of ``what`` (``t.name``, ``^op``) and its ``_Recv`` on ``task``."""
        src_task, src = task_of(devices[producer]), devices[producer]
        rkey = f"{src};{full_device_of(task)};{what}"
        send_attrs = {"tensor_name": rkey, "recv_task": task}
        part_for(src_task).nodes.append(NodeDesc(send, SEND, sent_in, sent_ctrl, src, send_attrs,
                                                 [], []))  # fmt: skip
        part_for(src_task).targets.append(send)
        gate = loops.gate(producer, task)  # in a loop: the _Recv runs once per iteration
        recv_attrs = {"tensor_name": rkey, "send_task": src_task}
        part_for(task).nodes.append(NodeDesc(recv, RECV, [], gate, full_device_of(task), recv_attrs,
                                             [dtype], [shape]))  # fmt: skip

    def recv_input(t: Tensor, task: str) -> tuple[str, int]:
        key = (t, task)
        if key not in sent:
            sent[key] = f"_recv/{t.op.name}/{t.value_index}"
            send = f"_send/{t.op.name}/{t.value_index}/to_{_tag(task)}"
            add_pair(t.op, task, t.name, send, sent[key], [(t.op.name, t.value_index)], [],
                     t.dtype, t.get_shape())  # fmt: skip
        return (sent[key], 0)

    def control_recv(c: Operation, task: str) -> str:
        key = ("^", c, task)
        if key not in sent:
            sent[key] = f"_recv/{c.name}/ctrl_{_tag(task)}"
            send = f"_send/{c.name}/ctrl_to_{_tag(task)}"
            add_pair(c, task, f"^{c.name}", send, sent[key], [], [c.name], dtypes.bool,
                     tensor_shape.TensorShape([]))  # fmt: skip
        return sent[key]

    in_step = set(ops)
    for op in ops:
        task = task_of(devices[op])
        inputs = []
        for t in op.inputs:
            if t in fed:
                inputs.append(feed_input(t, task))
            elif task_of(devices[t.op]) == task:
                inputs.append((t.op.name, t.value_index))
            else:
                inputs.append(recv_input(t, task))
        control = []
        for c in op.control_inputs:
            if c not in in_step:
                continue
            if task_of(devices[c]) == task:
                control.append(c.name)
            else:
                control.append(control_recv(c, task))
        part_for(task).nodes.append(
            NodeDesc(
                op.name,
                op.type,
                inputs,
                control,
                devices[op],
                dict(op._attrs),
                [t.dtype for t in op.outputs],
                [t.get_shape() for t in op.outputs],
            )
        )
    loops.finish(recv_input)
    for t in fetches:
        if t not in fed:
            part_for(task_of(devices[t.op])).fetches.append(t.name)
    for op in targets:
        part_for(task_of(devices[op])).targets.append(op.name)
    return parts


def _tag(task: str) -> str:
    """A task as a piece of an op name: ``job_ps_replica_0_task_1``."""
    return task.strip("/").replace("/", "_").replace(":", "_")


def full_device_of(task: str) -> str:
    """The CPU device of a task string.

    Args:
        task: A task string, ``/job:<job>/replica:0/task:<index>``.
    """
    return task + "/device:CPU:0"


def _ph(t: Tensor) -> dict:
    return {"dtype": t.dtype.base_dtype, "shape": t.get_shape()}


def import_partition(nodes: list[NodeDesc]) -> Graph:
    """Rebuilds a partition's ops in a new `Graph` (on the task that runs it).

    Args:
        nodes: The partition's ops, producers first.
    """
    graph = Graph()
    with loop_inputs(graph) as input_tensors:
        for node in nodes:
            inputs = input_tensors(node)
            control = [graph.get_operation_by_name(name) for name in node.control_inputs]
            graph._import_op(
                node.op,
                node.name,
                inputs,
                node.dtypes,
                node.shapes,
                control,
                node.attrs,
                node.device,
                node.device_assignments,
            )
    return graph


def describe_ops(ops: list[Operation]) -> list[NodeDesc]:
    """The descriptions `import_partition` rebuilds ``ops`` from, with what set their devices.

    An op outside ``ops`` that one of them reads (a fed placeholder, say) is
    described too, without inputs of its own, so that every edge into ``ops``
    can be rebuilt. An observer in another process (the stepper drawing a
    held step) rebuilds the ops this way.

    Args:
        ops: Ops of one graph, producers first (a plan's order).
    """
    shown = set(ops)
    outside: dict[Operation, None] = {}
    for op in ops:
        for producer in [t.op for t in op.inputs] + op.control_inputs:
            if producer not in shown:
                outside[producer] = None
    stubs = [_node_desc(op, with_inputs=False) for op in outside]
    return stubs + [_node_desc(op, with_inputs=True) for op in ops]


def _node_desc(op: Operation, with_inputs: bool) -> NodeDesc:
    outputs = op.outputs
    return NodeDesc(
        name=op.name,
        op=op.type,
        inputs=[(t.op.name, t.value_index) for t in op.inputs] if with_inputs else [],
        control_inputs=[c.name for c in op.control_inputs] if with_inputs else [],
        device=op.device,
        attrs=op.node_def["attr"],
        dtypes=[t.dtype for t in outputs],
        shapes=[t.get_shape() for t in outputs],
        device_assignments=list(op.device_assignments),
    )


def computes_gradients(op_names) -> bool:
    """Whether a partition with these ops computes gradients (where a straggler is slow).

    Args:
        op_names: The names of the partition's ops.
    """
    return any(name.split("/", 1)[0].startswith("gradients") for name in op_names)


@functools.lru_cache(maxsize=4096)
def parse_task(task: str) -> tuple[str, int]:
    """``"/job:ps/replica:0/task:1"`` → ``("ps", 1)`` (kept: a cluster has few task names).

    Args:
        task: A task string, ``/job:<job>/replica:0/task:<index>``.
    """
    spec = pydev.DeviceSpec.from_string(task)
    return spec.job, spec.task


def partition_step(
    fetches: list[Tensor],
    targets: list[Operation],
    feeds: list[Tensor],
    tasks: dict[str, int] | Callable[[list[Operation]], dict[str, int]],
    job: str,
    task: int,
    allow_soft_placement: bool = False,
) -> tuple[dict[str, Partition], list[tuple[str | None, int]]]:
    """The step pipeline up to the tasks: prune, order, place and partition one run signature.

    The master (for real and simulated tasks) and the renderer call this;
    each task then plans what it receives, in the order it receives it
    (`minitf.runtime.core.pipeline.build_plan`).

    Args:
        fetches: The tensors the run fetches.
        targets: The ops it runs.
        feeds: The tensors it feeds.
        tasks: ``{job: number of tasks}``, or a function of the step's ops
            that gives it (the renderer's smallest cluster the ops fit in).
        job: The client's job.
        task: The client's task index.
        allow_soft_placement: The session's ``ConfigProto`` field.

    Returns:
        ``(partitions by task, fetch_from)``: where each fetch comes from,
        ``(task, index in its partition's fetches)`` or ``(None, feed index)``.
    """
    step_ops = order_step(fetches, targets, feeds)
    if callable(tasks):
        tasks = tasks(step_ops)
    devices = place(step_ops, job, task, tasks, allow_soft_placement)
    parts = partition(step_ops, devices, fetches, targets, feeds)
    feed_index = {t.name: i for i, t in enumerate(feeds)}
    fetch_from: list[tuple[str | None, int]] = []
    for t in fetches:
        if t.name in feed_index:
            fetch_from.append((None, feed_index[t.name]))
        else:
            owner = task_of(devices[t.op])
            fetch_from.append((owner, parts[owner].fetches.index(t.name)))
    return parts, fetch_from
