"""The helpers that let a tutorial run as a script and as a notebook."""

import pytest

import minitf as tf
from minitf import notebook, viz

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("value", "quick"), [(None, False), ("", False), ("0", False), ("1", True), ("yes", True)]
)
def test_quick_follows_the_environment_variable(monkeypatch, value, quick):
    if value is None:
        monkeypatch.delenv("MINITF_QUICK", raising=False)
    else:
        monkeypatch.setenv("MINITF_QUICK", value)
    assert notebook.quick() is quick
    assert notebook.sized(200, 20) == (20 if quick else 200)


def test_out_dir_is_made_under_minitf_out_or_the_variable(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MINITF_OUT", raising=False)
    assert notebook.out_dir("05_x") == (tmp_path / "minitf_out" / "05_x").resolve()
    assert (tmp_path / "minitf_out" / "05_x").is_dir()
    monkeypatch.setenv("MINITF_OUT", str(tmp_path / "elsewhere"))
    assert notebook.out_dir("06_y").is_dir()
    assert notebook.out_dir("06_y") == (tmp_path / "elsewhere" / "06_y").resolve()


def test_show_names_a_file_in_a_script_and_refuses_what_it_cannot_show(tmp_path, capsys):
    assert not notebook.in_notebook()
    picture = tmp_path / "p.svg"
    picture.write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    notebook.show(picture, caption="the picture")
    assert capsys.readouterr().out == f"the picture\n  picture: {picture}\n"
    with pytest.raises(FileNotFoundError, match="no file"):
        notebook.show(tmp_path / "missing.png")
    text = tmp_path / "notes.txt"
    text.write_text("x")
    with pytest.raises(TypeError, match="not an .svg or .png"):
        notebook.show(text)
    with pytest.raises(TypeError, match="not int"):
        notebook.show(3)


def test_show_accepts_a_graph_picture_and_a_figure(capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with tf.Graph().as_default():
        tf.constant(1.0, name="c")
        notebook.show(viz.draw())
    fig, _ = plt.subplots()
    notebook.show(fig)
    plt.close(fig)
    out = capsys.readouterr().out
    assert "a picture: run this tutorial as a notebook" in out
    assert "a plot: run this tutorial as a notebook" in out


def test_show_sends_a_figure_made_without_pyplot_to_a_notebook_as_png(monkeypatch):
    # plot_timeline returns such a figure; IPython has no formatter for it
    # unless pyplot set up the inline backend, and would show only its repr.
    from IPython import display as ipython_display
    from matplotlib.figure import Figure

    shown = []
    monkeypatch.setattr(notebook, "in_notebook", lambda: True)
    monkeypatch.setattr(ipython_display, "display", shown.append)
    fig = Figure(figsize=(2, 1))
    fig.add_subplot().plot([0, 1], [1, 0])
    notebook.show(fig)
    (image,) = shown
    assert isinstance(image, ipython_display.Image)
    assert image.data.startswith(b"\x89PNG")
