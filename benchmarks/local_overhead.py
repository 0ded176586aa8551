"""Local session overhead: minitf beside TensorFlow 1.x and hand-written numpy, in the same run.

The same three workloads run on minitf, and with ``--tf-python`` on TensorFlow
1.x (``tf.compat.v1``, in a subprocess started with that interpreter, this
script with ``--framework tf``):

* ``chain100_runs_per_s``: ``Session.run`` calls per second of a chain of 100
  scalar adds fed from a placeholder (the plan is built once; the 100 adds run
  every call), and ``chain100_us_per_run``;
* ``mlp_steps_per_s``: training steps per second of a 784-128-10 MLP, batch 64,
  float32, plain SGD through ``GradientDescentOptimizer.minimize``, run with
  ``sess.make_callable``; ``mlp_feed_dict_steps_per_s``: the same step as TF1
  users write it, ``sess.run(train, feed_dict={x: ..., y: ...})``
  (``mlp_feed_dict_vs_tf``: its ratio to TensorFlow's, target at least 1.2);
* ``assign_read_gb_per_s``: a 64 MB float32 variable assigned from a feed and
  read back per iteration (bytes in plus bytes out over time). The assign
  copies the fed array into the variable's own array (in place, as TF's
  ``Assign`` does when nothing else holds the variable's value: the caller
  may change the array it fed after the run, so the variable must not keep
  it), and the read copies the value into a new array the caller owns: two
  copies per iteration, like the baseline, plus the 64 MB the caller gets.

TensorFlow's figures are ``tf_chain100_runs_per_s``, ``tf_mlp_steps_per_s`` and
``tf_assign_read_gb_per_s``, and ``mlp_vs_tf`` is minitf's MLP rate over
TensorFlow's (target: at least 1.2). With ``--tf-python`` the two frameworks
take turns, `ROUNDS` times, and each figure is the median of its rounds: the
machine's speed drifts over seconds, and the two figures of a ratio should
be measured side by side. ``mlp_vs_tf_by_round`` is the ratio of each round.
Both frameworks get one thread per op pool
(``ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)``)
and BLAS pinned to one thread.

The MLP also runs as a script that sets nothing would run it, each framework
choosing its own threads (no ``ConfigProto``, no BLAS variable), in a
subprocess per framework and round: ``mlp_defaults_steps_per_s``,
``tf_mlp_defaults_steps_per_s`` and their ratio ``mlp_defaults_vs_tf``.

Baselines measured in the same run, in numpy:

* ``numpy_mlp_steps_per_s``: the MLP step written by hand (the same matrix
  products the graph computes); ``mlp_ratio_numpy_over_minitf`` is its rate
  over minitf's (1.0 means no overhead);
* ``matmul_limit_steps_per_s``: the step's five matrix products alone, the
  most any framework calling the same BLAS can reach, and
  ``mlp_fraction_of_matmul_limit``: minitf's MLP rate over it.

``minimize``'s default ``GATE_OP`` gating also builds the gradient of the
input, ``dh @ w1.T``, but reaches it only through a control edge: TF's graph
optimizer turns it into a ``NoOp`` (its step stats list five ``MatMul`` s),
and so does minitf's plan (`minitf.runtime.core.graph_optimizer.unread_ops`). Neither the
baselines nor the frameworks compute it.
* ``numpy_copy_gb_per_s``: two ``np.copyto`` of the assign+read arrays.

What a steady MLP step allocates, seen by ``tracemalloc`` (minitf only):
``mlp_alloc_bytes_per_step`` is the step's high point of traced memory above
what was traced before it (everything the step allocates that is alive at the
same time: the values of its ops and a kernel's temporaries);
``mlp_allocs_per_step`` is the number of blocks the step has allocated and
still holds when its last op has run (its values and the objects holding
them).

Run: ``.venv/bin/python benchmarks/local_overhead.py [--tf-python PATH]``.
"""

from __future__ import annotations

import os
import sys

BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
DEFAULTS = "--defaults" in sys.argv  # each framework's own threads: set nothing
if not DEFAULTS:
    for _var in BLAS_ENV:
        os.environ[_var] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

BATCH, INPUTS, HIDDEN, CLASSES = 64, 784, 128, 10
ASSIGN_FLOATS = 16 * 1024 * 1024  # 64 MB of float32


