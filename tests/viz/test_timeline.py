"""Tracing a step: per-op step stats, and the Chrome trace built from them."""

import json
from collections import defaultdict

import pytest

import minitf as tf
from minitf.viz.timeline import Timeline

pytestmark = pytest.mark.timeout(60)

REQUIRED_KEYS = {
    "X": {"name", "ph", "pid", "tid", "ts", "dur"},
    "M": {"name", "ph", "pid", "args"},
    "s": {"id", "pid", "tid", "ts", "cat", "name"},
    "f": {"id", "pid", "tid", "ts", "cat", "name"},
}


def _traced(fetches, feed=None):
    md = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session() as sess:
        sess.run(fetches, feed, options=options, run_metadata=md)
    return md


def _trace(step_stats, **kwargs):
    """The generated trace, parsed back from its JSON text."""
    return json.loads(Timeline(step_stats).generate_chrome_trace_format(**kwargs))["traceEvents"]


def _slices(events):
    return [e for e in events if e["ph"] == "X"]


def _ops(events):
    return [e for e in _slices(events) if e["cat"] != "wait"]


def _end(e):
    return e["ts"] + e["dur"]


def _contains(outer, inner):
    return outer["ts"] <= inner["ts"] and _end(inner) <= _end(outer)


def _check_required_keys(events):
    for e in events:
        assert REQUIRED_KEYS[e["ph"]] <= set(e), e
        if e["ph"] == "X":
            assert e["dur"] >= 1, e


def _check_nesting(events):
    """On each (pid, tid), every two complete events are disjoint or one contains the other."""
    by_thread = defaultdict(list)
    for e in _slices(events):
        by_thread[e["pid"], e["tid"]].append(e)
    for row in by_thread.values():
        for i, a in enumerate(row):
            for b in row[i + 1 :]:
                disjoint = _end(a) <= b["ts"] or _end(b) <= a["ts"]
                assert disjoint or _contains(a, b) or _contains(b, a), (a, b)


def _innermost_at(events, pid, tid, ts):
    """The smallest complete event of (pid, tid) open at ``ts``, or None."""
    open_ = [
        e for e in _slices(events) if (e["pid"], e["tid"]) == (pid, tid) and e["ts"] <= ts < _end(e)
    ]
    return min(open_, key=lambda e: e["dur"], default=None)


def _check_flows(events):
    """Each flow id has one start and one finish, each bound inside a slice of its thread.

    Returns:
        ``{(source node, destination node, category)}`` of the arrows.
    """
    phases = defaultdict(list)
    for e in events:
        if e["ph"] in "sf":
            phases[e["id"]].append(e)
    arrows = set()
    for flow in phases.values():
        assert sorted(e["ph"] for e in flow) == ["f", "s"], flow
        start, finish = sorted(flow, key=lambda e: e["ph"] != "s")
        assert (start["cat"], start["name"]) == (finish["cat"], finish["name"])
        assert finish["bp"] == "e"
        source = _innermost_at(events, start["pid"], start["tid"], start["ts"])
        dest = _innermost_at(events, finish["pid"], finish["tid"], finish["ts"])
        assert source is not None and dest is not None, flow
        # Bound to the op itself, not to something nested in it.
        assert source["ts"] == start["ts"] and dest["ts"] == finish["ts"]
        arrows.add((source["args"]["node_name"], dest["args"]["node_name"], start["cat"]))
    assert len(arrows) == len(phases), "two flows join the same pair of ops"
    return arrows


def _check_waits(events):
    """Each wait event lies inside its own op, on its row, ending with it."""
    for wait in (e for e in _slices(events) if e["cat"] == "wait"):
        (op,) = [
            e
            for e in _ops(events)
            if (e["pid"], e["tid"]) == (wait["pid"], wait["tid"])
            and e["args"]["node_name"] == wait["args"]["node_name"]
        ]
        assert _contains(op, wait) and _end(op) == _end(wait)
        assert wait["ts"] > op["ts"]


