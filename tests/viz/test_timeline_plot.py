"""The timeline picture: lanes, one band per task, bars coloured by role, waits hatched."""

import threading

import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

import minitf as tf
from minitf.viz.graph_data import ROLE_COLORS
from minitf.viz.timeline_plot import STRAGGLER_COLOR, lanes, plot_timeline

pytestmark = pytest.mark.timeout(60)

T0 = 1_700_000_000_000_000
PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER0 = "/job:worker/replica:0/task:0/device:CPU:0"
WORKER1 = "/job:worker/replica:0/task:1/device:CPU:0"

# The role of each op type used below, as the graph_data module docstring lists them.
ROLE_BY_TYPE = {
    "AccumulatorTakeGradient": "accumulator",
    "AccumulatorApplyGradient": "accumulator",
    "ApplyGradientDescent": "update",
    "_Recv": "sendrecv",
    "MatMul": "compute",
    "QueueDequeueV2": "queue",
}


def _node(name, op, start, duration, step_id, wait=0):
    return {
        "node_name": name,
        "op": op,
        "all_start_micros": T0 + start,
        "op_start_rel_micros": 0,
        "op_end_rel_micros": duration,
        "all_end_rel_micros": duration,
        "thread_id": 1,
        "thread_name": "minitf-run",
        "output_bytes": 16,
        "asynchronous": wait > 0,
        "step_id": step_id,
        "wait_micros": wait,
    }


def _cluster_stats():
    """1 ps and 2 workers; worker 1 takes 3 ms a step, worker 0 1.3 ms (waits left out)."""
    ps = [
        _node("ps/take", "AccumulatorTakeGradient", 1000, 3000, 10, wait=2500),
        _node("ps/apply_w0", "AccumulatorApplyGradient", 2000, 200, 10),
        _node("ps/update", "ApplyGradientDescent", 4000, 500, 10),
    ]
    worker0 = [
        _node("w0/s10/recv", "_Recv", 0, 200, 10),
        _node("w0/s10/MatMul", "MatMul", 200, 1000, 10),
        _node("w0/s10/token", "QueueDequeueV2", 1200, 3400, 10, wait=3000),
        _node("w0/s11/MatMul", "MatMul", 4600, 1000, 11),
    ]
    worker1 = [
        _node("w1/s20/MatMul", "MatMul", 0, 2000, 20),
        _node("w1/s20/MatMul_1", "MatMul", 2000, 2000, 20),
        _node("w1/s21/MatMul", "MatMul", 4000, 2000, 21),
    ]
    return {
        "dev_stats": [
            {"device": WORKER0, "node_stats": worker0},
            {"device": PS, "node_stats": ps},
            {"device": WORKER1, "node_stats": worker1},
        ]
    }


def _all_nodes(stats):
    return [node for dev in stats["dev_stats"] for node in dev["node_stats"]]


def _op_bars(fig):
    return [p for p in fig.axes[0].patches if (p.get_gid() or "").startswith("op-")]


def _hatched(fig):
    return [p for p in fig.axes[0].patches if p.get_hatch()]


def test_lanes_put_intervals_that_do_not_overlap_in_lane_zero():
    # Touching ends (1 == 1) do not overlap.
    assert lanes([(0, 1), (1, 2), (3, 4)]) == [0, 0, 0]


def test_lanes_give_overlapping_intervals_distinct_lanes_and_reuse_freed_ones():
    # (0,10) takes lane 0, (2,5) lane 1, (3,4) lane 2; at 6 lane 1 is free again.
    assert lanes([(0, 10), (2, 5), (3, 4), (6, 8)]) == [0, 1, 2, 1]


def test_lanes_are_returned_in_input_order_whatever_the_order_given():
    assert lanes([(6, 8), (3, 4), (2, 5), (0, 10)]) == [1, 2, 1, 0]


def test_lanes_beyond_the_cap_stack_in_the_last_lane():
    assert lanes([(0, 10), (1, 10), (2, 10), (3, 10)], max_lanes=2) == [0, 1, 1, 1]
    assert lanes([(0, 10), (1, 10)], max_lanes=1) == [0, 0]


def test_lanes_reject_a_cap_below_one():
    with pytest.raises(ValueError, match="max_lanes"):
        lanes([(0, 1)], max_lanes=0)


def test_one_band_per_task_ps_first_then_workers_in_given_order():
    fig = plot_timeline(_cluster_stats())
    assert isinstance(fig, Figure)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"]


def test_one_bar_per_op_named_after_its_node():
    stats = _cluster_stats()
    fig = plot_timeline(stats)
    bars = _op_bars(fig)
    assert len(bars) == 10
    assert sorted(b.get_label() for b in bars) == sorted(n["node_name"] for n in _all_nodes(stats))


