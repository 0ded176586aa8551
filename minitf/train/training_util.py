"""The global step: the graph's integer training-step counter.

``tf.train.get_or_create_global_step()`` makes an int64 scalar variable
``global_step`` (in the ``GLOBAL_VARIABLES`` and ``GLOBAL_STEP`` collections,
not trainable); passing it to ``Optimizer.minimize(global_step=...)`` adds one
to it after every update. Hooks, savers and learning-rate schedules find it
again with `get_global_step`: first in the ``GLOBAL_STEP`` collection, then as
the tensor ``global_step:0``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from minitf.framework import dtypes, ops
from minitf.framework.graph_keys import GraphKeys
from minitf.ops.state import variable_scope, variables

if TYPE_CHECKING:
    from minitf.runtime.core.session import BaseSession

__all__ = [
    "global_step",
    "get_global_step",
    "create_global_step",
    "get_or_create_global_step",
    "assert_global_step",
]

_logger = logging.getLogger("minitf")


def global_step(
    sess: BaseSession, global_step_tensor: variables.Variable | ops.Tensor | str
) -> int:
    """Returns the value of the global step as a Python int.

    Args:
        sess: A `Session` to evaluate it in.
        global_step_tensor: The global step variable or tensor (or its name).
    """
    return int(np.asarray(sess.run(global_step_tensor)).item())  # a [1]-shaped step too


def get_global_step(graph: ops.Graph | None = None) -> variables.Variable | ops.Tensor | None:
    """Returns the global step of ``graph`` (default graph), or None if there is none.

    It is the single element of the ``GLOBAL_STEP`` collection, else the tensor
    named ``global_step:0``. Several elements in the collection: logs an error
    and returns None, as TF.

    Args:
        graph: The graph; None means the default graph.

    Raises:
        TypeError: if the global step is not an integer scalar variable or tensor.
    """
    graph = graph or ops.get_default_graph()
    candidates = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(candidates) == 1:
        found = candidates[0]
    elif not candidates:
        try:
            found = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    else:
        _logger.error("Multiple tensors in global_step collection.")
        return None
    assert_global_step(found)
    return found


def create_global_step(graph: ops.Graph | None = None) -> variables.Variable:
    """Creates the global step variable of ``graph`` (default graph).

    An int64 scalar named ``global_step``, initialized to 0, not trainable, in
    the ``GLOBAL_VARIABLES`` and ``GLOBAL_STEP`` collections. Like TF, it is
    made with ``get_variable`` outside any name scope (but inside the current
    variable scope).

    Args:
        graph: The graph; None means the default graph.

    Raises:
        ValueError: if the graph already has a global step.
    """
    from minitf.ops.state import init_ops

    graph = graph or ops.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default() as g, g.name_scope(None):
        return variable_scope.get_variable(
            GraphKeys.GLOBAL_STEP,
            shape=[],
            dtype=dtypes.int64,
            initializer=init_ops.zeros_initializer(),
            trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP],
        )


def get_or_create_global_step(graph: ops.Graph | None = None) -> variables.Variable | ops.Tensor:
    """Returns the global step of ``graph``, creating it if needed (see `create_global_step`).

    Args:
        graph: The graph; None means the default graph.
    """
    graph = graph or ops.get_default_graph()
    found = get_global_step(graph)
    if found is None:
        found = create_global_step(graph)
    return found


def assert_global_step(global_step_tensor: variables.Variable | ops.Tensor) -> None:
    """Checks that ``global_step_tensor`` can be a global step.

    Args:
        global_step_tensor: The variable or tensor to check.

    Raises:
        TypeError: if it is not a variable or tensor, not of an integer type,
            or not a scalar.
    """
    if not isinstance(global_step_tensor, (variables.Variable, ops.Tensor)):
        raise TypeError(
            f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.'
        )
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(
            f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}'
        )
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')