def _check_trace(events):
    _check_required_keys(events)
    _check_nesting(events)
    _check_waits(events)
    return _check_flows(events)


def _thread_names(events, pid):
    """The thread row names of one process, by tid."""
    rows = [e for e in events if e["name"] == "thread_name" and e["pid"] == pid]
    return [e["args"]["name"] for e in sorted(rows, key=lambda e: e["tid"])]


def _rows(events, pid):
    """``{thread row name: [node names on it]}`` of one process."""
    names = {
        e["tid"]: e["args"]["name"]
        for e in events
        if e["name"] == "thread_name" and e["pid"] == pid
    }
    rows = defaultdict(list)
    for e in _ops(events):
        if e["pid"] == pid:
            rows[names[e["tid"]]].append(e["args"]["node_name"])
    return {name: sorted(nodes) for name, nodes in rows.items()}


# A hand-made two-task trace. Times are offsets from T in microseconds; the
# earliest op (grad/MatMul on the worker) starts at T.
T = 1_732_420_000_000_000
PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"
KEY = f"{WORKER};{PS};grad:0"
Q = "sync_token_q"


def _node(name, op, start, dur, thread, step=7, wait=0, **extra):
    thread_id, thread_name = thread
    return {
        "node_name": name,
        "op": op,
        "all_start_micros": T + start,
        "op_start_rel_micros": 0,
        "op_end_rel_micros": dur,
        "all_end_rel_micros": dur,
        "thread_id": thread_id,
        "thread_name": thread_name,
        "output_bytes": 8,
        "asynchronous": wait > 0,
        "timeline_label": f"{name} = {op}()",
        "step_id": step,
        "wait_micros": wait,
        **extra,
    }


def _send(name, start, step):
    transfer = {"direction": "send", "key": KEY, "peer": PS, "bytes": 8}
    return _node(name, "_Send", start, 4, WORKER_A, step=step, transfer=transfer)


def _recv(name, start, dur, wait, thread, step):
    transfer = {"direction": "recv", "key": KEY, "peer": WORKER, "bytes": 8}
    waited_on = {"kind": "rendezvous", "key": KEY}
    return _node(name, "_Recv", start, dur, thread, step, wait, transfer=transfer,
                 waited_on=waited_on)  # fmt: skip


def _moved(direction, ids):
    return {"queue": Q, "direction": direction, "ids": ids}


PS_A, PS_B = (11, "ps-a"), (12, "ps-b")
WORKER_A, WORKER_B = (21, "worker-a"), (22, "worker-b")

PS_NODES = [
    # recv_7 waits its last 25 µs, [15, 40]; assign fits before that wait.
    _recv("recv_7", 10, 30, 25, PS_A, step=7),
    _node("assign", "Assign", 12, 2, PS_A),
    # Inside recv_7's wait, and partly over recv_7: both need another row.
    _node("add_n", "AddN", 20, 10, PS_A),
    _node("apply", "ApplyGradientDescent", 35, 15, PS_A),
    _node(
        "dequeue_x",
        "QueueDequeueManyV2",
        90,
        50,
        PS_B,
        wait=35,
        elements=_moved("dequeue", [1, 2, 3]),
        waited_on={"kind": "queue", "name": Q, "size": 0, "capacity": 10},
    ),  # fmt: skip
    _node("enqueue_a", "QueueEnqueueManyV2", 100, 20, PS_A, elements=_moved("enqueue", [1, 2])),
    _node("enqueue_b", "QueueEnqueueManyV2", 125, 5, PS_A, elements=_moved("enqueue", [3, 4])),
    _node("dequeue_y", "QueueDequeueV2", 150, 10, PS_B, step=8, elements=_moved("dequeue", [4])),
    _node("enqueue_c", "QueueEnqueueV2", 170, 3, PS_B, step=8, elements=_moved("enqueue", [5])),
    _recv("recv_8", 190, 25, 12, PS_B, step=8),
]
WORKER_NODES = [
    _node("grad/MatMul", "MatMul", 0, 25, WORKER_A),
    _node("grad/Mul", "Mul", 5, 3, WORKER_B),
    _send("send_7", 30, step=7),
    _node("grad/Identity", "Identity", 50, 0, WORKER_B),
    _send("send_8", 200, step=8),
]
STEP_STATS = {
    "dev_stats": [
        {"device": PS, "node_stats": PS_NODES},
        {"device": WORKER, "node_stats": WORKER_NODES},
    ]
}


