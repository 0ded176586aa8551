"""``arg_scope``: default keyword arguments for a set of layer functions.

Slim-style models set the arguments their layers share once::

    with arg_scope([conv2d, fully_connected], weights_regularizer=l2_regularizer(1e-4)):
        with arg_scope([conv2d], padding="VALID"):
            net = conv2d(images, 32, [3, 3])        # VALID, regularized
            net = conv2d(net, 64, [3, 3], padding="SAME")  # the call wins

A *scope* is a dict ``{function key: {argument: value}}``. Entering
``arg_scope(list_ops, **kwargs)`` pushes a copy of the current scope with
``kwargs`` merged into each listed function's entry (the inner value wins);
entering ``arg_scope(scope_dict)`` pushes that saved scope as it is, replacing
(not merging with) the current one. Only functions decorated with
`add_arg_scope` read the scope: the decorated function calls the original
with the scope's arguments for it, overridden by the call's own keyword
arguments. As in TF, the stack is one per process, not per thread.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "add_arg_scope",
    "arg_scope",
    "arg_scoped_arguments",
    "current_arg_scope",
    "has_arg_scope",
]

_ARG_STACK: list[dict] = [{}]

# The keyword arguments each decorated function can take from a scope, by key.
_DECORATED: dict[str, tuple[str, ...]] = {}


def _key(func: Callable) -> str:
    """The scope's key of ``func``: its original's (TF's ``arg_scope_func_key``)."""
    return getattr(func, "_key_op", str(func))


def _name(func: Callable) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__name__', func)}"


def current_arg_scope() -> dict:
    """The innermost scope: ``{function key: {argument: value}}`` (``{}`` outside any).

    Returns:
        The dict the innermost `arg_scope` pushed; do not change it.
    """
    return _ARG_STACK[-1]


def _merged_scope(list_ops: Any, kwargs: dict) -> dict:
    """A copy of the current scope with ``kwargs`` merged into each op's entry."""
    if not isinstance(list_ops, (list, tuple)):
        raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)")
    scope = dict(current_arg_scope())
    for op in list_ops:
        if not has_arg_scope(op):
            raise ValueError(f"{_name(op)} is not decorated with @add_arg_scope")
        scope[_key(op)] = {**scope.get(_key(op), {}), **kwargs}
    return scope


@contextlib.contextmanager
def arg_scope(list_ops_or_scope: Any, **kwargs: Any) -> Iterator[dict]:
    """Sets default keyword arguments of ``list_ops_or_scope`` inside the ``with`` block.

    Args:
        list_ops_or_scope: A list or tuple of functions decorated with
            `add_arg_scope`, or a scope dict yielded by an earlier
            ``with arg_scope(...) as sc`` (re-entered as it was saved).
        **kwargs: The defaults for every listed function; none with a dict.

    Yields:
        The new current scope (a dict to save and re-enter later).

    Raises:
        TypeError: if ``list_ops_or_scope`` is neither a list/tuple nor a dict.
        ValueError: if a listed function is not decorated with
            `add_arg_scope`, or a dict comes with keyword arguments.
    """
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError(
                "When attempting to re-use a scope by supplying a dictionary, kwargs must be empty."
            )
        scope = dict(list_ops_or_scope)
    else:
        scope = _merged_scope(list_ops_or_scope, kwargs)
    _ARG_STACK.append(scope)
    try:
        yield scope
    finally:
        _ARG_STACK.pop()


def _keyword_names(func: Callable) -> tuple[str, ...]:
    """The arguments of ``func`` that have defaults and can be passed by keyword."""
    return tuple(
        p.name
        for p in inspect.signature(func).parameters.values()
        if p.default is not p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
    )


def add_arg_scope(func: Callable) -> Callable:
    """Decorates ``func`` so that `arg_scope` can set its keyword arguments.

    Args:
        func: The function.

    Returns:
        A function with ``func``'s name, docstring and signature that calls
        ``func`` with the current scope's arguments for it, updated by the
        call's keyword arguments.
    """
    key = _key(func)

    @functools.wraps(func)
    def func_with_args(*args: Any, **kwargs: Any) -> Any:
        scoped = current_arg_scope().get(key)
        if scoped:
            kwargs = {**scoped, **kwargs}
        return func(*args, **kwargs)

    _DECORATED[key] = _keyword_names(func)
    func_with_args._key_op = key
    return func_with_args


def has_arg_scope(func: Callable) -> bool:
    """Whether ``func`` was decorated with `add_arg_scope`.

    Args:
        func: A function.
    """
    return _key(func) in _DECORATED


def arg_scoped_arguments(func: Callable) -> tuple[str, ...]:
    """The keyword arguments an `arg_scope` can set for ``func``.

    Args:
        func: A function decorated with `add_arg_scope`.

    Returns:
        The names of ``func``'s arguments that have defaults, in order.

    Raises:
        ValueError: if ``func`` is not decorated with `add_arg_scope`.
    """
    if not has_arg_scope(func):
        raise ValueError(f"{_name(func)} is not decorated with @add_arg_scope")
    return _DECORATED[_key(func)]
