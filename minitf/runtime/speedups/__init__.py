"""The runtime's speed-ups: choices the one execution core makes, never other ways to run.

* `walks`: kernels with buffers they keep and fused ``MatMul`` chains;
* `segments`: a step with ops that wait cut into straight walks;
* `shm`, `intra_op`, `allocator`: shared memory between tasks on one
  machine, the matrix products' threads, memory a task keeps;
* `receiving`: a connection's reader takes up the step its message lets go on.

``MINITF_FAST=0`` (`minitf.runtime.core.config.fast`) turns every one of them
off; the results are the same bit for bit.
"""
