"""The summary ops' kernels: the bytes, histograms, images and errors of TF's kernels.

The serialized summaries below were written once by TensorFlow 2.x's
``tf.compat.v1.summary`` ops (same graph, same inputs); the image values
and error messages are TF's as well (its kernels in
``tensorflow/core/kernels/summary_op.cc`` and ``summary_image_op.cc``).
Histogram buckets are checked against numpy with TF's bucket limits, made
here from TF's rule (``1e-12`` times 1.1 while below ``1e20``).
"""

import struct
import sys
import zlib

import numpy as np
import pytest

import minitf as tf
from minitf.ops.summary.histogram import default_bucket_limits
from minitf.ops.summary.summary_ops import scalar_summary

pytestmark = pytest.mark.timeout(30)

# Written by TF for the summaries of test_the_serialized_summaries_are_tfs_bytes.
TF_SCALAR = b"\n\x11\n\nouter/loss\x15\x00\x00 @"
TF_FAMILY_SCALAR = b"\n\x18\n\x11fam/outer/fam/acc\x15\x00\x00\x00?"
TF_TEXT = b'\n"\n\touter/txtB\x0b\x08\x07\x12\x00B\x05helloJ\x08\n\x06\n\x04text'
TF_HISTOGRAM_HEX = (
    "0acd010a076f757465722f772ac1010900000000000000c0110000000000000c4019000000000000"
    "1840217000000000001840290000000000803d403248e011f10c744d01c0dc94cd2e8d75ffbf0000"
    "00000000000011ea2d819997713d08996919155aed3f2b14facdbe24f03f75f872caaddd0b408144"
    "4bf80ba70e40ffffffffffffef7f3a480000000000000000000000000000f03f0000000000000000"
    "00000000000000400000000000000000000000000000f03f00000000000000000000000000000040"
    "0000000000000000"
)


def run(tensor, feed=None):
    with tf.Session() as sess:
        return sess.run(tensor, feed)


def test_the_serialized_summaries_are_tfs_bytes():
    with tf.name_scope("outer"):
        scalar = tf.summary.scalar("loss", tf.constant(2.5))
        family = tf.summary.scalar("acc", tf.constant(0.5), family="fam")
        histogram = tf.summary.histogram("w", tf.constant([0.0, 1.0, -2.0, 3.5, 1e-13, 3.5]))
        text = tf.summary.text("txt", tf.constant("hello"))
    assert run([scalar, family, text]) == [TF_SCALAR, TF_FAMILY_SCALAR, TF_TEXT]
    assert run(histogram).hex() == TF_HISTOGRAM_HEX


def tf_limits() -> np.ndarray:
    """TF's limits from its rule, written again here: 0, then ±1e-12 * 1.1 ... < 1e20, ±DBL_MAX."""
    v, positive = 1e-12, []
    while v < 1e20:
        positive.append(v)
        v = v * 1.1
    positive.append(sys.float_info.max)
    return np.array([-p for p in positive[::-1]] + [0.0] + positive)


