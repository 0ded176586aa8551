"""What a stepper asks of one task: `Stepping`, its held steps and resources, one move at a time.

The task's `minitf.runtime.core.held_scheduler.HeldScheduler` holds every
step; `Stepping` reads their state as data and grants them moves. A
server carries these calls over the wire (the ``stepper_*`` messages); a
local session's stepper calls them directly.
"""

from __future__ import annotations

from minitf.framework import errors
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.distributed import partition as partition_lib


class Stepping:
    """What a stepper asks of one task: its held steps, its resources, one move at a time.

    A task's `Worker` serves these calls over the wire; a local session's
    stepper calls them directly.

    Args:
        task_name: The task's name.
        scheduler: The task's `minitf.runtime.core.held_scheduler.HeldScheduler`.
        resource_mgr: The task's resources.
        graphs: Returns the graphs whose ops may run on the task (for `known_ops`).
    """

    def __init__(self, task_name: str, scheduler, resource_mgr: ResourceMgr, graphs=None):
        self.task_name = task_name
        self._scheduler = scheduler
        self._resource_mgr = resource_mgr
        self.graphs = graphs or list  # returns the graphs whose ops may run here

    def known_ops(self) -> list[tuple[str, str]]:
        """``(name, type)`` of every op of the graphs clients registered here: what may run."""
        return sorted({(op.name, op.type) for g in self.graphs() for op in g.get_operations()})

    def state(self, limit: int = 16) -> dict:
        """``{"task", "held", "steps": [describe_execution(...)], "resources": [...]}``.

        Args:
            limit: Queue elements shown per queue; variables with more numbers
                show only their shape (`ResourceMgr.describe`).

        Raises:
            FailedPreconditionError: if the task was not started for stepping.
        """
        scheduler = self._held()
        return {
            "task": self.task_name,
            "held": scheduler.held,
            # By id: the same order in every run (ids are deterministic, arrival is not).
            "steps": [describe_execution(e) for _, e in sorted(scheduler.executions().items())],
            "resources": self._resource_mgr.describe(limit),
        }

    def grant(self, step_id: int, kind: int, index: int, timeout: float) -> bool:
        """Lets one held step make one move; waits until it has (True) or ``timeout`` passes.

        Args:
            step_id: The held step.
            kind: ``RUN`` or ``DELIVER``.
            index: The index of the op in the step's plan.
            timeout: Seconds to wait for the move.
        """
        scheduler = self._held()
        scheduler.grant(step_id, (kind, index))
        return scheduler.settle(timeout)

    def settle(self, timeout: float) -> bool:
        """Waits until every step here is held still (True), or ``timeout`` passes.

        Args:
            timeout: Seconds to wait.
        """
        return self._held().settle(timeout)

    def hold(self, held: bool, breakpoints: list[str] | None = None) -> None:
        """Holds or releases every step here; released steps stop at ``breakpoints``.

        Args:
            held: True holds every step, False releases them.
            breakpoints: Op-name patterns at which released steps stop, or None to keep the current
                ones.
        """
        scheduler = self._held()
        if breakpoints is not None:
            scheduler.set_breakpoints(breakpoints)
        scheduler.hold(held)

    def log(self, since: int = 0) -> list[tuple[int, int, str]]:
        """The moves made here from the ``since``-th on: ``(step id, RUN or DELIVER, op name)``.

        Every move is logged, free-running ones too, so a stepper can replay
        this task's part of a run move for move.

        Args:
            since: How many moves to skip (those already seen).
        """
        return list(self._held().log[since:])

    def moves(self) -> int:
        """How many moves were made here so far (the length of `log`)."""
        return len(self._held().log)

    def step_graph(self, step_id: int) -> dict:
        """The ops held step ``step_id`` runs here, as data an observer draws.

        Returns ``{"nodes": [NodeDesc], "ops": [op name]}``: the nodes rebuild
        the ops with `minitf.runtime.distributed.partition.import_partition` (with the
        ops they read from outside the step), and ``ops`` names the step's
        own, in the order they run.

        Args:
            step_id: A step running here.

        Raises:
            ValueError: if no such step runs here.
        """
        execution = self._held().executions().get(step_id)
        if execution is None:
            raise ValueError(f"no step {step_id} is running on {self.task_name}")
        ops = [step.op for step in execution.steps]
        return {"nodes": partition_lib.describe_ops(ops), "ops": [op.name for op in ops]}

    def _held(self):
        if not hasattr(self._scheduler, "grant"):
            raise errors.FailedPreconditionError(
                None,
                None,
                f"{self.task_name} cannot be stepped: start its process under `minitf step` "
                "(or give its Server or Session a HeldScheduler)",
            )
        return self._scheduler


def describe_execution(execution) -> dict:
    """What a step is doing, as data (call it from its driver, or while it is held).

    Args:
        execution: The step's `minitf.runtime.core.execution.StepExecution`.

    Returns:
        ``{"step_id", "client", "ops", "done", "ready": [op], "waiting": [op],
        "arrived": [op], "ran": [op name], "loops"}`` (``loops``: the step has a
        ``tf.while_loop``, whose ops run once per iteration, each run counted
        in ``done``) where each op is ``{"index", "name", "type"}``
        (the op that names the unit; a move in a ``tf.while_loop`` also has
        ``"frames"``: ``[[frame name, iteration], ...]``, outermost first), a
        waiting one also has ``"waits_for"`` (`waits_for`) and an arrived one
        ``"offer"``: True when delivering it runs the op that waited (its
        resource can now serve it), False when it hands the op's outputs to
        the step.
    """
    units = execution.units

    def op(i: int) -> dict:
        found = {"index": i, "name": units[i].op.name, "type": units[i].op.type}
        frames = execution.where(i)
        if frames:  # a move in a tf.while_loop: its frames and iterations
            found["frames"] = [list(f) for f in frames]
        return found

    arrived = set(execution.arrived)
    ready, waiting = set(execution.ready), execution.waiting
    offers = execution.offers()
    return {
        "step_id": execution.ctx.step_id,
        "client": execution.ctx.client,
        "ops": len(execution.steps),
        "done": execution.done_ops,
        "ready": [op(i) for i in execution.ready],
        "waiting": [
            {**op(i), "waits_for": execution.waits_for(i)}
            for i in sorted(execution.waiting - arrived)
        ],
        # An offer: the op's wait is over, and delivering it runs the op (a take_grad's take).
        "arrived": [{**op(i), "offer": i in offers} for i in execution.arrived],
        "ran": _ran(execution, ready, waiting),
        "loops": getattr(execution, "frames", None) is not None,  # done counts op runs
    }


def _ran(execution, ready: set, waiting: set) -> list[str]:
    """The names of the ops a step has finished (with loops: in some iteration)."""
    frames = getattr(execution, "frames", None)
    if frames is not None:
        return [execution.plan.steps[i].op.name for i, ran in enumerate(frames.ran) if ran]
    units = execution.units
    return [
        name.name
        for i, count in enumerate(execution.pending)
        if not count and i not in ready and i not in waiting
        for name in units[i].ops
    ]
