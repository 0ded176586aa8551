# %% [markdown]
# # 11. Across machines
#
# A TF1 distributed script is started once per task, on as many machines as
# the cluster has, by whatever starts programs there: a shell in each of three
# terminals, Slurm's `srun`, Kubernetes through Kubeflow's TFJob operator.
# Each task learns two things from the outside: the cluster (every task's
# address) and which task it is. TF1 scripts read them from flags
# (`--job_name --task_index --ps_hosts --worker_hosts`) or from the `TF_CONFIG`
# environment variable.
#
# This tutorial runs one training script,
# `tutorials/across_machines/train.py`, both ways, as real processes on this
# machine. Then it kills the chief in the middle of training and starts it
# again, as a cluster manager would, and shows that it goes on from its last
# checkpoint. Two worked examples next to the script run it on real engines:
# a Kubeflow `TFJob` (`tfjob.yaml`) and a Slurm batch script
# (`slurm_job.sh`). `tests/test_engines.py` gives the script exactly the
# environment each engine gives it, on loopback, and checks the TFJob against
# the TFJob schema; `tests/test_slurm.py` submits the batch script to a real
# Slurm on this machine. The tutorial ends with the global step across the
# chief's restart.
#
# Run it with `.venv/bin/python tutorials/11_across_machines.py`, or open it as a
# notebook.

# %%
import ast
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import minitf as tf
from minitf import notebook
from minitf.runtime.distributed.launcher import free_ports

# The checkout minitf is installed from (pip install -e): the script is in it.
HERE = Path(tf.__file__).resolve().parents[1] / "tutorials" / "across_machines"
SCRIPT = HERE / "train.py"
out = notebook.out_dir("11_across_machines").resolve()
STEPS = notebook.sized(300, 100)  # global steps of each run
W_TRUE = np.linspace(-1.0, 1.0, 8)  # train.py learns y = x . w_true + 1

# %% [markdown]
# ## The script: flags first, then TF_CONFIG
#
# `train.py` is TF's distributed trainer: `replica_device_setter`,
# `SyncReplicasOptimizer`, and a `MonitoredTrainingSession` whose chief saves
# a checkpoint every `--save_steps` global steps to `--train_dir`. Only the way
# it finds its role is new. With `--job_name` it takes the flags; without, it
# reads `TF_CONFIG`:

# %%
source = SCRIPT.read_text()
(task_role,) = [
    node
    for node in ast.parse(source).body
    if isinstance(node, ast.FunctionDef) and node.name == "task_role"
]
print(ast.get_source_segment(source, task_role))

# %% [markdown]
# Two more lines of the script matter on a real cluster:
#
# - **A ps task ends when the training does.** In TF, a ps task waits in
#   `server.join()` for ever, and a batch job would hold its nodes until its
#   time limit. So each ps task waits for one token per worker in a shared
#   queue on itself, and each worker leaves its token when it is done (the
#   workaround given in tensorflow/tensorflow#4713).
# - **`num_tokens=0`.** With TF's default initial tokens, a chief whose peers
#   start a second late trains alone on its own tokens (the K-batch-sync
#   effect of tutorial 8), finishes, and leaves the latecomers waiting for a
#   token for ever. Without them, every step waits for every worker.
#
# ## Starting the tasks
#
# A cluster engine does three things for each task: it starts the program, it
# gives it its role, and it restarts it if it dies. `Tasks` does the same on
# this machine. It keeps each process's output lines with the time they
# arrived, and lets us wait for a line (a condition variable, woken by each
# line: nothing sleeps). Every process is stopped by its PID in a `finally`.
#
# Every task of a cluster must share its secret, `MINITF_CLUSTER_SECRET` (see
# "The transport" in Running on a cluster): an engine passes it to every task
# like any other environment variable.

# %%
SECRET = secrets.token_hex(16)
TASKS = [("ps", 0), ("worker", 0), ("worker", 1)]


