"""The synchronisation policies of Dutta et al., as optimizers made of minitf's own ops.

Dutta, Joshi, Ghosh, Dube and Nagpurkar, "Slow and Stale Gradients Can Win
the Race" (AISTATS 2018), compare the ways a parameter server can combine
the gradients of ``n`` workers whose compute times vary. Each policy here
wraps an optimizer as `tf.train.SyncReplicasOptimizer` does, and is built
the same way, from an accumulator per variable, a token queue and a chief's
queue runner, so its graph can be drawn and its steps stepped:

============== ===================================================== ========= ========
policy         an update takes                                       stale ok  cancels
============== ===================================================== ========= ========
`FullySync`    one gradient from each of the ``n`` workers           no        no
`KSync`        the first ``K`` workers' gradients                    no        yes
`KBatchSync`   the first ``K`` gradients, a worker may give several  no        yes
`Async`        each gradient on its own, as it comes                 yes       no
`KAsync`       the first ``K`` workers' gradients                    yes       no
`KBatchAsync`  the first ``K`` gradients, a worker may give several  yes       no
============== ===================================================== ========= ========

How a worker goes on after pushing its gradient:

* **Token policies** (`FullySync`, `KSync`, `KAsync`): it waits for a token
  from the chief, as with SyncReplicas, and the token's value, the new
  global step, becomes its local step. Each update releases ``n`` tokens
  (everyone starts again on the new variables) in the synchronous policies
  and ``K`` (only the workers that were in it) in `KAsync`.
* **Batch policies** (`KBatchSync`, `KBatchAsync`, `Async`): it does not
  wait, and computes again. Each step reads the global step together with
  the variables, and pushes its gradient as computed for that step.

How a run ends: a worker stops once it reads its last global step
(``tf.train.StopAtStepHook``), but a token policy's worker in the middle of
a step still pushes and then waits for a token. In `KAsync` the ``n - K``
workers left out of the last update wait for tokens that no update
releases: for ``K > n/2`` none can come, fewer than ``K`` gradients being
left, and for smaller ``K`` only while the chief's queue runner lives. So a
token policy's hook counts its worker's end on the parameter server
(`SyncPolicy.release_at_end_op`). Once the run is over for more than
``n - K`` workers, or for the chief, whose queue runner makes the updates,
no update can come: the worker whose end makes this true releases a token,
carrying the global step, for each worker still running, which ends its
step and stops. Until then nothing is released, so a run that ended
without it makes the same updates. The batch policies' workers never
wait; the chief's queue runner, blocked for gradients, stops with the
chief's session.

"Stale ok": the accumulators of the asynchronous policies accept a gradient
however many updates old its variables are; the synchronous ones drop it,
as TF's accumulator does. "Cancels": when an update is made, the workers
still computing for the old variables stop and start again on the new ones.
A simulated cluster (`minitf.cluster.SimulatedCluster`) does this: it cuts
the rest of their delay, and the gradient they push is dropped as stale
and reported as ``cancelled``. A real cluster cannot interrupt a worker in
the middle of its computation; there the late gradient is dropped when it
arrives, as TF's backup workers' are.

Usage is SyncReplicas's::

    opt = policies.KSync(tf.train.GradientDescentOptimizer(0.1), k=8, num_workers=10)
    train_op = opt.minimize(loss, global_step=global_step)
    hooks = [opt.make_session_run_hook(is_chief)]
"""

from __future__ import annotations

from minitf.framework import dtypes, ops
from minitf.framework.indexed_slices import IndexedSlices
from minitf.ops.array import array_ops
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.data_flow import data_flow_ops
from minitf.ops.data_flow.conditional_accumulator_kernels import CANCELS_IN_FLIGHT, MAX_STALENESS
from minitf.ops.math import math_ops
from minitf.ops.state import state_ops, variables
from minitf.train import optimizer, queue_runner_impl
from minitf.train.session_run_hook import SessionRunHook
from minitf.train.sync_replicas_optimizer import local_step_variable, ready_for_local_init


