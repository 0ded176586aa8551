"""DOT text of the whole graph, one task and a step's partitions: structure, not pixels.

Every picture is parsed back with pydot (and handed to networkx) and checked
for which nodes it has, in which cluster, joined by which edges; the expected
values come from the graph each test builds, counted by hand or recomputed
from the ops' requested devices.
"""

import networkx as nx
import numpy as np
import pydot
import pytest

import minitf as tf
from minitf.framework import device as pydev
from minitf.viz import dot, render

pytestmark = pytest.mark.timeout(60)

DONE, RUNNING, BLOCKED = "#2a9d8f", "#e63946", "#6a4c93"
needs_dot = pytest.mark.usefixtures("graphviz")  # fails, not skips, without Graphviz


def _unquote(text):
    """A DOT string as the text it stands for."""
    if text is None or not text.startswith('"'):
        return text
    out, chars = [], iter(text[1:-1])
    for c in chars:
        if c == "\\":
            c = next(chars)
            out.append("\n" if c == "n" else c)
        else:
            out.append(c)
    return "".join(out)


class Picture:
    """A DOT text parsed: its op nodes, their clusters and attributes, and its edges."""

    def __init__(self, text):
        self.text = text
        (self.graph,) = pydot.graph_from_dot_data(text)
        self.nx = nx.nx_pydot.from_pydot(self.graph)
        self.clusters, self.attrs, self.cluster_attrs = {}, {}, {}
        self.edges = []
        self._walk(self.graph, [])

    def _walk(self, graph, path):
        for node in graph.get_nodes():
            name = _unquote(node.get_name())
            if name not in ("node", "edge", "graph") and not name.startswith("legend_"):
                self.clusters[name] = path
                self.attrs[name] = {k: _unquote(v) for k, v in node.get_attributes().items()}
        for edge in graph.get_edges():
            attrs = {k: _unquote(v) for k, v in edge.get_attributes().items()}
            self.edges.append(
                (_unquote(edge.get_source()), _unquote(edge.get_destination()), attrs)
            )
        for sub in graph.get_subgraphs():
            name = _unquote(sub.get_name())
            self.cluster_attrs[name] = {k: _unquote(v) for k, v in sub.get_attributes().items()}
            self._walk(sub, path + [name])

    @property
    def nodes(self):
        return set(self.clusters)

    def in_cluster(self, cluster):
        return {n for n, path in self.clusters.items() if cluster in path}

    def label(self, node):
        return self.attrs[node]["label"].split("\n")

    def edges_of(self, kind):
        """``(source, target)`` of one kind: data, control, colocation or sendrecv."""

        def kind_of(attrs):
            if attrs.get("dir") == "none":
                return "colocation"
            if attrs.get("style") == "bold":
                return "sendrecv"
            return "control" if attrs.get("style") == "dashed" else "data"

        return [(a, b) for a, b, attrs in self.edges if kind_of(attrs) == kind]

    def edge_label(self, source, target):
        (label,) = [attrs.get("label") for a, b, attrs in self.edges if (a, b) == (source, target)]
        return label


def _model():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w1 = tf.Variable(tf.zeros([3, 4]), name="w1")
        w2 = tf.Variable(tf.zeros([4, 2]), name="w2")
        y = tf.matmul(tf.matmul(x, w1), w2, name="y")
    return x, y


