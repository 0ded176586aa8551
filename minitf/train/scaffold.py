"""``tf.train.Scaffold``: the ops a monitored session needs, found in the graph or built.

A scaffold gathers the init op, the ready ops, the local init op and the
saver, each from its collection (``GraphKeys.INIT_OP``, ``READY_OP``, ...)
or, when the graph has none, built as TF builds its default — and then
freezes the graph (`Scaffold.finalize`). Session creators
(`minitf.train.monitored_session`) and the checkpoint hook
(`minitf.train.basic_session_run_hooks.CheckpointSaverHook`) read it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minitf.framework import ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.control_flow import control_flow_ops
from minitf.ops.state import variables
from minitf.summary import summary
from minitf.train import saver as saver_lib

if TYPE_CHECKING:
    from minitf.framework.default_session import SessionInterface
    from minitf.train.saver import Saver

logger = logging.getLogger("minitf")


class Scaffold:
    """The ops a monitored session needs; what is not given is found in the graph or built.

    Args:
        init_op: Initializes the model (default: the ``INIT_OP`` collection, else
            an op initializing every global variable).
        init_feed_dict: Feeds for ``init_op``.
        init_fn: ``init_fn(scaffold, session)``, called after ``init_op``.
        ready_op: Names what is not initialized (default: ``READY_OP``
            collection, else ``report_uninitialized_variables()``).
        ready_for_local_init_op: The same for what the local init needs
            (default: the global variables).
        local_init_op: Initializes per-session state (default: ``LOCAL_INIT_OP``
            collection, else the local variables' initializer).
        summary_op: What a `SummarySaverHook` runs (default: ``SUMMARY_OP``
            collection, else ``tf.summary.merge_all()``, None without summaries).
        saver: The `Saver` (default: ``SAVERS`` collection, else a sharded one).
        copy_from_scaffold: Take every op not given from this scaffold.

    Raises:
        TypeError: if ``copy_from_scaffold`` is not a `Scaffold`.
    """

    def __init__(
        self,
        init_op: ops.Operation | None = None,
        init_feed_dict: dict | None = None,
        init_fn: Callable[[Scaffold, SessionInterface], None] | None = None,
        ready_op: ops.Tensor | None = None,
        ready_for_local_init_op: ops.Tensor | None = None,
        local_init_op: ops.Operation | None = None,
        summary_op: Any = None,
        saver: Saver | None = None,
        copy_from_scaffold: Scaffold | None = None,
    ):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            given = copy_from_scaffold
            init_op = init_op or given.init_op
            init_feed_dict = init_feed_dict or given.init_feed_dict
            init_fn = init_fn or given._user_init_fn
            ready_op = ready_op or given.ready_op
            ready_for_local_init_op = ready_for_local_init_op or given.ready_for_local_init_op
            local_init_op = local_init_op or given.local_init_op
            summary_op = summary_op or given.summary_op
            saver = saver or given.saver
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Builds what was not given, then freezes the graph (nothing can be added after)."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default(
                "init_op", GraphKeys.INIT_OP, variables.global_variables_initializer
            )
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default(
                "ready_op", GraphKeys.READY_OP, variables.report_uninitialized_variables
            )
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op",
                GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: variables.report_uninitialized_variables(variables.global_variables()),
            )
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op
            )
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default(
                "summary_op", GraphKeys.SUMMARY_OP, summary.merge_all
            )
        if self._saver is None:
            self._saver = _saver_or_default()
        ops.get_default_graph().finalize()
        logger.info("Graph was finalized.")
        return self

    @property
    def init_op(self):
        """The op that initializes the model."""
        return self._init_op

    @property
    def init_feed_dict(self):
        """The feeds for `init_op`, or None."""
        return self._init_feed_dict

    @property
    def init_fn(self):
        """``init_fn(session)``: the given ``init_fn`` with this scaffold bound, or None."""
        return self._init_fn

    @property
    def ready_op(self):
        """The op naming the variables not initialized yet (empty: the model is ready)."""
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        """The op naming what `local_init_op` needs that is not initialized yet."""
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        """The op that initializes per-session state (local variables)."""
        return self._local_init_op

    @property
    def summary_op(self):
        """The op whose summaries a `SummarySaverHook` writes (None: there are no summaries)."""
        return self._summary_op

    @property
    def saver(self):
        """The `Saver` used to restore and save checkpoints."""
        return self._saver

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Callable):
        """The single op of a collection, or a new default one added to it.

        Args:
            arg_name: The `Scaffold` argument the op stands for (for the error).
            collection_key: The collection to look in.
            default_constructor: Called with no arguments to build the op when
                the collection is empty; a result other than None is added to it.

        Raises:
            RuntimeError: if the collection holds more than one.
        """
        found = ops.get_collection(collection_key)
        if found:
            if len(found) > 1:
                raise RuntimeError(
                    f"More than one item in the collection {collection_key}. Please indicate "
                    f"which one to use by passing it to the tf.Scaffold constructor as: "
                    f"tf.Scaffold({arg_name}=item to use)"
                )
            return found[0]
        op = default_constructor()
        if op is not None:
            ops.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """The local variables' initializer (TF also initializes tables, which minitf has not)."""
        return control_flow_ops.group(variables.local_variables_initializer())


def _saver_or_default():
    """The saver of the ``SAVERS`` collection, or a new sharded one added to it (TF's default)."""
    savers = ops.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(
                f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which "
                "one to use by passing it to the constructor."
            )
        return savers[0]
    saver = saver_lib.Saver(sharded=True, allow_empty=True)
    ops.add_to_collection(GraphKeys.SAVERS, saver)
    return saver
