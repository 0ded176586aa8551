"""``tf.contrib.opt.ModelAverageOptimizer``: local SGD, the workers' copies averaged now and then.

Each worker trains its *own copy* of the model and, every ``interval_steps``
of its own steps, all workers average their copies. The wrapper builds that
from public pieces, as TF 1.15's contrib module does:

1. **Two copies of every variable** (`ModelAverageCustomGetter`). Inside
   ``tf.variable_scope("", custom_getter=getter)`` every trainable
   ``get_variable`` makes a *local* copy on the worker (trainable, but only
   in ``LOCAL_VARIABLES``) and a *center* copy ``global_center_variable/<name>``
   in ``GLOBAL_VARIABLES``, which ``replica_device_setter`` sends to a ps task.
2. **Local steps.** The returned train op applies the inner optimizer to the
   local copies and adds one to ``local_step`` (a local variable on the
   worker). The global step is *not* incremented by it.
3. **Averaging** (every ``interval_steps``, through ``tf.cond``). Each worker
   offers its current local values to one ``ConditionalAccumulator`` per
   variable, on the center's ps task and shared by all workers through
   ``shared_name = center.name + "/var_accum"``, tagged with the global step.
   The chief takes the mean of ``num_worker`` offers, assigns it to the
   centers, increments the global step and puts ``num_worker - 1`` tokens in
   ``sync_queue`` (next to the global step); every other worker waits for a
   token. Then each worker copies the centers into its local copies.

The tokens make the averaging a barrier: no worker goes on before the chief
has written the mean, so everyone restarts from the same model.

TF source: ``tensorflow/contrib/opt/python/training/model_average_optimizer.py``.
"""

from __future__ import annotations

from typing import Any

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import array_ops, constant_op
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.data_flow import data_flow_ops
from minitf.ops.math import math_ops
from minitf.ops.state import state_ops, variable_scope, variables
from minitf.train import optimizer
from minitf.train.session_run_hook import SessionRunHook

__all__ = ["GLOBAL_VARIABLE_NAME", "ModelAverageCustomGetter", "ModelAverageOptimizer"]

GLOBAL_VARIABLE_NAME = "global_center_variable"


class ModelAverageCustomGetter:
    """A custom getter that keeps a local copy on the worker and a center copy for the ps.

    Use it with ``tf.get_variable`` (a custom getter never sees ``tf.Variable``)
    inside a ``replica_device_setter``, so that the centers go to ps tasks::

        getter = ModelAverageCustomGetter(worker_device)
        with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                                      cluster=cluster)), \\
                tf.variable_scope("", custom_getter=getter):
            w = tf.get_variable("w", initializer=...)

    Args:
        worker_device: This worker's device, e.g. ``"/job:worker/task:0"``.
    """

    def __init__(self, worker_device: str):
        self._worker_device = worker_device
        self._local_2_global: dict = {}

    def __call__(self, getter, name, trainable, collections, *args, **kwargs) -> Any:
        """Makes ``name``: a trainable one twice (local, then center), anything else once.

        Returns:
            The local copy of a trainable variable; the variable itself otherwise.
        """
        if is_trainable(trainable):
            # The inner device scope sets the job, so the device setter leaves
            # the local copy on the worker and spends no ps slot on it.
            with ops.device(self._worker_device):
                local_var = getter(
                    name, *args, trainable=True, collections=[GraphKeys.LOCAL_VARIABLES], **kwargs
                )
            global_variable = variables.Variable(
                name=f"{GLOBAL_VARIABLE_NAME}/{name}",
                initial_value=local_var.initialized_value(),
                trainable=False,
                collections=[GraphKeys.GLOBAL_VARIABLES],
            )
            self._local_2_global[local_var] = global_variable
            return local_var
        return forward_non_trainable(
            self._worker_device, getter, name, trainable, collections, *args, **kwargs
        )


def is_trainable(trainable) -> bool:
    """The ``trainable`` a custom getter was given, with TF's default for None (True).

    TF resolves the default before it calls a custom getter; minitf's variable
    store passes None through (minitf/ops/state/variable_scope.py), so the getters
    resolve it here.
    """
    return True if trainable is None else bool(trainable)


