"""Takes docs/summaries.md's TensorBoard screenshots from a real run:
``PYTHONPATH=. python docs/img/tensorboard_pictures.py``.

A small CNN trains on a cluster of two ps tasks and a worker
(`LocalCluster`), its variables placed by ``tf.train.replica_device_setter``,
and writes its summaries and ``sess.graph`` with a ``tf.summary.FileWriter``.
TensorBoard (the ``tensorboard`` program beside this Python) serves the log
directory on loopback; headless Chromium at 1366x768 takes

* ``tensorboard_graph.png``: the *Graphs* tab coloured by device, with the
  ``global_step`` variable selected so its card shows its device;
* ``tensorboard_scalars.png``: the *Scalars* tab, the loss and the accuracy.

Each is taken at twice the page's pixel density and cut to the part that
matters, to be read on a projector.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import minitf as tf
from minitf.cluster import LocalCluster
from minitf.runtime.distributed.launcher import free_ports

HERE = Path(__file__).parent
SIZE = 8  # the images are SIZE x SIZE
PAGE = (1366, 768)

# Finds elements through the shadow roots of TensorBoard's Polymer components.
DEEP = """
function deep(pred, root = document, out = []) {
  for (const el of root.querySelectorAll('*')) {
    if (pred(el)) out.push(el);
    if (el.shadowRoot) deep(pred, el.shadowRoot, out);
  }
  return out;
}
const tagged = (tag) => deep(e => e.tagName === tag);
const labelled = (tag, re) => deep(e => e.tagName === tag && re.test(e.textContent))[0];
const sceneTransform = () => deep(e => e.id === 'root' && e.tagName === 'g')[0]
    .getAttribute('transform');
const chartLines = () => deep(e => e.tagName === 'path' && e.classList.contains('line'))
    .map(e => e.getAttribute('d') || '').join();
"""


def batch(rng: np.random.RandomState, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` noisy images of a bar: horizontal (label 0), vertical (1) or diagonal (2)."""
    labels = rng.randint(0, 3, n)
    images = rng.normal(0.0, 0.6, (n, SIZE, SIZE, 1)).astype(np.float32)
    for image, label, at in zip(images, labels, rng.randint(0, SIZE, n)):
        if label == 0:
            image[at, :, 0] += 1.0
        elif label == 1:
            image[:, at, 0] += 1.0
        else:
            image[np.arange(SIZE), np.arange(SIZE), 0] += 1.0
    return images, labels


def train(logdir: str, steps: int = 200) -> None:
    """Trains the CNN on a local cluster (2 ps, 1 worker), writing summaries to ``logdir``."""
    with LocalCluster({"ps": 2, "worker": 1}, output=None) as cluster:
        setter = tf.train.replica_device_setter(
            worker_device="/job:worker/task:0", cluster=cluster.cluster_spec
        )
        with tf.Graph().as_default(), tf.device(setter):
            images = tf.placeholder(tf.float32, [None, SIZE, SIZE, 1], name="images")
            labels = tf.placeholder(tf.int64, [None], name="labels")
            conv = tf.layers.conv2d(
                images, 8, 3, padding="same", activation=tf.nn.relu, name="conv1"
            )
            pool = tf.layers.max_pooling2d(conv, 2, 2, name="pool1")
            logits = tf.layers.dense(tf.layers.flatten(pool), 3, name="logits")
            loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
            step = tf.train.get_or_create_global_step()
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
            correct = tf.equal(tf.argmax(logits, 1), labels)
            accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
            with tf.name_scope("summaries"):
                tf.summary.scalar("loss", loss)
                tf.summary.scalar("accuracy", accuracy)
                tf.summary.histogram("logits", logits)
            merged = tf.summary.merge_all()
            rng = np.random.RandomState(0)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                writer = tf.summary.FileWriter(logdir, sess.graph)
                for i in range(steps):
                    x, y = batch(rng, 32)
                    summary, _ = sess.run([merged, train_op], {images: x, labels: y})
                    writer.add_summary(summary, i)
                writer.close()


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"):
        options.add_argument(flag)
    chrome = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    width, height = PAGE
    chrome.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 2, "mobile": False},
    )
    return chrome


