"""The readers driven by a queue of file names (ports of TF's reader_ops_test.py).

Expected keys and values are TF's: its tests' literals, keys built by the
formats in TF's reader kernels (``<file>:<offset>`` with offsets summed by
hand, ``<file>:<line>`` from 1, ``<file>:<record>`` from 0), and what TF 2.21
did on the same files (noted where used).
"""

from __future__ import annotations

import gzip
import threading
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import minitf as tf
from minitf.ops.data_flow.blocking import Offer
from minitf.ops.data_flow.queue_kernels import DEQUEUE, ENQUEUE, FIFOQueue
from minitf.ops.io.readers import IdentityReader

pytestmark = pytest.mark.timeout(60)

CLOSED = r"is closed and has insufficient elements \(requested 1, current size 0\)"
DATA = Path(__file__).resolve().parents[2] / "data" / "tfrecord"
WAIT = 20
UNPARSED = "Could not parse state for IdentityReader 'test_reader'"


@pytest.fixture
def sess():
    with tf.Graph().as_default(), tf.Session() as session:
        yield session


def string_queue():
    return tf.FIFOQueue(99, [tf.string], shapes=())


def fill(sess, queue, names, close=True):
    sess.run(queue.enqueue_many([[str(n) for n in names]]))
    if close:
        sess.run(queue.close())


def queue_resource(sess, queue) -> FIFOQueue:
    sess.run(queue.size())
    found = [r for _, _, r in sess.resource_mgr.items() if isinstance(r, FIFOQueue)]
    return next(r for r in found if r.name.endswith(queue.queue_ref.op.name))


# -- IdentityReader ----------------------------------------------------------------------------


def test_identity_one_epoch(sess):
    reader = tf.IdentityReader("test_reader")
    completed, produced = reader.num_work_units_completed(), reader.num_records_produced()
    queue = string_queue()
    key, value = reader.read(queue)
    assert sess.run([completed, produced, queue.size()]) == [0, 0, 0]
    fill(sess, queue, ["A", "B", "C"])
    for expected in (b"A", b"B", b"C"):
        assert sess.run([key, value]) == [expected, expected]
    assert sess.run(produced) == 3
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run([key, value])
    assert sess.run([completed, produced, queue.size()]) == [3, 3, 0]


def test_identity_multiple_epochs(sess):
    reader = tf.IdentityReader("test_reader")
    queue = string_queue()
    enqueue = queue.enqueue_many([["DD", "EE"]])
    key, value = reader.read(queue)
    for _ in range(3):
        sess.run(enqueue)
        assert sess.run(key) == b"DD"
        assert sess.run(value) == b"EE"
    sess.run(queue.close())
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run([key, value])


def test_identity_serialize_and_restore(sess):
    reader = tf.IdentityReader("test_reader")
    produced = reader.num_records_produced()
    queue = string_queue()
    fill(sess, queue, ["X", "Y", "Z"], close=False)
    key, value = reader.read(queue)
    assert sess.run([key, value]) == [b"X", b"X"]
    state = sess.run(reader.serialize_state())
    # TF 2.21 serialized this reader's state to exactly these bytes.
    assert state == b'\x08\x01\x10\x01\x18\x01"\x01X'
    assert sess.run(key) == b"Y" and sess.run(key) == b"Z"
    assert sess.run(produced) == 3
    fill(sess, queue, ["Y", "Z"])
    sess.run(reader.restore_state(state))
    assert sess.run(produced) == 1
    assert sess.run(key) == b"Y" and sess.run(key) == b"Z"
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run(key)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        reader.restore_state([])
    with pytest.raises(ValueError):
        reader.restore_state([state, state])
    for bad in (state[1:], state[:-1], state + b"ExtraJunk", b"PREFIX" + state,
                b"BOGUS" + state[5:]):  # fmt: skip
        with pytest.raises(tf.errors.InvalidArgumentError, match=UNPARSED):
            sess.run(reader.restore_state(bad))


def test_identity_restore_rejects_inconsistent_counts(sess):
    reader = tf.IdentityReader("r")
    # work_started 127 > work_finished 0, and num_records_produced -1 (TF 2.21's verdicts).
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="Inconsistent work started vs. finished"
    ):
        sess.run(reader.restore_state(b"\x08\x7f"))
    negative = b"\x08\x01\x10\x01\x18" + b"\xff" * 9 + b"\x01"
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_records_produced: -1"):
        sess.run(reader.restore_state(negative))
    assert sess.run(reader.num_work_units_completed()) == 0  # a failed restore resets


