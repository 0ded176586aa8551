"""``tf.train.Server``: one task of a cluster, reachable over authenticated TCP.

A server *is* a task (``/job:ps/replica:0/task:0``). What the task does —
its `ResourceMgr`, its rendezvous, the partitions clients registered, the
steps it runs — is its `minitf.runtime.distributed.worker.Worker`, plain methods that
know nothing of sockets. The server is the transport that carries calls to
them: a listener on the task's cluster address that accepts authenticated
connections (`minitf.runtime.distributed.wire`) from clients and from the other tasks,
and outgoing connections for the tensors its ``_Send`` ops push.

Each connection has a reader thread. A request that cannot wait — a run whose
partition has no op that may block — runs on that thread; one that may block
(a dequeue, a ``_Recv``) is started on the task's loop and holds no thread
while it waits, so the connection keeps carrying replies, tensors and aborts.

Messages are tuples whose first element names them; each is one `Worker` call:

===============================================  ================================
``("hello", call)``                               → the cluster and this task's name
``("register", call, partition)``                 → a handle for the partition
``("run", call, handle, step, feeds, ms, trace,`` → the fetched values (and, when
``carry)``                                        traced, the step's op stats), or
                                                  the error; with ``carry``, the
                                                  tensors for the client's task
                                                  that the run's last ops sent
``("tensor", step, key, value)``                  a ``_Send`` from another task
``("abort", step, code, message)``                cancel the step here
``("clock", call)``                               → this task's clock (µs), for traces
``("accumulators", call, since)``                 → the task's accumulators and their history
``("stepper_state", call)``                       → held steps and resources (`minitf step`)
``("stepper_grant", call, step, kind, op, s)``    → one move made, state settled
``("stepper_settle", call, s)``                   → True once every step is held still
``("stepper_hold", call, held, breakpoints)``     hold or release; break before matching ops
``("trace_start", call)``                         → a recording id: trace every step
``("trace_stop", call, id)``                      → the recording's op stats
===============================================  ================================
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from minitf.framework import errors
from minitf.runtime.core import config as config_lib
from minitf.runtime.distributed import simulation, task_defaults
from minitf.runtime.distributed.cluster_spec import ClusterSpec, server_def
from minitf.runtime.distributed.connect import (
    error_message,
    listen,
    parse_address,
    serve_in_process,
    stop_serving_in_process,
)
from minitf.runtime.distributed.peers import Peers
from minitf.runtime.distributed.runners import Runners
from minitf.runtime.distributed.wire import MalformedMessage, Wire, WireListener
from minitf.runtime.distributed.worker import Worker
from minitf.runtime.speedups import allocator, intra_op
from minitf.runtime.speedups.receiving import receiving

if TYPE_CHECKING:
    from minitf.runtime.core.config import ConfigProto
    from minitf.runtime.core.scheduler import Scheduler

logger = logging.getLogger("minitf")


LISTEN_PATIENCE_SECS = 5.0
"""How long a server tries a port in use again before it fails (`Server.start`)."""

RECORDING_PATIENCE_SECS = 10.0
"""How long a task's process waits at exit for a `Tracer` to collect what it recorded."""


def _wait_for_recordings_at_exit(server: weakref.ref) -> None:
    """At the exit of a task's process: let a tracer collect what the task recorded."""
    alive = server()
    if alive is not None:
        alive.wait_for_recordings()