def _framework(name: str):
    """``minitf``, or TensorFlow's ``tf.compat.v1`` with graph-mode behaviour."""
    if name == "minitf":
        import minitf as tf

        return tf
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    return tf


def _session(tf, graph):
    if DEFAULTS:
        return tf.Session(graph=graph)
    config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    return tf.Session(graph=graph, config=config)


def _rate(fn, min_seconds: float = 1.0, min_iters: int = 20) -> float:
    """Calls ``fn`` repeatedly for at least ``min_seconds``; returns calls per second.

    The best of three windows: the machine is shared, and a window another
    program slowed down says nothing about the code.
    """
    fn()
    best = 0.0
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while n < min_iters or time.perf_counter() - start < min_seconds / 3:
            fn()
            n += 1
        best = max(best, n / (time.perf_counter() - start))
    return best


def bench_chain(tf) -> float:
    """``Session.run`` calls per second of a 100-add chain fed from a placeholder."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = x
        for _ in range(100):
            y = y + 1.0
        sess = _session(tf, graph)
    feed = {x: 1.0}
    assert sess.run(y, feed) == 101.0
    rate = _rate(lambda: sess.run(y, feed))
    sess.close()
    return rate


def mlp_data() -> tuple:
    """The MLP's batch, labels and initial weights (the same on both frameworks)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, INPUTS)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=BATCH).astype(np.int64)
    w1 = (rng.standard_normal((INPUTS, HIDDEN)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((HIDDEN, CLASSES)) * 0.05).astype(np.float32)
    return x, labels, w1, w2


def mlp_step(tf, x_val, labels, w1_val, w2_val, feed_dict: bool = False):
    """The MLP's training step as a callable (``make_callable``), and its session.

    With ``feed_dict``, the step is ``sess.run(train, feed_dict={x: ..., y: ...})``,
    the loop TF1 users write.
    """
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, INPUTS])
        y = tf.placeholder(tf.int64, [None])
        w1 = tf.Variable(w1_val)
        b1 = tf.Variable(tf.zeros([HIDDEN]))
        w2 = tf.Variable(w2_val)
        b2 = tf.Variable(tf.zeros([CLASSES]))
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        sess = _session(tf, graph)
        sess.run(tf.global_variables_initializer())
    if feed_dict:
        return (lambda: sess.run(train, feed_dict={x: x_val, y: labels})), sess
    step = sess.make_callable(train, [x, y])
    return (lambda: step(x_val, labels)), sess


def bench_mlp(tf, data, feed_dict: bool = False) -> float:
    """Training steps per second of the MLP (``sess.run`` with a feed dict, or a callable)."""
    step, sess = mlp_step(tf, *data, feed_dict=feed_dict)
    rate = _rate(step)
    sess.close()
    return rate


def bench_assign_read(tf) -> float:
    """GB/s of a 64 MB variable assigned from a feed and read back (bytes in plus out)."""
    value = np.random.default_rng(0).random(ASSIGN_FLOATS, dtype=np.float32)
    graph = tf.Graph()
    with graph.as_default():
        var = tf.Variable(tf.zeros([ASSIGN_FLOATS]))
        new = tf.placeholder(tf.float32, [ASSIGN_FLOATS])
        assign = tf.assign(var, new)
        sess = _session(tf, graph)
        sess.run(var.initializer)
    read = sess.make_callable(var, [])
    write = sess.make_callable(assign.op, [new])

    def iteration():
        write(value)
        return read()

    assert np.array_equal(iteration(), value)
    rate = _rate(iteration, min_iters=5)
    sess.close()
    return rate * 2 * value.nbytes / 1e9


def bench_numpy_copy() -> float:
    """GB/s of the assign+read baseline: two ``np.copyto`` of 64 MB."""
    value = np.random.default_rng(0).random(ASSIGN_FLOATS, dtype=np.float32)
    a, b = np.empty_like(value), np.empty_like(value)

    def iteration():
        np.copyto(a, value)
        np.copyto(b, a)

    return _rate(iteration, min_iters=5) * 2 * value.nbytes / 1e9


