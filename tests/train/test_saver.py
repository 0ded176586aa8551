"""tf.train.Saver and checkpoints: the TF1 behaviour each test pins down is in its name.

Expected values are computed here with numpy (the values assigned, TF1's
Adam update by hand), never read back from minitf and pasted.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.distributed.launcher import LocalCluster
from minitf.train import saver as saver_lib

pytestmark = pytest.mark.timeout(120)

f32 = np.float32


def _ops_of_type(op_type):
    return [op for op in tf.get_default_graph().get_operations() if op.type == op_type]


# -- save and restore ------------------------------------------------------------------------------


def test_save_then_restore_brings_back_every_variable_including_an_int64_global_step(tmp_path):
    w_value = np.arange(6, dtype=f32).reshape(2, 3) / 4
    b_value = np.array([1.5, -2.0], f32)
    w = tf.Variable(w_value, name="w")
    b = tf.Variable(b_value, name="b")
    counts = tf.Variable(np.array([3, 4, 5], np.int32), name="counts")
    step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(step, 42))
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        assert path == str(tmp_path / "model.ckpt")
        sess.run([w.assign(np.zeros((2, 3), f32)), b.assign([0.0, 0.0]), tf.assign(step, 7)])
        sess.run(counts.assign([0, 0, 0]))
        saver.restore(sess, path)
        got_w, got_b, got_counts, got_step = sess.run([w, b, counts, step])
    np.testing.assert_array_equal(got_w, w_value)
    np.testing.assert_array_equal(got_b, b_value)
    np.testing.assert_array_equal(got_counts, [3, 4, 5])
    assert got_step == 42 and got_step.dtype == np.int64


def test_restore_initializes_variables_in_a_new_session(tmp_path):
    v = tf.Variable(np.array([1.0, 2.0], f32), name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(v.assign([5.0, 6.0]))
        path = saver.save(sess, str(tmp_path / "m"))
    with tf.Session() as sess:
        saver.restore(sess, path)  # no initializer run in this session
        np.testing.assert_array_equal(sess.run(v), [5.0, 6.0])


def test_saver_builds_save_and_restore_ops_in_the_save_scope():
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    saver_def = saver.as_saver_def()
    assert saver_def.filename_tensor_name == "save/Const:0"
    assert saver_def.save_tensor_name == "save/control_dependency:0"
    assert saver_def.restore_op_name == "save/restore_all"
    assert (saver_def.max_to_keep, saver_def.sharded, saver_def.version) == (5, False, 2)
    assert [op.name for op in _ops_of_type("SaveV2")] == ["save/SaveV2"]
    assert [op.name for op in _ops_of_type("RestoreV2")] == ["save/RestoreV2"]
    second = tf.train.Saver()
    assert second.saver_def.restore_op_name == "save_1/restore_all"


def test_var_list_dict_saves_under_the_given_names(tmp_path):
    a = tf.Variable(np.array([1.0, 2.0], f32), name="a")
    saver = tf.train.Saver({"renamed/weights": a})
    with tf.Session() as sess:
        sess.run(a.initializer)
        path = saver.save(sess, str(tmp_path / "m"))
    assert tf.train.list_variables(path) == [("renamed/weights", [2])]
    tf.reset_default_graph()
    other = tf.Variable(np.zeros(2, f32), name="other")
    with tf.Session() as sess:
        tf.train.Saver({"renamed/weights": other}).restore(sess, path)
        np.testing.assert_array_equal(sess.run(other), [1.0, 2.0])


def test_resource_variables_round_trip(tmp_path):
    r = tf.Variable(np.array([[1, 2], [3, 4]], np.int64), name="r", use_resource=True)
    saver = tf.train.Saver([r])
    with tf.Session() as sess:
        sess.run(r.initializer)
        path = saver.save(sess, str(tmp_path / "m"))
        sess.run(r.assign(np.zeros((2, 2), np.int64)))
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(r), [[1, 2], [3, 4]])


def test_reshape_true_restores_a_tensor_saved_with_another_shape(tmp_path):
    v = tf.Variable(np.arange(6, dtype=f32), name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    tf.reset_default_graph()
    v = tf.Variable(np.zeros((2, 3), f32), name="v")
    with tf.Session() as sess:
        tf.train.Saver(reshape=True).restore(sess, path)
        np.testing.assert_array_equal(sess.run(v), np.arange(6, dtype=f32).reshape(2, 3))


# -- names, the state file, max_to_keep ------------------------------------------------------------


def test_global_step_names_the_checkpoint_and_the_state_file_lists_it(tmp_path):
    v = tf.Variable(1.0, name="v")
    step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, prefix, global_step=10) == prefix + "-10"
        sess.run(tf.assign(step, 20))
        assert saver.save(sess, prefix, global_step=step) == prefix + "-20"
        sess.run(v.assign(2.0))
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint",
        "model.ckpt-10.data-00000-of-00001",
        "model.ckpt-10.index",
        "model.ckpt-10.meta",
        "model.ckpt-20.data-00000-of-00001",
        "model.ckpt-20.index",
        "model.ckpt-20.meta",
    ]
    assert (tmp_path / "checkpoint").read_text() == (
        f'model_checkpoint_path: "{prefix}-20"\n'
        f'all_model_checkpoint_paths: "{prefix}-10"\n'
        f'all_model_checkpoint_paths: "{prefix}-20"\n'
    )
    assert saver.last_checkpoints == [prefix + "-10", prefix + "-20"]


def test_pad_step_number_pads_to_eight_digits(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver(pad_step_number=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"), global_step=7, write_meta_graph=False)
    assert path == str(tmp_path / "m-00000007")


def test_relative_save_path_writes_relative_paths_in_the_state_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, "ckpt/model", global_step=3) == "ckpt/model-3"
    assert (tmp_path / "ckpt" / "checkpoint").read_text() == (
        'model_checkpoint_path: "model-3"\nall_model_checkpoint_paths: "model-3"\n'
    )
    state = tf.train.get_checkpoint_state("ckpt")
    assert state.model_checkpoint_path == os.path.join("ckpt", "model-3")
    assert tf.train.latest_checkpoint("ckpt") == os.path.join("ckpt", "model-3")


def test_save_relative_paths_writes_paths_relative_to_the_directory(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver(save_relative_paths=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"), global_step=1)
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "m-1"\nall_model_checkpoint_paths: "m-1"\n'
    )
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-1")


def test_max_to_keep_deletes_the_oldest_checkpoint_files(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 5):
            saver.save(sess, prefix, global_step=step)
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint",
        "m-3.data-00000-of-00001",
        "m-3.index",
        "m-3.meta",
        "m-4.data-00000-of-00001",
        "m-4.index",
        "m-4.meta",
    ]
    assert saver.last_checkpoints == [prefix + "-3", prefix + "-4"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [prefix + "-3", prefix + "-4"]


def test_keep_checkpoint_every_n_hours_keeps_one_checkpoint_per_period(tmp_path, monkeypatch):
    class Clock:
        now = 0.0

        @classmethod
        def time(cls):
            return cls.now

    monkeypatch.setattr(saver_lib, "time", Clock)
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1.0)  # built at t=0
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # TF's rule: a checkpoint leaving the max_to_keep window is kept if it
        # was written after the next keep time (first 1 h after the build).
        for step, now in [(1, 1000.0), (2, 3700.0), (3, 3800.0), (4, 3900.0)]:
            Clock.now = now
            saver.save(sess, prefix, global_step=step, write_meta_graph=False)
    # 1 (t=1000 < 3600) deleted; 2 (t=3700 > 3600) kept, next keep time 7200;
    # 3 (t=3800 < 7200) deleted; 4 is the one max_to_keep keeps.
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".index")) == [
        "m-2.index",
        "m-4.index",
    ]
    assert saver.last_checkpoints == [prefix + "-4"]


def test_latest_checkpoint_and_get_checkpoint_state(tmp_path):
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, prefix, global_step=1)
        saver.save(sess, prefix, global_step=2)
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-2"
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == prefix + "-2"
    assert state.all_model_checkpoint_paths == [prefix + "-1", prefix + "-2"]
    assert tf.train.checkpoint_exists(prefix + "-1")
    assert not tf.train.checkpoint_exists(prefix + "-3")
    # The state file names a checkpoint whose index is gone: no latest checkpoint.
    os.remove(prefix + "-2.index")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_latest_filename_names_another_state_file(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"), global_step=1, latest_filename="mine")
        with pytest.raises(ValueError, match="must not contain path components"):
            saver.save(sess, str(tmp_path / "m"), latest_filename="a/b")
    assert not (tmp_path / "checkpoint").exists()
    assert tf.train.latest_checkpoint(str(tmp_path), "mine") == str(tmp_path / "m-1")


def test_recover_last_checkpoints_keeps_those_that_still_exist(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, prefix, global_step=1)
    fresh = tf.train.Saver()
    fresh.recover_last_checkpoints([prefix + "-1", prefix + "-9"])
    assert fresh.last_checkpoints == [prefix + "-1"]
    fresh.set_last_checkpoints_with_time([(prefix + "-1", 5.0)])
    assert fresh.last_checkpoints == [prefix + "-1"]


# -- reading checkpoints ---------------------------------------------------------------------------


def test_checkpoint_reader_list_variables_and_load_variable_give_the_assigned_values(tmp_path):
    w_value = np.array([[0.5, -1.0, 2.0], [3.0, 4.5, -6.0]], f32)
    w = tf.Variable(np.zeros((2, 3), f32), name="layer/w")
    step = tf.train.get_or_create_global_step()
    tf.Variable(np.array([b"alpha", b"", b"x\x00y"], dtype=object), name="names")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([w.assign(w_value), tf.assign(step, 9)])
        path = saver.save(sess, str(tmp_path / "m"), global_step=step)
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_shape_map() == {
        "layer/w": [2, 3],
        "global_step": [],
        "names": [3],
    }
    assert reader.get_variable_to_dtype_map() == {
        "layer/w": tf.float32,
        "global_step": tf.int64,
        "names": tf.string,
    }
    assert reader.has_tensor("layer/w") and not reader.has_tensor("layer/b")
    np.testing.assert_array_equal(reader.get_tensor("layer/w"), w_value)
    assert reader.get_tensor("global_step") == 9
    assert list(reader.get_tensor("names")) == [b"alpha", b"", b"x\x00y"]
    assert tf.train.list_variables(str(tmp_path)) == [
        ("global_step", []),
        ("layer/w", [2, 3]),
        ("names", [3]),
    ]
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), "layer/w:0"), w_value)
    np.testing.assert_array_equal(tf.train.load_variable(path, "layer/w"), w_value)
    with pytest.raises(tf.errors.NotFoundError, match="Key layer/b not found in checkpoint"):
        reader.get_tensor("layer/b")


def test_reading_a_missing_checkpoint_raises_tf_errors(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files for"):
        tf.train.NewCheckpointReader(str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints"):
        tf.train.list_variables(str(tmp_path))


# -- partitioned variables and optimizer slots -----------------------------------------------------


def test_partitioned_variable_is_saved_under_its_full_name_with_its_slices(tmp_path):
    full = np.arange(15, dtype=f32).reshape(5, 3)
    emb = tf.get_variable("emb", shape=[5, 3], partitioner=tf.fixed_size_partitioner(2))
    saver = tf.train.Saver()
    (save_op,) = _ops_of_type("SaveV2")
    assert list(save_op.inputs[1].op.get_attr("value")) == [b"emb", b"emb"]
    assert list(save_op.inputs[2].op.get_attr("value")) == [b"5 3 0,3:0,3", b"5 3 3,2:0,3"]
    part0, part1 = list(emb)
    with tf.Session() as sess:
        sess.run([part0.assign(full[:3]), part1.assign(full[3:])])
        path = saver.save(sess, str(tmp_path / "m"))
        sess.run([part0.assign(np.zeros((3, 3), f32)), part1.assign(np.zeros((2, 3), f32))])
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(part0), full[:3])
        np.testing.assert_array_equal(sess.run(part1), full[3:])
    assert tf.train.list_variables(path) == [("emb", [5, 3])]
    np.testing.assert_array_equal(tf.train.load_variable(path, "emb"), full)


def test_partitioned_checkpoint_restores_into_another_partitioning(tmp_path):
    full = np.arange(15, dtype=f32).reshape(5, 3) - 7
    emb = tf.get_variable("emb", shape=[5, 3], partitioner=tf.fixed_size_partitioner(2))
    part0, part1 = list(emb)
    with tf.Session() as sess:
        sess.run([part0.assign(full[:3]), part1.assign(full[3:])])
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    tf.reset_default_graph()
    emb = tf.get_variable("emb", shape=[5, 3], partitioner=tf.fixed_size_partitioner(3))
    whole = tf.get_variable("whole", shape=[5, 3])
    with tf.Session() as sess:
        tf.train.Saver([emb]).restore(sess, path)  # a PartitionedVariable: all its shards
        tf.train.Saver({"emb": whole}).restore(sess, path)
        shards = sess.run(list(emb))
        assert [s.shape for s in shards] == [(2, 3), (2, 3), (1, 3)]
        np.testing.assert_array_equal(np.concatenate(shards), full)
        np.testing.assert_array_equal(sess.run(whole), full)


def _adam_by_hand(w, c, steps, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8):
    """TF1's ApplyAdam on loss = sum(c * w * w) / 2 (gradient c * w), in float32."""
    lr, b1, b2, eps, one = f32(lr), f32(beta1), f32(beta2), f32(eps), f32(1)
    m, v, b1p, b2p = np.zeros_like(w), np.zeros_like(w), b1, b2
    for _ in range(steps):
        g = c * w
        alpha = lr * np.sqrt(one - b2p) / (one - b1p)
        m = m + (g - m) * (one - b1)
        v = v + (g * g - v) * (one - b2)
        w = w - (m * alpha) / (np.sqrt(v) + eps)
        b1p, b2p = b1p * b1, b2p * b2
    return w, m, v, b1p, b2p