class Tasks:
    """train.py processes, one per task, and their output lines with arrival times."""

    def __init__(self):
        self.procs = {}
        self.lines = []  # (seconds since the first start, task, text)
        self._changed = threading.Condition()
        self._t0 = time.monotonic()

    def start(self, task, args=(), env=None):
        """Starts train.py as `task` ("worker/0") with these arguments and variables."""
        environ = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
        environ.update(env or {}, MINITF_CLUSTER_SECRET=SECRET)
        command = [sys.executable, "-u", str(SCRIPT), *args]
        proc = subprocess.Popen(
            command,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.procs[task] = proc
        threading.Thread(target=self._pump, args=(task, proc), daemon=True).start()

    def _pump(self, task, proc):
        for line in proc.stdout:
            with self._changed:
                self.lines.append((time.monotonic() - self._t0, task, line.rstrip()))
                self._changed.notify_all()
        with self._changed:  # the process has ended: wake whoever waits for its lines
            self._changed.notify_all()

    def now(self):
        return time.monotonic() - self._t0

    def wait_for(self, task, pattern, since=0.0, accept=lambda match: True, timeout=60):
        """Waits until `task` prints a line matching `pattern` after time `since`.

        Returns (the line's time, the match); `accept(match)` can refuse a match.
        """
        proc, found, read = self.procs[task], [], 0

        def look():  # runs with the lock held; reads only the lines new since it last looked
            nonlocal read
            for t, who, text in self.lines[read:]:
                match = re.search(pattern, text) if who == task and t >= since else None
                if match and accept(match):
                    found.append((t, match))
            read = len(self.lines)
            return bool(found) or proc.poll() is not None

        with self._changed:
            self._changed.wait_for(look, timeout)
        tail = "\n".join(self.output(task, everything=True)[-20:])
        assert found, f"{task} did not print {pattern!r}:\n{tail}"
        return found[0]

    def kill(self, task):
        """SIGKILL, as a machine that fails or an engine that preempts; returns the time."""
        proc = self.procs[task]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return self.now()

    def wait(self, timeout=120):
        """Each task's exit code, once all have ended (the ps tasks end after the workers)."""
        return {task: proc.wait(timeout) for task, proc in self.procs.items()}

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def output(self, task, everything=False):
        """`task`'s lines; without `everything`, the script's own (not minitf's log)."""
        lines = [text for _, who, text in self.lines if who == task]
        return lines if everything else [x for x in lines if not x.startswith(("INFO:", "WARN"))]


def fresh_dir(name):
    """An empty checkpoint directory: a chief restores whatever it finds there."""
    path = out / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    return path


def check_trained(tasks, train_dir, steps):
    """Every task exited 0, both workers stopped at `steps`, and the model is the right one."""
    codes = tasks.wait()
    assert set(codes.values()) == {0}, codes
    for index in (0, 1):
        lines = tasks.output(f"worker/{index}")
        assert any(f"stopped at global step {steps}," in line for line in lines), lines[-3:]
    assert tf.train.latest_checkpoint(str(train_dir)).endswith(f"model.ckpt-{steps}")
    w = tf.train.load_variable(str(train_dir), "w")
    np.testing.assert_allclose(w, W_TRUE, atol=1e-3)
    return w


# %% [markdown]
# ## 1. TF1 flags
#
# The way TF's "Distributed TensorFlow" guide starts a cluster: the same
# command on every machine, with the role and all the addresses as flags.
# Here the three machines are three processes on 127.0.0.1, each with its own
# port.

# %%
ports = free_ports(3)
cluster = {
    "ps": [f"127.0.0.1:{ports[0]}"],
    "worker": [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"],
}


def flags(job, index):
    return [
        f"--job_name={job}",
        f"--task_index={index}",
        f"--ps_hosts={','.join(cluster['ps'])}",
        f"--worker_hosts={','.join(cluster['worker'])}",
    ]


train_dir = fresh_dir("flags")
settings = [f"--train_dir={train_dir}", f"--train_steps={STEPS}", f"--log_every={STEPS // 2}"]
print("worker 1's command line:\n  python train.py", " ".join(flags("worker", 1) + settings))
tasks = Tasks()
try:
    for job, index in TASKS:
        tasks.start(f"{job}/{index}", flags(job, index) + settings)
    w = check_trained(tasks, train_dir, STEPS)
finally:
    tasks.stop()
for job, index in TASKS:
    print(f"[{job}/{index}]", *tasks.output(f"{job}/{index}"), sep="\n  ")
print("the ps's checkpoint shards and the chief's index:", sorted(os.listdir(train_dir))[:4])
print("w =", np.round(w, 3), "(w_true = linspace(-1, 1, 8))")

# %% [markdown]
# ## 2. TF_CONFIG, as a TFJob pod gets it
#
# Kubeflow's training operator makes a pod per replica and a headless service
# per pod, named `<job>-<replica type>-<index>` in the job's namespace. It
# puts the same cluster in every pod's `TF_CONFIG`, with the pod's own task,
# and an `"environment": "cloud"` left from TF 1.3's `tf.contrib.learn`. The
# port is the container's port named `tfjob-port` (2222 by default). This is
# the operator's `genTFConfigJSONStr`, for the 1 ps and 2 workers of
# `tfjob.yaml`:


# %%
def tfjob_tf_config(name, namespace, replicas, rtype, index, port=2222):
    """The TF_CONFIG Kubeflow's training operator sets in pod `rtype`-`index` of a TFJob."""
    cluster = {
        kind.lower(): [f"{name}-{kind.lower()}-{i}.{namespace}.svc:{port}" for i in range(n)]
        for kind, n in replicas.items()
    }
    task = {"type": rtype.lower(), "index": index}
    return {"cluster": cluster, "task": task, "environment": "cloud"}


replicas = {"PS": 1, "Worker": 2}
config = tfjob_tf_config("minitf-train", "default", replicas, "Worker", 1)
print("TF_CONFIG in pod minitf-train-worker-1:")
print(json.dumps(config, indent=2))
assert config["cluster"]["worker"][0] == "minitf-train-worker-0.default.svc:2222"

# %% [markdown]
# The same, with each service's name replaced by a port on 127.0.0.1, is all
# each process gets here: no flags but the training's own. The script finds
# its role in `TF_CONFIG`, and the first worker is the chief, as in a TFJob
# without a Chief replica spec.

# %%
services = tfjob_tf_config("minitf-train", "default", replicas, "PS", 0)["cluster"]
loopback = {service: address for job in services for service, address in
            zip(services[job], cluster[job])}  # fmt: skip
train_dir = fresh_dir("tf_config")
settings = [f"--train_dir={train_dir}", f"--train_steps={STEPS}", f"--log_every={STEPS // 2}"]
pods = {}
for job, index in TASKS:
    pod = tfjob_tf_config("minitf-train", "default", replicas, job, index)
    pod["cluster"] = {j: [loopback[s] for s in hosts] for j, hosts in pod["cluster"].items()}
    pods[f"{job}/{index}"] = {"TF_CONFIG": json.dumps(pod)}
print("worker 0's environment here:", pods["worker/0"])
tasks = Tasks()
try:
    for task, env in pods.items():
        tasks.start(task, settings, env=env)
    check_trained(tasks, train_dir, STEPS)
finally:
    tasks.stop()
for job, index in TASKS:
    print(f"[{job}/{index}]", *tasks.output(f"{job}/{index}"), sep="\n  ")
assert "worker 0: replica 0 of 2 (chief)" in tasks.output("worker/0")

# %% [markdown]
# ## On Kubernetes, with tfjob.yaml
#
# A TFJob names its replica types (`PS`, `Worker`, and optionally `Chief`)
# and gives each a count and a pod template. The container must be named
# `tensorflow`: that is the one the operator puts `TF_CONFIG` in. The
# checkpoint directory is a ReadWriteMany volume mounted in every pod,
# because the ps tasks write their shards of each checkpoint and the chief
# writes the index. `restartPolicy: OnFailure` restarts a dead container in
# its pod, under the same name: the restart of part 3. The `Worker` spec is
# the same as the `PS` one but for its count.

# %%
yaml_text = (HERE / "tfjob.yaml").read_text()
spec = yaml_text[yaml_text.index("apiVersion") : yaml_text.index("    Worker:")]
print(spec + "    Worker:\n      replicas: 2\n      ...")
assert "replicas: 2" in yaml_text[yaml_text.index("    Worker:") :].splitlines()[1]

# %% [markdown]
# ## On Slurm, with slurm_job.sh
#
# `sbatch` runs the batch script once, on the first of the job's nodes, and
# `srun` starts one task per node. Slurm gives each task its rank in
# `SLURM_PROCID` and the job's nodes in `SLURM_JOB_NODELIST`, a compressed
# list (`node[01-03]`) that `scontrol show hostnames` expands. Each task builds
# TF1's flags from them: rank 0 is the ps, ranks 1 and 2 the workers. A
# node's name is not always a host name, so each task asks Slurm for the
# node's address (`NodeAddr`, from `scontrol show node`). Nodes on a Slurm
# cluster usually share `$HOME`, where the checkpoint directory goes; the
# batch script also makes one secret for the whole job.
#
# What a site needs:
#
# - **A shared filesystem** for the checkout and the checkpoint directory,
#   and **the job's secret** in every task: the batch script exports
#   `MINITF_CLUSTER_SECRET`, and `srun --export=ALL` passes it on even where
#   the site exports nothing to jobs (`SBATCH_EXPORT=NONE`).
# - **Addresses the other nodes reach.** A task listens on its node's
#   `NodeAddr`. Debian's default `/etc/hosts` line `127.0.1.1 <hostname>`
#   makes a node's own name loopback: where `NodeAddr` is that name, give
#   nodes their network address in `slurm.conf` (or in `/etc/hosts`).
# - **Free ports**: each job takes 20 ports from 20000 + 20 × (job id mod
#   2000), so jobs on shared nodes do not collide; set `PORT` to choose.
# - **`--kill-on-bad-exit=1`** (the script's): a task that dies ends the
#   whole job at once, naming the task. Without it, a job whose ps died goes
#   on as TF's would: the workers' sessions try again ("A task was lost while
#   the session was being made … again") until the job's time limit.

# %%
shell = (HERE / "slurm_job.sh").read_text()
print(shell[shell.index("run_task() {") : shell.index("\n}\n") + 2])

# %% [markdown]
# ## 3. A checkpoint, and a restart of the chief
#
# TF1's recovery story: the chief saves checkpoints; when it dies, the
# cluster manager starts it again with the same role; its monitored session
# finds the newest checkpoint in `--train_dir`, restores it onto the ps and
# goes on from that checkpoint's global step. The steps since that checkpoint
# are lost, even though the ps still had them: the chief restores whatever
# it finds, as TF's `SessionManager` does. The other worker waits for tokens
# while the chief is gone, and the restarted chief's hook gives it new ones.
#
# Here the chief is killed with SIGKILL halfway between two checkpoints, and
# started again with the same command line. Each worker prints the global
# step after every step.

# %%
RESTART_STEPS = notebook.sized(900, 300)
SAVE = RESTART_STEPS // 6
KILL_AT = SAVE * 2 + SAVE // 2  # halfway between the second and the third checkpoint
train_dir = fresh_dir("restart")
settings = [f"--train_dir={train_dir}", f"--train_steps={RESTART_STEPS}", f"--save_steps={SAVE}"]
settings.append("--log_every=1")
tasks = Tasks()
try:
    for job, index in TASKS:
        tasks.start(f"{job}/{index}", flags(job, index) + settings)
    tasks.wait_for("worker/0", r"global step (\d+)$", accept=lambda m: int(m[1]) >= KILL_AT)
    killed = tasks.kill("worker/0")
    checkpoint = tf.train.latest_checkpoint(str(train_dir))  # the chief is dead: it is final
    saved = int(checkpoint.rsplit("-", 1)[1])
    tasks.start("worker/0", flags("worker", 0) + settings)  # the same role and command
    restored, match = tasks.wait_for("worker/0", r"Restoring parameters from .*-(\d+)$", killed)
    check_trained(tasks, train_dir, RESTART_STEPS)
finally:
    tasks.stop()
restored_step = int(match[1])
steps_of = {task: [(t, int(m[1])) for t, who, text in tasks.lines if who == task
                   and (m := re.search(r"global step (\d+)$", text))]
            for task in ("worker/0", "worker/1")}  # fmt: skip
last = max(step for t, step in steps_of["worker/0"] if t < killed)
first = min((t, step) for t, step in steps_of["worker/0"] if t > restored)[1]
print(f"the chief printed global step {last} and was killed; newest checkpoint: {saved}")
print(f"started again, it restored model.ckpt-{restored_step}; its first step: {first}")
assert restored_step == saved and SAVE * 2 <= saved <= last
assert saved <= first <= saved + 2  # it goes on from the checkpoint's step
print(f"both workers stopped at global step {RESTART_STEPS}; w is w_true again")

# %% [markdown]
# ## The global step across the restart
#
# Each point is a global step a worker printed, at the time its line
# arrived; the two workers move in lockstep. While the chief is down (grey)
# the other worker waits for a token and the global step stands still. When
# the chief is back, the global step starts again from the checkpoint's
# (dashed): the steps after it are trained again. The short pauses every
# `SAVE` steps are the chief writing a checkpoint.

# %%
fig, ax = plt.subplots(figsize=(12, 6))
chief = list(steps_of["worker/0"])
chief.insert(next(i for i, (t, _) in enumerate(chief) if t > killed), (np.nan, np.nan))
ax.plot(*zip(*chief), "-", color="#0072B2", linewidth=4, label="chief (worker 0)")
every = max(1, len(steps_of["worker/1"]) // 30)  # sparse: the chief's line shows between
ax.plot(*zip(*steps_of["worker/1"]), "s", color="#E69F00", markersize=8, markevery=every,
        markeredgecolor="#000000", label="worker 1")  # fmt: skip
ax.axvspan(killed, restored, color="#000000", alpha=0.12, label="chief dead, then restarting")
ax.axhline(saved, color="#000000", linestyle="--", linewidth=1.5,
           label=f"newest checkpoint: model.ckpt-{saved}")  # fmt: skip
ax.annotate("SIGKILL", (killed, last), xytext=(-90, 25), textcoords="offset points",
            fontsize=14, arrowprops={"arrowstyle": "->"})  # fmt: skip
ax.annotate(f"restored from step {saved}", (restored, saved), xytext=(15, -45),
            textcoords="offset points", fontsize=14, arrowprops={"arrowstyle": "->"})  # fmt: skip
ax.set_xlabel("seconds since the tasks were started", fontsize=15)
ax.set_ylabel("global step", fontsize=15)
ax.set_title("The chief killed and started again: training goes on from its checkpoint",
             fontsize=16)  # fmt: skip
ax.tick_params(labelsize=13)
ax.grid(True, alpha=0.3)
ax.legend(fontsize=13, loc="upper left", markerscale=2)
fig.tight_layout()
fig.savefig(out / "global_step_across_restart.png", dpi=100)
notebook.show(fig)
