"""The paper's Elastic Averaging SGD, synchronous and asynchronous, made of minitf's own ops.

Zhang, Choromanska and LeCun, "Deep learning with Elastic Averaging SGD"
(NIPS 2015). Each of ``p`` workers trains its own copy ``x_i`` of the model;
a *center* ``x̃`` on the ps is tied to every copy by a spring. With the
learning rate ``η``, the moving rate ``α`` (``α = ηρ``, ρ the spring's
strength) and ``g_i`` worker ``i``'s gradient:

* `SyncEASGD` (the paper's equations 3 and 4), in rounds: every worker uses
  the center of the same round, and all move at once::

      x_i ← x_i − η g_i(x_i) − α (x_i − x̃)
      x̃  ← x̃ + α Σ_i (x_i − x̃)          (the values before the round)

* `AsyncEASGD` (the paper's Algorithm 1): each worker on its own, with a
  communication period ``τ``. At step ``t`` it reads its copy ``x``; if
  ``τ`` divides ``t``, it reads the center and moves both by
  ``diff = α (x − x̃)``; then it takes a gradient step at ``x``::

      if t mod τ = 0:  x_i ← x_i − diff;  x̃ ← x̃ + diff
      x_i ← x_i − η g_i(x)

TF-contrib's `ElasticAverageOptimizer` is another asynchronous rule: it
pulls *after* the gradient step, on steps ``τ, 2τ, ...``, from the copy that
step made, and adds the spring ``ρ (x − c)`` to every gradient, ``c`` being
the center as last read.

**Stability** (`sync_stability_boundary`). On the quadratic ``h x² / 2``
the synchronous round is linear in the ``p + 1`` numbers ``(x_1 … x_p,
x̃)``. With ``a = ηh``, the differences ``x_i − x_j`` are multiplied by
``1 − a − α`` each round; the mean ``y`` of the copies and the center follow

::

    [y']   [1 − a − α   α     ] [y]
    [x̃'] = [  pα       1 − pα ] [x̃]

whose characteristic polynomial ``χ(λ) = λ² − Tλ + D`` has ``χ(1) = pαa``
and ``χ(−1) = 4 − 2a − 2α − 2pα + pαa``. For ``0 < a < 2`` and ``α > 0``
both roots lie inside the unit circle exactly when ``χ(1) > 0`` (true),
``χ(−1) > 0`` and ``|D| < 1``; ``D + 1 = (χ(−1) + pαa) / 2`` and
``D = (1 − a)(1 − pα) − α < 1`` once ``pα < 2``. So the round converges
iff ``χ(−1) > 0``::

    α < 2 (2 − ηh) / (2 + p (2 − ηh))

which also gives ``pα < 2`` and ``α < 2 − a`` (the differences). At the
boundary a root crosses ``−1``: just above it the mean and the center
swing from side to side with a growing amplitude.

Both policies are used as the other wrappers are::

    getter = EASGDCustomGetter(worker_device)
    with tf.device(tf.train.replica_device_setter(...)), \\
            tf.variable_scope("", custom_getter=getter):
        ...  # the model, with tf.get_variable
        opt = SyncEASGD(tf.train.GradientDescentOptimizer(eta), p, getter, moving_rate=alpha)
        train_op = opt.minimize(loss, global_step=global_step)
    hooks = [opt.make_session_run_hook(is_chief)]
"""

from __future__ import annotations

from minitf.contrib.opt.elastic_average_optimizer import make_local
from minitf.contrib.opt.model_average_optimizer import ModelAverageCustomGetter
from minitf.framework import dtypes, ops
from minitf.framework.device import DeviceSpec
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.data_flow import data_flow_ops
from minitf.ops.math import math_ops
from minitf.ops.state import state_ops, variables
from minitf.train import optimizer, queue_runner_impl
from minitf.train.session_run_hook import SessionRunHook
from minitf.train.sync_replicas_optimizer import local_step_variable

__all__ = ["AsyncEASGD", "EASGDCustomGetter", "SyncEASGD", "sync_stability_boundary"]


