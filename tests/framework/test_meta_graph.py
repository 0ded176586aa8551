"""tf.train.export_meta_graph and tf.train.import_meta_graph: TF 1.x's behaviour, as JSON.

What must survive the round trip is read from the exporting graph itself;
the imported graph's numbers (a forward pass, one SGD step) are checked
against numpy by hand; names, scopes and errors follow TF's
``meta_graph.py`` and ``saver.py``.
"""

import json
import logging
import re

import numpy as np
import pytest

import minitf as tf
from minitf.framework import meta_graph
from minitf.train.coordinator import Coordinator
from tests.framework.test_attr_json import same_value

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/task:0"
W0 = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], np.float32)
B0 = np.array([0.05, -0.05], np.float32)
X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], np.float32)
T = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
LR = 0.1


def build_model(device: str | None = PS) -> tf.Graph:
    """A small training graph in a new default graph.

    Placeholders ``x`` and ``t``; variables ``w`` and ``b`` on ``device``;
    ``y = x @ w + b``; a mean-squared loss; an SGD step in ``TRAIN_OP``; a
    FIFO queue with a queue runner; ``w_sum`` colocated with ``w``; and
    ``loss_after_step`` with a control input on the step.
    """
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        t = tf.placeholder(tf.float32, [None, 2], name="t")
        with tf.device(device):
            w = tf.get_variable("w", initializer=W0)
            b = tf.get_variable("b", initializer=B0)
        y = tf.add(tf.matmul(x, w), b, name="y")
        loss = tf.reduce_mean(tf.square(y - t), name="loss")
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=global_step)
        tf.add_to_collection(tf.GraphKeys.TRAIN_OP, train_op)
        queue = tf.FIFOQueue(4, [tf.float32], shapes=[[3]], name="queue")
        enqueue = queue.enqueue([tf.constant([1.0, 2.0, 3.0])], name="enqueue")
        tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue]))
        with tf.colocate_with(w):
            tf.reduce_sum(w, name="w_sum")
        with tf.control_dependencies([train_op]):
            tf.identity(loss, name="loss_after_step")
    return graph


def export_then_import(source: tf.Graph, path, **import_kwargs) -> tf.Graph:
    """Writes ``source`` to ``path`` and imports the file into a new graph."""
    tf.train.export_meta_graph(str(path), graph=source)
    target = tf.Graph()
    with target.as_default():
        # The framework-level import: import_meta_graph would add a Saver's ops.
        meta_graph.import_scoped_meta_graph(str(path), **import_kwargs)
    return target


def shape_list(tensor):
    shape = tensor.get_shape()
    return None if shape.ndims is None else shape.as_list()


def sgd_step_by_hand():
    """``w`` and ``b`` after one step of SGD on ``mean((x @ w + b - t) ** 2)``."""
    y = X @ W0 + B0
    dy = 2.0 * (y - T) / y.size
    return W0 - LR * (X.T @ dy), B0 - LR * dy.sum(axis=0)


# -- the file and its format -----------------------------------------------------------------


def test_export_returns_the_meta_graph_it_writes_as_json(tmp_path):
    graph = build_model()
    path = tmp_path / "sub" / "model.meta.json"
    result = tf.train.export_meta_graph(str(path), graph=graph)
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == result
    assert set(result) == {"meta_info_def", "graph_def", "collection_def"}
    info = result["meta_info_def"]
    assert info["minitf_version"] == tf.__version__
    expected_types = sorted({op.type for op in graph.get_operations()})
    assert [op["name"] for op in info["stripped_op_list"]["op"]] == expected_types
    assert len(result["graph_def"]["node"]) == len(graph.get_operations())


def test_as_text_indents_the_json_and_both_forms_read_back(tmp_path):
    graph = build_model()
    compact = tf.train.export_meta_graph(str(tmp_path / "a.json"), graph=graph)
    pretty = tf.train.export_meta_graph(str(tmp_path / "b.json"), graph=graph, as_text=True)
    assert "\n" not in (tmp_path / "a.json").read_text()
    assert "\n  " in (tmp_path / "b.json").read_text()
    assert meta_graph.read_meta_graph_file(tmp_path / "a.json") == compact == pretty


