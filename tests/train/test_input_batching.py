"""tf.train.batch, batch_join and their maybe_ forms: ports of TF's input_test.py.

Expected values are those of TF's own tests (tensorflow/python/training/
input_test.py, without their SparseTensor components): the contents of each
batch from a ``count_up_to`` counter, the smaller final batch, the
OutOfRangeError once the input is exhausted and the queue drained, the
static shapes and the errors. Op names are those TF 1.x gives for the same
calls. Queue runners run in real threads; joins are bounded, nothing sleeps.
"""

import numpy as np
import pytest

import minitf as tf
from tests.train.test_input import join_all, start

pytestmark = pytest.mark.timeout(60)


def counter_to(limit, dtype=tf.int64):
    """TF's test input: a variable counted up to ``limit`` (0, 1, ..., limit-1, then the end)."""
    examples = tf.Variable(tf.constant(0, dtype=dtype))
    return examples.count_up_to(limit)


def assert_exhausted(sess, fetch, threads) -> None:
    with pytest.raises(tf.errors.OutOfRangeError):
        sess.run(fetch)
    join_all(threads)


# -- batch ----------------------------------------------------------------------------------


@pytest.mark.parametrize("use_dict", [False, True])
def test_batch_one_thread_gives_the_examples_in_order(use_dict):
    batch_size, num_batches = 10, 3
    counter = counter_to(num_batches * batch_size)
    if use_dict:
        batched = tf.train.batch({"c": counter, "S": "string"}, batch_size=batch_size)
        fetch = [batched["c"], batched["S"]]
    else:
        fetch = tf.train.batch([counter, "string"], batch_size=batch_size)
    assert [t.shape.as_list() for t in fetch] == [[batch_size], [batch_size]]
    with tf.Session() as sess:
        threads = start(sess)
        for i in range(num_batches):
            counts, strings = sess.run(fetch)
            np.testing.assert_array_equal(counts, np.arange(i * batch_size, (i + 1) * batch_size))
            assert strings.tolist() == [b"string"] * batch_size
        assert_exhausted(sess, fetch, threads)


@pytest.mark.parametrize("dtype", [tf.uint32, tf.uint64])
def test_batch_of_unsigned_integers(dtype):
    values = tf.constant([0, 1, 2, 3, 4, 5], dtype=dtype)
    batched = tf.train.batch([values], batch_size=2)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        got = sess.run(batched)
        assert got.dtype == dtype.as_numpy_dtype and got.tolist() == [[0, 1, 2, 3, 4, 5]] * 2
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)


def test_batch_with_enqueue_many_rebatches_batches():
    batch_size, num_batches = 10, 3
    counter = counter_to(num_batches * batch_size)
    pre_batched = tf.train.batch([counter, "string"], batch_size=2)
    batched = tf.train.batch(pre_batched, enqueue_many=True, batch_size=batch_size)
    with tf.Session() as sess:
        threads = start(sess)
        for i in range(num_batches):
            counts, strings = sess.run(batched)
            np.testing.assert_array_equal(counts, np.arange(i * batch_size, (i + 1) * batch_size))
            assert strings.tolist() == [b"string"] * batch_size
        assert_exhausted(sess, batched, threads)


def test_batch_with_many_threads_gives_every_example_once():
    batch_size, num_batches = 10, 3
    counter = counter_to(num_batches * batch_size)
    batched = tf.train.batch([counter, "string"], batch_size=batch_size, num_threads=4)
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert len(runner.enqueue_ops) == 4 and len(set(runner.enqueue_ops)) == 1
    all_counts = []
    with tf.Session() as sess:
        threads = start(sess)
        for _ in range(num_batches):
            counts, strings = sess.run(batched)
            assert len(counts) == batch_size and strings.tolist() == [b"string"] * batch_size
            all_counts.extend(counts)
        assert_exhausted(sess, batched, threads)
    assert sorted(all_counts) == list(range(num_batches * batch_size))


