"""A traced synchronous step: every worker's apply_grad lands before the chief's take_grad ends.

Two between-graph replicas of a linear model train in sync against
in-process ps and worker servers (the fixtures of SyncReplicasOptimizer's tests).
A `Tracer` on the chief's session records one global step on every task; the
Chrome trace built from it must show, for each accumulator, both workers'
``apply_grad`` ending before the chief's ``take_grad`` does — the take waits
for them — and the workers' token dequeues ending after the update.
"""

import json
import threading

import pytest

from minitf.viz import Tracer
from minitf.viz.timeline import Timeline
from tests.train.test_sync_replicas_optimizer import (  # noqa: F401 - the fixtures
    batches,
    join_all,
    replicas,
    run_in_threads,
    servers,
)

pytestmark = pytest.mark.timeout(60)

APPLY, TAKE = "ResourceAccumulatorApplyGradient", "ResourceAccumulatorTakeGradient"


def _ops(trace: dict, op_type: str) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == op_type]


def _end(event: dict) -> int:
    return event["ts"] + event["dur"]


def _traced_round(replicas):  # noqa: F811 - the fixture
    chief, worker = replicas()
    # Round 1 exits on the initial tokens; round 2's gradients are stale (TF's
    # test2Workers), so round 3 is the first whose two gradients make an update.
    for k in range(2):
        chief.step(batches(10 * k))
        worker.step(batches(10 * k + 1))
        if k == 0:
            chief.sess.run(chief.sync_op)
    with Tracer(chief.sess) as tracer:
        update = threading.Thread(target=chief.sess.run, args=(chief.sync_op,))
        update.start()
        threads, tokens, errors = run_in_threads(
            (chief.step, batches(20)), (worker.step, batches(21))
        )
        update.join(30)
        join_all(threads, errors)
    assert not update.is_alive() and tokens == [2, 2]
    return tracer.step_stats


def test_each_workers_apply_grad_ends_before_the_chiefs_take_grad_completes(replicas):  # noqa: F811
    trace = json.loads(Timeline(_traced_round(replicas)).generate_chrome_trace_format())
    takes = _ops(trace, TAKE)
    applies = [a for a in _ops(trace, APPLY) if not a["args"]["accumulated"]["stale"]]
    assert len(takes) == 2  # one per variable: w's and b's accumulators
    for take in takes:
        accumulator = take["args"]["waited_on"]["name"]
        mine = [a for a in applies if a["args"]["accumulated"]["name"] == accumulator]
        assert len(mine) == 2  # one gradient from each worker
        assert {a["args"]["step_id"] for a in mine} != {take["args"]["step_id"]}
        for apply in mine:
            assert _end(apply) <= _end(take)
            assert apply["pid"] == take["pid"]  # on the accumulator's ps task
        assert take["args"]["wait_micros"] > 0  # it waited for them
        assert take["args"]["waited_on"]["count"] < 2  # too few gradients when it began


def test_the_workers_token_dequeues_end_after_the_update(replicas):  # noqa: F811
    trace = json.loads(Timeline(_traced_round(replicas)).generate_chrome_trace_format())
    updates = _ops(trace, "ApplyGradientDescent")
    dequeues = [
        e for e in _ops(trace, "QueueDequeueV2") if e["args"]["node_name"].startswith("sync_token")
    ]
    assert len(updates) == 2 and len(dequeues) == 2
    for dequeue in dequeues:
        assert _end(dequeue) >= min(_end(u) for u in updates)
    # Each dequeue is joined by a flow arrow to the enqueue of the new tokens.
    flows = {e["id"] for e in trace["traceEvents"] if e["ph"] == "s" and e["cat"] == "queue"}
    assert len(flows) >= 1
