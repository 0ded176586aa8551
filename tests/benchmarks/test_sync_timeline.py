"""benchmarks/sync_timeline.py: a worker's step split into the parts between its messages."""

import pytest

from tests.benchmarks.conftest import load_script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def timeline():
    yield from load_script("sync_timeline")


def _send(kind, ident, peer, start, end):
    return [("send", kind, ident, peer, start), ("sent", kind, ident, peer, end)]


def test_a_step_splits_into_the_times_between_its_messages(timeline):
    # Two steps of a worker (ids 101, 102; the calls of its channel 1, 2),
    # times in ns, as JSON gives them back (lists, not tuples).
    worker = [
        *_send("run", [1, 101], "ps", 0, 5),
        ("recv", "tensors", 101, "ps", 30),
        *_send("tensors", 101, "ps", 100, 110),
        ("recv", "ok", 1, "ps", 200),
        *_send("run", [2, 102], "ps", 250, 256),
        ("recv", "tensors", 102, "ps", 290),
        *_send("tensors", 102, "ps", 350, 362),
        ("recv", "ok", 2, "ps", 450),
    ]
    ps = [
        ("recv", "run", [1, 101], "w1", 10),
        *_send("tensors", 101, "w1", 20, 28),
        ("recv", "tensors", 101, "w1", 120),
        *_send("ok", 1, "w1", 180, 190),
        ("recv", "run", [2, 102], "w1", 265),
        *_send("tensors", 102, "w1", 275, 283),
        ("recv", "tensors", 102, "w1", 370),
        *_send("ok", 2, "w1", 430, 440),
        *_send("ok", 2, "w0", 445, 448),  # the chief's call 2, on its own connection
    ]
    # Only step 102 has a reply before it (step 101's, received at 200):
    # 200 → request 250 → ps reads it 265 → variables 275 → read 290 →
    # gradients 350 → read 370 → reply 430 → read 450.
    parts = [50, 15, 10, 15, 60, 20, 60, 20]
    sends = [256 - 250, 283 - 275, 362 - 350, 440 - 430]
    assert timeline.split_steps(worker, ps) == [parts + sends]
    assert sum(parts) == 450 - 200
    assert len(timeline.PARTS) == len(parts) and len(timeline.SENDS) == len(sends)


def test_a_step_with_a_message_missing_is_left_out(timeline):
    worker = [
        ("recv", "ok", 1, "ps", 200),
        *_send("run", [1, 101], "ps", 0, 5),
        *_send("run", [2, 102], "ps", 250, 256),
        ("recv", "ok", 2, "ps", 450),
    ]
    ps = [("recv", "run", [1, 101], "w1", 10), ("recv", "run", [2, 102], "w1", 265)]
    assert timeline.split_steps(worker, ps) == []


def test_requests_that_reach_the_ps_on_two_connections_are_refused(timeline):
    worker = [*_send("run", [1, 101], "ps", 0, 5), *_send("run", [2, 102], "ps", 50, 55)]
    ps = [("recv", "run", [1, 101], "a", 10), ("recv", "run", [2, 102], "b", 60)]
    with pytest.raises(RuntimeError, match="2 connections"):
        timeline.split_steps(worker, ps)


def test_a_message_is_identified_by_its_step_or_call(timeline):
    assert timeline._identity(("run", 7, "handle", 123, [], 0, False, True)) == ("run", [7, 123])
    assert timeline._identity(("tensors", 123, [])) == ("tensors", 123)
    assert timeline._identity(("ok", 7, [])) == ("ok", 7)


def test_the_picture_is_a_png_of_the_size_asked_for(timeline, tmp_path):
    parts = dict.fromkeys(timeline.PARTS, 100.0)
    path = tmp_path / "step.png"
    timeline.draw(parts, 400.0, str(path))
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    inches, dpi = timeline.FIGURE_INCHES, timeline.DPI
    assert (width, height) == (inches[0] * dpi, inches[1] * dpi)


def test_bad_options_are_refused_with_the_reason_before_anything_runs(timeline, capsys, tmp_path):
    cases = [
        (["--steps", "10"], "--steps must be at least 50"),
        (["--warmup", "-1"], "--warmup must be 0 or more"),
        (["--timeout", "0"], "--timeout must be a positive number of seconds"),
        (["--picture", str(tmp_path / "step.svg")], "name it *.png"),
        (["--picture", str(tmp_path / "missing" / "step.png")], "no folder"),
    ]
    for argv, reason in cases:
        with pytest.raises(SystemExit):
            timeline.parse_args(argv)
        assert reason in capsys.readouterr().err
    args = timeline.parse_args(["--steps", "50", "--picture", str(tmp_path / "step.png")])
    assert (args.steps, args.warmup, args.timeout) == (50, 20, 300.0)
