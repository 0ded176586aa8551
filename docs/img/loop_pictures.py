"""Draws docs/loops.md's pictures from real runs: ``PYTHONPATH=. python docs/img/loop_pictures.py``.

* ``loop_graph.png``: the ``while_loop`` lesson's graph (``x = w ** 5``), as a slide;
* ``loop_nested.png``: a loop in a loop, as a slide;
* ``loop_partitioned.png``: the lesson's step, partitioned between ps 0 and worker 0;
* ``loop_stepper_page.png``: the stepper's page on the lesson (a simulated cluster),
  after ``until iteration 2 of while`` and three moves, at 1366x768 in headless Chromium.
"""

from __future__ import annotations

import importlib.util
import io
import shutil
import tempfile
import time
from pathlib import Path

import minitf as tf
from minitf.stepper import lessons
from minitf.stepper.web import StepperPage
from minitf.viz import dot, render

HERE = Path(__file__).parent
LESSON = lessons.load("while_loop")


def _lesson_script():
    """The lesson's script as a module (its ``build`` makes the graph)."""
    spec = importlib.util.spec_from_file_location("while_loop", LESSON.script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png(text: str, name: str) -> None:
    (HERE / f"{name}.png").write_bytes(render.to_format(text, "png"))


def graphs() -> None:
    """The three graph pictures."""
    with tf.Graph().as_default() as graph:
        _, x = _lesson_script().build()
        _png(dot.graph_dot(graph, slide=True), "loop_graph")
        cluster = {"ps": 1, "worker": 1}
        _png(dot.partitioned_dot(graph, [x], cluster=cluster, slide=True), "loop_partitioned")
    with tf.Graph().as_default() as graph:

        def outer_body(i, total):
            _, inner = tf.while_loop(lambda j, t: j < 2, lambda j, t: (j + 1, t + i), [0, total])
            return i + 1, inner

        tf.while_loop(lambda i, t: i < 3, outer_body, [tf.constant(0), tf.constant(0)])
        _png(dot.graph_dot(graph, slide=True), "loop_nested")


def page() -> None:
    """The stepper's page on the lesson, in the loop's third iteration."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    stepper = lessons.start(LESSON, output=io.StringIO())
    profile = tempfile.TemporaryDirectory()
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--user-data-dir={profile.name}", "--window-size=1366,768"):  # fmt: skip
        options.add_argument(flag)
    chrome = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    with StepperPage(stepper, title="while_loop.py (lesson while_loop)") as served:
        try:
            served.command("until iteration 2 of while")
            for _ in range(3):
                served.command("next")
            chrome.get(served.url)
            deadline = time.monotonic() + 60
            script = "return document.querySelectorAll('#overview g.node.this-iteration').length"
            while not chrome.execute_script(script) and time.monotonic() < deadline:
                time.sleep(0.2)  # the page draws the state it is sent
            time.sleep(0.5)
            chrome.save_screenshot(str(HERE / "loop_stepper_page.png"))
        finally:
            chrome.quit()
            stepper.continue_()
            stepper.close()
            profile.cleanup()


if __name__ == "__main__":
    graphs()
    page()