def _trained_model(workers=1):
    """``workers`` towers (one per worker task) sharing w1, w2 on two ps tasks, and a train op."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    losses = []
    for i in range(workers):
        setter = tf.train.replica_device_setter(ps_tasks=2, worker_device=f"/job:worker/task:{i}")
        with tf.device(setter), tf.variable_scope("model", reuse=i > 0):
            w1 = tf.get_variable("w1", [3, 4])
            w2 = tf.get_variable("w2", [4, 2])
            with tf.name_scope(f"tower{i}"):
                losses.append(tf.reduce_sum(tf.matmul(tf.matmul(x, w1), w2)))
    setter = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")
    with tf.device(setter):
        loss = tf.add_n(losses, name="loss")
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, loss, train


def test_whole_graph_has_every_op_in_its_job_and_task_cluster():
    _model()
    picture = Picture(dot.graph_dot(tf.get_default_graph()))
    names = {op.name for op in tf.get_default_graph().get_operations()}
    assert picture.nodes == names and set(picture.nx.nodes) >= names
    # replica_device_setter: variables round-robin over the ps tasks (w1 → 0, w2 → 1), their
    # Assign and read colocated with them; everything else on the (task-less) worker job.
    assert picture.in_cluster("cluster_ps_task:0") == {"w1", "w1/Assign", "w1/read"}
    assert picture.in_cluster("cluster_ps_task:1") == {"w2", "w2/Assign", "w2/read"}
    assert picture.clusters["MatMul"] == ["cluster_worker"]
    # Data edges: zeros, w1 → w1/Assign; w1 → w1/read; the same for w2; x, w1/read → MatMul;
    # MatMul, w2/read → y. Assign and read are joined to their variable, so no colocation lines.
    assert len(picture.edges_of("data")) == 10 and picture.edges_of("colocation") == []
    assert picture.edge_label("x", "MatMul") == "float32 [?,3]"
    assert "legend_variable" in picture.text


def test_task_view_shows_only_that_task():
    _model()
    picture = Picture(dot.task_dot(tf.get_default_graph(), "/job:ps/task:1"))
    assert picture.nodes == {"w2", "w2/Assign", "w2/read"}
    assert sorted(picture.edges_of("data")) == [("w2", "w2/Assign"), ("w2", "w2/read")]


def test_device_and_name_scope_clusters_nest_inside_the_task():
    with tf.device("/job:worker/task:0/device:CPU:0"), tf.name_scope("layer"):
        with tf.name_scope("dense"):
            a = tf.constant(1.0, name="a")
            b = tf.add(a, a, name="b")
        with tf.name_scope("alone"):
            tf.identity(b, name="c")
    picture = Picture(dot.graph_dot(tf.get_default_graph()))
    device = "cluster_worker_task:0_CPU:0"
    assert picture.clusters["layer/dense/b"] == [
        "cluster_worker",
        "cluster_worker_task:0",
        device,
        device + "/layer",
        device + "/layer/dense",
    ]
    assert picture.cluster_attrs[device + "/layer/dense"]["label"] == "dense/"
    assert "dashed" in picture.cluster_attrs[device + "/layer/dense"]["style"]
    # A name scope holding one op gets no cluster of its own; the op keeps its scope in its label.
    assert picture.clusters["layer/alone/c"][-1] == device + "/layer"
    assert picture.label("layer/alone/c")[0] == "alone/c"
    assert picture.label("layer/dense/b") == ["b", "Add"]


def _step_ops(fetches, targets, feeds):
    """The ops a step runs: backwards from fetches and targets, a fed tensor cutting its edge."""
    needed, stack = set(), [t.op for t in fetches if t not in feeds] + list(targets)
    while stack:
        op = stack.pop()
        if op not in needed:
            needed.add(op)
            stack += [t.op for t in op.inputs if t not in feeds] + op.control_inputs
    return needed


def _task(op):
    spec = pydev.DeviceSpec.from_string(op.device)
    assert spec.job and spec.task is not None, op.name  # the oracle needs full requests
    return spec.job, spec.task


def _crossings(fetches, targets, feeds):
    """Distinct (tensor, destination task) and (control op, destination task) crossing tasks."""
    step = _step_ops(fetches, targets, feeds)
    data, control = set(), set()
    for op in step:
        for t in op.inputs:
            if t not in feeds and _task(t.op) != _task(op):
                data.add((t, _task(op)))
        for c in op.control_inputs:
            if _task(c) != _task(op):
                control.add((c, _task(op)))
    return step, data, control


@pytest.mark.parametrize("workers", [1, 2])
def test_partitions_have_one_send_recv_pair_per_distinct_crossing(workers):
    x, loss, train = _trained_model(workers)
    step, data, control = _crossings([loss], [train], [x])
    assert control  # the train op waits on each ps task's update group
    cluster = {"ps": 2, "worker": workers}
    text = dot.partitioned_dot(tf.get_default_graph(), [loss], [train], [x], cluster=cluster)
    picture = Picture(text)
    sends = [n for n in picture.nodes if picture.attrs[n]["label"].endswith("_Send")]
    recvs = [n for n in picture.nodes if picture.attrs[n]["label"].endswith("_Recv")]
    pairs = len(data) + len(control)
    assert len(sends) == len(recvs) == len(picture.edges_of("sendrecv")) == pairs
    summary = dot.partition_summary([loss], [train], [x], cluster=cluster)
    assert summary["sendrecv_pairs"] == pairs
    # Each task runs its ops, its Sends, its Recvs and one placeholder per fed tensor it reads.
    for job, index in {_task(op) for op in step}:
        ops_here = sum(_task(op) == (job, index) for op in step)
        sent = sum(_task(t.op) == (job, index) for t, _ in data)
        sent += sum(_task(c) == (job, index) for c, _ in control)
        received = sum(dst == (job, index) for _, dst in data | control)
        fed = any(x in op.inputs and _task(op) == (job, index) for op in step)
        expected = ops_here + sent + received + fed
        assert summary["tasks"][f"/job:{job}/replica:0/task:{index}"] == expected
        assert len(picture.in_cluster(f"cluster_{job}_task:{index}")) == expected


def test_partition_edges_carry_dtype_shape_and_bytes():
    x, y = _model()
    text = dot.partitioned_dot(
        tf.get_default_graph(), [y], feeds=[x], cluster={"ps": 2, "worker": 1}
    )
    picture = Picture(text)
    send, recv = "_send/w1/read/0/to_job_worker_replica_0_task_0", "_recv/w1/read/0"
    assert picture.label(send) == ["w1/read:0", "_Send"]
    assert picture.edge_label("w1/read", send) == "float32 [3,4]"
    assert picture.edge_label(send, recv) == "float32 [3,4]\n48 bytes"  # 3 x 4 x 4 bytes
    assert picture.edge_label(recv, "MatMul") == "float32 [3,4]"
    assert picture.edge_label("_feed/x/0", "MatMul") == "float32 [?,3]"
    assert picture.clusters["MatMul"][-1] == "cluster_worker_task:0_CPU:0"
    assert "added by partitioning" in picture.attrs[recv]["tooltip"]
    assert picture.label("w1/read")[-1] == "@w1"  # colocation marks in partitions too


def test_a_loop_split_across_tasks_shows_each_tasks_control_loop():
    with tf.device("/job:ps/task:0"):
        v = tf.get_variable("v", initializer=2.0, use_resource=True)
    with tf.device("/job:worker/task:0"):
        r = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + v.read_value()), [0, 0.0])
    text = dot.partitioned_dot(tf.get_default_graph(), [r[1]], cluster={"ps": 1, "worker": 1})
    picture = Picture(text)
    merge = "_cloop/while/while_context/Merge on /job:ps/task:0/device:CPU:0"
    assert picture.label(merge) == ["control loop", "on /job:ps/task:0", "Merge"]
    assert "runs once per iteration" in picture.attrs[merge]["tooltip"]


def test_colocated_ops_are_marked_and_joined_to_their_op():
    w = tf.Variable(tf.ones([2]), name="w")
    with tf.colocate_with(w):
        c = tf.constant(1.0, name="c")
    tf.add(w, c, name="sum")
    picture = Picture(dot.graph_dot(tf.get_default_graph()))
    assert picture.label("c")[-1] == "@w" and picture.label("w/read")[-1] == "@w"
    assert "colocated with: w" in picture.attrs["c"]["tooltip"]
    # w/read is joined to w by its data edge already; c only by the dotted line.
    assert picture.edges_of("colocation") == [("w", "c")]
    (attrs,) = [a for s, d, a in picture.edges if (s, d) == ("w", "c")]
    assert attrs["style"] == "dotted"
    assert "@w" not in picture.attrs["sum"]["label"]


def _tooltip_model():
    with tf.device("/job:worker/task:0"), tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        w = tf.Variable(tf.zeros([2, 2]), name="w")
        y = tf.matmul(w, w, name="y")
    return w, y


def test_tooltips_say_requested_and_assigned_device_and_what_decided_it():
    _, y = _tooltip_model()
    graph = tf.get_default_graph()
    tips = Picture(dot.graph_dot(graph)).attrs
    assert "requested device: /job:ps/task:0" in tips["w"]["tooltip"]
    assert "assigned device: (assigned when a session runs it)" in tips["w"]["tooltip"]
    assert "placed by replica_device_setter(ps_tasks=2" in tips["w"]["tooltip"]
    # The setter asked for /job:worker, the outer tf.device added the task: both are listed.
    y_tip = tips["y"]["tooltip"]
    assert "placed by tf.device('/job:worker/task:0')" in y_tip
    assert "1. replica_device_setter(" in y_tip and "2. tf.device(" in y_tip
    placed = Picture(dot.graph_dot(graph, cluster={"ps": 2, "worker": 1})).attrs
    assert "assigned device: /job:ps/replica:0/task:0/device:CPU:0" in placed["w"]["tooltip"]
    parts = Picture(dot.partitioned_dot(graph, [y], cluster={"ps": 2, "worker": 1})).attrs
    assert "placed by replica_device_setter(" in parts["w"]["tooltip"]
    assert "assigned device: /job:ps/replica:0/task:0/device:CPU:0" in parts["w"]["tooltip"]


@needs_dot
def test_tooltips_survive_quotes_and_backslashes_into_svg():
    class Setter:
        def place(self, op):
            return "/job:ps/task:0"

        def __repr__(self):
            return 'Setter("C:\\ps", \\n)'

    with tf.device(Setter().place):
        tf.constant(1.0, name="c")
    text = dot.graph_dot(tf.get_default_graph())
    assert Picture(text).attrs["c"]["tooltip"].splitlines()[3] == 'placed by Setter("C:\\ps", \\n)'
    svg = render.to_format(text, "svg").decode()
    assert "placed by Setter(&quot;C:\\ps&quot;, \\n)&#10;" in svg


def test_highlight_outlines_ops_by_state():
    _, y = _model()
    picture = Picture(
        dot.graph_dot(tf.get_default_graph(), highlight={"y": "running", "x": "done"})
    )
    assert picture.attrs["y"]["color"] == RUNNING and picture.attrs["y"]["penwidth"] == "3"
    assert picture.attrs["x"]["color"] == DONE
    assert "color" not in picture.attrs["MatMul"]
    assert "legend_running" in picture.text and "legend_blocked" not in picture.text


def test_highlight_takes_a_set_of_names_or_a_trace_and_rejects_unknown_states():
    _, y = _model()
    graph = tf.get_default_graph()
    by_set = Picture(dot.graph_dot(graph, highlight={"y", "x"})).attrs
    assert by_set["y"]["color"] == DONE and by_set["x"]["color"] == DONE
    trace = {"dev_stats": [{"device": "/job:worker", "node_stats": [{"node_name": "y"}]}]}
    by_trace = Picture(dot.graph_dot(graph, highlight=trace)).attrs
    assert by_trace["y"]["color"] == DONE and "color" not in by_trace["x"]
    with pytest.raises(ValueError, match=r"highlight\['y'\] is 'finished': use one of"):
        dot.graph_dot(graph, highlight={"y": "finished"})


def test_highlight_from_trace_marks_the_ops_of_a_traced_step():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable(tf.ones([2, 1]), name="w")
    y = tf.matmul(x, w, name="y")
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(
            y,
            {x: np.ones((1, 2), np.float32)},
            options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
            run_metadata=metadata,
        )
    highlight = dot.highlight_from_trace(metadata.step_stats, blocked=["y"])
    # The step reads w through w/read into y; x is fed, so its placeholder does not run.
    assert highlight == {"w": "done", "w/read": "done", "y": "blocked"}
    attrs = Picture(dot.graph_dot(tf.get_default_graph(), highlight=highlight)).attrs
    assert attrs["w"]["color"] == DONE and attrs["w/read"]["color"] == DONE
    assert attrs["y"]["color"] == BLOCKED and "dashed" in attrs["y"]["style"]
    assert "color" not in attrs["x"] and "color" not in attrs["w/Assign"]


def test_highlight_from_trace_reads_every_device_and_lets_running_win():
    stats = {
        "dev_stats": [
            {"device": "/job:ps/replica:0/task:0/device:CPU:0", "node_stats": [{"node_name": "a"}]},
            {
                "device": "/job:worker/replica:0/task:0/device:CPU:0",
                "node_stats": [{"node_name": "b"}],
            },
        ]
    }
    assert dot.highlight_from_trace(stats, running=["b", "c"]) == {
        "a": "done",
        "b": "running",
        "c": "running",
    }


def test_partitioned_view_highlights_send_and_recv_nodes():
    x, y = _model()
    recv = "_recv/w2/read/0"
    text = dot.partitioned_dot(
        tf.get_default_graph(), [y], feeds=[x], cluster={"ps": 2, "worker": 1},
        highlight={recv: "blocked", "MatMul": "done"},
    )  # fmt: skip
    attrs = Picture(text).attrs
    assert attrs[recv]["color"] == BLOCKED and attrs["MatMul"]["color"] == DONE


def _scoped_graph():
    """layer1: a, b, v (Const) and sum (Add); layer2: mm (MatMul), copy, vcopy (Identity);
    out (Identity) at the top; single/op, the one op of its scope."""
    with tf.name_scope("layer1"):
        a = tf.constant(np.ones((2, 2), np.float32), name="a")
        b = tf.constant(np.ones((2, 2), np.float32), name="b")
        v = tf.constant(np.ones(2, np.float32), name="v")
        total = tf.add(a, b, name="sum")
    with tf.name_scope("layer2"):
        mm = tf.matmul(total, total, name="mm")
        tf.identity(total, name="copy")
        tf.identity(v, name="vcopy")
    out = tf.identity(mm, name="out")
    with tf.name_scope("single"):
        tf.identity(out, name="op")
    return tf.get_default_graph()


def test_collapsing_folds_name_scopes_into_one_node_each():
    graph = _scoped_graph()
    assert len(Picture(dot.graph_dot(graph)).nodes) == 9
    picture = Picture(dot.graph_dot(graph, collapse=1))
    # Two folded scopes, out, and single/op (a scope of one op stays that op).
    assert picture.nodes == {"layer1", "layer2", "out", "single/op"}
    assert picture.attrs["layer1"]["shape"] == "folder"
    assert picture.label("layer1") == ["layer1/", "(4 ops)"]
    tooltip = picture.attrs["layer1"]["tooltip"].splitlines()
    assert tooltip[1:] == ["  Const x 3", "  Add x 1"]
    # sum → mm (twice), sum → copy and v → vcopy merge into one edge listing both tensor kinds.
    assert picture.edges_of("data") == [
        ("layer1", "layer2"),
        ("layer2", "out"),
        ("out", "single/op"),
    ]
    assert picture.edge_label("layer1", "layer2") == "float32 [2,2]\nfloat32 [2]"
    by_list = Picture(dot.graph_dot(graph, collapse=["layer2"]))
    assert by_list.nodes == {"layer1/a", "layer1/b", "layer1/v", "layer1/sum", "layer2", "out"} | {
        "single/op"
    }


def test_folded_groups_take_the_strongest_state_of_their_members():
    graph = _scoped_graph()
    highlight = {"layer1/a": "done", "layer1/sum": "blocked", "layer1/b": "running"}
    highlight.update({"layer2/mm": "done", "layer2/copy": "running"})
    attrs = Picture(dot.graph_dot(graph, collapse=1, highlight=highlight)).attrs
    assert attrs["layer1"]["color"] == BLOCKED and attrs["layer2"]["color"] == RUNNING


def test_collapsed_partitions_keep_send_recv_pairs_and_one_folder_per_task():
    x, y = _model()
    with tf.name_scope("head"):
        z = tf.identity(tf.identity(y, name="a"), name="b")
    text = dot.partitioned_dot(
        tf.get_default_graph(), [z], feeds=[x], cluster={"ps": 2, "worker": 1}, collapse=1
    )
    picture = Picture(text)
    assert len(picture.edges_of("sendrecv")) == 2
    assert picture.in_cluster("cluster_worker_task:0_CPU:0") >= {"head", "MatMul", "y"}
    assert picture.label("head") == ["head/", "(2 ops)"]


def test_collapsed_scope_on_several_tasks_gets_one_node_per_task():
    with tf.name_scope("layer"):
        with tf.device("/job:ps/task:0"):
            a = tf.constant(1.0, name="a")
            b = tf.identity(a, name="b")
        with tf.device("/job:worker/task:0"):
            c = tf.identity(b, name="c")
            tf.identity(c, name="d")
    picture = Picture(dot.graph_dot(tf.get_default_graph(), collapse=1))
    assert len(picture.nodes) == 2
    (on_ps,) = picture.in_cluster("cluster_ps_task:0")
    (on_worker,) = picture.in_cluster("cluster_worker_task:0")
    assert picture.edges_of("data") == [(on_ps, on_worker)]


@needs_dot
def test_pictures_render_to_svg_and_pdf(tmp_path):
    x, y = _model()
    text = dot.partitioned_dot(tf.get_default_graph(), [y], feeds=[x], collapse=1)
    assert "<svg" in render.to_format(text, "svg").decode()
    assert render.to_format(text, "pdf").startswith(b"%PDF")
    written = render.write(text, tmp_path / "step", formats=("pdf",))
    assert [p.name for p in written] == ["step.dot", "step.pdf"]
    assert (tmp_path / "step.pdf").read_bytes().startswith(b"%PDF")


def test_collapse_takes_one_scope_as_a_string_and_rejects_bad_values():
    _model()
    graph = tf.get_default_graph()
    one = Picture(dot.graph_dot(graph, collapse="w1")).nodes
    listed = Picture(dot.graph_dot(graph, collapse=["w1"])).nodes
    assert one == listed
    with pytest.raises(ValueError, match="at least 1"):
        dot.graph_dot(graph, collapse=0)
    with pytest.raises(TypeError, match="collapse must be a depth"):
        dot.graph_dot(graph, collapse=1.5)


def test_send_recv_pairs_as_edges_join_producer_and_consumer_across_tasks():
    x, y = _model()
    graph = tf.get_default_graph()
    picture = Picture(
        dot.partitioned_dot(graph, [y], feeds=[x], cluster={"ps": 2, "worker": 1}, sendrecv="edges")
    )
    assert not any(n.startswith(("_send/", "_recv/")) for n in picture.nodes)
    # y = (x @ w1) @ w2: w1/read and w2/read cross from their ps tasks to the worker's MatMuls.
    transfers = {(a, b): attrs["label"] for a, b, attrs in picture.edges if "bold" in attrs.get(
        "style", "")}  # fmt: skip
    assert transfers == {
        ("w1/read", "MatMul"): "float32 [3,4]\n48 bytes",  # 3 x 4 float32
        ("w2/read", "y"): "float32 [4,2]\n32 bytes",  # 4 x 2 float32
    }
    assert picture.clusters["w1/read"][1] == "cluster_ps_task:0"
    assert picture.clusters["MatMul"][1] == "cluster_worker_task:0"
    with pytest.raises(ValueError, match="sendrecv must be 'nodes' or 'edges'"):
        dot.partitioned_dot(graph, [y], feeds=[x], sendrecv="arrows")


def test_control_edges_between_tasks_become_dashed_transfer_edges():
    x, loss, train = _trained_model(1)
    step, data, control = _crossings([loss], [train], [x])
    text = dot.partitioned_dot(
        tf.get_default_graph(), [loss], [train], [x], cluster={"ps": 2, "worker": 1},
        sendrecv="edges",
    )  # fmt: skip
    picture = Picture(text)
    dashed = [(a, b) for a, b, attrs in picture.edges if attrs.get("style") == "bold,dashed"]
    assert len(dashed) == len(control)  # one per crossing control edge (one consumer each)
    assert {a for a, _ in dashed} == {c.name for c, _ in control}


def _two_layers_with_adam():
    """hidden/weights and logits/weights, Adam's slots in each, and the global step."""
    with tf.variable_scope("hidden"):
        w1 = tf.get_variable("weights", [2, 2])
    with tf.variable_scope("logits"):
        w2 = tf.get_variable("weights", [2, 2])
        y = tf.matmul(tf.matmul(tf.ones([1, 2]), w1), w2)
    step = tf.train.get_or_create_global_step()
    tf.train.AdamOptimizer().minimize(tf.reduce_sum(y), global_step=step)
    return tf.get_default_graph()