def forward_non_trainable(worker_device, getter, name, trainable, collections, *args, **kwargs):
    """What both custom getters do with a non-trainable variable: create it unchanged.

    A local one (``LOCAL_VARIABLES`` in ``collections``, like an optimizer's
    ``local_step``) goes to ``worker_device``; others (the global step) stay
    under the caller's device scope, i.e. on a ps task.
    """
    kwargs["trainable"] = trainable
    kwargs["collections"] = collections
    if GraphKeys.LOCAL_VARIABLES in (collections or ()):
        with ops.device(worker_device):
            return getter(name, *args, **kwargs)
    return getter(name, *args, **kwargs)


class ModelAverageOptimizer(optimizer.Optimizer):
    """Trains local copies with ``opt`` and averages them over all workers every few steps.

    Create it inside the custom getter's variable scope, so that its
    ``local_step`` (a local variable) goes to the worker.

    Args:
        opt: The optimizer that updates the local copies.
        num_worker: How many workers average their copies.
        is_chief: Whether this worker writes the averages to the centers.
        ma_custom_getter: The `ModelAverageCustomGetter` the model was built with.
        interval_steps: Average once every this many local steps.
        use_locking: Passed to the base class (the inner optimizer has its own).
        name: The name scope of the accumulators.
    """

    def __init__(
        self,
        opt: optimizer.Optimizer,
        num_worker: int,
        is_chief: bool,
        ma_custom_getter: ModelAverageCustomGetter,
        interval_steps: int = 100,
        use_locking: bool = True,
        name: str = "ModelAverageOptimizer",
    ):
        super().__init__(use_locking, name)
        self._opt = opt
        self._num_worker = num_worker
        self._is_chief = is_chief
        self._local_2_global = ma_custom_getter._local_2_global
        self._interval_steps = interval_steps
        self._accumulator_list: list[tuple] = []
        self._chief_init_op = None
        self._local_step = variable_scope.get_variable(
            initializer=0,
            trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
            name="local_step",
        )
        self._opt._prepare()

    def compute_gradients(self, *args, **kwargs):
        """The inner optimizer's `compute_gradients`."""
        return self._opt.compute_gradients(*args, **kwargs)

    def _local_vars_update(self, var_list) -> ops.Operation:
        """Copies each variable's center into it, on the variable's device.

        Raises:
            ValueError: if ``var_list`` is empty.
        """
        if not var_list:
            raise ValueError("The list of local_variables should not be empty")
        update_ops = []
        for local_var in var_list:
            center = self._local_2_global[local_var]
            # Read where the center lives, so the read waits for the caller's
            # control dependencies: a value that crosses tasks is read when its
            # _Send runs, which would otherwise be as soon as the step starts.
            with ops.device(center.device):
                center_value = center.read_value()
            with ops.device(local_var.device):
                update_ops.append(state_ops.assign(local_var, center_value))
        return control_flow_ops.group(*update_ops)

    def apply_gradients(
        self,
        grads_and_vars: list[tuple],
        global_step: variables.Variable | None = None,
        name: str | None = None,
    ) -> ops.Tensor:
        """Builds the local update and, every ``interval_steps``, the averaging.

        Args:
            grads_and_vars: ``(gradient, local variable)`` pairs.
            global_step: The global step variable: required, it tags the
                offers (stale ones are dropped) and counts the averagings.
            name: Unused, as in TF.

        Returns:
            The train op: the local update, then a ``tf.cond`` that averages
                when ``local_step`` is a multiple of ``interval_steps``.

        Raises:
            ValueError: for no pairs or no global step.
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required")
        # No global step: a local step does not count as a global one.
        apply_updates = self._opt.apply_gradients(grads_and_vars)
        with ops.control_dependencies([apply_updates]):
            local_update = state_ops.assign_add(self._local_step, 1, name="local_step_update").op

        def average_the_workers():
            local_vars = [var for grad, var in grads_and_vars if grad is not None]
            return self._average(local_vars, global_step)

        with ops.control_dependencies([local_update]):
            condition = math_ops.equal(math_ops.mod(self._local_step, self._interval_steps), 0)
            conditional_update = control_flow_ops.cond(
                condition, average_the_workers, control_flow_ops.no_op
            )
        chief_init_ops = []
        for accum, device in self._accumulator_list:
            with ops.device(device):
                chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
        self._chief_init_op = control_flow_ops.group(*chief_init_ops)
        return conditional_update

    def _average(self, local_vars: list, global_step) -> ops.Operation:
        """The averaging round (the true branch): offer, average (chief) or wait, copy back."""
        centers = [self._local_2_global[var] for var in local_vars]
        with ops.colocate_with(global_step):
            sync_queue = data_flow_ops.FIFOQueue(
                -1, [dtypes.bool], shapes=[[]], shared_name="sync_queue"
            )
        offers, averages = self._offer_local_values(local_vars, centers, global_step)
        if self._is_chief:
            sync_op = self._write_averages(offers, averages, centers, global_step, sync_queue)
        else:
            with ops.control_dependencies(offers), ops.device(global_step.device):
                sync_op = sync_queue.dequeue()
        with ops.control_dependencies([sync_op]):
            return self._local_vars_update(local_vars)

    def _offer_local_values(self, local_vars, centers, global_step) -> tuple[list, list]:
        """One shared accumulator per variable, next to its center.

        Returns:
            (offers, averages): this worker's ``apply_grad`` of its local value
            (tagged with the global step) and the mean of ``num_worker`` offers.
        """
        offers, averages = [], []
        with ops.name_scope(None, self._name + "/global"):
            for var, center in zip(local_vars, centers):
                # Read on the worker, after this step's local update (for the
                # same reason as in `_local_vars_update`).
                with ops.device(var.device):
                    local_value = var.read_value()
                with ops.device(center.device):
                    accum = data_flow_ops.ConditionalAccumulator(
                        var.dtype.base_dtype,
                        shape=var.get_shape(),
                        shared_name=center.name + "/var_accum",
                    )
                    offers.append(accum.apply_grad(local_value, local_step=global_step))
                    averages.append(accum.take_grad(self._num_worker))
                self._accumulator_list.append((accum, center.device))
        return offers, averages

    def _write_averages(self, offers, averages, centers, global_step, sync_queue):
        """The chief's part: centers := means, global step + 1, then one token per other worker."""
        update_ops = []
        with ops.control_dependencies(offers):
            for average, center in zip(averages, centers):
                with ops.device(center.device):
                    update_ops.append(state_ops.assign(center, average))
            with ops.device(global_step.device):
                update_ops.append(state_ops.assign_add(global_step, 1))
        with ops.control_dependencies(update_ops), ops.device(global_step.device):
            tokens = array_ops.fill([self._num_worker - 1], constant_op.constant(False))
            return sync_queue.enqueue_many(tokens)

    def get_init_op(self) -> ops.Operation:
        """The op that copies every center into its local copy (all trainable variables).

        Raises:
            ValueError: if there are no trainable variables.
        """
        return self._local_vars_update(variables.trainable_variables())

    def make_session_run_hook(self) -> SessionRunHook:
        """A hook that builds the init ops when the session starts (it runs none, as in TF 1.15)."""
        return _ModelAverageOptimizerHook(self, self._is_chief)


class _ModelAverageOptimizerHook(SessionRunHook):
    """Builds the local, global, chief and copy-the-centers init ops in `begin`.

    TF 1.15's hook stops there: nothing runs them, and the copies start equal
    because each center is initialized from its local copy's initial value.
    """

    def __init__(self, ma_optimizer: ModelAverageOptimizer, is_chief: bool):
        self._ma_optimizer = ma_optimizer
        self._is_chief = is_chief
        self._local_init_op = None
        self._global_init_op = None
        self._chief_init_op = None
        self._variable_init_op = None

    def begin(self) -> None:
        """Builds the init ops (the chief's global and chief ones only on the chief)."""
        self._local_init_op = variables.local_variables_initializer()
        if self._is_chief:
            self._global_init_op = variables.global_variables_initializer()
            self._chief_init_op = self._ma_optimizer._chief_init_op
        self._variable_init_op = self._ma_optimizer.get_init_op()