def test_identity_reset(sess):
    reader = tf.IdentityReader("test_reader")
    completed, produced = reader.num_work_units_completed(), reader.num_records_produced()
    queue = string_queue()
    key, _ = reader.read(queue)
    fill(sess, queue, ["X", "Y", "Z"], close=False)
    assert sess.run(key) == b"X" and sess.run(key) == b"Y"
    assert sess.run([completed, produced]) == [2, 2]
    sess.run(reader.reset())
    assert sess.run([completed, produced, queue.size()]) == [0, 0, 1]
    assert sess.run(key) == b"Z"
    fill(sess, queue, ["K", "L"], close=False)
    assert sess.run(key) == b"K"


# -- WholeFileReader ---------------------------------------------------------------------------


@pytest.fixture
def whole_files(tmp_path):
    contents = [b"One\na\nb\n", b"Two\nC\nD", b"Three x, y, z"]
    names = []
    for i, content in enumerate(contents):
        names.append(str(tmp_path / f"whole_file.{i}.txt"))
        Path(names[-1]).write_bytes(content)
    return names, contents


def test_whole_file_one_epoch_and_infinite_epochs(sess, whole_files):
    names, contents = whole_files
    reader = tf.WholeFileReader("test_reader")
    queue = string_queue()
    key, value = reader.read(queue)
    for _ in range(2):
        fill(sess, queue, names, close=False)
        for name, content in zip(names, contents):
            assert sess.run([key, value]) == [name.encode(), content]
    sess.run(queue.close())
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run([key, value])


def test_whole_file_missing_file_fails_again_and_again(sess, tmp_path, whole_files):
    # TF 2.21: the work unit stays in progress, so every later read fails the same way.
    reader = tf.WholeFileReader("test_reader")
    queue = string_queue()
    key, _ = reader.read(queue)
    fill(sess, queue, [tmp_path / "nope", whole_files[0][0]])
    for _ in range(2):
        with pytest.raises(tf.errors.NotFoundError, match="nope; No such file or directory"):
            sess.run(key)


# -- TextLineReader ------------------------------------------------------------------------------


def line_text(f: int, line: int) -> bytes:
    return b"%d: %d" % (f, line)


def text_files(tmp_path, crlf=False, files=2, lines=5) -> list[str]:
    names = []
    for i in range(files):
        names.append(str(tmp_path / f"text_line.{i}.txt"))
        with open(names[-1], "wb") as f:
            for j in range(lines):
                f.write(line_text(i, j))
                if j + 1 != lines or i == 0:  # the last line of file 1 has no newline
                    f.write(b"\r\n" if crlf else b"\n")
    return names


@pytest.mark.parametrize("crlf", [False, True])
def test_text_lines_one_epoch(sess, tmp_path, crlf):
    names = text_files(tmp_path, crlf)
    reader = tf.TextLineReader(name="test_reader")
    queue = string_queue()
    key, value = reader.read(queue)
    fill(sess, queue, names)
    for i, name in enumerate(names):
        for j in range(5):
            assert sess.run([key, value]) == [f"{name}:{j + 1}".encode(), line_text(i, j)]
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run([key, value])


def test_text_lines_skip_header_lines(sess, tmp_path):
    names = text_files(tmp_path)
    short = tmp_path / "short.txt"
    short.write_bytes(b"only a header\n")  # shorter than nothing but its header: no records
    reader = tf.TextLineReader(skip_header_lines=1, name="test_reader")
    queue = string_queue()
    key, value = reader.read(queue)
    fill(sess, queue, [names[0], short, names[1]])
    for i, name in enumerate(names):
        for j in range(4):
            assert sess.run([key, value]) == [f"{name}:{j + 2}".encode(), line_text(i, j + 1)]
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run([key, value])
    assert sess.run(reader.num_work_units_completed()) == 3


def test_text_lines_keep_a_lone_carriage_return(sess, tmp_path):
    path = tmp_path / "t"
    path.write_bytes(b"a\r\nb\rc\n\nlast")  # TF 2.21 read: b"a", b"b\rc", b"", b"last"
    reader = tf.TextLineReader()
    queue = string_queue()
    _, value = reader.read(queue)
    fill(sess, queue, [path])
    assert [sess.run(value) for _ in range(4)] == [b"a", b"b\rc", b"", b"last"]


