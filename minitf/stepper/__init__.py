"""``minitf.stepper``: run a step one op at a time, on every task of a cluster.

`Stepper` is the controller; every task it steps runs with a
`minitf.runtime.core.held_scheduler.HeldScheduler` (``minitf step`` starts the cluster
that way). `SimulatedStepper` steps a script on a simulated cluster in this
process instead (``minitf step --simulate``).
"""

# ruff: noqa: F401
from minitf.runtime.core.held_scheduler import HeldScheduler
from minitf.stepper.controller import Stepper
from minitf.stepper.simulated import SimulatedStepper
