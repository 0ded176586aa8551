"""Queues and accumulators: throughput against baselines measured in the same run.

Prints one JSON line with:

* ``queue_elements_per_s``: a scalar float32 ``tf.FIFOQueue`` (capacity 1000)
  with one producer thread running ``enqueue`` and one consumer thread running
  ``dequeue``, each a ``Session.run`` per element; ``queue_us_per_element`` is
  its inverse. ``pyqueue_elements_per_s`` is Python's ``queue.Queue`` moving
  the same numpy scalars between two threads: the cost of the hand-off alone,
  without a graph;
* ``aggregation_gb_per_s``: a 1 MB float32 gradient (262,144 values) applied
  to a ``tf.ConditionalAccumulator`` (``reduction_type="SUM"``) by 4 producer
  threads (800 gradients in all) while a consumer thread runs ``take_grad(4)``
  until every gradient has been taken (bytes of gradient aggregated per
  second; a take may aggregate more than 4 when producers run ahead, so
  element 0 of every gradient is 1 and counts them);
  ``numpy_add_gb_per_s`` is ``np.add(total, grad, out=total)`` on the same
  arrays in one thread, and ``aggregation_fraction_of_numpy`` the ratio;
* ``apply_only_fraction_of_numpy``: one thread running ``apply_grad`` back to
  back, against the same numpy baseline — the accumulator's own cost, without
  the hand-offs between threads;
* ``aggregation_gb_per_s_by_producers`` and
  ``aggregation_fraction_of_numpy_by_producers``: the same aggregation with 1,
  2 and 4 producer threads; ``gradients_per_take_by_producers`` how many
  gradients a take aggregated on average;
* ``numpy_add_2_threads_gb_per_s``: two threads each running the numpy add
  into its own buffer — what the machine's cores give when adds run in
  parallel (the accumulator's producers add outside its lock);
* ``kernels_only_fraction_of_numpy``: the headline aggregation (4 producers,
  one consumer) with each thread calling the ``apply_grad`` and
  ``take_grad`` kernels directly instead of through ``Session.run``: what
  the accumulator itself reaches. The difference to
  ``aggregation_fraction_of_numpy`` is the session's cost per run (feeds,
  plan, step context, walk), paid while the interpreter lock is contended;
  ``session_apply_us`` and ``kernel_apply_us`` are one apply of a 16-value
  gradient each way, in one thread (the best of 5 timings).

The machine may be shared: each aggregation figure and the numpy baselines are
measured 5 times, one after the other, and the medians are reported.

BLAS and OpenMP are pinned to one thread. Run:
``.venv/bin/python benchmarks/dataflow.py``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import json  # noqa: E402
import queue  # noqa: E402
import statistics  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import minitf as tf  # noqa: E402
from minitf.runtime.core.plan import bind_kernel  # noqa: E402
from minitf.runtime.core.resource_mgr import ResourceMgr  # noqa: E402
from minitf.runtime.core.step_context import StepContext  # noqa: E402

QUEUE_ELEMENTS = 20_000
GRAD_VALUES = 262_144  # 1 MB of float32
PRODUCERS = 4  # the headline figure's producer threads
PRODUCER_COUNTS = (1, 2, 4)
GRADIENTS = 800  # gradients applied per measurement, split between the producers
REPEATS = 5


def _run_threads(targets) -> float:
    """Starts one thread per target, joins them all; returns the wall time."""
    threads = [threading.Thread(target=t) for t in targets]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
        if t.is_alive():
            raise RuntimeError("benchmark thread did not finish")
    return time.perf_counter() - start


def bench_queue() -> dict:
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(1000, tf.float32, shapes=[[]])
        x = tf.placeholder(tf.float32, [])
        sess = tf.Session(graph=graph)
        put = sess.make_callable(q.enqueue(x), [x])
        get = sess.make_callable(q.dequeue())
    value = np.float32(1.0)
    put(value)
    get()

    def produce():
        for _ in range(QUEUE_ELEMENTS):
            put(value)

    def consume():
        for _ in range(QUEUE_ELEMENTS):
            get()

    seconds = _run_threads([produce, consume])
    sess.close()
    rate = QUEUE_ELEMENTS / seconds

    plain: queue.Queue = queue.Queue(1000)

    def py_produce():
        for _ in range(QUEUE_ELEMENTS):
            plain.put(value)

    def py_consume():
        for _ in range(QUEUE_ELEMENTS):
            plain.get()

    py_rate = QUEUE_ELEMENTS / _run_threads([py_produce, py_consume])
    return {
        "queue_elements_per_s": round(rate),
        "queue_us_per_element": round(1e6 / rate, 1),
        "pyqueue_elements_per_s": round(py_rate),
    }


def _aggregate(apply, take, grad, producers: int) -> tuple[float, int]:
    """``producers`` threads apply `GRADIENTS` gradients while one thread takes them.

    Returns the wall time and the number of takes.
    """
    per_producer = GRADIENTS // producers

    def produce():
        for _ in range(per_producer):
            apply(grad)

    takes = []

    def consume():
        taken, total = 0, producers * per_producer
        while taken < total:
            # A take may aggregate more than PRODUCERS; never wait for more than remain.
            taken += int(take(min(PRODUCERS, total - taken))[0])
            takes.append(taken)

    seconds = _run_threads([produce] * producers + [consume])
    return seconds, len(takes)


def _numpy_add(grad, buffers: int) -> float:
    """GB/s of ``np.add(total, grad, out=total)``, one thread per buffer (the in-run baseline)."""
    totals = [np.zeros_like(grad) for _ in range(buffers)]
    counts = [0] * buffers

    def add(i):
        total, n, start = totals[i], 0, time.perf_counter()
        while n < 100 or time.perf_counter() - start < 0.1:
            np.add(total, grad, out=total)
            n += 1
        counts[i] = n

    seconds = _run_threads([lambda i=i: add(i) for i in range(buffers)])
    return sum(counts) * grad.nbytes / seconds / 1e9


def bench_aggregation() -> dict:
    grad = np.random.default_rng(0).random(GRAD_VALUES, dtype=np.float32)
    grad[0] = 1.0
    graph = tf.Graph()
    with graph.as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[GRAD_VALUES], reduction_type="SUM")
        g = tf.placeholder(tf.float32, [GRAD_VALUES])
        sess = tf.Session(graph=graph)
        # A local step far ahead keeps every gradient fresh: takes advance the
        # accumulator's global step, and stale gradients would be dropped.
        apply = sess.make_callable(acc.apply_grad(g, local_step=1 << 40), [g])
        required = tf.placeholder(tf.int32, [])
        take = sess.make_callable(acc.take_grad(required), [required])
    for _ in range(PRODUCERS):
        apply(grad)
    first = take(PRODUCERS)
    np.testing.assert_allclose(first, PRODUCERS * grad, rtol=1e-6)

    # The machine is shared: every figure is the median of REPEATS, each next to
    # its own baseline run.
    runs: dict[str, list[float]] = {}

    def note(key, value):
        runs.setdefault(key, []).append(value)

    for _ in range(REPEATS):
        note("numpy", _numpy_add(grad, 1))
        note("numpy_2", _numpy_add(grad, 2))
        for producers in PRODUCER_COUNTS:
            seconds, takes = _aggregate(apply, take, grad, producers)
            note(producers, GRADIENTS * grad.nbytes / seconds / 1e9)
            note(f"takes_{producers}", takes)
        start = time.perf_counter()
        for _ in range(GRADIENTS):
            apply(grad)
        note("apply_only", GRADIENTS * grad.nbytes / (time.perf_counter() - start) / 1e9)
        take(1)
    sess.close()

    median = {key: statistics.median(values) for key, values in runs.items()}
    numpy_gb_per_s = median["numpy"]
    return {
        "aggregation_gb_per_s": round(median[PRODUCERS], 2),
        "numpy_add_gb_per_s": round(numpy_gb_per_s, 2),
        "aggregation_fraction_of_numpy": round(median[PRODUCERS] / numpy_gb_per_s, 3),
        "apply_only_fraction_of_numpy": round(median["apply_only"] / numpy_gb_per_s, 3),
        "aggregation_gb_per_s_by_producers": {str(p): round(median[p], 2) for p in PRODUCER_COUNTS},
        "aggregation_fraction_of_numpy_by_producers": {
            str(p): round(median[p] / numpy_gb_per_s, 3) for p in PRODUCER_COUNTS
        },
        "gradients_per_take_by_producers": {
            str(p): round(GRADIENTS / median[f"takes_{p}"], 2) for p in PRODUCER_COUNTS
        },
        "numpy_add_2_threads_gb_per_s": round(median["numpy_2"], 2),
    }


class _Kernels:
    """An accumulator's ``apply_grad`` and ``take_grad`` kernels, called without a session.

    Args:
        values: The gradient's length.
    """

    def __init__(self, values: int):
        graph = tf.Graph()
        with graph.as_default():
            acc = tf.ConditionalAccumulator(tf.float32, shape=[values], reduction_type="SUM")
            g = tf.placeholder(tf.float32, [values])
            apply_op = acc.apply_grad(g, local_step=1 << 40)
            take_op = acc.take_grad(1).op
        resources = ResourceMgr()
        self._resource = bind_kernel(acc.accumulator_ref.op).compute(StepContext(resources))
        self._apply = bind_kernel(apply_op).compute
        self._take = bind_kernel(take_op).compute
        self._resources = resources
        self._step = np.int64(1 << 40)

    def apply(self, grad) -> None:
        """One ``apply_grad`` of ``grad`` (read-only, as a session feeds it)."""
        self._apply(StepContext(self._resources), self._resource, self._step, grad)

    def take(self, required: int) -> np.ndarray:
        """One ``take_grad(required)``: waits for its result as a session would."""
        arrived: queue.SimpleQueue = queue.SimpleQueue()
        self._take(StepContext(self._resources), arrived.put, self._resource, np.int32(required))
        result = arrived.get(timeout=600)
        if isinstance(result, BaseException):
            raise result
        return result


def _best_us(call, count: int = 20_000) -> float:
    """The best of 5 timings of ``count`` calls, in microseconds per call."""
    for _ in range(1_000):
        call()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            call()
        best = min(best, (time.perf_counter() - start) / count)
    return best * 1e6


def bench_kernels_only() -> dict:
    grad = np.random.default_rng(0).random(GRAD_VALUES, dtype=np.float32)
    grad[0] = 1.0
    fed = grad.view()
    fed.flags.writeable = False
    kernels = _Kernels(GRAD_VALUES)
    for _ in range(PRODUCERS):
        kernels.apply(fed)
    np.testing.assert_allclose(kernels.take(PRODUCERS), PRODUCERS * grad, rtol=1e-6)
    fractions = []
    for _ in range(REPEATS):
        baseline = _numpy_add(grad, 1)
        seconds, _ = _aggregate(kernels.apply, kernels.take, fed, PRODUCERS)
        fractions.append(GRADIENTS * grad.nbytes / seconds / 1e9 / baseline)

    small = np.ones(16, np.float32)
    small.flags.writeable = False
    graph = tf.Graph()
    with graph.as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[16], reduction_type="SUM")
        g = tf.placeholder(tf.float32, [16])
        with tf.Session(graph=graph) as sess:
            apply = sess.make_callable(acc.apply_grad(g, local_step=1 << 40), [g])
            session_us = _best_us(lambda: apply(small))
    kernels_small = _Kernels(16)
    kernel_us = _best_us(lambda: kernels_small.apply(small))
    return {
        "kernels_only_fraction_of_numpy": round(statistics.median(fractions), 3),
        "session_apply_us": round(session_us, 2),
        "kernel_apply_us": round(kernel_us, 2),
    }


def main() -> None:
    result = {"benchmark": "dataflow"}
    result.update(bench_queue())
    result.update(bench_aggregation())
    result.update(bench_kernels_only())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
