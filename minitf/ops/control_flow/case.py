"""``tf.case``: the first branch whose predicate is true, as a chain of ``tf.cond``.

``case([(p0, f0), (p1, f1)], default)`` is ``cond(p0, f0, lambda: cond(p1,
f1, default))``: the predicates are tested in order and only the branch
chosen runs. Without a default, the last pair's function serves as one,
guarded by an ``Assert`` that its predicate is true and no other one is
(a step where none is true fails). With ``exclusive=True`` an ``Assert``
that at most one predicate is true runs first. From TF 1.15's
``control_flow_ops.case``.
"""

from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Callable
from typing import Any

from minitf.framework import dtypes, ops
from minitf.ops.array import array_ops
from minitf.ops.array.constant_op import constant
from minitf.ops.control_flow.control_flow_ops import cond
from minitf.ops.debugging.logging_ops import Assert
from minitf.ops.math import math_ops

__all__ = ["case"]

logger = logging.getLogger("minitf")


def case(
    pred_fn_pairs: list | tuple | dict,
    default: Callable[[], Any] | None = None,
    exclusive: bool = False,
    strict: bool = False,
    name: str = "case",
) -> Any:
    """The results of the first ``fn`` whose ``pred`` is true, else of ``default``.

    Args:
        pred_fn_pairs: A list (or tuple) of ``(pred, fn)`` pairs — ``pred`` a
            scalar bool tensor, ``fn`` a function of no arguments returning
            tensors — or a dict ``{pred: fn}`` (tested in the order of the
            predicates' names).
        default: A function called when no predicate is true; None makes the
            last pair's ``fn`` the default, failing the step if no predicate
            is true.
        exclusive: Fail the step if more than one predicate is true.
        strict: Keep a single-element list a list (as ``tf.cond``'s ``strict``).
        name: The name scope.

    Returns:
        The chosen function's results, in their structure.

    Raises:
        TypeError: if ``pred_fn_pairs`` is not a list, tuple or dict, a pair
            is not a 2-tuple, a predicate is not a bool tensor, or a ``fn``
            is not callable.
    """
    predicates, actions = _verified_pairs(pred_fn_pairs, exclusive, name)
    with ops.name_scope(name, "case", list(predicates)):
        if default is None:
            default, predicates, actions = _default_action(predicates, actions)
        fn = default
        for predicate, action in reversed(list(zip(predicates, actions))):
            fn = functools.partial(cond, predicate, true_fn=action, false_fn=fn, strict=strict)
        if exclusive:
            check = _assert_at_most_n_true(predicates, 1, "Input error: exclusive=True")
            with ops.control_dependencies([check]):
                return fn()
        return fn()


def _verified_pairs(pred_fn_pairs, exclusive: bool, name) -> tuple:
    """``(predicates, functions)`` of ``pred_fn_pairs``, checked (TF's messages)."""
    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError("fns must be a list, tuple, or dict")
    if isinstance(pred_fn_pairs, collections.OrderedDict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
        if not exclusive:
            logger.warning(
                "%s: An unordered dictionary of predicate/fn pairs was provided, but "
                "exclusive=False. The order of conditional tests is deterministic but not "
                "guaranteed.",
                name,
            )
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if not isinstance(pred, ops.Tensor):
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if pred.dtype.base_dtype != dtypes.bool:
            raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    if not pred_fn_pairs:
        return (), ()
    predicates, actions = zip(*pred_fn_pairs)
    return predicates, actions


def _default_action(predicates: tuple, actions: tuple) -> tuple:
    """The last pair as the default, checked: its predicate true, no other one."""
    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]

    def default_action():
        others = (
            f"Implementation error: selected default action #{k} was called, but some of "
            "other predicates are True: "
        )
        none_true = [
            "Input error: None of conditions evaluated as True:",
            array_ops.stack(predicates, name="preds_c"),
        ]
        checks = [
            _assert_at_most_n_true(predicates[:k], 0, others),
            Assert(predicate, data=none_true),
        ]
        with ops.control_dependencies(checks):
            return action()

    return default_action, predicates[:k], actions[:k]


def _assert_at_most_n_true(predicates, n: int, msg: str) -> ops.Operation:
    """An ``Assert`` that at most ``n`` of ``predicates`` are true."""
    preds_c = array_ops.stack(list(predicates), name="preds_c")
    num_true = math_ops.reduce_sum(math_ops.cast(preds_c, dtypes.int32), name="num_true_conds")
    condition = math_ops.less_equal(num_true, constant(n, name="n_true_conds"))
    names = ", ".join(getattr(p, "name", "?") for p in predicates)
    data = [f"{msg}: more than {n} conditions ({names}) evaluated as True:", preds_c]
    return Assert(condition, data=data, summarize=len(predicates))
