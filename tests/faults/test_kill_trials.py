"""Randomized faults: a task killed with SIGKILL at a random point of training.

Each trial draws, from its own seed, where to kill (after a random
checkpoint or global step) and whether the killed task comes back (as a
cluster manager would restart it). Trial ``i`` covers the combination
``COMBOS[i % len(COMBOS)]``: asynchronous, synchronous and
synchronous-with-a-backup training with TF's distributed trainer
(``minitf/examples/trainer.py``: MonitoredTrainingSession, checkpoints), and
a plain ``tf.Session`` training loop (``minitf/examples/async_mlp.py``);
the victim is the chief, a worker or the ps.

Every trial must end within a bound with one of two answers:

* training went on: every worker exits 0, the last checkpoint is at the last
  step, the weights are those of the data's generating formula, and a
  restarted chief or ps restored a checkpoint no older than the newest one
  before the kill (nothing lost beyond it); or
* the TF error: with no monitored session to recover, the workers of a
  plain loop whose ps died fail with TF's error naming the lost task;

and with no process left behind and every task's port free again.

CI runs one trial per combination; ``MINITF_FAULT_TRIALS=200
MINITF_FAULT_SEED=1000 pytest tests/faults -s`` runs a long series by hand,
and ``MINITF_FAULT_LOAD=2`` runs it beside two busy processes per core (a
laptop is never quiet): the same bounds must hold.
The summary (trials, faults survived, worst time to an answer) is printed at
the end and appended as JSON to ``MINITF_FAULT_REPORT`` if it is set.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import pytest

import minitf as tf
from minitf.examples import async_mlp, trainer
from minitf.runtime.distributed.launcher import LocalCluster
from tests.processes import port_is_free, process_gone

from .support import LOAD_ENV, TRIALS_ENV, WatchedOutput, base_seed

pytestmark = [pytest.mark.timeout(120), pytest.mark.faults]

COMBOS = [
    (mode, victim)
    for mode in ("async", "sync", "backup", "plain")
    for victim in ("chief", "worker", "ps")
]
STEPS = 200
SAVE_STEPS = 20
BOUND = 60.0  # seconds from the kill to the end of a trial
ANSWER_BOUND = 8.0  # seconds from the kill to the first sign of the answer
ERRORS = r"(UnavailableError|AbortedError|FailedPreconditionError|CancelledError)"


@dataclass
class Outcome:
    seed: int
    mode: str
    victim: str
    restarted: bool
    killed_at: int
    answer: str = ""
    seconds: float = float("nan")
    notes: list[str] = field(default_factory=list)


_outcomes: list[Outcome] = []


@pytest.fixture(scope="module", autouse=True)
def _load():
    """``MINITF_FAULT_LOAD=N``: N busy processes per core while the trials run, stopped by PID."""
    per_core = int(os.environ.get(LOAD_ENV, "0"))
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(per_core * len(os.sched_getaffinity(0)))
    ]
    try:
        yield len(busy)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module", autouse=True)
def _report(_load):
    yield
    if not _outcomes:
        return
    summary = {
        "trials": len(_outcomes),
        "survived": sum(o.answer == "training went on" for o in _outcomes),
        "tf_error": sum(o.answer == "the TF error" for o in _outcomes),
        "worst_seconds_to_an_answer": round(max(o.seconds for o in _outcomes), 2),
        "seeds": [o.seed for o in _outcomes],
        "busy_processes": _load,
    }
    print("\nfault trials:", json.dumps(summary))
    path = os.environ.get("MINITF_FAULT_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(summary) + "\n")


def _trials() -> list[int]:
    return list(range(int(os.environ.get(TRIALS_ENV, str(len(COMBOS))))))


def _victim(mode: str, victim: str) -> tuple[str, int]:
    workers = 3 if mode == "backup" else 2
    return {"chief": ("worker", 0), "worker": ("worker", workers - 1), "ps": ("ps", 0)}[victim]


def _cluster(mode: str, tmp_path, output) -> LocalCluster:
    if mode == "plain":
        args = ["--steps", "1000000", "--report_every", "20"]
        return LocalCluster({"ps": 1, "worker": 2}, async_mlp.__file__, args, output=output)
    args = ["--train_dir", str(tmp_path / "train"), "--train_steps", str(STEPS)]
    args += ["--save_steps", str(SAVE_STEPS)]
    if mode == "async":
        args += ["--sync_replicas=false"]
    if mode == "backup":
        args += ["--replicas_to_aggregate", "2"]
    workers = 3 if mode == "backup" else 2
    return LocalCluster({"ps": 1, "worker": workers}, trainer.__file__, args, output=output)


def _failed_task(cluster, allowed):
    def check():
        for key, code in cluster.poll().items():
            if code not in (None, 0) and key not in allowed:
                raise AssertionError(f"task {key} exited with {code}")

    return check


@pytest.mark.parametrize("trial", _trials(), ids=lambda i: f"trial{i:03d}")
def test_a_task_killed_at_a_random_point_gets_an_answer_within_a_bound(trial, tmp_path):
    seed = base_seed() + trial
    rng = random.Random(seed)
    mode, victim = COMBOS[trial % len(COMBOS)]
    job, index = _victim(mode, victim)
    # Which kills a trainer survives without its task coming back: the other
    # workers of asynchronous training, or a backup's, go on without it.
    optional = mode in ("async", "backup") and victim == "worker"
    restarted = rng.random() < 0.5 if optional else mode != "plain" or victim != "ps"
    if mode == "plain":
        restarted = victim == "chief" or (victim == "ps" and rng.random() < 0.5)
    killed_at = rng.randrange(1, 6) * SAVE_STEPS
    outcome = Outcome(seed, mode, victim, restarted, killed_at)
    print(f"\ntrial {trial}: {outcome}")

    output = WatchedOutput()
    cluster = _cluster(mode, tmp_path, output)
    ports = [int(a.rsplit(":", 1)[1]) for j in cluster.cluster_spec.jobs
             for a in cluster.cluster_spec.job_tasks(j)]  # fmt: skip
    pids = set()
    with cluster:
        pids.update(cluster.pid(*key) for key in cluster.poll())
        allowed = {(job, index)}
        check = _failed_task(cluster, allowed if mode != "plain" else set(cluster.poll()))
        if mode == "plain":
            pattern = rf"worker 0: global step +({killed_at}|\d{{3,}})"
        else:
            pattern = rf"Saving checkpoints for ({killed_at}|[1-9]\d{{2,}}) into"
        output.wait_for(pattern, timeout=60, check=check)
        last_checkpoint = _step_of(tf.train.latest_checkpoint(str(tmp_path / "train")))
        mark = output.mark()
        killed = time.monotonic()
        if restarted:
            assert cluster.restart(job, index) == -signal.SIGKILL
            pids.add(cluster.pid(job, index))
        else:
            os.kill(cluster.pid(job, index), signal.SIGKILL)
        answered = _answer(mode, victim, restarted, cluster, output, mark, killed, outcome)
        outcome.seconds = round(answered - killed, 3)
        # A task that is down must not hold up the others: retrying the
        # connection to it once held every send of the ps for 10 s.
        assert outcome.seconds < ANSWER_BOUND, outcome
        _wait_for_workers(cluster, killed + BOUND, set() if restarted else allowed, output, outcome)
        codes = cluster.poll()
    for pid in pids:
        assert process_gone(pid, 10), f"process {pid} was left behind"
    for port in ports:
        assert port_is_free(port), f"port {port} is still bound"
    text = output.getvalue()
    if outcome.answer == "the TF error":
        _assert_tf_error(text[mark:], codes)
    else:
        _assert_went_on(mode, job, index, restarted, codes, text, mark, last_checkpoint, tmp_path)
    _outcomes.append(outcome)
    print(f"trial {trial}: {outcome.answer} in {outcome.seconds:.2f} s")


def _step_of(checkpoint: str | None) -> int:
    return -1 if checkpoint is None else int(checkpoint.rsplit("-", 1)[1])


def _answer(mode, victim, restarted, cluster, output, mark, killed, outcome) -> float:
    """Waits for the first sign of the trial's answer; returns when it came."""
    left = killed + BOUND - time.monotonic()
    if mode == "plain" and victim == "ps":
        output.wait_for(rf"\[worker/\d\] .*{ERRORS}", mark, timeout=left)
        outcome.answer = "the TF error"
    elif mode == "plain":
        survivor = 1 if victim == "chief" and not restarted else 0
        output.wait_for(rf"\[worker/{survivor}\] worker {survivor}: global step", mark, left)
        outcome.answer = "training went on"
    else:
        # A checkpoint past the kill point, or a worker that stopped at the last
        # step: on a loaded machine the kill may land after the last checkpoint,
        # and a worker restarted then finds training done and stops.
        pattern = r"Saving checkpoints for (\d+) into|worker \d+: stopped at global step (\d+)"
        found = output.wait_for(pattern, mark, timeout=left)
        while (found.group(1) and int(found.group(1)) <= outcome.killed_at) or (
            found.group(2) and int(found.group(2)) < STEPS
        ):  # the restored step, saved again
            found = output.wait_for(pattern, found.end(), left)
        if found.group(2):
            outcome.notes.append("the kill came after the last checkpoint")
        outcome.answer = "training went on"
    return time.monotonic()


