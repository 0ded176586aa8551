"""``Timeline``: traced steps as Chrome trace JSON (open it in Perfetto or chrome://tracing).

Run a step with ``tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)`` and a
``tf.RunMetadata`` (or gather a span of cluster steps with a `minitf.viz.Tracer`);
``Timeline(run_metadata.step_stats)`` turns the step stats
(`minitf.runtime.step_stats`) into the Chrome trace event format:

* one process per ``dev_stats`` entry (a task), named by its device and kept in
  ``dev_stats`` order;
* one thread row per executor thread of that task, plus extra rows
  ``"<thread name> #2"``, ... where ops of one thread overlap (see below);
* one complete (``"X"``) event per op, named by op type, its category the op's
  role (`minitf.viz.graph_data.op_role`), times in microseconds from the
  earliest op of the trace;
* inside an op that waited, a ``"wait"`` event covering the last
  ``wait_micros`` of its bar (never its first microsecond, where flow arrows
  bind);
* flow arrows from each ``_Send`` to the ``_Recv`` of the same step and
  rendezvous key, and from each enqueue to every dequeue that took some of its
  elements.

Viewers draw the events of one thread as a stack, so on a row two events must
be disjoint or one must contain the other. An asynchronous op (a dequeue, a
``_Recv``) stays open while its thread runs other ops, so those may overlap it
only partly; such an op goes to the thread's next row where it nests.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from minitf.runtime.step_stats import NOTE_FIELDS
from minitf.viz.graph_data import op_role


class Timeline:
    """TF's ``tensorflow.python.client.timeline.Timeline`` for minitf's step stats.

    Args:
        step_stats: ``RunMetadata.step_stats`` of a traced run, or the merged
            stats of several steps and tasks (`minitf.runtime.step_stats`).
    """

    def __init__(self, step_stats: dict):
        if not isinstance(step_stats, dict) or not isinstance(
            step_stats.get("dev_stats", []), list
        ):
            raise TypeError(
                "Timeline needs step stats: run_metadata.step_stats of a run with "
                "tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), or a Tracer's step_stats; "
                f"got {type(step_stats).__name__}"
            )
        self._step_stats = step_stats

    def to_dict(self, show_dataflow: bool = True) -> dict:
        """The trace as a Chrome trace-event dict, ``{"traceEvents": [...]}``.

        Args:
            show_dataflow: Whether to add the flow arrows (send to receive,
                enqueue to dequeue).

        Returns:
            A JSON-able dict: metadata (``"M"``) events naming processes and
            threads, complete (``"X"``) events for ops and waits, and flow
            (``"s"`` / ``"f"``) events.
        """
        devices = self._step_stats.get("dev_stats", [])
        starts = [n["all_start_micros"] for dev in devices for n in dev["node_stats"]]
        origin = min(starts, default=0)
        events: list[dict] = []
        slices: list[_Slice] = []
        for pid, dev in enumerate(devices):
            layout = _layout(pid, dev["node_stats"], origin)
            events += _process_metadata(pid, dev["device"], layout.row_names)
            slices += layout.slices
        for s in slices:
            events += _slice_events(s)
        if show_dataflow:
            for flow_id, (source, dest) in enumerate(_flows(slices)):
                events += _flow_events(flow_id, source, dest)
        return {"traceEvents": events}

    def generate_chrome_trace_format(
        self, show_dataflow: bool = True, show_memory: bool = False
    ) -> str:
        """The trace as a Chrome trace-event JSON string (see `to_dict`).

        Args:
            show_dataflow: Whether to add the flow arrows (send to receive,
                enqueue to dequeue).
            show_memory: Accepted for TF compatibility and ignored: minitf
                traces no allocator state.

        Returns:
            The JSON text, for a ``.json`` file to open in a trace viewer.
        """
        del show_memory
        return json.dumps(self.to_dict(show_dataflow=show_dataflow))


@dataclass(eq=False)
class _Slice:
    """An op as drawn: its node stats, process, row and span (µs from the trace origin).

    Compared and hashed by identity: two ops may have equal stats.
    """

    node: dict
    pid: int
    ts: int
    dur: int
    wait: int
    tid: int = 0

    @property
    def end(self) -> int:
        return self.ts + self.dur

    @property
    def busy_end(self) -> int:
        """Where the wait begins: ops nested in this one must end by then."""
        return self.end - self.wait


def _slice(node: dict, pid: int, origin: int) -> _Slice:
    ts = node["all_start_micros"] - origin
    dur = max(1, node["all_end_rel_micros"])
    # The wait leaves the op's first microsecond to the op itself: a flow
    # arrow binds there, to the innermost slice open at its timestamp.
    wait = min(node.get("wait_micros", 0), dur - 1)
    return _Slice(node, pid, ts, dur, wait)


@dataclass
class _Row:
    """A thread row: the stack of slices still open at the latest start placed on it."""

    open: list[_Slice] = field(default_factory=list)

    def fits(self, s: _Slice) -> bool:
        """Whether ``s`` (starting no earlier than anything placed) nests on this row.

        The open slices are nested, so ``s`` nests with all of them if it
        nests in the innermost: it starts after that one's first microsecond
        and ends before that one's wait.
        """
        while self.open and self.open[-1].end <= s.ts:
            self.open.pop()
        return not self.open or (self.open[-1].ts < s.ts and s.end <= self.open[-1].busy_end)


@dataclass
class _Layout:
    """One task's slices with their rows: ``row_names[tid]`` names row ``tid``."""

    slices: list[_Slice]
    row_names: list[str]


