"""``tf.Summary`` and its parts: TF's ``summary.proto``.

A summary op's output is a serialized ``Summary``: a list of values, each a
``tag`` and one of a scalar (``simple_value``), an image, a histogram, audio
or a tensor. The field numbers and oneof are TF's
(``tensorflow/core/framework/summary.proto``)::

    message SummaryDescription { string type_hint = 1; }
    message HistogramProto { double min = 1; double max = 2; double num = 3;
                             double sum = 4; double sum_squares = 5;
                             repeated double bucket_limit = 6 [packed = true];
                             repeated double bucket = 7 [packed = true]; }
    message SummaryMetadata {
      message PluginData { string plugin_name = 1; bytes content = 2; }
      PluginData plugin_data = 1; string display_name = 2; string summary_description = 3; }
    message Summary {
      message Image { int32 height = 1; int32 width = 2; int32 colorspace = 3;
                      bytes encoded_image_string = 4; }
      message Audio { float sample_rate = 1; int64 num_channels = 2; int64 length_frames = 3;
                      bytes encoded_audio_string = 4; string content_type = 5; }
      message Value { string node_name = 7; string tag = 1; SummaryMetadata metadata = 9;
                      oneof value { float simple_value = 2; bytes obsolete_old_style_histogram = 3;
                                    Image image = 4; HistogramProto histo = 5; Audio audio = 6;
                                    TensorProto tensor = 8; } }
      repeated Value value = 1; }

The message machinery is `minitf.framework.proto_message` and
`minitf.framework.proto_scalar`.
"""

from __future__ import annotations

from minitf.framework.proto_message import Message, RepeatedMessage, RepeatedScalar, SubMessage
from minitf.framework.proto_scalar import DOUBLE, ScalarField, single
from minitf.framework.tensor_pb2 import TensorProto

__all__ = ["HistogramProto", "Summary", "SummaryDescription", "SummaryMetadata"]

_STRING, _BYTES, _INT32, _INT64 = (
    single("string"),
    single("bytes"),
    single("int32"),
    single("int64"),
)


class SummaryDescription(Message):
    """What a tensor summary holds (``type_hint``)."""

    FULL_NAME = "tensorflow.SummaryDescription"
    FIELDS = (ScalarField("type_hint", 1, _STRING),)


class HistogramProto(Message):
    """A histogram: ``min``, ``max``, ``num``, ``sum``, ``sum_squares`` and its buckets.

    ``bucket[i]`` counts the values in ``[bucket_limit[i-1], bucket_limit[i])``
    (the first from minus infinity). TF's kernel writes a run of empty buckets
    as one (`minitf.ops.summary.histogram`).
    """

    FULL_NAME = "tensorflow.HistogramProto"
    FIELDS = (
        ScalarField("min", 1, single("double")),
        ScalarField("max", 2, single("double")),
        ScalarField("num", 3, single("double")),
        ScalarField("sum", 4, single("double")),
        ScalarField("sum_squares", 5, single("double")),
        RepeatedScalar("bucket_limit", 6, DOUBLE),
        RepeatedScalar("bucket", 7, DOUBLE),
    )


class _PluginData(Message):
    """The plugin a summary is for (``plugin_name``, e.g. ``"text"``) and its ``content``."""

    FULL_NAME = "tensorflow.SummaryMetadata.PluginData"
    FIELDS = (ScalarField("plugin_name", 1, _STRING), ScalarField("content", 2, _BYTES))


class SummaryMetadata(Message):
    """What TensorBoard needs to show a value: its ``plugin_data``, names and description."""

    FULL_NAME = "tensorflow.SummaryMetadata"
    PluginData = _PluginData
    FIELDS = (
        SubMessage("plugin_data", 1, _PluginData),
        ScalarField("display_name", 2, _STRING),
        ScalarField("summary_description", 3, _STRING),
    )


class _Image(Message):
    """An encoded image (PNG): ``height``, ``width``, ``colorspace`` (1 gray, 3 RGB, 4 RGBA)."""

    FULL_NAME = "tensorflow.Summary.Image"
    FIELDS = (
        ScalarField("height", 1, _INT32),
        ScalarField("width", 2, _INT32),
        ScalarField("colorspace", 3, _INT32),
        ScalarField("encoded_image_string", 4, _BYTES),
    )


class _Audio(Message):
    """Encoded audio (WAV): ``sample_rate``, ``num_channels``, ``length_frames``,
    ``content_type``."""

    FULL_NAME = "tensorflow.Summary.Audio"
    FIELDS = (
        ScalarField("sample_rate", 1, single("float")),
        ScalarField("num_channels", 2, _INT64),
        ScalarField("length_frames", 3, _INT64),
        ScalarField("encoded_audio_string", 4, _BYTES),
        ScalarField("content_type", 5, _STRING),
    )


class _Value(Message):
    """One summary value: a ``tag`` and one of the oneof ``value`` (``simple_value``, ``image``,
    ``histo``, ``audio``, ``tensor``)."""

    FULL_NAME = "tensorflow.Summary.Value"
    FIELDS = (
        ScalarField("tag", 1, _STRING),
        ScalarField("simple_value", 2, single("float"), oneof="value"),
        ScalarField("obsolete_old_style_histogram", 3, _BYTES, oneof="value"),
        SubMessage("image", 4, _Image, oneof="value"),
        SubMessage("histo", 5, HistogramProto, oneof="value"),
        SubMessage("audio", 6, _Audio, oneof="value"),
        ScalarField("node_name", 7, _STRING),
        SubMessage("tensor", 8, TensorProto, oneof="value"),
        SubMessage("metadata", 9, SummaryMetadata),
    )


class Summary(Message):
    """A list of summary ``value``\\ s: what summary ops output and event files hold.

    Attributes:
        value: The values, each a ``Summary.Value``.
    """

    FULL_NAME = "tensorflow.Summary"
    Image = _Image
    Audio = _Audio
    Value = _Value
    FIELDS = (RepeatedMessage("value", 1, _Value),)
