# %% [markdown]
# # 8. Tokens and the K-batch-sync effect
#
# `SyncReplicasOptimizer` lets a worker start its next step only when it has a
# token from `sync_token_q`. After each update the chief puts one token per
# worker in that queue. With TF's default `num_tokens=-1`, the chief also
# puts `replicas_to_aggregate` tokens there before the first update (3 here,
# one per worker), so that the first steps need not wait for an update.
# Tokens carry no worker's name. A fast worker can take all the initial
# tokens and push several gradients into the first update while a slow
# worker is still computing. Then the gradients computed against step 0
# that arrive after that update are dropped as stale. This is the
# *K-batch-sync* effect of
# [tensorflow#11753](https://github.com/tensorflow/tensorflow/issues/11753).
#
# This tutorial runs TF's trainer (`minitf/examples/trainer.py`, unchanged)
# on a simulated cluster of three workers, the last one slow, once with TF's
# default tokens and once with `num_tokens=0`. It prints who contributed to
# each update, checks the counts against TF's token rules and draws the race
# on a timeline. Then it replays the recorded race on real processes with the
# stepper, one move at a time, and lets it run to the end.
#
# Run it with `.venv/bin/python tutorials/08_tokens_and_k_batch_sync.py`, or
# open it as a notebook.

# %%
import contextlib
import io
import json
import logging
import shutil
from collections import Counter

import matplotlib.pyplot as plt

from minitf import notebook
from minitf.examples import tokens
from minitf.runtime.distributed.launcher import load_recording
from minitf.stepper import Stepper
from minitf.stepper.terminal import describe_event

out = notebook.out_dir("08_tokens_and_k_batch_sync")
WORKERS = 3  # worker 2 is the slow one
STEPS = notebook.sized(12, 6)  # global steps per run
SLOW, FAST = 0.05, 0.01  # the slow worker's delay per step; the others' mean delay (s)

# The trainer logs every hook at INFO level; show only warnings and errors.
quiet = logging.StreamHandler()
quiet.setLevel(logging.WARNING)
logging.getLogger("minitf").addHandler(quiet)

# %% [markdown]
# ## Two runs of the same trainer, one slow worker
#
# `tokens.run` builds a `SimulatedCluster` with 1 ps and 3 workers. Before
# each training step, worker 2 waits a constant 0.05 s (virtual time). The
# others wait an exponential time with a mean of 0.01 s, from a seeded
# stream. The run is the same every time. Each update of `SyncReplicasOptimizer(3, 3)`
# needs 3 gradients (`replicas_to_aggregate` = `total_num_replicas` = 3). The
# only difference between the runs is the `--num_tokens` flag, which the
# trainer passes to `make_session_run_hook(is_chief, num_tokens=...)`.
#
# The first run is also recorded (`record=`), for the stepper at the end.
# The trainer prints one line per worker when it stops. Those lines are
# kept, so that the replay can be checked against them.

# %%
record = out / "race.json"
printed, unused = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(printed):
    default = tokens.run(
        WORKERS,
        STEPS,
        num_tokens=-1,
        slow=SLOW,
        fast=FAST,
        record=str(record),
        out=str(out / "default_tokens"),
    )
with contextlib.redirect_stdout(unused):
    strict = tokens.run(
        WORKERS, STEPS, num_tokens=0, slow=SLOW, fast=FAST, out=str(out / "num_tokens_0")
    )
simulated_lines = sorted(line for line in printed.getvalue().splitlines() if "stopped" in line)
for title, result in (("TF's default tokens", default), ("num_tokens=0", strict)):
    print(f"{title} (worker {WORKERS - 1} is slow):")
    for line in result["lines"]:
        print("  " + line)
    print(
        f"  {result['batched']} of {result['updates']} updates took several batches of one "
        f"worker; {result['dropped']} gradients dropped; the slow worker gave "
        f"{100 * result['slow_share']:.0f} % of the applied gradients; "
        f"{result['time_per_update']:.4f} s per update"
    )

