"""The rendezvous: where tensors sent between tasks wait for the op that receives them.

A partitioned step has a ``_Send`` op on the producing task and a ``_Recv``
op on the consuming task, both naming one key (in a loop, with the frame and
iteration: `StepContext.rendezvous_key`). The ``_Send`` pushes the value
over the wire to the consumer's task, which files it here under
``(step id, key)``; the ``_Recv`` — an asynchronous kernel — takes it, now or
when it arrives. Either may come first.

Aborting a step (an error on any task, a timeout, a lost peer) fails the
``_Recv`` ops of that step that are still waiting and drops what arrives for
it afterwards. The ``_Send``/``_Recv`` kernels are registered here too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.runtime.core.frames import rendezvous_key

_NOT_YET = object()


class Rendezvous:
    """One task's table of tensors in flight, keyed by ``(step id, key)``."""

    def __init__(self):
        self._lock = threading.Lock()
        self._steps: dict[int, dict[str, Any]] = {}
        self._aborted: OrderedDict[int, errors.OpError] = OrderedDict()

    def send(self, step_id: int, key: str, value: Any) -> None:
        """Files ``value`` for the ``_Recv`` of ``key`` in step ``step_id`` (or hands it over).

        Args:
            step_id: The step.
            key: The tensor's rendezvous key.
            value: The tensor's value.

        Raises:
            InternalError: if a value was already sent for ``key`` in the step.
        """
        with self._lock:
            if step_id in self._aborted:
                return
            table = self._steps.setdefault(step_id, {})
            waiting = table.pop(key, _NOT_YET)
            if waiting is _NOT_YET:
                table[key] = value
                return
            if not isinstance(waiting, _Waiter):
                raise errors.InternalError(None, None, f"two values sent for {key}")
        waiting.deliver(value)

    def recv(self, step_id: int, key: str, ctx, done: Callable[[Any], None]) -> None:
        """Calls ``done(value)`` when ``key`` arrives (maybe at once), or ``done(error)``.

        Args:
            step_id: The step.
            key: The tensor's rendezvous key.
            ctx: The receiving step's `StepContext` (a cancelled step fails the receive).
            done: Called once with the value, or with the error that ended the wait.
        """
        with self._lock:
            error = self._aborted.get(step_id)
            if error is None:
                table = self._steps.setdefault(step_id, {})
                value = table.pop(key, _NOT_YET)
                if value is _NOT_YET:
                    table[key] = _Waiter(self, step_id, key, done, ctx)
                    return
        done(error if error is not None else value)

    def abort(self, step_id: int, error: errors.OpError) -> None:
        """Fails the step's waiting receives with ``error``; later sends are dropped.

        Args:
            step_id: The step.
            error: The error the waiting receives get.
        """
        with self._lock:
            self._aborted[step_id] = error
            while len(self._aborted) > 1024:
                self._aborted.popitem(last=False)
            table = self._steps.pop(step_id, {})
        for entry in table.values():
            if isinstance(entry, _Waiter):
                entry.deliver(error)

    def aborted(self, step_id: int) -> errors.OpError | None:
        """The error a step was aborted with, if it was (recently).

        Args:
            step_id: The step.
        """
        with self._lock:
            return self._aborted.get(step_id)

    def cleanup(self, step_id: int) -> None:
        """Forgets what is left of a finished step.

        Args:
            step_id: The step.
        """
        with self._lock:
            self._steps.pop(step_id, None)

    def _cancel(self, waiter: _Waiter) -> None:
        with self._lock:
            table = self._steps.get(waiter.step_id, {})
            if table.get(waiter.key) is not waiter:
                return
            del table[waiter.key]
        waiter.deliver(errors.CancelledError(None, None, "RecvTensor operation was cancelled"))


class _Waiter:
    """A waiting ``_Recv``; also the callback its step's cancellation calls (no closure per wait).

    Exactly one of `Rendezvous.send`, `abort` and `_cancel` takes it out of its
    step's table, under the lock, and only that one delivers: it needs no guard.
    """

    __slots__ = ("rendezvous", "step_id", "key", "done", "cancellation", "token")

    def __init__(self, rendezvous: Rendezvous, step_id: int, key: str, done, ctx):
        self.rendezvous, self.step_id, self.key, self.done = rendezvous, step_id, key, done
        self.cancellation = cancellation = None if ctx is None else ctx.cancellation
        self.token = None if cancellation is None else cancellation.register(self)

    def __call__(self) -> None:
        self.rendezvous._cancel(self)

    def deliver(self, value) -> None:
        if self.token is not None:
            self.cancellation.deregister(self.token)
        self.done(value)


@register_kernel("_Send", stateful=True)
def _send_kernel(op):
    key = op.get_attr("tensor_name")
    recv_task = op.get_attr("recv_task")
    declared = np.dtype(op.inputs[0].dtype.as_numpy_dtype) if op.inputs else None
    floating = declared is not None and declared.kind in "fc"

    def compute(ctx, *value):
        # A control edge sends no data: an empty marker stands for "done".
        tensor = value[0] if value else np.True_
        if floating and getattr(tensor, "dtype", declared) != declared:
            # A kernel upstream broke its output's dtype: say which, here,
            # rather than let the receiving task's arithmetic fail on it.
            source = op.inputs[0]
            raise errors.InternalError(
                None,
                op,
                f"{source.op.type} op {source.op.name!r} produced {tensor.dtype} for its "
                f"{source.dtype.name} output {source.name}",
            )
        where = rendezvous_key(key, ctx.frame_iter) if ctx.frame_iter else key
        if ctx.outbox is None:  # what `post` does then, without its call: the tensor goes now
            ctx.transport.send_tensor(recv_task, ctx.step_id, where, tensor)
        else:
            ctx.post(recv_task, where, tensor, op)
        if ctx.trace is not None:
            ctx.note(op.name, "transfer", _transfer("send", where, tensor))

    return compute


@register_kernel("_Recv", is_async=True, stateful=True)
def _recv_kernel(op):
    base = op.get_attr("tensor_name")

    def compute(ctx, done):
        key = rendezvous_key(base, ctx.frame_iter) if ctx.frame_iter else base
        if ctx.trace is None:
            ctx.rendezvous.recv(ctx.step_id, key, ctx, done)
            return
        ctx.note(op.name, "waited_on", {"kind": "rendezvous", "key": key})
        where = ctx.frame_iter  # the tensor may come while another iteration runs

        def traced_done(value):
            if not isinstance(value, Exception):
                ctx.note(op.name, "transfer", _transfer("recv", key, value), where)
            done(value)

        ctx.rendezvous.recv(ctx.step_id, key, ctx, traced_done)

    return compute


def _transfer(direction: str, key: str, value) -> dict:
    """A trace's record of one tensor crossing tasks (`minitf.runtime.core.step_stats`).

    The peer is the other end's device, read off the key (``src;dst;tensor``).
    """
    src, dst, _ = key.split(";", 2)
    peer = dst if direction == "send" else src
    return {"direction": direction, "key": key, "peer": peer,
            "bytes": int(getattr(value, "nbytes", 0))}  # fmt: skip


NotDifferentiable("_Send")
NotDifferentiable("_Recv")
