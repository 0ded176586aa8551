"""``tf.contrib.opt.ElasticAverageOptimizer``: Elastic Averaging SGD (EASGD), asynchronous.

Each worker trains its own copy of the model; every ``communication_period``
of its own steps it pulls that copy and a shared *center* towards each other
by ``moving_rate`` times their difference (Zhang, Choromanska & LeCun, 2015).
Built, as in TF 1.15's contrib module, from public pieces:

1. **Three copies of every variable** (`ElasticAverageCustomGetter`): the
   *local* copy on the worker (trainable, only in ``LOCAL_VARIABLES``), the
   *global center* ``global_center_variable/<name>`` (``GLOBAL_VARIABLES``,
   sent to a ps task by ``replica_device_setter``) and the *local center*
   ``local_center_variable/<name>`` on the worker: this worker's last view of
   the global center.
2. **The elastic loss** (`ElasticAverageOptimizer.compute_gradients`) adds
   ``rho * Σ l2_loss(local - local_center)``: between communications the copy
   is held near where the center was.
3. **Local steps**: the inner optimizer updates the local copies and adds one
   to ``local_step``. Variables it creates (slots, Adam's beta powers) are
   moved from ``GLOBAL_VARIABLES`` to ``LOCAL_VARIABLES``: they are this
   worker's own.
4. **The elastic update** (every ``communication_period`` local steps,
   through ``tf.cond``): ``local_center := global_center``, then with
   ``diff = local - local_center``: ``local -= moving_rate * diff`` and
   ``global_center += moving_rate * diff``, and ``global_step += 1``.
   No accumulator, no barrier: each worker moves the center on its own.

`ElasticAverageOptimizer.make_session_run_hook` copies the global centers
into both local copies when the session starts, and `swapping_saver` saves
the global centers under the local copies' names (the model to evaluate).

TF source: ``tensorflow/contrib/opt/python/training/elastic_average_optimizer.py``.
"""

from __future__ import annotations

from typing import Any

from minitf.contrib.opt.model_average_optimizer import forward_non_trainable, is_trainable
from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.array import constant_op
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.data_flow import data_flow_ops
from minitf.ops.math import math_ops
from minitf.ops.nn import nn_ops
from minitf.ops.state import state_ops, variable_scope, variables
from minitf.train import optimizer
from minitf.train import saver as saver_lib
from minitf.train.saveable_object_util import op_list_to_dict
from minitf.train.session_run_hook import SessionRunHook

__all__ = [
    "GLOBAL_STEP",
    "GLOBAL_VARIABLE_NAME",
    "LOCAL_VARIABLE_NAME",
    "ElasticAverageCustomGetter",
    "ElasticAverageOptimizer",
]

LOCAL_VARIABLE_NAME = "local_center_variable"
GLOBAL_VARIABLE_NAME = "global_center_variable"
GLOBAL_STEP = "global_step"


class ElasticAverageCustomGetter:
    """A custom getter that makes a local copy, a global center and a local center.

    Use it with ``tf.get_variable`` inside a ``replica_device_setter``, so
    that the global centers go to ps tasks::

        getter = ElasticAverageCustomGetter(worker_device)
        with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                                      cluster=cluster)), \\
                tf.variable_scope("", custom_getter=getter):
            w = tf.get_variable("w", initializer=...)

    With a partitioner all three copies are partitioned alike, and the maps
    pair them shard by shard.

    Args:
        worker_device: This worker's device, e.g. ``"/job:worker/task:0"``.
    """

    def __init__(self, worker_device: str):
        self._worker_device = worker_device
        self._local_map: dict = {}
        self._global_map: dict = {}

    def __call__(self, getter, name, trainable, collections, *args, **kwargs) -> Any:
        """Makes ``name``: a trainable one three times, anything else once.

        Returns:
            The local copy of a trainable variable (reused as is with
                ``reuse=True``); the variable itself otherwise.
        """
        if not is_trainable(trainable):
            return forward_non_trainable(
                self._worker_device, getter, name, trainable, collections, *args, **kwargs
            )
        with ops.device(self._worker_device):
            local_var = getter(
                name, *args, trainable=True, collections=[GraphKeys.LOCAL_VARIABLES], **kwargs
            )
        if kwargs.get("reuse") is True:
            return local_var
        global_center = getter(
            *args,
            name=f"{GLOBAL_VARIABLE_NAME}/{name}",
            trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES],
            **kwargs,
        )
        with ops.device(self._worker_device):
            local_center = getter(
                *args,
                name=f"{LOCAL_VARIABLE_NAME}/{name}",
                trainable=False,
                collections=[GraphKeys.LOCAL_VARIABLES],
                **kwargs,
            )
        if kwargs.get("partitioner") is None:
            self._local_map[local_var] = local_center
            self._global_map[local_var] = global_center
        else:
            for shard, local_shard, global_shard in zip(local_var, local_center, global_center):
                self._local_map[shard] = local_shard
                self._global_map[shard] = global_shard
        return local_var


