"""The kernels of the summary ops (`minitf.ops.summary.summary_ops`), after TF's
``summary_op.cc``, ``summary_image_op.cc``, ``summary_audio_op.cc`` and
``summary_tensor_op.cc``.

Each returns the bytes of a serialized `Summary`. Errors are TF's, with its
words: a ``ScalarSummary`` whose tags and values differ in shape, a
histogram of a NaN or an infinity, an image tensor that is not 4-D with 1, 3
or 4 channels, two inputs of a ``MergeSummary`` with one tag.
"""

from __future__ import annotations

import numpy as np

from minitf.framework import errors
from minitf.framework.op_registry import NotDifferentiable, register_kernel
from minitf.framework.proto_wire import DecodeError
from minitf.framework.summary_pb2 import Summary, SummaryMetadata
from minitf.framework.tensor_pb2 import make_tensor_proto
from minitf.ops.string.string_ops import as_bytes
from minitf.ops.summary import encode
from minitf.ops.summary.histogram import histogram_proto


def _shape_text(array: np.ndarray) -> str:
    """A shape as TF's ``TensorShape::DebugString`` writes it: ``[2,3]``."""
    return "[" + ",".join(str(d) for d in array.shape) + "]"


def _invalid(op, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(op.node_def, op, message)


def _is_legacy_scalar(array: np.ndarray) -> bool:
    return array.ndim == 0 or (array.ndim == 1 and array.shape[0] == 1)


def _text(value) -> str:
    return as_bytes(value).decode("utf-8", errors="replace")


def _batch_tag(base: str, kind: str, i: int, max_outputs: int) -> str:
    """``<base>/image/<i>``, or ``<base>/image`` when only one was asked for (not: is there)."""
    return f"{base}/{kind}/{i}" if max_outputs > 1 else f"{base}/{kind}"


def _output(summary: Summary) -> bytes:
    return summary.SerializeToString()


@register_kernel("ScalarSummary")
def _scalar_summary_kernel(op):
    def compute(ctx, tags, values):
        tags, values = np.asarray(tags, dtype=object), np.asarray(values)
        if tags.shape != values.shape and not (
            _is_legacy_scalar(tags) and _is_legacy_scalar(values)
        ):
            single = f" (tag '{_text(tags.ravel()[0])}')" if tags.size == 1 else ""
            raise _invalid(
                op,
                f"tags and values not the same shape: {_shape_text(tags)} != "
                f"{_shape_text(values)}{single}",
            )
        summary = Summary()
        for tag, value in zip(tags.ravel(), values.ravel()):
            summary.value.add(tag=_text(tag), simple_value=float(value))
        return _output(summary)

    return compute


@register_kernel("HistogramSummary")
def _histogram_summary_kernel(op):
    def compute(ctx, tag, values):
        tag = np.asarray(tag, dtype=object)
        if not _is_legacy_scalar(tag):
            raise _invalid(op, "tags must be scalar")
        values = np.asarray(values)
        if values.dtype.kind == "f":
            if np.isnan(values).any():
                raise _invalid(op, f"Nan in summary histogram for: {op.name}")
            if np.isinf(values).any():
                raise _invalid(op, f"Infinity in summary histogram for: {op.name}")
        summary = Summary()
        summary.value.add(tag=_text(tag.ravel()[0])).histo.CopyFrom(histogram_proto(values))
        return _output(summary)

    return compute


def _normalized(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """A float image ``[h*w, depth]`` as uint8 (TF's ``NormalizeFloatImage``).

    Only positive values: scaled so the largest is 255. Any negative one:
    0 goes to 128 and the largest magnitude to 1 or 255. Non-finite pixels
    are ignored for the range and painted ``bad_color``.
    """
    finite = np.isfinite(image).all(axis=1)
    ranged = image[finite].astype(np.float32)
    low = ranged.min() if ranged.size else np.float32(np.inf)
    high = ranged.max() if ranged.size else np.float32(-np.inf)
    if low < 0:
        largest = max(abs(low), abs(high))
        scale, offset = (0.0 if largest < 1e-6 else np.float32(127.0) / largest), 128.0
    else:
        scale, offset = (0.0 if high < 1e-6 else np.float32(255.0) / high), 0.0
    scale, offset = image.dtype.type(scale), image.dtype.type(offset)
    with np.errstate(invalid="ignore", over="ignore"):
        out = (image * scale + offset).astype(np.uint8)
    out[~finite] = bad_color[: image.shape[1]]
    return out


def _image_value(summary: Summary, tag: str, image: np.ndarray) -> None:
    height, width, depth = image.shape
    value = summary.value.add(tag=tag)
    value.image.height, value.image.width, value.image.colorspace = height, width, depth
    value.image.encoded_image_string = encode.encode_png(image)


@register_kernel("ImageSummary")
def _image_summary_kernel(op):
    max_images = op.get_attr("max_images")
    bad_color = np.asarray(op.get_attr("bad_color"), np.uint8)

    def compute(ctx, tag, tensor):
        tag = np.asarray(tag, dtype=object)
        if not _is_legacy_scalar(tag):
            raise _invalid(op, "Tags must be a scalar")
        tensor = np.asarray(tensor)
        if tensor.ndim != 4 or tensor.shape[3] not in (1, 3, 4):
            raise _invalid(
                op, f"Tensor must be 4-D with last dim 1, 3, or 4, not {_shape_text(tensor)}"
            )
        batch, height, width, depth = tensor.shape
        if tensor.dtype != np.uint8 and len(bad_color) < depth:
            raise _invalid(
                op,
                f"expected depth <= bad_color.size, got depth = {depth}, "
                f"bad_color.size = {len(bad_color)}",
            )
        summary, base = Summary(), _text(tag.ravel()[0])
        for i in range(min(max_images, batch)):
            image = tensor[i]
            if tensor.dtype != np.uint8 and image.size:
                flat = _normalized(image.reshape(height * width, depth), bad_color)
                image = flat.reshape(height, width, depth)
            _image_value(summary, _batch_tag(base, "image", i, max_images), image)
        return _output(summary)

    return compute


@register_kernel("AudioSummaryV2")
def _audio_summary_kernel(op):
    max_outputs = op.get_attr("max_outputs")

    def compute(ctx, tag, tensor, sample_rate):
        tag, tensor = np.asarray(tag, dtype=object), np.asarray(tensor)
        if tag.ndim != 0:
            raise _invalid(op, "Tag must be a scalar")
        if tensor.ndim not in (2, 3):
            raise _invalid(op, f"Tensor must be 3-D or 2-D, got: {_shape_text(tensor)}")
        rate = np.asarray(sample_rate)
        if rate.size != 1:
            raise _invalid(op, "sample_rate must be rank-0 or contain a single value")
        rate = float(rate.ravel()[0])
        if not rate > 0.0:
            raise _invalid(op, "sample_rate must be > 0")
        clips = tensor.reshape(tensor.shape[0], tensor.shape[1], -1 if tensor.ndim == 3 else 1)
        summary, base = Summary(), _text(tag)
        for i in range(min(max_outputs, clips.shape[0])):
            value = summary.value.add(tag=_batch_tag(base, "audio", i, max_outputs))
            value.audio.sample_rate = rate
            value.audio.num_channels, value.audio.length_frames = clips.shape[2], clips.shape[1]
            value.audio.content_type = "audio/wav"
            value.audio.encoded_audio_string = encode.encode_wav(clips[i], int(rate))
        return _output(summary)

    return compute


@register_kernel("TensorSummaryV2")
def _tensor_summary_kernel(op):
    dtype = op.get_attr("T")

    def compute(ctx, tag, tensor, serialized_summary_metadata):
        summary = Summary()
        value = summary.value.add(tag=_text(tag))
        value.tensor.CopyFrom(make_tensor_proto(tensor, dtype))
        try:
            metadata = SummaryMetadata.FromString(as_bytes(serialized_summary_metadata))
        except DecodeError:
            raise _invalid(op, "Could not parse the serialized summary metadata") from None
        value.metadata.CopyFrom(metadata)
        return _output(summary)

    return compute


@register_kernel("MergeSummary")
def _merge_summary_kernel(op):
    def compute(ctx, *inputs):
        merged, tags = Summary(), set()
        for serialized in (s for value in inputs for s in np.ravel(np.asarray(value, object))):
            try:
                summary = Summary.FromString(as_bytes(serialized))
            except DecodeError:
                raise _invalid(op, "Could not parse one of the summary inputs") from None
            for value in summary.value:
                if value.tag in tags:
                    raise _invalid(op, f"Duplicate tag {value.tag} found in summary inputs")
                tags.add(value.tag)
                merged.value.append(value)
        return _output(merged)

    return compute


for _op_type in ("ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2",
                 "TensorSummaryV2", "MergeSummary"):  # fmt: skip
    NotDifferentiable(_op_type)
