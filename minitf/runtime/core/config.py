"""``tf.ConfigProto``, ``tf.RunOptions`` and ``tf.RunMetadata`` as plain Python objects.

TF defines these as protocol buffers; minitf keeps their field names and defaults
so TF1 code that builds them with keyword arguments works unchanged. Unknown
fields raise ``ValueError`` and a value of the wrong type for a number, bool or
string field ``TypeError``, as a protobuf constructor does.

`env_switch` reads the on/off environment variables a task's process is
configured with (``MINITF_SHM``, ``MINITF_KEEP_FREED_MEMORY``).
"""

from __future__ import annotations

import logging
import numbers
import os
import threading
from typing import Any

from minitf.framework import step_stats_pb2
from minitf.runtime.core import step_stats


class _Message:
    """A protobuf-like record: fields with defaults, set by keyword."""

    _FIELDS: dict[str, Any] = {}

    def __init__(self, **kwargs):
        for name, default in self._FIELDS.items():
            setattr(self, name, default() if callable(default) else default)
        for name, value in kwargs.items():
            if name not in self._FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
            self._check_type(name, value)
            setattr(self, name, value)

    def _check_type(self, name: str, value) -> None:
        """Raises protobuf's ``TypeError`` for a scalar field given a value of another type."""
        default = self._FIELDS[name]
        if callable(default):
            return  # a message, list or map field
        if isinstance(default, bool):
            expected, accepted = "bool, int", numbers.Integral
        elif isinstance(default, int):
            expected, accepted = "int", numbers.Integral
        elif isinstance(default, float):
            expected, accepted = "float, int", numbers.Real
        else:
            expected, accepted = "str, bytes", (str, bytes)
        if not isinstance(value, accepted):
            raise TypeError(
                f"{type(self).__name__}.{name}: {value!r} has type {type(value).__name__}, "
                f"but expected one of: {expected}"
            )

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{k}={getattr(self, k)!r}"
            for k, d in self._FIELDS.items()
            if getattr(self, k) != (d() if callable(d) else d)
        )
        return f"{type(self).__name__}({fields})"


class GPUOptions(_Message):
    """GPU options (accepted for compatibility; minitf runs on CPUs)."""

    _FIELDS = {
        "per_process_gpu_memory_fraction": 0.0,
        "allow_growth": False,
        "visible_device_list": "",
    }


class OptimizerOptions(_Message):
    """Graph optimizer options (``opt_level``, ``do_constant_folding``)."""

    L1 = 0
    L0 = -1
    _FIELDS = {
        "opt_level": 0,
        "do_constant_folding": False,
        "do_common_subexpression_elimination": False,
    }


class GraphOptions(_Message):
    """Graph options."""

    _FIELDS = {"optimizer_options": OptimizerOptions, "build_cost_model": 0}


class ConfigProto(_Message):
    """Session configuration (``tf.ConfigProto``).

    minitf honours ``allow_soft_placement``, ``log_device_placement``,
    ``operation_timeout_in_ms``, ``intra_op_parallelism_threads`` (the
    threads of numpy's matrix products: `minitf.runtime.speedups.intra_op`) and,
    in a server's config, ``inter_op_parallelism_threads`` (how many of the
    task's steps may move at once: `inter_op_threads`); the other
    thread-pool sizes are accepted and recorded.
    """

    _FIELDS = {
        "device_count": dict,
        "intra_op_parallelism_threads": 0,
        "inter_op_parallelism_threads": 0,
        "use_per_session_threads": False,
        "allow_soft_placement": False,
        "log_device_placement": False,
        "operation_timeout_in_ms": 0,
        "gpu_options": GPUOptions,
        "graph_options": GraphOptions,
        "device_filters": list,
        "isolate_session_state": False,
    }


