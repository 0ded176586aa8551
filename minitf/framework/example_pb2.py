"""``tf.train.Example`` and its parts: TF's ``example.proto`` and ``feature.proto``.

An ``Example`` is one record of training data: a map from feature names to
lists of bytes, floats or int64s. Serialized, it is what TFRecord files hold
and what ``tf.parse_example`` reads. The field numbers, packing and oneof
are TF's (tensorflow/core/example/feature.proto and example.proto)::

    message BytesList { repeated bytes value = 1; }
    message FloatList { repeated float value = 1 [packed = true]; }
    message Int64List { repeated int64 value = 1 [packed = true]; }
    message Feature { oneof kind { BytesList bytes_list = 1;
                                   FloatList float_list = 2;
                                   Int64List int64_list = 3; } }
    message Features { map<string, Feature> feature = 1; }
    message FeatureList { repeated Feature feature = 1; }
    message FeatureLists { map<string, FeatureList> feature_list = 1; }
    message Example { Features features = 1; }
    message SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }

The message machinery is `minitf.framework.proto_message`.
"""

from __future__ import annotations

from minitf.framework.proto_message import (
    BYTES,
    FLOAT,
    INT64,
    Message,
    MessageMapField,
    RepeatedMessage,
    RepeatedScalar,
    SubMessage,
)
from minitf.framework.proto_wire import DecodeError

__all__ = [
    "BytesList",
    "DecodeError",
    "Example",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FloatList",
    "Int64List",
    "SequenceExample",
]


class BytesList(Message):
    """A list of byte strings (``value``): images, tokens, anything stored as bytes.

    Attributes:
        value: The byte strings (``bytes``; a ``str`` is refused, as in protobuf).
    """

    FULL_NAME = "tensorflow.BytesList"
    FIELDS = (RepeatedScalar("value", 1, BYTES),)


class FloatList(Message):
    """A list of float32 values (``value``), packed on the wire.

    Attributes:
        value: The numbers; each is stored as a float32.
    """

    FULL_NAME = "tensorflow.FloatList"
    FIELDS = (RepeatedScalar("value", 1, FLOAT),)


class Int64List(Message):
    """A list of int64 values (``value``), packed on the wire.

    Attributes:
        value: The integers, each in the int64 range.
    """

    FULL_NAME = "tensorflow.Int64List"
    FIELDS = (RepeatedScalar("value", 1, INT64),)


class Feature(Message):
    """One feature: one of ``bytes_list``, ``float_list``, ``int64_list`` (the oneof ``kind``).

    Attributes:
        bytes_list: A `BytesList`.
        float_list: A `FloatList`.
        int64_list: An `Int64List`.
    """

    FULL_NAME = "tensorflow.Feature"
    FIELDS = (
        SubMessage("bytes_list", 1, BytesList, oneof="kind"),
        SubMessage("float_list", 2, FloatList, oneof="kind"),
        SubMessage("int64_list", 3, Int64List, oneof="kind"),
    )


class Features(Message):
    """Features by name: ``feature`` maps a string to a `Feature`.

    Attributes:
        feature: A map from names to `Feature` messages.
    """

    FULL_NAME = "tensorflow.Features"
    FIELDS = (MessageMapField("feature", 1, Feature),)


class FeatureList(Message):
    """A sequence of features (``feature``), e.g. one per time step.

    Attributes:
        feature: A list of `Feature` messages.
    """

    FULL_NAME = "tensorflow.FeatureList"
    FIELDS = (RepeatedMessage("feature", 1, Feature),)


class FeatureLists(Message):
    """Feature lists by name: ``feature_list`` maps a string to a `FeatureList`.

    Attributes:
        feature_list: A map from names to `FeatureList` messages.
    """

    FULL_NAME = "tensorflow.FeatureLists"
    FIELDS = (MessageMapField("feature_list", 1, FeatureList),)


class Example(Message):
    """One record of data: its ``features``.

    Attributes:
        features: A `Features` message.
    """

    FULL_NAME = "tensorflow.Example"
    FIELDS = (SubMessage("features", 1, Features),)


class SequenceExample(Message):
    """A record with a ``context`` (`Features`) and ``feature_lists`` (one list per time step).

    Attributes:
        context: A `Features` message: what holds for the whole sequence.
        feature_lists: A `FeatureLists` message.
    """

    FULL_NAME = "tensorflow.SequenceExample"
    FIELDS = (
        SubMessage("context", 1, Features),
        SubMessage("feature_lists", 2, FeatureLists),
    )
