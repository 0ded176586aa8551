"""The engines' worked examples start train.py with what each engine gives its tasks.

``tutorials/across_machines/`` has a Kubeflow TFJob (``tfjob.yaml``) and a
Slurm batch script (``slurm_job.sh``) that run ``train.py`` on a cluster of
machines. Here they run on one machine, as real processes on loopback:

- **TFJob.** Each pod's container gets the environment Kubeflow's training
  operator gives it: ``TF_CONFIG`` as its ``genTFConfigJSONStr`` builds it
  (kubeflow/training-operator, ``pkg/controller.v1/tensorflow``), with each
  pod's service name replaced by a port on 127.0.0.1, plus the container's
  own ``env``; the command and args are the YAML's, its volume a directory.
- **Slurm.** Each task runs the batch script's per-task part with the
  variables ``srun`` sets (``SLURM_PROCID``, ``SLURM_NTASKS``,
  ``SLURM_JOB_NODELIST``) and an ``scontrol`` on ``PATH`` that names every
  node ``localhost``, at address 127.0.0.1; then the whole batch script runs
  with an ``srun`` that starts its tasks on this machine. (``test_slurm.py``
  runs the script on a real Slurm.)

The oracles are outside minitf: every task exits 0 (the ps tasks too, once
the workers are done), the newest checkpoint is at the step the YAML or the
script asks for, and the weights are those of the data's generating formula.
"""

import copy
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml  # PyYAML, in the test extra

import minitf as tf
from minitf.runtime.distributed.launcher import free_ports

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tutorials" / "across_machines"
W_TRUE = np.linspace(-1.0, 1.0, 8)  # train.py's y = x . w_true + 1


# -- what every run must end with ---------------------------------------------------------


def _wait_all(procs: dict, timeout: float = 90) -> dict:
    """Each process's exit code; any still running after ``timeout`` s fails the test."""
    codes = {}
    for name, proc in procs.items():
        try:
            codes[name] = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            codes[name] = None
    return codes


def _stop(procs: dict) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _assert_trained(train_dir: Path, steps: int, logs: str) -> None:
    checkpoint = tf.train.latest_checkpoint(str(train_dir))
    assert checkpoint is not None and checkpoint.endswith(f"model.ckpt-{steps}"), logs[-3000:]
    np.testing.assert_allclose(tf.train.load_variable(str(train_dir), "w"), W_TRUE, atol=1e-3)
    np.testing.assert_allclose(tf.train.load_variable(str(train_dir), "b"), 1.0, atol=1e-3)


def _train_steps(args: str) -> int:
    (steps,) = re.findall(r"--train_steps=(\d+)", args)
    return int(steps)


# -- Kubeflow TFJob -----------------------------------------------------------------------


def _tfjob() -> dict:
    with open(HERE / "tfjob.yaml") as f:
        return yaml.safe_load(f)


TFJOB_SCHEMA = Path(__file__).parent / "data" / "tfjob_v1_schema.json"
# The replica types the training operator knows (its TFJob validation).
TFJOB_REPLICA_TYPES = {"Chief", "Master", "PS", "Worker", "Evaluator"}


def _tfjob_errors(job: dict) -> list[str]:
    """What the TFJob CRD's own schema (Kubeflow's) finds wrong with ``job``."""
    import jsonschema

    schema = json.loads(TFJOB_SCHEMA.read_text())["schema"]
    validator = jsonschema.Draft7Validator(schema)
    found = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(job)
    ]
    unknown = set(job.get("spec", {}).get("tfReplicaSpecs", {})) - TFJOB_REPLICA_TYPES
    return found + [f"spec/tfReplicaSpecs: unknown replica type {t!r}" for t in sorted(unknown)]