def test_synthetic_trace_is_valid_json_with_the_required_keys():
    text = Timeline(STEP_STATS).generate_chrome_trace_format()
    assert isinstance(text, str)
    events = json.loads(text)["traceEvents"]
    assert json.loads(text) == Timeline(STEP_STATS).to_dict()
    _check_required_keys(events)
    assert {e["ph"] for e in events} == {"M", "X", "s", "f"}


def test_one_process_per_task_named_by_device_in_dev_stats_order():
    events = _trace(STEP_STATS)
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {0: PS, 1: WORKER}
    order = {e["pid"]: e["args"]["sort_index"] for e in events if e["name"] == "process_sort_index"}
    assert order == {0: 0, 1: 1}


def test_thread_rows_are_named_by_thread_with_extra_rows_for_overlapping_ops():
    events = _trace(STEP_STATS)
    assert _thread_names(events, 0) == ["ps-a", "ps-a #2", "ps-b"]
    assert _thread_names(events, 1) == ["worker-a", "worker-b"]
    assert _rows(events, 0) == {
        "ps-a": ["assign", "enqueue_a", "enqueue_b", "recv_7"],
        "ps-a #2": ["add_n", "apply"],
        "ps-b": ["dequeue_x", "dequeue_y", "enqueue_c", "recv_8"],
    }


def test_ops_are_complete_events_in_microseconds_from_the_earliest_op():
    events = _trace(STEP_STATS)
    ops = {e["args"]["node_name"]: e for e in _ops(events)}
    nodes = PS_NODES + WORKER_NODES
    assert sorted(ops) == sorted(n["node_name"] for n in nodes)
    assert min(e["ts"] for e in _slices(events)) == 0
    assert ops["grad/MatMul"]["ts"] == 0
    for n in nodes:
        e = ops[n["node_name"]]
        assert (e["name"], e["ts"]) == (n["op"], n["all_start_micros"] - T)
        assert e["dur"] == max(1, n["all_end_rel_micros"])
    assert ops["grad/Identity"]["dur"] == 1  # a 0 µs op still shows
    roles = {name: ops[name]["cat"] for name in ("recv_7", "dequeue_x", "apply", "grad/MatMul")}
    assert roles == {"recv_7": "sendrecv", "dequeue_x": "queue", "apply": "update",
                     "grad/MatMul": "compute"}  # fmt: skip


def test_op_args_carry_the_step_stats_and_kernel_notes():
    ops = {e["args"]["node_name"]: e for e in _ops(_trace(STEP_STATS))}
    deq = ops["dequeue_x"]["args"]
    assert deq == {
        "node_name": "dequeue_x",
        "op": "QueueDequeueManyV2",
        "step_id": 7,
        "output_bytes": 8,
        "wait_micros": 35,
        "waited_on": {"kind": "queue", "name": Q, "size": 0, "capacity": 10},
        "elements": {"queue": Q, "direction": "dequeue", "ids": [1, 2, 3]},
    }
    assert ops["send_8"]["args"]["transfer"]["direction"] == "send"
    assert ops["send_8"]["args"]["step_id"] == 8
    assert "transfer" not in ops["apply"]["args"]


def test_events_nest_per_thread():
    _check_nesting(_trace(STEP_STATS))


