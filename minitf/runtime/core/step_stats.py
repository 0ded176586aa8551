"""Step statistics: what a traced step records, as TF's ``StepStats`` in plain dicts.

A run with ``tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)`` and a
``tf.RunMetadata`` fills ``run_metadata.step_stats``; a `minitf.viz.Tracer`
gathers the same for every step the tasks of a cluster ran during a span of
training. Both have this shape (TF's field names, plus a few of minitf's own
for the teaching pictures)::

    {"dev_stats": [                      # one entry per task (its one device)
        {"device": "/job:ps/replica:0/task:0/device:CPU:0",
         "node_stats": [                 # one entry per executed op, in start order
             {"node_name": "Adam/update_w/ApplyAdam",
              "op": "ApplyAdam",
              "all_start_micros": 1732420000123456,   # one clock for the cluster
              "op_start_rel_micros": 0,
              "op_end_rel_micros": 41,
              "all_end_rel_micros": 41,              # duration, waits included
              "thread_id": 140230, "thread_name": "minitf-run",
              "output_bytes": 1024,                   # bytes of the op's outputs
              "asynchronous": False,                  # an op that may wait
              "timeline_label": "Adam/update_w/ApplyAdam = ApplyAdam()",
              "step_id": 8841,                        # the step it belongs to
              "wait_micros": 0,                       # time spent waiting
              # only where they apply:
              "waited_on": {"kind": "queue", "name": "sync_token_q",
                            "size": 0},               # state when it began to wait
              "transfer": {"direction": "send", "key": "<src>;<dst>;<tensor>",
                           "peer": "/job:worker/...", "bytes": 1024},
              "elements": {"queue": "sync_token_q", "direction": "enqueue",
                           "ids": [17, 18]},         # queue element ids moved
              "not_computed": "nothing in the step reads its outputs",
              "frame": "while/while_context",         # an op of a tf.while_loop:
              "iteration": 2},                        # its frame and iteration
             ...]}]}

``waited_on`` kinds: ``"queue"`` (``name``, ``size`` and ``capacity``; a
``RandomShuffleQueue`` also ``min_after_dequeue`` and ``closed``),
``"accumulator"`` (``name``, ``count`` of gradients and ``required``) and
``"rendezvous"`` (the ``key`` a ``_Recv`` waited for). An ``apply_grad``
notes ``accumulated``: the accumulator's ``name``, its gradient ``count``
afterwards, its ``global_step``, the gradient's ``local_step`` and whether
it was ``stale`` (dropped). ``transfer`` joins a
``_Send`` to its ``_Recv`` through ``(step_id, key)``; ``elements`` joins an
enqueue to the dequeue that took its elements through ``(queue, id)``.
``not_computed`` marks an op the step reached only through control edges,
whose kernel did not run (`minitf.runtime.core.graph_optimizer.unread_ops`).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any


class OpEvent:
    """One executed op of a traced step: what ran, when, on which thread, what it produced.

    Kept small (the plan step, times, sizes): a traced step makes one per op,
    and `minitf.runtime.core.step_stats` turns them into dicts afterwards.

    Args:
        step: The op's `minitf.runtime.core.plan.PlanStep`.
        start_ns: When it started, on the clock's ``now_ns``.
        end_ns: When its outputs were taken.
        thread: ``(ident, name)`` of the thread that drove the step.
        output_bytes: The size of its outputs, in bytes.
        wait_ns: How long an asynchronous op waited for its completion.
        notes: What its kernel noted (`StepContext.note`), or None.
    """

    __slots__ = (
        "step", "start_ns", "end_ns", "thread", "output_bytes", "wait_ns", "notes", "frames"
    )  # fmt: skip

    def __init__(self, step, start_ns, end_ns, thread, output_bytes, wait_ns=0, notes=None):
        self.step = step
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.thread = thread  # (ident, name) of the thread that drove the step
        self.output_bytes = output_bytes
        self.wait_ns = wait_ns
        self.notes = notes
        # In a tf.while_loop: its frames and iterations, outermost first (`Frames.where`).
        self.frames: tuple[tuple[str, int], ...] = ()

    name = property(lambda self: self.step.op.name, doc="The op's name.")
    type = property(lambda self: self.step.op.type, doc="The op's type.")
    asynchronous = property(lambda self: self.step.is_async, doc="Whether the op may wait.")
    thread_id = property(lambda self: self.thread[0], doc="The executor thread's ident.")
    thread_name = property(lambda self: self.thread[1], doc="The executor thread's name.")

    @classmethod
    def of(cls, step, start_ns: int, end_ns: int, vals: list, ctx, thread, wait_ns=0) -> OpEvent:
        """The event of ``step``, which ran from ``start_ns`` to ``end_ns``.

        Args:
            step: The op's `minitf.runtime.core.plan.PlanStep`.
            start_ns: When it started, on the clock's ``now_ns``.
            end_ns: When its outputs were taken.
            thread: ``(ident, name)`` of the thread that drove the step.
            vals: The step's value slots (the op's outputs are measured).
            ctx: The step's `StepContext` (its notes for the op, in the
                iteration its ``frame_iter`` names, are taken).
            wait_ns: How long an asynchronous op waited for its completion.
        """
        size = 0
        for slot in step.out_slots:
            size += getattr(vals[slot], "nbytes", 0)
        return cls(step, start_ns, end_ns, thread, size, wait_ns, ctx.take_notes(step.op.name))


class Record(dict):
    """A dict whose keys also read as attributes.

    TF1 code reads ``StepStats`` as a protocol buffer
    (``for dev in run_metadata.step_stats.dev_stats: dev.node_stats[0].node_name``);
    JSON tools and the tests read dicts. Records are both.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"StepStats field {name!r} is not set") from None


