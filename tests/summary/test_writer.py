"""Event files read back by TensorBoard's own reader (``EventAccumulator``).

What was logged is known here (numpy arrays, steps); TensorBoard's reader
parses the files minitf wrote and the values it reports are compared with
it: scalars, histogram bucket counts (numpy with TF's bucket limits),
images (PNG decoded by hand), text, the graph, and the summaries a
``MonitoredTrainingSession`` writes, among them an input pipeline's
fullness with TF's tag.
"""

import os
import re
import socket
import warnings

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import minitf as tf
from tests.ops.summary.test_summary_kernels import decode_png, tf_limits

pytestmark = pytest.mark.timeout(60)

KEEP_ALL = {"scalars": 0, "histograms": 0, "images": 0, "tensors": 0, "audio": 0}


def accumulate(logdir) -> EventAccumulator:
    accumulator = EventAccumulator(str(logdir), size_guidance=KEEP_ALL)
    accumulator.Reload()
    return accumulator


def test_a_training_loop_s_summaries_read_back_by_tensorboard(tmp_path):
    x = tf.placeholder(tf.float32, [None])
    picture = tf.placeholder(tf.uint8, [1, 4, 5, 3])
    tf.summary.scalar("average", tf.reduce_mean(x))
    tf.summary.histogram("values", x)
    tf.summary.image("picture", picture, max_outputs=1)
    tf.summary.text("note", tf.constant("step done"))
    merged = tf.summary.merge_all()
    rng = np.random.RandomState(7)
    batches = [rng.standard_normal(50).astype(np.float32) * (i + 1) for i in range(3)]
    pictures = [rng.randint(0, 256, (1, 4, 5, 3)).astype(np.uint8) for _ in range(3)]
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
        for step, (batch, image) in enumerate(zip(batches, pictures)):
            writer.add_summary(sess.run(merged, {x: batch, picture: image}), global_step=10 * step)
        writer.close()
    acc = accumulate(tmp_path)
    assert sorted(acc.Tags()["scalars"]) == ["average"]
    scalars = acc.Scalars("average")
    assert [s.step for s in scalars] == [0, 10, 20]
    assert [s.value for s in scalars] == pytest.approx([float(np.mean(b)) for b in batches])
    limits = tf_limits()
    for event, batch in zip(acc.Histograms("values"), batches):
        histo = event.histogram_value
        counts, _ = np.histogram(batch.astype(np.float64), np.concatenate([[-np.inf], limits]))
        assert histo.num == 50 and (histo.min, histo.max) == (batch.min(), batch.max())
        nonzero = [(lim, c) for lim, c in zip(histo.bucket_limit, histo.bucket) if c]
        assert nonzero == [(limits[i], counts[i]) for i in np.flatnonzero(counts)]
    images = acc.Images("picture/image")
    assert [(i.step, i.width, i.height) for i in images] == [(0, 5, 4), (10, 5, 4), (20, 5, 4)]
    for event, image in zip(images, pictures):
        np.testing.assert_array_equal(decode_png(event.encoded_image_string), image[0])
    texts = acc.Tensors("note")
    assert [t.tensor_proto.string_val for t in texts] == [[b"step done"]] * 3
    assert acc.SummaryMetadata("note").plugin_data.plugin_name == "text"
    graph = acc.Graph()
    assert [n.name for n in graph.node] == [op.name for op in sess.graph.get_operations()]
    node = {n.name: n for n in graph.node}["average"]
    assert node.op == "ScalarSummary" and list(node.input) == ["average/tags", "Mean"]


def test_the_event_file_s_name_and_first_event(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path / "new" / "dir"), filename_suffix=".v1")
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 3)
    writer.close()
    (name,) = os.listdir(tmp_path / "new" / "dir")
    assert re.fullmatch(rf"events\.out\.tfevents\.\d{{10}}\.{re.escape(socket.gethostname())}\.v1",
                        name)  # fmt: skip
    events = list(tf.train.summary_iterator(tmp_path / "new" / "dir" / name))
    assert events[0].file_version == "brain.Event:2" and events[0].step == 0
    assert events[1].session_log.status == tf.SessionLog.START and events[1].step == 3
    assert writer.get_logdir() == str(tmp_path / "new" / "dir")


