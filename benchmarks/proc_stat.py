"""The machine's CPU time from ``/proc/stat``, for the benchmarks: steal, busy cores.

Shared by ``run_all.py`` (the steal while each benchmark runs) and
``sync_training.py`` (the steal over each turn, the busy cores before it).
"""

from __future__ import annotations


def cpu_ticks() -> list[int] | None:
    """The machine's CPU time so far, from the ``cpu`` line of ``/proc/stat``; None without it.

    Returns:
        Ticks of user, nice, system, idle, iowait, irq, softirq and steal time
        (guest time is counted in user and nice already), or None.
    """
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    return [int(value) for value in fields[1:9]]


def steal_fraction(before: list[int] | None, after: list[int] | None) -> float | None:
    """The share of the cores' time between two `cpu_ticks` readings that went to steal.

    Steal is time a virtual machine's cores were ready to run but the
    hypervisor ran something else: the benchmarks lose it without seeing it.

    Args:
        before: The first reading.
        after: The second.

    Returns:
        A fraction between 0 and 1, or None if either reading is missing.
    """
    if before is None or after is None:
        return None
    total = sum(after) - sum(before)
    return (after[7] - before[7]) / total if total > 0 else 0.0
