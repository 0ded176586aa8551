"""``Timeline``: traced steps as Chrome trace JSON (open it in Perfetto or chrome://tracing).

Run a step with ``tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)`` and a
``tf.RunMetadata`` (or gather a span of cluster steps with a `minitf.viz.Tracer`);
``Timeline(run_metadata.step_stats)`` turns the step stats
(`minitf.runtime.core.step_stats`) into the Chrome trace event format:

* one process per ``dev_stats`` entry (a task), named by its device and kept in
  ``dev_stats`` order;
* one thread row per client whose steps the task ran and executor thread that
  ran them, plus extra rows ``"<row name> #2"``, ... where ops of one thread
  overlap (see below). A step's client is the task that is not a ps among
  those it ran on (`step_clients`). A row is named after its thread, unless
  Python named the thread (``Thread-12 (_run)``): then after the task, the
  client and the thread's number on the task (``/job:ps/task:0: steps of
  /job:worker/task:1, thread 2``);
  when the task ran steps of several clients, the client is always named;
* one complete (``"X"``) event per op, named by op type, its category the op's
  role (`minitf.viz.graph_data.op_role`), times in microseconds from the
  earliest op of the trace;
* inside an op that waited, a ``"wait"`` event covering the last
  ``wait_micros`` of its bar (never its first microsecond, where flow arrows
  bind);
* flow arrows from each ``_Send`` to the ``_Recv`` of the same step and
  rendezvous key, and from each enqueue to every dequeue that took some of its
  elements; each ``_Send`` and ``_Recv`` says what it moves in a
  ``description`` argument (`transfer_names`).

Viewers draw the events of one thread as a stack, so on a row two events must
be disjoint or one must contain the other. An asynchronous op (a dequeue, a
``_Recv``) stays open while its thread runs other ops, so those may overlap it
only partly; such an op goes to the thread's next row where it nests.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field

from minitf.runtime.core.frames import iteration_words
from minitf.runtime.core.step_stats import LOOP_FIELDS, NOTE_FIELDS, frames_of
from minitf.viz.graph_data import op_role


class Timeline:
    """TF's ``tensorflow.python.client.timeline.Timeline`` for minitf's step stats.

    Args:
        step_stats: ``RunMetadata.step_stats`` of a traced run, or the merged
            stats of several steps and tasks (`minitf.runtime.core.step_stats`).

    Raises:
        TypeError: if ``step_stats`` is not a step-stats dict.
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
        clients = step_clients(self._step_stats)
        events: list[dict] = []
        slices: list[_Slice] = []
        for pid, dev in enumerate(devices):
            layout = _layout(pid, dev["node_stats"], origin, clients, task_name(dev["device"]))
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


def _layout(
    pid: int, node_stats: list[dict], origin: int, clients: dict, task: str = ""
) -> _Layout:
    """Places each op of a task on the first row of its client and thread where it nests.

    Rows are keyed ``(client, thread, extra)``: the task's own steps first,
    then the other clients in order; threads in order of first appearance;
    ``extra`` 0 for the thread's own row. Their tids follow that order, so a
    thread's extra rows sit right below it.
    """
    slices = sorted((_slice(n, pid, origin) for n in node_stats), key=lambda s: (s.ts, -s.dur))
    thread_index: dict[int, int] = {}
    thread_names: list[str] = []
    rows: dict[tuple[int, int, int], _Row] = {}
    client_of = [clients.get(s.node.get("step_id"), "") for s in slices]
    order = sorted(set(client_of), key=lambda c: (c != task, c == "", c))
    placed = []
    for s, client in zip(slices, client_of):
        thread_id = s.node["thread_id"]
        if thread_id not in thread_index:
            thread_index[thread_id] = len(thread_names)
            thread_names.append(s.node.get("thread_name", str(thread_id)))
        placed.append(_place(rows, (order.index(client), thread_index[thread_id]), s))
    tids = {key: tid for tid, key in enumerate(sorted(rows))}
    for s, key in zip(slices, placed):
        s.tid = tids[key]
    several = len(order) > 1
    names = []
    for c, t, extra in sorted(rows):
        name = _row_name(thread_names[t], t, order[c], task, several)
        names.append(name + (f" #{extra + 1}" if extra else ""))
    return _Layout(slices, names)


# The names Python gives a thread it was not given one: ``Thread-12 (_run)``.
_DEFAULT_THREAD_NAME = re.compile(r"^(Thread|Dummy)-\d+( \(.*\))?$")


def _row_name(thread: str, index: int, client: str, task: str, several_clients: bool) -> str:
    """A row's name: its thread's, and whose steps it ran where that is not plain."""
    default = bool(_DEFAULT_THREAD_NAME.match(thread))
    if not default and not several_clients:
        return thread
    thread = f"thread {index + 1}" if default else thread
    return f"{task}: {client_label(client, task)}, {thread}"


def task_name(device: str) -> str:
    """``/job:ps/task:0`` for a device string such as ``/job:ps/replica:0/task:0/device:CPU:0``.

    Args:
        device: A device string (a task's, or ``dev_stats``' ``device``).

    Returns:
        Its job and task; the device string itself if it names no job.
    """
    job = re.search(r"/job:([^/]+)", device)
    task = re.search(r"/task:(\d+)", device)
    if job is None:
        return device
    return f"/job:{job.group(1)}" + (f"/task:{task.group(1)}" if task else "")