class SyncPolicy(optimizer.Optimizer):
    """A synchronisation policy: how the gradients of ``num_workers`` workers make updates.

    Use one of the six policies below; this class is what they share.

    Args:
        opt: The optimizer that applies each update's mean gradient.
        aggregate: ``K``, the gradients averaged into each update.
        num_workers: ``n``, the workers that take part.
        tokens_per_update: Tokens the chief releases per update, or None: a
            worker does not wait after its push.
        fresh_only: Whether a gradient computed on variables older than the
            current update is dropped (TF's accumulator) or kept.
        cancels: Whether an update cancels the computations still running on
            the old variables (on a simulated cluster).
        name: The name scope of the policy's ops.

    Raises:
        TypeError: if ``opt`` is not an optimizer.
        ValueError: if ``num_workers`` or ``aggregate`` is not a positive integer.
    """

    def __init__(
        self,
        opt: optimizer.Optimizer,
        aggregate: int,
        num_workers: int,
        *,
        tokens_per_update: int | None,
        fresh_only: bool,
        cancels: bool,
        name: str,
    ):
        if not isinstance(opt, optimizer.Optimizer):
            raise TypeError(
                f"{type(self).__name__}: opt must be a tf.train optimizer (for example "
                f"tf.train.GradientDescentOptimizer(0.1)), got {opt!r}"
            )
        for what, value in (("num_workers", num_workers), ("k", aggregate)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"{type(self).__name__}: {what} must be a positive integer, got {value!r}"
                )
        super().__init__(False, name)
        self._opt = opt
        self.aggregate = aggregate
        self.num_workers = num_workers
        self.tokens_per_update = tokens_per_update
        self.fresh_only = fresh_only
        self.cancels = cancels
        self._applied = False
        self._accumulators: list[tuple] = []
        self._queue_runner = None
        self._token_queue = self._ended_queue = self._global_step = None
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None

    def compute_gradients(self, *args, **kwargs):
        """The inner optimizer's `compute_gradients`."""
        return self._opt.compute_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        """The inner optimizer's `get_slot`."""
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs) -> list[str]:
        """The inner optimizer's `get_slot_names`."""
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        """The inner optimizer's variables."""
        return self._opt.variables()

    def apply_gradients(
        self,
        grads_and_vars: list[tuple],
        global_step: variables.Variable | None = None,
        name: str | None = None,
    ) -> ops.Tensor:
        """Builds the policy around the inner optimizer's update.

        Args:
            grads_and_vars: ``(gradient, variable)`` pairs from `compute_gradients`.
                A sparse gradient (``IndexedSlices``) is made dense.
            global_step: The global step variable; required, since staleness is
                measured in it.
            name: Unused (the ops are named after the policy).

        Returns:
            ``train_op``, a worker's step: push the gradients, then take a
                token (token policies) or read the global step (batch policies)
                into the worker's local step.

        Raises:
            ValueError: for no gradients, no global step, or a second call.
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        if self._applied:
            raise ValueError(
                f"apply_gradients() was already called on {type(self).__name__} "
                f"'{self._name}': make one policy per train op."
            )
        local_step = local_step_variable(global_step, f"{self._name}_local_step")
        self.local_step_init_op = state_ops.assign(local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = variables.report_uninitialized_variables(
            variables.global_variables()
        )
        with ops.name_scope(None, self._name):
            if self.tokens_per_update is None:
                # The step a gradient is computed for: the global step read in
                # the same step as the variables, so both are the values of one
                # moment (a worker reads them when its step starts).
                with ops.colocate_with(local_step):
                    computed_for = array_ops.identity(global_step, name="computed_for")
            else:
                computed_for = local_step  # the token the worker's last step took
            pushes, means = self._accumulate(grads_and_vars, computed_for)
            var_list = [var for _, var in grads_and_vars]
            with ops.device(global_step.device), ops.name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(means, var_list)), global_step)
                # The chief's queue runner needs a queue to close when it stops.
                runner_queue = data_flow_ops.FIFOQueue(
                    1, dtypes.int32, shapes=(), name=f"{self._name}_runner_q",
                    shared_name=f"{self._name}_runner_q",
                )  # fmt: skip
                if self.tokens_per_update is None:
                    with ops.control_dependencies(pushes):
                        train_op = state_ops.assign(local_step, computed_for)
                    chief_op = update_op
                else:
                    token_queue = data_flow_ops.FIFOQueue(
                        -1, global_step.dtype.base_dtype, shapes=(),
                        name=f"{self._name}_token_q", shared_name=f"{self._name}_token_q",
                    )  # fmt: skip
                    with ops.control_dependencies(pushes):
                        token = token_queue.dequeue()
                    train_op = state_ops.assign(local_step, token)
                    with ops.control_dependencies([update_op]):
                        tokens = array_ops.fill([self.tokens_per_update], global_step)
                        chief_op = token_queue.enqueue_many((tokens,))
                    self._token_queue, self._global_step = token_queue, global_step
                    chief_init_ops.append(self._make_ended_count())
                self._queue_runner = queue_runner_impl.QueueRunner(runner_queue, [chief_op])
            for accum, device in self._accumulators:
                with ops.device(device):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init_ops)
        self._applied = True
        return train_op

    def _make_ended_count(self) -> ops.Operation:
        """Makes the shared count of the workers whose run is over; returns the op that zeroes it.

        The count is the one element of a queue of capacity 1, so a worker's
        read-and-add at its end is atomic: the next one waits for the slot.
        """
        self._ended_queue = data_flow_ops.FIFOQueue(
            1, dtypes.int32, shapes=(), name=f"{self._name}_ended_q",
            shared_name=f"{self._name}_ended_q",
        )  # fmt: skip
        emptied = self._ended_queue.dequeue_many(self._ended_queue.size())
        with ops.control_dependencies([emptied]):
            return self._ended_queue.enqueue(0)

    def release_at_end_op(self, is_chief: bool) -> ops.Operation:
        """The op a worker runs when its run is over: it counts itself, and may release the rest.

        A token policy's worker that pushed its gradient waits for a token
        that only an update releases. Once the run is over for more than
        ``num_workers - k`` workers, fewer than ``k`` gradients can still
        come, so no update will; and once the chief's is over, its queue
        runner, which makes the updates, has stopped. The worker whose end
        first makes either true releases one token, carrying the global
        step, for each worker whose run is not over yet (the chief counts
        as ``num_workers`` for this). Before that moment the op releases
        nothing, so runs that end on their own make the same updates.
        Tokens nobody takes stay in the queue, as SyncReplicas's spare
        tokens do.

        `make_session_run_hook`'s hook runs it when the worker's session
        ends; a worker that runs its steps in a plain ``tf.Session`` runs it
        once, after its last step. A batch policy's workers never wait, so
        for them it is a ``no_op``.

        Args:
            is_chief: Whether this worker is the chief.

        Returns:
            The op (on the global step's device).

        Raises:
            ValueError: before `apply_gradients`.
        """
        if not self._applied:
            raise ValueError("release_at_end_op() should be called after apply_gradients().")
        if self.tokens_per_update is None:
            return control_flow_ops.no_op(name=f"{self._name}_end")
        n, k = self.num_workers, self.aggregate
        with ops.device(self._global_step.device), ops.name_scope(None, f"{self._name}_end"):
            ended_before = self._ended_queue.dequeue()
            ended = ended_before + (n if is_chief else 1)
            crossed = math_ops.logical_and(ended_before <= n - k, ended > n - k)
            count = array_ops.where(crossed, n - 1 - ended_before, 0)
            tokens = array_ops.fill(array_ops.reshape(count, [1]), self._global_step)
            return control_flow_ops.group(
                self._ended_queue.enqueue(ended), self._token_queue.enqueue_many((tokens,))
            )

    def _accumulate(self, grads_and_vars, local_step) -> tuple[list, list]:
        """One shared accumulator per variable, on its device, with the policy's rules."""
        pushes, means = [], []
        for grad, var in grads_and_vars:
            if grad is None:
                means.append(None)
                continue
            with ops.device(var.device):
                if isinstance(grad, IndexedSlices):
                    grad = ops.convert_to_tensor(grad)
                accum = data_flow_ops.ConditionalAccumulator(
                    grad.dtype,
                    shape=var.get_shape(),
                    shared_name=f"{var.op.name}/{self._name}_grad_accum",
                )
                op = accum.accumulator_ref.op
                op._set_attr(MAX_STALENESS, 0 if self.fresh_only else -1)
                op._set_attr(CANCELS_IN_FLIGHT, self.cancels)
                pushes.append(accum.apply_grad(grad, local_step=local_step))
                means.append(accum.take_grad(self.aggregate))
            self._accumulators.append((accum, var.device))
        return pushes, means

    def get_chief_queue_runner(self) -> queue_runner_impl.QueueRunner:
        """The `QueueRunner` whose thread makes the updates on the chief.

        Raises:
            ValueError: before `apply_gradients`.
        """
        if not self._applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._queue_runner

    def make_session_run_hook(self, is_chief: bool) -> SessionRunHook:
        """The hook that sets up a worker's local step (and, on the chief, the updates).

        On the chief it also sets the accumulators' global steps and starts the
        updates' queue runner. When the worker's session ends, a token
        policy's hook runs `release_at_end_op`.

        Args:
            is_chief: Whether this worker is the chief.
        """
        return _PolicyHook(self, is_chief)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(k={self.aggregate}, num_workers={self.num_workers})"


class FullySync(SyncPolicy):
    """Every update waits for one fresh gradient from each of the ``num_workers`` workers.

    Args:
        opt: The optimizer that applies the mean gradient.
        num_workers: ``n``.
        name: The name scope of the policy's ops.
    """

    def __init__(self, opt: optimizer.Optimizer, num_workers: int, name: str = "fully_sync"):
        super().__init__(
            opt, num_workers, num_workers, tokens_per_update=num_workers,
            fresh_only=True, cancels=False, name=name,
        )  # fmt: skip


class KSync(SyncPolicy):
    """Each update takes the first ``k`` workers' gradients; the others are cancelled.

    Every worker then starts again on the new variables. With compute times
    ``X_i`` drawn independently, an update takes ``X_(k:n)``, the ``k``-th
    smallest of ``n``.

    Args:
        opt: The optimizer that applies the mean gradient.
        k: Gradients per update (``1 <= k <= num_workers``).
        num_workers: ``n``.
        name: The name scope of the policy's ops.
    """

    def __init__(self, opt: optimizer.Optimizer, k: int, num_workers: int, name: str = "k_sync"):
        _at_most_workers(type(self).__name__, k, num_workers)
        super().__init__(
            opt, k, num_workers, tokens_per_update=num_workers,
            fresh_only=True, cancels=True, name=name,
        )  # fmt: skip


class KBatchSync(SyncPolicy):
    """Each update takes the first ``k`` gradients, from whichever workers; the rest are cancelled.

    A worker that finishes pushes and computes again on the same variables,
    so it can give several of the ``k``.

    Args:
        opt: The optimizer that applies the mean gradient.
        k: Gradients per update (any positive number).
        num_workers: ``n``.
        name: The name scope of the policy's ops.
    """

    def __init__(
        self, opt: optimizer.Optimizer, k: int, num_workers: int, name: str = "k_batch_sync"
    ):
        super().__init__(
            opt, k, num_workers, tokens_per_update=None,
            fresh_only=True, cancels=True, name=name,
        )  # fmt: skip


class Async(SyncPolicy):
    """Each gradient is applied as it comes, however stale; no worker waits for another.

    Args:
        opt: The optimizer that applies each gradient.
        num_workers: ``n``.
        name: The name scope of the policy's ops.
    """

    def __init__(self, opt: optimizer.Optimizer, num_workers: int, name: str = "async"):
        super().__init__(
            opt, 1, num_workers, tokens_per_update=None,
            fresh_only=False, cancels=False, name=name,
        )  # fmt: skip


class KAsync(SyncPolicy):
    """Each update takes the first ``k`` workers' gradients, however stale; nothing is cancelled.

    The ``k`` workers in an update start again on the new variables; the
    others go on with the old ones, and their gradients count later.

    Args:
        opt: The optimizer that applies the mean gradient.
        k: Gradients per update (``1 <= k <= num_workers``).
        num_workers: ``n``.
        name: The name scope of the policy's ops.
    """

    def __init__(self, opt: optimizer.Optimizer, k: int, num_workers: int, name: str = "k_async"):
        _at_most_workers(type(self).__name__, k, num_workers)
        super().__init__(
            opt, k, num_workers, tokens_per_update=k,
            fresh_only=False, cancels=False, name=name,
        )  # fmt: skip


class KBatchAsync(SyncPolicy):
    """Each update takes the first ``k`` gradients, however stale; no worker ever waits.

    Args:
        opt: The optimizer that applies the mean gradient.
        k: Gradients per update (any positive number).
        num_workers: ``n``.
        name: The name scope of the policy's ops.
    """

    def __init__(
        self, opt: optimizer.Optimizer, k: int, num_workers: int, name: str = "k_batch_async"
    ):
        super().__init__(
            opt, k, num_workers, tokens_per_update=None,
            fresh_only=False, cancels=False, name=name,
        )  # fmt: skip


POLICIES = (FullySync, KSync, KBatchSync, Async, KAsync, KBatchAsync)


class _PolicyHook(SessionRunHook):
    """After session creation: the local step; on the chief, the accumulators and the runner.

    At the end of a token policy's run, it runs the policy's `release_at_end_op`.
    """

    def __init__(self, policy: SyncPolicy, is_chief: bool):
        self._policy = policy
        self._is_chief = is_chief
        self._end_op = None

    def begin(self) -> None:
        """Checks that the policy's graph is built; builds the op the worker's end runs.

        Raises:
            ValueError: if its `apply_gradients` has not run.
        """
        if not self._policy._applied:
            raise ValueError(
                f"{type(self._policy).__name__}.apply_gradients should be called before "
                "using the hook."
            )
        if self._policy.tokens_per_update is not None:
            self._end_op = self._policy.release_at_end_op(self._is_chief)

    def end(self, session) -> None:
        """A token policy's worker counts its run as over; it may release the rest."""
        if self._end_op is not None:
            session.run(self._end_op)

    def after_create_session(self, session, coord) -> None:
        """Sets the local step; on the chief also the accumulators' steps, and starts the runner.

        Raises:
            RuntimeError: if a global variable is still uninitialized.
        """
        policy = self._policy
        ready, message = ready_for_local_init(policy.ready_for_local_init_op, session)
        if not ready:
            raise RuntimeError(
                f"Init operations did not make model ready for {type(policy).__name__} "
                f"local_init: {message}"
            )
        if self._is_chief:
            session.run(policy.chief_init_op)
            policy.get_chief_queue_runner().create_threads(
                session, coord=coord, daemon=True, start=True
            )
        else:
            session.run(policy.local_step_init_op)


def _at_most_workers(policy: str, k: int, num_workers: int) -> None:
    if isinstance(k, int) and isinstance(num_workers, int) and k > num_workers:
        raise ValueError(
            f"{policy}: k={k} gradients from distinct workers cannot come from "
            f"num_workers={num_workers}; use KBatchSync/KBatchAsync to let a worker give several"
        )


from minitf.cluster.easgd import AsyncEASGD, EASGDCustomGetter, SyncEASGD, sync_stability_boundary  # noqa: E402, F401, I001