def test_the_nesting_checker_rejects_partly_overlapping_events():
    a = {"ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": 10}
    b = {"ph": "X", "pid": 0, "tid": 0, "ts": 5, "dur": 10}
    with pytest.raises(AssertionError):
        _check_nesting([a, b])
    _check_nesting([a, {**b, "tid": 1}])


def test_a_wait_is_nested_at_the_end_of_its_op():
    events = _trace(STEP_STATS)
    _check_waits(events)
    waits = {
        e["args"]["node_name"]: (e["pid"], e["ts"], _end(e))
        for e in _slices(events)
        if e["cat"] == "wait"
    }
    # (pid, start, end): the op's end minus wait_micros, to the op's end.
    assert waits == {"recv_7": (0, 15, 40), "dequeue_x": (0, 105, 140), "recv_8": (0, 203, 215)}


def test_a_wait_as_long_as_its_op_leaves_the_op_its_first_microsecond():
    stats = {"dev_stats": [{"device": PS, "node_stats": [_recv("r", 0, 10, 10, PS_A, 1)]}]}
    events = _trace(stats)
    _check_trace(events)
    (wait,) = [e for e in _slices(events) if e["cat"] == "wait"]
    assert (wait["ts"], wait["dur"]) == (1, 9)


def test_an_op_starting_with_an_open_op_on_its_thread_gets_its_own_row():
    nodes = [_node("long", "Mul", 0, 10, PS_A), _node("short", "Add", 0, 5, PS_A)]
    events = _trace({"dev_stats": [{"device": PS, "node_stats": nodes}]})
    _check_trace(events)
    assert _rows(events, 0) == {"ps-a": ["long"], "ps-a #2": ["short"]}


def test_flows_join_sends_to_receives_and_enqueues_to_dequeues():
    arrows = _check_flows(_trace(STEP_STATS))
    assert arrows == {
        ("send_7", "recv_7", "sendrecv"),
        ("send_8", "recv_8", "sendrecv"),
        # dequeue_x took 1, 2 (from enqueue_a) and 3 (from enqueue_b): one
        # arrow per pair of ops; enqueue_c's element was never taken.
        ("enqueue_a", "dequeue_x", "queue"),
        ("enqueue_b", "dequeue_x", "queue"),
        ("enqueue_b", "dequeue_y", "queue"),
    }


def test_a_transfer_flow_crosses_processes():
    events = _trace(STEP_STATS)
    flows = [e for e in events if e["ph"] in "sf" and e["cat"] == "sendrecv"]
    assert {(e["ph"], e["pid"]) for e in flows} == {("s", 1), ("f", 0)}


def test_no_flows_without_show_dataflow():
    events = _trace(STEP_STATS, show_dataflow=False)
    assert {e["ph"] for e in events} == {"M", "X"}
    _check_nesting(events)


def test_show_memory_is_accepted_and_changes_nothing():
    with_memory = Timeline(STEP_STATS).generate_chrome_trace_format(show_memory=True)
    assert with_memory == Timeline(STEP_STATS).generate_chrome_trace_format()


def test_an_empty_trace_has_no_events():
    assert _trace({}) == []
    assert _trace({"dev_stats": []}) == []


def test_full_trace_records_every_executed_op_once():
    x = tf.placeholder(tf.float32, [2])
    y = tf.reduce_sum(x * 2.0, name="total")
    md = _traced(y, {x: [1.0, 2.0]})
    (dev,) = md.step_stats["dev_stats"]
    assert dev["device"] == "/job:localhost/replica:0/task:0/device:CPU:0"
    names = [n["node_name"] for n in dev["node_stats"]]
    # TF's list: the two constants (the 2.0 and the reduction's axes), the two
    # ops; the feed is not an op that runs.
    assert sorted(names) == ["Const", "mul", "mul/y", "total"]
    for node in dev["node_stats"]:
        assert node["all_end_rel_micros"] >= 0 and node["all_start_micros"] > 0