def test_adam_slot_variables_round_trip_and_training_resumes_exactly(tmp_path):
    w0 = np.array([[1.0, -2.0], [0.5, 3.0]], f32)
    c = np.array([[0.3, -0.7], [1.1, 0.2]], f32)
    w = tf.Variable(w0, name="w")
    train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(c * w * w) * 0.5)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        path = saver.save(sess, str(tmp_path / "adam"))
    w1, m1, v1, b1p, b2p = _adam_by_hand(w0, c, steps=1)
    reader = tf.train.NewCheckpointReader(path)
    assert sorted(reader.get_variable_to_shape_map()) == [
        "beta1_power",
        "beta2_power",
        "w",
        "w/Adam",
        "w/Adam_1",
    ]
    np.testing.assert_allclose(reader.get_tensor("w/Adam"), m1, rtol=1e-6)
    np.testing.assert_allclose(reader.get_tensor("w/Adam_1"), v1, rtol=1e-6)
    np.testing.assert_allclose(reader.get_tensor("beta1_power"), b1p, rtol=1e-6)
    np.testing.assert_allclose(reader.get_tensor("beta2_power"), b2p, rtol=1e-6)
    with tf.Session() as sess:  # a new session: its variables start uninitialized
        saver.restore(sess, path)
        np.testing.assert_allclose(sess.run(w), w1, rtol=1e-6)
        sess.run(train)
        w2, m2, v2, _, _ = _adam_by_hand(w0, c, steps=2)
        np.testing.assert_allclose(sess.run(w), w2, rtol=1e-5)
        np.testing.assert_allclose(sess.run("w/Adam:0"), m2, rtol=1e-5)


