# %% [markdown]
# # 9. Backup workers and stragglers
#
# In synchronous training every update waits for the gradients it averages.
# With `SyncReplicasOptimizer(opt, replicas_to_aggregate=N, total_num_replicas=N)`
# each update waits for all `N` workers, so the slowest worker of each step
# sets the pace. Chen et al. ("Revisiting Distributed Synchronous SGD", 2016)
# run `b` *backup workers* instead: `replicas_to_aggregate = N - b`. Each
# update takes the first `N - b` gradients, and the `b` that come later are
# dropped as stale. Updates come faster, but each averages fewer gradients,
# and the late workers' work is lost.
#
# This tutorial measures that trade-off on a simulated cluster of 50 workers
# whose step times have a long tail. It prints the time per update and the
# gradients applied and dropped for fully synchronous training and for 2 to
# 20 backup workers, and checks each against the formula for the k-th
# fastest of 50 workers. Then it runs asynchronous training on the same
# workers, which never waits but applies stale gradients, and ends with
# plots of the trade-off and of the loss against virtual time.
#
# Run it with `.venv/bin/python tutorials/09_backup_workers_and_stragglers.py`,
# or open it as a notebook. The full size simulates 120 virtual seconds of
# training per run; at the quick size (`MINITF_QUICK=1`) each run covers 20.

# %%
import contextlib
import io
import json
import logging
import math
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

from minitf import notebook
from minitf.cluster import delays
from minitf.examples import backup_workers, policies

out = notebook.out_dir("09_backup_workers_and_stragglers")
N = 50  # workers
SHIFT, MEAN = 0.5, 1.0  # a gradient takes 0.5 s plus an exponential time of mean 1 s
BACKUPS = [0, 2, 5, 10, 20]
HORIZON = notebook.sized(120.0, 20.0)  # virtual seconds of training each run covers
SEED = 0

# Each simulated task logs its start-up at INFO level; show only warnings and errors.
quiet = logging.StreamHandler()
quiet.setLevel(logging.WARNING)
logging.getLogger("minitf").addHandler(quiet)

# %% [markdown]
# ## Stragglers: the k-th fastest of n
#
# `delays.ShiftedExponential(shift, mean)` is the usual model of a worker's
# step time: a fixed minimum plus an exponential tail. Most steps take a
# little over `shift`, and a few take much longer. With 50 workers, some
# worker is slow at almost every step.
#
# When every worker starts a step at the same moment, an update that needs
# `k` gradients waits for the k-th fastest of `n` workers. For exponential
# times the expected k-th smallest of `n` is known in closed form (Rényi):
#
# `E[X(k)] = shift + mean · (H(n) − H(n − k))`, where `H(m) = 1 + 1/2 + … + 1/m`,
#
# and its variance is `mean² · Σ 1/i²` for `i` from `n − k + 1` to `n`.
# `policies.formula("KSync", k, n, shift, mean)` computes it. Here is the
# formula against draws from the delay model itself, 4,000 steps of 50
# workers.

# %%
model = delays.ShiftedExponential(SHIFT, MEAN)
rng = np.random.default_rng(SEED)
draws = np.sort([[model(rng) for _ in range(N)] for _ in range(4000)], axis=1)


def kth_fastest(k: int) -> float:
    """The expected time of the k-th fastest of N workers (the formula)."""
    return policies.formula("KSync", k, N, SHIFT, MEAN)


def kth_fastest_sd(k: int) -> float:
    """The standard deviation of the k-th fastest of N workers' times."""
    return MEAN * math.sqrt(sum(1 / i**2 for i in range(N - k + 1, N + 1)))


for b in BACKUPS:
    k = N - b
    sampled = draws[:, k - 1]
    print(f"wait for {k:2d} of {N}: formula {kth_fastest(k):.3f} s, draws {sampled.mean():.3f} s")
    assert abs(sampled.mean() - kth_fastest(k)) < 4 * kth_fastest_sd(k) / math.sqrt(len(draws))
print(f"median step time {np.median(draws):.2f} s; the slowest of 50: {kth_fastest(N):.2f} s")