def test_bars_are_coloured_by_role_with_a_dark_edge():
    stats = _cluster_stats()
    fig = plot_timeline(stats)
    op_type = {n["node_name"]: n["op"] for n in _all_nodes(stats)}
    for bar in _op_bars(fig):
        expected = to_rgba(ROLE_COLORS[ROLE_BY_TYPE[op_type[bar.get_label()]]])
        assert bar.get_facecolor() == pytest.approx(expected)
        assert sum(bar.get_edgecolor()[:3]) < 1.5  # dark, so white compute bars show


def test_bars_sit_at_their_start_in_ms_from_the_first_op():
    fig = plot_timeline(_cluster_stats())
    take = next(b for b in _op_bars(fig) if b.get_label() == "ps/take")
    assert take.get_x() == pytest.approx(1.0)  # 1000 µs after the earliest start
    assert take.get_width() == pytest.approx(3.0)


def test_exactly_the_waited_ops_have_a_hatched_part_at_their_end():
    fig = plot_timeline(_cluster_stats())
    hatched = {p.get_label(): p for p in _hatched(fig)}
    assert set(hatched) == {"ps/take", "w0/s10/token"}
    # The take runs 1.0..4.0 ms and waited its last 2.5 ms.
    assert hatched["ps/take"].get_x() == pytest.approx(1.5)
    assert hatched["ps/take"].get_width() == pytest.approx(2.5)


def test_overlapping_ops_of_a_task_are_drawn_in_different_lanes():
    fig = plot_timeline(_cluster_stats())
    y = {b.get_label(): b.get_y() for b in _op_bars(fig)}
    assert y["ps/apply_w0"] != y["ps/take"]  # 2.0..2.2 ms lies inside the take
    assert y["ps/update"] == y["ps/take"]  # starts when the take ends
    assert y["w1/s20/MatMul"] == y["w1/s20/MatMul_1"] == y["w1/s21/MatMul"]


def test_the_cap_on_rows_keeps_a_band_to_that_many_lanes():
    overlapping = [_node(f"op{i}", "MatMul", i * 10, 1000, 1) for i in range(6)]
    fig = plot_timeline({"dev_stats": [{"device": WORKER0, "node_stats": overlapping}]})
    ys = {b.get_y() for b in _op_bars(fig)}
    assert len(ys) == 4
    fig = plot_timeline(
        {"dev_stats": [{"device": WORKER0, "node_stats": overlapping}]}, max_rows_per_task=2
    )
    assert len({b.get_y() for b in _op_bars(fig)}) == 2


def test_each_worker_band_says_its_steps_and_busy_time():
    fig = plot_timeline(_cluster_stats())
    notes = {t.get_text(): t for t in fig.axes[0].texts if "busy" in t.get_text()}
    # worker 0: 0.2 + 1.0 + (3.4 - 3.0 waited) + 1.0 ms; worker 1: 3 x 2.0 ms. No note on the ps.
    assert set(notes) == {
        "2 steps, 2.6 ms busy, 1.3 ms/step",
        "2 steps, 6.0 ms busy, 3.0 ms/step",
    }
    # Two steps each are too few to call worker 1 a straggler (see the straggler tests).
    assert notes["2 steps, 6.0 ms busy, 3.0 ms/step"].get_fontweight() == "normal"
    assert notes["2 steps, 2.6 ms busy, 1.3 ms/step"].get_fontweight() == "normal"


def test_the_longest_ops_carry_their_name_and_short_ones_do_not():
    fig = plot_timeline(_cluster_stats())
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert "w1/s20/MatMul" in texts  # 2 ms of a 6 ms span
    assert "w0/s10/recv" not in texts and "recv" not in texts  # 0.2 ms, under 5% of the span


def test_the_legend_lists_the_roles_present_and_waiting():
    fig = plot_timeline(_cluster_stats())
    (legend,) = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    assert sorted(names) == sorted(
        set(ROLE_BY_TYPE.values()) | {"waiting", "a worker's step begins"}
    )


def test_the_figure_is_12_inches_wide_and_grows_with_the_tasks():
    one_task = {"dev_stats": [_cluster_stats()["dev_stats"][2]]}
    small, large = plot_timeline(one_task), plot_timeline(_cluster_stats())
    assert small.get_size_inches()[0] == large.get_size_inches()[0] == 12
    assert large.get_size_inches()[1] > small.get_size_inches()[1]


