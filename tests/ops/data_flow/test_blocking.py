"""Attempts and their step's cancellation (`minitf.ops.data_flow.blocking`).

An attempt that finishes at once needs no cancellation callback; one left
waiting registers one, and a step cancelled at any point — before the
attempt, or between its first try and its registration — completes it with
``CancelledError`` exactly once. Driven on a dense accumulator's take
(`TAKE`), with a `CancellationManager` standing for the step.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.conditional_accumulator_kernels import TAKE, ConditionalAccumulator
from minitf.runtime.core.step_context import CancellationManager

pytestmark = pytest.mark.timeout(30)


class Step:
    """What a kernel's step context shows a resource: its cancellation manager."""

    def __init__(self, cancellation: CancellationManager):
        self.cancellation = cancellation


class CancelledWhileRegistering(CancellationManager):
    """A manager whose step is cancelled just before a callback registers."""

    def register(self, callback):
        self.start_cancel()
        return super().register(callback)


def accumulator_with(count: int) -> ConditionalAccumulator:
    """A SUM accumulator of shape [2] holding ``count`` gradients of ones."""
    acc = ConditionalAccumulator("acc", tf.float32, [2], "SUM")
    for _ in range(count):
        acc.mutate(lambda: acc.finish_apply(_added(acc)))
    return acc


def _added(acc):
    held = acc.start_apply(0, (2,))
    acc.add(held, np.ones(2, np.float32), False)
    return held


def take(acc, manager, required: int) -> list:
    """Starts a take of ``required`` gradients; returns what its ``done`` receives."""
    arrived = []
    acc.try_attempt(TAKE, Step(manager), arrived.append, acc.run_take, "cancelled", required)
    return arrived


def test_a_take_that_completes_at_once_is_not_cancelled_later():
    acc, manager = accumulator_with(2), CancellationManager()
    arrived = take(acc, manager, 2)
    manager.start_cancel()
    assert len(arrived) == 1
    np.testing.assert_array_equal(arrived[0].value(), [2.0, 2.0])


def test_a_waiting_take_is_cancelled_with_its_step():
    acc, manager = accumulator_with(1), CancellationManager()
    arrived = take(acc, manager, 2)
    assert not arrived and acc.num_waiting(TAKE) == 1
    manager.start_cancel()
    assert len(arrived) == 1 and isinstance(arrived[0], tf.errors.CancelledError)
    assert acc.num_waiting(TAKE) == 0 and acc.counter == 1


def test_a_take_cancelled_before_it_registers_stops_waiting():
    acc = accumulator_with(1)
    arrived = take(acc, CancelledWhileRegistering(), 2)
    assert len(arrived) == 1 and isinstance(arrived[0], tf.errors.CancelledError)
    assert acc.num_waiting(TAKE) == 0 and acc.counter == 1


def test_a_take_in_a_cancelled_step_fails_even_if_it_could_complete():
    acc, manager = accumulator_with(2), CancellationManager()
    manager.start_cancel()
    arrived = take(acc, manager, 1)
    assert len(arrived) == 1 and isinstance(arrived[0], tf.errors.CancelledError)
    assert acc.counter == 2 and acc.global_step == 0