# %% [markdown]
# Waiting for all 50 takes about 5 s, four times the median step. Waiting for
# 45 halves that. Each backup worker saves less than the one before, since the
# tail is thinner further in.
#
# ## Fully synchronous and backup workers, on 50 simulated workers
#
# `policies.run("TF backups", N, k, steps, ...)` trains a one-weight linear
# regression between-graph on a `SimulatedCluster` of `N` workers, with TF's
# `SyncReplicasOptimizer(opt, replicas_to_aggregate=k, total_num_replicas=N)`
# and `num_tokens=0`. Each gradient's time is drawn from the model above. With
# `k = N` it is fully synchronous training. Each run makes enough updates to
# cover the horizon. The run with 5 backups also writes its report (every
# update and every gradient) and its plots to the output folder.
#
# The number of gradients per update follows from the tokens. After each
# update the chief puts `N` tokens in the queue, and each worker takes one
# per step. So each update has `N` gradients computed for it: the first
# `k` are applied, and the other `N − k` arrive after the update and are
# dropped.

# %%
sync = {}
for b in BACKUPS:
    k = N - b
    steps = math.ceil(1.2 * HORIZON / kth_fastest(k))  # at least HORIZON: see below
    run_out = str(out / f"backups_{b}") if b == 5 else None
    sync[b] = policies.run("TF backups", N, k, steps, SEED, SHIFT, MEAN, out=run_out)
    sync[b]["steps"] = steps
    print(f"{b:2d} backups: " + policies.describe(sync[b]).split(": ", 1)[1])
with open(out / "backups_5" / "report.json") as f:
    report = json.load(f)  # the run with 5 backups, update by update

# %% [markdown]
# `dropped` is exactly `N − k` gradients per update, and every gradient that
# was applied was fresh (staleness 0). The report of the run with 5 backups
# shows it update by update, and the totals of every run agree. The checks
# below also compare the time per update with the formula.
#
# - **Fully synchronous** (`b = 0`). Every worker starts each step when the
#   tokens arrive, so an update takes the slowest of 50 draws. The mean must
#   be within 4 standard errors of `shift + mean · H(50)`.
# - **Backup workers.** TF's late workers are not stopped: each finishes the
#   gradient that will be dropped before it takes a token, so it starts the
#   next step late. An update therefore waits *at least* for the k-th fastest
#   of 50 fresh draws. The formula is a lower bound, and TF's backups come
#   close to it when `b` is small.

# %%
per_update = Counter(len(u["dropped"]) for u in report["updates"])
print("5 backups, {gradients dropped in an update: how many updates}:", dict(per_update))
assert [len(u["dropped"]) for u in report["updates"]] == [5] * sync[5]["steps"]
assert [len(u["applied"]) for u in report["updates"]] == [N - 5] * sync[5]["steps"]
for b, result in sync.items():
    k, steps = N - b, result["steps"]
    assert result["applied"] == k * steps and result["dropped"] == b * steps  # N - k per update
    assert result["staleness"] == 0 and result["cancelled"] == 0
    assert result["time_per_update"] * steps >= HORIZON  # the run covers the horizon
    bound, error = kth_fastest(k), kth_fastest_sd(k) / math.sqrt(steps)
    if b == 0:
        assert abs(result["time_per_update"] - bound) < 4 * error, (result, bound)
    else:
        assert result["time_per_update"] > bound - 4 * error, (result, bound)
    print(
        f"{b:2d} backups: {k} applied and {b} dropped in each of {steps} updates; "
        f"{result['time_per_update']:.2f} s per update (k-th fastest: {bound:.2f} s)"
    )
times = [sync[b]["time_per_update"] for b in BACKUPS]
assert times == sorted(times, reverse=True)  # more backups, shorter updates