def test_the_tfjob_manifest_is_valid_for_the_tfjob_schema():
    # The schema is the CRD's (kubeflow/training-operator), kept in tests/data.
    assert _tfjob_errors(_tfjob()) == []
    # And it finds what kubectl would refuse: a wrong type, a missing name.
    broken = copy.deepcopy(_tfjob())
    broken["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "two"
    del broken["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["name"]
    broken["spec"]["tfReplicaSpecs"]["Workers"] = broken["spec"]["tfReplicaSpecs"]["Worker"]
    errors = _tfjob_errors(broken)
    assert any("replicas: 'two' is not of type 'integer'" in e for e in errors), errors
    assert any("'name' is a required property" in e for e in errors), errors
    assert any("unknown replica type 'Workers'" in e for e in errors), errors


def _container(replica_spec: dict) -> dict:
    """The container the operator gives TF_CONFIG to: the one named ``tensorflow``."""
    (container,) = [
        c for c in replica_spec["template"]["spec"]["containers"] if c["name"] == "tensorflow"
    ]
    return container


def _port(replica_spec: dict) -> int:
    """The operator's GetPortFromTFJob: the port named ``tfjob-port``, else 2222."""
    for port in _container(replica_spec).get("ports", []):
        if port.get("name") == "tfjob-port":
            return int(port["containerPort"])
    return 2222


def _operator_tf_config(job: dict, replica_type: str, index: int) -> dict:
    """The TF_CONFIG the training operator sets in pod ``<name>-<type>-<index>``."""
    name = job["metadata"]["name"]
    namespace = job["metadata"].get("namespace", "default")
    cluster = {}
    for kind, spec in job["spec"]["tfReplicaSpecs"].items():
        rt = kind.lower()
        cluster[rt] = [
            f"{name}-{rt}-{i}.{namespace}.svc:{_port(spec)}" for i in range(spec["replicas"])
        ]
    task = {"type": replica_type.lower(), "index": index}
    return {"cluster": cluster, "task": task, "environment": "cloud"}


def _pod_env(container: dict, tf_config: dict, secret: str) -> dict:
    """The container's environment: TF_CONFIG and its own ``env`` (a Secret's value by key)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["TF_CONFIG"] = json.dumps(tf_config)
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            assert var["valueFrom"]["secretKeyRef"]["name"] == "minitf-cluster-secret"
            env[var["name"]] = secret
    return env


def _pod_command(container: dict, volumes: Path) -> list[str]:
    """The container's command and args: its Python is this one, its volumes directories."""
    command = list(container["command"]) + list(container.get("args", []))
    assert command[0] == "python"
    command[0] = sys.executable
    for mount in container.get("volumeMounts", []):
        local = volumes / mount["name"]
        local.mkdir(parents=True, exist_ok=True)
        command = [arg.replace(f"={mount['mountPath']}/", f"={local}/") for arg in command]
    return command


def _run_tfjob(job: dict, tmp_path: Path) -> dict:
    """Runs every pod of ``job`` as a process; returns each pod's output, once all have exited."""
    pods = [
        (kind, index)
        for kind, spec in job["spec"]["tfReplicaSpecs"].items()
        for index in range(spec["replicas"])
    ]
    services = [
        a for hosts in _operator_tf_config(job, *pods[0])["cluster"].values() for a in hosts
    ]
    loopback = dict(zip(services, [f"127.0.0.1:{p}" for p in free_ports(len(services))]))
    secret = secrets.token_hex(16)
    procs, logs = {}, {}
    try:
        for kind, index in pods:
            spec = job["spec"]["tfReplicaSpecs"][kind]
            container = _container(spec)
            config = _operator_tf_config(job, kind, index)
            config["cluster"] = {
                rt: [loopback[service] for service in hosts]
                for rt, hosts in config["cluster"].items()
            }
            pod = f"{job['metadata']['name']}-{kind.lower()}-{index}"
            logs[pod] = tmp_path / f"{pod}.log"
            with open(logs[pod], "w") as out:
                procs[pod] = subprocess.Popen(
                    _pod_command(container, tmp_path / "volumes"),
                    cwd=ROOT,  # the image's workingDir, /opt/minitf, is this checkout
                    env=_pod_env(container, config, secret),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
        codes = _wait_all(procs)
    finally:
        _stop(procs)
    outputs = {pod: path.read_text() for pod, path in logs.items()}
    assert set(codes.values()) == {0}, (codes, {p: o[-2000:] for p, o in outputs.items()})
    return outputs


def test_the_operator_gives_each_pod_the_tf_config_the_yaml_describes():
    job = _tfjob()
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
    assert _operator_tf_config(job, "Worker", 1) == {
        "cluster": {
            "ps": ["minitf-train-ps-0.default.svc:2222"],
            "worker": [
                "minitf-train-worker-0.default.svc:2222",
                "minitf-train-worker-1.default.svc:2222",
            ],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }
    # The YAML's header shows worker 1's TF_CONFIG: it must be that one.
    comment = "\n".join(
        line[1:] for line in (HERE / "tfjob.yaml").read_text().splitlines() if line[:1] == "#"
    )
    shown, _ = json.JSONDecoder().raw_decode(
        comment[comment.index('{"cluster"') :].replace("\n", " ")
    )
    assert shown == _operator_tf_config(job, "Worker", 1)


def test_the_tfjob_trains_with_the_environment_the_operator_sets(tmp_path):
    job = _tfjob()
    outputs = _run_tfjob(job, tmp_path)
    worker_args = " ".join(_container(job["spec"]["tfReplicaSpecs"]["Worker"])["args"])
    steps = _train_steps(worker_args)
    assert "worker 0: replica 0 of 2 (chief)" in outputs["minitf-train-worker-0"]
    for index in (0, 1):
        assert f"stopped at global step {steps}," in outputs[f"minitf-train-worker-{index}"]
    assert "ps 0: every replica is done" in outputs["minitf-train-ps-0"]
    _assert_trained(tmp_path / "volumes" / "checkpoints" / "minitf-train", steps, str(outputs))


def test_with_a_chief_replica_spec_the_chief_is_not_worker_0(tmp_path):
    job = _tfjob()
    replicas = job["spec"]["tfReplicaSpecs"]
    replicas["Chief"] = copy.deepcopy(replicas["Worker"]) | {"replicas": 1}
    replicas["Worker"]["replicas"] = 1
    outputs = _run_tfjob(job, tmp_path)
    steps = _train_steps(" ".join(_container(replicas["Worker"])["args"]))
    assert "chief 0: replica 0 of 2 (chief)" in outputs["minitf-train-chief-0"]
    assert "worker 0: replica 1 of 2\n" in outputs["minitf-train-worker-0"]
    assert f"worker 0: stopped at global step {steps}," in outputs["minitf-train-worker-0"]
    _assert_trained(tmp_path / "volumes" / "checkpoints" / "minitf-train", steps, str(outputs))


# -- Slurm ----------------------------------------------------------------------------------

SLURM_SCRIPT = HERE / "slurm_job.sh"
NODELIST = "node[01-03]"
NODES = 3


def _consecutive_free_ports(n: int) -> int:
    """A port p such that p, p + 1, ..., p + n - 1 are all free (the script's PORT + rank)."""
    for base in free_ports(20):
        if base + n > 65536:
            continue
        sockets = [socket.socket() for _ in range(n)]
        try:
            for i, s in enumerate(sockets):
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise OSError(f"no {n} consecutive free ports")


def _fake_bin(tmp_path: Path) -> Path:
    """``scontrol`` for this job's node list only: every node ``localhost``, at 127.0.0.1."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'"show hostnames {NODELIST}") for i in $(seq {NODES}); do echo localhost; done ;;\n'
        '"show node localhost -o") echo "NodeName=localhost NodeAddr=127.0.0.1 State=IDLE" ;;\n'
        '*) echo "scontrol: unexpected arguments: $*" >&2; exit 2 ;;\n'
        "esac\n"
    )
    scontrol.chmod(0o755)
    return bin_dir


def _slurm_env(tmp_path: Path, bin_dir: Path) -> dict:
    """What sbatch sets for the job, and the script's settings for this machine."""
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "MINITF_CLUSTER_SECRET")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        SLURM_JOB_ID="4242",
        SLURM_JOB_NODELIST=NODELIST,
        SLURM_NNODES=str(NODES),
        SLURM_NTASKS=str(NODES),
        SLURM_NTASKS_PER_NODE="1",
        SLURM_SUBMIT_DIR=str(ROOT),
        PYTHON=sys.executable,
        PORT=str(_consecutive_free_ports(NODES)),
        TRAIN_DIR=str(tmp_path / "train"),
    )
    return env


def _script_steps() -> int:
    (default_args,) = re.findall(r"TRAIN_ARGS:-(.*)}", SLURM_SCRIPT.read_text())
    return _train_steps(default_args)


def test_each_slurm_task_finds_its_role_from_its_rank_and_the_node_list(tmp_path):
    env = _slurm_env(tmp_path, _fake_bin(tmp_path))
    env["MINITF_CLUSTER_SECRET"] = secrets.token_hex(16)  # the batch step exports it
    procs, logs = {}, {}
    try:
        for rank in range(NODES):
            task_env = env | {"SLURM_PROCID": str(rank), "SLURM_NODEID": str(rank)}
            task_env["SLURM_LOCALID"] = "0"
            logs[rank] = tmp_path / f"rank{rank}.log"
            with open(logs[rank], "w") as out:
                # The task's part execs train.py: this PID is the task's Python.
                procs[rank] = subprocess.Popen(
                    ["bash", str(SLURM_SCRIPT), "task"],
                    env=task_env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
        codes = _wait_all(procs)
    finally:
        _stop(procs)
    outputs = {rank: path.read_text() for rank, path in logs.items()}
    assert set(codes.values()) == {0}, (codes, outputs)
    steps = _script_steps()
    assert "ps 0: every replica is done" in outputs[0]
    assert "worker 0: replica 0 of 2 (chief)" in outputs[1]
    assert f"worker 1: stopped at global step {steps}," in outputs[2]
    _assert_trained(tmp_path / "train", steps, str(outputs))


def test_the_batch_script_runs_a_task_per_node_through_srun(tmp_path):
    bin_dir = _fake_bin(tmp_path)
    srun = bin_dir / "srun"
    srun.write_text(
        f"#!{sys.executable}\n"
        '"""srun on one machine: the command once per task, with its rank; waits for all."""\n'
        "import os, subprocess, sys\n"
        "args = sys.argv[1:]\n"
        "while args[0].startswith('-'):\n"
        "    args.pop(0)\n"
        "n = int(os.environ['SLURM_NTASKS'])\n"
        "ranks = {'SLURM_PROCID': '{0}', 'SLURM_NODEID': '{0}', 'SLURM_LOCALID': '0'}\n"
        "env = lambda i: {**os.environ, **{k: v.format(i) for k, v in ranks.items()}}\n"
        "procs = [subprocess.Popen(args, env=env(i)) for i in range(n)]\n"
        "sys.exit(max(p.wait() for p in procs))\n"
    )
    srun.chmod(0o755)
    log = tmp_path / "minitf-train-4242.out"
    with open(log, "w") as out:
        # Its own session: the script, srun and the tasks form one process group.
        batch = subprocess.Popen(
            ["bash", str(SLURM_SCRIPT)],
            env=_slurm_env(tmp_path, bin_dir),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        code = _wait_all({"batch": batch})["batch"]
    finally:
        try:  # the group is the batch script's, made for this test
            os.killpg(batch.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # every process of it has ended
        batch.wait()
    output = log.read_text()
    assert code == 0, output[-3000:]
    steps = _script_steps()
    assert "ps 0: every replica is done" in output
    for index in (0, 1):
        assert f"worker {index}: stopped at global step {steps}," in output
    _assert_trained(tmp_path / "train", steps, output)