def test_the_bucket_limits_are_tfs():
    limits = default_bucket_limits()
    np.testing.assert_array_equal(limits, tf_limits())
    # 1e-12 * 1.1**k < 1e20 for k = 0 .. 773 (32 ln 10 / ln 1.1 = 773.1), then DBL_MAX: 775 a side.
    assert limits[len(limits) // 2 + 1] == 1e-12 and len(limits) == 2 * 775 + 1


@pytest.mark.parametrize("seed", [0, 1])
def test_histogram_counts_match_numpy_with_tfs_buckets(seed):
    values = np.random.RandomState(seed).standard_normal(1000).astype(np.float32) * 10
    values[:5] = 0.0
    histo = tf.Summary.FromString(run(tf.summary.histogram("h", values))).value[0].histo
    limits = tf_limits()
    # Bucket i counts [limit[i-1], limit[i]): np.histogram over [-inf, limits...].
    counts, _ = np.histogram(values.astype(np.float64), bins=np.concatenate([[-np.inf], limits]))
    kept = [i for i, c in enumerate(counts) if c]
    assert [c for c in histo.bucket if c] == [counts[i] for i in kept]
    assert [histo.bucket_limit[j] for j, c in enumerate(histo.bucket) if c] == [
        limits[i] for i in kept
    ]
    assert sum(histo.bucket) == 1000 == histo.num
    assert (histo.min, histo.max) == (values.min(), values.max())
    assert histo.sum == pytest.approx(float(np.sum(values.astype(np.float64))), rel=1e-12)
    assert histo.sum_squares == pytest.approx(float(np.sum(values.astype(np.float64) ** 2)))
    # Runs of empty buckets are one bucket each: no two empty buckets in a row.
    assert not any(a == b == 0 for a, b in zip(histo.bucket, histo.bucket[1:]))
    assert histo.bucket_limit[-1] == sys.float_info.max


def decode_png(data: bytes) -> np.ndarray:
    """A PNG of 8-bit channels and filter 0 rows, decoded by hand: chunks, zlib, rows."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(
            kind + body
        )
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert depth == 8 and (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(height, width, channels)


@pytest.mark.parametrize(
    "pixels, expected",
    [  # TF's own output for these images (one row each)
        ([[-1.0], [0.0], [0.5], [np.nan]], [1, 128, 191, 255]),
        ([[0.0], [1.0], [0.25]], [0, 255, 63]),
        ([[-3.0, 1, 2, 0.5]], [1, 170, 212, 149]),
    ],
)
def test_float_images_are_scaled_as_tf_scales_them(pixels, expected):
    image = np.array([[pixels]], np.float32)
    (value,) = tf.Summary.FromString(run(tf.summary.image("im", image, max_outputs=1))).value
    assert value.tag == "im/image"
    decoded = decode_png(value.image.encoded_image_string)
    assert decoded.ravel().tolist() == expected
    assert (value.image.height, value.image.width, value.image.colorspace) == image.shape[1:]


def test_uint8_images_are_kept_and_the_tags_count_up_to_max_outputs():
    images = np.random.RandomState(3).randint(0, 256, (4, 5, 6, 3)).astype(np.uint8)
    summary = tf.Summary.FromString(run(tf.summary.image("batch", images, max_outputs=2)))
    assert [v.tag for v in summary.value] == ["batch/image/0", "batch/image/1"]
    for value, image in zip(summary.value, images):
        np.testing.assert_array_equal(decode_png(value.image.encoded_image_string), image)
    few = tf.Summary.FromString(run(tf.summary.image("few", images[:1], max_outputs=3)))
    assert [v.tag for v in few.value] == ["few/image/0"]


def test_a_nonfinite_pixel_is_bad_color_in_every_channel():
    image = np.array([[[[0.5, np.inf, 0.0], [1.0, 0.5, 0.25]]]], np.float32)
    (value,) = tf.Summary.FromString(run(tf.summary.image("im", image, max_outputs=1))).value
    decoded = decode_png(value.image.encoded_image_string)
    assert decoded[0, 0].tolist() == [255, 0, 0]
    assert decoded[0, 1].tolist() == [255, 127, 63]  # scaled by 255 / 1.0, truncated


def test_audio_is_a_16_bit_wav():
    clip = np.array([[0.0, 0.5, -0.5, 1.0, -1.0, 0.25]], np.float32)
    (value,) = tf.Summary.FromString(run(tf.summary.audio("snd", clip, 8000, 1))).value
    assert value.tag == "snd/audio"
    audio = value.audio
    assert (audio.sample_rate, audio.num_channels, audio.length_frames) == (8000, 1, 6)
    assert audio.content_type == "audio/wav"
    wav = audio.encoded_audio_string
    assert wav[:4] == b"RIFF" and wav[8:16] == b"WAVEfmt "
    assert struct.unpack("<HHII", wav[20:32]) == (1, 1, 8000, 16000)
    samples = np.frombuffer(wav[44:], "<i2")
    # roundf(x * 32768) clamped to int16 (TF's wav_io.cc).
    assert samples.tolist() == [0, 16384, -16384, 32767, -32768, 8192]


def test_merge_keeps_every_value_in_order():
    a = tf.summary.scalar("a", 1.0)
    b = tf.summary.histogram("b", [1.0, 2.0])
    merged = tf.Summary.FromString(run(tf.summary.merge([a, b])))
    assert [v.tag for v in merged.value] == ["a", "b"]
    assert merged.value[0].simple_value == 1.0 and merged.value[1].histo.num == 2


def test_a_vector_of_tags_gives_one_value_each():
    summary = tf.Summary.FromString(run(scalar_summary(["a", "b"], [1.0, 2.0])))
    assert [(v.tag, v.simple_value) for v in summary.value] == [("a", 1.0), ("b", 2.0)]


def test_run_time_errors_are_tfs():
    x = tf.placeholder(tf.float32)
    cases = [
        (tf.summary.scalar("s", x), [1.0, 2.0],
         r"^tags and values not the same shape: \[\] != \[2\] \(tag 's'\)\n"),
        (tf.summary.histogram("h", x), [1.0, np.nan], "^Nan in summary histogram for: h\n"),
        (tf.summary.histogram("h2", x), [np.inf], "^Infinity in summary histogram for: h2\n"),
        (tf.summary.image("im", x), np.zeros((3, 3, 1)),
         r"^Tensor must be 4-D with last dim 1, 3, or 4, not \[3,3,1\]\n"),
    ]  # fmt: skip
    with tf.Session() as sess:
        for tensor, value, message in cases:
            with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                sess.run(tensor, {x: value})
    twice = tf.summary.scalar("d", x)
    duplicate = tf.summary.merge([twice, twice])
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError, match="^Duplicate tag d found in summary inputs"
        ),
    ):
        sess.run(duplicate, {x: 1.0})