@pytest.mark.parametrize("num_threads", [1, 4])
def test_batch_allows_a_smaller_final_batch(num_threads):
    batch_size, num_batches, extra_elements = 10, 3, 5
    counter = counter_to(num_batches * batch_size + extra_elements)
    batched = tf.train.batch(
        [counter, "string"],
        batch_size=batch_size,
        num_threads=num_threads,
        allow_smaller_final_batch=True,
    )
    assert [t.shape.as_list() for t in batched] == [[None], [None]]
    assert batched[0].op.type == "QueueDequeueUpToV2"
    all_counts = []
    with tf.Session() as sess:
        threads = start(sess)
        for i in range(num_batches):
            counts, strings = sess.run(batched)
            if num_threads == 1:
                np.testing.assert_array_equal(
                    counts, np.arange(i * batch_size, (i + 1) * batch_size)
                )
            assert len(counts) == batch_size and strings.tolist() == [b"string"] * batch_size
            all_counts.extend(counts)
        counts, strings = sess.run(batched)
        assert len(counts) == extra_elements and strings.tolist() == [b"string"] * extra_elements
        all_counts.extend(counts)
        assert_exhausted(sess, batched, threads)
    if num_threads == 1:
        assert all_counts == list(range(num_batches * batch_size + extra_elements))
    assert sorted(all_counts) == list(range(num_batches * batch_size + extra_elements))


def test_batch_without_a_smaller_final_batch_drops_the_rest():
    counter = counter_to(25)
    batched = tf.train.batch([counter], batch_size=10)
    assert batched.shape.as_list() == [10]  # one tensor in, one tensor out
    with tf.Session() as sess:
        threads = start(sess)
        assert sess.run(batched).tolist() == list(range(10))
        assert sess.run(batched).tolist() == list(range(10, 20))
        assert_exhausted(sess, batched, threads)  # 20..24 are left in the closed queue


def test_batch_with_dynamic_pad_pads_each_batch_to_its_longest_string_list():
    batch_size, num_batches = 10, 3
    counter = counter_to(num_batches * batch_size)
    strings = tf.tile(["string"], tf.cast(tf.stack([counter]), tf.int32))  # counter copies
    batched = tf.train.batch([counter, strings], batch_size=batch_size, dynamic_pad=True)
    assert [t.shape.as_list() for t in batched] == [[batch_size], [batch_size, None]]
    queue_op = batched[0].op.inputs[0].op
    assert (queue_op.name, queue_op.type) == ("batch/padding_fifo_queue", "PaddingFIFOQueueV2")
    with tf.Session() as sess:
        threads = start(sess)
        for i in range(num_batches):
            counts, padded = sess.run(batched)
            expected = np.arange(i * batch_size, (i + 1) * batch_size)
            max_len = expected[-1]
            np.testing.assert_array_equal(counts, expected)
            assert padded.tolist() == [
                [b"string"] * rep + [b""] * (max_len - rep) for rep in expected
            ]
        assert_exhausted(sess, batched, threads)


def test_batch_ops_have_tf_names_and_the_shared_name():
    counter = counter_to(30)
    batched = tf.train.batch([counter, "string"], batch_size=10, shared_name="SHARED_NAME_XYZ")
    assert [t.name for t in batched] == ["batch:0", "batch:1"]
    assert batched[0].op.type == "QueueDequeueManyV2"
    queue_op = batched[0].op.inputs[0].op
    assert queue_op.name == "batch/fifo_queue" and queue_op.type == "FIFOQueueV2"
    assert queue_op.get_attr("shared_name") == "SHARED_NAME_XYZ"
    assert queue_op.get_attr("capacity") == 32
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert runner.name == "batch/fifo_queue"
    assert [op.name for op in runner.enqueue_ops] == ["batch/fifo_queue_enqueue"]
    assert (runner.close_op.name, runner.cancel_op.name) == (
        "batch/fifo_queue_Close",
        "batch/fifo_queue_Close_1",
    )
    named = tf.train.batch([counter], batch_size=2, name="Q")
    assert named.op.name == "Q" and named.op.inputs[0].op.name == "Q/fifo_queue"


def test_batch_of_a_dict_comes_back_as_a_dict_in_sorted_key_order():
    batched = tf.train.batch({"b": tf.constant(1), "a": tf.constant([1.0, 2.0])}, 4)
    assert sorted(batched) == ["a", "b"]
    assert (batched["a"].name, batched["b"].name) == ("batch:0", "batch:1")
    assert batched["a"].shape.as_list() == [4, 2] and batched["b"].dtype == tf.int32
    single = tf.train.batch({"c": [12, 12]}, batch_size=8)
    assert list(single) == ["c"] and single["c"].shape.as_list() == [8, 2]


