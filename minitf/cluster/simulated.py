"""``SimulatedCluster``: a whole cluster in this process, on a virtual clock, the same every run.

Where `LocalCluster` starts a process per task and lets the machine's timing
decide every race, a simulated cluster runs every task's ops itself, one
move at a time (`minitf.runtime.distributed.simulation`). The same clients, seed, delays
and op costs give the same moves, the same values and the same event log,
every time, with 100 workers on a laptop::

    cluster = SimulatedCluster({"ps": 1, "worker": 50}, seed=0,
                               worker_delay=delays.Exponential(0.01))

    def worker(index):
        with tf.Graph().as_default():
            ...  # build the graph with replica_device_setter, as on a real cluster
            with tf.Session(cluster.target("worker", index)) as sess:
                ...

    report = cluster.run_workers(worker)   # or cluster.run("train.py", args=[...])
    print(report["time"], report["updates"][-1])

Session code is TF1's, unchanged: a session made with `target` runs its
steps on the simulated tasks.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from minitf.cluster import op_costs
from minitf.cluster.delays import DelayModel
from minitf.cluster.sync_record import SyncRecord, worker_index
from minitf.runtime.distributed.simulation import Simulation, fewer_collections

if TYPE_CHECKING:
    from minitf.framework.ops import Operation


class SimulatedCluster:
    """Every task of a cluster in this process, advanced one move at a time on a virtual clock.

    Args:
        tasks: ``{"ps": 2, "worker": 100}``: how many tasks per job.
        seed: Seeds the delay draws (each worker has its own stream).
        worker_delay: How long a worker's step that computes gradients waits
            before it starts: a `minitf.cluster.delays.DelayModel` for every
            worker, ``{worker index: model}`` (``"*"`` for the others), or
            None. The wait advances the virtual clock; nothing sleeps.
        op_cost: Virtual seconds an op takes: ``{op type: seconds}`` (``"*"``
            for the others), the path of such a table measured on this
            machine (`minitf.cluster.op_costs`), a function of the op, or
            None (every op is free).
        loss: The name (or names) of the loss tensor's op, without its scope:
            whenever a client's run fetches a scalar of that name, the report
            notes its value at the client's virtual time.

    Raises:
        ValueError: if a job has no task, or not a whole number of them.
        TypeError: if ``worker_delay``, ``op_cost`` or ``loss`` is not one of the above.
    """

    def __init__(
        self,
        tasks: dict[str, int],
        seed: int = 0,
        worker_delay: DelayModel | dict[int | str, DelayModel] | None = None,
        op_cost: dict[str, float] | str | Callable[[Operation], float] | None = None,
        loss: str | Sequence[str] = "loss",
    ):
        if isinstance(op_cost, str):
            op_cost = op_costs.load(op_cost)
        _check_delays(worker_delay)
        self._simulation = Simulation(tasks, seed, worker_delay, op_cost)
        names = [loss] if isinstance(loss, str) else loss
        if not isinstance(names, (list, tuple, set)) or not all(isinstance(n, str) for n in names):
            raise TypeError(
                f"SimulatedCluster: loss must be the name of the loss op, or a list of names "
                f"(for example 'loss'), got {loss!r}"
            )
        self._simulation.loss_names = set(names)
        self.cluster_spec = self._simulation.cluster_spec
        self.failed_task: str | None = None  # the client whose exception `run` raised

    @property
    def simulation(self):
        """The `minitf.runtime.distributed.simulation.Simulation` that runs the tasks."""
        return self._simulation

    @property
    def clock(self):
        """The virtual clock (`minitf.runtime.distributed.simulation.VirtualClock`)."""
        return self._simulation.clock

    @property
    def events(self) -> list[tuple]:
        """Every move made, op by op, in order: ``(time, task, client, step, "run"/"deliver", op)``.

        A move that ran a straight walk of several ops (free ops, nobody
        stepping: `minitf.runtime.distributed.simulation.Simulation.observes_ops`)
        is listed as one run per op, in the order the walk ran them.
        """
        return self._simulation.events

    def schedule(self) -> dict[str, list[tuple[int, int, str]]]:
        """Each task's moves so far as a real task logs them: what a recording holds.

        Returns:
            ``{task: [(step id, RUN or DELIVER, op name), ...]}``, in order
            (`minitf.runtime.distributed.simulation.Simulation.schedule`).
        """
        return self._simulation.schedule()

    def target(self, job: str, index: int = 0) -> str:
        """The session target of one task (``sim://...``).

        Args:
            job: The task's job.
            index: The task's index.
        """
        return self._simulation.target(job, index)

    def run(
        self,
        script: str | Callable[[], object],
        args: Sequence[str] = (),
        out: str | None = None,
        record: str | None = None,
        output: TextIO | None = None,
    ) -> dict:
        """Runs a TF1 script once per task, as ``minitf launch`` does; returns the `report`.

        Each task's copy runs in a thread of its own with its role on the
        command line (``--job_name``, ``--task_index``, ``--ps_hosts``,
        ``--worker_hosts``: `role_arguments`) and in ``TF_CONFIG``, which its
        thread alone sees in ``os.environ``; and flags and a default graph of
        its own. In it, ``tf.train.Server`` is the simulated task's, and a
        ps task's ``server.join()`` returns once the workers have ended.

        Args:
            script: The script's path, or a function to run as the only client.
            args: The script's own arguments.
            out: A directory to write the report and its plots to (`write_report`).
            record: A file to record the run's schedule to, as ``minitf
                launch --record`` does: ``minitf step --replay FILE`` (or
                `minitf.stepper.Stepper.replay`) starts the script on real
                tasks and steps it along the simulated moves, with the same
                values.
            output: Where the tasks' scripts print (default: ``sys.stdout``).

        Raises:
            ValueError: if ``record`` is given with a function for a script.
            FileNotFoundError: if there is no such script.
            RuntimeError: if a task's script exits with a non-zero status.
            Exception: the first exception a task's script raised.
        """
        if callable(script):
            if record is not None:
                raise ValueError(
                    "SimulatedCluster.run: record= needs a script's path, not a function: a "
                    "recording is replayed by starting the script on real tasks"
                )
            return self.run_clients(script, out=out)
        if not os.path.isfile(script):
            raise FileNotFoundError(f"SimulatedCluster.run: no such script: {script}")
        from minitf.platform import app

        tasks = [
            (job, index)
            for job in sorted(self.cluster_spec.jobs, key=lambda j: (j != "ps", j))
            for index in self.cluster_spec.task_indices(job)
        ]

        def task(job: str, index: int) -> None:
            role = {"type": job, "index": index}
            tf_config = {"cluster": self.cluster_spec.as_dict(), "task": role}
            argv = [*self.role_arguments(job, index), *args]
            code = app.run_script(script, argv, {"TF_CONFIG": json.dumps(tf_config)}, output)
            if code:
                raise RuntimeError(f"/job:{job}/task:{index}: {script} exited with status {code}")

        # A recording is replayed op by op on held tasks: every op a move of its own.
        self._simulation.by_op = self._simulation.by_op or record is not None
        report = self.run_clients(
            *[lambda j=j, i=i: task(j, i) for j, i in tasks],
            names=[f"{j}:{i}" for j, i in tasks],
            out=out,
        )
        if record is not None:
            from minitf.runtime.distributed.launcher import write_recording

            counts = {job: self.cluster_spec.num_tasks(job) for job in self.cluster_spec.jobs}
            write_recording(record, script, counts, args, self.schedule())
        return report

    def run_clients(
        self,
        *clients: Callable[[], object],
        names: Sequence[str] | None = None,
        out: str | None = None,
    ) -> dict:
        """Runs each function as a client until all have returned; returns the `report`.

        Each runs in a thread of its own; the simulation makes moves only
        while every client waits for a step, so the outcome does not depend
        on how the threads are scheduled. Clients are numbered in order,
        which is the order ties between their moves go.

        Args:
            *clients: Functions of no arguments, one per client.
            names: The clients' names (default ``client0``, ``client1``, ...).
            out: A directory to write the report into (`write_report`), or None.

        Raises:
            Exception: the first exception a client raised.
        """
        names = list(names or [f"client{i}" for i in range(len(clients))])
        threads = [self._simulation.client(name, fn) for name, fn in zip(names, clients)]
        with fewer_collections():  # the report too: it reads the whole run
            for thread in threads:
                thread.start()
            self._simulation.run_until_clients_end()
            for thread in threads:
                thread.join()
            failure, self._simulation.failure = self._simulation.failure, None
            self.failed_task = self._simulation.failed_client
            if failure is not None:
                raise failure
            if out is not None:
                self.write_report(out)
            return self.report()

    def role_arguments(self, job: str, index: int) -> list[str]:
        """The TF1 command-line arguments of one task (as `LocalCluster` gives them).

        Args:
            job: The task's job.
            index: The task's index.
        """
        spec = self.cluster_spec.as_dict()
        args = [f"--job_name={job}", f"--task_index={index}"]
        return args + [f"--{j}_hosts={','.join(spec[j])}" for j in sorted(spec)]

    def report(self) -> dict:
        """What the run did, as JSON-ready data.

        Returns:
            ``{"time", "moves", "updates", "gradients", "workers", "loss"}``:

                * ``time``: the virtual seconds the run took;
                * ``updates``: one entry per global step a SyncReplicas chief
                  took: its ``time``, the workers ``applied`` (once per
                  gradient), those whose gradients came as ``extra`` batches, and
                  those ``dropped`` as stale (`minitf.cluster.SyncRecord`);
                * ``gradients``: one entry per pushed gradient: ``worker``,
                  ``local_step``, ``global_step`` at the push, ``staleness``,
                  ``dropped``, ``cancelled`` and ``time``;
                * ``workers``: per worker task, its ``busy_time`` (running ops),
                  ``delay_time`` (its delays), ``idle_time`` (the rest of the
                  run: waiting for tokens, gradients or variables, or done) and
                  how many of its computations were ``cancelled``;
                * ``loss``: each fetch of the loss (see ``loss``): ``time``,
                  ``task``, ``worker`` (its index, or None) and ``value``.

                ``updates`` and ``gradients`` follow the first accumulator (by
                task and name); they are empty if the run had none.
        """
        sim = self._simulation
        record = None
        if sim.accumulator_events:
            (task, name), history = sorted(sim.accumulator_events.items())[0]
            record = SyncRecord.of_history(task, name, history)
        end = sim.clock.now()
        workers = []
        for index in (
            self.cluster_spec.task_indices("worker") if "worker" in self.cluster_spec.jobs else []
        ):
            task = f"/job:worker/replica:0/task:{index}"
            busy, delay = sim.busy[task], sim.delayed[task]
            workers.append(
                {
                    "worker": index,
                    "busy_time": busy,
                    "delay_time": delay,
                    "idle_time": max(0.0, end - busy - delay),
                }
            )
        workers_cancelled = Counter(worker_index(task) for _, task in sim.cancelled)
        for entry in workers:
            entry["cancelled"] = workers_cancelled.get(entry["worker"], 0)
        return {
            "time": end,
            "moves": sim.move_count,
            "updates": record.updates if record else [],
            "gradients": record.gradients if record else [],
            "workers": workers,
            "loss": [
                {"time": time, "task": task, "worker": _index_or_none(task), "value": value}
                for time, task, value in sim.losses
            ],
        }

    def write_report(self, directory: str) -> dict[str, str]:
        """Writes `report` as ``report.json`` and its plots as PNGs into ``directory``.

        The plots: ``time_per_update.png`` (virtual seconds between
        updates), ``staleness.png`` (a histogram of the gradients' staleness,
        dropped and cancelled ones apart), ``idle_time.png`` (each worker's
        busy, delay and idle time) and, when the run fetched its loss,
        ``loss.png`` (the loss against virtual time).

        Args:
            directory: The directory (created if needed).

        Returns:
            ``{"report": path, "time_per_update": path, ...}``.
        """
        from minitf.cluster import report_plots

        os.makedirs(directory, exist_ok=True)
        report = self.report()
        paths = {"report": os.path.join(directory, "report.json")}
        with open(paths["report"], "w") as f:
            json.dump(report, f, indent=1)
        paths.update(report_plots.write(report, directory))
        return paths

    def run_workers(self, worker: Callable[[int], object], out: str | None = None) -> dict:
        """Runs ``worker(index)`` once per worker task, each as a client (between-graph).

        Args:
            worker: Called with a worker task's index.
            out: A directory to write the report into (`write_report`), or None.

        Returns:
            The `report`.

        Raises:
            Exception: the first exception a worker raised.
        """
        indices = self.cluster_spec.task_indices("worker")
        return self.run_clients(
            *[lambda i=i: worker(i) for i in indices],
            names=[f"worker:{i}" for i in indices],
            out=out,
        )


def _index_or_none(task: str) -> int | None:
    """A worker task's index; None for another job's task."""
    return worker_index(task) if task.startswith("/job:worker/") else None


def _check_delays(worker_delay) -> None:
    """Raises TypeError unless ``worker_delay`` is None, a delay model, or a dict of them."""
    if worker_delay is None:
        return
    models = worker_delay if isinstance(worker_delay, dict) else {"*": worker_delay}
    for key, model in models.items():
        if not isinstance(model, DelayModel) or not (key == "*" or isinstance(key, int)):
            raise TypeError(
                f"worker_delay must be a minitf.cluster.delays model (Constant, Exponential, "
                f"ShiftedExponential, Pareto) or a dict of them by worker index or '*'; "
                f"got {key!r}: {model!r}"
            )
