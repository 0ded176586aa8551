"""Straggler delay models: how long a slow worker's step waits, drawn per step with a seed.

A model is called with a numpy ``Generator`` and returns seconds. The same
models serve the real cluster, where the wait is real (a worker task waits
before it computes its gradients, and traces show the wait as a
``StragglerDelay`` bar), and the simulated one, where it advances a virtual
clock.

Switch stragglers on without touching the model, for every worker task the
process starts, with an environment variable (``minitf demo --straggler``
and ``minitf launch`` pass it on)::

    MINITF_STRAGGLERS="1=Constant(0.05)"                 # worker 1: 50 ms per step
    MINITF_STRAGGLERS="*=Exponential(0.01);2=Pareto(1.5, 0.01)"
    MINITF_STRAGGLER_SEED=7                              # default 0

``*`` is every worker without an entry of its own. Each worker draws from
its own stream (``default_rng([seed, worker])``), so a run's delays are the
same every time.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping

import numpy as np

ENV = "MINITF_STRAGGLERS"
SEED_ENV = "MINITF_STRAGGLER_SEED"


class DelayModel:
    """A distribution of per-step delays in seconds."""

    def __call__(self, rng: np.random.Generator) -> float:
        raise NotImplementedError

    @property
    def mean(self) -> float:
        """The expected delay in seconds (``inf`` when it has none)."""
        raise NotImplementedError


class Constant(DelayModel):
    """The same delay every step.

    Args:
        seconds: The delay (>= 0).
    """

    def __init__(self, seconds: float):
        self.seconds = _non_negative("Constant", "seconds", seconds)

    def __call__(self, rng: np.random.Generator) -> float:
        return self.seconds

    @property
    def mean(self) -> float:
        """The mean delay, in seconds: ``seconds``."""
        return self.seconds

    def __repr__(self) -> str:
        return f"Constant({self.seconds:g})"


class Exponential(DelayModel):
    """Exponentially distributed delays: most steps are quick, a few are slow.

    Args:
        mean: The mean delay in seconds (>= 0).
    """

    def __init__(self, mean: float):
        self._mean = _non_negative("Exponential", "mean", mean)

    def __call__(self, rng: np.random.Generator) -> float:
        return float(rng.exponential(self._mean)) if self._mean else 0.0

    @property
    def mean(self) -> float:
        """The mean delay, in seconds."""
        return self._mean

    def __repr__(self) -> str:
        return f"Exponential({self._mean:g})"


class ShiftedExponential(DelayModel):
    """A fixed minimum plus an exponential tail (the usual model of a worker's step time).

    Args:
        shift: The delay every step has, in seconds (>= 0).
        mean: The mean of the exponential part (>= 0).
    """

    def __init__(self, shift: float, mean: float):
        self.shift = _non_negative("ShiftedExponential", "shift", shift)
        self._tail = Exponential(mean)

    def __call__(self, rng: np.random.Generator) -> float:
        return self.shift + self._tail(rng)

    @property
    def mean(self) -> float:
        """The mean delay, in seconds: the shift plus the exponential's mean."""
        return self.shift + self._tail.mean

    def __repr__(self) -> str:
        return f"ShiftedExponential({self.shift:g}, {self._tail.mean:g})"


class Pareto(DelayModel):
    """Heavy-tailed delays: the rare very slow step that backup workers are for.

    Args:
        shape: The tail index alpha (> 0); the smaller, the heavier the tail.
        scale: The smallest delay, in seconds (>= 0).

    Raises:
        ValueError: if ``shape`` is not positive or ``scale`` is negative.
    """

    def __init__(self, shape: float, scale: float):
        if not shape > 0:
            raise ValueError(f"Pareto: shape must be positive, got {shape}")
        self.shape = float(shape)
        self.scale = _non_negative("Pareto", "scale", scale)

    def __call__(self, rng: np.random.Generator) -> float:
        return float((rng.pareto(self.shape) + 1.0) * self.scale)

    @property
    def mean(self) -> float:
        """The mean delay, in seconds (infinite when ``shape <= 1``)."""
        return self.shape * self.scale / (self.shape - 1) if self.shape > 1 else math.inf

    def __repr__(self) -> str:
        return f"Pareto({self.shape:g}, {self.scale:g})"


MODELS = {cls.__name__: cls for cls in (Constant, Exponential, ShiftedExponential, Pareto)}
_MODEL = re.compile(r"^\s*([A-Za-z]+)\s*\(([^()]*)\)\s*$")


def parse_model(text: str) -> DelayModel:
    """``"Exponential(0.01)"`` → ``Exponential(0.01)``.

    Args:
        text: A model's constructor call, e.g. ``"Pareto(1.5, 0.01)"``.

    Raises:
        ValueError: naming what was wrong and the models there are.
    """
    match = _MODEL.match(text)
    if not match or match.group(1) not in MODELS:
        raise ValueError(
            f"not a delay model: {text!r}; expected one of "
            + ", ".join(f"{name}(...)" for name in MODELS)
            + ", e.g. Constant(0.05) or ShiftedExponential(0.01, 0.02), in seconds"
        )
    name, args = match.groups()
    try:
        values = [float(a) for a in args.split(",")] if args.strip() else []
    except ValueError:
        raise ValueError(f"{name}: arguments must be numbers, got {args!r}") from None
    try:
        return MODELS[name](*values)
    except TypeError:
        raise ValueError(f"{name}: wrong number of arguments in {text!r}") from None


def parse(spec: str) -> dict[str, DelayModel]:
    """``"1=Constant(0.05);*=Exponential(0.01)"`` → ``{"1": ..., "*": ...}``.

    Args:
        spec: ``worker=Model(args)`` entries separated by ``;`` (``*`` for every other worker).

    Raises:
        ValueError: for an entry that is not ``worker=Model(args)``.
    """
    stragglers = {}
    for entry in filter(None, (e.strip() for e in spec.split(";"))):
        worker, sep, model = entry.partition("=")
        worker = worker.strip()
        if not sep or not (worker == "*" or worker.isdigit()):
            raise ValueError(
                f"{ENV}: expected entries like '1=Constant(0.05)' or '*=Exponential(0.01)' "
                f"separated by ';', got {entry!r}"
            )
        stragglers[str(int(worker)) if worker != "*" else "*"] = parse_model(model)
    return stragglers


class Straggler:
    """The delays of one worker: its model and its own seeded stream.

    Args:
        model: The delay model.
        worker: The worker's task index.
        seed: The run's seed.
    """

    def __init__(self, model: DelayModel, worker: int, seed: int = 0):
        self.model = model
        self.worker = worker
        self._rng = np.random.default_rng([seed, worker])

    def next_delay(self) -> float:
        """The next step's delay in seconds."""
        return self.model(self._rng)

    def __repr__(self) -> str:
        return f"Straggler(worker {self.worker}: {self.model!r})"


def for_task(job: str, index: int, environ: Mapping[str, str] | None = None) -> Straggler | None:
    """This task's `Straggler` from ``MINITF_STRAGGLERS``, or None (only worker tasks straggle).

    Args:
        job: The task's job.
        index: The task's index.
        environ: The environment to read (default: ``os.environ``).

    Raises:
        ValueError: if the variable cannot be parsed.
    """
    environ = os.environ if environ is None else environ
    spec = environ.get(ENV, "")
    if job != "worker" or not spec.strip():
        return None
    models = parse(spec)
    model = models.get(str(index), models.get("*"))
    if model is None:
        return None
    return Straggler(model, index, int(environ.get(SEED_ENV, "0")))


def _non_negative(model: str, name: str, value: float) -> float:
    value = float(value)
    if not 0 <= value < math.inf:
        raise ValueError(f"{model}: {name} must be a finite number of seconds >= 0, got {value}")
    return value