def test_batch_needs_a_known_rank_and_fully_defined_shapes():
    with pytest.raises(ValueError, match="Cannot infer Tensor's rank"):
        tf.train.batch([tf.placeholder(tf.int64)], batch_size=2)
    with pytest.raises(ValueError, match="All shapes must be fully defined"):
        tf.train.batch([tf.placeholder(tf.int64, [None, 3])], batch_size=2)
    with pytest.raises(ValueError, match="Expected at least one tensor in batch()"):
        tf.train.batch([], batch_size=2)


def test_batch_takes_given_shapes_for_tensors_without_static_shapes():
    fed = tf.placeholder(tf.float32, [None])
    batched = tf.train.batch([fed], batch_size=2, shapes=[[3]])
    assert batched.shape.as_list() == [2, 3]
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        # The enqueue op needs the feed, which the runner cannot give: it fails and stops all.
        with pytest.raises(tf.errors.InvalidArgumentError, match="placeholder"):
            coord.join(threads, stop_grace_period_secs=10)


# -- maybe_batch ----------------------------------------------------------------------------


KEEP_INPUT_CASES = [
    (1, False, False),
    (1, True, False),
    (5, False, False),
    (5, True, False),
    (1, True, True),
    (5, True, True),
]


def even_examples(enqueue_many, keep_input_vector, batch_size, num_batches):
    """TF's keep-input helper's input: a counter (batched first with enqueue_many) and its flag."""
    counter = counter_to(num_batches * batch_size * 2, dtype=tf.int32)
    to_batch = [counter, "string"]
    if enqueue_many:
        to_batch = tf.train.batch(to_batch, 4 if keep_input_vector else 1)
    keep_input = tf.squeeze(tf.equal(0, tf.mod(to_batch[0], 2)))
    return to_batch, keep_input


def assert_only_even_then_exhausted(batched, batch_size, num_batches) -> None:
    """Runs the runners; ``num_batches`` batches of even counts, then the end."""
    seen = []
    with tf.Session() as sess:
        threads = start(sess)
        for _ in range(num_batches):
            counts, strings = sess.run(batched)
            assert np.mod(counts, 2).tolist() == [0] * batch_size
            assert strings.tolist() == [b"string"] * batch_size
            seen.extend(counts)
        assert_exhausted(sess, batched, threads)
    assert sorted(seen) == list(range(0, num_batches * batch_size * 2, 2))


@pytest.mark.parametrize("num_threads, enqueue_many, keep_input_vector", KEEP_INPUT_CASES)
def test_maybe_batch_keeps_only_the_even_examples(num_threads, enqueue_many, keep_input_vector):
    batch_size, num_batches = 5, 4
    to_batch, keep_input = even_examples(enqueue_many, keep_input_vector, batch_size, num_batches)
    batched = tf.train.maybe_batch(
        to_batch, keep_input, batch_size, num_threads=num_threads, enqueue_many=enqueue_many
    )
    assert_only_even_then_exhausted(batched, batch_size, num_batches)


def test_maybe_batch_with_a_keep_vector_enqueues_the_kept_rows():
    batched = tf.train.maybe_batch(
        [tf.constant([[5, 4], [7, 2]])], keep_input=[True, False], batch_size=1, enqueue_many=True
    )
    assert tf.get_default_graph().get_operation_by_name("batch/DynamicPartition")
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert sess.run(batched).tolist() == [[5, 4]]
        assert sess.run(batched).tolist() == [[5, 4]]  # the runner enqueues the row again
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)


def test_maybe_batch_with_a_fed_keep_flag_builds_a_cond():
    keep = tf.placeholder_with_default(True, [])
    tf.train.maybe_batch([tf.constant(1)], keep, 4)
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    (enqueue,) = runner.enqueue_ops
    assert enqueue.op.name == "batch/cond/Merge"