def test_no_trace_without_the_option():
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.constant(1.0) + tf.placeholder_with_default(1.0, []), run_metadata=md)
    assert md.step_stats == {"dev_stats": []} and md.step_stats.dev_stats == []


def test_a_waiting_dequeue_is_marked_and_ends_after_its_enqueue():
    q = tf.FIFOQueue(10, tf.float32)
    md = _traced([q.dequeue(), q.enqueue(tf.placeholder_with_default(1.0, []))])
    nodes = {n["op"]: n for n in md.step_stats["dev_stats"][0]["node_stats"]}
    deq, enq = nodes["QueueDequeueV2"], nodes["QueueEnqueueV2"]
    assert deq["asynchronous"]
    deq_end = deq["all_start_micros"] + deq["all_end_rel_micros"]
    assert deq_end >= enq["all_start_micros"]


def test_chrome_trace_of_a_local_step_is_valid_and_nests_per_thread():
    x = tf.placeholder(tf.float32, [3])
    y = tf.reduce_sum(tf.square(x) + 1.0)
    md = _traced(y, {x: [1.0, 2.0, 3.0]})
    events = _trace(md.step_stats)
    assert _check_trace(events) == set()
    (dev,) = md.step_stats["dev_stats"]
    assert len(_ops(events)) == len(dev["node_stats"])
    assert min(e["ts"] for e in _slices(events)) == 0
    names = [e["args"]["name"] for e in events if e["name"] == "process_name"]
    assert names == [dev["device"]]


def test_chrome_trace_of_a_local_dequeue_waiting_for_its_enqueue():
    q = tf.FIFOQueue(10, tf.float32)
    md = _traced([q.dequeue(), q.enqueue(tf.placeholder_with_default(1.0, []))])
    events = _trace(md.step_stats)
    arrows = _check_trace(events)
    (dev,) = md.step_stats["dev_stats"]
    nodes = {n["op"]: n for n in dev["node_stats"]}
    deq, enq = nodes["QueueDequeueV2"], nodes["QueueEnqueueV2"]
    assert len(_ops(events)) == len(dev["node_stats"])
    # The enqueue gave the dequeue its element when the kernels say so.
    taken = set(deq.get("elements", {}).get("ids", []))
    given = set(enq.get("elements", {}).get("ids", []))
    expected = {(enq["node_name"], deq["node_name"], "queue")} if taken & given else set()
    assert arrows == expected
    waits = [e for e in _slices(events) if e["cat"] == "wait"]
    shows_wait = deq["wait_micros"] > 0 and deq["all_end_rel_micros"] > 1
    assert [w["args"]["node_name"] for w in waits] == ([deq["node_name"]] if shows_wait else [])


def test_timeline_says_what_it_needs_when_given_something_else():
    with pytest.raises(TypeError, match="FULL_TRACE"):
        Timeline(tf.RunMetadata())
    with pytest.raises(TypeError, match="step stats"):
        Timeline({"dev_stats": "no"})


def _ran(name, step, thread, start=0, **extra):
    return _node(name, "MatMul", start, 5, thread, step=step, **extra)


W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
# Threads Python named, as a server's request handlers are: they say nothing.
POOL_A, POOL_B = (31, "Thread-7 (_run)"), (32, "Thread-8 (_run)")
# Steps 7 and 9 are worker 0's and worker 1's (each ran on its worker and the
# ps); step 11 ran on the ps only (the chief's queue runner does).
CLIENT_STATS = {
    "dev_stats": [
        {"device": PS, "node_stats": [
            _ran("a7", 7, POOL_A), _ran("a9", 9, POOL_A, 10), _ran("b9", 9, POOL_B, 20),
            _ran("a11", 11, POOL_B, 30),
        ]},
        {"device": W0, "node_stats": [_ran("w7", 7, (41, "Thread-3 (_run)"))]},
        {"device": W1, "node_stats": [_ran("w9", 9, (51, "Thread-4 (_run)"))]},
    ]
}  # fmt: skip