def _labels(text):
    """``{node: label}`` of a DOT picture's op nodes, read without pydot (fast on big pictures)."""
    import re

    found = re.findall(r'^"((?:[^"\\]|\\.)*)" \[label="((?:[^"\\]|\\.)*)"', text, re.M)
    return {_unquote(f'"{n}"'): _unquote(f'"{label}"') for n, label in found
            if not n.startswith("legend_")}  # fmt: skip


def test_every_label_is_unique_and_names_its_variable_or_scope():
    graph = _two_layers_with_adam()
    from minitf.viz import pictures

    folded = pictures.with_variables_folded(graph, ["gradients"])
    plain, boxes = _labels(dot.graph_dot(graph)), _labels(dot.graph_dot(graph, collapse=folded))
    assert len(plain) == len(graph.get_operations())
    for labels in (plain, boxes):
        # Unique without the colocation marks: the name and type tell the boxes apart.
        named = [tuple(x for x in label.split("\n") if x[:1] != "@") for label in labels.values()]
        assert len(set(named)) == len(named), labels
    # In a dashed global_step/ cluster the read was labelled "read": it names its variable.
    assert plain["global_step/read"].split("\n")[0] == "global_step/read"
    # Two scopes folded alike ("weights/ (17 ops)" twice) say which weights they are.
    (hidden,) = [n for n in boxes if n.startswith("hidden/weights on")]
    (logits,) = [n for n in boxes if n.startswith("logits/weights on")]
    assert boxes[hidden].split("\n")[0] == "hidden/weights/"
    assert boxes[logits].split("\n")[0] == "logits/weights/"


