"""The execution core: a session, the plans it builds, and the one way a step runs.

`session` (``tf.Session``) builds a `plan` per run signature through the
`pipeline`; the `executor` runs each step as an `execution` (the step
object) whose moves a `scheduler` chooses; kernels find their state in the
task's `resource_mgr` and tensors from other tasks in its `rendezvous`.
"""
