"""tf.train.Example and its parts: protobuf's bytes, its Python API and its text format.

The hex test vectors were made once with TensorFlow 2.x's own protos
(``tensorflow.core.example.example_pb2``, protobuf 7.36 with its upb
backend): each message below was built there the same way and written with
``SerializeToString(deterministic=True)`` (map entries sorted by key; with
one key per map the bytes are the same without it). The expected text is
what ``str()`` printed there.
"""

from __future__ import annotations

import copy
import pickle

import pytest

import minitf as tf
from minitf.framework.example_pb2 import DecodeError

F = tf.train.Feature


def floats(v):
    return F(float_list=tf.train.FloatList(value=v))


def ints(v):
    return F(int64_list=tf.train.Int64List(value=v))


def strings(v):
    return F(bytes_list=tf.train.BytesList(value=v))


def example(d):
    return tf.train.Example(features=tf.train.Features(feature=d))


VECTORS = {
    "empty": (lambda: tf.train.Example(), ""),
    "empty_features": (lambda: example({}), "0a00"),
    "one_float": (lambda: example({"x": floats([1.0])}), "0a0f0a0d0a0178120812060a040000803f"),
    "floats": (
        lambda: example({"x": floats([0.5, -2.0, 3.25])}),
        "0a170a150a01781210120e0a0c0000003f000000c000005040",
    ),
    "ints": (
        lambda: example({"n": ints([0, 1, -1, 300, 2**40, -(2**63), 2**63 - 1])}),
        "0a320a300a016e122b1a290a270001ffffffffffffffffff01ac02808080808020808080808080808080"
        "01ffffffffffffffff7f",
    ),
    "bytes": (
        lambda: example({"s": strings([b"", b"hello", bytes(range(130))])}),
        "0a9a010a97010a01731291010a8e010a000a0568656c6c6f0a8201000102030405060708090a0b0c0d0e0f"
        "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a"
        "3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465"
        "666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f8081",
    ),
    "empty_feature": (lambda: example({"e": F()}), "0a070a050a01651200"),
    "empty_lists": (
        lambda: example({"f": floats([]), "i": ints([]), "b": strings([])}),
        "0a1b0a070a016212020a000a070a0166120212000a070a016912021a00",
    ),
    "mixed": (
        lambda: example(
            {"label": ints([7]), "image": strings([b"\x00\x01\x02"]), "weights": floats([0.1, 0.2])}
        ),  # fmt: skip
        "0a3b0a100a05696d61676512070a050a030001020a0e0a056c6162656c12051a030a01070a170a07776569"
        "67687473120c120a0a08cdcccc3dcdcc4c3e",
    ),
}


def sequence_example():
    return tf.train.SequenceExample(
        context=tf.train.Features(feature={"len": ints([2])}),
        feature_lists=tf.train.FeatureLists(
            feature_list={
                "tok": tf.train.FeatureList(feature=[strings([b"a"]), strings([b"bc"])]),
                "w": tf.train.FeatureList(feature=[floats([1.0]), floats([])]),
            }
        ),
    )


SEQUENCE_HEX = (
    "0a0e0a0c0a036c656e12051a030a0102122d0a160a03746f6b120f0a050a030a01610a060a040a0262630a130a"
    "0177120e0a0812060a040000803f0a021200"
)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_serialized_bytes_are_protobufs(name):
    make, expected = VECTORS[name]
    assert make().SerializeToString().hex() == expected


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_protobufs_bytes_parse_back_to_an_equal_message(name):
    make, expected = VECTORS[name]
    parsed = tf.train.Example.FromString(bytes.fromhex(expected))
    assert parsed == make()
    assert parsed.SerializeToString().hex() == expected


def test_sequence_example_bytes_and_round_trip():
    assert sequence_example().SerializeToString().hex() == SEQUENCE_HEX
    parsed = tf.train.SequenceExample.FromString(bytes.fromhex(SEQUENCE_HEX))
    assert parsed == sequence_example()
    assert [f.bytes_list.value[0] for f in parsed.feature_lists.feature_list["tok"].feature] == [
        b"a",
        b"bc",
    ]


def test_field_access_reads_the_values():
    ex = example({"x": floats([1.0, 2.5]), "n": ints([3])})
    assert ex.features.feature["x"].float_list.value == [1.0, 2.5]
    assert list(ex.features.feature["n"].int64_list.value) == [3]
    assert ex.features.feature["x"].WhichOneof("kind") == "float_list"
    assert sorted(ex.features.feature) == ["n", "x"]


def test_float_values_are_stored_as_float32():
    assert tf.train.FloatList(value=[0.1]).value[0] == 0.10000000149011612


def test_reading_an_unset_message_sets_nothing_but_a_change_below_it_does():
    ex = tf.train.Example()
    ex.features  # noqa: B018 - reading is what is tested
    assert not ex.HasField("features")
    ex.features.feature["x"]  # a map read adds the entry, as in protobuf
    assert ex.HasField("features")
    assert ex.SerializeToString().hex() == "0a070a050a01781200"


def test_the_oneof_follows_the_last_list_changed():
    f = tf.train.Feature()
    f.float_list  # noqa: B018
    assert f.WhichOneof("kind") is None
    f.float_list.value.append(1)
    assert f.WhichOneof("kind") == "float_list"
    f.int64_list.value.append(3)
    assert f.WhichOneof("kind") == "int64_list"
    assert not f.HasField("float_list")
    assert str(f) == "int64_list {\n  value: 3\n}\n"


