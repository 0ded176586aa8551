"""``tf.train.SyncReplicasOptimizer``: synchronous data-parallel training over parameter servers.

The class wraps another optimizer. Its ``apply_gradients`` does not apply
anything: it builds, with public ops only, the protocol below (TF 1.1+'s
"V2" implementation, in TF's order and with TF's names):

1. **Local step.** Each worker keeps ``sync_rep_local_step``, a *local*
   variable on its own task: the global step its current gradient belongs
   to. ``local_step_init_op`` copies the global step into it at start-up.
2. **Accumulate.** For every variable with a gradient there is a
   ``ConditionalAccumulator`` (a ``SparseConditionalAccumulator`` for an
   ``IndexedSlices`` gradient) on that variable's device, shared by all
   workers through ``shared_name = var.name + "/grad_accum"``. A worker step
   offers its gradient with ``apply_grad(grad, local_step)``; the
   accumulator keeps it only if ``local_step >=`` its own step, so gradients
   computed against old variables are dropped.
3. **Update (chief).** The chief's queue runner runs ``sync_op`` in a loop:
   ``take_grad(R)`` on every accumulator waits for R fresh gradients and
   returns their mean (and bumps the accumulator's step), the inner
   optimizer applies the means and increments ``global_step``, and
   ``max(N, R)`` tokens carrying the new global step go into
   ``sync_token_q`` on the global step's device.
4. **Wait for a token.** A worker step ends by dequeuing one token (after its
   ``apply_grad`` ops ran) into its local step: the returned ``train_op``.
   Tokens are the *exit* barrier of a step.
5. **Start-up.** The chief sets every accumulator's step and its own local
   step (``chief_init_op``), puts the initial tokens in the queue
   (`get_init_tokens_op`) and starts the queue runner; the hook of
   `make_session_run_hook` does all three.

``R`` (``replicas_to_aggregate``) gradients make one update and ``N``
(``total_num_replicas``) workers take part: ``N > R`` gives backup workers
whose late gradients are dropped, ``N < R`` makes workers compute several
batches per update. The default ``R`` initial tokens carry the old global
step, so each worker's step after one of them computes a stale gradient —
deliberate in TF (a restarted chief needs the slack), and the reason a fast
worker can run ahead (tensorflow#11753); ``num_tokens=0`` gives strict sync.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.data_flow import data_flow_ops
from minitf.ops.state import state_ops, variables
from minitf.train import optimizer, queue_runner_impl
from minitf.train.session_run_hook import SessionRunHook

if TYPE_CHECKING:
    from minitf.train.moving_averages import ExponentialMovingAverage

logger = logging.getLogger("minitf")


class SyncReplicasOptimizer(optimizer.Optimizer):
    """Aggregates the gradients of ``replicas_to_aggregate`` workers into one update.

    Args:
        opt: The optimizer that applies the averaged gradients.
        replicas_to_aggregate: R, the gradients averaged into each update.
        total_num_replicas: N, the workers that take part (default R).
        variable_averages: An optional `ExponentialMovingAverage`, applied by
            the chief after every update to ``variables_to_average``.
        variables_to_average: The variables ``variable_averages`` tracks.
        use_locking: Passed to the base class (the inner optimizer has its own).
        name: The name scope of the accumulators (default ``"sync_replicas"``).
    """

    def __init__(
        self,
        opt: optimizer.Optimizer,
        replicas_to_aggregate: int,
        total_num_replicas: int | None = None,
        variable_averages: ExponentialMovingAverage | None = None,
        variables_to_average: list | None = None,
        use_locking: bool = False,
        name: str = "sync_replicas",
    ):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        logger.info(
            "SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s",
            replicas_to_aggregate,
            total_num_replicas,
        )
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._gradients_applied = False
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._total_num_replicas = total_num_replicas
        # Backup workers (N > R) still get one token each per update.
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list: list[tuple] = []
        self._local_step = None
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None

    def compute_gradients(self, *args, **kwargs):
        """The inner optimizer's `compute_gradients` (clip per worker here, before averaging)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(
        self,
        grads_and_vars: list[tuple],
        global_step: variables.Variable | None = None,
        name: str | None = None,
    ) -> ops.Tensor:
        """Builds the synchronous protocol around the inner optimizer's update.

        Args:
            grads_and_vars: ``(gradient, variable)`` pairs from `compute_gradients`.
            global_step: The global step variable; required, since staleness is
                measured in it.
            name: Unused, as in TF (the ops are named after the optimizer).

        Returns:
            ``train_op``, the step every worker runs: offer the gradients, wait
                for a token, store it in the local step. Its value is the token.

        Raises:
            ValueError: for no gradients, no global step, a gradient that is
                neither a Tensor, IndexedSlices nor None, or a second call.
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        if self._gradients_applied:
            # Not an error in TF, which then builds a second local step and a
            # second set of token ops that deadlock each other.
            raise ValueError(
                f"apply_gradients() was already called on SyncReplicasOptimizer "
                f"'{self._name}': make one SyncReplicasOptimizer per train op."
            )
        self._global_step = global_step
        self._local_step = self._make_local_step(global_step)
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = variables.report_uninitialized_variables(
            variables.global_variables()
        )

        with ops.name_scope(None, self._name):
            train_ops, aggregated = self._accumulate(grads_and_vars)
            var_list = [var for _, var in grads_and_vars]
            with ops.device(global_step.device), ops.name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(aggregated, var_list)), global_step)
            with ops.device(global_step.device), ops.name_scope(""):
                sync_token_queue = data_flow_ops.FIFOQueue(
                    -1,
                    global_step.dtype.base_dtype,
                    shapes=(),
                    name="sync_token_q",
                    shared_name="sync_token_q",
                )
                self._sync_token_queue = sync_token_queue
                # TF 1.15 hands the chief's queue runner this queue, not the
                # token queue: stopping a runner closes its queue, and a closed
                # sync_token_q on the ps would fail every worker for good.
                dummy_queue = data_flow_ops.FIFOQueue(
                    1, dtypes.int32, shapes=(), name="dummy_queue", shared_name="dummy_queue"
                )
            with ops.device(global_step.device), ops.name_scope(""):
                with ops.control_dependencies(train_ops):
                    token = sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with ops.control_dependencies([update_op]):
                    # `global_step` here is its `read`, which forwards the
                    # variable: the Fill runs after the update and so sees the
                    # incremented step (minitf.runtime.core.plan.reads_variable).
                    tokens = array_ops.fill([self._tokens_per_step], global_step)
                    sync_op = sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with ops.control_dependencies([sync_op]), ops.name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._chief_queue_runner = queue_runner_impl.QueueRunner(dummy_queue, [sync_op])
            for accum, device in self._accumulator_list:
                with ops.device(device):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init_ops)
            self._gradients_applied = True
            return train_op

    @staticmethod
    def _make_local_step(global_step):
        """``sync_rep_local_step``: a local variable on this worker, whatever the setter says."""
        return local_step_variable(global_step, "sync_rep_local_step")

    def _accumulate(self, grads_and_vars) -> tuple[list, list]:
        """One shared accumulator per variable, on its device: the workers' and the chief's ends.

        Returns:
            (train_ops, aggregated): the workers' ``apply_grad`` ops and the
            chief's averaged gradients (None passed through).
        """
        train_ops, aggregated = [], []
        for grad, var in grads_and_vars:
            with ops.device(var.device):
                if grad is None:
                    aggregated.append(None)
                    continue
                shared_name = var.name + "/grad_accum"
                if isinstance(grad, ops.Tensor):
                    accum = data_flow_ops.ConditionalAccumulator(
                        grad.dtype, shape=var.get_shape(), shared_name=shared_name
                    )
                    train_ops.append(accum.apply_grad(grad, local_step=self._local_step))
                    aggregated.append(accum.take_grad(self._replicas_to_aggregate))
                elif isinstance(grad, IndexedSlices):
                    accum = data_flow_ops.SparseConditionalAccumulator(
                        grad.dtype, shape=(), shared_name=shared_name
                    )
                    train_ops.append(
                        accum.apply_indexed_slices_grad(grad, local_step=self._local_step)
                    )
                    aggregated.append(accum.take_indexed_slices_grad(self._replicas_to_aggregate))
                else:
                    raise ValueError("Unknown grad type!")
                self._accumulator_list.append((accum, var.device))
        return train_ops, aggregated

    def get_chief_queue_runner(self) -> queue_runner_impl.QueueRunner:
        """The `QueueRunner` whose thread runs ``sync_op`` on the chief.

        Raises:
            ValueError: before `apply_gradients`.
        """
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_slot(self, *args, **kwargs):
        """The inner optimizer's `get_slot`."""
        return self._opt.get_slot(*args, **kwargs)

    def variables(self) -> list:
        """The inner optimizer's variables (the local step is not one of them)."""
        return self._opt.variables()

    def get_slot_names(self, *args, **kwargs) -> list[str]:
        """The inner optimizer's `get_slot_names`."""
        return self._opt.get_slot_names(*args, **kwargs)

    def get_init_tokens_op(self, num_tokens: int = -1) -> ops.Operation:
        """The op that puts the start-up tokens in ``sync_token_q`` (run once, by the chief).

        Args:
            num_tokens: How many tokens; -1 means ``replicas_to_aggregate``.
                0 gives strict synchronisation (allowed when N >= R).

        Returns:
            An ``enqueue_many`` of ``num_tokens`` copies of the global step,
            or a ``no_op`` named ``no_init_tokens`` when there are none.

        Raises:
            ValueError: before `apply_gradients`, or if ``num_tokens`` is below
                ``replicas_to_aggregate - total_num_replicas`` (the first update
                could never be reached).
        """
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(
                f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                f"{tokens_needed} (needed)"
            )
        if num_tokens > 0:
            with ops.device(self._global_step.device), ops.name_scope(""):
                tokens = array_ops.fill([num_tokens], self._global_step)
                return self._sync_token_queue.enqueue_many((tokens,))
        return control_flow_ops.no_op(name="no_init_tokens")

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """The hook that starts this worker's part of the protocol once its session exists.

        Args:
            is_chief: The chief also sets the accumulators' steps, puts the
                initial tokens in the queue and starts the queue runner.
            num_tokens: As in `get_init_tokens_op`.
        """
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    """After session creation: a worker's local init; the chief's tokens and queue runner too."""

    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens
        self._local_init_op = None
        self._ready_for_local_init_op = None
        self._q_runner = None
        self._init_tokens_op = None

    def begin(self) -> None:
        """Picks the chief's or a worker's init ops (building the init-tokens op on the chief).

        Raises:
            ValueError: if the optimizer's `apply_gradients` has not run.
        """
        opt = self._sync_optimizer
        if not opt._gradients_applied:
            raise ValueError(
                "SyncReplicasOptimizer.apply_gradient should be called before using the hook."
            )
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op

    def after_create_session(self, session, coord) -> None:
        """Local init; on the chief also the initial tokens and the queue runner's threads.

        Raises:
            RuntimeError: if a global variable is still uninitialized.
        """
        ready, message = ready_for_local_init(self._ready_for_local_init_op, session)
        if not ready:
            raise RuntimeError(
                "Init operations did not make model ready for SyncReplicasOptimizer "
                f"local_init. Init op: {self._local_init_op.name}, error: {message}"
            )
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)


def local_step_variable(global_step, name: str):
    """A worker's local step: a local variable on its own task, whatever the setter says.

    Colocating with a no-op made under the caller's device scope empties
    the device-function stack, so the variable lands on the worker even
    inside a ``replica_device_setter`` that sends variables to a ps.
    """
    local_anchor = control_flow_ops.no_op()
    with ops.colocate_with(local_anchor):
        return variables.Variable(
            initial_value=0,
            trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
            dtype=global_step.dtype.base_dtype,
            name=name,
        )


def ready_for_local_init(ready_op, session) -> tuple[bool, str | None]:
    """Runs a ``report_uninitialized_variables`` op: (True, None) or (False, what is missing)."""
    if ready_op is None:
        return True, None
    missing = session.run(ready_op)
    if missing is None or missing.size == 0:
        return True, None
    names = ", ".join(name.decode("utf-8") for name in missing)
    return False, f"Variables not initialized: {names}"