# -- errors ----------------------------------------------------------------------------------------


def test_saver_without_variables_raises_no_variables_to_save(tmp_path):
    with pytest.raises(ValueError, match="^No variables to save$"):
        tf.train.Saver()
    empty = tf.train.Saver(allow_empty=True)
    with tf.Session() as sess:
        assert empty.save(sess, str(tmp_path / "m"), write_meta_graph=False) is None
        empty.restore(sess, str(tmp_path / "m"))  # does nothing
    assert not (tmp_path / "checkpoint").exists()


def test_saver_argument_errors():
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="build cannot be deferred"):
        tf.train.Saver([v], defer_build=True)
    with pytest.raises(ValueError, match="At least two variables have the same name: v"):
        tf.train.Saver([v, v._ref()])
    with pytest.raises(ValueError, match="The same saveable will be restored with two names"):
        tf.train.Saver({"a": v, "b": v})
    with pytest.raises(TypeError, match="Variable to save is not a Variable"):
        tf.train.Saver([tf.constant(1.0)])
    deferred = tf.train.Saver(defer_build=True)
    with tf.Session() as sess:
        with pytest.raises(RuntimeError, match="should be called before save"):
            deferred.save(sess, "/tmp/never")


def test_restore_errors_name_what_is_wrong(tmp_path):
    v = tf.Variable(np.ones((2, 3), f32), name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    tf.reset_default_graph()
    v = tf.Variable(np.zeros((3, 2), f32), name="v")
    u = tf.Variable(np.zeros(2, f32), name="u")
    i = tf.Variable(np.zeros((2, 3), np.int32), name="i")
    saver = tf.train.Saver([v])
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="Can't load save_path when it is None"):
            saver.restore(sess, None)
        missing = str(tmp_path / "nope")
        with pytest.raises(tf.errors.NotFoundError, match="not a valid checkpoint: " + missing):
            saver.restore(sess, missing)
        with pytest.raises(ValueError, match="not a valid checkpoint"):  # TF 1.13+'s class
            saver.restore(sess, missing)
        with pytest.raises(tf.errors.NotFoundError) as info:
            tf.train.Saver([u]).restore(sess, path)
        assert "Restoring from checkpoint failed" in info.value.message
        assert f"Key u not found in checkpoint {path}" in info.value.message
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            saver.restore(sess, path)
        assert "lhs shape= [3, 2] rhs shape= [2, 3]" in info.value.message
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            tf.train.Saver({"v": i}).restore(sess, path)
        assert "expected dtype int32 does not equal original dtype float32" in info.value.message