def test_a_helper_in_its_variables_cluster_keeps_the_variables_name():
    v = tf.Variable(tf.zeros([2]), name="v")
    tf.identity(v, name="out")
    picture = Picture(dot.graph_dot(tf.get_default_graph()))
    # v/Assign, v/read and v/initial_value share a dashed v/ cluster...
    assert picture.clusters["v/read"][-1].endswith("/v")
    # ...and still say whose they are.
    assert picture.label("v/read")[0] == "v/read"
    assert picture.label("v/Assign")[0] == "v/Assign"


def test_a_colocation_mark_names_only_an_op_the_picture_draws():
    w = tf.Variable(tf.ones([2]), name="w")
    with tf.colocate_with(w):
        c = tf.identity(tf.constant(1.0), name="c")
    graph = tf.get_default_graph()
    assert Picture(dot.graph_dot(graph)).label("c")[-1] == "@w"
    # The step that fetches c does not run w: no "@w" naming a box that is not there.
    step = Picture(dot.partitioned_dot(graph, [c]))
    assert "w" not in step.nodes
    assert not any(line.startswith("@") for line in step.label("c"))
    alone = Picture(dot.graph_dot(graph, ops_to_show=[c.op]))
    assert alone.label("c") == ["c", "Identity"]


def test_labels_of_one_tensor_received_on_two_tasks_say_which_task():
    with tf.device("/job:worker/task:0"):
        x = tf.constant([1.0, 2.0], name="x")
    outs = []
    for task in (0, 1):
        with tf.device(f"/job:ps/task:{task}"):
            outs.append(tf.identity(x, name=f"copy{task}"))
    picture = Picture(dot.partitioned_dot(tf.get_default_graph(), outs))
    recvs = [n for n in picture.nodes if n.startswith("_recv/")]
    assert len(recvs) == 2
    labels = {n: picture.label(n) for n in recvs}
    assert labels[recvs[0]] != labels[recvs[1]]
    for node, label in labels.items():
        task = picture.clusters[node][1].removeprefix("cluster_ps_")
        assert label[0] == "x:0" and f"on /job:ps/{task}" in label