# %% [markdown]
# Read the first update of the default run. The chief put 3 tokens in the
# queue, all with the value 0 (global step 0). Worker 0 is the fastest. It
# pushes a gradient, takes a token at once, pushes another, takes another,
# and pushes a third. That makes the 3 gradients the accumulator waits for,
# so the first update averages three batches of worker 0 and none of the
# others. Each gradient a worker pushes is computed against its *local*
# step, the value of the last token it took. So the next gradient of each
# worker is still computed against step 0. It arrives after the update made
# the global step 1, and the accumulator drops it. That is worker 0's fourth
# gradient and the first one of workers 1 and 2. For a few more updates the
# fast workers are a step ahead of the slow one. With `num_tokens=0` there
# are no initial tokens, so the first step is a barrier too. Every update
# then averages one gradient of each worker and waits for the slow one.
#
# ## The token rules, checked
#
# These are the rules TF documents for `SyncReplicasOptimizer`, counted from
# the run's report. The report has one entry per pushed gradient, with its
# worker, its local step and whether it was dropped.
#
# - **Default tokens** (`num_tokens=-1`). There are `R` = 3 tokens with the
#   value 0. A worker computes against step 0 until it takes a token with a
#   larger value, so each worker pushes one more step-0 gradient than the
#   initial tokens it took: `R + N` = 6 step-0 gradients in all. Only `R`
#   of them fit in the first update, and the other `N` = 3 are dropped, one
#   per worker. TF's own `test2Workers` checks that such a gradient is
#   dropped.
# - **`num_tokens=0`**. Each update releases `N` tokens with the new step,
#   and a worker takes one per step. So each update averages exactly one
#   gradient of every worker, and none is dropped. An update waits for the
#   slowest worker: `max_i d_i` = 0.05 s here, whenever the fast workers'
#   draws are below it.

# %%
reports = {}
for name in ("default_tokens", "num_tokens_0"):
    with open(out / name / "report.json") as f:
        reports[name] = json.load(f)
gradients = reports["default_tokens"]["gradients"]
at_step_0 = [g for g in gradients if g["local_step"] == 0]
R = N = WORKERS
print("step-0 gradients per worker:", dict(sorted(Counter(g["worker"] for g in at_step_0).items())))
print(
    "  applied:",
    sum(not g["dropped"] for g in at_step_0),
    " dropped:",
    sum(g["dropped"] for g in at_step_0),
)
assert len(at_step_0) == R + N
assert sum(not g["dropped"] for g in at_step_0) == R
assert sorted(g["worker"] for g in at_step_0 if g["dropped"]) == list(range(N))  # one per worker
first = reports["default_tokens"]["updates"][0]
print("update 1 applied", first["applied"], "and dropped", first["dropped"])
assert first["applied"] == [0, 0, 0]  # the fast worker took all R initial tokens

# The counts tests/examples/test_tokens_example.py checks.
assert default["batched"] >= 1 and default["dropped"] >= 1
assert default["slow_share"] < 1 / WORKERS  # the slow worker is under-represented
assert strict["batched"] == 0 and strict["dropped"] == 0
assert all(sorted(applied) == list(range(WORKERS)) for applied in strict["applied"])
assert strict["updates"] == STEPS and strict["slow_share"] == 1 / WORKERS
update_times = [u["time"] for u in reports["num_tokens_0"]["updates"]]
gaps = [b - a for a, b in zip([0.0, *update_times], update_times)]
print(f"num_tokens=0: time between updates from {min(gaps):.4f} s to {max(gaps):.4f} s")
assert min(gaps) >= SLOW - 1e-9  # never faster than the slow worker
print("the counts follow TF's token rules")

# %% [markdown]
# ## The race on a timeline
#
# One row per worker, against virtual time. A grey bar is a worker computing
# a gradient, from the start of its step to its push. A gap after a push is
# the worker waiting for a token. Each push is a marker in the colour and
# shape of the update it went into, and the vertical lines are the updates.
# A black cross is a gradient that was dropped. Markers that would overlap are
# moved up or down a little.

# %%
COLOURS = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "h"]
NUMBER_STYLE = {"ha": "center", "va": "center", "fontsize": 13, "fontweight": "bold"}