def test_the_file_is_standard_json_even_for_nan_and_infinity(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        tf.constant(np.array([np.nan, np.inf, -np.inf, 1.5], np.float32), name="c")
    path = tmp_path / "nan.json"
    tf.train.export_meta_graph(str(path), graph=graph)
    json.loads(path.read_text(), parse_constant=pytest.fail)
    target = export_then_import(graph, path)
    value = target.get_operation_by_name("c").get_attr("value")
    assert value.dtype == np.float32
    assert np.isnan(value[0]) and value[1] == np.inf and value[2] == -np.inf and value[3] == 1.5


# -- what the round trip keeps ---------------------------------------------------------------


def test_round_trip_keeps_names_types_inputs_devices_and_colocation(tmp_path):
    source = build_model()
    target = export_then_import(source, tmp_path / "m.json")
    assert [op.name for op in target.get_operations()] == [
        op.name for op in source.get_operations()
    ]
    for op in source.get_operations():
        new = target.get_operation_by_name(op.name)
        assert new.type == op.type
        assert new.device == op.device
        assert [t.name for t in new.inputs] == [t.name for t in op.inputs]
        assert [c.name for c in new.control_inputs] == [c.name for c in op.control_inputs]
        assert new.colocation_groups() == op.colocation_groups()
        assert [t.dtype for t in new.outputs] == [t.dtype for t in op.outputs]
        assert [shape_list(t) for t in new.outputs] == [shape_list(t) for t in op.outputs]
        assert same_value(new.node_def["attr"], op.node_def["attr"]), op.name


def test_the_examples_devices_and_colocation_are_what_the_model_asked_for(tmp_path):
    target = export_then_import(build_model(), tmp_path / "m.json")
    assert target.get_operation_by_name("w").device == "/job:ps/task:0"
    assert target.get_operation_by_name("x").device == ""
    assert target.get_operation_by_name("w_sum").colocation_groups() == [b"loc:@w"]
    assert target.get_tensor_by_name("x:0").get_shape().as_list() == [None, 3]
    assert target.get_tensor_by_name("w:0").dtype == tf.float32_ref
    step = target.get_collection(tf.GraphKeys.TRAIN_OP)[0]
    assert [c.name for c in target.get_operation_by_name("loss_after_step").control_inputs] == [
        step.name
    ]


def test_nodes_are_rebuilt_producers_first_whatever_their_stored_order(tmp_path):
    source = build_model(device=None)
    exported = tf.train.export_meta_graph(graph=source)
    exported["graph_def"]["node"].reverse()
    target = tf.Graph()
    with target.as_default():
        meta_graph.import_scoped_meta_graph(exported)
    assert sorted(op.name for op in target.get_operations()) == sorted(
        op.name for op in source.get_operations()
    )


def test_imported_graph_computes_what_numpy_computes(tmp_path):
    target = export_then_import(build_model(), tmp_path / "m.json", clear_devices=True)
    with target.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        y = sess.run("y:0", {"x:0": X})
    np.testing.assert_allclose(y, X @ W0 + B0, rtol=1e-6)


def test_training_step_on_imported_graph_is_one_step_of_sgd(tmp_path):
    target = export_then_import(build_model(), tmp_path / "m.json", clear_devices=True)
    with target.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.get_collection(tf.GraphKeys.TRAIN_OP)[0], {"x:0": X, "t:0": T})
        w, b, step = sess.run(["w:0", "b:0", tf.train.get_global_step()])
    w_expected, b_expected = sgd_step_by_hand()
    np.testing.assert_allclose(w, w_expected, rtol=1e-5)
    np.testing.assert_allclose(b, b_expected, rtol=1e-5)
    assert step == 1


def test_variables_come_back_as_variables_in_their_collections(tmp_path):
    target = export_then_import(build_model(), tmp_path / "m.json")
    with target.as_default():
        global_vars = tf.global_variables()
        assert [v.name for v in global_vars] == ["w:0", "b:0", "global_step:0"]
        assert [v.name for v in tf.trainable_variables()] == ["w:0", "b:0"]
        assert all(isinstance(v, tf.Variable) for v in global_vars)
        assert tf.trainable_variables()[0] is global_vars[0]
        assert tf.train.get_global_step() is global_vars[2]
        w = global_vars[0]
        assert w.op is target.get_operation_by_name("w")
        assert w.initializer is target.get_operation_by_name("w/Assign")
        assert w.value() is target.get_tensor_by_name("w/read:0")
        assert w.shape.as_list() == [3, 2] and w.device == PS