def step_clients(step_stats: dict) -> dict:
    """``{step_id: client}``: the task whose session ran each step of the stats.

    A step runs on its client's task and on the ps tasks that hold its
    variables, so the client is the task of the step that is not a ps: one
    with ops of the step, or at the other end of one of its transfers. A
    step with ops on no such task (the chief's queue runner in synchronous
    training, a reader of the global step) has client ``""``; one on several
    (in-graph replication) has them joined with ``" + "``.

    Args:
        step_stats: Step stats (`minitf.runtime.core.step_stats`).

    Returns:
        The client of each step id.
    """
    tasks = defaultdict(set)
    for dev in step_stats.get("dev_stats", []):
        task = task_name(dev["device"])
        for node in dev.get("node_stats", []):
            tasks[node.get("step_id")].add(task)
            # The other end of a transfer ran the step too, traced or not (a
            # step that began before the span: only its ps part was recorded).
            peer = node.get("transfer", {}).get("peer")
            if peer:
                tasks[node.get("step_id")].add(task_name(peer))
    return {
        step: " + ".join(sorted(t for t in found if not t.startswith("/job:ps/")))
        for step, found in tasks.items()
    }


def client_label(client: str, task: str = "", short: bool = False) -> str:
    """Whose steps a task ran, in words: ``"own steps"``, ``"steps of /job:worker/task:1"``.

    Args:
        client: A step's client (`step_clients`), ``""`` if it ran on ps tasks only.
        task: The task that ran them.
        short: Say it in few words, for a lane of a picture: ``"worker 1's steps"``.

    Returns:
        The words, for a row or a lane of a timeline.
    """
    if client == task:
        return "own steps"
    if not client:
        return "ps-only steps" if short else "steps on ps tasks only"
    if not short:
        return f"steps of {client}"
    names = [re.sub(r"^/job:([^/]+)/task:(\d+)$", r"\1 \2", c) for c in client.split(" + ")]
    return " + ".join(names) + "'s steps"


def transfer_names(node_name: str, transfer: dict | None = None) -> list[str]:
    """What a ``_Send`` or ``_Recv`` moves, in words, from the longest to the shortest.

    ``_recv/hidden/weights/read/0`` with its transfer note is ``"recv
    hidden/weights/read:0 from /job:ps/task:0"``, then ``"recv
    hidden/weights/read from /job:ps/task:0"`` and ``"recv hidden/weights/read"``;
    every form names the tensor's op in full. A control edge's pair moves no
    tensor, only the news that an op ran: ``"control signal from
    Adam/update/NoOp_1 on /job:ps/task:1"``. Other ops are named by their
    name, then by its last two parts.

    Args:
        node_name: The op's name in the trace.
        transfer: The op's ``transfer`` note (`minitf.runtime.core.step_stats`), whose
            ``peer`` is the other end; without it a ``_Send`` still names its
            destination (its name says it) and a ``_Recv`` names no peer.

    Returns:
        The names, longest first.
    """
    if not node_name.startswith(("_recv/", "_send/")):
        short = "/".join(node_name.split("/")[-2:])
        return list(dict.fromkeys([node_name, short]))
    sending = node_name.startswith("_send/")
    rest = node_name.split("/", 1)[1]
    peer = task_name(transfer["peer"]) if transfer and transfer.get("peer") else ""
    path, _, tail = rest.rpartition("/")
    if sending:  # _send/<op>/<index>/to_<task> or _send/<op>/ctrl_to_<task>
        tag = re.match(r"(ctrl_)?to_job_(.+)_replica_\d+_task_(\d+)$", tail)
        if tag and not peer:
            peer = f"/job:{tag.group(2)}/task:{tag.group(3)}"
        control = bool(tag and tag.group(1))
        if not control:
            path, _, tail = path.rpartition("/")
    else:  # _recv/<op>/<index> or _recv/<op>/ctrl_<task>
        control = tail.startswith("ctrl_")
    if control:
        toward = "to" if sending else "from"
        names = [f"control signal from {path}", f"control from {path}"]
        if peer:
            where = f"{toward} {peer}" if sending else f"on {peer}"
            names.insert(0, f"control signal from {path} {where}")
        return names
    verb, toward = ("send", "to") if sending else ("recv", "from")
    if not peer:
        return [f"{verb} {path}"]
    full = f"{verb} {path}:{tail} {toward} {peer}"
    return [full, f"{verb} {path} {toward} {peer}", f"{verb} {path}"]


def _place(
    rows: dict[tuple[int, int, int], _Row], thread: tuple[int, int], s: _Slice
) -> tuple[int, int, int]:
    """Puts ``s`` on the first row of ``thread`` where it nests (a new row if none).

    ``thread`` is ``(client, thread)``: the indices of the row's client and thread.
    """
    extra = 0
    while not rows.setdefault((*thread, extra), _Row()).fits(s):
        extra += 1
    rows[(*thread, extra)].open.append(s)
    return (*thread, extra)


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
    args.update({k: node[k] for k in NOTE_FIELDS + LOOP_FIELDS if k in node})
    if "transfer" in node:
        args["description"] = transfer_names(node["node_name"], node["transfer"])[0]
    elif "iteration" in node:  # the same op, once per iteration: say which
        args["description"] = iteration_words(frames_of(node))
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
