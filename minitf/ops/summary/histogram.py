"""The histogram a ``HistogramSummary`` writes: TF's buckets and how runs of empty ones are kept.

TF's ``tensorflow/core/lib/histogram/histogram.cc`` has one fixed set of
bucket limits for every histogram: ``0``, then ``±1e-12`` growing by 10% at a
time (``v *= 1.1``, in doubles, while ``v < 1e20``), then ``±DBL_MAX``::

    -DBL_MAX, ..., -1.1e-12, -1e-12, 0, 1e-12, 1.1e-12, ..., DBL_MAX

A value falls in the first bucket whose limit is greater than it (C++'s
``upper_bound``): bucket ``i`` counts ``[limit[i-1], limit[i])``, so 0.0
and 1e-13 both count in the bucket of limit 1e-12.

The proto keeps non-empty buckets and writes each run of empty ones as one
bucket, with the limit of the run's last (``EncodeToProto`` with
``preserve_zero_buckets=false``).
"""

from __future__ import annotations

import sys

import numpy as np

from minitf.framework.summary_pb2 import HistogramProto

__all__ = ["default_bucket_limits", "histogram_proto"]


def _limits() -> np.ndarray:
    positive = []
    v = 1.0e-12
    while v < 1.0e20:  # the repeated product, not 1.1**k: the limits are TF's to the last bit
        positive.append(v)
        v *= 1.1
    positive.append(sys.float_info.max)
    negative = [-p for p in reversed(positive)]
    return np.array(negative + [0.0] + positive, dtype=np.float64)


_DEFAULT_LIMITS = _limits()


def default_bucket_limits() -> np.ndarray:
    """TF's default bucket limits (a copy), ascending, from ``-DBL_MAX`` to ``DBL_MAX``."""
    return _DEFAULT_LIMITS.copy()


def histogram_proto(values: np.ndarray) -> HistogramProto:
    """The `HistogramProto` TF's kernel writes for finite ``values`` (any shape).

    ``sum`` and ``sum_squares`` are added up one value at a time in doubles,
    in order, as TF does (numpy's own ``sum`` adds pairwise and can differ in
    the last bits).
    """
    flat = np.asarray(values).ravel().astype(np.float64)
    proto = HistogramProto()
    if flat.size:
        proto.min, proto.max = float(flat.min()), float(flat.max())
        proto.sum = float(np.cumsum(flat)[-1])
        proto.sum_squares = float(np.cumsum(flat * flat)[-1])
    else:
        proto.min, proto.max = sys.float_info.max, -sys.float_info.max  # TF's starting values
    proto.num = float(flat.size)
    counts = np.bincount(
        np.searchsorted(_DEFAULT_LIMITS, flat, side="right"), minlength=len(_DEFAULT_LIMITS)
    )
    _encode_buckets(proto, counts)
    return proto


def _encode_buckets(proto: HistogramProto, counts: np.ndarray) -> None:
    """Appends the buckets, each run of empty ones as one (``EncodeToProto``)."""
    i, n = 0, len(counts)
    while i < n:
        j = i + 1
        if counts[i] == 0:
            while j < n and counts[j] == 0:
                j += 1
        proto.bucket_limit.append(float(_DEFAULT_LIMITS[j - 1]))
        proto.bucket.append(float(counts[j - 1]))
        i = j