def test_saving_writes_svg_and_png_and_creates_the_directory(tmp_path):
    base = tmp_path / "pictures" / "step.timeline"
    fig = plot_timeline(_cluster_stats(), path=base, title="a sync step")
    assert fig.axes[0].get_title(loc="left") == "a sync step"
    svg = (tmp_path / "pictures" / "step.timeline.svg").read_text()
    assert "<svg" in svg
    png = (tmp_path / "pictures" / "step.timeline.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 12 * 120  # IHDR width: 12 in at 120 dpi


def test_only_the_requested_formats_are_written(tmp_path):
    plot_timeline(_cluster_stats(), path=tmp_path / "t", formats=("png",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.png"]


@pytest.mark.parametrize(
    "stats", [{}, {"dev_stats": []}, {"dev_stats": [{"device": PS, "node_stats": []}]}]
)
def test_step_stats_without_ops_is_a_clear_error(stats):
    with pytest.raises(ValueError, match=r"no ops.*FULL_TRACE"):
        plot_timeline(stats)


def test_plotting_works_from_another_thread():
    result = {}
    thread = threading.Thread(target=lambda: result.update(fig=plot_timeline(_cluster_stats())))
    thread.start()
    thread.join(30)
    assert len(_op_bars(result["fig"])) == 10


def test_a_traced_local_step_plots_one_band_with_a_bar_per_op(tmp_path):
    x = tf.placeholder(tf.float32, [3])
    y = tf.reduce_sum(tf.square(x) + 1.0)
    md = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session() as sess:
        sess.run(y, {x: [1.0, 2.0, 3.0]}, options=options, run_metadata=md)
    fig = plot_timeline(md.step_stats, path=tmp_path / "local")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["/job:localhost/task:0"]
    (dev,) = md.step_stats["dev_stats"]
    assert len(_op_bars(fig)) == len(dev["node_stats"])
    assert _hatched(fig) == []
    assert (tmp_path / "local.png").stat().st_size > 0


def test_send_and_recv_bars_are_labelled_by_the_tensor_they_carry():
    from minitf.viz.timeline_plot import _fitting_name

    recv = "_recv/sync_token_q_Dequeue/0"
    send = "_send/hidden/weights/read/0/to_job_worker_replica_0_task_1"
    # A bar wide enough for 27 characters but not for the whole name.
    assert _fitting_name(recv, width=29.0, ms_per_char=1.0) == "recv sync_token_q_Dequeue"
    # No form leaves the variable out: "send read" would not say which variable.
    assert _fitting_name(send, width=16.0, ms_per_char=1.0) is None
    assert _fitting_name(send, width=26.0, ms_per_char=1.0) == "send hidden/weights/read"
    assert _fitting_name("gradients/MatMul", width=3.0, ms_per_char=1.0) is None


def test_one_fast_worker_does_not_make_the_typical_ones_stragglers():
    # Busy ms per step: 0.4, 1.0, 1.0 and 1.2, over ten steps each. Against the
    # fastest, 1.2 would be 3x; against the median of the others (1.0) it is
    # 1.2x: surely slower, but not by much. Nobody is marked slow.
    per_step = [0.4, 1.0, 1.0, 1.2]
    stats = {"dev_stats": [
        {"device": f"/job:worker/replica:0/task:{i}/device:CPU:0",
         "node_stats": [_node(f"w{i}/s{s}", "MatMul", s * 2000, int(ms * 1000), s)
                        for s in range(10)]}
        for i, ms in enumerate(per_step)
    ]}  # fmt: skip
    fig = plot_timeline(stats)
    notes = [t for t in fig.axes[0].texts if "busy" in t.get_text()]
    assert len(notes) == 4 and all(t.get_fontweight() == "normal" for t in notes)
    # A worker at 2.5 ms a step, 2.5x the others' median, is.
    stats["dev_stats"][3]["node_stats"] = [
        _node(f"w3/s{s}", "MatMul", s * 3000, 2500, s) for s in range(10)
    ]
    slow = [t for t in plot_timeline(stats).axes[0].texts if t.get_fontweight() == "bold"]
    assert [t.get_text() for t in slow] == ["10 steps, 25 ms busy, 2.5 ms/step"]


def _with_a_dropped_gradient_and_a_straggler():
    """Worker 0 as in `_cluster_stats`; worker 1 waits 4 ms (an injected delay), then
    computes 1 ms, and its gradient arrives stale on the ps."""
    stats = _cluster_stats()
    stale = _node("ps/apply_w1", "AccumulatorApplyGradient", 5000, 200, 21)
    stale["accumulated"] = {"kind": "accumulator", "stale": True, "local_step": 0}
    stats["dev_stats"][0]["node_stats"].append(stale)
    delay = _node("straggler_delay", "StragglerDelay", 0, 4000, 21, wait=4000)
    work = _node("w1/s21/MatMul", "MatMul", 4000, 1000, 21)
    stats["dev_stats"][2]["node_stats"] = [delay, work]
    return stats


def test_a_dropped_gradient_is_outlined_in_red_and_named_in_the_legend():
    fig = plot_timeline(_with_a_dropped_gradient_and_a_straggler())
    bars = {b.get_label(): b for b in _op_bars(fig)}
    assert bars["ps/apply_w1"].get_edgecolor()[:3] == pytest.approx(to_rgba("#c1121f")[:3])
    assert sum(bars["ps/apply_w0"].get_edgecolor()[:3]) < 1.5  # the kept one stays dark
    (legend,) = fig.legends
    assert "gradient dropped as stale" in [t.get_text() for t in legend.get_texts()]


def test_a_straggler_delay_is_a_solid_bar_counted_as_busy_time():
    fig = plot_timeline(_with_a_dropped_gradient_and_a_straggler())
    bars = {b.get_label(): b for b in _op_bars(fig)}
    assert bars["straggler_delay"].get_facecolor() == pytest.approx(to_rgba(STRAGGLER_COLOR))
    assert "straggler_delay" not in [p.get_label() for p in _hatched(fig)]
    notes = {t.get_text(): t for t in fig.axes[0].texts if "busy" in t.get_text()}
    # worker 1: the 4 ms delay and 1 ms of compute, one step.
    assert "1 step, 5.0 ms busy, 5.0 ms/step" in notes


def _minor_labels(fig):
    return [t.get_text() for t in fig.axes[0].get_yticklabels(minor=True)]


def test_each_lane_is_named_after_whose_steps_it_holds():
    ps = [
        _node("ps/apply_w0", "AccumulatorApplyGradient", 0, 500, 10),
        _node("ps/apply_w1", "AccumulatorApplyGradient", 100, 500, 20),
        _node("ps/take", "AccumulatorTakeGradient", 700, 500, 30),  # a step on the ps only
    ]
    stats = {"dev_stats": [
        {"device": PS, "node_stats": ps},
        {"device": WORKER0, "node_stats": [_node("w0/MatMul", "MatMul", 0, 300, 10)]},
        {"device": WORKER1, "node_stats": [_node("w1/MatMul", "MatMul", 100, 300, 20)]},
    ]}  # fmt: skip
    fig = plot_timeline(stats)
    assert _minor_labels(fig) == [
        "worker 0's steps", "worker 1's steps", "ps-only steps", "own steps", "own steps"
    ]  # fmt: skip
    # Each client's ops in its own lane, in that order.
    y = {b.get_label(): b.get_y() for b in _op_bars(fig)}
    assert y["ps/apply_w0"] < y["ps/apply_w1"] < y["ps/take"]


def test_the_dotted_lines_where_steps_begin_are_in_the_legend():
    fig = plot_timeline(_cluster_stats())
    (legend,) = fig.legends
    (line,) = [h for h in legend.legend_handles if h.get_label() == "a worker's step begins"]
    from matplotlib.collections import LineCollection

    separators = [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]
    assert line.get_linestyle() == ":"
    for lines in separators:
        (offset, dashes), *_ = lines.get_linestyle()
        assert dashes is not None and len(dashes) == 2 and dashes[0] < dashes[1]  # dots
    # Worker 0 begins step 11 at 4.6 ms, worker 1 step 21 at 4.0 ms.
    xs = sorted(seg[0][0] for lines in separators for seg in lines.get_segments())
    assert xs == pytest.approx([4.0, 4.6])


def test_sends_and_receives_are_named_by_the_tensor_and_task_control_signals_by_op_and_task():
    ps1 = "/job:ps/replica:0/task:1/device:CPU:0"
    recv = _node("_recv/hidden/weights/read/0", "_Recv", 0, 9000, 10)
    recv["transfer"] = {"direction": "recv", "key": "k", "peer": PS, "bytes": 512}
    control = _node("_recv/Adam/update/NoOp_1/ctrl_job_worker_replica_0_task_0", "_Recv",
                    0, 9000, 10)  # fmt: skip
    control["transfer"] = {"direction": "recv", "key": "k", "peer": ps1, "bytes": 0}
    stats = {"dev_stats": [{"device": WORKER0, "node_stats": [recv, control]}]}
    texts = {t.get_text() for t in plot_timeline(stats).axes[0].texts}
    assert "recv hidden/weights/read:0 from /job:ps/task:0" in texts
    assert "control signal from Adam/update/NoOp_1 on /job:ps/task:1" in texts
    assert not any(t.startswith(("_recv/", "_send/")) for t in texts)  # no raw keys


def _permutation_p(sample, others):
    """The exact one-sided p-value: the share of all splits of the pooled values whose
    first part has a rank sum (so a U) at least as large as ``sample``'s."""
    import itertools

    import numpy as np

    pooled = np.array(list(sample) + list(others))
    assert len(set(pooled)) == len(pooled)  # no ties: ranks are 1..n
    ranks = pooled.argsort().argsort() + 1
    splits = np.array(list(itertools.combinations(range(len(pooled)), len(sample))))
    sums = ranks[splits].sum(axis=1)
    return float(np.mean(sums >= ranks[: len(sample)].sum()))


@pytest.mark.parametrize("shift", [0.0, 0.3, 0.8])
def test_mann_whitney_p_agrees_with_the_exact_permutation_test(shift):
    import numpy as np

    from minitf.viz.timeline_plot import mann_whitney_p

    rng = np.random.default_rng(3)
    sample = list(rng.normal(1 + shift, 0.3, size=8))
    others = list(rng.normal(1, 0.3, size=9))
    exact = _permutation_p(sample, others)
    assert mann_whitney_p(sample, others) == pytest.approx(exact, abs=0.02)


def _workers(per_worker_steps):
    """Step stats of workers, one busy op per step of the given ms."""
    return {"dev_stats": [
        {"device": f"/job:worker/replica:0/task:{i}/device:CPU:0",
         "node_stats": [_node(f"w{i}/s{s}", "MatMul", s * 100_000, int(ms * 1000), 100 * i + s)
                        for s, ms in enumerate(steps)]}
        for i, steps in enumerate(per_worker_steps)
    ]}  # fmt: skip


def test_two_identical_workers_over_six_steps_are_not_called_stragglers():
    import numpy as np

    from minitf.viz.timeline_plot import straggler_test

    rng = np.random.default_rng(0)
    for _ in range(20):
        # The same distribution; over six steps one is slower by 1.5x now and then.
        steps = rng.lognormal(0.0, 0.4, size=(2, 6)).tolist()
        verdict = straggler_test({"w0": steps[0], "w1": steps[1]})
        assert verdict.worker is None and "too few" in verdict.reason
    fig = plot_timeline(_workers([[1.0] * 6, [2.0] * 6]))
    assert not [t for t in fig.axes[0].texts if t.get_fontweight() == "bold"]
    assert "Not tested" in fig.get_supxlabel()  # the picture says why


def test_identical_workers_over_many_steps_are_not_called_stragglers():
    import numpy as np

    from minitf.viz.timeline_plot import straggler_test

    rng = np.random.default_rng(1)
    flagged = 0
    for _ in range(50):
        steps = rng.lognormal(0.0, 0.4, size=(3, 30)).tolist()
        verdict = straggler_test({f"w{i}": s for i, s in enumerate(steps)})
        flagged += verdict.worker is not None
        assert verdict.p_value is not None
    assert flagged == 0


def test_a_worker_surely_and_much_slower_over_enough_steps_is_a_straggler():
    import numpy as np

    from minitf.viz.timeline_plot import MIN_STEPS, straggler_test

    rng = np.random.default_rng(2)
    fast = rng.lognormal(0.0, 0.2, size=(2, MIN_STEPS)).tolist()
    slow = rng.lognormal(np.log(3.0), 0.2, size=MIN_STEPS).tolist()
    verdict = straggler_test({"w0": fast[0], "w1": fast[1], "w2": slow})
    assert verdict.worker == "w2" and verdict.p_value < 0.01 and verdict.ratio > 2
    fig = plot_timeline(_workers([fast[0], fast[1], slow]))
    (bold,) = [t for t in fig.axes[0].texts if t.get_fontweight() == "bold"]
    assert bold.get_text().startswith(f"{MIN_STEPS} steps")
    assert "/job:worker/task:2 is a straggler" in fig.get_supxlabel()
    assert "Mann-Whitney" in fig.get_supxlabel()  # it says how it was decided


def test_a_slide_timeline_is_1920_by_1080_with_text_a_projector_shows(tmp_path):
    from matplotlib.text import Text

    fig = plot_timeline(_cluster_stats(), path=tmp_path / "slide", formats=("png",), slide=True)
    png = (tmp_path / "slide.png").read_bytes()
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (1920, 1080)
    texts = [t for t in fig.findobj(Text) if t.get_text() and t.get_visible()]
    # 10 pt at 120 dpi is 17 px.
    assert texts and min(t.get_fontsize() for t in texts) >= 10