class ElasticAverageOptimizer(optimizer.Optimizer):
    """EASGD: local steps with ``opt``, and an elastic pull towards a shared center.

    Create it inside the custom getter's variable scope, so that its
    ``local_step`` (a local variable) goes to the worker.

    Args:
        opt: The optimizer of the local steps.
        num_worker: How many workers share the center.
        ea_custom_getter: The `ElasticAverageCustomGetter` the model was built with.
        communication_period: Pull once every this many local steps.
        moving_rate: The pull's strength α; default ``BETA / communication_period
            / num_worker`` (the paper's β = 0.9 shared by the workers).
        rho: The elastic loss's strength; default ``moving_rate / learning rate``.
        use_locking: Passed to the base class.
        synchronous: Make `get_init_op` a barrier: every worker waits until
            all have initialized.
        name: The optimizer's name.
    """

    # The paper's β: the total pull of all workers per period.
    BETA = 0.9

    def __init__(
        self,
        opt: optimizer.Optimizer,
        num_worker: int,
        ea_custom_getter: ElasticAverageCustomGetter,
        communication_period: int = 10,
        moving_rate: float | None = None,
        rho: float | None = None,
        use_locking: bool = True,
        synchronous: bool = False,
        name: str = "ElasticAverageOptimizer",
    ):
        super().__init__(use_locking, name)
        self._opt = opt
        self._num_worker = num_worker
        self._period = communication_period
        self._local_map = ea_custom_getter._local_map
        self._global_map = ea_custom_getter._global_map
        self._synchronous = synchronous
        if moving_rate is None:
            moving_rate = self.BETA / communication_period / num_worker
        self._moving_rate = moving_rate
        self._rho = moving_rate / opt._learning_rate if rho is None else rho
        self._local_step = variable_scope.get_variable(
            initializer=0,
            trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
            name="local_step",
        )
        self._opt._prepare()

    def compute_gradients(
        self,
        loss: ops.Tensor,
        var_list: list | None = None,
        gate_gradients: int = optimizer.Optimizer.GATE_OP,
        aggregation_method: int | None = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: ops.Tensor | None = None,
    ) -> list[tuple]:
        """The inner optimizer's gradients of ``loss + rho * Σ l2_loss(local - local_center)``.

        Args:
            loss: The loss tensor.
            var_list: The local copies to differentiate (default: the trainable variables).
            gate_gradients: As in `Optimizer.compute_gradients`.
            aggregation_method: As in `Optimizer.compute_gradients`.
            colocate_gradients_with_ops: As in `Optimizer.compute_gradients`.
            grad_loss: As in `Optimizer.compute_gradients`.

        Returns:
            ``(gradient, variable)`` pairs.
        """
        if not var_list:
            var_list = variables.trainable_variables()
        # TF pairs trainable_variables() with the centers of var_list; the same
        # pairs when var_list is the default, and the right ones otherwise.
        elastic_difference = [math_ops.subtract(var, self._local_map[var]) for var in var_list]
        distance_loss = self._rho * math_ops.add_n(
            [nn_ops.l2_loss(diff) for diff in elastic_difference]
        )
        total_loss = loss + distance_loss
        return self._opt.compute_gradients(
            total_loss,
            var_list,
            gate_gradients,
            aggregation_method,
            colocate_gradients_with_ops,
            grad_loss,
        )

    def apply_gradients(
        self,
        grads_and_vars: list[tuple],
        global_step: variables.Variable | None = None,
        name: str | None = None,
    ) -> ops.Tensor:
        """Builds the local update and, every ``communication_period``, the elastic update.

        Args:
            grads_and_vars: ``(gradient, local variable)`` pairs.
            global_step: Optional; incremented by each elastic update (of any worker).
            name: Unused, as in TF.

        Returns:
            The train op: the local update, then a ``tf.cond`` that makes the
                elastic update when ``local_step`` is a multiple of the period.
        """
        grads_and_vars = list(grads_and_vars)
        global_before = {var.op.name for var in variables.global_variables()}
        apply_updates = self._opt.apply_gradients(grads_and_vars)
        global_after = {var.op.name for var in variables.global_variables()}
        with ops.control_dependencies([apply_updates]):
            local_update = state_ops.assign_add(self._local_step, 1, name="local_step_update").op
        make_local(global_after - global_before)

        def elastic_update():
            local_vars = [var for grad, var in grads_and_vars if grad is not None]
            return self._elastic_update(local_vars, global_step)

        with ops.control_dependencies([local_update]):
            condition = math_ops.equal(math_ops.mod(self._local_step, self._period), 0)
            return control_flow_ops.cond(condition, elastic_update, control_flow_ops.no_op)

    def _elastic_update(self, local_vars: list, global_step) -> ops.Operation:
        """The true branch: refresh the local centers, then move local and global by α·diff."""
        global_centers = [self._global_map[var] for var in local_vars]
        local_centers = [self._local_map[var] for var in local_vars]
        refresh = [
            local_center.assign(global_center)
            for local_center, global_center in zip(local_centers, global_centers)
        ]
        update_ops = []
        with ops.control_dependencies(refresh):
            differences = []
            for var, local_center in zip(local_vars, local_centers):
                with ops.device(var.device):
                    differences.append(math_ops.subtract(var, local_center))
            for var, diff in zip(local_vars, differences):
                with ops.device(var.device):
                    update_ops.append(
                        state_ops.assign_sub(var, math_ops.multiply(self._moving_rate, diff))
                    )
            for global_center, diff in zip(global_centers, differences):
                with ops.device(global_center.device):
                    update_ops.append(
                        state_ops.assign_add(
                            global_center, math_ops.multiply(self._moving_rate, diff)
                        )
                    )
            if global_step is not None:
                with ops.colocate_with(global_step):
                    update_ops.append(state_ops.assign_add(global_step, 1))
        return control_flow_ops.group(*update_ops)

    def get_init_op(self, task_index: int) -> ops.Operation:
        """The op that copies every global center into the local copy and the local center.

        With ``synchronous=True`` it is also a barrier: it finishes only once
        every worker has run its own.

        Args:
            task_index: This worker's index (which barrier queue is its own).

        Raises:
            ValueError: if no trainable variable was made by the custom getter.
        """
        local_vars = variables.trainable_variables()
        global_centers = [self._global_map[var] for var in local_vars]
        local_centers = [self._local_map[var] for var in local_vars]
        if not (local_vars and global_centers and local_centers):
            raise ValueError(
                "The lists of local_variables, global_center_variables, "
                "local_center_variables should not be empty  "
            )
        init_ops = []
        for local_var, global_center, local_center in zip(
            local_vars, global_centers, local_centers
        ):
            init_ops.append(state_ops.assign(local_var, global_center))
            init_ops.append(state_ops.assign(local_center, global_center))
        init_op = control_flow_ops.group(*init_ops)
        if not self._synchronous:
            return init_op
        with ops.device(global_centers[0].device):
            return self._init_barrier(init_op, task_index)

    def _init_barrier(self, init_op, task_index: int) -> ops.Operation:
        """After ``init_op``, a token for every other worker; then wait for one from each.

        One queue per worker, ``variable_init_sync_queue<i>``. TF leaves their
        device to the caller's scope, which in a hook's `begin` is none: each
        worker would then get queues of its own and wait forever. minitf puts
        them with the first global center, on a ps task all workers share.
        """
        sync_queues = [
            data_flow_ops.FIFOQueue(
                self._num_worker,
                [dtypes.bool],
                shapes=[[]],
                shared_name=f"variable_init_sync_queue{i}",
            )
            for i in range(self._num_worker)
        ]
        queue_ops = []
        token = constant_op.constant(False)
        with ops.control_dependencies([init_op]):
            for i, sync_queue in enumerate(sync_queues):
                if i == task_index:
                    queue_ops.append(control_flow_ops.no_op())
                else:
                    queue_ops.append(sync_queue.enqueue(token))
        queue_ops.append(sync_queues[task_index].dequeue_many(len(sync_queues) - 1))
        return control_flow_ops.group(*queue_ops)

    def make_session_run_hook(self, is_chief: bool, task_index: int) -> SessionRunHook:
        """A hook that runs `get_init_op` once the session exists.

        Args:
            is_chief: Whether this worker is the chief (it then also builds
                the global initializer, as TF's hook does).
            task_index: This worker's index, for the barrier of ``synchronous``.
        """
        return _ElasticAverageOptimizerHook(self, is_chief, task_index)

    def swapping_saver(
        self, var_list: list | dict | None = None, name: str = "swapping_saver", **kwargs: Any
    ):
        """A `Saver` that writes each global center under its local copy's name.

        What it saves is the model to evaluate (the center, not this worker's
        copy), restorable into a plain model built without the custom getter.

        Args:
            var_list: What to save, as for `Saver` (default: the trainable
                variables, i.e. the local copies); each local copy is replaced
                by its global center, keeping its checkpoint name.
            name: The saver's name.
            **kwargs: Passed to `Saver`.

        Raises:
            RuntimeError: if the custom getter has made no variable yet.
        """
        if not self._global_map:
            raise RuntimeError(
                "global_center_variable is empty, please make sure this is called after model "
                "created and ElasticAverageCustomGetter is used when declaring you model"
            )
        if var_list is None:
            var_list = variables.trainable_variables()
        if not isinstance(var_list, dict):
            var_list = op_list_to_dict(var_list)
        swapped_var_list = {}
        for key, var in var_list.items():
            if isinstance(var, list):  # the shards of a partitioned variable
                swapped_var_list[key] = [self._global_map.get(shard, shard) for shard in var]
            else:
                swapped_var_list[key] = self._center_of(var)
        return saver_lib.Saver(swapped_var_list, name=name, **kwargs)

    def _center_of(self, var):
        """The global center of the trainable variable named like ``var``, else ``var``."""
        for trainable in variables.trainable_variables():
            if trainable.op.name == var.op.name:
                return self._global_map.get(trainable, var)
        return var


