"""Frames and iterations: how one step runs a ``tf.while_loop``'s cycle of dataflow.

A step with a loop runs the same ops many times, so a value is not just a
tensor's: it is the tensor's in one *iteration* of one *frame* — TF's
``(frame, iteration)`` tag. The step starts in iteration 0 of the root
frame. Then, as in TF's executor (``common_runtime/propagator_state.cc``):

* ``Enter`` puts its value in iteration 0 of a child frame, the instance of
  the loop for the iteration it ran in (a loop nested in a loop gets a new
  frame each outer iteration); a *constant* Enter gives its value to every
  iteration of the child frame, present and future;
* ``NextIteration`` puts its value in the next iteration of its frame,
  starting that iteration — unless ``parallel_iterations`` iterations are
  already running, in which case it waits until the oldest ends;
* ``Exit`` puts its value back in the parent frame's iteration; a dead
  ``Exit`` (the loop went round again) is dropped, unless the whole loop
  was dead (a loop on a ``tf.cond`` branch not taken), when the frame's
  end makes the consumers dead;
* every other op's outputs stay in its own iteration.

A ``Merge`` waits for one live input, not for all of them: its loop
variable comes from ``Enter`` in iteration 0 and from ``NextIteration``
afterwards. An iteration ends when none of its ops is left to run and the
one before it has ended; a frame ends when every ``Enter`` into it has run
and its last iteration has ended.

Each iteration has its own value slots, pending counts and dead counts; a
move of the step names its op *and* its iteration by one number,
``tag * len(plan.steps) + step`` (`Frames.locate`), so the step's
`minitf.runtime.core.execution.StepExecution`, its `Scheduler` and every
observer keep working with plain integers.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import errors
from minitf.ops.control_flow.control_flow_kernels import DEAD

NORMAL, ENTER, CONSTANT_ENTER, EXIT, NEXT_ITERATION = range(5)
_KINDS = {
    "Enter": ENTER,
    "RefEnter": ENTER,
    "Exit": EXIT,
    "RefExit": EXIT,
    "NextIteration": NEXT_ITERATION,
}
LOOP_OP_TYPES = frozenset({*_KINDS, "LoopCond"})


class FrameInfo:
    """What a plan's loops are, worked out once per plan (TF's ``ControlFlowInfo``).

    Args:
        steps: The plan's steps.
        initial_slots: The value slots a new iteration starts from (folded constants).

    Attributes:
        kinds: For each step: NORMAL, ENTER, CONSTANT_ENTER, EXIT or NEXT_ITERATION.
        initial_pending: For each step, its pending count in a new iteration:
            its predecessors, or for a ``Merge`` ``2 * control inputs + 1``
            (the low bit: no live input yet).
        merge_inputs: For a ``Merge`` step, ``{data predecessor: its input slots}``.
        enters_into: For each frame name, how many ``Enter`` steps feed it.
        roots: The steps ready when the step starts.
        triggers: The ``ControlTrigger`` steps (never dead).
    """

    def __init__(self, steps: tuple, initial_slots: list):
        self.n = len(steps)
        self.initial_slots = initial_slots
        self.kinds = [self._kind(s.op) for s in steps]
        self.frame_names = [
            s.op.get_attr("frame_name") if k in (ENTER, CONSTANT_ENTER) else None
            for s, k in zip(steps, self.kinds)
        ]
        self.enters_into: dict[str, int] = {}
        for name in self.frame_names:
            if name is not None:
                self.enters_into[name] = self.enters_into.get(name, 0) + 1
        index = {s.op: i for i, s in enumerate(steps)}
        producer = {}
        for i, s in enumerate(steps):
            for slot in s.out_slots:
                producer[slot] = i
        self.merge_inputs: dict[int, dict[int, list[int]]] = {}
        self.initial_pending = [s.num_predecessors for s in steps]
        for j, s in enumerate(steps):
            if s.op.type != "Merge":
                continue
            data: dict[int, list[int]] = {}
            for slot in s.in_slots:
                if slot in producer:
                    data.setdefault(producer[slot], []).append(slot)
            controls = sum(1 for c in s.op.control_inputs if c in index and index[c] not in data)
            self.merge_inputs[j] = data
            self.initial_pending[j] = 2 * controls + 1
        self.roots = tuple(i for i, s in enumerate(steps) if s.num_predecessors == 0)
        self.triggers = frozenset(i for i, s in enumerate(steps) if s.op.type == "ControlTrigger")

    @staticmethod
    def _kind(op) -> int:
        kind = _KINDS.get(op.type, NORMAL)
        if kind == ENTER and op.get_attr("is_constant"):
            return CONSTANT_ENTER
        return kind


class Iteration:
    """One iteration of one frame: its value slots, pending and dead counts, what still runs.

    Attributes:
        key: Where it is, the same on every task that runs the loop: ``""``
            for the root frame, else the frame names and iteration numbers
            from the outermost loop in, ``"outer/while_context:2|inner/while_context:0"``
            (TF's ``FrameAndIter``). A ``_Send`` or ``_Recv`` run in it adds
            it to its rendezvous key, so iterations do not collide.
    """

    __slots__ = (
        "frame", "number", "tag", "key", "vals", "pending", "dead", "outstanding", "children",
    )  # fmt: skip

    def __init__(self, frame: Frame, number: int, tag: int, vals: list, info: FrameInfo):
        self.frame = frame
        self.number = number
        self.tag = tag
        self.key = _key_of(frame, number)
        self.vals = vals
        self.pending = info.initial_pending.copy()
        self.dead = [0] * info.n
        self.outstanding = 0  # its ops ready, running or waiting
        self.children = 0  # frames entered from it that have not ended


def _key_of(frame: Frame, number: int) -> str:
    """The `Iteration.key` of iteration ``number`` of ``frame``."""
    if frame.parent is None:
        return ""
    outer = frame.parent.key
    here = f"{frame.name}:{number}"
    return f"{outer}|{here}" if outer else here


def rendezvous_key(key: str, frame_iter: str) -> str:
    """The rendezvous key of a tensor sent in iteration ``frame_iter``: ``key;frame_iter``.

    Inside a ``tf.while_loop`` split across tasks, the same ``_Send`` and
    ``_Recv`` run once per iteration; TF's key names the frame and the
    iteration (``FrameAndIter`` in its parsed key), so that iteration 3's
    tensor is never taken by iteration 4's ``_Recv``. In the root frame
    (``frame_iter`` is ``""``) the key stays as the partitioner made it.

    Args:
        key: The ``_Send``/``_Recv``'s ``tensor_name``: ``src;dst;tensor``.
        frame_iter: An `Iteration.key`: ``"while/while_context:3"``, or ``""``.
    """
    return f"{key};{frame_iter}" if frame_iter else key


def loop_name(frame: str) -> str:
    """The loop a frame runs, as its ops are named: ``while/while_context`` → ``while``.

    Args:
        frame: A frame's name (an ``Enter``'s ``frame_name``).
    """
    return frame[: -len("/while_context")] if frame.endswith("/while_context") else frame


def iteration_words(frames) -> str:
    """Where an op of a loop ran, in words: ``iteration 2 of frame while``.

    A nested loop's says the enclosing iterations too: ``iteration 1 of
    frame while/while, in iteration 2 of frame while``.

    Args:
        frames: ``[(frame name, iteration), ...]``, outermost first (empty:
            not in a loop, and the answer is "").
    """
    words = [
        f"iteration {number} of frame {loop_name(frame)}" for frame, number in reversed(frames)
    ]
    return ", in ".join(words)


class Frame:
    """One execution of a loop: its iterations, and what waits to enter them."""

    __slots__ = (
        "name", "parent", "max_parallel", "pending_enters", "iterations", "count",
        "running", "invariants", "deferred", "dead_exits",
    )  # fmt: skip

    def __init__(self, name: str, parent: Iteration | None, max_parallel: int, enters: int):
        self.name = name
        self.parent = parent
        self.max_parallel = max_parallel
        self.pending_enters = enters  # Enters into the frame that have not run yet
        self.iterations: dict[int, Iteration] = {}
        self.count = 0  # the newest iteration's number
        self.running = 1  # iterations started and not ended
        self.invariants: list[tuple[int, Any]] = []  # (constant Enter step, value)
        self.deferred: list[tuple[int, Any]] = []  # NextIterations past parallel_iterations
        self.dead_exits: list[int] = []  # dead Exit steps of the newest iteration


class Frames:
    """The frames and iterations of one step; ready ``(op, iteration)`` s join its ready deque.

    Args:
        info: The plan's `FrameInfo`.
        steps: The plan's steps.
        root_vals: The root iteration's value slots (the step's own).
        ready: The step's deque of ready moves.
    """

    def __init__(self, info: FrameInfo, steps: tuple, root_vals: list, ready):
        self.info = info
        self.steps = steps
        self.ready = ready
        self.iterations: dict[int, Iteration] = {}
        self._next_tag = 0
        self._children: dict[tuple[int, str], Frame] = {}
        self.ran = bytearray(info.n)  # 1 for each step finished in some iteration (observers)
        self.root = self._new_iteration(Frame("", None, 1, 0), 0, root_vals)
        for i in info.roots:
            self._make_ready(self.root, i)

    def locate(self, k: int) -> tuple[Iteration, int]:
        """The iteration and the step index of the move ``k``."""
        tag, i = divmod(k, self.info.n)
        return self.iterations[tag], i

    def where(self, k: int) -> tuple[tuple[str, int], ...]:
        """The frames and iterations of move ``k``, outermost first: ``(frame name, iteration)``.

        A move of the root frame gives ``()``; a move of iteration 2 of a loop
        in iteration 1 of another gives ``(("outer...", 1), ("inner...", 2))``.
        Observers (a trace, the stepper) call it while the move's iteration runs.
        """
        it = self.iterations[k // self.info.n]
        chain = []
        while it.frame.parent is not None:
            chain.append((it.frame.name, it.number))
            it = it.frame.parent
        return tuple(reversed(chain))

    def pending_of(self, k: int) -> int:
        """The pending count of step ``k`` in its iteration."""
        it, i = self.locate(k)
        return it.pending[i]

    def check_ended(self) -> None:
        """Raises if a frame is still open when nothing is left to run.

        Raises:
            InternalError: naming the frames and the ops that never became ready.
        """
        if not self._children:
            return
        names = sorted({frame.name for frame in self._children.values()})
        waiting = sorted(
            self.steps[i].op.name
            for it in self.iterations.values()
            if it.frame.parent is not None
            for i, count in enumerate(it.pending)
            if 0 < count and i not in self.info.merge_inputs
        )[:5]
        raise errors.InternalError(
            None,
            None,
            f"The step ended with the loop frames {names} still open: their ops wait for "
            f"each other (for example {waiting}).",
        )

    def is_dead(self, it: Iteration, i: int) -> bool:
        """Whether step ``i`` is dead in ``it``: a dead (control) input; a Merge: no live input."""
        vals = it.vals
        in_slots = self.steps[i].in_slots
        if i in self.info.merge_inputs:
            return all(vals[s] is DEAD or vals[s] is None for s in in_slots)
        if i in self.info.triggers:
            return False  # a ControlTrigger runs even when what it waits for is dead
        return it.dead[i] > 0 or any(vals[s] is DEAD for s in in_slots)

    def finished(self, it: Iteration, i: int, dead: bool) -> None:
        """Step ``i`` has finished in ``it``: its outputs go where its kind sends them."""
        kind = self.info.kinds[i]
        self.ran[i] = 1
        if kind == NORMAL:
            self._activate(i, it, dead)
        elif kind == EXIT:
            self._exit(it, i, dead)
        elif kind == NEXT_ITERATION:
            if not dead:  # a dead NextIteration ends the deadness: the loop is over
                self._next_iteration(it, i)
        else:
            self._enter(it, i, dead)
        self._op_done(it)

    def _enter(self, it: Iteration, i: int, dead: bool) -> None:
        child = self._child_frame(it, i)
        value = self._output(it, i)
        if self.info.kinds[i] == CONSTANT_ENTER:
            child.invariants.append((i, value))
            for target in list(child.iterations.values()):
                self._give(target, i, value)
        else:
            self._give(child.iterations[0], i, value)
        child.pending_enters -= 1
        self._cleanup(child, child.iterations.get(0))

    def _exit(self, it: Iteration, i: int, dead: bool) -> None:
        frame = it.frame
        if dead:
            if it.number == frame.count:
                frame.dead_exits.append(i)
            return
        self._give(frame.parent, i, self._output(it, i))

    def _next_iteration(self, it: Iteration, i: int) -> None:
        frame = it.frame
        value = self._output(it, i)
        if it.number < frame.count:
            self._give(frame.iterations[it.number + 1], i, value)
        elif frame.running == frame.max_parallel:
            frame.deferred.append((i, value))  # starts when the oldest iteration ends
        else:
            self._start_iteration(frame, [(i, value)])

    def _output(self, it: Iteration, i: int) -> Any:
        return it.vals[self.steps[i].out_slots[0]]

    def _give(self, target: Iteration, i: int, value: Any) -> None:
        """Puts step ``i``'s output ``value`` in iteration ``target``; activates its consumers."""
        target.vals[self.steps[i].out_slots[0]] = value
        self._activate(i, target, value is DEAD)

    def _activate(self, i: int, it: Iteration, dead: bool) -> None:
        """Counts step ``i``'s completion in its consumers in ``it``; the ready ones are queued."""
        pending, dead_count, vals = it.pending, it.dead, it.vals
        merges = self.info.merge_inputs
        for j in self.steps[i].successors:
            inputs = merges.get(j)
            if inputs is None:
                if dead:
                    dead_count[j] += 1
                pending[j] -= 1
                if pending[j] == 0:
                    self._make_ready(it, j)
                continue
            slots = inputs.get(i)
            if slots is None:  # a control input of the Merge
                pending[j] -= 2
                if pending[j] == 0 or (pending[j] == 1 and dead_count[j] == len(inputs)):
                    self._make_ready(it, j)
            elif not dead and any(vals[s] is not DEAD and vals[s] is not None for s in slots):
                count = pending[j]
                if count & 1:  # the first live input
                    pending[j] = count - 1
                    if count == 1:
                        self._make_ready(it, j)
            else:
                dead_count[j] += 1
                # A dead Enter kills the loop at once: a loop on a branch not taken.
                all_dead = dead_count[j] == len(inputs) or self.info.kinds[i] == ENTER
                if pending[j] == 1 and all_dead:
                    pending[j] = 0
                    self._make_ready(it, j)

    def _make_ready(self, it: Iteration, j: int) -> None:
        it.outstanding += 1
        self.ready.append(it.tag * self.info.n + j)

    def _op_done(self, it: Iteration) -> None:
        it.outstanding -= 1
        if it.outstanding == 0 and it.children == 0:
            self._cleanup(it.frame, it)

    def _new_iteration(self, frame: Frame, number: int, vals: list | None = None) -> Iteration:
        tag = self._next_tag
        self._next_tag += 1
        if vals is None:
            vals = self.info.initial_slots.copy()
        it = Iteration(frame, number, tag, vals, self.info)
        frame.iterations[number] = it
        self.iterations[tag] = it
        return it

    def _child_frame(self, it: Iteration, i: int) -> Frame:
        name = self.info.frame_names[i]
        key = (it.tag, name)
        child = self._children.get(key)
        if child is None:
            parallel = self.steps[i].op.get_attr("parallel_iterations")
            child = Frame(name, it, parallel, self.info.enters_into[name])
            self._new_iteration(child, 0)
            self._children[key] = child
            it.children += 1
        return child

    def _start_iteration(self, frame: Frame, roots: list[tuple[int, Any]]) -> Iteration:
        """Starts the frame's next iteration: NextIteration values ``roots``, and its invariants."""
        frame.count += 1
        frame.running += 1
        frame.dead_exits.clear()
        it = self._new_iteration(frame, frame.count)
        for i, value in roots + frame.invariants:
            self._give(it, i, value)
        return it

    def _iteration_done(self, frame: Frame, it: Iteration | None) -> bool:
        if it is None or it.outstanding or it.children:
            return False
        if it.number == 0:
            return frame.pending_enters == 0
        return it.number - 1 not in frame.iterations

    def _cleanup(self, frame: Frame, it: Iteration | None) -> None:
        """Ends the frame's iterations that are done, oldest first; then the frame, if done."""
        if frame.parent is None or it is None:
            return  # the root frame ends with the step
        number = it.number
        while number <= frame.count and self._iteration_done(frame, frame.iterations.get(number)):
            done = frame.iterations.pop(number)
            del self.iterations[done.tag]
            frame.running -= 1
            number += 1
            if frame.deferred:
                roots, frame.deferred = frame.deferred, []
                self._start_iteration(frame, roots)
        if frame.pending_enters == 0 and frame.running == 0:
            self._end_frame(frame)

    def _end_frame(self, frame: Frame) -> None:
        """The frame is over: its dead exits make their consumers dead; its parent may end too."""
        parent = frame.parent
        for i in frame.dead_exits:
            self._give(parent, i, DEAD)
        del self._children[(parent.tag, frame.name)]
        parent.children -= 1
        if parent.outstanding == 0 and parent.children == 0:
            self._cleanup(parent.frame, parent)


class TaggedSteps:
    """A plan's steps (or units) indexed by move: ``view[k]`` is the step of move ``k``.

    Observers (the stepper, the watch, a simulation) look a move's op up by
    its number; with loops the number also names the iteration.
    """

    __slots__ = ("_items", "_n")

    def __init__(self, items: tuple):
        self._items = items
        self._n = len(items)

    def __getitem__(self, k: int):
        return self._items[k % self._n]

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        return iter(self._items)


class TaggedPending:
    """The pending counts of a step with loops, indexed by move (`Frames.pending_of`)."""

    __slots__ = ("_frames",)

    def __init__(self, frames: Frames):
        self._frames = frames

    def __getitem__(self, k: int) -> int:
        return self._frames.pending_of(k)
