"""The summary ops (TF's ``gen_logging_ops`` and ``gen_summary_ops``): each outputs a
serialized ``Summary``.

``ScalarSummary``, ``HistogramSummary``, ``ImageSummary``,
``AudioSummaryV2``, ``TensorSummaryV2`` and ``MergeSummary`` are graph ops
like any other: they run where they are placed and their output, a string
scalar, is fetched by ``Session.run`` and handed to a
``tf.summary.FileWriter``. Their kernels are in
`minitf.ops.summary.summary_kernels`; the names and tags users see come from
`minitf.summary`, which calls these constructors.

As in TF, the shape of what a summary op is given is checked when it runs,
not when it is built: ``ScalarSummary`` of a vector builds, and fails in
``Session.run`` with ``InvalidArgumentError``.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import dtypes, ops, tensor_shape
from minitf.ops.op_def_library import check_dtype

__all__ = [
    "audio_summary_v2",
    "histogram_summary",
    "image_summary",
    "merge_summary",
    "scalar_summary",
    "tensor_summary_v2",
]

# TF's TF_CALL_REAL_NUMBER_TYPES, in the order TF's messages list them (minitf has no bfloat16).
REAL_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16,
                     dtypes.int8, dtypes.int64, dtypes.uint16, dtypes.float16, dtypes.uint32,
                     dtypes.uint64)  # fmt: skip
IMAGE_TYPES = (dtypes.uint8, dtypes.float32, dtypes.float16, dtypes.float64)
BAD_COLOR = np.array([255, 0, 0, 255], dtype=np.uint8)
"""What a non-finite pixel of a float image becomes (TF's ``bad_color`` default: opaque red)."""


def _summary_op(op_type: str, inputs: list, scope: str, attrs: dict) -> ops.Tensor:
    op = ops.get_default_graph().create_op(
        op_type, inputs, [dtypes.string], name=scope, attrs=attrs,
        shapes=[tensor_shape.TensorShape([])],
    )  # fmt: skip
    return op.outputs[0]


def _string(value, name: str) -> ops.Tensor:
    return ops.convert_to_tensor(value, dtype=dtypes.string, name=name)


def _real_summary(op_type: str, tag_name: str, tag, values, name) -> ops.Tensor:
    """A summary op of a string ``tag`` input and a real number ``values`` input."""
    with ops.name_scope(name, op_type, [tag, values]) as scope:
        tag = _string(tag, tag_name)
        values = ops.convert_to_tensor(values, name="values")
        dtype = check_dtype("values", values.dtype, REAL_NUMBER_TYPES)
        return _summary_op(op_type, [tag, values], scope, {"T": dtype})


def scalar_summary(tags, values, name=None) -> ops.Tensor:
    """A ``Summary`` with one ``simple_value`` per tag (TF's ``ScalarSummary``).

    Args:
        tags: A string tensor: the tags (one, or as many as ``values`` in the same shape).
        values: A real number tensor of the shape of ``tags``.
        name: The op name.

    Raises:
        TypeError: if ``values`` is not a real number tensor.
    """
    return _real_summary("ScalarSummary", "tags", tags, values, name)


def histogram_summary(tag, values, name=None) -> ops.Tensor:
    """A ``Summary`` with the histogram of ``values`` (TF's ``HistogramSummary``).

    Args:
        tag: A string scalar.
        values: A real number tensor of any shape.
        name: The op name.

    Raises:
        TypeError: if ``values`` is not a real number tensor.
    """
    return _real_summary("HistogramSummary", "tag", tag, values, name)


def image_summary(tag, tensor, max_images: int = 3, bad_color=None, name=None) -> ops.Tensor:
    """A ``Summary`` with up to ``max_images`` PNG images of a batch (TF's ``ImageSummary``).

    Args:
        tag: A string scalar.
        tensor: ``[batch, height, width, channels]`` of uint8, float16, float32
            or float64, with 1, 3 or 4 channels.
        max_images: The most images to write (>= 1).
        bad_color: The uint8 color of non-finite pixels (default opaque red).
        name: The op name.

    Raises:
        TypeError: if ``tensor`` has another dtype.
        ValueError: if ``max_images`` is less than 1.
    """
    if max_images < 1:
        raise ValueError(
            f"Attr 'max_images' of 'ImageSummary' Op passed {max_images} less than minimum 1."
        )
    with ops.name_scope(name, "ImageSummary", [tag, tensor]) as scope:
        tag = _string(tag, "tag")
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        dtype = check_dtype("tensor", tensor.dtype, IMAGE_TYPES)
        color = BAD_COLOR if bad_color is None else np.asarray(bad_color, np.uint8)
        attrs = {"max_images": int(max_images), "bad_color": color, "T": dtype}
        return _summary_op("ImageSummary", [tag, tensor], scope, attrs)


def audio_summary_v2(tag, tensor, sample_rate, max_outputs: int = 3, name=None) -> ops.Tensor:
    """A ``Summary`` with up to ``max_outputs`` WAV clips of a batch (TF's ``AudioSummaryV2``).

    Args:
        tag: A string scalar.
        tensor: float32 ``[batch, frames]`` or ``[batch, frames, channels]``, values in ``[-1, 1]``.
        sample_rate: A float32 scalar: samples a second.
        max_outputs: The most clips to write (>= 1).
        name: The op name.

    Raises:
        TypeError: if ``tensor`` is not float32.
        ValueError: if ``max_outputs`` is less than 1.
    """
    if max_outputs < 1:
        raise ValueError(
            f"Attr 'max_outputs' of 'AudioSummaryV2' Op passed {max_outputs} less than minimum 1."
        )
    with ops.name_scope(name, "AudioSummaryV2", [tag, tensor, sample_rate]) as scope:
        tag = _string(tag, "tag")
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        check_dtype("tensor", tensor.dtype, (dtypes.float32,))
        rate = ops.convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate")
        attrs = {"max_outputs": int(max_outputs)}
        return _summary_op("AudioSummaryV2", [tag, tensor, rate], scope, attrs)


def tensor_summary_v2(tag, tensor, serialized_summary_metadata, name=None) -> ops.Tensor:
    """A ``Summary`` holding ``tensor`` itself and its metadata (TF's ``TensorSummaryV2``).

    Args:
        tag: A string scalar.
        tensor: Any tensor.
        serialized_summary_metadata: A string scalar: a serialized ``SummaryMetadata``.
        name: The op name.
    """
    with ops.name_scope(name, "TensorSummaryV2", [tag, tensor]) as scope:
        tag = _string(tag, "tag")
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        metadata = _string(serialized_summary_metadata, "serialized_summary_metadata")
        attrs = {"T": tensor.dtype.base_dtype}
        return _summary_op("TensorSummaryV2", [tag, tensor, metadata], scope, attrs)


def merge_summary(inputs, name=None) -> ops.Tensor:
    """One ``Summary`` with the values of every input summary (TF's ``MergeSummary``).

    Args:
        inputs: String tensors of serialized ``Summary`` protos (any shape).
        name: The op name.

    Raises:
        TypeError: if an input is not a string tensor.
        ValueError: if ``inputs`` is empty.
    """
    inputs = list(inputs)
    if not inputs:
        raise ValueError("List argument 'inputs' to 'merge_summary' Op with length 0 shorter "
                         "than minimum length 1.")  # fmt: skip
    with ops.name_scope(name, "MergeSummary", inputs) as scope:
        tensors = [ops.convert_to_tensor(x) for x in inputs]
        if any(t.dtype.base_dtype != dtypes.string for t in tensors):
            types = ", ".join(t.dtype.base_dtype.name for t in tensors)
            raise TypeError(
                f"Tensors in list passed to 'inputs' of 'MergeSummary' Op have types "
                f"[{types}] that do not match expected type string."
            )
        return _summary_op("MergeSummary", tensors, scope, {"N": len(tensors)})