def _until(chrome, script: str, what: str, timeout: float = 60):
    """Waits until ``script`` (run after `DEEP`) returns something true; returns it."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(chrome, timeout, poll_frequency=0.2).until(
        lambda b: b.execute_script(DEEP + script), message=f"TensorBoard never showed {what}"
    )


def _settled(chrome, script: str, what: str) -> None:
    """Waits until ``script``'s value stops changing (an animation has ended)."""
    seen = [None]

    def same() -> bool:
        now = chrome.execute_script(DEEP + script)
        settled, seen[0] = now == seen[0], now
        return settled

    _until_true(same, what)


def _until_true(condition, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"TensorBoard was not done with {what} in {timeout} s")
        time.sleep(0.3)  # an animation's frames: nothing to wait on but time


def _save(chrome, name: str, box: tuple[int, int, int, int]) -> None:
    """Saves the page's CSS-pixel ``box`` (left, top, right, bottom) as ``name``."""
    from io import BytesIO

    from PIL import Image

    shot = Image.open(BytesIO(chrome.get_screenshot_as_png()))
    scale = shot.width / PAGE[0]
    shot.crop(tuple(round(v * scale) for v in box)).save(HERE / name, optimize=True)


def graph_picture(chrome, url: str) -> None:
    """The *Graphs* tab coloured by device, ``global_step``'s card open."""
    chrome.get(url + "#graphs")
    device = "labelled('PAPER-RADIO-BUTTON', /^\\s*Device\\s*$/)"
    _until(
        chrome,
        f"return {device} && deep(e => e.classList.contains('node')).length > 10",
        "the graph",
    )
    chrome.execute_script(DEEP + f"{device}.click();")
    selected = "global_step/(global_step)"  # TensorBoard's name for the op inside its scope
    chrome.execute_script(DEEP + f"tagged('TF-GRAPH-BOARD')[0].set('selectedNode', '{selected}');")
    _until(chrome, "return deep(e => e.classList.contains('device')).length > 0", "the card")
    _settled(chrome, "return sceneTransform();", "the selection")
    chrome.execute_script(DEEP + "tagged('TF-GRAPH')[0].fit();")
    _settled(chrome, "return sceneTransform();", "the fit")
    _save(chrome, "tensorboard_graph.png", (338, 68, PAGE[0], 716))


def scalars_picture(chrome, url: str) -> None:
    """The *Scalars* tab: the loss and the accuracy, step by step."""
    chrome.get(url + "#scalars")
    _until(chrome, "return tagged('TF-SCALAR-CARD').length === 2", "two charts")
    # The whole curves, not clipped to the middle of their values.
    chrome.execute_script(DEEP + "labelled('PAPER-CHECKBOX', /outliers/).click();")
    _until(chrome, "return chartLines().length > 0", "the curves")
    _settled(chrome, "return chartLines();", "the curves")
    box = chrome.execute_script(
        DEEP + "const r = tagged('TF-SCALAR-CARD').map(c => c.getBoundingClientRect());"
        "return [r[0].left, r[0].top, r[1].right, r[1].bottom];"
    )
    _save(chrome, "tensorboard_scalars.png", (box[0] - 12, box[1] - 12, box[2] + 12, box[3] + 4))


def main() -> None:
    logdir = tempfile.mkdtemp(prefix="minitf-tensorboard-")
    train(logdir + "/cnn")
    (port,) = free_ports(1)
    tensorboard = Path(sys.executable).with_name("tensorboard")
    server = subprocess.Popen(
        [str(tensorboard), "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    chrome = _browser()
    try:
        url = f"http://127.0.0.1:{port}/"
        _until_true(lambda: _serves(url), "the server")
        graph_picture(chrome, url)
        scalars_picture(chrome, url)
    finally:
        chrome.quit()
        server.terminate()
        server.wait(10)
        shutil.rmtree(logdir)


def _serves(url: str) -> bool:
    from urllib.error import URLError
    from urllib.request import urlopen

    try:
        with urlopen(url + "data/runs", timeout=2) as response:
            return b"cnn" in response.read()
    except (URLError, ConnectionError):
        return False


if __name__ == "__main__":
    main()
