"""tf.summary's names, tags, collections and graph-construction errors, as TF 1.x makes them.

Expected names and tags were read from TF's graph for the same calls.
"""

import pytest

import minitf as tf

pytestmark = pytest.mark.timeout(30)


def test_names_and_tags_follow_the_name_scope_and_the_family():
    with tf.name_scope("outer"):
        loss = tf.summary.scalar("loss", tf.constant(2.5))
        acc = tf.summary.scalar("acc", tf.constant(0.5), family="fam")
        hist = tf.summary.histogram("w", tf.constant([1.0]))
        img = tf.summary.image("img", tf.zeros([1, 2, 2, 1]))
        txt = tf.summary.text("txt", tf.constant("hello"))
        snd = tf.summary.audio("snd", tf.zeros([1, 4, 1]), 8000)
    merged = tf.summary.merge_all()
    assert [(t.op.name, t.op.type) for t in [loss, acc, hist, img, txt, snd, merged]] == [
        ("outer/loss", "ScalarSummary"),
        ("outer/fam/acc", "ScalarSummary"),
        ("outer/w", "HistogramSummary"),
        ("outer/img", "ImageSummary"),
        ("outer/txt", "TensorSummaryV2"),
        ("outer/snd", "AudioSummaryV2"),
        ("Merge/MergeSummary", "MergeSummary"),
    ]
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [loss, acc, hist, img, txt, snd]
    with tf.Session() as sess:
        tags = [v.tag for v in tf.Summary.FromString(sess.run(merged)).value]
    assert tags == ["outer/loss", "fam/outer/fam/acc", "outer/w", "outer/img/image/0",
                    "outer/txt", "outer/snd/audio/0"]  # fmt: skip


def test_names_are_cleaned_and_made_unique():
    first = tf.summary.scalar("my loss!", 1.0)
    second = tf.summary.scalar("my loss!", 2.0)
    leading = tf.summary.scalar("/abs", 3.0)
    assert [first.op.name, second.op.name, leading.op.name] == ["my_loss_", "my_loss__1", "abs"]


def test_collections_and_merge_all_scope_and_name():
    kept = tf.summary.scalar("kept", 1.0, collections=["mine"])
    tf.summary.scalar("other", 1.0)
    assert tf.get_collection("mine") == [kept]
    assert tf.summary.merge_all(key="nothing") is None
    merged = tf.summary.merge_all(scope="oth", name="only")
    assert merged.op.name == "only/only" and [t.op.name for t in merged.op.inputs] == ["other"]
    assert tf.summary.merge([kept], collections=["merged"]) in tf.get_collection("merged")


def test_graph_construction_errors_are_tfs():
    with pytest.raises(TypeError, match="parameter 'values' has DataType string not in list"):
        tf.summary.scalar("s", tf.constant("a"))
    with pytest.raises(TypeError, match="parameter 'tensor' has DataType int32 not in list"):
        tf.summary.image("im", tf.zeros([1, 3, 3, 1], tf.int32))
    with pytest.raises(
        ValueError, match=r"^Expected tensor number:0 to have dtype string, got <dtype: 'float32'>$"
    ):
        tf.summary.text("t", tf.constant(1.0, name="number"))
    with pytest.raises(TypeError, match=r"have types \[float32\] that do not match expected type"):
        tf.summary.merge([tf.constant(1.0)])


def test_a_scalar_summary_of_a_vector_builds_and_fails_when_run():
    summary = tf.summary.scalar("x", tf.constant([1.0, 2.0]))
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError, match=r"not the same shape: \[\] != \[2\] \(tag 'x'\)"
        ),
    ):
        sess.run(summary)