def test_the_client_of_a_step_is_its_task_that_is_not_a_ps():
    from minitf.viz.timeline import step_clients

    clients = step_clients(CLIENT_STATS)
    assert clients == {7: "/job:worker/task:0", 9: "/job:worker/task:1", 11: ""}


def test_rows_of_threads_python_named_say_the_task_and_whose_steps_they_ran():
    events = _trace(CLIENT_STATS)
    _check_trace(events)
    ps = "/job:ps/task:0: "
    assert _rows(events, 0) == {
        ps + "steps of /job:worker/task:0, thread 1": ["a7"],
        ps + "steps of /job:worker/task:1, thread 1": ["a9"],
        ps + "steps of /job:worker/task:1, thread 2": ["b9"],
        ps + "steps on ps tasks only, thread 2": ["a11"],
    }
    assert _thread_names(events, 1) == ["/job:worker/task:0: own steps, thread 1"]
    assert not any("Thread-" in e["args"]["name"] for e in events if e["name"] == "thread_name")


def test_a_named_thread_keeps_its_name_and_says_whose_steps_when_it_ran_several_clients():
    stats = {"dev_stats": [
        {"device": PS, "node_stats": [_ran("a7", 7, PS_A), _ran("a9", 9, PS_A, 10)]},
        {"device": W0, "node_stats": [_ran("w7", 7, WORKER_A)]},
        {"device": W1, "node_stats": [_ran("w9", 9, WORKER_B)]},
    ]}  # fmt: skip
    events = _trace(stats)
    assert _thread_names(events, 0) == [
        "/job:ps/task:0: steps of /job:worker/task:0, ps-a",
        "/job:ps/task:0: steps of /job:worker/task:1, ps-a",
    ]
    assert _thread_names(events, 1) == ["worker-a"]  # one client, a name of its own


def test_sends_and_receives_say_what_they_move():
    from minitf.viz.timeline import transfer_names

    ops = {e["args"]["node_name"]: e for e in _ops(_trace(STEP_STATS))}
    # A name that is not a partition's own (_recv/...) is said as it is.
    assert ops["recv_7"]["args"]["description"] == "recv_7"
    tensor = "_recv/hidden/weights/read/0"
    note = {"direction": "recv", "key": "k", "peer": PS, "bytes": 8}
    assert transfer_names(tensor, note) == [
        "recv hidden/weights/read:0 from /job:ps/task:0",
        "recv hidden/weights/read from /job:ps/task:0",
        "recv hidden/weights/read",
    ]
    # A control edge's pair: the news that an op ran, and where.
    control = "_recv/Adam/update/NoOp_1/ctrl_job_ps_replica_0_task_0"
    peer = {"direction": "recv", "key": "k", "peer": "/job:ps/replica:0/task:1/device:CPU:0"}
    assert transfer_names(control, peer)[0] == (
        "control signal from Adam/update/NoOp_1 on /job:ps/task:1"
    )
    send = "_send/Adam/update/NoOp_1/ctrl_to_job_ps_replica_0_task_0"
    assert transfer_names(send)[0] == "control signal from Adam/update/NoOp_1 to /job:ps/task:0"
    assert "description" not in ops["apply"]["args"]


def test_a_step_traced_only_on_the_ps_is_its_workers_when_it_received_from_it():
    from minitf.viz.timeline import step_clients

    # Recording began on the worker after step 5 had: only its ps part is in the trace.
    late = _recv("recv_5", 0, 30, 25, PS_A, step=5)  # from WORKER, its transfer note says
    stats = {"dev_stats": [{"device": PS, "node_stats": [late]}]}
    assert step_clients(stats) == {5: "/job:worker/task:0"}
