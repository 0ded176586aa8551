#!/bin/bash
# tutorials/across_machines/train.py as a Slurm batch job: 1 ps and 2 workers,
# one task per node.
#
#   cd <this checkout, on a filesystem every node mounts>
#   sbatch tutorials/across_machines/slurm_job.sh
#
# srun starts run_task once per node. Each task reads its rank
# ($SLURM_PROCID) and the job's nodes (scontrol show hostnames
# "$SLURM_JOB_NODELIST"; rank i runs on the i-th), takes each node's address
# from Slurm (its NodeAddr: a node's name need not be a host name) and starts
# train.py with TF1's flags: ranks below PS_TASKS are the ps tasks, the others
# the workers, worker 0 the chief. Rank i listens on port PORT + i: distinct
# ports, so that the tasks can also share one machine; PORT comes from the
# job's id, so that two jobs on shared nodes do not take the same ports.
#
# A site that exports nothing to jobs (SBATCH_EXPORT=NONE, --export=NONE)
# still gives the tasks this script's environment: srun --export=ALL.
#
# The ps tasks exit once every worker is done (train.py's done queue), so the
# job ends with the training instead of at its time limit.
#
# Settings (environment variables, read when the job starts):
#   PYTHON      the Python with minitf installed (default: python3)
#   SCRIPT      train.py (default: $SLURM_SUBMIT_DIR/tutorials/across_machines/train.py)
#   TRAIN_DIR   the checkpoint directory, on the shared filesystem
#               (default: $SLURM_SUBMIT_DIR/minitf_train_$SLURM_JOB_ID)
#   TRAIN_ARGS  more train.py flags (default: --train_steps=500 --save_steps=100)
#   PORT        the first task's port (default: 20000 + 20 * (job id % 2000),
#               20 ports per job)
#   PS_TASKS    how many of the tasks are ps tasks (default: 1)
#
# `slurm_job.sh task` runs one task's part by hand: what srun runs on each node.
#
#SBATCH --job-name=minitf-train
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:30:00
#SBATCH --output=minitf-train-%j.out

set -euo pipefail

# One task: its job and index from its rank, the cluster from the job's nodes.
run_task() {
    local nodes ps_hosts=() worker_hosts=() address host job index i
    mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
    if (( ${#nodes[@]} < SLURM_NTASKS )); then
        echo "rank $SLURM_PROCID: ${#nodes[@]} nodes for $SLURM_NTASKS tasks" \
            "(one task per node: --ntasks-per-node=1)" >&2
        exit 1
    fi
    for (( i = 0; i < SLURM_NTASKS; i++ )); do
        # The node's address as Slurm reaches it (NodeAddr), else its name.
        host=$(scontrol show node "${nodes[i]}" -o | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)
        address="${host:-${nodes[i]}}:$(( PORT + i ))"
        if (( i < PS_TASKS )); then ps_hosts+=("$address"); else worker_hosts+=("$address"); fi
    done
    if (( SLURM_PROCID < PS_TASKS )); then
        job=ps index=$SLURM_PROCID
    else
        job=worker index=$(( SLURM_PROCID - PS_TASKS ))
    fi
    exec "$PYTHON" -u "$SCRIPT" --job_name="$job" --task_index="$index" \
        --ps_hosts="$(IFS=,; echo "${ps_hosts[*]}")" \
        --worker_hosts="$(IFS=,; echo "${worker_hosts[*]}")" \
        --train_dir="$TRAIN_DIR" $TRAIN_ARGS
}

export PYTHON=${PYTHON:-python3}
export SCRIPT=${SCRIPT:-$SLURM_SUBMIT_DIR/tutorials/across_machines/train.py}
export TRAIN_DIR=${TRAIN_DIR:-$SLURM_SUBMIT_DIR/minitf_train_$SLURM_JOB_ID}
export TRAIN_ARGS=${TRAIN_ARGS:---train_steps=500 --save_steps=100}
export PORT=${PORT:-$(( 20000 + 20 * (SLURM_JOB_ID % 2000) ))}
export PS_TASKS=${PS_TASKS:-1}

if [[ "${1:-}" == "task" ]]; then
    run_task
fi

# The cluster's secret: the same for every task (srun passes the environment
# on), new for every job.
MINITF_CLUSTER_SECRET=${MINITF_CLUSTER_SECRET:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')}
export MINITF_CLUSTER_SECRET
mkdir -p "$TRAIN_DIR"
# The function's text goes with the command: the batch script itself is a copy
# that only the first node has.
srun --export=ALL --kill-on-bad-exit=1 bash -c "set -euo pipefail; $(declare -f run_task); run_task"
