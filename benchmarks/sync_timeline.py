"""Where a synchronous global step's time goes: the messages of one worker's step, timed.

Runs the headline cluster of ``benchmarks/sync_training.py`` (1 ps + 2
workers on 127.0.0.1, ``SyncReplicasOptimizer`` with R = N = 2) on minitf,
with every task noting when each message starts to be sent (``Wire.send``)
and when it has been read, from ``time.monotonic_ns``, which on Linux is one
clock for every process of the machine. A message is matched to its step by
what it carries (the step id of a run request and of tensors, the call id of
a reply), so each of worker 1's steps (worker 0 is the chief, whose
connection also carries the queue runner's runs) splits exactly into eight
consecutive parts:

1. ``worker: reply -> next request``: from the reply of one step to the
   request of the next, in the worker: the rest of its own part of the
   step, the return to the script, the script's loop, the next
   ``Session.run`` up to its request to the ps;
2. ``request: sent and read``: from the start of its send until the ps
   has read it;
3. ``ps: request -> variables``: the ps starts its part of the step, until
   it starts to send the variables' values;
4. ``variables: sent and read``: until the worker has read them;
5. ``worker: variables -> gradients``: the forward and backward pass (the
   numpy step of the baseline, less its update), until the gradients start
   to be sent;
6. ``gradients: sent and read``: until the ps has read them;
7. ``ps: gradients -> reply``: the ps accumulates them, waits for the other
   worker's, the chief's update and tokens release the step, until the
   reply starts to be sent;
8. ``reply: sent and read``: until the worker has read it.

A message's part includes its sending (pickling, the copy into shared
memory, the system call) and the time the receiving task takes to get to
it: a reader thread waiting for the interpreter lock, or for a core.

The JSON line's fields:

* ``parts_us``: each part's mean (µs) over the window's steps (the middle
  80 % of worker 1's steps), by the names above; they add up to
  ``worker1_step_us``, the mean step, and ``worker1_step_median_us`` is
  the median one. ``worker1_steps`` is how many steps were averaged;
* ``global_steps_per_s``: the chief's global steps per second over the
  ``--steps`` window (a worker's step is about one global step: any
  worker's gradient counts towards an update, so a worker may now and then
  make two steps in one);
* ``send_us``: for each of the step's four messages (``request``,
  ``variables``, ``gradients``, ``reply``), how long the sender's
  ``Wire.send`` took. That may be longer than the message's whole part:
  the receiver may have read it while the sender, back from its system
  call, still waits for its own interpreter lock, which another of its
  threads took meanwhile;
* ``messages_us``: the four messages' parts together, and
  ``worker_pass_us``: the worker's part between the variables and the
  gradients (its forward and backward pass), both from ``parts_us``;
* ``numpy_step_us``: the baseline measured in the same run, the worker's
  step written by hand in numpy (``sync_training.numpy_step_ms``: forward,
  backward and update).

Noting the times costs about a microsecond per message.

Run::

    .venv/bin/python benchmarks/sync_timeline.py
    .venv/bin/python benchmarks/sync_timeline.py --picture step.png  # and draw it
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ENV = "MINITF_BENCH_WIRE_LOG"
"""A directory: a task of ``sync_training_task.py`` started with it notes its messages there."""

PARTS = (
    "worker: reply -> next request",
    "request: sent and read",
    "ps: request -> variables",
    "variables: sent and read",
    "worker: variables -> gradients",
    "gradients: sent and read",
    "ps: gradients -> reply",
    "reply: sent and read",
)


MESSAGE_PARTS = tuple(name for name in PARTS if name.endswith("sent and read"))
"""The parts that are a message's: from the start of its send until it has been read."""

SENDS = ("request", "variables", "gradients", "reply")
"""The messages of a worker's step, for the time their ``Wire.send`` took."""


