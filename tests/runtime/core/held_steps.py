"""Steps whose one waiting op completes when a test says so: who then makes their moves.

`start_held` starts a step of ``TestHeld`` (an op that waits until the test
calls its completion, taken from `HELD`) then ``TestNoteThread`` (which
notes in `THREADS` the thread it runs on) through `Executor.start`; with
``gate``, a ``TestGate`` between them holds the thread that runs it until
`GATE` is set. Used by `test_executor.py` and the speed-ups' `test_receiving.py`.
"""

import queue
import threading

import numpy as np

import minitf as tf
from minitf.framework.op_registry import get_kernel_def, register_compute
from minitf.runtime.core import pipeline
from minitf.runtime.core.executor import Executor
from minitf.runtime.core.plan import KernelInfo
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.core.step_context import StepContext

HELD: queue.SimpleQueue = queue.SimpleQueue()  # the completions of TestHeld ops, in order
THREADS: list[str] = []  # the threads TestNoteThread ran on
GATE = threading.Event()
GATE_REACHED = threading.Event()

if get_kernel_def("TestHeld") is None:

    @register_compute("TestHeld", is_async=True)
    def _held(ctx, done, x):
        HELD.put(done)

    @register_compute("TestNoteThread", stateful=True)
    def _note_thread(ctx, x):
        THREADS.append(threading.current_thread().name)
        return x

    @register_compute("TestGate", stateful=True)
    def _gate(ctx, x):
        GATE_REACHED.set()
        assert GATE.wait(20)
        return x


def _kernel(op):
    kernel_def = get_kernel_def(op.type)
    return KernelInfo(kernel_def.builder(op), kernel_def.is_async, kernel_def.stateful)


def _op(op_type: str, x):
    return tf.get_default_graph().create_op(op_type, [x], [tf.float32], shapes=[[]]).outputs[0]


def start_held(executor: Executor, gate: bool = False) -> queue.SimpleQueue:
    """Starts a held step on ``executor``; returns where its ``(values, error)`` goes at its end."""
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [], name="p")
        held = _op("TestHeld", p)
        if gate:
            held = _op("TestGate", held)
        plan = pipeline.build_plan([_op("TestNoteThread", held)], [], [p], _kernel)
    ended = queue.SimpleQueue()
    executor.start(plan, StepContext(ResourceMgr()), [np.float32(1.0)], lambda *r: ended.put(r))
    return ended


def start_held_twice(executor: Executor) -> queue.SimpleQueue:
    """Starts a step with two held ops, the first gated; returns where its end goes.

    The step's first completion (from `HELD`) runs ``TestGate``, which holds
    the thread that moves the step until `GATE` is set; the second
    completion comes while it is held.
    """
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [], name="p")
        first = _op("TestNoteThread", _op("TestGate", _op("TestHeld", p)))
        second = _op("TestNoteThread", _op("TestHeld", p))
        plan = pipeline.build_plan([first, second], [], [p], _kernel)
    ended = queue.SimpleQueue()
    executor.start(plan, StepContext(ResourceMgr()), [np.float32(1.0)], lambda *r: ended.put(r))
    return ended