def _numpy_step(x, labels, w1, w2):
    """The MLP step by hand: returns ``step()`` (which updates the weights) and its products."""
    w1, w2 = w1.copy(), w2.copy()
    b1, b2 = np.zeros(HIDDEN, np.float32), np.zeros(CLASSES, np.float32)
    lr = np.float32(0.01)
    rows = np.arange(BATCH)

    def step():
        nonlocal w1, w2, b1, b2
        h = x @ w1 + b1
        a = np.maximum(h, 0)
        logits = a @ w2 + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        probs = exp / exp.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(exp.sum(axis=1)) - shifted[rows, labels])
        dlogits = probs
        dlogits[rows, labels] -= 1
        dlogits /= np.float32(BATCH)
        dw2 = a.T @ dlogits
        db2 = dlogits.sum(axis=0)
        da = dlogits @ w2.T
        dh = da * (h > 0)
        dw1 = x.T @ dh
        db1 = dh.sum(axis=0)
        w1, w2 = w1 - lr * dw1, w2 - lr * dw2
        b1, b2 = b1 - lr * db1, b2 - lr * db2
        return loss, (a, dlogits, dh)

    return step


def bench_numpy_mlp(data) -> float:
    """Steps per second of the MLP step written by hand in numpy."""
    return _rate(_numpy_step(*data))


def bench_matmul_limit(data) -> float:
    """Steps per second of the step's five matrix products alone (operands from a real step)."""
    x, labels, w1, w2 = data
    _, (a, dlogits, dh) = _numpy_step(*data)()

    def products():
        x @ w1  # hidden layer
        a @ w2  # logits
        dlogits @ w2.T  # gradient of the hidden activations
        a.T @ dlogits  # gradient of w2
        x.T @ dh  # gradient of w1

    return _rate(products)


def mlp_allocations(data, steps: int = 10) -> dict:
    """What a steady minitf MLP step allocates, seen by tracemalloc (see the module docstring).

    The blocks still held when the step's last op has run are counted where the
    step object hands its values to the fetches (``execution.fetched``, called
    with the step's value slots still alive).
    """
    from minitf.runtime.core import execution as executor

    step, sess = mlp_step(_framework("minitf"), *data)
    for _ in range(20):
        step()
    fetched = executor.fetched
    at_end = []

    def fetched_at_end(plan, vals):
        at_end.append(tracemalloc.take_snapshot())
        return fetched(plan, vals)

    blocks, peaks = [], []
    tracemalloc.start()
    executor.fetched = fetched_at_end
    try:
        for _ in range(steps):
            before = tracemalloc.take_snapshot()
            tracemalloc.reset_peak()
            start = tracemalloc.get_traced_memory()[0]
            step()
            peaks.append(tracemalloc.get_traced_memory()[1] - start)
            held = at_end.pop().compare_to(before, "filename")
            blocks.append(sum(stat.count_diff for stat in held))
    finally:
        executor.fetched = fetched
        tracemalloc.stop()
        sess.close()
    return {
        "mlp_allocs_per_step": int(np.median(blocks)),
        "mlp_alloc_bytes_per_step": int(np.median(peaks)),
    }


ROUNDS = 3
"""How many times each framework runs the workloads when TensorFlow is measured too."""


def blas_threads() -> list[int]:
    """The thread pool sizes of the BLAS libraries loaded in this process."""
    import threadpoolctl

    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


def _medians(rounds: list[dict]) -> dict:
    """Each figure's median over ``rounds`` (dicts with the same keys)."""
    keys = [key for key, value in rounds[0].items() if isinstance(value, (int, float))]
    return {key: float(np.median([r[key] for r in rounds])) for key in keys}


def framework_figures(name: str) -> dict:
    """The three workloads on one framework."""
    tf = _framework(name)
    return {
        "chain100_runs_per_s": bench_chain(tf),
        "mlp_steps_per_s": bench_mlp(tf, mlp_data()),
        "mlp_feed_dict_steps_per_s": bench_mlp(tf, mlp_data(), feed_dict=True),
        "assign_read_gb_per_s": bench_assign_read(tf),
    }