def _wait_for_workers(cluster, deadline: float, skip: set, output, outcome) -> None:
    """Waits, by PID, for every worker process not in ``skip`` to end (a plain loop is stopped)."""
    for job, index in cluster.poll():
        if job == "ps" or (job, index) in skip:
            continue
        pid = cluster.pid(job, index)
        if cluster.script == async_mlp.__file__ and cluster.poll()[(job, index)] is None:
            # A plain loop trains for ever; once it answered, it is stopped.
            os.kill(pid, signal.SIGTERM)
        left = deadline - time.monotonic()
        if index > 0 and cluster.poll()[("worker", 0)] == 0 and not process_gone(pid, 15):
            # The chief finished without it: with TF's default tokens a
            # SyncReplicas chief may aggregate its own gradients, so training
            # ended while this worker rejoined. Its next step then waits for a
            # token no chief will give, as in TF; the ps must say so.
            output.wait_for(r"\[ps/0\] .*has waited .*sync_token_q", timeout=max(left, 0.1))
            outcome.notes.append(f"worker {index} waited for a token after the chief finished")
            os.kill(pid, signal.SIGTERM)
        if not process_gone(pid, max(left, 0.1)):
            lines = output.getvalue().splitlines()
            tail = "\n".join([line for line in lines if line.startswith(f"[{job}/{index}]")][-30:])
            others = "\n".join(lines[-30:])
            raise AssertionError(f"/job:{job}/task:{index} did not finish:\n{tail}\n---\n{others}")