def test_saving_an_uninitialized_variable_fails_with_failed_precondition(tmp_path):
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
            saver.save(sess, str(tmp_path / "m"))
    assert not os.path.exists(tmp_path / "m.index")


def test_saving_under_a_file_raises_parent_directory_does_not_exist(tmp_path):
    (tmp_path / "a_file").write_text("")
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        save_path = str(tmp_path / "a_file" / "m")
        with pytest.raises(ValueError, match="Parent directory of .* doesn't exist, can't save"):
            saver.save(sess, save_path)


def test_an_interrupted_overwrite_of_one_prefix_is_detected_not_mixed(tmp_path):
    v = tf.Variable(np.array([1.0], f32), name="v")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(v.initializer)
        saver.save(sess, prefix, write_meta_graph=False)
        old_index = (tmp_path / "m.index").read_bytes()
        sess.run(v.assign([2.0]))
        saver.save(sess, prefix, write_meta_graph=False)
    # What a crash between the data file's rename and the index's leaves behind.
    (tmp_path / "m.index").write_bytes(old_index)
    with pytest.raises(tf.errors.DataLossError, match="written by another save"):
        tf.train.load_variable(prefix, "v")


# -- meta graphs -----------------------------------------------------------------------------------


def test_import_meta_graph_returns_a_saver_that_restores(tmp_path):
    v = tf.Variable(np.array([1.0, 2.0, 3.0], f32), name="v")
    doubled = tf.multiply(v, 2.0, name="doubled")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(v.assign([4.0, 5.0, 6.0]))
        path = saver.save(sess, str(tmp_path / "model"), global_step=1)
    assert os.path.exists(path + ".meta")
    assert doubled.name == "doubled:0"
    tf.reset_default_graph()
    restored = tf.train.import_meta_graph(path + ".meta")
    assert isinstance(restored, tf.train.Saver)
    assert restored.saver_def.restore_op_name == "save/restore_all"
    with tf.Session() as sess:
        restored.restore(sess, path)
        np.testing.assert_array_equal(sess.run("doubled:0"), [8.0, 10.0, 12.0])