def record_wire(path: str):
    """Notes every message this process sends and receives; returns a function that saves them.

    Called by ``sync_training_task.py`` when `ENV` is set. The notes are saved
    as JSON to ``path`` by the returned function, or on SIGTERM (a ps task
    serves until it is stopped).

    Args:
        path: The JSON file.

    Returns:
        A function that writes the notes.
    """
    from minitf.runtime.distributed import wire

    notes: list[tuple] = []
    clock = time.monotonic_ns
    send, receive = wire.Wire.send, wire.Wire._recv

    def timed_send(self, message):
        start = clock()
        send(self, message)
        notes.append(("send", *_identity(message), self.peer, start))
        notes.append(("sent", *_identity(message), self.peer, clock()))

    def timed_receive(self):
        message = receive(self)
        notes.append(("recv", *_identity(message), self.peer, clock()))
        return message

    wire.Wire.send, wire.Wire._recv = timed_send, timed_receive

    def save() -> None:
        with open(path, "w") as f:
            json.dump(notes, f)

    def stop(signum, frame) -> None:
        save()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    return save


def _identity(message) -> tuple:
    """``(kind, id)``: a run's step id, a tensor message's step id, a reply's call id."""
    kind = message[0]
    if kind == "run":
        return kind, [message[1], message[3]]  # call, step
    return kind, message[1]


def _times(notes: list, direction: str, kind: str, peer: str | None = None) -> dict:
    """``{id: time}`` of the notes of one direction and kind (a run's id: its step).

    Args:
        notes: A task's notes: ``(direction, kind, id, peer, ns)``.
        direction: ``"send"`` or ``"recv"``.
        kind: The messages' kind.
        peer: Only the messages of this connection, if given.
    """
    found = {}
    for d, k, ident, p, ns in notes:
        if d == direction and k == kind and (peer is None or p == peer):
            found[ident[1] if k == "run" else ident] = ns
    return found


def split_steps(worker: list, ps: list) -> list[list[int]]:
    """The eight parts (ns) of each of a non-chief worker's steps, from the two tasks' notes.

    A part ends when the next one's message starts to be sent (the cost of
    sending a message is part of the message's part), and the parts of a
    step add up to the time from one reply to the next.

    Args:
        worker: The worker's notes: ``(direction, kind, id, peer, ns)``.
        ps: The ps's notes, the same way.

    Returns:
        Per step whose messages were all noted (the first one excepted: it
        has no previous reply), its parts in the order of `PARTS`, then how
        long each of its four messages took to send (`SENDS`), in the
        sender's ``Wire.send``.
    """
    requests = _times(worker, "send", "run")
    step_of = {ident[0]: ident[1] for d, k, ident, _, _ in worker if d == "send" and k == "run"}

    def by_step(by_call: dict) -> dict:
        """Times keyed by this worker's call ids, keyed by its steps instead."""
        return {step_of[call]: ns for call, ns in by_call.items() if call in step_of}

    replies_received = by_step(_times(worker, "recv", "ok"))
    # The ps's connection from this worker: where its requests arrived (call
    # ids are counted per connection, so only its replies on it are this worker's).
    peers = {p for d, k, ident, p, _ in ps if d == "recv" and k == "run" and ident[1] in requests}
    if len(peers) != 1:
        raise RuntimeError(f"the worker's requests reached the ps on {len(peers)} connections")
    (peer,) = peers
    replies_sent = by_step(_times(ps, "send", "ok", peer))
    ps_requests = _times(ps, "recv", "run", peer)
    ps_vars = _times(ps, "send", "tensors")
    worker_vars = _times(worker, "recv", "tensors")
    worker_grads = _times(worker, "send", "tensors")
    ps_grads = _times(ps, "recv", "tensors")

    order = sorted(requests, key=requests.get)
    ends = {
        "request": _times(worker, "sent", "run"),
        "variables": _times(ps, "sent", "tensors"),
        "gradients": _times(worker, "sent", "tensors"),
        "reply": by_step(_times(ps, "sent", "ok", peer)),
    }
    starts = {
        "request": requests,
        "variables": ps_vars,
        "gradients": worker_grads,
        "reply": replies_sent,
    }
    parts = []
    for before, step in zip(order, order[1:]):
        try:
            times = [
                replies_received[before],
                requests[step],
                ps_requests[step],
                ps_vars[step],
                worker_vars[step],
                worker_grads[step],
                ps_grads[step],
                replies_sent[step],
                replies_received[step],
            ]
        except KeyError:
            continue  # a step at either end of the notes
        try:
            sending = [ends[m][step] - starts[m][step] for m in ends]
        except KeyError:
            continue
        parts.append([later - earlier for earlier, later in zip(times, times[1:])] + sending)
    return parts