def _crossing_edges(graph, task):
    """(tensor or ^op, other task, direction) of each edge between ``task``'s ops and another's."""

    def task_of(op):
        spec = pydev.DeviceSpec.from_string(op.device)
        if spec.job is None:
            return "(no device requested)"
        return f"/job:{spec.job}" + ("" if spec.task is None else f"/task:{spec.task}")

    found = set()
    for op in graph.get_operations():
        for t in op.inputs:
            a, b = task_of(t.op), task_of(op)
            if a != b and task in (a, b):
                found.add((t.name, b if a == task else a, "to" if a == task else "from"))
        for c in op.control_inputs:
            a, b = task_of(c), task_of(op)
            if a != b and task in (a, b):
                found.add(("^" + c.name, b if a == task else a, "to" if a == task else "from"))
    return found


def _stub_rows(text):
    """``{stub node: [row texts]}`` of the stubs in a picture (their HTML-like tables)."""
    import re

    rows = {}
    for name, table in re.findall(r'^"((?:from|to) [^"]*)" \[shape=plain, label=<(.*)>, ', text,
                                  re.M):  # fmt: skip
        cells = re.findall(r"<td[^>]*>(.*?)</td>", table)
        rows[name] = [re.sub(r"<[^>]+>", "", cell) for cell in cells[1:]]
    return rows


