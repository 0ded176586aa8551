"""Tests for minitf.runtime.core.rendezvous: the table where sent tensors meet their receives.

Pinned behaviour: either side may come first; a receive is completed exactly
once — with the value, with the step's abort error, or with TF's
``CancelledError`` when its step is cancelled; an aborted step drops later
sends; a second value for one key is an ``InternalError``.
"""

from __future__ import annotations

import threading

import pytest

from minitf.framework import errors
from minitf.runtime.core.rendezvous import Rendezvous
from minitf.runtime.core.resource_mgr import ResourceMgr
from minitf.runtime.core.step_context import StepContext

pytestmark = pytest.mark.timeout(30)

KEY = "/job:ps/task:0;/job:worker/task:0;x:0"


def _ctx(step_id: int = 7, cancellable: bool = True) -> StepContext:
    return StepContext(ResourceMgr(), step_id=step_id, cancellable=cancellable)


def _receive(rendezvous: Rendezvous, ctx, key: str = KEY) -> list:
    got: list = []
    rendezvous.recv(ctx.step_id if ctx is not None else 7, key, ctx, got.append)
    return got


def test_a_value_sent_first_is_received_at_once():
    rendezvous, ctx = Rendezvous(), _ctx()
    rendezvous.send(7, KEY, 3.0)
    assert _receive(rendezvous, ctx) == [3.0]


def test_a_waiting_receive_gets_the_value_once_and_lets_go_of_its_cancellation():
    rendezvous, ctx = Rendezvous(), _ctx()
    got = _receive(rendezvous, ctx)
    assert got == []
    rendezvous.send(7, KEY, 4.0)
    ctx.cancellation.start_cancel()  # too late: it has its value
    assert got == [4.0]


def test_keys_and_steps_are_kept_apart():
    rendezvous = Rendezvous()
    first, other_key, other_step = _ctx(7), _ctx(7), _ctx(8)
    got = _receive(rendezvous, first)
    got_key = _receive(rendezvous, other_key, KEY + ";while/while_context:1")
    got_step = _receive(rendezvous, other_step)
    rendezvous.send(8, KEY, "eight")
    rendezvous.send(7, KEY + ";while/while_context:1", "iteration")
    rendezvous.send(7, KEY, "seven")
    assert (got, got_key, got_step) == (["seven"], ["iteration"], ["eight"])


def test_a_receive_without_a_context_or_cancellation_waits_for_its_value():
    rendezvous = Rendezvous()
    got = _receive(rendezvous, None)
    uncancellable = _ctx(cancellable=False)
    got_too = _receive(rendezvous, uncancellable, KEY + "b")
    rendezvous.send(7, KEY, 1)
    rendezvous.send(7, KEY + "b", 2)
    assert (got, got_too) == ([1], [2])


def test_two_values_for_one_key_are_an_internal_error():
    rendezvous = Rendezvous()
    rendezvous.send(7, KEY, 1)
    with pytest.raises(errors.InternalError, match="two values sent for"):
        rendezvous.send(7, KEY, 2)


def test_cancelling_the_step_fails_its_waiting_receives_once_each():
    rendezvous, ctx = Rendezvous(), _ctx()
    got = _receive(rendezvous, ctx)
    got_other = _receive(rendezvous, ctx, KEY + "b")
    ctx.cancellation.start_cancel()
    for received in (got, got_other):
        assert len(received) == 1
        assert isinstance(received[0], errors.CancelledError)
        assert received[0].message == "RecvTensor operation was cancelled"
    rendezvous.send(7, KEY, 5.0)  # the tensor that comes later waits for nobody
    assert len(got) == 1
    assert _receive(rendezvous, _ctx()) == [5.0]


def test_abort_fails_waiting_receives_and_drops_later_sends():
    rendezvous, ctx = Rendezvous(), _ctx()
    got = _receive(rendezvous, ctx)
    error = errors.AbortedError(None, None, "a peer failed")
    rendezvous.abort(7, error)
    assert got == [error]
    assert rendezvous.aborted(7) is error
    rendezvous.send(7, KEY + "b", 1.0)  # dropped
    assert _receive(rendezvous, _ctx(), KEY + "b") == [error]
    ctx.cancellation.start_cancel()  # the aborted receive is not failed twice
    assert got == [error]


def test_cleanup_forgets_a_finished_step():
    rendezvous = Rendezvous()
    rendezvous.send(7, KEY, 1.0)
    rendezvous.cleanup(7)
    got = _receive(rendezvous, _ctx())
    assert got == []
    rendezvous.send(7, KEY, 2.0)
    assert got == [2.0]


def test_a_send_and_a_cancel_racing_deliver_exactly_once():
    for _ in range(200):
        rendezvous, ctx = Rendezvous(), _ctx()
        got = _receive(rendezvous, ctx)
        go = threading.Barrier(2)

        def send(rendezvous=rendezvous, go=go):
            go.wait()
            rendezvous.send(7, KEY, 1.0)

        sender = threading.Thread(target=send)
        sender.start()
        go.wait()
        ctx.cancellation.start_cancel()
        sender.join()
        assert len(got) == 1
        assert got[0] == 1.0 or isinstance(got[0], errors.CancelledError)