def test_resource_variables_round_trip(tmp_path):
    source = tf.Graph()
    with source.as_default():
        v = tf.get_variable("v", initializer=B0, use_resource=True)
        tf.identity(v.value() * 2.0, name="double")
    target = export_then_import(source, tmp_path / "m.json")
    with target.as_default(), tf.Session() as sess:
        (v,) = tf.global_variables()
        assert v.dtype == tf.float32 and v.shape.as_list() == [2]
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run("double:0"), 2 * B0)


def test_queue_runner_is_rebuilt_and_fills_the_imported_queue(tmp_path):
    target = export_then_import(build_model(), tmp_path / "m.json", clear_devices=True)
    with target.as_default():
        (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert runner.queue is target.get_operation_by_name("queue")
        assert [op.name for op in runner.enqueue_ops] == ["enqueue"]
        queue = tf.QueueBase([tf.float32], [[3]], None, runner.queue.outputs[0])
        dequeue = queue.dequeue()
        with tf.Session() as sess:
            coord = Coordinator()
            threads = runner.create_threads(sess, coord=coord, start=True)
            value = sess.run(dequeue)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    np.testing.assert_array_equal(value, [1.0, 2.0, 3.0])


# -- choosing what to export and where to import ---------------------------------------------


def test_import_scope_prefixes_every_name_input_and_colocation(tmp_path):
    source = build_model()
    with source.as_default():
        tf.add_to_collection("names", "y")
    target = export_then_import(source, tmp_path / "m.json", import_scope="imported")
    for op in source.get_operations():
        new = target.get_operation_by_name("imported/" + op.name)
        assert [t.name for t in new.inputs] == ["imported/" + t.name for t in op.inputs]
        assert [c.name for c in new.control_inputs] == [
            "imported/" + c.name for c in op.control_inputs
        ]
        assert new.colocation_groups() == [
            g.replace(b"loc:@", b"loc:@imported/") for g in op.colocation_groups()
        ]
    assert len(target.get_operations()) == len(source.get_operations())
    with target.as_default():
        assert [v.name for v in tf.global_variables()] == [
            "imported/w:0",
            "imported/b:0",
            "imported/global_step:0",
        ]
        # TF prepends the import scope to the strings of a collection too.
        assert tf.get_collection("names") == ["imported/y"]
        assert tf.get_collection(tf.GraphKeys.TRAIN_OP)[0].name.startswith("imported/")


def test_a_second_import_into_the_same_scope_gets_a_unique_scope(tmp_path):
    source = build_model()
    path = tmp_path / "m.json"
    tf.train.export_meta_graph(str(path), graph=source)
    target = tf.Graph()
    with target.as_default():
        tf.train.import_meta_graph(str(path), import_scope="copy")
        tf.train.import_meta_graph(str(path), import_scope="copy")
        with tf.name_scope("outer"):
            tf.train.import_meta_graph(str(path))
    for name in ("copy/w", "copy_1/w", "outer/w", "copy_1/w_sum"):
        target.get_operation_by_name(name)
    assert target.get_operation_by_name("copy_1/w_sum").colocation_groups() == [b"loc:@copy_1/w"]


@pytest.mark.parametrize("where", ["export", "import"])
def test_clear_devices_leaves_every_device_empty(tmp_path, where):
    source = build_model()
    path = tmp_path / "m.json"
    tf.train.export_meta_graph(str(path), graph=source, clear_devices=where == "export")
    target = tf.Graph()
    with target.as_default():
        meta_graph.import_scoped_meta_graph(str(path), clear_devices=where == "import")
    assert any(op.device for op in source.get_operations())
    assert all(op.device == "" for op in target.get_operations())


def test_collection_list_selects_the_collections(tmp_path):
    exported = tf.train.export_meta_graph(
        graph=build_model(), collection_list=[tf.GraphKeys.TRAIN_OP]
    )
    assert list(exported["collection_def"]) == [tf.GraphKeys.TRAIN_OP]
    assert "node_list" in exported["collection_def"][tf.GraphKeys.TRAIN_OP]


def test_collections_of_other_objects_are_skipped_with_a_warning(caplog):
    graph = build_model()
    with graph.as_default():
        tf.add_to_collection("python_objects", object())
    with caplog.at_level(logging.WARNING, logger="minitf"):
        exported = tf.train.export_meta_graph(graph=graph)
    assert "python_objects" not in exported["collection_def"]
    assert "python_objects" in caplog.text


def build_tower() -> tf.Graph:
    """Ops under ``tower/`` that read ``x``, colocate with and wait for ``outside``: all outside."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        outside = tf.constant(1.0, name="outside")
        with tf.variable_scope("tower"):
            v = tf.get_variable("v", initializer=W0)
            h = tf.matmul(x, v, name="h")
            with tf.colocate_with(outside):
                tf.identity(h, name="colocated")
            with tf.control_dependencies([outside]):
                tf.identity(h, name="after")
    return graph


def test_export_scope_exports_only_that_scope_without_the_prefix():
    graph = build_tower()
    exported = tf.train.export_meta_graph(graph=graph, export_scope="tower")
    nodes = {node["name"]: node for node in exported["graph_def"]["node"]}
    tower_ops = [op.name for op in graph.get_operations() if op.name.startswith("tower/")]
    assert sorted(nodes) == sorted(name[len("tower/") :] for name in tower_ops)
    assert nodes["h"]["input"] == ["$unbound_inputs_x", "v/read"]
    assert nodes["after"]["input"] == ["h", "^$unbound_inputs_outside"]
    assert nodes["colocated"]["attr"]["_class"] == []
    assert exported["collection_def"]["unbound_inputs"] == {
        "bytes_list": {"value": ["$unbound_inputs_x", "^$unbound_inputs_outside"]}
    }
    (variable_def,) = exported["collection_def"][tf.GraphKeys.GLOBAL_VARIABLES]["proto_list"][
        "value"
    ]
    assert variable_def["variable_name"] == "v:0"


def test_a_scoped_export_imports_with_its_inputs_given_in_input_map():
    exported = tf.train.export_meta_graph(graph=build_tower(), export_scope="tower")
    target = tf.Graph()
    with target.as_default():
        with pytest.raises(ValueError, match=re.escape("unbound inputs: $unbound_inputs_x")):
            tf.train.import_meta_graph(exported)
        new_x = tf.constant(X, name="new_x")
        start = tf.no_op(name="start")
        tf.train.import_meta_graph(
            exported,
            import_scope="copy",
            input_map={"$unbound_inputs_x": new_x, "^$unbound_inputs_outside": start},
        )
        assert target.get_operation_by_name("copy/after").control_inputs == [start]
        assert [v.name for v in tf.global_variables()] == ["copy/v:0"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            h = sess.run("copy/h:0")
    np.testing.assert_allclose(h, X @ W0, rtol=1e-6)


# -- errors ----------------------------------------------------------------------------------


def test_importing_a_name_the_graph_already_has_raises_value_error_naming_it(tmp_path):
    path = tmp_path / "m.json"
    tf.train.export_meta_graph(str(path), graph=build_model())
    target = tf.Graph()
    with target.as_default():
        tf.constant(0.0, name="y")
        before = len(target.get_operations())
        with pytest.raises(ValueError, match="'y'"):
            tf.train.import_meta_graph(str(path))
    assert len(target.get_operations()) == before


def test_a_missing_file_raises_io_error_with_its_path(tmp_path):
    path = tmp_path / "nowhere.json"
    with pytest.raises(OSError, match=re.escape(f"File {path} does not exist.")):
        tf.train.import_meta_graph(str(path))


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{not json", "Cannot parse file"),
        ("[1, 2]", "JSON object"),
        ('{"collection_def": {}}', "graph_def"),
    ],
)
def test_a_file_that_is_not_a_meta_graph_raises_io_error(tmp_path, text, problem):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(OSError, match=problem) as info:
        tf.train.import_meta_graph(str(path))
    assert str(path) in str(info.value)


def test_wrong_argument_types_raise_type_error():
    with pytest.raises(TypeError, match="graph must be of type Graph"):
        tf.train.export_meta_graph(graph="not a graph")
    with pytest.raises(TypeError, match="meta_info_def must be a dict"):
        tf.train.export_meta_graph(meta_info_def=["tags"])
    with pytest.raises(TypeError, match="MetaGraphDef dict or a file name"):
        tf.train.import_meta_graph(42)


def test_an_unknown_op_type_raises_value_error_naming_it():
    exported = tf.train.export_meta_graph(graph=build_model(device=None))
    exported["graph_def"]["node"][0]["op"] = "NoSuchOp"
    with pytest.raises(ValueError, match="Op type not registered 'NoSuchOp'"):
        tf.train.import_meta_graph(exported)
