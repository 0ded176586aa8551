"""tf.train.shuffle_batch, shuffle_batch_join and their maybe_ forms: ports of TF's input_test.py.

Expected values are those of TF's own tests (tensorflow/python/training/
input_test.py, ShuffleBatchTest and ShuffleBatchJoinTest, without their
SparseTensor components): every example of a ``count_up_to`` counter comes
out exactly once (the multiset), not in order (TF's check: the steps between
consecutive counts are not all equal), then OutOfRangeError. Op names and
attributes are those TF 1.x gives for the same calls (read from TF's graph).
Seeded queues are checked to repeat their order in minitf when what they
choose among is fixed: the input is all queued and the queue closed before
the first dequeue. Queue runners run in real threads; joins are bounded.
"""

import numpy as np
import pytest

import minitf as tf
from tests.train.test_input import join_all, start
from tests.train.test_input_batching import (
    KEEP_INPUT_CASES,
    assert_exhausted,
    assert_only_even_then_exhausted,
    counter_to,
    even_examples,
    two_inputs,
)

pytestmark = pytest.mark.timeout(60)


def assert_scrambled(counts, expected) -> None:
    """TF's checks: ``counts`` holds ``expected`` exactly, and not with one fixed step."""
    assert sorted(counts) == sorted(expected)
    deltas = np.diff(counts)
    assert not np.all(deltas == deltas[0])


# -- shuffle_batch --------------------------------------------------------------------------


def read_counts(fetch, sizes) -> list[int]:
    """Runs the runners; reads one batch per size in ``sizes``, then expects the end.

    Every batch must have its size and only the string "string"; returns the counts.
    """
    all_counts = []
    with tf.Session() as sess:
        threads = start(sess)
        for size in sizes:
            counts, strings = sess.run(fetch)
            assert counts.shape == (size,) and strings.tolist() == [b"string"] * size
            all_counts.extend(counts)
        assert_exhausted(sess, fetch, threads)
    return all_counts


@pytest.mark.parametrize("use_dict", [False, True])
def test_shuffle_batch_gives_every_example_once_in_another_order(use_dict):
    batch_size, num_batches = 10, 3
    counter = counter_to(num_batches * batch_size)
    kwargs = dict(batch_size=batch_size, capacity=32, min_after_dequeue=16, seed=141421)
    if use_dict:
        batched = tf.train.shuffle_batch({"c": counter, "S": "string"}, **kwargs)
        fetch = [batched["c"], batched["S"]]
    else:
        fetch = tf.train.shuffle_batch([counter, "string"], **kwargs)
    assert [t.shape.as_list() for t in fetch] == [[batch_size], [batch_size]]
    all_counts = read_counts(fetch, [batch_size] * num_batches)
    assert_scrambled(all_counts, range(num_batches * batch_size))


@pytest.mark.parametrize("num_threads, seed", [(1, 141421), (4, 173205)])
def test_shuffle_batch_allows_a_smaller_final_batch(num_threads, seed):
    batch_size, num_batches, extra_elements = 10, 3, 5
    total = num_batches * batch_size + extra_elements
    batched = tf.train.shuffle_batch(
        [counter_to(total), "string"],
        batch_size=batch_size,
        capacity=32,
        min_after_dequeue=16,
        seed=seed,
        num_threads=num_threads,
        allow_smaller_final_batch=True,
    )
    assert [t.shape.as_list() for t in batched] == [[None], [None]]
    assert batched[0].op.type == "QueueDequeueUpToV2"
    all_counts = read_counts(batched, [batch_size] * num_batches + [extra_elements])
    assert_scrambled(all_counts, range(total))


def test_shuffle_batch_with_many_threads_gives_every_example_once():
    batch_size, num_batches = 10, 3
    batched = tf.train.shuffle_batch(
        [counter_to(num_batches * batch_size), "string"],
        batch_size=batch_size,
        capacity=32,
        min_after_dequeue=16,
        seed=173205,
        num_threads=4,
    )
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert len(runner.enqueue_ops) == 4 and len(set(runner.enqueue_ops)) == 1
    all_counts = read_counts(batched, [batch_size] * num_batches)
    assert_scrambled(all_counts, range(num_batches * batch_size))