def empty() -> Record:
    """An empty ``StepStats`` (what ``tf.RunMetadata().step_stats`` starts as)."""
    return Record(dev_stats=[])


NOTE_FIELDS = ("waited_on", "transfer", "elements", "accumulated", "not_computed")
"""The fields kernels add to an op's stats (the ones the docstring above describes)."""

_WALL_OFFSET_NS = time.time_ns() - time.perf_counter_ns()


def wall_micros(perf_ns: int | None = None) -> int:
    """A ``time.perf_counter_ns()`` reading (default: now) as wall-clock microseconds.

    Args:
        perf_ns: A ``time.perf_counter_ns()`` reading, or None for now.
    """
    if perf_ns is None:
        perf_ns = time.perf_counter_ns()
    return (perf_ns + _WALL_OFFSET_NS) // 1000


def node_stats(event, step_id: int, clock_offset_micros: int = 0) -> dict[str, Any]:
    """One ``node_stats`` entry from an executor `OpEvent`.

    Args:
        event: The `OpEvent`.
        step_id: The step it ran in.
        clock_offset_micros: Added to its start: this process's clock relative
            to the clock the trace is kept in (see `minitf.runtime.distributed.master`).
    """
    op = event.step.op
    stats = _stats(op.name, op.type, event.start_ns, event.end_ns, event.thread, step_id)
    stats.update(
        all_start_micros=stats["all_start_micros"] + clock_offset_micros,
        output_bytes=event.output_bytes,
        asynchronous=event.step.is_async,
        wait_micros=event.wait_ns // 1000,
    )
    if event.frames:
        stats.update(loop_fields(event.frames))
    if event.notes:
        stats.update(event.notes)
        if not event.wait_ns:
            stats.pop("waited_on", None)  # it did not have to wait after all
    return stats


LOOP_FIELDS = ("frame", "iteration", "outer_iterations")
"""The fields of an op that ran in a ``tf.while_loop`` (`loop_fields`)."""