def draw_race(ax, report: dict, title: str) -> None:
    """One run: compute bars, pushes marked by the update they went into, the updates."""
    span = report["time"]
    for n, update in enumerate(report["updates"], 1):
        colour = COLOURS[(n - 1) % len(COLOURS)]
        ax.axvline(update["time"], color=colour, linestyle=":", linewidth=2)
        ax.text(update["time"], -0.52, str(n), color=colour, **NUMBER_STYLE)
    for worker in range(WORKERS):
        pushes = [g for g in report["gradients"] if g["worker"] == worker]
        ends = [e["time"] for e in report["loss"] if e["worker"] == worker]
        starts = [0.0, *ends[: len(pushes) - 1]]  # a step starts when the last one ended
        ax.barh(
            [worker] * len(pushes),
            [g["time"] - s for g, s in zip(pushes, starts)],
            left=starts,
            height=0.3,
            color="#BBBBBB",
            edgecolor="#FFFFFF",
            linewidth=2,
        )
        last, nudge = -1.0, 0
        for g in pushes:
            nudge = (nudge + 1) % 3 if g["time"] - last < span / 80 else 0
            y, last = worker + (0, 0.25, -0.25)[nudge], g["time"]
            if g["dropped"]:
                ax.plot(g["time"], y, "X", color="#000000", markersize=14)
            else:
                n = g["local_step"]  # a fresh gradient goes into update local_step + 1
                ax.plot(
                    g["time"],
                    y,
                    MARKERS[n % len(MARKERS)],
                    color=COLOURS[n % len(COLOURS)],
                    markersize=12,
                    markeredgecolor="#000000",
                )
    ax.set_yticks(range(WORKERS))
    ax.set_yticklabels(
        [f"worker {w}" + (" (slow)" if w == WORKERS - 1 else "") for w in range(WORKERS)],
        fontsize=13,
    )
    ax.set_ylim(WORKERS - 0.55, -0.7)  # worker 0 on top, the update numbers above it
    ax.set_title(title, fontsize=15)
    ax.tick_params(axis="x", labelsize=12)


fig, axes = plt.subplots(2, 1, figsize=(13, 8), sharex=True)
draw_race(axes[0], reports["default_tokens"], "TF's default tokens: worker 0 fills update 1 alone")
draw_race(
    axes[1], reports["num_tokens_0"], "num_tokens=0: every update is one gradient of each worker"
)
axes[1].set_xlabel("virtual time (s)", fontsize=14)
legend = [
    plt.Rectangle((0, 0), 1, 1, color="#BBBBBB", label="computing a gradient (one bar per step)"),
    plt.Line2D(
        [],
        [],
        marker="o",
        color="#E69F00",
        mec="#000000",
        ls="",
        ms=12,
        label="a gradient, in its update's colour",
    ),
    plt.Line2D([], [], marker="X", color="#000000", ls="", ms=12, label="a dropped gradient"),
    plt.Line2D([], [], color="#E69F00", ls=":", lw=2, label="an update (its number on top)"),
]
fig.legend(handles=legend, loc="lower center", ncol=4, fontsize=12, frameon=False)
fig.tight_layout(rect=(0, 0.06, 1, 1))
fig.savefig(out / "race.png", dpi=100)
notebook.show(fig)

# %% [markdown]
# ## The same race on real processes, stepped
#
# The recording holds every move the simulation made, on every task, in
# order. `Stepper.replay` starts the trainer again as a real local cluster
# (one process per task) with every task held. Each `next()` makes the next
# recorded move of one task. The processes have no straggler delays here,
# and the race still goes as recorded: every task makes its moves in the
# recorded order, so each sees the same queue, accumulator and variable
# values.
#
# The recorded run's checkpoints were removed after it, so the replay
# initializes the variables as the recorded run did, and writes its own
# checkpoints to the same directory.
#
# The first moves are the start-up: the chief's step that creates and
# initializes the variables on ps 0, and the other workers' steps that ask
# whether the variables are ready yet. Each task makes its own moves in the
# recorded order. Which task's move comes first depends on which task has
# a step ready when `next()` asks, so the first lines can differ between
# runs.

# %%
recording = load_recording(str(record))
train_dir = recording["args"][recording["args"].index("--train_dir") + 1]
print("recorded moves per task:", {t: len(m) for t, m in recording["moves"].items()})
replay_output = io.StringIO()  # the tasks' own output
try:
    stepper = Stepper.replay(str(record), moves=0, output=replay_output)
