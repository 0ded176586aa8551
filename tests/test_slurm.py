"""The Slurm batch script on a real Slurm: Debian's slurm-wlm, with munge, on this machine.

A fixture writes a configuration in a temporary directory and starts
``munged``, ``slurmctld`` and three ``slurmd`` (one per node, as Debian's
build allows on one host) by PID, each in the foreground, on free ports.
The nodes are named ``n1``-``n3``, which are not host names: Slurm reaches
them at their ``NodeAddr`` (127.0.0.1), as a site whose node names are not
addresses does. The unchanged ``tutorials/across_machines/slurm_job.sh`` is
submitted with ``sbatch --wait``:

* it trains to the end: exit 0, the last checkpoint at the last step and
  the weights of the data's generating formula (``train.py``'s
  ``y = x . w_true + 1``), also when the job exports nothing but what it is
  given (a site's ``--export=NONE``);
* two jobs at once on the same nodes take different ports (from the job id);
* a ps killed mid-run fails the job within seconds, with the ps's task named.

Everything the fixture started is stopped by PID. Where Slurm is not
installed the tests are skipped, saying how to install it (``./run test``
does, as root on Debian).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import minitf as tf
from minitf.runtime.distributed.launcher import free_ports

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tutorials" / "across_machines" / "slurm_job.sh"
W_TRUE = np.linspace(-1.0, 1.0, 8)  # train.py's y = x . w_true + 1
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")


def _missing() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name) is None]


CONF = """\
ClusterName=minitf
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser={user}
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
JobCompType=jobcomp/none
# sbatch --wait asks every 2 s while MinJobAge/2 is not above 2 (else its waits grow to 8 s).
MinJobAge=4
{nodes}
PartitionName=debug Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:2
"""


class Slurm:
    """A running Slurm of three nodes on this machine, and how to submit to it."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {**os.environ, "SLURM_CONF": str(directory / "slurm.conf")}

    def start(self) -> Slurm:
        d = self.dir
        for sub in ("state", "spool/n1", "spool/n2", "spool/n3"):
            (d / sub).mkdir(parents=True)
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        ctld_port, *node_ports = free_ports(4)
        host = socket.gethostname()
        cpus = len(os.sched_getaffinity(0))
        nodes = "\n".join(
            f"NodeName=n{i} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs={cpus} "
            "State=UNKNOWN"
            for i, port in enumerate(node_ports, 1)
        )
        user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        (d / "slurm.conf").write_text(
            CONF.format(d=d, host=host, ctld_port=ctld_port, user=user, nodes=nodes)
        )
        files = [f"--key-file={key}", f"--socket={d}/munge.sock", f"--pid-file={d}/munged.pid",
                 f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"]  # fmt: skip
        self._daemon("munged", ["munged", "-F", "--force", *files])
        self._until(lambda: (d / "munge.sock").exists(), "munged's socket", 20)
        self._daemon("slurmctld", ["slurmctld", "-D", "-f", str(d / "slurm.conf")])
        for i in (1, 2, 3):
            self._daemon(
                f"slurmd n{i}", ["slurmd", "-D", "-N", f"n{i}", "-f", str(d / "slurm.conf")]
            )
        self._until(lambda: self._idle_nodes() == 3, "three idle nodes", 60)
        return self

    def stop(self) -> None:
        """Cancels what is left of the jobs, then stops every daemon by PID."""
        subprocess.run(["scancel", "--user", os.environ.get("USER", "root")],
                       env=self.env, capture_output=True, timeout=30)  # fmt: skip
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)

    def submit(self, env: dict, *options: str) -> subprocess.Popen:
        """``sbatch --wait`` of the batch script, from this checkout, as a user submits it."""
        return subprocess.Popen(
            ["sbatch", "--wait", f"--output={self.dir}/job-%j.out", f"--chdir={ROOT}", *options,
             str(SCRIPT)],
            env={**self.env, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip

    def output(self, submitted: str) -> str:
        """The job's output file, by the id sbatch printed."""
        (job_id,) = re.findall(r"Submitted batch job (\d+)", submitted)
        return (self.dir / f"job-{job_id}.out").read_text()

    def _daemon(self, name: str, command: list[str]) -> None:
        log = open(self.dir / f"{name.replace(' ', '-')}.out", "w")  # noqa: SIM115 - the daemon's
        self.procs[name] = subprocess.Popen(command, env=self.env, stdout=log, stderr=log)

    def _idle_nodes(self) -> int:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env,
                              capture_output=True, text=True, timeout=10)  # fmt: skip
        return done.stdout.split().count("idle")

    def _until(self, condition, what: str, timeout: float) -> None:
        # Daemons starting up: nothing to wait on but their state, asked again.
        deadline = time.monotonic() + timeout
        while not condition():
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    log = (self.dir / f"{name.replace(' ', '-')}.out").read_text()[-2000:]
                    raise AssertionError(f"{name} exited ({proc.returncode}): {log}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout} s")
            threading.Event().wait(0.1)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    missing = _missing()
    if missing:
        pytest.skip(
            f"Slurm is not installed here ({', '.join(missing)} missing): "
            "apt-get install slurm-wlm munge (./run test does it as root on Debian)"
        )
    cluster = Slurm(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _job_env(train_dir: Path, steps: int) -> dict:
    return {
        "PYTHON": sys.executable,
        "TRAIN_DIR": str(train_dir),
        "TRAIN_ARGS": f"--train_steps={steps} --save_steps=20",
    }


def _assert_trained(train_dir: Path, steps: int, logs: str) -> None:
    checkpoint = tf.train.latest_checkpoint(str(train_dir))
    assert checkpoint is not None and checkpoint.endswith(f"model.ckpt-{steps}"), logs[-3000:]
    np.testing.assert_allclose(tf.train.load_variable(str(train_dir), "w"), W_TRUE, atol=1e-3)
    np.testing.assert_allclose(tf.train.load_variable(str(train_dir), "b"), 1.0, atol=1e-3)


def test_the_batch_script_trains_to_the_end_on_slurm(slurm, tmp_path):
    job = slurm.submit(_job_env(tmp_path / "train", 60))
    submitted, _ = job.communicate(timeout=180)
    logs = slurm.output(submitted)
    assert job.returncode == 0, submitted + logs[-3000:]
    assert "ps 0: every replica is done" in logs  # the ps ended with the training
    _assert_trained(tmp_path / "train", 60, logs)


def test_a_site_that_exports_nothing_still_gives_the_tasks_the_jobs_environment(slurm, tmp_path):
    # Only the settings, none of the submitting shell's environment (no PATH):
    # what a site with SBATCH_EXPORT=NONE gives. srun --export=ALL passes the
    # batch script's own environment on to the tasks.
    env = _job_env(tmp_path / "train", 60)
    exported = ",".join(f"{k}={v}" for k, v in env.items() if k != "TRAIN_ARGS")
    job = slurm.submit({}, f"--export={exported},TRAIN_ARGS=--train_steps=60")
    submitted, _ = job.communicate(timeout=180)
    logs = slurm.output(submitted)
    assert job.returncode == 0, submitted + logs[-3000:]
    _assert_trained(tmp_path / "train", 60, logs)


def test_two_jobs_on_the_same_nodes_take_different_ports(slurm, tmp_path):
    jobs = [slurm.submit(_job_env(tmp_path / f"train{i}", 100)) for i in (1, 2)]
    outputs = [job.communicate(timeout=200)[0] for job in jobs]
    logs = [slurm.output(submitted) for submitted in outputs]
    assert [job.returncode for job in jobs] == [0, 0], "\n".join(
        o + lg[-2000:] for o, lg in zip(outputs, logs)
    )
    for i, log in zip((1, 2), logs):
        _assert_trained(tmp_path / f"train{i}", 100, log)


def test_a_ps_killed_mid_run_fails_the_job_within_seconds_naming_the_ps(slurm, tmp_path):
    train_dir = tmp_path / "train"
    job = slurm.submit(_job_env(train_dir, 100_000))
    deadline = time.monotonic() + 120
    while tf.train.latest_checkpoint(str(train_dir)) is None:  # training is under way
        assert job.poll() is None and time.monotonic() < deadline, job.stdout.read()
        threading.Event().wait(0.1)  # the chief writes it in another process
    (ps_pid,) = [
        int(line.split()[0])
        for line in subprocess.run(
            ["pgrep", "-af", "train.py"], capture_output=True, text=True
        ).stdout.splitlines()  # fmt: skip
        if "--job_name=ps" in line and str(train_dir) in line
    ]
    killed = time.monotonic()
    os.kill(ps_pid, signal.SIGKILL)
    submitted, _ = job.communicate(timeout=60)
    took = time.monotonic() - killed
    logs = slurm.output(submitted)
    assert job.returncode != 0
    assert took < 20, f"the job took {took:.1f} s to fail"
    # srun names the task that died: rank 0, the ps, on the first node.
    assert re.search(r"srun: error: n1: task 0: Killed", logs), logs[-3000:]