def test_import_meta_graph_under_a_scope_restores_the_scoped_variables(tmp_path):
    v = tf.Variable(np.array([1.0, 2.0], f32), name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = tf.train.Saver().save(sess, str(tmp_path / "model"))
    tf.reset_default_graph()
    restored = tf.train.import_meta_graph(path + ".meta", import_scope="imported")
    assert restored.saver_def.restore_op_name == "imported/save/restore_all"
    with tf.Session() as sess:
        restored.restore(sess, path)
        np.testing.assert_array_equal(sess.run("imported/v:0"), [1.0, 2.0])


def test_import_meta_graph_returns_none_without_variables():
    tf.constant(1.0, name="c")
    meta = tf.train.export_meta_graph()
    tf.reset_default_graph()
    assert tf.train.import_meta_graph(meta) is None


def test_import_meta_graph_without_saver_def_builds_a_saver_over_the_variables(tmp_path):
    v = tf.Variable(np.array([3.0], f32), name="v")
    meta = tf.train.export_meta_graph()
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = tf.train.Saver().save(sess, str(tmp_path / "m"), write_meta_graph=False)
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph(meta)
    assert isinstance(saver, tf.train.Saver)
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run("v:0"), [3.0])


def test_savers_collection_round_trips_through_a_meta_graph():
    tf.Variable(1.0, name="v")
    saver = tf.train.Saver(max_to_keep=3)
    tf.add_to_collection(tf.GraphKeys.SAVERS, saver)
    meta = tf.train.export_meta_graph(saver_def=saver.as_saver_def())
    (stored,) = meta["collection_def"]["savers"]["proto_list"]["value"]
    assert stored["restore_op_name"] == "save/restore_all" and stored["max_to_keep"] == 3
    assert saver.to_proto(export_scope="save").restore_op_name == "restore_all"
    assert saver.to_proto(export_scope="elsewhere") is None
    tf.reset_default_graph()
    returned = tf.train.import_meta_graph(meta)
    (rebuilt,) = tf.get_collection(tf.GraphKeys.SAVERS)
    assert isinstance(rebuilt, tf.train.Saver)
    assert rebuilt.as_saver_def() == returned.as_saver_def() == saver.as_saver_def()