def sync_stability_boundary(eta_h: float, num_workers: int) -> float:
    """The largest moving rate α for which synchronous EASGD converges on ``h x² / 2``.

    Args:
        eta_h: ``η h``, the learning rate times the curvature (``0 < ηh < 2``).
        num_workers: ``p``.

    Returns:
        ``2 (2 − ηh) / (2 + p (2 − ηh))``: the rounds converge for every
            ``0 < α`` below it and diverge above it (see the module's docstring).

    Raises:
        ValueError: if ``ηh`` is not in (0, 2) (plain SGD on the copies
            already diverges, or does not move) or ``p < 1``.
    """
    if not 0 < eta_h < 2 or num_workers < 1:
        raise ValueError(
            f"sync_stability_boundary: needs 0 < eta_h < 2 and num_workers >= 1, "
            f"got eta_h={eta_h!r}, num_workers={num_workers!r}"
        )
    margin = 2.0 - eta_h
    return 2.0 * margin / (2.0 + num_workers * margin)


class EASGDCustomGetter(ModelAverageCustomGetter):
    """A custom getter that makes a local copy on the worker and a center for the ps.

    The paper's EASGD needs two copies of each trainable variable: the
    worker's own (trainable, in ``LOCAL_VARIABLES``) and the center
    ``global_center_variable/<name>`` (``GLOBAL_VARIABLES``, placed on a ps
    task by ``replica_device_setter``), which starts at the copy's initial
    value. These are ModelAverage's two copies; TF-contrib's EASGD adds a
    third, the local center, which the paper's rules do not need.

    Args:
        worker_device: This worker's device, e.g. ``"/job:worker/task:0"``.
    """

    @property
    def worker_device(self) -> str:
        """The device of the local copies."""
        return self._worker_device

    def center_of(self, var: variables.Variable) -> variables.Variable:
        """The center of a local copy.

        Args:
            var: A local copy this getter made.

        Raises:
            ValueError: if ``var`` was not made by this getter.
        """
        if var not in self._local_2_global:
            raise ValueError(
                f"EASGD: variable {var.op.name!r} has no center: make it with tf.get_variable "
                "inside tf.variable_scope('', custom_getter=EASGDCustomGetter(...))"
            )
        return self._local_2_global[var]

    def pairs(self) -> list[tuple]:
        """Every ``(local copy, center)`` made so far."""
        return list(self._local_2_global.items())


class _ElasticPolicy(optimizer.Optimizer):
    """What the two rules share: the inner optimizer, the copies, the session hook."""

    def __init__(
        self,
        opt: optimizer.Optimizer,
        ea_custom_getter: EASGDCustomGetter,
        moving_rate: float,
        name: str,
    ):
        if not isinstance(opt, optimizer.Optimizer):
            raise TypeError(
                f"{type(self).__name__}: opt must be a tf.train optimizer (for example "
                f"tf.train.GradientDescentOptimizer(0.1)), got {opt!r}"
            )
        if not isinstance(ea_custom_getter, EASGDCustomGetter):
            raise TypeError(
                f"{type(self).__name__}: ea_custom_getter must be the EASGDCustomGetter the "
                f"model was built with, got {ea_custom_getter!r}"
            )
        if isinstance(moving_rate, bool) or not isinstance(moving_rate, (int, float)):
            raise TypeError(
                f"{type(self).__name__}: moving_rate must be a number, got {moving_rate!r}"
            )
        super().__init__(False, name)
        self._opt = opt
        self._getter = ea_custom_getter
        self.moving_rate = float(moving_rate)
        self._applied = False
        self.local_step_init_op = None
        self.chief_init_op = None
        self.copy_in_op = None

    def compute_gradients(self, *args, **kwargs):
        """The inner optimizer's `compute_gradients`."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(
        self,
        grads_and_vars: list[tuple],
        global_step: variables.Variable | None = None,
        name: str | None = None,
    ) -> ops.Tensor:
        """Builds a worker's step of the rule (see the class).

        Args:
            grads_and_vars: ``(gradient, local copy)`` pairs.
            global_step: The global step; required.
            name: Unused (the ops are named after the policy).

        Returns:
            The train op.

        Raises:
            ValueError: for no gradients, no global step, a variable without a
                center, or a second call.
        """
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError(f"{type(self).__name__}: global_step is required")
        if self._applied:
            raise ValueError(
                f"apply_gradients() was already called on {type(self).__name__} "
                f"'{self._name}': make one policy per train op."
            )
        centers = [self._getter.center_of(var) for _, var in grads_and_vars]
        local_step = local_step_variable(global_step, f"{self._name}_local_step")
        self.copy_in_op = control_flow_ops.group(
            *[state_ops.assign(var, center) for (_, var), center in zip(grads_and_vars, centers)]
        )
        with ops.name_scope(None, self._name):
            train_op = self._build(grads_and_vars, centers, local_step, global_step)
        self._applied = True
        return train_op

    def _gradient_step(self, grads_and_vars, after: list) -> ops.Operation:
        """The inner optimizer's step, after ``after``; its own variables made local."""
        global_before = {var.op.name for var in variables.global_variables()}
        with ops.control_dependencies(after):
            step = self._opt.apply_gradients(grads_and_vars)
        make_local({var.op.name for var in variables.global_variables()} - global_before)
        return step

    def make_session_run_hook(self, is_chief: bool) -> SessionRunHook:
        """The hook that starts a worker: its copies from the centers, its local step.

        On the chief of `SyncEASGD` it also starts the rounds' queue runner.

        Args:
            is_chief: Whether this worker is the chief.
        """
        return _EASGDHook(self, is_chief)

    def _chief_start(self, session, coord) -> None:
        """What only the chief runs when its session starts (nothing, by default)."""


