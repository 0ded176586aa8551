"""FileWriter.add_run_metadata: a traced run's RunMetadata as TF's ``tagged_run_metadata``
event, read back by TensorBoard's ``EventAccumulator`` and parsed with TF's own
``config.proto`` classes (shipped with ``tensorboard``): the oracle for the bytes."""

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import config_pb2, step_stats_pb2

import minitf as tf
from minitf.framework.step_stats_pb2 import step_stats_proto
from minitf.runtime.distributed.launcher import free_ports

pytestmark = pytest.mark.timeout(60)

DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def _traced_run():
    x = tf.placeholder(tf.float32, [2], name="x")
    total = tf.reduce_sum(x * 2.0, name="total")
    run_metadata = tf.RunMetadata()
    with tf.Session() as sess:
        value = sess.run(
            total,
            {x: [1.0, 2.0]},
            options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
            run_metadata=run_metadata,
        )
        graph = sess.graph
    assert value == 6.0
    return run_metadata, graph


def _accumulate(logdir) -> EventAccumulator:
    accumulator = EventAccumulator(str(logdir))
    accumulator.Reload()
    return accumulator


def test_run_metadata_read_back_by_tensorboard(tmp_path):
    run_metadata, graph = _traced_run()
    writer = tf.summary.FileWriter(str(tmp_path), graph)
    writer.add_run_metadata(run_metadata, "step_1", global_step=1)
    writer.close()
    acc = _accumulate(tmp_path)
    assert acc.Tags()["run_metadata"] == ["step_1"]
    parsed = acc.RunMetadata("step_1")
    assert isinstance(parsed, config_pb2.RunMetadata)
    (device,) = parsed.step_stats.dev_stats
    assert device.device == DEVICE
    ours = run_metadata.step_stats.dev_stats[0].node_stats
    assert [n.node_name for n in device.node_stats] == [n.node_name for n in ours]
    assert {"mul", "total"} <= {n.node_name for n in device.node_stats}
    for theirs, mine in zip(device.node_stats, ours):
        assert theirs.all_start_micros == mine.all_start_micros
        assert theirs.op_end_rel_micros == mine.op_end_rel_micros
        assert theirs.all_end_rel_micros == mine.all_end_rel_micros
        assert theirs.timeline_label == mine.timeline_label
        assert theirs.thread_id == mine.thread_id % 2**32
    total = [n for n in device.node_stats if n.node_name == "total"][0]
    assert total.timeline_label == "total = Sum()"


def test_the_event_carries_the_tag_and_the_step(tmp_path):
    run_metadata, _ = _traced_run()
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_run_metadata(run_metadata, "first")
    writer.add_run_metadata(run_metadata, "tenth", global_step=10)
    writer.close()
    (path,) = tmp_path.iterdir()
    events = [e for e in tf.train.summary_iterator(str(path)) if e.HasField("tagged_run_metadata")]
    assert [(e.tagged_run_metadata.tag, e.step) for e in events] == [("first", 0), ("tenth", 10)]
    parsed = config_pb2.RunMetadata.FromString(events[1].tagged_run_metadata.run_metadata)
    assert parsed.step_stats.dev_stats[0].device == DEVICE


def test_a_tag_is_written_once(tmp_path):
    run_metadata, _ = _traced_run()
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_run_metadata(run_metadata, "step")
    with pytest.raises(ValueError, match="The provided tag was already used for this event type"):
        writer.add_run_metadata(run_metadata, "step")
    writer.close()


def test_an_untraced_run_metadata_is_empty():
    assert config_pb2.RunMetadata.FromString(tf.RunMetadata().SerializeToString()) == (
        config_pb2.RunMetadata()
    )


def test_step_stats_bytes_are_protobufs():
    stats = {
        "dev_stats": [
            {
                "device": "/job:ps/replica:0/task:0/device:CPU:0",
                "node_stats": [
                    {
                        "node_name": "Adam/update_w/ApplyAdam",
                        "op": "ApplyAdam",
                        "all_start_micros": 1732420000123456,
                        "op_start_rel_micros": 0,
                        "op_end_rel_micros": 41,
                        "all_end_rel_micros": 45,
                        "thread_id": 140230000012345,
                        "timeline_label": "Adam/update_w/ApplyAdam = ApplyAdam()",
                        "waited_on": {"kind": "queue", "name": "q", "size": 0},
                    }
                ],
            },
            {"device": "/job:worker/replica:0/task:0/device:CPU:0", "node_stats": []},
        ]
    }
    expected = step_stats_pb2.StepStats()
    ps = expected.dev_stats.add(device="/job:ps/replica:0/task:0/device:CPU:0")
    ps.node_stats.add(
        node_name="Adam/update_w/ApplyAdam",
        all_start_micros=1732420000123456,
        op_end_rel_micros=41,
        all_end_rel_micros=45,
        thread_id=140230000012345 % 2**32,
        timeline_label="Adam/update_w/ApplyAdam = ApplyAdam()",
    )
    expected.dev_stats.add(device="/job:worker/replica:0/task:0/device:CPU:0")
    ours = step_stats_proto(stats).SerializeToString()
    assert step_stats_pb2.StepStats.FromString(ours) == expected
    assert ours == expected.SerializeToString(deterministic=True)


def test_a_cluster_step_has_one_dev_stats_per_task(tmp_path):
    ports = free_ports(2)
    spec = tf.train.ClusterSpec(
        {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    )
    servers = [tf.train.Server(spec, job_name=job, task_index=0) for job in ("ps", "worker")]
    try:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable([[1.0, 2.0]], name="w")
        with tf.device("/job:worker/task:0"):
            y = tf.matmul(w, [[1.0], [1.0]], name="y")
        run_metadata = tf.RunMetadata()
        with tf.Session(servers[1].target) as sess:
            sess.run(w.initializer)
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            assert sess.run(y, options=options, run_metadata=run_metadata) == [[3.0]]
    finally:
        for server in servers:
            server.stop()
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_run_metadata(run_metadata, "cluster_step")
    writer.close()
    parsed = _accumulate(tmp_path).RunMetadata("cluster_step")
    devices = {d.device: {n.node_name for n in d.node_stats} for d in parsed.step_stats.dev_stats}
    assert sorted(devices) == [
        "/job:ps/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
    ]
    assert "w" in devices["/job:ps/replica:0/task:0/device:CPU:0"]
    assert "y" in devices["/job:worker/replica:0/task:0/device:CPU:0"]