def test_the_first_shuffled_batch_waits_for_min_after_dequeue_more_examples():
    batch_size, min_after_dequeue = 5, 12
    source = tf.FIFOQueue(100, tf.int32, shapes=[()])
    batched = tf.train.shuffle_batch(
        [source.dequeue()], batch_size, capacity=20, min_after_dequeue=min_after_dequeue
    )
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    fill = source.enqueue_many([tf.range(batch_size + min_after_dequeue - 1)])
    with tf.Session() as sess:
        threads = start(sess)
        sess.run(fill)  # 16 examples: one too few
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(batched, options=tf.RunOptions(timeout_in_ms=200))
        sess.run(source.enqueue(99))  # the 17th
        got = sess.run(batched)
        assert sess.run(runner.queue.size()) == min_after_dequeue  # the source is empty now
        sess.run(source.close())  # the end of the input: the runner closes the shuffle queue
        join_all(threads)
        left = sess.run(runner.queue.dequeue_up_to(min_after_dequeue))
    assert sorted([*got, *left]) == [*range(16), 99]


def test_shuffle_batch_ops_have_tf_names_and_attributes():
    counter = counter_to(30)
    batched = tf.train.shuffle_batch(
        [counter, "string"], batch_size=10, capacity=32, min_after_dequeue=16, seed=141421
    )
    assert [t.name for t in batched] == ["shuffle_batch:0", "shuffle_batch:1"]
    assert batched[0].op.type == "QueueDequeueManyV2"
    queue_op = batched[0].op.inputs[0].op
    assert queue_op.name == "shuffle_batch/random_shuffle_queue"
    assert queue_op.type == "RandomShuffleQueueV2"
    attrs = {k: queue_op.get_attr(k) for k in ("capacity", "min_after_dequeue", "seed", "seed2")}
    assert attrs == {"capacity": 32, "min_after_dequeue": 16, "seed": 87654321, "seed2": 141421}
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert runner.name == "shuffle_batch/random_shuffle_queue"
    assert [op.name for op in runner.enqueue_ops] == ["shuffle_batch/random_shuffle_queue_enqueue"]
    assert (runner.close_op.name, runner.cancel_op.name) == (
        "shuffle_batch/random_shuffle_queue_Close",
        "shuffle_batch/random_shuffle_queue_Close_1",
    )


def test_shuffle_batch_takes_the_graph_seed_and_the_shared_name():
    tf.set_random_seed(5)
    counter = counter_to(30)
    batched = tf.train.shuffle_batch(
        [counter, "string"],
        batch_size=10,
        capacity=32,
        min_after_dequeue=10,
        shared_name="SHARED_NAME_XYZ",
        name="Q",
    )
    assert [t.name for t in batched] == ["Q:0", "Q:1"]
    queue_op = batched[0].op.inputs[0].op
    assert queue_op.name == "Q/random_shuffle_queue"
    assert queue_op.get_attr("shared_name") == "SHARED_NAME_XYZ"
    assert (queue_op.get_attr("seed"), queue_op.get_attr("min_after_dequeue")) == (5, 10)


def test_shuffle_batch_needs_more_capacity_than_min_after_dequeue():
    with pytest.raises(ValueError, match="capacity 10 must be bigger than min_after_dequeue 10."):
        tf.train.shuffle_batch([tf.constant(1)], batch_size=2, capacity=10, min_after_dequeue=10)
    with pytest.raises(ValueError, match="capacity 5 must be bigger than min_after_dequeue 10."):
        tf.train.maybe_shuffle_batch([tf.constant(1)], 2, 5, 10, True)
    assert not tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)


def test_shuffle_batch_needs_fully_defined_shapes():
    with pytest.raises(ValueError, match="All shapes must be fully defined"):
        tf.train.shuffle_batch([tf.placeholder(tf.int64, [None, 3])], 2, 10, 2)
    with pytest.raises(ValueError, match="Cannot infer Tensor's rank"):
        tf.train.shuffle_batch([tf.placeholder(tf.int64)], 2, 10, 2)


# -- the order a seed gives ----------------------------------------------------------------