def test_maybe_batch_checks_the_rank_of_keep_input():
    with pytest.raises(
        ValueError, match="`keep_input` cannot be a vector when `enqueue_many=False`"
    ):
        tf.train.maybe_batch(
            [tf.zeros(5)], keep_input=tf.constant([True, False]), batch_size=1, enqueue_many=False
        )
    with pytest.raises(ValueError, match="`keep_input` must be 0 or 1 dimensions."):
        tf.train.maybe_batch(
            [tf.zeros(5)],
            keep_input=tf.constant([[True], [False]]),
            batch_size=1,
            enqueue_many=True,
        )
    with pytest.raises(ValueError, match="must be known at graph construction"):
        tf.train.maybe_batch(
            [tf.zeros(5)], keep_input=tf.placeholder(tf.bool), batch_size=1, enqueue_many=True
        )


# -- batch_join -----------------------------------------------------------------------------


def two_inputs(num_a, num_b):
    """TF's two inputs: (0..num_a-1, "a") from a counter, and (99, "b") num_b times."""
    counter = counter_to(num_a)
    ninety_nine = tf.train.limit_epochs(tf.constant(99, dtype=tf.int64), num_b)
    return counter, ninety_nine


def _check_joined(counts, strings, all_a, seen_b):
    which_a = [i for i, s in enumerate(strings) if s == b"a"]
    which_b = [i for i, s in enumerate(strings) if s == b"b"]
    assert len(which_a) + len(which_b) == len(strings)
    assert [counts[i] for i in which_b] == [99] * len(which_b)
    all_a.extend(counts[i] for i in which_a)
    return seen_b + len(which_b)


