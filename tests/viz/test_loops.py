"""A ``tf.while_loop`` seen: its frame as a cluster, its back edge, one trace event per iteration.

Expected structure from the ops `tf.while_loop` builds for one loop
variable (docs/loops.md): ``Enter``, ``Merge``, ``Less`` and its constant,
``LoopCond``, ``Switch``, ``Identity``, the body's ``add`` and constant,
``NextIteration`` and ``Exit``, all in the frame ``while/while_context``.
Expected iterations from the loop's definition: ``i < 5`` with ``i + 1``
from 0 runs its body in iterations 0 to 4 and tests the condition once more
in iteration 5; as in TF's trace, an op made dead (the body in iteration 5,
the ``Exit`` before it) runs no kernel and records nothing.
"""

import json
from collections import defaultdict

import pytest

import minitf as tf
from minitf.viz import dot, timeline
from minitf.viz.timeline_plot import _fitting_name
from tests.viz.test_dot import Picture

pytestmark = pytest.mark.timeout(60)

FRAME = "while/while_context"
LABEL = "while (frame while/while_context, parallel_iterations 10)"
LOOP_OPS = {
    "while/Enter", "while/Merge", "while/Less/y", "while/Less", "while/LoopCond",
    "while/Switch", "while/Identity", "while/add/y", "while/add", "while/NextIteration",
    "while/Exit",
}  # fmt: skip


def _loop(parallel_iterations=10):
    return tf.while_loop(
        lambda i: i < 5, lambda i: i + 1, [tf.constant(0)], parallel_iterations=parallel_iterations
    )


def _frame_cluster(picture, label):
    (name,) = [n for n, attrs in picture.cluster_attrs.items() if attrs.get("label") == label]
    return name


def test_a_loop_is_drawn_as_a_frame_cluster_with_a_bold_back_edge():
    _loop()
    picture = Picture(dot.graph_dot(tf.get_default_graph()))
    frame = _frame_cluster(picture, LABEL)
    assert picture.in_cluster(frame) == LOOP_OPS
    assert frame not in picture.clusters["Const"]
    ((source, target, attrs),) = [e for e in picture.edges if e[2].get("constraint") == "false"]
    assert (source, target) == ("while/NextIteration", "while/Merge")
    assert attrs["style"] == "bold" and attrs["label"].startswith("next iteration")
    # Inside the frame, labels leave out the loop's scope: the cluster says it.
    assert picture.label("while/LoopCond") == ["LoopCond"]


@pytest.mark.parametrize("collapse", [1, ["while"]])
def test_folding_a_loop_s_scope_keeps_its_frame_and_its_own_ops(collapse):
    _loop(parallel_iterations=3)
    picture = Picture(dot.graph_dot(tf.get_default_graph(), collapse=collapse))
    frame = _frame_cluster(picture, LABEL.replace("10", "3"))
    kept = {"while/Enter", "while/Merge", "while/LoopCond", "while/Switch", "while/NextIteration",
            "while/Exit"}  # fmt: skip
    assert picture.in_cluster(frame) == kept | {"while"}  # the body and condition: one box
    assert picture.label("while")[-1] == "(5 ops)"  # Less, Less/y, Identity, add, add/y
    assert ("while/NextIteration", "while/Merge") in [(a, b) for a, b, _ in picture.edges]


def test_nested_loops_are_nested_clusters_on_a_slide_too():
    def outer_body(i, total):
        inner = tf.while_loop(lambda j, t: j < 2, lambda j, t: (j + 1, t + 1), [0, total])
        return i + 1, inner[1]

    tf.while_loop(lambda i, t: i < 3, outer_body, [tf.constant(0), tf.constant(0)])
    for text in (dot.graph_dot(tf.get_default_graph()), dot.graph_dot(tf.get_default_graph(),
                                                                      slide=True)):  # fmt: skip
        picture = Picture(text)
        outer = _frame_cluster(picture, LABEL)
        inner = _frame_cluster(picture, LABEL.replace("while (frame while/", "while/while (frame "
                                                      "while/while/"))  # fmt: skip
        assert outer in [p for n, p in picture.clusters.items() if inner in p][0]
        inner_ops = picture.in_cluster(inner)
        assert inner_ops and all(n.startswith("while/while/") for n in inner_ops)
        # The inner loop's initial 0 is built in the outer body: in the outer frame only.
        assert "while/while/Const" in picture.in_cluster(outer) - inner_ops
        back = [(a, b) for a, b, attrs in picture.edges if attrs.get("constraint") == "false"]
        assert len(back) == 4 or text.startswith("digraph") and len(back) >= 2