# %% [markdown]
# ## The trade-off, drawn
#
# On the left, the time per update against the number of backup workers,
# measured and from the formula. On the right, the gradients computed for
# each update, on average: the ones applied and the ones dropped. This is the shape of
# Chen et al.'s trade-off. Each backup worker shortens the update, each by
# less than the one before. Each one also removes a gradient from the
# average and wastes a worker's step.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5))
ks = np.arange(N - max(BACKUPS), N + 1)
left.plot(
    N - ks,
    [kth_fastest(k) for k in ks],
    "--",
    color="#D55E00",
    linewidth=2.5,
    label="k-th fastest of 50 (formula)",
)
left.plot(
    BACKUPS,
    times,
    "o-",
    color="#0072B2",
    markersize=11,
    linewidth=2.5,
    label="TF backups, simulated",
)
left.set_xlabel("backup workers b (of 50)", fontsize=14)
left.set_ylabel("virtual seconds per update", fontsize=14)
left.set_title("Fewer to wait for: shorter updates", fontsize=15)
left.set_ylim(0, None)
left.legend(fontsize=13)
applied = [sync[b]["applied"] / sync[b]["steps"] for b in BACKUPS]
dropped = [sync[b]["dropped"] / sync[b]["steps"] for b in BACKUPS]
right.bar(BACKUPS, applied, width=1.4, color="#009E73", label="applied")
right.bar(
    BACKUPS,
    dropped,
    width=1.4,
    bottom=applied,
    color="#CC79A7",
    hatch="//",
    edgecolor="#000000",
    label="dropped",
)
right.set_xlabel("backup workers b (of 50)", fontsize=14)
right.set_ylabel("gradients per update", fontsize=14)
right.set_title("Fewer gradients averaged, more thrown away", fontsize=15)
right.set_ylim(0, 62)
right.legend(fontsize=13, loc="upper center", ncol=2)
for ax in (left, right):
    ax.tick_params(labelsize=12)
    ax.set_xticks(BACKUPS)
fig.tight_layout()
fig.savefig(out / "tradeoff.png", dpi=100)
notebook.show(fig)

# %% [markdown]
# ## TF's trainer, with TF's default tokens
#
# `backup_workers.run` runs TF's distributed trainer (`minitf/examples/trainer.py`)
# on 50 simulated workers, here with 5 backups, with the trainer's default
# `num_tokens=-1` and steps of `ShiftedExponential(0.1, 0.1)`. The chief's
# initial tokens let fast workers push extra gradients into the first
# updates (tutorial 8), and each worker's first step-0 gradient after them
# is dropped. So more than `b / N` = 10 % of the gradients are dropped, where
# `num_tokens=0` dropped exactly 10 %.

# %%
with contextlib.redirect_stdout(io.StringIO()):  # each worker prints a line when it stops
    trainer_run = backup_workers.run(N, 5, notebook.sized(20, 6), SEED)
print(
    f"TF's trainer, 5 backups: {trainer_run['time_per_update']:.3f} s per update, "
    f"{100 * trainer_run['dropped_fraction']:.1f} % of the gradients dropped"
)
assert trainer_run["dropped_fraction"] > 5 / N

# %% [markdown]
# ## Asynchronous training: no waiting, stale gradients
#
# In asynchronous training each worker applies its own gradient as soon as
# it has one, and goes straight on. `policies.run("Async", ...)` runs that on
# the same 50 workers (`minitf.cluster.policies.Async`: every gradient is
# applied alone, however stale). Nobody waits, so gradients arrive at the
# rate of 50 workers. In the steady state that is one every
# `μ / N` = `(shift + mean) / N` = 0.03 s. Renewal theory also gives the
# start: by time `t`, `N` workers have pushed on average
# `N · (t/μ + (σ² − μ²) / (2μ²))` gradients, with a variance of
# `N · t · σ² / μ³` (here `σ²` = `mean²`). But each gradient was computed on
# variables that about `N − 1` = 49 other updates have changed since: its
# *staleness*.
#
# Staleness can make training unstable. Take the staleness as a fixed delay
# of `τ` updates. Then gradient descent on this problem is
# `e(t+1) = e(t) − a · e(t − τ)`, where `e` is the weight's error and `a` =
# learning rate × curvature = 0.05 × 2 = 0.1 (the loss is the mean of
# `(w·x − y)²`, with `x` of variance 1). Levin and May's theorem says this
# converges if and only if `0 < a < 2 cos(τπ / (2τ + 1))`. The bound is
# about 0.032 for `τ` = 49 and 0.21 for `τ` = 7. So at this learning rate
# asynchronous training should diverge with 50 workers and converge with 8.
# Both are run below.

# %%
asynchronous = {}
for n in (N, 8):
    steps = math.ceil(HORIZON * n / (SHIFT + MEAN))  # one update per gradient
    asynchronous[n] = policies.run("Async", n, 1, steps, SEED, SHIFT, MEAN)
    asynchronous[n]["steps"] = steps
    print(f"{n} workers: " + policies.describe(asynchronous[n]).split(": ", 1)[1])