# -- FixedLengthRecordReader ----------------------------------------------------------------------


def read_fixed_length(sess, names, hop_bytes: int) -> list:
    """Every (key, value) of 3-byte records after 5 bytes of header, before 2 of footer."""
    reader = tf.FixedLengthRecordReader(
        header_bytes=5, record_bytes=3, footer_bytes=2, hop_bytes=hop_bytes, name="test_reader"
    )
    queue = string_queue()
    key, value = reader.read(queue)
    fill(sess, queue, names)
    out = []
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        while True:
            out.append(sess.run([key, value]))
    return out


def test_fixed_length_one_epoch(sess, tmp_path):
    names, expected = [], []
    for i in range(2):
        names.append(str(tmp_path / f"fixed_length_record.{i}.txt"))
        records = [str(i * 2 + j).encode() * 3 for j in range(7)]
        Path(names[-1]).write_bytes(b"H" * 5 + b"".join(records) + b"F" * 2)
        expected += [[f"{names[-1]}:{j}".encode(), r] for j, r in enumerate(records)]
    assert read_fixed_length(sess, names, hop_bytes=0) == expected


def test_fixed_length_with_hop_bytes(sess, tmp_path):
    names, expected = [], []
    for i in range(2):
        names.append(str(tmp_path / f"fixed_length_overlapped_record.{i}.txt"))
        body = "".join(str(k)[0] for k in range(3 + 2 * 2)).encode()  # b"0123456"
        Path(names[-1]).write_bytes(b"H" * 5 + body + b"F" * 2)
        expected += [
            [f"{names[-1]}:{j}".encode(), r] for j, r in enumerate([b"012", b"234", b"456"])
        ]
    assert read_fixed_length(sess, names, hop_bytes=2) == expected


def test_fixed_length_ignores_a_partial_last_record(sess, tmp_path):
    (tmp_path / "short").write_bytes(b"abc")
    (tmp_path / "partial").write_bytes(b"HH" + b"111222333" + b"44")
    reader = tf.FixedLengthRecordReader(3, header_bytes=2, footer_bytes=1)
    queue = string_queue()
    _, value = reader.read(queue)
    fill(sess, queue, [tmp_path / "short", tmp_path / "partial"])
    assert [sess.run(value) for _ in range(3)] == [b"111", b"222", b"333"]  # as TF 2.21
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run(value)


def test_fixed_length_gzip_encoding(sess, tmp_path):
    (tmp_path / "g").write_bytes(gzip.compress(b"H" + b"aabbcc"))
    reader = tf.FixedLengthRecordReader(2, header_bytes=1, encoding="GZIP")
    queue = string_queue()
    _, value = reader.read(queue)
    fill(sess, queue, [tmp_path / "g"])
    assert [sess.run(value) for _ in range(3)] == [b"aa", b"bb", b"cc"]


def test_negative_record_bytes_is_invalid(sess):
    reader = tf.FixedLengthRecordReader(-1, name="neg")
    queue = string_queue()
    with pytest.raises(tf.errors.InvalidArgumentError, match="record_bytes must be >= 0 not -1"):
        sess.run(reader.read(queue))


# -- TFRecordReader ------------------------------------------------------------------------------


def tf_record_files(tmp_path, options=None, files=2, records=7) -> list[str]:
    names = []
    for i in range(files):
        names.append(str(tmp_path / f"tf_record.{i}.txt"))
        with tf.python_io.TFRecordWriter(names[-1], options) as writer:
            for j in range(records):
                writer.write(b"Record %d of file %d" % (j, i))
    return names


def offsets(records) -> list[int]:
    """Where each record starts: 12 bytes of header, the data, 4 bytes of CRC each."""
    return list(np.cumsum([0] + [16 + len(r) for r in records[:-1]]))


def expect_tf_records(sess, key, value, names, plain_names=None):
    for i, name in enumerate(names):
        records = [b"Record %d of file %d" % (j, i) for j in range(7)]
        for record, offset in zip(records, offsets(records)):
            assert sess.run([key, value]) == [f"{name}:{offset}".encode(), record]


def test_tf_records_one_epoch_with_exact_keys(sess, tmp_path):
    names = tf_record_files(tmp_path)
    reader = tf.TFRecordReader(name="test_reader")
    queue = string_queue()
    key, value = reader.read(queue)
    fill(sess, queue, names)
    expect_tf_records(sess, key, value, names)
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run([key, value])
    assert sess.run([reader.num_records_produced(), reader.num_work_units_completed()]) == [14, 2]


