"""`ShortLock`: a lock with ``threading.Lock``'s behaviour, for short critical sections."""

import sys
import threading

import pytest

from minitf.framework.locks import SPINS, ShortLock

pytestmark = pytest.mark.timeout(60)


def test_threads_that_contend_never_are_inside_together():
    lock, inside, counts = ShortLock(), [0], {"max": 0, "total": 0}

    def work():
        for _ in range(2_000):
            with lock:
                inside[0] += 1
                counts["max"] = max(counts["max"], inside[0])
                total = counts["total"]
                # A read-modify-write split by a call: lost updates without the lock.
                counts["total"] = sum([total, 1])
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, inside the critical section too
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert counts == {"max": 1, "total": 8_000}


def test_it_answers_like_threading_lock():
    lock = ShortLock()
    assert lock.acquire() is True
    assert lock.locked()
    assert lock.acquire(False) is False
    assert lock.acquire(timeout=0.01) is False  # held by this thread: not reentrant
    lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()
    with pytest.raises(ValueError, match="non-blocking"):
        lock.acquire(False, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        lock.acquire(True, -2)
    with lock as taken:
        assert taken is True and lock.locked()
    assert not lock.locked()


def test_a_holder_that_keeps_it_long_is_waited_for_past_the_spins():
    lock, held, release = ShortLock(), threading.Event(), threading.Event()

    def hold():
        with lock:
            held.set()
            release.wait(30)  # longer than SPINS tries: the waiter sleeps in the kernel

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    assert lock.acquire(timeout=0.05) is False
    waiter_got = []
    waiter = threading.Thread(target=lambda: waiter_got.append(lock.acquire()))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not waiter_got  # still waiting after its SPINS tries
    release.set()
    waiter.join(10)
    holder.join(10)
    assert waiter_got == [True] and SPINS > 0
    lock.release()


def test_a_condition_waits_and_wakes_on_it():
    lock = ShortLock()
    changed = threading.Condition(lock)
    items = []

    def consume():
        with changed:
            assert changed.wait_for(lambda: items, timeout=10)
            items.append("seen")

    consumer = threading.Thread(target=consume)
    consumer.start()
    with changed:
        items.append("put")
        changed.notify_all()
    consumer.join(10)
    assert items == ["put", "seen"]
    with pytest.raises(RuntimeError):
        changed.notify()  # not held: Condition can tell
