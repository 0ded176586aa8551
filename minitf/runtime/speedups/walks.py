"""Walks with buffers and fused chains: a straight walk that allocates almost nothing.

A speed-up, from a plan's second run on (`Walks`): the same ops as
`minitf.runtime.core.plan.Plan.straight`, but

* kernels that write into arrays they keep from one step to the next
  (``with_buffers``, `minitf.ops.math.math_kernels.reusable`) — TF's
  allocator reusing the memory of dead tensors, so a steady training step
  allocates almost nothing;
* chains such as ``MatMul`` → ``BiasAdd``/``Add`` → ``Relu`` and ``MatMul`` →
  ``ReluGrad`` run as one fused kernel (`minitf.ops.nn.nn_kernels.fused_matmul`)
  when nothing else reads the values in between, as TF's remapper fuses them.

Only the kernels change: the graph, the plan's steps, traced steps and the
stepper (which run every op as a move of its own) still see every op, and
the values are the same bit for bit (``MINITF_FAST=0`` turns it off).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from minitf.framework.ops import Operation
from minitf.ops.math.math_kernels import SMALL_RESULT
from minitf.ops.nn.nn_kernels import EPILOGUES, fused_matmul
from minitf.runtime.core.plan import (
    SHAPE_READERS,
    KernelInfo,
    PlanStep,
    dereferencing,
    reads_variable,
    straight_entry,
)

MAX_IDLE_WALKS = 4
"""How many walks (each with its buffers) a plan keeps for the steps to come."""

MIN_BUFFERED_ELEMENTS = SMALL_RESULT
"""Outputs known to be smaller than this are not worth a buffer (`SMALL_RESULT`)."""


def _worth_buffers(op: Operation) -> bool:
    """Whether ``op``'s outputs may be large enough for its kernel to keep buffers.

    Not for scalars (a kernel returns them as numpy scalars, which cost less
    than any array) nor for outputs whose static shape says they are small.
    """
    for t in op.outputs:
        shape = t.get_shape()
        if shape.ndims == 0:
            return False
        if shape.is_fully_defined() and shape.num_elements() < MIN_BUFFERED_ELEMENTS:
            return False
    return True


@dataclass(frozen=True)
class FusedChain:
    """Ops that the straight walk runs as one kernel (`minitf.ops.nn.nn_kernels.fused_matmul`).

    A ``MatMul``, then ops each of which is the only one to read the previous
    one's value (ops that read only its shape aside, `SHAPE_READERS`):
    ``BiasAdd`` or ``Add``/``AddV2`` of a vector, ``Relu``, ``ReluGrad`` (the
    value as the incoming gradient), and ``Identity`` on the way. The kernel
    runs where the ``MatMul`` is in the walk. That is earlier than the other
    ops' places, which changes nothing anyone can see: they are pure, and one
    that reads a variable (a bias) joins only if no stateful op, which might
    change the variable, runs between the ``MatMul`` and it.

    Attributes:
        ops: The chain's ops, the ``MatMul`` first.
        epilogue: What the kernel does after the product (``Identity`` ops
            left out), in order.
        in_slots: The kernel's inputs: the ``MatMul``'s two, then the extra
            input of each epilogue step but ``Relu``.
        out_slots: The slots it writes: the last op's output, then each
            earlier value in the chain that a shape reader reads.
        derefs: Which inputs read a variable (`reads_variable`).
    """

    ops: tuple[Operation, ...]
    epilogue: tuple[str, ...]
    in_slots: tuple[int, ...]
    out_slots: tuple[int, ...]
    derefs: tuple[int, ...]

    def entry(self) -> tuple:
        """A new straight-walk entry for the chain, with buffers of its own."""
        matmul = self.ops[0]
        copies = len(self.out_slots)
        compute = fused_matmul(
            matmul.get_attr("transpose_a"),
            matmul.get_attr("transpose_b"),
            matmul.get_attr("T").as_numpy_dtype,
            self.epilogue,
            copies,
        )()
        if self.derefs:
            compute = dereferencing(compute, self.derefs, False)
        out = self.out_slots[0] if copies == 1 else -1
        return (compute, self.in_slots, len(self.in_slots), out, self.out_slots, matmul)


class Walks:
    """The walks with buffers of one plan: one for each step that runs it at a time.

    A walk is `Plan.straight` with every kernel that can write into buffers
    it keeps (`KernelInfo.buffered`) made with buffers of its own, and each
    `FusedChain` in place of its ops. A step takes a walk (`take`) and gives
    it back when done (`give`): two steps running the plan at once never
    share a buffer, and a buffer is reused only when nothing holds its last
    value (`minitf.ops.math.math_kernels.reusable`). A plan run only once, like an
    initializer, keeps no buffers: its first `take` returns None and the
    executor walks `Plan.straight`.

    Args:
        build: Makes a new walk.
        chains: The fused chains.
        unfused_rest: For the first op of each chain, the rest of the step op by op.

    Attributes:
        chains: The fused chains.
        unfused_rest: For the first op of each chain, the entries of
            `Plan.straight` from that op on, without the ops of the chains
            before it: where a step goes on, op by op, when the chain's kernel
            declines its inputs (`minitf.ops.nn.nn_kernels.FusionDeclined`).
    """

    def __init__(self, build: Callable[[], tuple], chains: tuple, unfused_rest: dict):
        self._build = build
        # At most MAX_IDLE_WALKS: a walk given back to a full deque pushes out
        # the oldest, and any one walk serves as well as another.
        self._idle: deque[tuple] = deque(maxlen=MAX_IDLE_WALKS)
        self._taken = 0
        self.chains = chains
        self.unfused_rest = unfused_rest

    def take(self) -> tuple | None:
        """A walk to run a step with, or None the first time (walk `Plan.straight`)."""
        try:
            return self._idle.pop()
        except IndexError:
            pass
        self._taken += 1
        return None if self._taken == 1 else self._build()

    def give(self, walk: tuple) -> None:
        """Takes back a walk that `take` gave, once its step is over.

        Args:
            walk: The walk.
        """
        self._idle.append(walk)


def walks_of(
    walked: list[PlanStep],
    straight: tuple,
    kernels: dict[Operation, KernelInfo],
    fetch_slots: tuple[int, ...],
    members: list[int] | None = None,
) -> Walks | None:
    """The `Walks` of ``walked`` (all the plan's walked steps), or of those at ``members`` only.

    A segment's walks (`Segments`) fuse chains within the segment; who reads
    a value is still counted over the whole plan. None when no kernel would
    get buffers and nothing fuses: every walk would be ``straight`` itself,
    and a step walks it without taking one.
    """
    chains = fused_chains(walked, fetch_slots, kernels, None if members is None else set(members))
    if members is not None:
        walked = [walked[m] for m in members]
        straight = tuple(straight[m] for m in members)
    first_of = {chain.ops[0]: chain for chain in chains}
    fused = {op for chain in chains for op in chain.ops}
    # For each entry of a walk: how to make it.
    makers: list[Callable[[], tuple]] = []
    any_buffered = False
    for step, entry in zip(walked, straight):
        buffered = kernels[step.op].buffered if _worth_buffers(step.op) else None
        if step.op in first_of:
            makers.append(first_of[step.op].entry)
        elif step.op in fused:
            continue
        elif buffered is not None:
            any_buffered = True
            makers.append(lambda step=step, buffered=buffered: straight_entry(step, buffered()))
        else:
            makers.append(lambda entry=entry: entry)
    if not (chains or any_buffered):
        return None

    def build() -> tuple:
        return tuple(make() for make in makers)

    # Where a chain whose kernel declines its inputs goes on: every later entry
    # of Plan.straight, but the ops of the chains that ran before it.
    index = {step.op: i for i, step in enumerate(walked)}
    rests = {}
    for chain in chains:
        start = index[chain.ops[0]]
        done = {op for earlier in chains if index[earlier.ops[0]] < start for op in earlier.ops}
        rests[chain.ops[0]] = tuple(e for e in straight[start:] if e[5] not in done)
    return Walks(build, tuple(chains), rests)


def fused_chains(
    walked: list[PlanStep],
    fetch_slots: tuple[int, ...],
    kernels: dict[Operation, KernelInfo],
    allowed: set[int] | None = None,
) -> list[FusedChain]:
    """The chains of ``walked`` (the steps in walk order) that can run as one kernel.

    With ``allowed``, only chains whose ops are all at those positions.
    """
    readers: dict[int, list[tuple[int, int]]] = {}
    written_at: dict[int, int] = {}
    for pos, step in enumerate(walked):
        for i, slot in enumerate(step.in_slots):
            readers.setdefault(slot, []).append((pos, i))
        for slot in step.out_slots:
            written_at[slot] = pos
    fetched = set(fetch_slots)
    taken: set[int] = set()
    chains = []
    for start, first in enumerate(walked):
        if first.op.type != "MatMul" or not first.op.outputs[0].dtype.is_floating:
            continue
        if allowed is not None and start not in allowed:
            continue
        members, epilogue, extras, also_written = [start], [], [], []
        slot = first.out_slots[0]
        while slot not in fetched:
            all_readers = readers.get(slot, [])
            value_readers = [r for r in all_readers if walked[r[0]].op.type not in SHAPE_READERS]
            if len(value_readers) != 1:
                break
            pos, index = value_readers[0]
            step = walked[pos]
            kind = _epilogue_kind(step.op, index)
            if kind is None or pos in taken or len(step.out_slots) != 1:
                break
            if allowed is not None and pos not in allowed:
                break  # in another segment: it runs at another time
            extra = step.in_slots[1] if kind in ("BiasAdd", "ReluGrad") else None
            if extra is not None and written_at.get(extra, -1) > start:
                break  # not computed yet where the chain runs
            if not step.isolated and any(
                kernels[walked[r].op].stateful for r in range(start + 1, pos) if r not in members
            ):
                break  # it reads a variable that an op in between may change
            members.append(pos)
            if kind != "Identity":
                epilogue.append(kind)
            if extra is not None:
                extras.append((extra, step.op.inputs[1]))
            if len(all_readers) > 1:
                also_written.append(slot)
            slot = step.out_slots[0]
        if not epilogue:
            continue
        taken.update(members)
        inputs = list(first.op.inputs) + [tensor for _, tensor in extras]
        chains.append(
            FusedChain(
                ops=tuple(walked[m].op for m in members),
                epilogue=tuple(epilogue),
                in_slots=first.in_slots + tuple(extra_slot for extra_slot, _ in extras),
                out_slots=(slot, *also_written),
                derefs=tuple(i for i, t in enumerate(inputs) if reads_variable(t)),
            )
        )
    return chains


def _epilogue_kind(op: Operation, index: int) -> str | None:
    """What ``op`` does to a chain's value that is its input ``index``.

    Returns:
        One of `minitf.ops.nn.nn_kernels.EPILOGUES` (an ``Add`` of a vector is a
        ``BiasAdd``), ``"Identity"``, or None if ``op`` cannot join a chain.
    """
    kind = op.type
    if kind in ("Add", "AddV2") and op.inputs[1].get_shape().ndims == 1:
        kind = "BiasAdd"
    if kind == "Identity" or kind == "Relu":
        return kind
    if kind in EPILOGUES and index == 0:
        return kind
    return None