def test_a_task_view_draws_a_stub_naming_the_other_task_and_tensor_of_each_crossing_edge():
    _model()  # w1 on ps task 0, w2 on ps task 1, the MatMuls on the worker
    graph = tf.get_default_graph()
    text = dot.task_dot(graph, "/job:ps/task:0", peers=True)
    crossing = _crossing_edges(graph, "/job:ps/task:0")
    # w1's initial value comes from the worker, w1/read goes to the worker's MatMul.
    assert crossing == {("zeros:0", "/job:worker", "from"), ("w1/read:0", "/job:worker", "to")}
    rows = _stub_rows(text)
    assert rows == {"from /job:worker": ["zeros:0"], "to /job:worker": ["w1/read:0"]}
    # Each edge ends at its tensor's row of the stub.
    assert '"from /job:worker":"p0" -> "w1/Assign"' in text
    assert '"w1/read" -> "to /job:worker":"p0"' in text
    # Without peers the picture stops at the task's edge, as before.
    assert _stub_rows(dot.task_dot(graph, "/job:ps/task:0")) == {}


def test_a_stub_lists_every_tensor_and_control_edge_that_crosses():
    x, loss, train = _trained_model(1)
    graph = tf.get_default_graph()
    cluster = {"ps": 2, "worker": 1}
    for task in ("/job:ps/task:0", "/job:ps/task:1"):
        rows = _stub_rows(dot.task_dot(graph, task, peers=True))
        found = {(text, stub.split(" ", 1)[1], stub.split(" ", 1)[0])
                 for stub, texts in rows.items() for text in texts}  # fmt: skip
        assert found == _crossing_edges(graph, task)
    # Placed as a session places them, the stubs name full tasks.
    placed = _stub_rows(dot.task_dot(graph, "/job:ps/task:0", cluster=cluster, peers=True))
    assert set(placed) == {"from /job:worker/task:0", "to /job:worker/task:0"}


