"""The graph as data: nodes with roles and devices, data and control edges, networkx export."""

import json

import pytest

import minitf as tf
from minitf.viz import graph_to_dict, op_role, to_networkx

pytestmark = pytest.mark.timeout(60)


def _model():
    with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(tf.zeros([3, 2]), name="w")
        y = tf.matmul(x, w, name="y")
        loss = tf.reduce_sum(y, name="loss")
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
    q = tf.FIFOQueue(2, tf.int64, name="tokens")
    return train, acc, q


def test_roles_of_op_types():
    assert op_role("VariableV2") == "variable"
    assert op_role("ResourceConditionalAccumulator") == "accumulator"
    assert op_role("ResourceAccumulatorTakeGradient") == "accumulator"
    assert op_role("QueueDequeueV2") == "queue"
    assert op_role("Assign") == "init"
    # The global step's increment is part of each update (TF's minimize
    # runs it with the apply ops), not of the initialization.
    assert op_role("AssignAdd") == "update"
    assert op_role("AssignSub") == "update"
    assert op_role("ApplyGradientDescent") == "update"
    assert op_role("_Recv") == "sendrecv"
    assert op_role("Placeholder") == "feed"
    assert op_role("MatMul") == "compute"


def test_graph_to_dict_lists_every_op_and_edge_and_is_json():
    _model()
    graph = tf.get_default_graph()
    data = json.loads(json.dumps(graph_to_dict(graph)))
    by_name = {n["name"]: n for n in data["nodes"]}
    assert len(by_name) == len(graph.get_operations())
    assert by_name["w"]["role"] == "variable" and by_name["w"]["device"] == "/job:ps/task:0"
    assert by_name["y"]["device"] == "/job:worker" and by_name["y"]["role"] == "compute"
    assert by_name["w/Assign"]["colocation"] == ["loc:@w"]
    assert by_name["acc"]["role"] == "accumulator" and by_name["tokens"]["role"] == "queue"
    assert by_name["y"]["outputs"] == [{"name": "y:0", "dtype": "float32", "shape": [None, 2]}]
    assert by_name["gradients/y_grad/MatMul"]["scope"] == "gradients/y_grad"
    data_edges = [e for e in data["edges"] if e["kind"] == "data"]
    expected = sum(len(op.inputs) for op in graph.get_operations())
    assert len(data_edges) == expected
    control = [e for e in data["edges"] if e["kind"] == "control"]
    assert len(control) == sum(len(op.control_inputs) for op in graph.get_operations())
    assert {"source": "x", "target": "y", "kind": "data", "name": "x:0", "dtype": "float32",
            "shape": [None, 3]} in data_edges  # fmt: skip


def test_to_networkx_keeps_attributes_and_merges_parallel_edges():
    a = tf.constant(1.0, name="a")
    b = tf.add(a, a, name="b")
    with tf.control_dependencies([b]):
        c = tf.identity(a, name="c")
    g = to_networkx(tf.get_default_graph())
    assert set(g.nodes) == {"a", "b", "c"}
    assert g.nodes["b"]["type"] == "Add" and g.nodes["b"]["role"] == "compute"
    assert [t["name"] for t in g.edges["a", "b"]["tensors"]] == ["a:0", "a:0"]
    assert g.edges["b", "c"]["kinds"] == ["control"]
    assert c.op.name == "c"


# Okabe and Ito's colour-blind-safe palette, as published
# (https://jfly.uni-koeln.de/color/), plus white and greys for what has no role colour.
OKABE_ITO = {"#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#000000"}  # fmt: skip
NEUTRAL = {"#FFFFFF", "#999999", "#BBBBBB", "#DDDDDD"}
# Every role, as the module docstring lists them, and an op type of each.
ROLE_EXAMPLES = {
    "variable": "VariableV2", "accumulator": "ResourceConditionalAccumulator",
    "queue": "FIFOQueueV2", "init": "Assign", "update": "ApplyAdam", "sendrecv": "_Send",
    "feed": "Placeholder", "compute": "MatMul",
}  # fmt: skip


def test_every_role_has_a_colour_and_a_shape_of_its_own_from_a_colour_blind_safe_palette():
    from minitf.viz.graph_data import ROLE_COLORS, ROLE_SHAPES

    assert {op_role(t) for t in ROLE_EXAMPLES.values()} == set(ROLE_EXAMPLES)
    assert set(ROLE_COLORS) == set(ROLE_SHAPES) == set(ROLE_EXAMPLES)
    colors = [c.upper() for c in ROLE_COLORS.values()]
    assert len(set(colors)) == len(colors)  # no two roles alike in colour...
    assert len(set(ROLE_SHAPES.values())) == len(ROLE_SHAPES)  # ...nor in shape (greyscale)
    assert set(colors) <= OKABE_ITO | NEUTRAL
    # A folded scope is drawn as a folder: no role may look like one.
    assert "folder" not in ROLE_SHAPES.values()
