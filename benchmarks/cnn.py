"""Training speed of the small MNIST CNN: minitf, TensorFlow and plain numpy, one thread each.

The model (TF's "Deep MNIST" tutorial): conv 5x5x32 + ReLU + 2x2 max pool,
conv 5x5x64 + ReLU + 2x2 max pool, dense 1024 + ReLU, dense 10, softmax cross
entropy, plain gradient descent; batches of 50 synthetic 28x28x1 images fed
each step. Prints one JSON line with ``steps_per_s`` for:

* ``minitf``: the model written with ``import minitf as tf``;
* ``tf``: the same program under ``tensorflow.compat.v1``, when
  ``--tf-python PATH`` names a Python with TensorFlow (run as a subprocess,
  ``intra_op_parallelism_threads=1``, ``inter_op_parallelism_threads=1``);
* ``cores_used``: the process's CPU time over the wall time of the timed steps
  (1.0: one core busy throughout);
* ``numpy``: the same forward and backward pass written by hand in numpy
  (im2col, one matrix product per convolution and per gradient).

All three run with ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``OPENBLAS_NUM_THREADS`` set to 1.

Run: ``.venv/bin/python benchmarks/cnn.py [--steps N] [--tf-python /tmp/tfvenv/bin/python]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402

BATCH = 50
WARMUP = 3
LEARNING_RATE = 0.01


def _data(steps: int):
    rng = np.random.RandomState(0)
    images = rng.rand(steps + WARMUP, BATCH, 28, 28, 1).astype(np.float32)
    labels = rng.randint(0, 10, (steps + WARMUP, BATCH)).astype(np.int32)
    return images, labels


def _initial_weights():
    rng = np.random.RandomState(1)
    shapes = {
        "w1": (5, 5, 1, 32),
        "b1": (32,),
        "w2": (5, 5, 32, 64),
        "b2": (64,),
        "w3": (7 * 7 * 64, 1024),
        "b3": (1024,),
        "w4": (1024, 10),
        "b4": (10,),
    }
    return {
        k: (rng.randn(*s) * 0.05).astype(np.float32) if k[0] == "w" else np.full(s, 0.1, np.float32)
        for k, s in shapes.items()
    }


def build_model(tf):
    """The CNN in the graph API of ``tf`` (minitf or tensorflow.compat.v1)."""
    init = _initial_weights()
    v = {k: tf.Variable(value, name=k) for k, value in init.items()}
    x = tf.placeholder(tf.float32, [BATCH, 28, 28, 1])
    y = tf.placeholder(tf.int32, [BATCH])
    h = tf.nn.conv2d(x, v["w1"], [1, 1, 1, 1], "SAME")
    h = tf.nn.max_pool(tf.nn.relu(tf.nn.bias_add(h, v["b1"])), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf.nn.conv2d(h, v["w2"], [1, 1, 1, 1], "SAME")
    h = tf.nn.max_pool(tf.nn.relu(tf.nn.bias_add(h, v["b2"])), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    h = tf.reshape(h, [BATCH, 7 * 7 * 64])
    h = tf.nn.relu(tf.matmul(h, v["w3"]) + v["b3"])
    logits = tf.matmul(h, v["w4"]) + v["b4"]
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
    return x, y, loss, train


def run_graph(tf, steps: int, config=None) -> dict:
    """Trains ``steps`` steps after a warm-up; returns steps/s and the first and last loss."""
    images, labels = _data(steps)
    with tf.Graph().as_default():
        x, y, loss, train = build_model(tf)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            losses = []
            for i in range(WARMUP):
                losses.append(sess.run([loss, train], {x: images[i], y: labels[i]})[0])
            start, cpu_start = time.perf_counter(), time.process_time()
            for i in range(WARMUP, WARMUP + steps):
                losses.append(sess.run([loss, train], {x: images[i], y: labels[i]})[0])
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
    return {
        "steps_per_s": steps / seconds,
        "cores_used": round(cpu / seconds, 2),
        "first_loss": float(losses[0]),
        "last_loss": float(losses[-1]),
    }


# --- the hand-written numpy baseline ---------------------------------------------------------


def _im2col(x: np.ndarray, k: int) -> np.ndarray:
    pad = (k - 1) // 2, k // 2
    xp = np.pad(x, ((0, 0), pad, pad, (0, 0)))
    windows = sliding_window_view(xp, (k, k), axis=(1, 2))  # N, H, W, C, k, k
    return windows.reshape(-1, x.shape[3] * k * k)


def _conv_forward(x, w):
    k, _, c, o = w.shape
    cols = _im2col(x, k)
    out = cols @ w.transpose(2, 0, 1, 3).reshape(c * k * k, o)
    return out.reshape(x.shape[:3] + (o,)), cols


def _conv_backward(x_shape, w, cols, grad):
    k, _, c, o = w.shape
    g = grad.reshape(-1, o)
    dw = (cols.T @ g).reshape(c, k, k, o).transpose(1, 2, 0, 3)
    taps = (g @ w.reshape(-1, o).T).reshape(grad.shape[:3] + (k, k, c))
    pad = (k - 1) // 2
    dxp = np.zeros((x_shape[0], x_shape[1] + k - 1, x_shape[2] + k - 1, c), grad.dtype)
    for i in range(k):
        for j in range(k):
            dxp[:, i : i + x_shape[1], j : j + x_shape[2]] += taps[:, :, :, i, j]
    return dxp[:, pad : pad + x_shape[1], pad : pad + x_shape[2]], dw


def _pool_forward(x):
    n, h, w, c = x.shape
    blocks = x.reshape(n, h // 2, 2, w // 2, 2, c)
    out = blocks.max(axis=(2, 4))
    mask = blocks == out[:, :, None, :, None, :]
    return out, mask


def _pool_backward(mask, grad):
    # The first maximum of each window takes the gradient (TF's choice).
    n, h2, _, w2, _, c = mask.shape
    out = np.zeros(mask.shape, grad.dtype)
    taken = np.zeros(grad.shape, bool)
    for a in range(2):
        for b in range(2):
            first = mask[:, :, a, :, b, :] & ~taken
            taken |= first
            out[:, :, a, :, b, :] = grad * first
    return out.reshape(n, h2 * 2, w2 * 2, c)


def numpy_step(p: dict, x: np.ndarray, labels: np.ndarray) -> float:
    """One forward/backward/update step of the CNN on ``p`` (updated in place); returns the loss."""
    c1, cols1 = _conv_forward(x, p["w1"])
    r1 = np.maximum(c1 + p["b1"], 0)
    p1, m1 = _pool_forward(r1)
    c2, cols2 = _conv_forward(p1, p["w2"])
    r2 = np.maximum(c2 + p["b2"], 0)
    p2, m2 = _pool_forward(r2)
    flat = p2.reshape(BATCH, -1)
    r3 = np.maximum(flat @ p["w3"] + p["b3"], 0)
    logits = r3 @ p["w4"] + p["b4"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -np.mean(log_probs[np.arange(BATCH), labels])
    dlogits = probs
    dlogits[np.arange(BATCH), labels] -= 1
    dlogits /= BATCH
    grads = {"w4": r3.T @ dlogits, "b4": dlogits.sum(axis=0)}
    d3 = (dlogits @ p["w4"].T) * (r3 > 0)
    grads["w3"], grads["b3"] = flat.T @ d3, d3.sum(axis=0)
    dp2 = (d3 @ p["w3"].T).reshape(p2.shape)
    dr2 = _pool_backward(m2, dp2) * (r2 > 0)
    grads["b2"] = dr2.sum(axis=(0, 1, 2))
    dp1, grads["w2"] = _conv_backward(p1.shape, p["w2"], cols2, dr2)
    dr1 = _pool_backward(m1, dp1) * (r1 > 0)
    grads["b1"] = dr1.sum(axis=(0, 1, 2))
    _, grads["w1"] = _conv_backward(x.shape, p["w1"], cols1, dr1)
    for k, g in grads.items():
        p[k] -= LEARNING_RATE * g
    return float(loss)


def run_numpy(steps: int) -> dict:
    images, labels = _data(steps)
    p = _initial_weights()
    losses = [numpy_step(p, images[i], labels[i]) for i in range(WARMUP)]
    start = time.perf_counter()
    for i in range(WARMUP, WARMUP + steps):
        losses.append(numpy_step(p, images[i], labels[i]))
    seconds = time.perf_counter() - start
    return {"steps_per_s": steps / seconds, "first_loss": losses[0], "last_loss": losses[-1]}


def run_tf(steps: int) -> dict:
    """The model under TensorFlow's ``compat.v1`` API, one thread (run by TF's Python)."""
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    return run_graph(tf, steps, config)


def _tf_in_subprocess(python: str, steps: int) -> dict:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run(
        [python, __file__, "--steps", str(steps), "--only-tf"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _best(runs: list[dict]) -> dict:
    """The fastest of several rounds (the one least disturbed by other work on the machine)."""
    return max(runs, key=lambda run: run["steps_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; best is kept")
    parser.add_argument("--tf-python", default=None, help="a Python with TensorFlow installed")
    parser.add_argument("--only-tf", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only_tf:
        print(json.dumps(run_tf(args.steps)))
        return
    import minitf

    runs = {"minitf": [], "numpy": [], "tf": []}
    for _ in range(args.rounds):
        runs["minitf"].append(run_graph(minitf, args.steps))
        runs["numpy"].append(run_numpy(args.steps))
        if args.tf_python:
            runs["tf"].append(_tf_in_subprocess(args.tf_python, args.steps))
    result = {"steps": args.steps, "batch": BATCH, "rounds": args.rounds}
    result.update({name: _best(found) for name, found in runs.items() if found})
    for other in ("tf", "numpy"):
        if other in result:
            ratio = result["minitf"]["steps_per_s"] / result[other]["steps_per_s"]
            result[f"minitf_over_{other}"] = round(ratio, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
