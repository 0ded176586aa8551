"""Step ids: the same runs of the same sessions get the same ids, on every task of a step.

A step's id names it on every task it touches (the rendezvous keys its
tensors by it) and lets a recorded schedule be replayed: `StepIds` gives a
session's runs their ids, from the client task, its process's
`incarnation`, the session's number, the run's signature and a count.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
import zlib

# Step ids are deterministic: the same sessions making the same runs give the
# same ids, so a recorded schedule can be replayed. An id is 62 bits: 24 from
# the client task's name and its process's `incarnation`, 10 from how many
# sessions this process has opened for that task (two sessions of one worker
# must not share ids on a ps, whose rendezvous is keyed by them), 10 from the
# run's signature (what it fetches, runs and feeds) and 18 counting the runs
# of that signature. Counting per signature keeps ids the same even when
# threads of one client race to start their steps (the chief's queue runner
# and its training loop).
_SIGNATURE_BITS = 10
_COUNT_BITS = 18
_COUNT_MASK = (1 << _COUNT_BITS) - 1
_sessions_per_task: dict[str, int] = {}
_sessions_lock = threading.Lock()

INCARNATION_ENV = "MINITF_INCARNATION"
REPLAYABLE = "replayable"
"""The incarnation of every task of a recorded or replayed run: a replay has the recorded ids."""
_incarnation = secrets.token_hex(8)


def incarnation() -> str:
    """This process's incarnation: what tells a restarted task's steps from its old ones.

    A task killed mid-step and started again runs the same runs and would
    count the same step ids; a ps still holding a step of the dead process
    must not take the new one's tensors for it. Random per process, like
    TF's device incarnations, unless ``MINITF_INCARNATION`` fixes it (the
    stepper does, so that a replayed run has the recorded ids).
    """
    return os.environ.get(INCARNATION_ENV) or _incarnation


def _step_base(
    task_name: str, sessions: dict[str, int] | None = None, incarnation_: str | None = None
) -> int:
    """The high bits of a new session's step ids; counts the session in ``sessions``.

    Args:
        task_name: The session's client task.
        sessions: Sessions opened so far per task (default: this process's).
        incarnation_: The client's incarnation (default: `incarnation`).
    """
    with _sessions_lock:
        counts = _sessions_per_task if sessions is None else sessions
        number = counts.get(task_name, 0)
        counts[task_name] = number + 1
    who = f"{task_name}#{incarnation_ or incarnation()}"
    client = zlib.crc32(who.encode()) & 0xFFFFFF
    return client << 38 | (number & 0x3FF) << (_SIGNATURE_BITS + _COUNT_BITS)


class StepIds:
    """The ids of one session's runs (see `_step_base`): the same runs give the same ids.

    Args:
        task_name: The session's client task.
        sessions: Sessions opened so far per task (default: this process's;
            a simulated cluster keeps its own, as each of its tasks would).
        incarnation_: The client's incarnation (default: `incarnation`).
    """

    def __init__(self, task_name: str, sessions: dict[str, int] | None = None, incarnation_=None):
        self.base = _step_base(task_name, sessions, incarnation_)
        self._counters: dict[str, tuple[int, itertools.count]] = {}
        self._lock = threading.Lock()

    def next(self, fetches, targets, feeds) -> int:
        """The next id of a run of this signature (what it fetches, runs and feeds).

        Args:
            fetches: The tensors the run fetches.
            targets: The ops it runs.
            feeds: The tensors it feeds.
        """
        return self.next_of(signature(fetches, targets, feeds))

    def next_of(self, signature: str) -> int:
        """The next id of a run of ``signature`` (`signature` of its fetches, targets and feeds).

        Args:
            signature: The run's signature.
        """
        counter = self._counters.get(signature)
        if counter is None:
            with self._lock:
                counter = self._counters.get(signature)
                if counter is None:
                    used = {slot for slot, _ in self._counters.values()}
                    slot = zlib.crc32(signature.encode()) & ((1 << _SIGNATURE_BITS) - 1)
                    for _ in range(1 << _SIGNATURE_BITS):  # two signatures with one hash
                        if slot not in used:
                            break
                        slot = (slot + 1) & ((1 << _SIGNATURE_BITS) - 1)
                    counter = (slot, itertools.count(1))
                    self._counters[signature] = counter
        slot, numbers = counter
        return self.base | slot << _COUNT_BITS | (next(numbers) & _COUNT_MASK)


def signature(fetches, targets, feeds) -> str:
    """A run's signature: the names of what it fetches, runs and feeds.

    Args:
        fetches: The tensors the run fetches.
        targets: The ops it runs.
        feeds: The tensors it feeds.
    """
    return "|".join(",".join(x.name for x in xs) for xs in (fetches, targets, feeds))
