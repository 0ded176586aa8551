"""``Session.make_callable``: a function that runs one run signature again and again.

It is part of the session, whose fields it uses. The signature and its
plan are prepared once, and the common call — arrays
of the fed tensors' dtypes and static shapes, a local step that never
waits — goes straight to the executor, skipping the general checks of
`Session.run` that such values pass anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import ops
from minitf.runtime.core import fetches as fetch_lib
from minitf.runtime.core.feeds import not_feedable
from minitf.runtime.core.step_context import StepContext


def make_callable(
    session, fetches: Any, feed_list: list | None = None, accept_options: bool = False
) -> Callable:
    """Returns a function that runs ``fetches`` with positional feed values.

    The run signature and its plan are prepared once, so a training loop pays
    no per-call fetch/feed parsing.

    As in TF, a function made with a ``feed_list`` passes its keyword
    arguments on to `run` (``options``, ``run_metadata``) and feeds its
    values to the tensors of ``feed_list`` in order, as ``zip`` pairs
    them: with fewer values the last tensors are not fed (the run then
    fails for a placeholder without a default), and values beyond the
    list are not used. A function made without one takes no feed values,
    and ``options`` and ``run_metadata`` only with ``accept_options``.

    Args:
        session: The `minitf.runtime.core.session.BaseSession`.
        fetches: As for ``Session.make_callable``.
        feed_list: As for ``Session.make_callable``.
        accept_options: As for ``Session.make_callable``.

    Returns:
        The function.

    Raises:
        TypeError: if ``feed_list`` is not a list or tuple.
    """
    session._check_open()
    if feed_list is not None and not isinstance(feed_list, (list, tuple)):
        raise TypeError(
            f"`feed_list` must be a list or tuple of the tensors fed, not "
            f"{type(feed_list).__name__}: make_callable(fetches, [x, y])"
        )
    mapper = fetch_lib.FetchMapper(session._graph, fetches)
    feed_tensors = tuple(session._feeds.tensor(f) for f in (feed_list or []))
    # Whether the function takes options and metadata (TF's: as run does,
    # or as its template with options does).
    takes_options = accept_options or feed_list is not None
    # Per feed: its tensor, numpy type, and what a value must match to be
    # fed without the general checks: an array of the numpy dtype and the
    # static shape (when fully known), or, for an integer scalar, a Python
    # int within the dtype's range.
    feeds = [
        (t, t.dtype.base_dtype.as_numpy_dtype, np.dtype(t.dtype.base_dtype.as_numpy_dtype),
         _full_shape(t), _int_range(t))
        for t in feed_tensors
    ]  # fmt: skip
    feed_value, is_feedable = session._feeds.value, session._graph.is_feedable
    # Tuples, which the plan's key takes as they are.
    fetch_tensors, target_ops = tuple(mapper.tensors), tuple(mapper.ops)
    signature = (fetch_tensors, target_ops, feed_tensors)
    # The plan while the graph is at this version, if it is a local step
    # that never waits: the common training step, which the runner then
    # runs itself.
    straight: list = [None, None]
    graph, build, resource_mgr = session._graph, mapper.build, session._resource_mgr
    run_plan = session._executor.run

    def runner(*feed_args, **kwargs):
        options = metadata = None
        if kwargs:
            options, metadata = _callable_options(kwargs, takes_options)
        if len(feed_args) != len(feed_tensors):
            if feed_list is None:
                options, metadata = _callable_positional_options(
                    feed_args, accept_options, options, metadata
                )
                feed_args = ()
            else:
                # TF's function pairs the values with feed_list as zip does.
                feed_dict = dict(zip(feed_tensors, feed_args))
                return session.run(fetches, feed_dict, options, metadata)
        values = []
        for (t, np_type, dtype, shape, ints), v in zip(feeds, feed_args):
            if type(v) is np.ndarray and v.dtype is dtype and v.shape == shape:
                v = v.view()
            elif type(v) is int and ints is not None and ints[0] <= v <= ints[1]:
                v = np.array(v, dtype)
            else:
                values.append(feed_value(t, v, None, np_type))
                continue
            if not is_feedable(t):
                raise not_feedable(t)
            v.flags.writeable = False  # as _read_only_view
            values.append(v)
        if options is None and metadata is None:
            if straight[0] != graph.version:
                straight[:] = graph.version, session._straight_plan(*signature)
            plan = straight[1]
            if plan is not None and not session.recorders.active:
                if session._closed:
                    session._check_open()
                # Nothing in the step waits: it needs no cancellation manager.
                ctx = StepContext(resource_mgr, cancellable=False)
                return build(fetch_lib.client_values(run_plan(plan, ctx, values)))
        return build(session._run_signature(*signature, values, options, metadata))

    return runner


def _full_shape(tensor: ops.Tensor) -> tuple | None:
    """The tensor's static shape as a tuple when every dimension is known, else None."""
    static = tensor.get_shape()
    return tuple(static.as_list()) if static.is_fully_defined() else None


def _int_range(tensor: ops.Tensor) -> tuple[int, int] | None:
    """For a scalar of an integer dtype: the Python ints it takes as they are; else None."""
    dtype = np.dtype(tensor.dtype.base_dtype.as_numpy_dtype)
    if dtype.kind not in "iu" or _full_shape(tensor) != ():
        return None
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _callable_options(kwargs: dict, takes_options: bool) -> tuple:
    """The ``options`` and ``run_metadata`` a `make_callable` function was called with.

    Raises:
        TypeError: for any other keyword, or for these where the function
            takes none (made without ``feed_list`` or ``accept_options``).
    """
    unknown = sorted(set(kwargs) - {"options", "run_metadata"})
    if unknown or not takes_options:
        names = ", ".join(repr(k) for k in (unknown or sorted(kwargs)))
        how = (
            "it passes only options= and run_metadata= on to Session.run"
            if takes_options
            else "make it with accept_options=True to pass options= and run_metadata="
        )
        raise TypeError(f"a callable from make_callable got unexpected keyword {names}: {how}")
    return kwargs.get("options"), kwargs.get("run_metadata")


def _callable_positional_options(args: tuple, accept_options: bool, options, metadata) -> tuple:
    """``options`` and ``run_metadata`` given by position to a function made without feeds.

    Made with ``accept_options``, TF's function takes them by position too.

    Raises:
        TypeError: for positional arguments the function does not take.
    """
    if not accept_options or len(args) > 2:
        raise TypeError(
            f"a callable from make_callable without feed_list takes no feed values "
            f"({len(args)} given): pass the tensors they feed as "
            "make_callable(fetches, feed_list=[...])"
        )
    by_keyword = (options, metadata)
    for name, given in zip(("options", "run_metadata"), by_keyword[: len(args)]):
        if given is not None:
            raise TypeError(f"a callable from make_callable got multiple values for {name!r}")
    return (*args, *by_keyword[len(args) :])