def test_filename_is_the_prefix_when_none_is_fed(tmp_path):
    tf.Variable(np.array([2.5], f32), name="v")
    saver = tf.train.Saver(filename=str(tmp_path / "default"))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = sess.run(saver.saver_def.save_tensor_name)
    assert prefix == str(tmp_path / "default").encode()
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path / "default"), "v"), [2.5])


# -- a save killed midway --------------------------------------------------------------------------

_SAVE_TWICE = textwrap.dedent(
    """
    import sys

    import numpy as np

    import minitf as tf

    directory = sys.argv[1]
    v = tf.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="v")
    big = tf.Variable(tf.zeros([50_000_000]), name="big")  # 200 MB: the save takes a while
    small_saver = tf.train.Saver([v])
    big_saver = tf.train.Saver([v, big])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        small_saver.save(sess, directory + "/model", global_step=1)
        sess.run(v.assign([7.0, 8.0, 9.0]))
        big_saver.save(sess, directory + "/model", global_step=2)
    """
)


def _files_of(directory, prefix):
    try:
        return [n for n in os.listdir(directory) if n.startswith(prefix)]
    except FileNotFoundError:
        return []


def test_a_save_killed_midway_leaves_the_previous_checkpoint_latest_and_whole(tmp_path):
    script = tmp_path / "save_twice.py"
    script.write_text(_SAVE_TWICE)
    directory = tmp_path / "ckpt"
    with open(tmp_path / "stderr.txt", "w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(directory)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 90
        while not _files_of(directory, "model-2."):  # the second save has begun writing
            if proc.poll() is not None:
                pytest.fail(f"the saver ended first: {(tmp_path / 'stderr.txt').read_text()}")
            if time.monotonic() > deadline:
                pytest.fail("the second save did not start within 90 s")
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert "model-2.index" not in _files_of(directory, "model-2.")
    assert all(".tmp-" in n or ".data-" in n for n in _files_of(directory, "model-2."))
    latest = tf.train.latest_checkpoint(str(directory))
    assert latest == str(directory / "model-1")
    v = tf.Variable(np.zeros(3, f32), name="v")
    with tf.Session() as sess:
        tf.train.Saver([v]).restore(sess, latest)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])