@pytest.mark.parametrize("use_dict", [False, True])
def test_batch_join_mixes_two_inputs_and_keeps_each_ones_order(use_dict):
    num_a, num_b, batch_size = 70, 90, 5
    counter, ninety_nine = two_inputs(num_a, num_b)
    if use_dict:
        batched = tf.train.batch_join(
            [{"c": counter, "S": "a"}, {"c": ninety_nine, "S": "b"}], batch_size=batch_size
        )
        fetch = [batched["c"], batched["S"]]
    else:
        fetch = tf.train.batch_join([[counter, "a"], [ninety_nine, "b"]], batch_size=batch_size)
    assert [t.shape.as_list() for t in fetch] == [[batch_size], [batch_size]]
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert [op.name for op in runner.enqueue_ops] == [
        "batch_join/fifo_queue_enqueue",
        "batch_join/fifo_queue_enqueue_1",
    ]
    all_a, seen_b = [], 0
    with tf.Session() as sess:
        threads = start(sess)
        for _ in range((num_a + num_b) // batch_size):
            counts, strings = sess.run(fetch)
            assert len(counts) == batch_size
            seen_b = _check_joined(counts, strings, all_a, seen_b)
        assert_exhausted(sess, fetch, threads)
    assert all_a == list(range(num_a)) and seen_b == num_b


def test_batch_join_smaller_final_batch_has_what_is_left_of_both_inputs():
    extra_elements, batch_size = 2, 5
    num_a, num_b = 70 + extra_elements, 90 + extra_elements
    counter, ninety_nine = two_inputs(num_a, num_b)
    batched = tf.train.batch_join(
        [[counter, "a"], [ninety_nine, "b"]], batch_size=batch_size, allow_smaller_final_batch=True
    )
    assert [t.shape.as_list() for t in batched] == [[None], [None]]
    all_a, seen_b = [], 0
    with tf.Session() as sess:
        threads = start(sess)
        for _ in range((num_a + num_b) // batch_size):
            counts, strings = sess.run(batched)
            assert len(counts) == batch_size
            seen_b = _check_joined(counts, strings, all_a, seen_b)
        counts, strings = sess.run(batched)
        assert len(counts) == 2 * extra_elements
        seen_b = _check_joined(counts, strings, all_a, seen_b)
        assert_exhausted(sess, batched, threads)
    assert all_a == list(range(num_a)) and seen_b == num_b


def _padded_join(extra_elements, smaller):
    """TF's dynamic-pad join: (0..num_a-1, ["a"] * (count + 1)) and (99, ["b"] * 99) num_b times."""
    num_a, num_b = 70 + extra_elements, 90 + extra_elements
    counter, ninety_nine = two_inputs(num_a, num_b)
    a = tf.tile(["a"], tf.cast(tf.stack([counter + 1]), tf.int32))
    b = tf.tile(["b"], tf.cast(tf.stack([ninety_nine]), tf.int32))
    batched = tf.train.batch_join(
        [[counter, a], [ninety_nine, b]],
        batch_size=5,
        dynamic_pad=True,
        allow_smaller_final_batch=smaller,
    )
    return num_a, num_b, batched


@pytest.mark.parametrize("extra_elements, smaller", [(0, False), (2, True)])
def test_batch_join_with_dynamic_pad_pads_and_keeps_each_inputs_order(extra_elements, smaller):
    batch_size = 5
    num_a, num_b, batched = _padded_join(extra_elements, smaller)
    first = None if smaller else batch_size
    assert [t.shape.as_list() for t in batched] == [[first], [first, None]]
    assert batched[0].op.inputs[0].op.name == "batch_join/padding_fifo_queue"
    sizes = [batch_size] * ((num_a + num_b) // batch_size) + [2 * extra_elements] * smaller
    all_a, seen_b, count_string_a = [], 0, []
    with tf.Session() as sess:
        threads = start(sess)
        for size in sizes:
            counts, padded = sess.run(batched)
            assert len(counts) == len(padded) == size
            for row in padded:
                if row[0] == b"b":
                    assert row.tolist() == [b"b"] * 99
                else:
                    count_string_a.append(sum(x == b"a" for x in row))
            seen_b = _check_joined(counts, [row[0] for row in padded], all_a, seen_b)
        assert_exhausted(sess, batched, threads)
    assert count_string_a == list(range(1, num_a + 1))
    assert all_a == list(range(num_a)) and seen_b == num_b


def test_batch_join_inputs_must_agree():
    with pytest.raises(
        ValueError, match="All dictionaries in tensors_list must have the same keys"
    ):
        tf.train.batch_join(
            [{"c": 12, "s": 123, "S": "a"}, {"cool": -12, "s": 99, "S": "b"}], batch_size=8
        )
    with pytest.raises(TypeError, match="Expected types to be consistent: int32 vs. int64."):
        tf.train.batch_join([[tf.constant(1)], [tf.constant(1, tf.int64)]], batch_size=8)
    with pytest.raises(ValueError, match="Expected at least one set of tensors"):
        tf.train.batch_join([], batch_size=8)
    with pytest.raises(ValueError):  # shapes [2] and [3] do not merge
        tf.train.batch_join([[tf.zeros([2])], [tf.zeros([3])]], batch_size=8)


def test_maybe_batch_join_keeps_only_what_keep_input_keeps():
    odd = tf.constant([1, 3, 5, 7])
    even = tf.constant([0, 2, 4, 6])
    batched = tf.train.maybe_batch_join(
        [[odd], [even]],
        keep_input=[True, False, True, False],
        batch_size=4,
        enqueue_many=True,
    )
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        got = sess.run(batched).tolist() + sess.run(batched).tolist()
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    assert set(got) <= {1, 5, 0, 4}  # rows 0 and 2 of each input


def summary_values(sess) -> dict:
    """Tag -> value of every scalar summary in SUMMARIES, by running their merge."""
    merged = sess.run(tf.summary.merge_all())
    return {v.tag: v.simple_value for v in tf.Summary.FromString(merged).value}


@pytest.mark.parametrize(
    "batcher, tag",
    [
        (lambda x: tf.train.batch([x], 2, capacity=20), "batch/fraction_of_20_full"),
        (lambda x: tf.train.batch_join([[x]], 2, capacity=20), "batch_join/fraction_of_20_full"),
        (
            lambda x: tf.train.batch([x], 2, capacity=20, dynamic_pad=True, name="padded"),
            "padded/fraction_of_20_full",
        ),
    ],  # fmt: skip
)
def test_batchers_add_tfs_fullness_summary_of_size_over_capacity(batcher, tag):
    batcher(tf.constant(7))
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    with tf.Session() as sess:
        assert summary_values(sess) == {tag: 0.0}
        for _ in range(5):
            sess.run(runner.enqueue_ops[0])
        assert summary_values(sess) == {tag: np.float32(5) * np.float32(1.0 / 20)}