def test_boxes_and_legend_show_each_role_by_shape_and_by_colour():
    from minitf.viz.graph_data import ROLE_COLORS, ROLE_SHAPES, op_role

    _model()
    tf.FIFOQueue(2, tf.int64, name="tokens")
    tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
    graph = tf.get_default_graph()
    text = dot.graph_dot(graph)
    picture = Picture(text)
    for op in graph.get_operations():
        role = op_role(op.type)
        assert picture.attrs[op.name]["shape"] == ROLE_SHAPES[role], op.name
        assert picture.attrs[op.name]["fillcolor"] == ROLE_COLORS[role], op.name
    (legend,) = [g for g in picture.graph.get_subgraphs() if g.get_name() == '"cluster_legend"']
    samples = {n.get_name().strip('"'): n.get_attributes() for n in legend.get_nodes()}
    for role in ROLE_COLORS:
        sample = samples[f"legend_{role}"]
        assert (sample["shape"], _unquote(sample["fillcolor"])) == (
            ROLE_SHAPES[role], ROLE_COLORS[role])  # fmt: skip


def test_a_slide_draws_ops_repeated_with_a_number_once_when_their_edges_are_alike():
    with tf.device("/job:ps/task:0"):
        accumulators = [tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc") for _ in "abc"]
        # ResourceAccumulatorTakeGradient, ..._1, ..._2 (TF's names), each with its num_required.
        takes = [a.take_grad(1) for a in accumulators]
    with tf.device("/job:worker/task:0"):
        total = tf.add_n(takes, name="total")
        tf.reduce_mean(total, name="Mean")
        tf.reduce_mean(takes[0], name="Mean")  # Mean_1: reads the first take only
    graph = tf.get_default_graph()
    full, slide = _labels(dot.graph_dot(graph)), _labels(dot.graph_dot(graph, slide=True))
    assert len(full) == len(graph.get_operations())
    # Each box by its DOT id: a name, "x3" when it stands for three, and where.
    names = {box.split(" on /job:")[0] for box in slide}
    # Three accumulators and their num_required, one box each; two of the takes
    # too, the first reads into Mean_1 as well and stays apart; so do the Means.
    take = "ResourceAccumulatorTakeGradient"
    assert {"acc x3", f"{take}/num_required x3", f"{take} x2", take} <= names
    assert {"Mean", "Mean_1"} <= names
    (box,) = [node for node in slide if node.startswith("acc x3")]
    assert "acc_1" in Picture(dot.graph_dot(graph, slide=True)).attrs[box]["tooltip"]