def test_tf_records_read_up_to_stops_at_the_end_of_a_file(sess, tmp_path):
    names = tf_record_files(tmp_path)
    reader = tf.TFRecordReader(name="test_reader")
    queue = string_queue()
    keys, values = reader.read_up_to(queue, 3)
    fill(sess, queue, names)
    sizes = []
    while True:
        try:
            k, v = sess.run([keys, values])
        except tf.errors.OutOfRangeError:
            break
        assert len(k) == len(v) <= 3
        sizes.append(len(k))
    assert sizes == [3, 3, 1, 3, 3, 1]  # a batch never runs on into the next file


@pytest.mark.parametrize("how", ["ZLIB", "GZIP"])
def test_tf_records_of_compressed_files(sess, tmp_path, how):
    plain = tf_record_files(tmp_path)
    names = []
    for i, name in enumerate(plain):
        data = Path(name).read_bytes()
        names.append(str(tmp_path / f"tfrecord_{i}.{how}"))
        Path(names[-1]).write_bytes(zlib.compress(data) if how == "ZLIB" else gzip.compress(data))
    reader = tf.TFRecordReader(name="test_reader", options=tf.python_io.TFRecordOptions(how))
    queue = string_queue()
    key, value = reader.read(queue)
    fill(sess, queue, names)
    expect_tf_records(sess, key, value, names)  # offsets in the decompressed stream


def test_tf_records_written_with_zlib(sess, tmp_path):
    options = tf.python_io.TFRecordOptions(
        compression_type=tf.python_io.TFRecordCompressionType.ZLIB
    )
    names = tf_record_files(tmp_path, options)
    reader = tf.TFRecordReader(name="test_reader", options=options)
    queue = string_queue()
    key, value = reader.read(queue)
    fill(sess, queue, names)
    expect_tf_records(sess, key, value, names)
    with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
        sess.run([key, value])


def test_the_files_tensorflow_wrote_through_a_reader(sess):
    records = [b"Record 0 of the reference file", b"", b"\x00\xff" * 3, b"a" * 300, b"last"]
    for name, options in [("reference.tfrecord", None), ("reference.tfrecord.gz", "GZIP")]:
        reader = tf.TFRecordReader(options=options)
        queue = string_queue()
        keys, values = reader.read_up_to(queue, 10)
        fill(sess, queue, [DATA / name])
        got_keys, got_values = sess.run([keys, values])
        assert list(got_values) == records
        assert list(got_keys) == [f"{DATA / name}:{o}".encode() for o in offsets(records)]


def test_a_corrupted_record_fails_every_later_read(sess, tmp_path):
    # TF 2.21: the file stays in progress, so the reader never gets past the bad record.
    names = tf_record_files(tmp_path, files=1, records=2)
    data = bytearray(Path(names[0]).read_bytes())
    data[34 + 12] ^= 1  # a byte of the second record's data, which starts at 34
    Path(names[0]).write_bytes(data)
    reader = tf.TFRecordReader(name="rr")
    queue = string_queue()
    key, value = reader.read(queue)
    (tmp_path / "more").mkdir()
    fill(sess, queue, names + tf_record_files(tmp_path / "more", files=1))
    assert sess.run(value) == b"Record 0 of file 0"
    for _ in range(2):
        with pytest.raises(tf.errors.DataLossError, match="^corrupted record at 46"):
            sess.run([key, value])
    assert sess.run([reader.num_records_produced(), reader.num_work_units_completed()]) == [1, 0]


def test_tf_record_reader_cannot_serialize(sess):
    reader = tf.TFRecordReader()
    assert not reader.supports_serialize
    with pytest.raises(tf.errors.UnimplementedError, match="Reader SerializeState"):
        sess.run(reader.serialize_state())
    with pytest.raises(tf.errors.UnimplementedError, match="Reader RestoreState"):
        sess.run(reader.restore_state(b""))


# -- the queue -------------------------------------------------------------------------------


def test_a_read_waits_for_a_file_name_from_another_thread(sess, tmp_path):
    names = tf_record_files(tmp_path, files=1, records=1)
    reader = tf.TFRecordReader()
    queue = string_queue()
    key, value = reader.read(queue)
    enqueue = queue.enqueue(names[0])
    resource = queue_resource(sess, queue)
    result = {}
    thread = threading.Thread(target=lambda: result.update(out=sess.run(value)))
    thread.start()
    assert resource.wait_for_waiting(DEQUEUE, 1, WAIT)  # the read waits on the empty queue
    assert thread.is_alive()
    sess.run(enqueue)
    thread.join(WAIT)
    assert not thread.is_alive() and result["out"] == b"Record 0 of file 0"