# -- in a cluster ----------------------------------------------------------------------------------

FULL_TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
PS0 = "/job:ps/replica:0/task:0/device:CPU:0"
PS1 = "/job:ps/replica:0/task:1/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"


def _devices_running(run_metadata, op_type):
    return sorted(
        d["device"]
        for d in run_metadata.step_stats["dev_stats"]
        for n in d["node_stats"]
        if n["op"] == op_type
    )


def _traced(sess, fetch, feed):
    run_metadata = tf.RunMetadata()
    sess.run(fetch, feed, options=FULL_TRACE, run_metadata=run_metadata)
    return run_metadata


def test_sharded_save_in_a_cluster_writes_one_data_file_per_ps_task(tmp_path):
    a_value = np.arange(4, dtype=f32)
    b_value = np.array([[1.0, -1.0], [0.5, 2.0]], f32)
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        a = tf.Variable(a_value, name="a")  # ps 0
        b = tf.Variable(b_value, name="b")  # ps 1
        step = tf.train.get_or_create_global_step()  # ps 0
    assert a.device == step.device == "/job:ps/task:0" and b.device == "/job:ps/task:1"
    sharded = tf.train.Saver(sharded=True)
    plain = tf.train.Saver()
    zero_all = [a.assign(np.zeros(4, f32)), b.assign(np.zeros((2, 2), f32)), tf.assign(step, 0)]
    prefix = str(tmp_path / "sharded")
    with LocalCluster({"ps": 2, "worker": 1}, output=None) as cluster:
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(step, 12))
            saved = _traced(
                sess,
                sharded.saver_def.save_tensor_name,
                {sharded.saver_def.filename_tensor_name: prefix},
            )
            sess.run(zero_all)
        # Each ps task ran its own SaveV2; the merge ran on the last one.
        assert _devices_running(saved, "SaveV2") == [PS0, PS1]
        assert _devices_running(saved, "MergeV2Checkpoints") == [PS1]
        assert sorted(os.listdir(tmp_path)) == [
            "sharded.data-00000-of-00002",
            "sharded.data-00001-of-00002",
            "sharded.index",
        ]
        with tf.Session(cluster.target("worker", 0)) as sess:  # a fresh session
            restored = _traced(
                sess,
                sharded.saver_def.restore_op_name,
                {sharded.saver_def.filename_tensor_name: prefix},
            )
            assert _devices_running(restored, "RestoreV2") == [PS0, PS1]
            got_a, got_b, got_step = sess.run([a, b, step])
            np.testing.assert_array_equal(got_a, a_value)
            np.testing.assert_array_equal(got_b, b_value)
            assert got_step == 12

            # Not sharded: one SaveV2 on the client's task receives every value.
            saved = _traced(
                sess,
                plain.saver_def.save_tensor_name,
                {plain.saver_def.filename_tensor_name: str(tmp_path / "plain")},
            )
            assert _devices_running(saved, "SaveV2") == [WORKER]
            path = plain.save(sess, str(tmp_path / "plain"), global_step=step)
            assert path == str(tmp_path / "plain-12")
            sess.run(zero_all)
        with tf.Session(cluster.target("worker", 0)) as sess:
            plain.restore(sess, path)
            got_a, got_b, got_step = sess.run([a, b, step])
    np.testing.assert_array_equal(got_a, a_value)
    np.testing.assert_array_equal(got_b, b_value)
    assert got_step == 12
    np.testing.assert_array_equal(tf.train.load_variable(prefix, "b"), b_value)