def _read(center) -> ops.Tensor:
    """The center's value, read on its own device (the ps)."""
    with ops.device(center.device):
        return array_ops.identity(center)


class SyncEASGD(_ElasticPolicy):
    """Synchronous EASGD: in each round all ``p`` copies and the center move from the same values.

    A worker's step (`apply_gradients`) reads the center ``x̃`` of the
    round, pushes ``x_i − x̃`` into an accumulator beside the center, moves
    its copy by ``−η g_i − α (x_i − x̃)`` (``η g_i`` as the inner optimizer's
    step) and waits for a token. The chief's queue runner takes the ``p``
    pushes of the round, adds ``α Σ_i (x_i − x̃)`` to the center and one to
    the global step, and puts a token in each worker's own queue. No center
    is read for round ``t + 1`` before every worker has pushed for round
    ``t``: each worker's next read waits for its token, and the round's
    update waits for its push.

    Args:
        opt: The optimizer of the gradient step (the paper's: plain SGD).
        num_workers: ``p``: every round waits for all of them.
        ea_custom_getter: The `EASGDCustomGetter` the model was built with.
        moving_rate: ``α = ηρ``.
        worker_index: This worker's index among the ``p`` (default: the task
            of the getter's ``worker_device``): which token queue is its own.
        name: The name scope of the policy's ops.

    Raises:
        TypeError: if ``opt``, ``ea_custom_getter`` or ``moving_rate`` is of the wrong kind.
        ValueError: if ``num_workers`` is not a positive integer, or
            ``worker_index`` not one of ``0 … p − 1``.
    """

    def __init__(
        self,
        opt: optimizer.Optimizer,
        num_workers: int,
        ea_custom_getter: EASGDCustomGetter,
        moving_rate: float,
        worker_index: int | None = None,
        name: str = "sync_easgd",
    ):
        _positive_integer(type(self).__name__, "num_workers", num_workers)
        super().__init__(opt, ea_custom_getter, moving_rate, name)
        self.num_workers = num_workers
        if worker_index is None:
            worker_index = DeviceSpec.from_string(ea_custom_getter.worker_device).task or 0
        if (
            isinstance(worker_index, bool)
            or not isinstance(worker_index, int)
            or not (0 <= worker_index < num_workers)
        ):
            raise ValueError(
                f"SyncEASGD: worker_index must be in [0, num_workers={num_workers}), got "
                f"{worker_index!r}; it defaults to the task of the getter's worker_device"
            )
        self.worker_index = worker_index
        self._accumulators: list = []
        self._queue_runner = None

    def _build(self, grads_and_vars, centers, local_step, global_step) -> ops.Tensor:
        """A worker's round: push, move the copy, wait for the round's token."""
        self.local_step_init_op = state_ops.assign(local_step, global_step)
        alpha = self.moving_rate
        diffs, elastic = [], []
        # The gradients read the copies before anything moves them.
        with ops.control_dependencies([g for g, _ in grads_and_vars]):
            for (_, var), center in zip(grads_and_vars, centers):
                with ops.device(var.device):
                    diffs.append(math_ops.subtract(var, _read(center)))
                    elastic.append(state_ops.assign_sub(var, math_ops.multiply(alpha, diffs[-1])))
        pushes, sums = [], []
        for diff, center in zip(diffs, centers):
            push, mean = self._accumulate(diff, center, local_step)
            pushes.append(push)
            sums.append((mean, center))
        step = self._gradient_step(grads_and_vars, elastic)
        return self._round_end(global_step, local_step, [step, *pushes], sums)

    def _accumulate(self, diff, center, local_step) -> tuple:
        """One accumulator beside the center: this worker's push, and the chief's mean of ``p``."""
        with ops.device(center.device):
            accum = data_flow_ops.ConditionalAccumulator(
                diff.dtype,
                shape=center.get_shape(),
                shared_name=f"{center.op.name}/{self._name}_accum",
            )
            self._accumulators.append((accum, center.device))
            return accum.apply_grad(diff, local_step=local_step), accum.take_grad(self.num_workers)

    def _round_end(self, global_step, local_step, done: list, sums: list) -> ops.Tensor:
        """The chief's update and tokens, and the worker's wait for its token."""
        p, alpha = self.num_workers, self.moving_rate
        moves = []
        for mean, center in sums:
            with ops.device(center.device):
                moves.append(state_ops.assign_add(center, math_ops.multiply(p * alpha, mean)))
        with ops.device(global_step.device), ops.name_scope(""):
            with ops.control_dependencies(moves):
                next_round = state_ops.assign_add(global_step, 1)
            # One token queue per worker: a shared queue would let a fast worker
            # take two tokens of a round and push twice into it.
            token_queues = [
                data_flow_ops.FIFOQueue(
                    -1,
                    global_step.dtype.base_dtype,
                    shapes=(),
                    name=f"{self._name}_token_q{i}",
                    shared_name=f"{self._name}_token_q{i}",
                )  # fmt: skip
                for i in range(p)
            ]
            with ops.control_dependencies([next_round]):
                round_now = array_ops.identity(global_step)
            release = control_flow_ops.group(*[q.enqueue(round_now) for q in token_queues])
            # The chief's queue runner needs a queue to close when it stops.
            runner_queue = data_flow_ops.FIFOQueue(
                1, dtypes.int32, shapes=(), name=f"{self._name}_runner_q",
                shared_name=f"{self._name}_runner_q",
            )  # fmt: skip
            self._queue_runner = queue_runner_impl.QueueRunner(runner_queue, [release])
            with ops.control_dependencies(done):
                token = token_queues[self.worker_index].dequeue()
        init = []
        for accum, device in self._accumulators:
            with ops.device(device):
                init.append(accum.set_global_step(global_step, name="SetGlobalStep"))
        self.chief_init_op = control_flow_ops.group(*init)
        return state_ops.assign(local_step, token)

    def get_chief_queue_runner(self) -> queue_runner_impl.QueueRunner:
        """The `QueueRunner` whose thread ends the rounds on the chief.

        Raises:
            ValueError: before `apply_gradients`.
        """
        if not self._applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._queue_runner

    def _chief_start(self, session, coord) -> None:
        session.run(self.chief_init_op)
        self._queue_runner.create_threads(session, coord=coord, daemon=True, start=True)

    def __repr__(self) -> str:
        return f"SyncEASGD(num_workers={self.num_workers}, moving_rate={self.moving_rate})"