class Server:
    """``tf.train.Server``: an in-process server for one task of a cluster.

    Args:
        server_or_cluster_def: A `ClusterSpec`, a dict accepted by it, a
            ``ClusterDef`` or a ``server_def`` dict from another server.
        job_name: This task's job; may be omitted if the cluster has one job.
        task_index: This task's index; may be omitted if the job has one task.
        protocol: ``"grpc"`` (accepted; minitf's transport is used) or None.
        config: A ``tf.ConfigProto`` default for sessions on this server. Its
            ``intra_op_parallelism_threads`` sets the process's BLAS threads;
            0 (the default) shares the machine's cores among the cluster's
            tasks on it (`minitf.runtime.speedups.intra_op`). Its
            ``inter_op_parallelism_threads`` is how many of the task's steps
            may move at once (0, the default: the machine's cores).
        start: Start listening now.
        scheduler: minitf's: the `minitf.runtime.core.scheduler.Scheduler` that
            chooses every move of the steps this task runs (default: the one
            `minitf.runtime.distributed.task_defaults.set_task_defaults` gives, else free-running).
        straggler: minitf's: makes this worker slow, an object whose
            ``next_delay()`` gives the seconds a step waits before it computes
            gradients (a `minitf.cluster.delays.Straggler`; default: the one
            `minitf.runtime.distributed.task_defaults.set_task_defaults` gives, else None).

    Raises:
        ValueError: if the job or task is missing or ambiguous, or
            ``intra_op_parallelism_threads`` is negative.
    """

    def __init__(
        self,
        server_or_cluster_def: ClusterSpec | dict,
        job_name: str | None = None,
        task_index: int | None = None,
        protocol: str | None = None,
        config: ConfigProto | None = None,
        start: bool = True,
        *,
        scheduler: Scheduler | None = None,
        straggler: Any = None,
    ):
        cluster, job_name, task_index = task_defaults.resolve_role(
            server_or_cluster_def, job_name, task_index, protocol
        )
        self._job = job_name
        self._task = int(task_index)
        self._config = config
        self._cluster = cluster
        # In a simulated cluster's client the task is the simulation's worker, which
        # the in-process transport reaches (`minitf.runtime.distributed.in_process`).
        self._simulation = simulation.current()
        if self._simulation is not None:
            self.worker = self._simulation.serve(cluster, job_name, self._task)
            return
        # The matrix products' threads: the machine's cores shared among its tasks.
        intra_op.configure(config, cluster, job_name, self._task)
        address = cluster.task_address(job_name, self._task)
        self._requested_address = parse_address(address)
        task_name = f"/job:{job_name}/replica:0/task:{self._task}"
        if straggler is None and task_defaults.TaskDefaults.straggler is not None:
            straggler = task_defaults.TaskDefaults.straggler(job_name, self._task)
        if straggler is not None:
            logger.info("%s is a straggler: %r", task_name, getattr(straggler, "model", straggler))
        if scheduler is None and task_defaults.TaskDefaults.scheduler is not None:
            scheduler = task_defaults.TaskDefaults.scheduler(job_name, self._task)
        threads = config_lib.inter_op_threads(config)  # TF's inter-op pool
        self.worker = Worker(task_name, scheduler, straggler, inter_op_threads=threads)
        self._peers: Peers | None = None
        self._recordings_of: dict[Wire, set[int]] = {}  # by the connection that started them
        self._steps_of: dict[Wire, set[int]] = {}  # steps running for each connection
        self._stepper_wires: set[Wire] = set()  # connections a stepper moves this task over
        self._listener: WireListener | None = None
        self._wires: set[Wire] = set()
        self._runners = Runners(f"minitf-run{task_name}")
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._recordings_changed = threading.Condition(self._lock)
        if start:
            self.start()

    # -- TF's interface ------------------------------------------------------------------

    @property
    def target(self) -> str:
        """The session target of this server: ``"grpc://host:port"`` (``tf.Session(target)``)."""
        if self._simulation is not None:
            return self._simulation.target(self._job, self._task)
        host, port = self._address()
        return f"grpc://{host}:{port}"

    @property
    def server_def(self) -> dict:
        """A ``ServerDef``-like dict: the cluster, this job and task, the protocol."""
        return server_def(self._cluster, self._job, self._task)

    @property
    def task_name(self) -> str:
        """``/job:<job>/replica:0/task:<i>``."""
        return self.worker.task_name

    @property
    def resource_mgr(self):
        """The task's variables, queues and accumulators (its worker's)."""
        return self.worker.resource_mgr

    @property
    def rendezvous(self):
        """Where tensors sent to this task wait (its worker's)."""
        return self.worker.rendezvous

    @property
    def recorders(self):
        """The task's trace recordings (its worker's)."""
        return self.worker.recorders

    @property
    def straggler(self):
        """This task's straggler (a `minitf.cluster.delays.Straggler`), or None."""
        return self.worker.straggler

    def start(self) -> None:
        """Starts listening on this task's address (idempotent)."""
        if self._simulation is not None:
            return  # nothing to listen on: the simulation holds the task
        # A task runs steps all its life: its freed memory is kept for the next step.
        allocator.keep_freed_memory()
        with self._lock:
            if self._listener is not None:
                return
            self._listener = listen(self._requested_address, self.task_name, LISTEN_PATIENCE_SECS)
            host, port = self._address()
            if self._requested_address[1] == 0:  # "localhost:0": publish the real port
                jobs = self._cluster.as_dict()
                jobs[self._job][self._task] = f"{host}:{port}"  # a list, or a dict by index
                self._cluster = ClusterSpec(jobs)
            self._peers = Peers(self._cluster, self.worker, self.task_name)
            self.worker.transport = self._peers
            threading.Thread(
                target=self._accept_loop, name=f"minitf-accept{self.task_name}", daemon=True
            ).start()
        serve_in_process(f"{host}:{port}", self.worker)
        atexit.register(_wait_for_recordings_at_exit, weakref.ref(self))
        logger.info("started %s on %s", self.task_name, self.target)

    def wait_for_recordings(self, patience: float | None = None) -> bool:
        """Waits until no client records this task's steps (a `Tracer`), or ``patience`` passes.

        A task whose script ends while a tracer records it would take its
        recorded ops with it. When it is stopped, or at the exit of its
        process, a server waits, up to `RECORDING_PATIENCE_SECS`, for the
        tracers to collect them.

        Args:
            patience: The longest wait in seconds (default: `RECORDING_PATIENCE_SECS`).

        Returns:
            True if no recording is left.
        """
        deadline = time.monotonic() + (RECORDING_PATIENCE_SECS if patience is None else patience)
        with self._lock:
            while any(self._recordings_of.values()) and not self._stopped.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._recordings_changed.wait(remaining)
            return True

    def join(self) -> None:
        """Blocks until the server stops (a ps task's main thread waits here)."""
        if self._simulation is not None:
            return self._simulation.join_server()  # until every other client has ended
        self._stopped.wait()

    def stop(self) -> None:
        """Stops the server: closes its listener and connections, cancels running steps.

        A server that a `Tracer` records first waits for it to collect what it
        recorded (`wait_for_recordings`): a worker script that stops its server
        when training ends must not take its recorded ops with it.
        """
        if self._simulation is not None:
            return
        if not self._stopped.is_set():
            self.wait_for_recordings()
        with self._lock:
            if self._stopped.is_set():
                return
            # Forgotten before it is marked stopped: no master finds a stopped worker.
            stop_serving_in_process("{}:{}".format(*self._address()), self.worker)
            self._stopped.set()
            listener, self._listener = self._listener, None
            wires = list(self._wires)
        if listener is not None:
            listener.close()
        for wire in wires:
            wire.close()
        self.worker.cancel_all()
        if self._peers is not None:
            self._peers.close()

    @staticmethod
    def create_local_server(config: ConfigProto | None = None, start: bool = True) -> Server:
        """A single-task cluster on a free local port (``tf.train.Server.create_local_server``).

        Args:
            config: A ``tf.ConfigProto`` default for sessions on the server.
            start: Start listening now.
        """
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config, start=start)

    @property
    def cluster(self) -> ClusterSpec:
        """The cluster this task belongs to (with the real port of a ``:0`` address)."""
        return self._cluster

    def _address(self) -> tuple[str, int]:
        if self._listener is None:
            return self._requested_address
        host = self._requested_address[0]
        return host, self._listener.address[1]

    # -- connections ---------------------------------------------------------------------

    def _accept_loop(self) -> None:
        listener = self._listener
        while listener is not None and not self._stopped.is_set():
            try:
                sock, peer = listener.accept_socket()
            except OSError:
                return
            threading.Thread(
                target=self._serve,
                args=(listener, sock, peer),
                daemon=True,
                name=f"minitf-conn{self.task_name}",
            ).start()

    def _serve(self, listener: WireListener, sock, peer: str) -> None:
        wire = listener.authenticate(sock, peer)
        if wire is None:
            return
        with self._lock:
            if self._stopped.is_set():
                wire.close()
                return
            self._wires.add(wire)
        try:
            while True:
                try:
                    message = wire.recv()
                except (EOFError, OSError):
                    return
                except MalformedMessage as exc:
                    self._refuse(wire, None, exc)
                    continue
                except Exception:  # noqa: BLE001 - a wire closed under recv raises TypeError
                    if not self._stopped.is_set():
                        logger.warning("%s: a connection failed", self.task_name, exc_info=True)
                    return
                try:
                    self._dispatch(wire, message)
                except Exception as exc:  # noqa: BLE001 - the message was not a request
                    call = message[1] if _is_request(message) else None
                    self._refuse(wire, call, exc)
        finally:
            with self._lock:
                self._wires.discard(wire)
                # A client gone without stopping its recordings (a Tracer in a
                # process that died) must not leave every later step traced.
                orphans = self._recordings_of.pop(wire, set())
                self._recordings_changed.notify_all()
                running = self._steps_of.pop(wire, set())
                stepped = wire in self._stepper_wires
                self._stepper_wires.discard(wire)
            for rid in orphans:
                self.worker.stop_recording(rid)
            for step_id in running:
                # Its master is gone (a client killed mid-step): nobody would
                # send the step's tensors or read its results, as when TF's
                # RunGraph call is cancelled.
                self.worker.abort_step(
                    step_id,
                    errors.CancelledError(
                        None, None, f"the master of step {step_id:x} ({wire.peer}) went away"
                    ),
                )
            if stepped:
                # Its stepper is gone: nobody would move the held steps again.
                self.worker.stepping.hold(False, [])
            wire.close()

    def _refuse(self, wire: Wire, call: int | None, exc: BaseException) -> None:
        """Answers a message that is not a well-formed request; the connection goes on."""
        text = f"{self.task_name}: malformed request from {wire.peer}: {exc}"
        logger.warning("%s", text)
        self._reply(wire, ("error", call, errors.INVALID_ARGUMENT, text, None))

    def _dispatch(self, wire: Wire, message: tuple) -> None:
        """Calls the worker method a message names; replies with its result or its error.

        Raises:
            TypeError, ValueError, IndexError: if the message is not a request.
        """
        if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
            raise TypeError(f"a request is a tuple that starts with its kind, not {message!r:.80}")
        kind, worker = message[0], self.worker
        if kind in ("tensor", "tensors", "abort"):
            with receiving():  # a step they let go on goes on here if the task's loop is idle
                if kind == "tensor":
                    _, step_id, key, value = message
                    worker.deliver_tensor(step_id, key, value)
                elif kind == "tensors":
                    _, step_id, items = message
                    for key, value in items:
                        worker.deliver_tensor(step_id, key, value)
                else:
                    _, step_id, code, text = message
                    error = errors.exception_type_from_error_code(code)(None, None, text)
                    worker.abort_step(step_id, error)
        elif kind == "run":
            if len(message) != 8:
                raise ValueError(f"a run request has 8 fields, not {len(message)}")
            if not worker.may_block(message[2]):
                self._run(wire, message)
            elif message[6] or not self._start(wire, message):
                self._runners.start(self._run, wire, message)
        elif kind == "register":
            self._call(wire, message[1], worker.register_graph, message[2])
        elif kind == "hello":
            self._reply(wire, ("ok", message[1], (self._cluster.as_dict(), self._job, self._task)))
        elif kind == "accumulators":
            self._call(wire, message[1], worker.accumulators, message[2])
        elif kind.startswith("stepper_"):  # stepper_state, _grant, _settle, _hold
            with self._lock:
                self._stepper_wires.add(wire)
            name = kind[len("stepper_") :]
            method = None if name.startswith("_") else getattr(worker.stepping, name, None)
            if method is None:
                raise ValueError(f"unknown request {kind!r}")
            self._call(wire, message[1], method, *message[2:])
        elif kind == "clock":
            self._call(wire, message[1], worker.clock_micros)
        elif kind == "trace_start":
            rid = worker.start_recording()
            with self._lock:
                self._recordings_of.setdefault(wire, set()).add(rid)
            self._reply(wire, ("ok", message[1], rid))
        elif kind == "trace_stop":
            self._call(wire, message[1], worker.stop_recording, message[2])
            with self._lock:
                self._recordings_of.get(wire, set()).discard(message[2])
                self._recordings_changed.notify_all()
        else:
            raise ValueError(f"unknown request {kind!r}")

    def _call(self, wire: Wire, call: int, method, *args) -> None:
        try:
            reply = ("ok", call, method(*args))
        except Exception as exc:  # noqa: BLE001 - reported to the client
            reply = ("error", call, *error_message(exc))
        self._reply(wire, reply)

    def _reply(self, wire: Wire, message: tuple) -> None:
        try:
            wire.send(message)
        except OSError:
            pass  # the client is gone; nothing to tell

    # -- running partitions --------------------------------------------------------------

    def _run(self, wire: Wire, message: tuple) -> None:
        _, call, handle, step_id, feed_values, timeout_ms, traced, _ = message
        self._track(wire, step_id)
        try:
            values, nodes = self.worker.run_graph(handle, step_id, feed_values, timeout_ms, traced)
            reply = _ok(call, values)
            if nodes is not None:
                reply = (*reply, nodes)
        except Exception as exc:  # noqa: BLE001 - reported to the client
            reply = ("error", call, *error_message(exc))
        finally:
            self._untrack(wire, step_id)
        self._reply(wire, reply)

    def _track(self, wire: Wire, step_id: int) -> None:
        """Notes a step run for the client at ``wire`` (aborted if that client goes away)."""
        with self._lock:
            self._steps_of.setdefault(wire, set()).add(step_id)

    def _untrack(self, wire: Wire, step_id: int) -> None:
        with self._lock:
            self._steps_of.get(wire, set()).discard(step_id)

    def _start(self, wire: Wire, message: tuple) -> bool:
        """Starts an untraced run with ops that wait, holding no thread (`Worker.start_graph`).

        Its reply goes out from the thread that ends it: this one, or the
        one that delivers its last tensor. When the client runs its own
        task's part in its process (``carry``), the tensors the run's last
        ops send to that task go with the reply: one message, and one
        thread woken there, instead of two. Returns False, having done
        nothing, for a run that needs a runner.
        """
        _, call, handle, step_id, feed_values, timeout_ms, _, carry = message
        self._track(wire, step_id)

        def done(values, error, carried=None):
            self._untrack(wire, step_id)
            if error is not None:
                self._reply(wire, ("error", call, *error_message(error)))
            elif carried:
                self._reply(wire, (*_ok(call, values), None, carried))
            else:
                self._reply(wire, _ok(call, values))

        if self.worker.start_graph(handle, step_id, feed_values, timeout_ms, done, bool(carry)):
            return True
        self._untrack(wire, step_id)
        return False

    def __repr__(self) -> str:
        return f"<tf.train.Server {self.task_name} at {self.target}>"


def _is_request(message: Any) -> bool:
    """Whether ``message`` carries a call id a reply can name."""
    return isinstance(message, tuple) and len(message) > 1 and isinstance(message[1], int)


def _ok(call: int, values: list) -> tuple:
    """The reply to a run that ended well: its fetched values, as they cross the wire."""
    return ("ok", call, [_wire_value(v) for v in values])


def _wire_value(value: Any) -> Any:
    """What crosses the wire for a fetched value: arrays (a read-only one is fine)."""
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value
