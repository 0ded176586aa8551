"""The runtime, in three parts.

* `minitf.runtime.core`: the session, plans, and the one execution core —
  the step object, its scheduler, the executor — with the task's resources
  and rendezvous;
* `minitf.runtime.distributed`: the master, partitioning, the task's worker,
  its server and wire, the simulation, the launcher;
* `minitf.runtime.speedups`: what makes the core fast without changing what
  it computes (``MINITF_FAST=0`` turns them off).
"""