def make_local(names: set) -> None:
    """Moves the named variables from ``GLOBAL_VARIABLES`` to ``LOCAL_VARIABLES``.

    The inner optimizer's own variables (slots, Adam's beta powers) are this
    worker's: the chief must not initialize them, nor a Saver save them.
    """
    global_vars = ops.get_collection_ref(GraphKeys.GLOBAL_VARIABLES)
    moved = [var for var in global_vars if var.op.name in names]
    global_vars[:] = [var for var in global_vars if var.op.name not in names]
    for var in moved:
        ops.add_to_collection(GraphKeys.LOCAL_VARIABLES, var)


class _ElasticAverageOptimizerHook(SessionRunHook):
    """Builds the init ops in `begin`; runs `get_init_op`'s op when the session starts."""

    def __init__(self, ea_optimizer: ElasticAverageOptimizer, is_chief: bool, task_index: int):
        self._ea_optimizer = ea_optimizer
        self._is_chief = is_chief
        self._task_index = task_index
        self._local_init_op = None
        self._global_init_op = None
        self._variable_init_op = None

    def begin(self) -> None:
        """Builds the local (and, on the chief, global) initializer and the copy-in op."""
        self._local_init_op = variables.local_variables_initializer()
        if self._is_chief:
            self._global_init_op = variables.global_variables_initializer()
        self._variable_init_op = self._ea_optimizer.get_init_op(self._task_index)

    def after_create_session(self, session, coord) -> None:
        """Copies the global centers into this worker's copies (and waits, if synchronous)."""
        session.run(self._variable_init_op)