def _assert_tf_error(text: str, codes: dict) -> None:
    errors = re.findall(rf"{ERRORS}: ([^\n]*)", text)
    assert errors, text[-3000:]
    # The error names the lost task or the op that needed it.
    assert any("/job:ps/task:0" in message or "ps" in message for _, message in errors), errors


def _assert_went_on(mode, job, index, restarted, codes, text, mark, last_checkpoint, tmp_path):
    for key, code in codes.items():
        if key[0] == "worker" and (restarted or key != (job, index)):
            assert code in (0, -signal.SIGTERM), (
                f"{key} exited with {code}; the output ends:\n{text[-3000:]}"
            )
    if mode == "plain":
        return
    train_dir = str(tmp_path / "train")
    assert _step_of(tf.train.latest_checkpoint(train_dir)) >= STEPS
    atol = 1e-2 if mode == "async" else 1e-3
    np.testing.assert_allclose(tf.train.load_variable(train_dir, "w"), trainer.W_TRUE, atol=atol)
    np.testing.assert_allclose(tf.train.load_variable(train_dir, "b"), 1.0, atol=atol)
    if restarted and (job == "ps" or index == 0):
        restored = re.findall(r"\[worker/0\].*Restoring parameters from .*-(\d+)", text[mark:])
        assert restored, text[mark:][-3000:]
        assert int(restored[0]) >= last_checkpoint  # nothing lost beyond the last checkpoint