def test_readers_do_not_block_each_other(sess, tmp_path):
    # TF's AsyncReaderTest.testNoDeadlockFromQueue: three reads wait, each on its own queue.
    runs = []
    for _ in range(3):
        queue = string_queue()
        _, line = tf.TextLineReader().read(queue)
        out = []
        thread = threading.Thread(target=lambda line=line, out=out: out.append(sess.run(line)))
        runs.append((thread, queue, out))
        thread.start()
    for _, queue, _ in runs:
        assert queue_resource(sess, queue).wait_for_waiting(DEQUEUE, 1, WAIT)
    for i, (thread, queue, out) in enumerate(reversed(runs)):
        path = tmp_path / f"deadlock.{i}.txt"
        path.write_bytes(b"file-%d" % i)
        sess.run(queue.enqueue_many([[str(path)]]))
        thread.join(WAIT)
        assert out == [b"file-%d" % i]


def test_a_queue_that_is_not_of_strings(sess):
    reader = tf.IdentityReader()
    numbers = tf.FIFOQueue(9, tf.int32, shapes=())
    sess.run(numbers.enqueue(3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected queue with single string"):
        sess.run(reader.read(numbers))
    pairs = tf.FIFOQueue(9, [tf.string, tf.string], shapes=[(), ()])
    sess.run(pairs.enqueue(["a", "b"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected single component queue"):
        sess.run(reader.read(pairs))


def test_read_up_to_zero_and_op_types(sess):
    reader = tf.IdentityReader(name="test_reader")
    queue = string_queue()
    keys, values = reader.read_up_to(queue, 0)
    assert [list(x) for x in sess.run([keys, values])] == [[], []]
    key, _ = reader.read(queue)
    assert reader.reader_ref.op.type == "IdentityReaderV2"
    assert (key.op.type, keys.op.type) == ("ReaderReadV2", "ReaderReadUpToV2")
    assert (key.op.name, keys.op.name, reader.reader_ref.op.name) == (
        "ReaderReadV2", "ReaderReadUpToV2", "test_reader"
    )  # fmt: skip
    assert key.get_shape().ndims == 0 and keys.get_shape().as_list() == [None]


# -- read_file and write_file ------------------------------------------------------------------


def test_read_file_and_write_file(sess, tmp_path):
    path = tmp_path / "new" / "dir" / "f.txt"
    sess.run(tf.write_file(str(path), "contents"))  # the directories are created
    assert path.read_bytes() == b"contents"
    assert sess.run(tf.io.read_file(str(path))) == b"contents"
    with pytest.raises(tf.errors.NotFoundError, match="nope; No such file or directory"):
        sess.run(tf.read_file(str(tmp_path / "nope")))
    with pytest.raises(tf.errors.FailedPreconditionError):
        sess.run(tf.read_file(str(tmp_path)))
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1 for 'ReadFile"):
        tf.read_file([str(path)])


# -- a held step (the stepper) ------------------------------------------------------------------


class HeldStep:  # what a stepper's held step looks like to a resource
    defer_attempts = True
    cancellation = None


def enqueue_now(queue: FIFOQueue, name: bytes) -> None:
    pending = SimpleNamespace(items=[(np.array(name, dtype=object),)], next=0, first_id=0)
    queue.try_attempt(ENQUEUE, None, lambda result: None, queue.run_enqueue, "cancelled", pending)


def test_a_held_step_is_offered_the_file_name_and_reads_when_it_takes_it():
    queue = FIFOQueue("names", -1, [tf.string], [()])
    reader = IdentityReader("r")
    arrived = []
    reader.read(HeldStep(), queue, arrived.append, 1, up_to=False)
    assert arrived == [] and queue.num_waiting(DEQUEUE) == 1  # waits for a name
    enqueue_now(queue, b"A")
    assert len(arrived) == 1 and isinstance(arrived[0], Offer)  # offered, nothing taken yet
    assert reader.work_started == 0
    arrived.pop().run_offered_attempt()  # the step takes the name on its own thread
    assert arrived == [(b"A", b"A")] and reader.num_records_produced == 1
