"""``tf.python_io``: TFRecordWriter and tf_record_iterator (ports of TF's tf_record_test.py).

The expected bytes and records come from TensorFlow: files it wrote
(``tests/data/tfrecord``), the zlib and gzip modules of the standard library,
and the errors TF 2.21's ``tf_record_iterator`` raised on the same damaged
files (offsets by hand: a record is 12 bytes of header, its data, 4 of CRC).
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest

import minitf as tf

DATA = Path(__file__).resolve().parents[2] / "data" / "tfrecord"
RECORDS = [b"Record 0 of the reference file", b"", b"\x00\xff\x00\xff\x00\xff", b"a" * 300, b"last"]
TEXT = b"Gaily bedight,\n    A gallant knight,\n    In sunshine and in shadow,\n"
Compression = tf.python_io.TFRecordCompressionType


def write(path, records, options=None) -> str:
    with tf.python_io.TFRecordWriter(str(path), options=options) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def read(path, options=None) -> list[bytes]:
    return list(tf.python_io.tf_record_iterator(str(path), options))


# -- TF's files ---------------------------------------------------------------------------


def test_reads_the_files_tensorflow_wrote():
    assert read(DATA / "reference.tfrecord") == RECORDS
    assert read(DATA / "reference.tfrecord.gz", Compression.GZIP) == RECORDS


def test_writes_the_same_bytes_as_tensorflow(tmp_path):
    path = write(tmp_path / "mine.tfrecord", RECORDS)
    assert Path(path).read_bytes() == (DATA / "reference.tfrecord").read_bytes()


def test_a_record_is_length_crc_data_crc(tmp_path):
    raw = Path(write(tmp_path / "f", [b"123"])).read_bytes()
    assert raw[:8] == (3).to_bytes(8, "little")
    assert raw[12:15] == b"123"
    assert len(raw) == 12 + 3 + 4


# -- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [None, "", "ZLIB", "GZIP", Compression.NONE, Compression.ZLIB, Compression.GZIP,
     tf.python_io.TFRecordOptions(Compression.GZIP), tf.io.TFRecordOptions("ZLIB")],
)  # fmt: skip
def test_round_trip_with_empty_records(tmp_path, options):
    records = [b"", b"x", b"", bytes(range(256)) * 40, b""]
    assert read(write(tmp_path / "f", records, options), options) == records


def test_an_empty_file_has_no_records(tmp_path):
    assert read(write(tmp_path / "f", [])) == []
    assert read(write(tmp_path / "g", [], "GZIP"), "GZIP") == []


def test_iterator_ends_with_stop_iteration(tmp_path):
    path = write(tmp_path / "f", [b"Record %d" % i for i in range(7)], "ZLIB")
    iterator = tf.python_io.tf_record_iterator(path, tf.python_io.TFRecordOptions("ZLIB"))
    assert [next(iterator) for _ in range(7)] == [b"Record %d" % i for i in range(7)]
    with pytest.raises(StopIteration):
        next(iterator)


def test_a_str_record_is_written_as_utf8(tmp_path):
    assert read(write(tmp_path / "f", ["héllo"])) == ["héllo".encode()]


# -- compression is zlib's and gzip's (TF's testWriteZlibRead, testGzipReadWrite, ...) --------


def test_zlib_file_is_a_zlib_stream_of_the_plain_file(tmp_path):
    plain = Path(write(tmp_path / "plain", [b"foo", b"bar"])).read_bytes()
    compressed = Path(write(tmp_path / "z", [b"foo", b"bar"], "ZLIB")).read_bytes()
    assert zlib.decompress(compressed) == plain


def test_gzip_file_is_a_gzip_stream_of_the_plain_file(tmp_path):
    plain = Path(write(tmp_path / "plain", [b"foo", b"bar"])).read_bytes()
    compressed = Path(write(tmp_path / "g", [b"foo", b"bar"], Compression.GZIP)).read_bytes()
    assert gzip.decompress(compressed) == plain


def test_reads_files_compressed_by_zlib_and_gzip(tmp_path):
    large = TEXT * 20000  # about 1.4 MB in one record
    plain = Path(write(tmp_path / "plain", [b"foo", large, b"bar"])).read_bytes()
    (tmp_path / "z").write_bytes(zlib.compress(plain))
    (tmp_path / "g").write_bytes(gzip.compress(plain))
    assert read(tmp_path / "z", "ZLIB") == [b"foo", large, b"bar"]
    assert read(tmp_path / "g", "GZIP") == [b"foo", large, b"bar"]


def test_reads_a_zlib_stream_of_many_flushed_blocks(tmp_path):
    # TF's testZLibFlushRecord: a full flush after every byte, and empty trailing blocks.
    plain = Path(write(tmp_path / "plain", [b"small record"])).read_bytes()
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS)
    out = b"".join(compressor.compress(bytes([c])) + compressor.flush(zlib.Z_FULL_FLUSH)
                   for c in plain)  # fmt: skip
    out += compressor.flush(zlib.Z_FULL_FLUSH) + compressor.flush(zlib.Z_FINISH)
    (tmp_path / "z").write_bytes(out)
    assert read(tmp_path / "z", "ZLIB") == [b"small record"]


@pytest.mark.parametrize("options", [None, "GZIP"])
def test_flush_makes_the_records_so_far_readable(tmp_path, options):
    path = str(tmp_path / "f")
    writer = tf.python_io.TFRecordWriter(path, options)
    writer.write(b"one")
    writer.write(b"two")
    writer.flush()
    assert read(path, options) == [b"one", b"two"]
    writer.write(b"three")
    writer.close()
    assert read(path, options) == [b"one", b"two", b"three"]


# -- damaged files: TF's messages for the same bytes ---------------------------------------------


@pytest.fixture
def two_records(tmp_path) -> bytes:
    # b"123" is bytes 0-18 (data at 12), b"4567" starts at 19 (data at 31).
    return Path(write(tmp_path / "good", [b"123", b"4567"])).read_bytes()


def damaged(tmp_path, data: bytes, flip: int | None = None, keep: int | None = None) -> str:
    data = bytearray(data[:keep] if keep is not None else data)
    if flip is not None:
        data[flip] ^= 1
    path = tmp_path / "damaged"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(
    "flip, keep, records_before, message",
    [
        (12, None, [], "corrupted record at 12"),  # a data byte: the data's offset
        (3, None, [], "corrupted record at 0"),  # a length byte: the record's offset
        (31, None, [b"123"], "corrupted record at 31"),
        (None, 14, [], "truncated record at 0"),  # TF's testBadFile
        (None, 33, [b"123"], "truncated record at 19"),
    ],
)
def test_a_damaged_record_is_data_loss(tmp_path, two_records, flip, keep, records_before, message):
    got = []
    with pytest.raises(tf.errors.DataLossError, match=f"^{message}$"):
        for record in tf.python_io.tf_record_iterator(damaged(tmp_path, two_records, flip, keep)):
            got.append(record)
    assert got == records_before


def test_a_file_cut_inside_a_header_just_ends(tmp_path, two_records):
    # TF reads a header it cannot read whole as the end of the file, without an error.
    assert read(damaged(tmp_path, two_records, keep=5)) == []
    assert read(damaged(tmp_path, two_records, keep=19 + 7)) == [b"123"]


def test_a_truncated_gzip_file_is_data_loss_after_the_records_it_holds(tmp_path):
    records = [b"record %d" % i * 20 for i in range(50)]
    data = Path(write(tmp_path / "g", records, "GZIP")).read_bytes()
    (tmp_path / "cut").write_bytes(data[: len(data) // 2])
    got = []
    with pytest.raises(tf.errors.DataLossError, match="^truncated record at "):
        for record in tf.python_io.tf_record_iterator(str(tmp_path / "cut"), "GZIP"):
            got.append(record)
    assert got == records[: len(got)] and got


def test_a_file_that_is_not_gzip(tmp_path):
    (tmp_path / "g").write_bytes(b"this is not gzip at all" * 3)
    message = "^inflate\\(\\) failed with error -3: incorrect header check$"
    with pytest.raises(tf.errors.DataLossError, match=message):
        read(tmp_path / "g", "GZIP")


# -- misuse ------------------------------------------------------------------------------------


def test_a_missing_file(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(tf.errors.NotFoundError, match=f"^{missing}; No such file or directory$"):
        tf.python_io.tf_record_iterator(str(missing))  # raised at once, not at the first next
    with pytest.raises(tf.errors.NotFoundError, match="nodir/x; No such file or directory$"):
        tf.python_io.TFRecordWriter(str(tmp_path / "nodir" / "x"))


def test_a_closed_writer(tmp_path):
    writer = tf.python_io.TFRecordWriter(str(tmp_path / "f"))
    writer.close()
    writer.close()  # twice is fine
    with pytest.raises(tf.errors.FailedPreconditionError, match="^Writer is closed.$"):
        writer.write(b"x")
    with pytest.raises(tf.errors.FailedPreconditionError, match="^Writer is closed.$"):
        writer.flush()


def test_compression_types():
    to_string = tf.python_io.TFRecordOptions.get_compression_type_string
    assert [to_string(x) for x in (None, 0, 1, 2, "", "ZLIB", "GZIP")] == [
        "", "", "ZLIB", "GZIP", "", "ZLIB", "GZIP"
    ]  # fmt: skip
    assert to_string(tf.python_io.TFRecordOptions(Compression.GZIP)) == "GZIP"
    with pytest.raises(ValueError, match='^Not a valid compression_type: "bogus"$'):
        tf.python_io.TFRecordOptions("bogus")
    with pytest.raises(ValueError, match='^Not a valid compression_type: "SNAPPY2"$'):
        tf.python_io.TFRecordWriter("unused", "SNAPPY2")
