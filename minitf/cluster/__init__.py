"""``minitf.cluster``: clusters of tasks on this machine and what they report.

`LocalCluster` runs each task as a process on loopback; `SimulatedCluster`
runs them all in this process on a virtual clock; `SyncRecord` tells,
per global step, whose gradients a SyncReplicas update applied or dropped;
`minitf.cluster.delays` holds the straggler delay models.
"""

# ruff: noqa: F401
from minitf.cluster.simulated import SimulatedCluster
from minitf.cluster.sync_record import SyncRecord
from minitf.runtime.distributed.launcher import LocalCluster, launch
