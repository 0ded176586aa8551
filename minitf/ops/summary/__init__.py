"""Summary ops (TF's ``logging_ops`` summaries): each outputs a serialized ``Summary``.

- ``summary_ops.py``: the constructors (``ScalarSummary``, ``HistogramSummary``,
  ``ImageSummary``, ``AudioSummaryV2``, ``TensorSummaryV2``, ``MergeSummary``);
  the user-facing ``tf.summary`` functions are in `minitf.summary`.
- ``summary_kernels.py``: their kernels; none has a gradient.
- ``histogram.py``: TF's histogram buckets; ``encode.py``: PNG and WAV files.
"""