def test_metadata_is_kept_for_a_tag_s_first_value_only(tmp_path):
    text = tf.summary.text("t", tf.constant("a"))
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path)) as writer:
        for step in range(2):
            writer.add_summary(sess.run(text), step)
    (name,) = os.listdir(tmp_path)
    values = [
        e.summary.value[0] for e in tf.train.summary_iterator(tmp_path / name) if e.summary.value
    ]
    assert [v.HasField("metadata") for v in values] == [True, False]


def test_flush_writes_what_is_queued_and_reopen_starts_a_new_file(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), max_queue=2, flush_secs=3600)
    for step in range(5):
        writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="s", simple_value=step)]), step)
    writer.flush()
    assert [s.value for s in accumulate(tmp_path).Scalars("s")] == [0, 1, 2, 3, 4]
    writer.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.add_summary(tf.Summary(), 9)  # closed: nothing is written
    assert "closed FileWriter" in str(caught[0].message)
    (first,) = os.listdir(tmp_path)
    os.rename(tmp_path / first, tmp_path / ("old." + first))  # the same second gives one name
    writer.reopen()
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="s", simple_value=7)]), 7)
    writer.close()
    assert len(os.listdir(tmp_path)) == 2


def test_file_writer_cache_gives_one_writer_per_logdir(tmp_path):
    try:
        writer = tf.summary.FileWriterCache.get(str(tmp_path))
        assert tf.summary.FileWriterCache.get(str(tmp_path)) is writer
        assert tf.train.SummaryWriterCache is tf.summary.FileWriterCache
    finally:
        tf.summary.FileWriterCache.clear()
    assert accumulate(tmp_path).Tags()["graph"]


def test_add_graph_errors_are_tfs(tmp_path):
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(ValueError, match="Please pass only graph, or graph_def"):
            writer.add_graph(tf.get_default_graph(), graph_def=tf.get_default_graph())
        with pytest.raises(TypeError, match="must be an instance of `Graph`"):
            writer.add_graph("not a graph")


@pytest.mark.timeout(120)
def test_monitored_training_session_writes_summaries_and_the_pipeline_s_fullness(tmp_path):
    step = tf.train.get_or_create_global_step()
    batch = tf.train.batch([tf.constant(1.0)], batch_size=2, capacity=8)
    loss = tf.reduce_sum(batch)
    tf.summary.scalar("loss", loss)
    train = tf.assign_add(step, 1)
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=None, summary_dir=str(tmp_path), save_summaries_steps=2,
        log_step_count_steps=None,
    ) as sess:  # fmt: skip
        for _ in range(5):
            sess.run(train)
    tf.summary.FileWriterCache.clear()
    acc = accumulate(tmp_path)
    assert sorted(acc.Tags()["scalars"]) == ["batch/fraction_of_8_full", "loss"]
    # Saved at the first step, then every 2 global steps; the step is the one after the run.
    assert [s.step for s in acc.Scalars("loss")] == [1, 3, 5]
    assert [s.value for s in acc.Scalars("loss")] == [2.0, 2.0, 2.0]
    assert all(0 <= s.value <= 1 for s in acc.Scalars("batch/fraction_of_8_full"))


def test_monitored_training_session_defaults_to_every_100_steps(tmp_path):
    train = tf.assign_add(tf.train.get_or_create_global_step(), 1)
    tf.summary.scalar("one", 1.0)
    with tf.train.MonitoredTrainingSession(summary_dir=str(tmp_path)) as sess:
        for _ in range(3):
            sess.run(train)
    tf.summary.FileWriterCache.clear()
    assert [s.step for s in accumulate(tmp_path).Scalars("one")] == [1]