def _sync_training():
    """``benchmarks/sync_training.py``, whose cluster and baseline this benchmark uses.

    Imported when needed: the task processes import this module for
    `record_wire` and need none of it.
    """
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import sync_training

    return sync_training


def run(steps: int, warmup: int, timeout: float) -> dict:
    """Runs the cluster once with every task noting its messages; returns the figures.

    Args:
        steps: Global steps in the measured window.
        warmup: Global steps before it.
        timeout: Seconds the run may take.

    Returns:
        The run's figures (see the module's docstring).
    """
    sync_training = _sync_training()

    with tempfile.TemporaryDirectory(prefix="sync_timeline_") as notes_dir:
        os.environ[ENV] = notes_dir
        try:
            with sync_training.Cluster(
                "minitf", sys.executable, "sync", 2, warmup, steps
            ) as cluster:
                result = cluster.measure(timeout)
                ps = cluster.procs[("ps", 0)]
                ps.send_signal(signal.SIGTERM)  # it saves its notes and exits
                try:
                    ps.wait(30)
                except subprocess.TimeoutExpired:
                    raise cluster.failure("the ps did not save its notes") from None
        finally:
            del os.environ[ENV]
        notes = {}
        for task in ("ps0", "worker1"):
            with open(os.path.join(notes_dir, f"{task}.json")) as f:
                notes[task] = json.load(f)
    parts = split_steps(notes["worker1"], notes["ps0"])
    # The window's steps: leave out a tenth at each end (start-up, the last steps).
    cut = len(parts) // 10
    window = parts[cut : len(parts) - cut]
    if not window:
        raise RuntimeError("no step of worker 1 had all its messages noted")
    totals = [sum(p[: len(PARTS)]) for p in window]
    means = {name: statistics.fmean(p[i] for p in window) / 1e3 for i, name in enumerate(PARTS)}
    sends = {
        name: statistics.fmean(p[len(PARTS) + i] for p in window) / 1e3
        for i, name in enumerate(SENDS)
    }
    return {
        "global_steps_per_s": result["steps_per_s"],
        "worker1_steps": len(window),
        "worker1_step_us": statistics.fmean(totals) / 1e3,
        "worker1_step_median_us": statistics.median(totals) / 1e3,
        "parts_us": means,
        "send_us": sends,
    }


_LABELS = (
    "worker",
    "request",
    "ps",
    "variables",
    "worker: forward\nand backward",
    "gradients",
    "ps: other worker,\nupdate, tokens",
    "reply",
)
"""Short names of `PARTS`, for the picture."""

FIGURE_INCHES = (10, 4)
DPI = 150
"""The picture's size: its text stays readable where a page or a projector shrinks it."""