def _drained_order(seed, graph_seed=None, rows=20, batch_size=4) -> list[int]:
    """The order of ``rows`` examples, all queued and the queue closed before the first dequeue."""
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        rows_once = tf.train.limit_epochs(tf.range(rows), num_epochs=1)
        batched = tf.train.shuffle_batch(
            [rows_once],
            batch_size,
            capacity=rows + 1,
            min_after_dequeue=rows // 2,
            seed=seed,
            enqueue_many=True,
        )
        with tf.Session() as sess:
            threads = start(sess)
            join_all(threads)  # the runner enqueued every row, then closed the queue
            return np.concatenate([sess.run(batched) for _ in range(rows // batch_size)]).tolist()


def test_the_same_seed_gives_the_same_order_and_another_seed_another():
    first, again, other = _drained_order(7), _drained_order(7), _drained_order(8)
    assert sorted(first) == sorted(other) == list(range(20))
    assert first == again
    assert first != other
    assert first != list(range(20))
    assert _drained_order(None, graph_seed=3) == _drained_order(None, graph_seed=3)


# -- maybe_shuffle_batch --------------------------------------------------------------------


@pytest.mark.parametrize("num_threads, enqueue_many, keep_input_vector", KEEP_INPUT_CASES)
def test_maybe_shuffle_batch_keeps_only_the_even_examples(
    num_threads, enqueue_many, keep_input_vector
):
    batch_size, num_batches = 5, 4
    to_batch, keep_input = even_examples(enqueue_many, keep_input_vector, batch_size, num_batches)
    batched = tf.train.maybe_shuffle_batch(
        to_batch, batch_size, 10, 1, keep_input, num_threads=num_threads, enqueue_many=enqueue_many
    )
    assert_only_even_then_exhausted(batched, batch_size, num_batches)


@pytest.mark.parametrize("maybe", ["maybe_shuffle_batch", "maybe_shuffle_batch_join"])
def test_maybe_shuffle_batch_checks_the_rank_of_keep_input(maybe):
    def build(keep_input, enqueue_many):
        tensors = [tf.zeros(5)]
        if maybe == "maybe_shuffle_batch_join":
            tensors = [tensors]
        getattr(tf.train, maybe)(
            tensors, 1, 10, 1, keep_input=keep_input, enqueue_many=enqueue_many
        )

    with pytest.raises(ValueError, match="`keep_input` cannot be a vector"):
        build(tf.constant([True, False]), enqueue_many=False)
    with pytest.raises(ValueError, match="must be 0 or 1 dimensions"):
        build(tf.constant([[True]]), enqueue_many=True)
    with pytest.raises(ValueError, match="must be known at graph construction"):
        build(tf.placeholder(tf.bool), enqueue_many=True)


# -- shuffle_batch_join ---------------------------------------------------------------------


class Joined:
    """What TF's join tests gather from the batches: the a's in order of arrival, the b's, mixes."""

    def __init__(self):
        self.all_a, self.seen_b, self.saw_both = [], 0, 0

    def add(self, counts, strings) -> None:
        which_a = [i for i, s in enumerate(strings) if s == b"a"]
        which_b = [i for i, s in enumerate(strings) if s == b"b"]
        assert len(which_a) + len(which_b) == len(strings)
        assert [counts[i] for i in which_b] == [99] * len(which_b)
        self.saw_both += bool(which_a and which_b)
        self.all_a.extend(counts[i] for i in which_a)
        self.seen_b += len(which_b)


def read_joined(fetch, sizes) -> Joined:
    """Runs the runners; reads one batch per size in ``sizes``, then expects the end."""
    joined = Joined()
    with tf.Session() as sess:
        threads = start(sess)
        for size in sizes:
            counts, strings = sess.run(fetch)
            assert len(counts) == len(strings) == size
            joined.add(counts, strings)
        assert_exhausted(sess, fetch, threads)
    return joined


@pytest.mark.parametrize("use_dict", [False, True])
def test_shuffle_batch_join_mixes_and_scrambles_two_inputs(use_dict):
    num_a, num_b, batch_size = 25, 35, 5
    counter, ninety_nine = two_inputs(num_a, num_b)
    kwargs = dict(batch_size=batch_size, capacity=32, min_after_dequeue=16, seed=223607)
    if use_dict:
        batched = tf.train.shuffle_batch_join(
            [{"c": counter, "S": "a"}, {"c": ninety_nine, "S": "b"}], **kwargs
        )
        fetch = [batched["c"], batched["S"]]
    else:
        fetch = tf.train.shuffle_batch_join([[counter, "a"], [ninety_nine, "b"]], **kwargs)
    assert [t.shape.as_list() for t in fetch] == [[batch_size], [batch_size]]
    assert fetch[0].op.inputs[0].op.name == "shuffle_batch_join/random_shuffle_queue"
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert [op.name for op in runner.enqueue_ops] == [
        "shuffle_batch_join/random_shuffle_queue_enqueue",
        "shuffle_batch_join/random_shuffle_queue_enqueue_1",
    ]
    joined = read_joined(fetch, [batch_size] * ((num_a + num_b) // batch_size))
    assert joined.saw_both > 1
    assert_scrambled(joined.all_a, range(num_a))
    assert joined.seen_b == num_b


def test_shuffle_batch_join_smaller_final_batch_has_what_is_left_of_both_inputs():
    extra_elements, batch_size = 2, 5
    num_a, num_b = 25 + extra_elements, 35 + extra_elements
    counter, ninety_nine = two_inputs(num_a, num_b)
    batched = tf.train.shuffle_batch_join(
        [[counter, "a"], [ninety_nine, "b"]],
        batch_size=batch_size,
        capacity=32,
        min_after_dequeue=16,
        seed=223607,
        allow_smaller_final_batch=True,
    )
    assert [t.shape.as_list() for t in batched] == [[None], [None]]
    sizes = [batch_size] * ((num_a + num_b) // batch_size) + [2 * extra_elements]
    joined = read_joined(batched, sizes)
    assert joined.saw_both > 1
    assert_scrambled(joined.all_a, range(num_a))
    assert joined.seen_b == num_b


def test_shuffle_batch_join_inputs_must_agree_and_the_shared_name_is_set():
    with pytest.raises(ValueError, match="must have the same keys"):
        tf.train.shuffle_batch_join(
            [{"c": 12, "s": 123, "S": "a"}, {"cool": -12, "s": 99, "S": "b"}],
            batch_size=8,
            capacity=32,
            min_after_dequeue=16,
            seed=223607,
        )
    counter = counter_to(30)
    batched = tf.train.shuffle_batch_join(
        [[counter, "string"]],
        batch_size=10,
        capacity=32,
        min_after_dequeue=10,
        shared_name="SHARED_NAME_XYZ",
        name="Q",
    )
    assert [t.shape.as_list() for t in batched] == [[10], [10]]
    assert batched[0].op.inputs[0].op.get_attr("shared_name") == "SHARED_NAME_XYZ"


def test_shuffle_batch_join_leaves_the_capacity_check_to_the_queue_op():
    batched = tf.train.shuffle_batch_join(
        [[tf.constant(1)]], batch_size=2, capacity=5, min_after_dequeue=10
    )
    with tf.Session() as sess:
        with pytest.raises(
            tf.errors.InvalidArgumentError, match="min_after_dequeue 10 must be < capacity 5"
        ):
            sess.run(batched)


@pytest.mark.parametrize("num_threads, enqueue_many, keep_input_vector", KEEP_INPUT_CASES)
def test_maybe_shuffle_batch_join_keeps_only_the_even_examples(
    num_threads, enqueue_many, keep_input_vector
):
    batch_size, num_batches = 5, 4
    to_batch, keep_input = even_examples(enqueue_many, keep_input_vector, batch_size, num_batches)
    batched = tf.train.maybe_shuffle_batch_join(
        [to_batch] * num_threads, batch_size, 10, 1, keep_input, enqueue_many=enqueue_many
    )
    assert_only_even_then_exhausted(batched, batch_size, num_batches)


@pytest.mark.parametrize(
    "batcher, scope",
    [
        (tf.train.shuffle_batch, "shuffle_batch"),
        (lambda x, **kw: tf.train.shuffle_batch_join([x], **kw), "shuffle_batch_join"),
    ],  # fmt: skip
)
def test_shuffle_batchers_sum_up_how_far_the_queue_is_above_min_after_dequeue(batcher, scope):
    batcher([tf.constant(7)], batch_size=2, capacity=22, min_after_dequeue=10)
    (runner,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    (summary,) = tf.get_collection(tf.GraphKeys.SUMMARIES)
    tag = f"{scope}/fraction_over_10_of_12_full"
    assert summary.op.name == tag
    with tf.Session() as sess:
        for size, expected in [(4, 0.0), (10, 0.0), (16, 6 / 12), (22, 1.0)]:
            while sess.run(runner.queue.size()) < size:
                sess.run(runner.enqueue_ops[0])
            value = tf.Summary.FromString(sess.run(summary)).value
            assert [(v.tag, v.simple_value) for v in value] == [(tag, np.float32(expected))]


def test_shuffle_batch_join_with_capacity_equal_to_min_after_dequeue_fails_while_building():
    with pytest.raises(ZeroDivisionError):
        tf.train.shuffle_batch_join(
            [[tf.constant(1)]], batch_size=2, capacity=10, min_after_dequeue=10
        )
