"""The distributed pieces: the master that partitions a step, the tasks that run it.

`master` places and partitions a step (`partition`) and calls each task's
`worker` through a transport: `server` over the authenticated TCP `wire`,
or the in-process calls of a `simulation`. `cluster_spec` names the tasks;
`launcher` and `task` start them as processes.
"""