def draw(parts_us: dict[str, float], numpy_us: float, path: str) -> None:
    """Draws the step as one bar of its parts, the numpy step beside it, to a PNG.

    Args:
        parts_us: Each part's mean, by the names of `PARTS`.
        numpy_us: The numpy step of the same run.
        path: The PNG file.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"worker": "#4c72b0", "ps": "#dd8452", "message": "#b0b0b0"}
    fig, ax = plt.subplots(figsize=FIGURE_INCHES, dpi=DPI)
    total, left = sum(parts_us.values()), 0.0
    for (name, us), label in zip(parts_us.items(), _LABELS):
        kind = name.split(":")[0]
        colour = colours.get(kind, colours["message"])
        ax.barh(1, us, left=left, color=colour, edgecolor="white", height=0.6)
        if us > 0.065 * total:
            text = f"{label}\n{us:.0f} µs"
        elif us > 0.03 * total:
            text = f"{us:.0f}"
        else:
            text = ""
        ax.text(left + us / 2, 1, text, ha="center", va="center", fontsize=10)
        left += us
    ax.barh(0, numpy_us, color="#55a868", height=0.6)
    ax.text(numpy_us + 20, 0, f"the numpy step, update included: {numpy_us:.0f} µs",
            va="center", fontsize=11)  # fmt: skip
    ax.set_yticks([0, 1], ["baseline", "worker 1's\nstep"], fontsize=11)
    ax.tick_params(axis="x", labelsize=10)
    ax.set_xlabel("µs (each part: the mean over the run's steps)", fontsize=11)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    ax.legend(handles, ["in the worker", "in the ps", "a message: sent and read"],
              loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, frameon=False,
              fontsize=11)  # fmt: skip
    ax.set_title("A synchronous worker's step, between its messages", loc="left", pad=34,
                 fontsize=13)  # fmt: skip
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


MIN_STEPS = 50
"""The fewest global steps a run may measure: a tenth at each end is left out of the means."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked before anything starts.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        The parsed options.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="global steps measured")
    parser.add_argument("--warmup", type=int, default=20, help="global steps before the window")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds the run may take")
    parser.add_argument("--picture", help="also draw the step's parts to this PNG file")
    args = parser.parse_args(argv)
    if args.steps < MIN_STEPS:
        parser.error(f"--steps must be at least {MIN_STEPS} to average over, got {args.steps}")
    if args.warmup < 0:
        parser.error(f"--warmup must be 0 or more, got {args.warmup}")
    if args.timeout <= 0:
        parser.error(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if args.picture is not None:
        folder = Path(args.picture).resolve().parent
        if not args.picture.lower().endswith(".png"):
            parser.error(f"--picture {args.picture}: the picture is a PNG; name it *.png")
        if not folder.is_dir():
            parser.error(f"--picture {args.picture}: no folder {folder} to write it in")
    return args


def main(argv: list[str] | None = None) -> None:
    """Measures the baseline and the timeline; prints a table on stderr and the JSON line.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
    """
    args = parse_args(argv)
    sync_training = _sync_training()

    numpy_us = sync_training.numpy_step_ms() * 1e3
    figures = run(args.steps, args.warmup, args.timeout)
    step_us = figures["worker1_step_us"]
    count = figures["worker1_steps"]
    median = figures["worker1_step_median_us"]
    print(
        f"worker 1's step: {step_us:.0f} µs on average (median {median:.0f} µs) over {count} "
        f"steps; a global step: {1e6 / figures['global_steps_per_s']:.0f} µs",
        file=sys.stderr,
    )
    for name, us in figures["parts_us"].items():
        print(f"  {name:38s} {us:7.0f} µs  {100 * us / step_us:4.0f} %", file=sys.stderr)
    sends = ", ".join(f"{name} {us:.0f}" for name, us in figures["send_us"].items())
    print(f"  of which the senders' Wire.send (µs): {sends}", file=sys.stderr)
    baseline = "the numpy step (the baseline)"
    print(f"  {baseline:38s} {numpy_us:7.0f} µs", file=sys.stderr, flush=True)
    out = {"benchmark": "sync_timeline", "steps": args.steps, "numpy_step_us": round(numpy_us, 1)}
    out.update(
        {
            "global_steps_per_s": round(figures["global_steps_per_s"], 1),
            "worker1_steps": figures["worker1_steps"],
            "worker1_step_us": round(step_us, 1),
            "worker1_step_median_us": round(figures["worker1_step_median_us"], 1),
            "parts_us": {name: round(us, 1) for name, us in figures["parts_us"].items()},
            "send_us": {name: round(us, 1) for name, us in figures["send_us"].items()},
            "messages_us": round(sum(figures["parts_us"][name] for name in MESSAGE_PARTS), 1),
            "worker_pass_us": round(figures["parts_us"]["worker: variables -> gradients"], 1),
        }
    )
    if args.picture:
        draw(figures["parts_us"], numpy_us, args.picture)
        print(f"drew {args.picture}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
