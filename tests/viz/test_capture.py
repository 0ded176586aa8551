"""minitf render: the graph a script builds, captured at its first session and drawn."""

import subprocess
import sys
import textwrap

import pytest

import minitf as tf
from minitf.viz.capture import graph_of_script

pytestmark = pytest.mark.timeout(60)

SCRIPT = textwrap.dedent(
    """
    import sys
    import minitf as tf
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(2.0, name="w")
    with tf.device("/job:worker/task:0"):
        y = tf.multiply(w, float(sys.argv[1]), name="y")
    with tf.Session() as sess:
        raise SystemExit("the script must stop at its first session")
    """
)


def test_graph_of_script_stops_at_the_first_session(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    graph = graph_of_script(str(script), ["3"])
    names = {op.name for op in graph.get_operations()}
    assert {"w", "y"} <= names
    assert graph.get_operation_by_name("y").device == "/job:worker/task:0"
    with tf.Session(graph=graph) as sess:  # sessions work again afterwards
        assert sess.graph is graph


def test_minitf_render_writes_every_view(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    out = tmp_path / "pictures"
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "render", "--out", str(out), str(script), "--", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for name in ("whole", "ps_task0", "worker_task0", "partitioned"):
        assert (out / f"{name}.dot").exists()
    partitioned = (out / "partitioned.dot").read_text()
    assert partitioned.count("style=bold") == 1  # w's value crosses from ps to worker


def test_minitf_render_draws_an_exported_graph(tmp_path):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(2.0, name="w")
    with tf.device("/job:worker/task:0"), tf.name_scope("model"):
        tf.multiply(w, 3.0, name="y")
    tf.train.export_meta_graph(str(tmp_path / "graph.json"))
    out = tmp_path / "pictures"
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "render", "--graph-def", str(tmp_path / "graph.json"),
         "--view", "whole", "--collapse", "model", "--formats", "", "--out", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["whole.dot"]
    text = (out / "whole.dot").read_text()
    assert '"w"' in text and '"model/y"' not in text  # model/ is folded into one box


def test_minitf_render_needs_a_script_or_a_graph_file(tmp_path):
    for args in ([], ["--graph-def", str(tmp_path / "missing.json"), "script.py"]):
        done = subprocess.run(
            [sys.executable, "-m", "minitf.cli", "render", *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2 and "SCRIPT or --graph-def" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "render", "--graph-def", str(tmp_path / "no.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "does not exist" in done.stderr


def test_minitf_render_says_where_its_options_go(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "-m", "minitf.cli", "render", str(script), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "options go before the script" in done.stderr


def test_minitf_render_cuts_the_step_given_by_targets(tmp_path):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(2.0, name="w")
    with tf.device("/job:worker/task:0"):
        tf.multiply(w, 3.0, name="y")
        tf.add_to_collection("my_step", tf.add(w, 1.0, name="z").op)
    tf.train.export_meta_graph(str(tmp_path / "graph.json"))

    graph_file, out = str(tmp_path / "graph.json"), str(tmp_path / "out")

    def render(*args):
        return subprocess.run(
            [sys.executable, "-m", "minitf.cli", "render", "--graph-def", graph_file,
             "--view", "partitioned", "--formats", "", "--out", out, *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    assert render("--targets", "y").returncode == 0
    text = (tmp_path / "out" / "partitioned.dot").read_text()
    assert '"y"' in text and '"z"' not in text
    assert render("--targets", "my_step").returncode == 0
    text = (tmp_path / "out" / "partitioned.dot").read_text()
    assert '"z"' in text and '"y"' not in text
    done = render("--targets", "nothing")
    assert done.returncode == 2 and "'nothing' is neither an op nor a collection" in done.stderr