class RunOptions(_Message):
    """Per-run options (``tf.RunOptions``): ``timeout_in_ms`` and ``trace_level``."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3
    _FIELDS = {
        "trace_level": 0,
        "timeout_in_ms": 0,
        "inter_op_thread_pool": 0,
        "output_partition_graphs": False,
        "report_tensor_allocations_upon_oom": False,
    }


class RunMetadata(_Message):
    """Per-run output metadata (``tf.RunMetadata``): step statistics and partition graphs.

    ``step_stats`` is filled by a traced run (see `minitf.runtime.core.step_stats`):
    read it as dicts or, as TF code reads the protocol buffer, by attribute.
    """

    _FIELDS = {"step_stats": step_stats.empty, "partition_graphs": list, "cost_graph": dict}

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        """TF's bytes of this metadata (``tensorflow.RunMetadata``): its step statistics.

        The fields TF's ``StepStats`` has are written
        (`minitf.framework.step_stats_pb2`), with the partition graphs given
        as ``GraphDef`` s; ``cost_graph`` is not.
        """
        message = step_stats_pb2.RunMetadata(partition_graphs=list(self.partition_graphs))
        if self.step_stats.get("dev_stats"):  # an untraced run leaves the field unset
            message.step_stats.CopyFrom(step_stats_pb2.step_stats_proto(self.step_stats))
        return message.SerializeToString()


def inter_op_threads(config: ConfigProto | None) -> int:
    """How many of a task's steps may move at once: its inter-op threads.

    TF runs a task's steps on a pool of ``inter_op_parallelism_threads``
    threads from the server's ``ConfigProto``; 0 (the default) is the
    machine's cores, and a negative number runs them in one thread.

    Args:
        config: The server's ``tf.ConfigProto``, or None (the defaults).
    """
    threads = config.inter_op_parallelism_threads if config is not None else 0
    if threads > 0:
        return int(threads)
    return 1 if threads < 0 else cores()


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


_OFF_WORDS = ("0", "off", "false", "no")
_ON_WORDS = ("", "1", "on", "true", "yes")


def env_switch(name: str, what: str) -> bool:
    """Whether the on/off environment variable ``name`` is on; it is when unset.

    ``0``, ``off``, ``false`` and ``no`` turn it off, ``1``, ``on``, ``true``
    and ``yes`` on (in any case). Any other value is logged as a warning that
    names the accepted values, and the switch stays on.

    Args:
        name: The variable.
        what: What it turns on, for the warning ("shared memory").
    """
    raw = os.environ.get(name, "1")
    value = raw.strip().lower()
    if value in _OFF_WORDS:
        return False
    if value not in _ON_WORDS:
        logging.getLogger("minitf").warning(
            "%s=%r is not understood: use 0 (off) or 1 (on, the default); %s stays on",
            name,
            raw,
            what,
        )
    return True


FAST_ENV = "MINITF_FAST"
"""``MINITF_FAST=0`` turns every speed-up of the runtime off (see `fast`)."""

_FAST = env_switch(FAST_ENV, "the runtime's speed-ups")


def fast() -> bool:
    """Whether the runtime's speed-ups are on (``MINITF_FAST``, read once per process).

    They change how fast a step runs, never what it computes: steps run as
    a few large moves (straight walks, `minitf.runtime.speedups.segments.Segments`)
    instead of one move per op, kernels write into buffers they keep, chains
    of ops run as one fused kernel, a step's tensors for another task leave
    in one message, and tasks on one machine pass tensors through shared
    memory. With ``MINITF_FAST=0`` none of that happens: every op is a move
    of its own, every tensor a message of its own, every result a new
    array. The results are the same bit for bit.
    """
    return _FAST


_held = [0]  # how many holds are in force (a stepper of local sessions holds, then releases)
_held_lock = threading.Lock()


def hold_the_clock() -> None:
    """Steps in this process are stepped by hand (``minitf step``): no deadline applies.

    While a stepper holds a cluster, the time a class spends looking at a
    breakpoint is not time a step waited: a run's ``timeout_in_ms``, the
    session's ``operation_timeout_in_ms`` and the "has waited" warnings do
    not apply in a process whose steps a stepper holds. A task process of
    ``minitf step`` holds for its whole life.
    """
    with _held_lock:
        _held[0] += 1


def release_the_clock() -> None:
    """Ends one `hold_the_clock` (a stepped script that ran in this process has ended)."""
    with _held_lock:
        _held[0] = max(0, _held[0] - 1)


def deadlines_apply() -> bool:
    """False while a stepper holds this process's steps (`hold_the_clock`)."""
    return not _held[0]
