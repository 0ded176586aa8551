"""tf.decode_csv (ports of TF's decode_csv_op_test.py) and tf.decode_raw.

CSV expected values and messages are those of TF's test; decode_raw's
values are the bytes read by hand (little- or big-endian) and its messages
the ones TF's kernel prints.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitf as tf


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def decode(**kwargs):
    with tf.Session() as sess:
        return sess.run(tf.decode_csv(**kwargs))


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"records": ["1", "2", '"3"'], "record_defaults": [[1]]}, [[1, 2, 3]]),
        ({"records": ["1,4", "2,5", "3,6"], "record_defaults": [1, 2]}, [[1, 2, 3], [4, 5, 6]]),
        ({"records": ["1", "2", '"3"'], "record_defaults": [[""]], "use_quote_delim": False},
         [[b"1", b"2", b'"3"']]),
        ({"records": '1,""', "record_defaults": [[3], [4]]}, [1, 4]),
        ({"records": [["1", "2"], ['""', "4"]], "record_defaults": [[5]]}, [[[1, 2], [5, 4]]]),
        ({"records": [["1", "2"], ['""', '"']], "record_defaults": [[""]],
          "use_quote_delim": False}, [[[b"1", b"2"], [b'""', b'"']]]),
        ({"records": ["1.0", "-1.79e+308", '"1.79e+308"'],
          "record_defaults": [np.array([], dtype=np.double)]}, [[1.0, -1.79e308, 1.79e308]]),
        ({"records": ["1", "2", '"2147483648"'],
          "record_defaults": [np.array([], dtype=np.int64)]}, [[1, 2, 2147483648]]),
        ({"records": ['"1.0"', '"ab , c"', '"a\nbc"', '"ab""c"', " abc "],
          "record_defaults": [["1"]]}, [[b"1.0", b"ab , c", b"a\nbc", b'ab"c', b" abc "]]),
        ({"records": ["1.0,4,aa", "0.2,5,bb", "3,6,cc"], "record_defaults": [[1.0], [1], ["aa"]]},
         [[1.0, 0.2, 3], [4, 5, 6], [b"aa", b"bb", b"cc"]]),
        ({"records": ["2.0,NA,aa", "NA,5,bb", "3,6,NA"], "record_defaults": [[0.0], [0], [""]],
          "na_value": "NA"}, [[2.0, 0.0, 3], [0, 5, 6], [b"aa", b"bb", b""]]),
        ({"records": [",1,", "0.2,3,bcd", "3.0,,"], "record_defaults": [[1.0], [0], ["a"]]},
         [[1.0, 0.2, 3.0], [1, 3, 0], [b"a", b"bcd", b"a"]]),
        ({"records": [",1,", "0.2,3,bcd", '3.0,,"'], "record_defaults": [[1.0], [0], ["a"]],
          "use_quote_delim": False}, [[1.0, 0.2, 3.0], [1, 3, 0], [b"a", b"bcd", b'"']]),
        ({"records": ["1\t1", "0.2\t3", "3.0\t"], "record_defaults": [[1.0], [0]],
          "field_delim": "\t"}, [[1.0, 0.2, 3.0], [1, 3, 0]]),
        ({"records": [",,", "4,5,6"], "record_defaults": [[1], [2]], "select_cols": [0, 1]},
         [[1, 4], [2, 5]]),
        ({"records": [",,", "4,5,6"], "record_defaults": [[0], [1], [2]],
          "select_cols": [0, 1, 2]}, [[0, 4], [1, 5], [2, 6]]),
        ({"records": [" 1 , 2.5 "], "record_defaults": [[1], [2.0]]}, [[1], [2.5]]),
        ({"records": ["nan,inf,-inf,1e3,0x10"], "record_defaults": [[0.0]] * 5},
         [[np.nan], [np.inf], [-np.inf], [1000.0], [16.0]]),
        ({"records": ["+5,010,-0"], "record_defaults": [[0]] * 3}, [[5], [10], [0]]),
    ],
)  # fmt: skip
def test_decode_csv_values(args, expected):
    out = decode(**args)
    assert len(out) == len(expected)
    for field, want in zip(out, expected):
        if field.dtype.kind == "f":
            np.testing.assert_allclose(field, want)
        else:
            np.testing.assert_array_equal(field, want)


def test_decode_csv_column_dtypes_and_shapes():
    records = tf.placeholder(tf.string, [3, None])
    a, b, c = tf.decode_csv(records, [[1], [2.0], [""]])
    assert (a.dtype, b.dtype, c.dtype) == (tf.int32, tf.float32, tf.string)
    assert a.get_shape().as_list() == [3, None]
    assert a.op.type == "DecodeCSV" and a.op.name == "DecodeCSV"
    assert tf.io.decode_csv is tf.decode_csv


@pytest.mark.parametrize(
    "args, message",
    [
        ({"records": [",1", "0.2,3", "3.0,"], "record_defaults": [[1.0], np.array([], np.int32)]},
         "Field 1 is required but missing in record 2!"),
        ({"records": [",1", "0.2,234a", "3.0,2"],
          "record_defaults": [[1.0], np.array([], np.int32)]},
         "Field 1 in record 1 is not a valid int32: 234a"),
        ({"records": ["1", "9999999999999999999999999", "3"], "record_defaults": [[1]]},
         "Field 0 in record 1 is not a valid int32: "),
        ({"records": [",1", "0.2,2", "3.0adf,3"],
          "record_defaults": [[1.0], np.array([], np.int32)]},
         "Field 0 in record 2 is not a valid float: "),
        ({"records": ["1_0"], "record_defaults": [[0.0]]},
         "Field 0 in record 0 is not a valid float: 1_0"),
        ({"records": ["1e3"], "record_defaults": [[0]]},
         "Field 0 in record 0 is not a valid int32: 1e3"),
        ({"records": ['"1,a,"', "0.22", 'a"bc'], "record_defaults": [["a"]]},
         "Unquoted fields cannot have quotes/CRLFs inside"),
        ({"records": [",1", "0.2,2", "3.0adf,3"], "record_defaults": [[1.0]]},
         "Expect 1 fields but have 2 in record 0"),
        ({"records": ['"'], "record_defaults": [["default"]]},
         "Quoted field has to end with quote followed by delim or end"),
        ({"records": ['"a"b,1'], "record_defaults": [[""], [2]]},
         "Quote inside a string has to be escaped by another quote"),
        ({"records": [",,", "4,5,6"], "record_defaults": [[0], [1], [2]],
          "select_cols": [0, 1, 3]}, "Expect 3 fields but have 2 in record 0"),
        ({"records": ["1,2,3"], "record_defaults": [[0], [1]], "select_cols": [0, 3]},
         "Expect 2 fields but have 1 in record 0"),
        ({"records": ["1,2"], "record_defaults": [[1], [2]], "field_delim": "ab"},
         "field_delim should be only 1 char"),
    ],
)  # fmt: skip
def test_decode_csv_bad_records(args, message):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        decode(**args)
    assert message in str(info.value)
    assert "[[node DecodeCSV]]" in str(info.value)


@pytest.mark.parametrize(
    "args, error, message",
    [
        ({"records": ["1,2,3"], "record_defaults": [[0], [0], [0]], "select_cols": [0]},
         ValueError, "Length of select_cols and record_defaults do not match."),
        ({"records": ["1,2,3"], "record_defaults": [[0], [1]], "select_cols": [1, 0]},
         ValueError, "select_cols is not strictly increasing."),
        ({"records": ["1,2,3"], "record_defaults": [[0], [1]], "select_cols": [-1, 0]},
         ValueError, "select_cols contains negative values."),
        ({"records": ["1", "2"], "record_defaults": [[[0]]]}, ValueError,
         "Shape must be at most rank 1 but is rank 2"),
        ({"records": ["1,2"], "record_defaults": [[1, 2], [2]]}, ValueError,
         "Shape of a default must be a length-0 or length-1 vector, or a scalar."),
        ({"records": ["1,2"], "record_defaults": [[True], [2]]}, TypeError,
         "Value passed to parameter 'record_defaults' has DataType bool not in list of allowed "
         "values: float32, float64, int32, int64, string"),
        ({"records": ["1"], "record_defaults": []}, ValueError,
         "Attr 'OUT_TYPE' of 'DecodeCSV' Op passed list of length 0 less than minimum 1."),
        ({"records": "1,2,3,4,5", "record_defaults": np.zeros(5)}, TypeError,
         "Expected list for 'record_defaults'"),
    ],
)  # fmt: skip
def test_decode_csv_bad_arguments_fail_at_graph_construction(graph, args, error, message):
    with pytest.raises(error) as info:
        tf.decode_csv(**args)
    assert message in str(info.value)
    assert "DecodeCSV" not in {op.type for op in graph.get_operations()}


def run(tensor):
    with tf.Session() as sess:
        return sess.run(tensor)


def test_decode_raw_reads_little_and_big_endian():
    data = ["\x01\x02\x03\x04", "\x05\x06\x07\x08"]
    np.testing.assert_array_equal(
        run(tf.decode_raw(data, tf.int16)), [[0x0201, 0x0403], [0x0605, 0x0807]]
    )
    np.testing.assert_array_equal(
        run(tf.decode_raw(data, tf.int16, little_endian=False)),
        [[0x0102, 0x0304], [0x0506, 0x0708]],
    )
    np.testing.assert_array_equal(run(tf.decode_raw([b"\x00\x00\x80\x3f"], tf.float32)), [[1.0]])
    np.testing.assert_array_equal(run(tf.io.decode_raw(tf.constant("1,2"), tf.uint8)), [49, 44, 50])


def test_decode_raw_shapes():
    assert run(tf.decode_raw("", tf.float32)).shape == (0,)
    assert run(tf.decode_raw(["", ""], tf.float32)).shape == (2, 0)
    assert tf.decode_raw(tf.placeholder(tf.string, [3, None]), tf.int32).get_shape().as_list() == [
        3,
        None,
        None,
    ]
    assert tf.decode_raw(bytes=["ab"], out_type=tf.uint8).get_shape().as_list() == [1, None]


@pytest.mark.parametrize(
    "data, out_type, message",
    [
        (["\x01\x02\x03", "\x05\x06\x07\x08"], tf.int16,
         "DecodeRaw requires input strings to all be the same size, but element 1 has size 3 != 4"),
        (["abc", "ab"], tf.int8,
         "DecodeRaw requires input strings to all be the same size, but element 1 has size 3 != 2"),
        ([b"\x00\x00\x80\x3f"], tf.complex64,
         "Input to DecodeRaw has length 4 that is not a multiple of 8, the size of complex64"),
    ],
)  # fmt: skip
def test_decode_raw_bad_lengths(data, out_type, message):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(tf.decode_raw(data, out_type))
    assert message in str(info.value)


def test_decode_raw_refuses_a_string_out_type():
    with pytest.raises(TypeError, match="Value passed to parameter 'out_type' has DataType string"):
        tf.decode_raw([b"ab"], tf.string)
