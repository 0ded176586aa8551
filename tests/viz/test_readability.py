"""Big graphs stay readable: SyncReplicas on an MLP, 2 ps x 3 workers, folded for a projector.

The worker's graph has about two hundred ops; folded by the scopes the docs
and the demo fold, each view must come down to a number of boxes a person can
read on a 1080p screen, and the pieces a teacher points at — the
accumulators on the ps tasks, the token queue — must stay visible, each in
its task's cluster. Expected node counts are computed here from the graph,
independently of the renderer: every op outside a folded scope is one node,
and every (folded scope, task) pair is one more.
"""

import pydot
import pytest

import minitf as tf
from minitf.examples import sync_mlp
from minitf.framework.device import DeviceSpec
from minitf.runtime.core.plan import prune, topological_order
from minitf.runtime.distributed import partition as partition_lib
from minitf.viz import dot

pytestmark = pytest.mark.timeout(60)

FOLD = ["gradients", "Adam", "hidden", "logits"]
CLUSTER = {"ps": 2, "worker": 3}
READABLE = 100  # boxes in one picture at 1080p


def _model():
    spec = tf.train.ClusterSpec({"ps": ["ps0:1", "ps1:1"], "worker": ["w0:1", "w1:1", "w2:1"]})
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=spec)
    with tf.device(setter):
        return sync_mlp.build_sync_model(3)


def _nodes(text: str) -> dict[str, list[str]]:
    """``{node name: clusters it is in, outermost first}`` of a DOT picture (no legend)."""
    (graph,) = pydot.graph_from_dot_data(text)
    found = {}

    def walk(g, path):
        for node in g.get_nodes():
            name = node.get_name().strip('"')
            if name not in ("node", "edge", "graph") and not name.startswith("legend_"):
                found[name] = path
        for sub in g.get_subgraphs():
            walk(sub, path + [sub.get_name().strip('"')])

    walk(graph, [])
    return found


def _folded(name: str) -> str | None:
    for scope in FOLD:
        if name.startswith(scope + "/"):
            return scope
    return None


def _expected(named_tasks) -> int:
    """One node per op outside the folded scopes, one per (folded scope, task)."""
    outside = sum(_folded(name) is None for name, _ in named_tasks)
    groups = {(_folded(name), task) for name, task in named_tasks if _folded(name)}
    return outside + len(groups)


def _task(device: str) -> str:
    spec = DeviceSpec.from_string(device)
    return f"{spec.job}:{spec.task}"


def _partitions(targets):
    step = topological_order(prune([], targets, []), set())
    devices = partition_lib.place(step, "worker", 0, CLUSTER)
    return partition_lib.partition(step, devices, [], targets, [])


def _partition_expected(parts) -> int:
    named = []
    for part in parts.values():
        for node in part.nodes:
            # Send/Recv and feeds are never folded: keep them outside any scope.
            kept = node.name.startswith(("_send/", "_recv/", "_feed/"))
            named.append(("/" + node.name if kept else node.name, _task(node.device)))
    return _expected(named)


def test_the_whole_graph_folds_to_a_readable_picture():
    _model()
    graph = tf.get_default_graph()
    nodes = _nodes(dot.graph_dot(graph, collapse=FOLD))
    named = [(op.name, _task(op.device)) for op in graph.get_operations()]
    assert len(graph.get_operations()) > 2 * READABLE  # unfolded it is not readable
    assert len(nodes) == _expected(named)
    assert len(nodes) <= 1.5 * READABLE  # the whole graph, every task: a wall poster


def test_each_task_folds_to_a_readable_picture():
    _model()
    graph = tf.get_default_graph()
    for task in ("/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"):
        nodes = _nodes(dot.task_dot(graph, task, collapse=FOLD))
        mine = [
            (op.name, _task(op.device))
            for op in graph.get_operations()
            if _task(op.device) == task.replace("/job:", "").replace("/task", "")
        ]
        assert len(nodes) == _expected(mine), task
        assert len(nodes) <= READABLE, task


@pytest.mark.parametrize("step", ["train_op", "sync_op"])
def test_the_partitioned_steps_fold_to_readable_pictures(step):
    model = _model()
    target = model[step] if isinstance(model[step], tf.Operation) else model[step].op
    text = dot.partitioned_dot(tf.get_default_graph(), [], [target], cluster=CLUSTER,
                               collapse=FOLD)  # fmt: skip
    nodes = _nodes(text)
    assert len(nodes) == _partition_expected(_partitions([target]))
    assert len(nodes) <= READABLE


def test_the_accumulators_and_the_token_queue_are_visible_on_their_ps_tasks():
    model = _model()
    graph = tf.get_default_graph()
    text = dot.partitioned_dot(graph, [], [model["train_op"].op], cluster=CLUSTER, collapse=FOLD)
    nodes = _nodes(text)
    accumulators = [op for op in graph.get_operations() if op.type.endswith("Accumulator")]
    assert len(accumulators) == 4  # one per variable: 2 layers x (weights, biases)
    for accumulator in accumulators:
        shared = accumulator.get_attr("shared_name")
        (variable,) = [v for v in tf.trainable_variables() if shared == v.name + "/grad_accum"]
        clusters = nodes[accumulator.name]
        assert f"cluster_ps_task:{DeviceSpec.from_string(variable.device).task}" in clusters
    token_queue = graph.get_operation_by_name("sync_token_q")
    global_step_task = DeviceSpec.from_string(tf.train.get_global_step().device).task
    assert f"cluster_ps_task:{global_step_task}" in nodes[token_queue.name]
    assert "shared: sync_token_q" in text  # labelled with the name every replica shares


@pytest.mark.parametrize("step", ["train_op", "sync_op"])
def test_the_overview_draws_every_send_recv_pair_as_an_edge_and_halves_the_boxes(step):
    model = _model()
    target = model[step] if isinstance(model[step], tf.Operation) else model[step].op
    parts = _partitions([target])
    transfers = sum(n.op in ("_Send", "_Recv") for p in parts.values() for n in p.nodes)
    text = dot.partitioned_dot(
        tf.get_default_graph(), [], [target], cluster=CLUSTER, collapse=FOLD, sendrecv="edges"
    )
    nodes = _nodes(text)
    assert len(nodes) == _partition_expected(parts) - transfers
    assert len(nodes) <= READABLE // 2
