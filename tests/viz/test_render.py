"""Writing pictures: DOT always; SVG and PNG when Graphviz is installed (./run installs it)."""

import pytest

import minitf as tf
from minitf.viz import dot, render

pytestmark = pytest.mark.timeout(60)


def _picture() -> str:
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(1.0, name="w")
    with tf.device("/job:worker/task:0"):
        tf.multiply(w, 2.0, name="y")
    return dot.graph_dot(tf.get_default_graph())


def test_write_saves_dot_and_the_pictures_dot_can_make(tmp_path, graphviz):
    written = render.write(_picture(), tmp_path / "views" / "whole")
    assert (tmp_path / "views" / "whole.dot").read_text().startswith("digraph minitf {")
    svg = (tmp_path / "views" / "whole.svg").read_text()
    assert "<svg" in svg and ">w<" in svg.replace("\n", "")
    assert (tmp_path / "views" / "whole.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(written) == 3


def test_write_without_dot_keeps_the_text_and_says_how_to_install(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(render, "dot_available", lambda: False)
    written = render.write(_picture(), tmp_path / "whole")
    assert [p.name for p in written] == ["whole.dot"]
    assert "apt-get install graphviz" in caplog.text
    with pytest.raises(FileNotFoundError, match="graphviz"):
        render.to_format("digraph {}", "svg")


def test_picture_shows_inline_as_svg(graphviz):
    picture = render.GraphPicture(_picture())
    bundle = picture._repr_mimebundle_()
    assert bundle["text/plain"] == picture.source
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")


def test_an_inline_picture_shrinks_to_the_page_but_keeps_its_proportions(graphviz):
    import re

    svg = render.GraphPicture(_picture())._repr_svg_()
    (root,) = re.findall(r"<svg\b[^>]*>", svg)
    assert 'style="max-width: 100%; height: auto"' in root
    # The natural size stays (a small picture is not blown up), and the viewBox
    # lets the browser scale the drawing as one.
    assert re.search(r'width="\d+pt"', root) and re.search(r'viewBox="[\d. -]+"', root)


def test_picture_without_dot_shows_its_text(monkeypatch):
    monkeypatch.setattr(render, "dot_available", lambda: False)
    bundle = render.GraphPicture(_picture())._repr_mimebundle_()
    assert "image/svg+xml" not in bundle


def test_bad_dot_text_is_reported_with_dots_message(graphviz):
    with pytest.raises(RuntimeError, match="dot -Tsvg failed"):
        render.to_format("digraph { a -> }", "svg")
