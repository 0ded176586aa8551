"""The standard pictures of a model: which files, which steps, and what their tooltips say."""

import json

import numpy as np
import pytest

import minitf as tf
from minitf.viz import pictures

pytestmark = pytest.mark.timeout(60)


def _model():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(tf.zeros([3, 1]), name="w")  # ps task 0
        b = tf.Variable(tf.zeros([1]), name="b")  # ps task 1
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, loss, train


def test_the_cluster_is_the_smallest_the_devices_fit_in():
    _model()
    assert pictures.cluster_of(tf.get_default_graph()) == {"worker": 1, "ps": 2}
    assert pictures.cluster_of(tf.Graph(), "worker", 2) == {"worker": 3}


def test_every_view_is_written_and_tooltips_name_the_assigned_device(tmp_path):
    _model()
    written = pictures.graph_pictures(tf.get_default_graph(), tmp_path, formats=())
    assert sorted(p.name for p in written) == [
        "partitioned.dot", "partitioned_overview.dot", "ps_task0.dot", "ps_task1.dot",
        "whole.dot", "worker.dot",
    ]  # fmt: skip
    whole = (tmp_path / "whole.dot").read_text()
    # w is a ps op: replica_device_setter put it on ps task 0, which a session keeps.
    assert "assigned device: /job:ps/replica:0/task:0/device:CPU:0" in whole
    assert "(assigned when a session runs it)" not in whole


def test_named_steps_give_one_partitioned_picture_each(tmp_path):
    x, loss, train = _model()
    written = pictures.graph_pictures(
        tf.get_default_graph(), tmp_path, views=["partitioned"],
        steps={"forward": [loss], "train": [train]}, formats=(),
    )  # fmt: skip
    assert sorted(p.name for p in written) == [
        "forward.dot", "forward_overview.dot", "train.dot", "train_overview.dot"
    ]  # fmt: skip
    # The forward step only reads w and b: no update op on the ps.
    assert "ApplyGradientDescent" not in (tmp_path / "forward.dot").read_text()
    assert "ApplyGradientDescent" in (tmp_path / "train.dot").read_text()


def test_a_step_with_no_pair_between_tasks_gets_one_picture_not_two_alike(tmp_path):
    # All on one task: the overview (pairs drawn as edges) would be the same
    # picture as the partitioned one, so it is not written.
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
        bump = tf.assign_add(v, 1.0, name="bump")
    written = pictures.graph_pictures(
        tf.get_default_graph(), tmp_path, views=["partitioned"], steps={"local": [bump]},
        formats=(), default_job="ps",
    )  # fmt: skip
    assert [p.name for p in written] == ["local.dot"]


def test_an_unknown_view_is_refused():
    _model()
    with pytest.raises(ValueError, match=r"Unknown view\(s\) \['task'\]"):
        pictures.graph_pictures(tf.get_default_graph(), "unused", views=["task"])