def side_figures(python: str, framework: str = "tf", defaults: bool = False) -> dict:
    """A framework's figures, measured now by this script run with ``python``.

    Args:
        python: The interpreter.
        framework: ``"tf"`` or ``"minitf"``.
        defaults: Only the MLP, with nothing set: no ``ConfigProto`` and no
            BLAS variable in the subprocess's environment.

    Raises:
        RuntimeError: if the subprocess fails (its stderr is in the message).
    """
    command = [python, os.path.abspath(__file__), "--framework", framework]
    env = dict(os.environ)
    if defaults:
        from minitf.runtime.speedups.intra_op import (
            USER_ENV,  # every variable that sets BLAS threads
        )

        command.append("--defaults")
        for name in USER_ENV:
            env.pop(name, None)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"the {framework} side failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def parse_args(argv=None) -> argparse.Namespace:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="a Python interpreter with tensorflow installed")
    parser.add_argument(
        "--framework",
        choices=["minitf", "tf"],
        help="only measure the three workloads on this framework and print them "
        "(how the TensorFlow side runs)",
    )
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="with --framework: only the MLP, with each framework's own thread pools",
    )
    args = parser.parse_args(argv)
    if args.defaults and args.framework is None:
        # The pins are skipped at import when --defaults is given: the whole
        # benchmark would run unpinned and be compared with pinned figures.
        parser.error("--defaults measures one framework's MLP: give --framework too")
    return args


def main(argv=None) -> None:
    """Measures minitf, the numpy baselines and, with ``--tf-python``, TensorFlow; prints JSON."""
    args = parse_args(argv)
    if args.framework is not None:
        if args.defaults:
            tf = _framework(args.framework)
            figures = {"mlp_steps_per_s": bench_mlp(tf, mlp_data())}
            if args.framework == "minitf":  # TF's matrix products are not numpy's
                figures["blas_threads"] = blas_threads()
            print(json.dumps(figures))
        else:
            print(json.dumps(framework_figures(args.framework)))
        return
    data = mlp_data()
    mine, theirs, mine_unset, theirs_unset = [], [], [], []
    for _ in range(ROUNDS if args.tf_python else 1):
        mine.append(framework_figures("minitf"))
        mine_unset.append(side_figures(sys.executable, "minitf", defaults=True))
        if args.tf_python:
            theirs.append(side_figures(args.tf_python))
            theirs_unset.append(side_figures(args.tf_python, defaults=True))
    minitf = _medians(mine)
    unset = _medians(mine_unset)["mlp_steps_per_s"]
    limit = bench_matmul_limit(data)
    by_hand = bench_numpy_mlp(data)
    result = {
        "benchmark": "local_overhead",
        "chain100_runs_per_s": round(minitf["chain100_runs_per_s"]),
        "chain100_us_per_run": round(1e6 / minitf["chain100_runs_per_s"], 1),
        "mlp_steps_per_s": round(minitf["mlp_steps_per_s"]),
        "mlp_feed_dict_steps_per_s": round(minitf["mlp_feed_dict_steps_per_s"]),
        "numpy_mlp_steps_per_s": round(by_hand),
        "mlp_ratio_numpy_over_minitf": round(by_hand / minitf["mlp_steps_per_s"], 3),
        "matmul_limit_steps_per_s": round(limit),
        "mlp_fraction_of_matmul_limit": round(minitf["mlp_steps_per_s"] / limit, 3),
        "assign_read_gb_per_s": round(minitf["assign_read_gb_per_s"], 2),
        "numpy_copy_gb_per_s": round(bench_numpy_copy(), 2),
        "mlp_defaults_steps_per_s": round(unset),
    }
    result.update(mlp_allocations(data))
    if args.tf_python:
        tf = _medians(theirs)
        result.update(
            {
                "tf_chain100_runs_per_s": round(tf["chain100_runs_per_s"]),
                "tf_mlp_steps_per_s": round(tf["mlp_steps_per_s"]),
                "tf_assign_read_gb_per_s": round(tf["assign_read_gb_per_s"], 2),
                "mlp_vs_tf": round(minitf["mlp_steps_per_s"] / tf["mlp_steps_per_s"], 3),
                "tf_mlp_feed_dict_steps_per_s": round(tf["mlp_feed_dict_steps_per_s"]),
                "mlp_feed_dict_vs_tf": round(
                    minitf["mlp_feed_dict_steps_per_s"] / tf["mlp_feed_dict_steps_per_s"], 3
                ),
                "mlp_vs_tf_by_round": [
                    round(m["mlp_steps_per_s"] / t["mlp_steps_per_s"], 3)
                    for m, t in zip(mine, theirs)
                ],
            }
        )
        tf_unset = _medians(theirs_unset)["mlp_steps_per_s"]
        result["tf_mlp_defaults_steps_per_s"] = round(tf_unset)
        result["mlp_defaults_vs_tf"] = round(unset / tf_unset, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