def test_text_format_is_protobufs():
    # str() of the same messages under TF (map entries there print in hash order;
    # minitf sorts them, so the expected text has them sorted).
    assert str(tf.train.Example()) == ""
    assert (
        str(example({"e": F()}))
        == 'features {\n  feature {\n    key: "e"\n    value {\n    }\n  }\n}\n'
    )
    text = str(example({"t": strings([b"a\tb\r\x7f~ \n\x00\xff\"'\\"])}))
    assert 'value: "a\\tb\\r\\177~ \\n\\000\\377\\"\\\'\\\\"' in text
    text = str(example({"f": floats([1e-5, 123456789.0, 3.4028234663852886e38, -0.0, 1.5e-45,
                                     100000, 1000000, 0.3, 1.0])}))  # fmt: skip
    values = [line.split(": ")[1] for line in text.splitlines() if "value:" in line]
    assert values == ["1e-05", "123456792", "3.40282347e+38", "-0", "1.4013e-45", "100000",
                      "1e+06", "0.3", "1"]  # fmt: skip


def test_sequence_example_text():
    expected = """context {
  feature {
    key: "len"
    value {
      int64_list {
        value: 2
      }
    }
  }
}
feature_lists {
  feature_list {
    key: "tok"
    value {
      feature {
        bytes_list {
          value: "a"
        }
      }
      feature {
        bytes_list {
          value: "bc"
        }
      }
    }
  }
  feature_list {
    key: "w"
    value {
      feature {
        float_list {
          value: 1
        }
      }
      feature {
        float_list {
        }
      }
    }
  }
}
"""
    assert str(sequence_example()) == expected
    assert repr(sequence_example()) == expected


def test_copy_from_merge_from_parse_from_string():
    source = example({"x": floats([1.0])})
    target = example({"y": ints([1])})
    target.CopyFrom(source)
    assert target == source and "y" not in target.features.feature
    target.MergeFrom(example({"z": ints([2])}))
    assert sorted(target.features.feature) == ["x", "z"]
    fresh = tf.train.Example()
    assert fresh.ParseFromString(source.SerializeToString()) == len(
        bytes.fromhex(VECTORS["one_float"][1])
    )
    assert fresh == source
    assert copy.deepcopy(source) == source
    assert pickle.loads(pickle.dumps(source)) == source
    assert source != example({"x": floats([2.0])})
    assert example({}) != tf.train.Example()  # presence counts


def test_concatenated_records_merge_like_protobuf():
    first = example({"a": floats([10, 10])}).SerializeToString()
    second = example({"a": floats([1, 1]), "b": strings([b"s"])}).SerializeToString()
    merged = tf.train.Example.FromString(first + second)
    assert merged.features.feature["a"].float_list.value == [1.0, 1.0]  # a map entry is replaced
    assert merged.features.feature["b"].bytes_list.value == [b"s"]


def test_unpacked_numbers_parse_too():
    # float 1.0 and int 7 written unpacked (wire types 5 and 0), as proto2 writers do.
    float_list = tf.train.FloatList.FromString(bytes.fromhex("0d0000803f"))
    assert float_list.value == [1.0]
    assert tf.train.Int64List.FromString(bytes.fromhex("0807")).value == [7]


def test_bad_values_raise_protobufs_errors():
    with pytest.raises(TypeError, match="must be real number, not str"):
        tf.train.FloatList(value=["a"])
    with pytest.raises(ValueError, match="Value out of range: 18446744073709551616"):
        tf.train.Int64List(value=[2**64])
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        tf.train.Int64List(value=[1.5])
    with pytest.raises(TypeError, match="expected bytes, int found"):
        tf.train.BytesList(value=[1])
    with pytest.raises(TypeError, match="expected bytes, str found"):
        tf.train.BytesList(value=["text"])
    with pytest.raises(TypeError, match="must be dict or instance of same class"):
        tf.train.Example(features=1)
    with pytest.raises(
        AttributeError, match='Assignment not allowed to map, or repeated field "value"'
    ):
        tf.train.FloatList().value = [1.0]
    with pytest.raises(
        AttributeError, match='Assignment not allowed to composite field "features"'
    ):
        tf.train.Example().features = tf.train.Features()
    with pytest.raises(ValueError, match='has no "feature" field'):
        tf.train.Example(feature={})
    with pytest.raises(ValueError, match='no oneof "type"'):
        tf.train.Feature().WhichOneof("type")
    with pytest.raises(TypeError, match="must be instance of same class"):
        tf.train.Example().CopyFrom(tf.train.Features())
    with pytest.raises(TypeError, match="unhashable"):
        hash(tf.train.Example())


def test_corrupt_bytes_raise_decode_error():
    with pytest.raises(DecodeError, match="Error parsing message with type 'tensorflow.Example'"):
        tf.train.Example.FromString(b"\xff\xff")
    with pytest.raises(DecodeError):
        tf.train.Example.FromString(b"\x0a\x05\x0a")  # a length past the end


def test_dicts_build_nested_messages():
    ex = tf.train.Example(features={"feature": {"x": {"int64_list": {"value": [4]}}}})
    assert ex == example({"x": ints([4])})