def test_a_traced_step_gives_a_chrome_trace_and_a_timeline_picture(tmp_path):
    x, loss, train = _model()
    graph = tf.get_default_graph()
    with tf.Session(graph=graph, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        md = tf.RunMetadata()
        full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        sess.run(train, {x: np.ones((2, 3), np.float32)}, options=full, run_metadata=md)
    written = pictures.trace_pictures(md.step_stats, tmp_path, name="step")
    assert [p.name for p in written] == ["step.json", "step_timeline.svg", "step_timeline.png"]
    events = json.loads(written[0].read_text())["traceEvents"]
    ops_run = {n["node_name"] for d in md.step_stats["dev_stats"] for n in d["node_stats"]}
    assert {e["args"]["node_name"] for e in events if e["ph"] == "X" and e["name"] != "wait"} == (
        ops_run
    )
    assert written[2].read_bytes()[:4] == b"\x89PNG"


def test_draw_gives_a_picture_a_notebook_shows_inline():
    _model()
    whole = pictures.draw()
    assert '"w"' in whole.source and whole._repr_mimebundle_()["text/plain"] == whole.source
    assert "_Send" in pictures.draw(view="partitioned").source
    ps1 = pictures.draw(view="/job:ps/task:1").source
    assert '"b"' in ps1 and '"w"' not in ps1  # only ps task 1's ops
    with pytest.raises(ValueError, match="Unknown view 'ps'"):
        pictures.draw(view="ps")


def test_folding_variables_adds_each_outer_variable_scope_once():
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", [2, 2])
    tf.train.AdamOptimizer().minimize(tf.reduce_sum(w))  # slots layer/w/Adam, layer/w/Adam_1
    graph = tf.get_default_graph()
    # Adam's beta1_power/beta2_power are variables of their own; the slots are inside layer/w.
    assert pictures.with_variables_folded(graph, ["gradients"]) == [
        "gradients", "layer/w", "beta1_power", "beta2_power"
    ]  # fmt: skip
    assert pictures.with_variables_folded(graph, 2) == 2
    folded = pictures.draw(fold_variables=True).source
    assert '"layer/w/read"' not in folded and '"layer/w"' in folded


def test_ops_are_drawn_where_a_session_places_them(tmp_path):
    with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        v = tf.get_variable("v", [2], initializer=tf.ones_initializer())
        tf.identity(v, name="y")
    graph = tf.get_default_graph()
    init = "v/Initializer/ones"  # no device of its own: it goes with v (its colocation group)
    pictures.graph_pictures(
        graph, tmp_path, views=["whole", "device"], formats=(), fold_variables=False
    )
    ps = (tmp_path / "ps_task0.dot").read_text()
    worker = (tmp_path / "worker.dot").read_text()
    assert f'"{init}"' in ps and f'"{init}"' not in worker
    whole = (tmp_path / "whole.dot").read_text()
    assert "no device requested" not in whole
    # Without a cluster, the picture shows what each op asked for.
    from minitf.viz import dot

    assert "no device requested" in dot.graph_dot(graph)


SLIDE = (1920, 1080)
READABLE_PX = 10  # the height of 14 pt text on the slide, at least


def _demo_model():
    """The demo's graph as its chief builds it: SyncReplicas on an MLP, 2 ps x 3 workers."""
    from minitf.examples import sync_mlp

    spec = tf.train.ClusterSpec({"ps": ["ps0:1", "ps1:1"], "worker": ["w0:1", "w1:1", "w2:1"]})
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=spec)
    with tf.device(setter):
        sync_mlp.build_sync_model(3)
    graph = tf.get_default_graph()
    steps = {
        "partitioned": graph.get_collection(sync_mlp.WORKER_STEP),
        "partitioned_chief": graph.get_collection(sync_mlp.CHIEF_STEP),
    }
    return graph, steps


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _svg_text_scale(path):
    """Pixels per point of font size: the scale Graphviz drew the slide's SVG (and PNG) at."""
    import re

    match = re.search(r'class="graph" transform="scale\(([\d.]+)', path.read_text())
    return float(match.group(1))


def test_every_picture_the_demo_draws_fits_a_slide_with_readable_text(tmp_path, graphviz):
    from minitf import demo

    graph, steps = _demo_model()
    written = pictures.graph_pictures(graph, tmp_path, steps=steps, collapse=demo.COLLAPSE)
    pngs = [p for p in written if p.suffix == ".png"]
    assert sorted(p.stem for p in pngs) == [
        "partitioned", "partitioned_chief", "partitioned_chief_overview", "partitioned_overview",
        "ps_task0", "ps_task1", "whole", "worker_task0",
    ]  # fmt: skip
    for png in pngs:
        width, height = _png_size(png)
        assert width <= SLIDE[0] and height <= SLIDE[1], (png.name, width, height)
        # The node text is 14 pt; scaled down to fit, it must stay readable.
        assert 14 * _svg_text_scale(png.with_suffix(".svg")) >= READABLE_PX, png.name


def test_full_size_pictures_are_kept_beside_the_slides(tmp_path):
    _model()
    written = pictures.graph_pictures(tf.get_default_graph(), tmp_path, full=True, formats=())
    names = sorted(p.name for p in written)
    assert names == sorted(
        [f"{view}.dot" for view in ("partitioned", "partitioned_overview", "ps_task0", "ps_task1",
                                    "whole", "worker")]
        + [f"{view}_full.dot" for view in ("partitioned", "partitioned_overview", "ps_task0",
                                           "ps_task1", "whole", "worker")]
    )  # fmt: skip
    slide, full = (tmp_path / "whole.dot").read_text(), (tmp_path / "whole_full.dot").read_text()
    assert 'size="19.19,10.79"' in slide and "\nsize=" not in full
    assert "float32 [?,3]" in full  # dtype labels on every edge, for zooming in


def test_a_traced_span_gives_a_slide_and_a_full_size_timeline(tmp_path):
    x, loss, train = _model()
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        md = tf.RunMetadata()
        full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        sess.run(train, {x: np.ones((2, 3), np.float32)}, options=full, run_metadata=md)
    written = pictures.trace_pictures(md.step_stats, tmp_path, name="step", full=True)
    assert [p.name for p in written] == [
        "step.json", "step_timeline.svg", "step_timeline.png", "step_timeline_full.svg",
        "step_timeline_full.png",
    ]  # fmt: skip
    assert _png_size(tmp_path / "step_timeline.png") == SLIDE
    assert _png_size(tmp_path / "step_timeline_full.png")[0] == 12 * 120


def test_a_task_drawn_on_its_own_shows_where_its_edges_lead():
    _model()
    ps1 = pictures.draw(view="/job:ps/task:1").source
    # b lives on ps task 1; its read goes to the worker, its gradient comes from there.
    assert '"b/read" -> "to /job:worker/task:0":"p0"' in ps1
    assert '"from /job:worker/task:0"' in ps1