def _layout(pid: int, node_stats: list[dict], origin: int) -> _Layout:
    """Places each op of a task on the first row of its thread where it nests.

    Rows are keyed ``(thread index, extra)``: thread indices in order of first
    appearance, ``extra`` 0 for the thread's own row. Their tids follow that
    order, so a thread's extra rows sit right below it.
    """
    slices = sorted((_slice(n, pid, origin) for n in node_stats), key=lambda s: (s.ts, -s.dur))
    thread_index: dict[int, int] = {}
    thread_names: list[str] = []
    rows: dict[tuple[int, int], _Row] = {}
    placed = []
    for s in slices:
        thread_id = s.node["thread_id"]
        if thread_id not in thread_index:
            thread_index[thread_id] = len(thread_names)
            thread_names.append(s.node.get("thread_name", str(thread_id)))
        placed.append(_place(rows, thread_index[thread_id], s))
    tids = {key: tid for tid, key in enumerate(sorted(rows))}
    for s, key in zip(slices, placed):
        s.tid = tids[key]
    names = [thread_names[t] + (f" #{extra + 1}" if extra else "") for t, extra in sorted(rows)]
    return _Layout(slices, names)


def _place(rows: dict[tuple[int, int], _Row], thread: int, s: _Slice) -> tuple[int, int]:
    """Puts ``s`` on the first row of ``thread`` where it nests (a new row if none)."""
    extra = 0
    while not rows.setdefault((thread, extra), _Row()).fits(s):
        extra += 1
    rows[thread, extra].open.append(s)
    return thread, extra


def _process_metadata(pid: int, device: str, row_names: list[str]) -> list[dict]:
    events = [
        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": device}},
        {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}},
    ]
    for tid, name in enumerate(row_names):
        events.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        )
        events.append(
            {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
             "args": {"sort_index": tid}}
        )  # fmt: skip
    return events


def _slice_events(s: _Slice) -> list[dict]:
    """The op's ``"X"`` event, and its wait nested at the end of it."""
    node = s.node
    args = {
        "node_name": node["node_name"],
        "op": node["op"],
        "step_id": node.get("step_id"),
        "output_bytes": node.get("output_bytes", 0),
        "wait_micros": node.get("wait_micros", 0),
    }
    args.update({k: node[k] for k in NOTE_FIELDS if k in node})
    op = {"name": node["op"], "cat": op_role(node["op"]), "ph": "X", "pid": s.pid, "tid": s.tid,
          "ts": s.ts, "dur": s.dur, "args": args}  # fmt: skip
    if not s.wait:
        return [op]
    wait_args = {"node_name": node["node_name"], "wait_micros": node["wait_micros"]}
    if "waited_on" in node:
        wait_args["waited_on"] = node["waited_on"]
    wait = {"name": "wait", "cat": "wait", "ph": "X", "pid": s.pid, "tid": s.tid,
            "ts": s.busy_end, "dur": s.wait, "args": wait_args}  # fmt: skip
    return [op, wait]


def _flows(slices: list[_Slice]) -> list[tuple[_Slice, _Slice]]:
    """``(source, destination)`` of every arrow: tensor transfers, then queue elements."""
    return _transfers(slices) + _queue_handoffs(slices)


def _transfers(slices: list[_Slice]) -> list[tuple[_Slice, _Slice]]:
    """Each ``_Send`` to the ``_Recv`` of the same step and rendezvous key."""
    sends = defaultdict(list)
    for s in slices:
        if s.node.get("transfer", {}).get("direction") == "send":
            sends[s.node.get("step_id"), s.node["transfer"]["key"]].append(s)
    return [
        (send, recv)
        for recv in slices
        if recv.node.get("transfer", {}).get("direction") == "recv"
        for send in sends[recv.node.get("step_id"), recv.node["transfer"]["key"]]
    ]


def _queue_handoffs(slices: list[_Slice]) -> list[tuple[_Slice, _Slice]]:
    """Each enqueue to each dequeue that took some of its elements (one arrow per pair)."""
    enqueued_by: dict[tuple[str, int], _Slice] = {}
    for s in _moving(slices, "enqueue"):
        for element in s.node["elements"]["ids"]:
            enqueued_by[s.node["elements"]["queue"], element] = s
    pairs = []
    for deq in _moving(slices, "dequeue"):
        queue = deq.node["elements"]["queue"]
        sources = (enqueued_by.get((queue, e)) for e in deq.node["elements"]["ids"])
        pairs += [(enq, deq) for enq in dict.fromkeys(s for s in sources if s is not None)]
    return pairs


def _moving(slices: list[_Slice], direction: str) -> list[_Slice]:
    return [s for s in slices if s.node.get("elements", {}).get("direction") == direction]


def _flow_events(flow_id: int, source: _Slice, dest: _Slice) -> list[dict]:
    """An arrow from ``source`` to ``dest``, bound at each slice's start.

    A flow event binds to the slice of its pid/tid that encloses its
    timestamp (``"bp": "e"`` asks the same of the finish); the slices' starts
    belong to no nested slice (see `_Row.fits`), and some viewers bind only
    to a slice starting exactly at the flow's timestamp, with the same
    category (queue and send/receive ops share their role on both ends).
    """
    name = "transfer" if "transfer" in source.node else "queue elements"
    flow = {"name": name, "cat": op_role(source.node["op"]), "id": flow_id}
    return [
        {**flow, "ph": "s", "pid": source.pid, "tid": source.tid, "ts": source.ts},
        {**flow, "ph": "f", "bp": "e", "pid": dest.pid, "tid": dest.tid, "ts": dest.ts},
    ]