class AsyncEASGD(_ElasticPolicy):
    """Asynchronous EASGD (the paper's Algorithm 1): each worker pulls on its own every τ steps.

    A worker's step ``t`` (its ``local_step``) first, if ``τ`` divides
    ``t``, reads the center and moves its copy by ``−α (x − x̃)`` and the
    center by ``+α (x − x̃)`` (adding one to the global step); then it takes
    the inner optimizer's step with the gradient at ``x``, the copy as the
    step began. There is no barrier: another worker may move the center
    between this worker's read and its addition, as on the paper's master.

    Args:
        opt: The optimizer of the gradient step (the paper's: plain SGD).
        ea_custom_getter: The `EASGDCustomGetter` the model was built with.
        moving_rate: ``α``.
        communication_period: ``τ``: pull on local steps ``0, τ, 2τ, ...``.
        name: The name scope of the policy's ops.

    Raises:
        TypeError: if ``opt``, ``ea_custom_getter`` or ``moving_rate`` is of the wrong kind.
        ValueError: if ``communication_period`` is not a positive integer.
    """

    def __init__(
        self,
        opt: optimizer.Optimizer,
        ea_custom_getter: EASGDCustomGetter,
        moving_rate: float,
        communication_period: int = 1,
        name: str = "async_easgd",
    ):
        _positive_integer(type(self).__name__, "communication_period", communication_period)
        super().__init__(opt, ea_custom_getter, moving_rate, name)
        self.communication_period = communication_period

    def _build(self, grads_and_vars, centers, local_step, global_step) -> ops.Tensor:
        """A worker's step: the pull when ``τ`` divides the local step, then the gradient step."""
        self.local_step_init_op = state_ops.assign(local_step, 0)
        # The gradients read the copies before the pull moves them.
        with ops.control_dependencies([g for g, _ in grads_and_vars]):
            due = math_ops.equal(math_ops.mod(local_step, self.communication_period), 0)
            pull = control_flow_ops.cond(
                due,
                lambda: self._pull([var for _, var in grads_and_vars], centers, global_step),
                control_flow_ops.no_op,
            )
        step = self._gradient_step(grads_and_vars, [pull])
        with ops.control_dependencies([step]):
            return state_ops.assign_add(local_step, 1)

    def _pull(self, local_vars, centers, global_step) -> ops.Operation:
        """``diff = α (x − x̃)``: ``x −= diff`` on the worker, ``x̃ += diff`` on the ps."""
        moves = []
        for var, center in zip(local_vars, centers):
            with ops.device(var.device):
                diff = math_ops.multiply(self.moving_rate, math_ops.subtract(var, _read(center)))
                moves.append(state_ops.assign_sub(var, diff))
            with ops.device(center.device):
                moves.append(state_ops.assign_add(center, diff))
        with ops.colocate_with(global_step):
            moves.append(state_ops.assign_add(global_step, 1))
        return control_flow_ops.group(*moves)

    def __repr__(self) -> str:
        return (
            f"AsyncEASGD(moving_rate={self.moving_rate}, "
            f"communication_period={self.communication_period})"
        )


class _EASGDHook(SessionRunHook):
    """After session creation: the copies from the centers, the local step; the chief's start."""

    def __init__(self, policy: _ElasticPolicy, is_chief: bool):
        self._policy = policy
        self._is_chief = is_chief

    def begin(self) -> None:
        """Checks that the policy's graph is built.

        Raises:
            ValueError: if its `apply_gradients` has not run.
        """
        if not self._policy._applied:
            raise ValueError(
                f"{type(self._policy).__name__}.apply_gradients should be called before "
                "using the hook."
            )

    def after_create_session(self, session, coord) -> None:
        """Copies the centers into this worker's copies (the paper's ``x_i = x̃``) and starts."""
        session.run([self._policy.copy_in_op, self._policy.local_step_init_op])
        if self._is_chief:
            self._policy._chief_start(session, coord)


def _positive_integer(policy: str, what: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{policy}: {what} must be a positive integer, got {value!r}")