def levin_may_bound(tau: float) -> float:
    """The largest step `a` for which e(t+1) = e(t) - a e(t - tau) converges."""
    return 2 * math.cos(tau * math.pi / (2 * tau + 1))


def mean_loss(result: dict, start: float, end: float) -> float:
    """The mean of the losses the workers fetched between two virtual times."""
    return float(np.mean([v for t, v in result["loss"] if start <= t < end]))


a = policies.LR * 2.0
mu, variance = SHIFT + MEAN, MEAN**2
for n, result in asynchronous.items():
    updates = result["steps"]
    end = result["time_per_update"] * updates
    expected = n * (end / mu + (variance - mu**2) / (2 * mu**2))
    sd = math.sqrt(n * end * variance / mu**3)
    print(
        f"{n} workers: {updates} gradients by {end:.1f} s; renewal theory {expected:.0f} ± {sd:.0f}"
    )
    assert abs(updates - expected) < 4 * sd
    tau = result["staleness"]
    first, last = mean_loss(result, 0, 5), mean_loss(result, HORIZON - 5, HORIZON)
    print(
        f"{n} workers: staleness {tau:.1f}, bound {levin_may_bound(tau):.3f} against a = {a:.2f}; "
        f"mean loss {first:.3g} in the first 5 s, {last:.3g} in the last 5 s"
    )
    assert abs(tau - (n - 1)) < 0.1 * (n - 1)  # about n - 1 updates stale
    assert (a < levin_may_bound(tau)) == (last < first)  # converges exactly when the bound says
assert mean_loss(asynchronous[N], HORIZON - 5, HORIZON) > 100  # diverged

# %% [markdown]
# ## Loss against virtual time
#
# Each point is the mean of the last losses the workers fetched: the last
# 50 for the 50-worker runs (one update's worth in synchronous training),
# the last 8 for the 8-worker run. In the same time, backup workers make
# more updates than fully synchronous training, so their loss falls sooner.
# The other side of the trade-off hardly shows here: on this one-weight
# problem an average of 30 gradients is nearly as good as an average of 50.
# On a large model, an average of fewer gradients is a noisier step, and
# that is what limits the number of backups worth running. Asynchronous
# training with 50 workers makes an update every 0.03 s, and diverges. With
# 8 workers (dotted line) its gradients are about 7 updates stale, and it
# converges.


# %%
def smoothed(result: dict, window: int) -> tuple[np.ndarray, np.ndarray]:
    """The losses in order of time, each the mean of the last ``window`` fetched."""
    points = sorted(result["loss"])
    times = np.array([t for t, _ in points])
    values = np.array([v for _, v in points])
    return times[window - 1 :], np.convolve(values, np.ones(window) / window, mode="valid")


fig, ax = plt.subplots(figsize=(13, 6.5))
curves = [
    (sync[0], N, "fully sync (50 of 50)", "#000000", "-", "o"),
    (sync[5], N, "5 backups (45 of 50)", "#0072B2", "-", "s"),
    (sync[20], N, "20 backups (30 of 50)", "#009E73", "-", "^"),
    (asynchronous[N], N, "async, 50 workers", "#D55E00", "--", "v"),
    (asynchronous[8], 8, "async, 8 workers", "#CC79A7", ":", "D"),
]
for result, window, label, colour, style, marker in curves:
    times, means = smoothed(result, window)
    ax.plot(
        times,
        means,
        linestyle=style,
        marker=marker,
        color=colour,
        label=label,
        linewidth=2.5,
        markersize=9,
        markevery=max(1, len(times) // 12),
    )
ax.set_yscale("log")
ax.set_ylim(0.1, 100)
ax.annotate(
    "async, 50 workers: diverges, off the top",
    xy=(0.98, 0.97),
    xycoords="axes fraction",
    ha="right",
    va="top",
    color="#D55E00",
    fontsize=13,
)
ax.set_xlim(0, HORIZON)
ax.set_xlabel("virtual time (s)", fontsize=14)
ax.set_ylabel("mean batch loss (log scale)", fontsize=14)
ax.set_title(f"{N} workers, gradient time ShiftedExponential({SHIFT:g}, {MEAN:g})", fontsize=15)
ax.tick_params(labelsize=12)
ax.legend(fontsize=13, loc="lower left")
fig.tight_layout()
fig.savefig(out / "loss.png", dpi=100)
notebook.show(fig)