except Exception:
    print(replay_output.getvalue()[-3000:])  # why a task did not start
    raise


def stop_replay() -> None:
    """Closes the stepper, stops its processes and removes the replay's checkpoints."""
    stepper.close()
    if stepper.cluster is not None:
        stepper.cluster.stop()
    shutil.rmtree(train_dir, ignore_errors=True)


try:
    print("the first moves: ps 0 creates the variables, workers 1 and 2 ask if they are ready")
    for _ in range(6):
        print("  " + describe_event(stepper.next()))
except BaseException:
    stop_replay()
    raise

# %% [markdown]
# Now step on to the first update, and print only the moves of the race.
# These are a gradient reaching `w`'s accumulator on ps 0, a token reaching
# a worker, and the chief's `take_grad` finishing. A step has the same id on
# every task, so the worker that ran a step on its own task is the one whose
# gradient ps 0 receives in that step.

# %%
PUSH = "sync_replicas/ResourceAccumulatorApplyGradient"  # w's accumulator
TAKE = "sync_replicas/ResourceAccumulatorTakeGradient"
TOKEN = "_recv/sync_token_q_Dequeue/0"


def accumulator_of_w(state: dict) -> dict:
    """w's accumulator on ps 0, as the stepper's state shows it."""
    (ps,) = [t for t in state["tasks"] if t["task"].startswith("/job:ps")]
    (acc,) = [r for r in ps["resources"] if r["name"] == "w:0/grad_accum"]
    return acc


worker_of_step, pushed, tokens_taken, taken = {}, [], [], False
try:
    while True:
        event = stepper.next()
        assert event is not None, replay_output.getvalue()[-2000:]
        move = f"  move {len(stepper.events):4d}:"
        task = event["task"].replace("/replica:0", "")
        if task.startswith("/job:worker"):
            worker_of_step.setdefault(event["step_id"], int(task.rsplit(":", 1)[1]))
        if event["op"] == PUSH:
            pushed.append(worker_of_step[event["step_id"]])
            acc = accumulator_of_w(stepper.state())
            stale = len(pushed) > 3  # the first push after the update, still at step 0
            print(
                f"{move} worker {pushed[-1]}'s gradient reaches w's accumulator, which now "
                f"holds {acc['count']} for step {acc['global_step']}"
                + (" (it was computed against step 0: dropped)" if stale else "")
            )
            if stale:
                break
        elif event["op"] == TOKEN and event["move"] == "deliver":
            tokens_taken.append(int(task.rsplit(":", 1)[1]))
            print(f"{move} worker {tokens_taken[-1]} gets a token")
        elif event["op"] == TAKE and event["move"] == "deliver" and not taken:
            taken = True
            print(f"{move} the chief's take_grad has 3 gradients: it takes their mean")
        elif event["op"] == "GradientDescent":  # the AssignAdd of the global step
            print(f"{move} the global step becomes {stepper.state()['global_step']}")
    print("pushed by workers", pushed, "; tokens taken by workers", tokens_taken)
    assert pushed[:3] == first["applied"] == [0, 0, 0]  # the simulated race, on real processes
    assert tokens_taken == [0, 0, 0]  # worker 0 took every initial token
    assert pushed[3] == 0 and acc["count"] == 0 and acc["global_step"] == 1  # dropped
except BaseException:
    stop_replay()
    raise

# %% [markdown]
# `continue_()` makes the rest of the recorded moves and then lets the
# processes finish. Each worker prints its last global step and loss, and
# the replay's lines must be the simulation's lines.

# %%
try:
    stepper.continue_()
    code = stepper.wait(120)
    replayed_lines = sorted(
        line.split("] ", 1)[1]
        for line in replay_output.getvalue().splitlines()
        if "stopped" in line
    )
finally:
    stop_replay()
print(f"the replay finished with exit code {code}")
for line in replayed_lines:
    print("  " + line)
assert code == 0, replay_output.getvalue()[-2000:]
assert replayed_lines == simulated_lines  # the same losses, to the printed digit