def test_a_partitioned_step_draws_the_loop_on_its_task():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(2.0, name="w")
    with tf.device("/job:worker/task:0"):
        _, a = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * w),
                             [tf.constant(0), tf.constant(1.0)])  # fmt: skip
    picture = Picture(dot.partitioned_dot(tf.get_default_graph(), [a]))
    frame = _frame_cluster(picture, LABEL)
    assert "while/mul/Enter" in picture.in_cluster(frame)  # w's value enters every iteration
    assert all("worker" in "".join(picture.clusters[n]) for n in picture.in_cluster(frame))
    back = [(a, b) for a, b, attrs in picture.edges if attrs.get("constraint") == "false"]
    # i's cycle too: a is not fetched without the condition on i.
    assert sorted(back) == [("while/NextIteration", "while/Merge"),
                            ("while/NextIteration_1", "while/Merge_1")]  # fmt: skip


def test_a_trace_has_one_event_per_op_and_iteration():
    r = _loop()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        assert sess.run(r, options=options, run_metadata=metadata) == 5
    seen = defaultdict(list)
    for dev in metadata.step_stats.dev_stats:
        for node in dev.node_stats:
            if node["node_name"].startswith("while/"):
                seen[node["node_name"]].append(node.get("iteration"))
                assert node.get("frame", FRAME) == FRAME
    assert seen.pop("while/Enter") == [None]  # it runs outside, and starts iteration 0
    assert seen.pop("while/Exit") == [5]  # live only when the loop ends
    tests, body = list(range(6)), list(range(5))
    assert seen == {
        "while/Merge": tests, "while/Less/y": tests, "while/Less": tests,
        "while/LoopCond": tests, "while/Switch": tests,
        "while/Identity": body, "while/add/y": body, "while/add": body,
        "while/NextIteration": body,
    }  # fmt: skip
    chrome = json.loads(timeline.Timeline(metadata.step_stats).generate_chrome_trace_format())
    adds = [e["args"] for e in chrome["traceEvents"] if e.get("args", {}).get("node_name") ==
            "while/add"]  # fmt: skip
    assert [(a["iteration"], a["description"]) for a in adds] == [
        (n, f"iteration {n} of frame while") for n in body
    ]


def test_a_nested_loop_s_trace_says_the_outer_iteration():
    def outer_body(i):
        inner = tf.while_loop(lambda j: j < 2, lambda j: j + 1, [0])
        return i + inner

    r = tf.while_loop(lambda i: i < 4, outer_body, [tf.constant(0)])  # 2 outer iterations
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        assert sess.run(r, options=options, run_metadata=metadata) == 4
    adds = [
        (tuple(map(tuple, node.get("outer_iterations", []))), node["iteration"])
        for dev in metadata.step_stats.dev_stats
        for node in dev.node_stats
        if node["node_name"] == "while/while/add"
    ]
    outer = [((FRAME, 0),), ((FRAME, 0),), ((FRAME, 1),), ((FRAME, 1),)]
    assert adds == list(zip(outer, [0, 1, 0, 1]))


def test_the_timeline_picture_names_the_iteration_of_a_long_bar():
    assert _fitting_name("while/add", 100.0, 1.0, None, 3) == "while/add (iteration 3)"
    assert _fitting_name("rnn/while/add", 20.0, 1.0, None, 3) == "while/add, it. 3"
    assert _fitting_name("while/add", 100.0, 1.0) == "while/add"