def loop_fields(frames: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    """The fields of an op that ran in a loop: ``frame``, ``iteration`` and ``outer_iterations``.

    TF's trace names an op the same in every iteration; these say which one
    ran (``outer_iterations``: the enclosing loops' frames and iterations,
    outermost first, for a nested loop).

    Args:
        frames: Its frames and iterations, outermost first (`Frames.where`).
    """
    frame, iteration = frames[-1]
    fields: dict[str, Any] = {"frame": frame, "iteration": iteration}
    if len(frames) > 1:
        fields["outer_iterations"] = [list(f) for f in frames[:-1]]
    return fields


def frames_of(stats: dict) -> list[tuple[str, int]]:
    """The frames and iterations of a ``node_stats`` entry, outermost first (`loop_fields` undone).

    Args:
        stats: A ``node_stats`` entry (``[]`` for an op outside every loop).
    """
    if "iteration" not in stats:
        return []
    outer = [tuple(f) for f in stats.get("outer_iterations", [])]
    return [*outer, (stats["frame"], stats["iteration"])]


def folded_stats(plan, start_ns: int, step_id: int) -> list[dict]:
    """The ``node_stats`` entries of the ops a plan folded into constants that its step uses.

    Grappler computes a constant subgraph before the step and puts a
    ``Const`` node in its place, under the name of the op whose value is
    used; TF's trace then lists that ``Const``, and nothing of the subgraph
    behind it. minitf folds when it builds the plan
    (`minitf.runtime.core.plan.Plan.folded_frontier`): each such op is listed as
    a ``Const`` of no duration at the start of the step, with the op type
    it was folded from in ``folded_from`` when it was not a ``Const`` itself.

    Args:
        plan: The step's `minitf.runtime.core.plan.Plan`.
        start_ns: When the step started, on its clock's ``now_ns``.
        step_id: The step's id.
    """
    if not plan.folded_frontier:
        return []
    current = threading.current_thread()
    thread = (current.ident, current.name)
    nodes = []
    for op, nbytes in plan.folded_frontier:
        stats = _stats(op.name, "Const", start_ns, start_ns, thread, step_id)
        stats["output_bytes"] = nbytes
        if op.type != "Const":
            stats["folded_from"] = op.type
        nodes.append(stats)
    return nodes


def step_nodes(plan, start_ns: int, step_id: int, events: list) -> list[dict]:
    """The ``node_stats`` entries of a traced step: its folded constants, then its ops.

    Args:
        plan: The step's `minitf.runtime.core.plan.Plan`.
        start_ns: When the step started, on its clock's ``now_ns``.
        step_id: The step's id.
        events: The `OpEvent` s it recorded.
    """
    nodes = folded_stats(plan, start_ns, step_id)
    nodes += [node_stats(e, step_id) for e in events]
    return nodes


def delay_stats(start_ns: int, end_ns: int, thread: tuple, step_id: int, seconds: float) -> dict:
    """The ``node_stats`` entry of a straggler's delay (`minitf.cluster.delays`): a waiting bar.

    Args:
        start_ns: When the delay began (``perf_counter_ns``).
        end_ns: When it ended.
        thread: ``(ident, name)`` of the delayed thread.
        step_id: The step it delayed.
        seconds: The delay the straggler model drew.
    """
    stats = _stats(STRAGGLER_DELAY, "StragglerDelay", start_ns, end_ns, thread, step_id)
    stats.update(
        wait_micros=stats["op_end_rel_micros"],
        waited_on={"kind": "straggler", "seconds": round(seconds, 6)},
    )
    return stats


STRAGGLER_DELAY = "straggler_delay"
"""The node name of a straggler's delay in traces."""


def _stats(name: str, op_type: str, start_ns: int, end_ns: int, thread: tuple, step_id: int):
    duration = (end_ns - start_ns) // 1000
    return Record({
        "node_name": name,
        "op": op_type,
        "all_start_micros": wall_micros(start_ns),
        "op_start_rel_micros": 0,
        "op_end_rel_micros": duration,
        "all_end_rel_micros": duration,
        "thread_id": thread[0],
        "thread_name": thread[1],
        "output_bytes": 0,
        "asynchronous": False,
        "timeline_label": f"{name} = {op_type}()",
        "step_id": step_id,
        "wait_micros": 0,
    })  # fmt: skip


def shift(stats: list[dict], micros: int) -> list[dict]:
    """``node_stats`` entries moved by ``micros`` on the clock (a task's offset).

    Args:
        stats: ``node_stats`` entries.
        micros: Microseconds to add to their start times.
    """
    if not micros:
        return stats
    return [Record(s, all_start_micros=s["all_start_micros"] + micros) for s in stats]


def build(per_device: dict[str, list[dict]]) -> dict:
    """``{"dev_stats": [...]}`` from ``{device: node_stats}``, each device's ops by start time.

    Args:
        per_device: ``{device: node_stats}``.
    """
    return Record(
        dev_stats=[
            Record(device=device, node_stats=sorted(nodes, key=_start))
            for device, nodes in sorted(per_device.items())
        ]
    )


def merge(*step_stats: dict) -> dict:
    """One ``StepStats`` holding every device's ops of several."""
    per_device: dict[str, list[dict]] = {}
    for stats in step_stats:
        for dev in stats.get("dev_stats", []):
            per_device.setdefault(dev["device"], []).extend(dev["node_stats"])
    return build(per_device)


def _start(node: dict) -> tuple[int, int]:
    return node["all_start_micros"], -node["all_end_rel_micros"]


class Recorders:
    """The open recordings of one task or local session (what a `minitf.viz.Tracer` reads).

    While any is open, every step the owner runs is traced and its ops are
    added to each. A recording keeps at most ``limit`` ops; past that it
    counts what it dropped, so a forgotten tracer cannot eat the memory.

    Args:
        limit: The most ops a recording keeps.
    """

    def __init__(self, limit: int = 500_000):
        self._lock = threading.Lock()
        self._closed = threading.Condition(self._lock)
        self._open: dict[int, list[dict]] = {}
        self._dropped: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._limit = limit

    @property
    def active(self) -> bool:
        """Whether a recording is open (read without the lock: a stale answer costs one step)."""
        return bool(self._open)

    def start(self) -> int:
        """Opens a recording; returns its id."""
        with self._lock:
            rid = next(self._ids)
            self._open[rid] = []
            self._dropped[rid] = 0
            return rid

    def stop(self, rid: int) -> tuple[list[dict], int]:
        """Closes a recording; returns its ops and how many were dropped over the limit.

        Args:
            rid: What `start` returned.
        """
        with self._lock:
            result = self._open.pop(rid, []), self._dropped.pop(rid, 0)
            self._closed.notify_all()
            return result

    def wait_until_inactive(self, timeout: float) -> bool:
        """Waits until no recording is open; False if one still is after ``timeout`` seconds.

        Args:
            timeout: Seconds to wait.
        """
        with self._closed:
            return self._closed.wait_for(lambda: not self._open, timeout)

    def record(self, nodes: list[dict]) -> None:
        """Adds one step's ops to every open recording.

        Args:
            nodes: The step's ``node_stats`` entries.
        """
        with self._lock:
            for rid, kept in self._open.items():
                room = self._limit - len(kept)
                kept.extend(nodes[: max(room, 0)])
                self._dropped[rid] += max(len(nodes) - max(room, 0), 0)
