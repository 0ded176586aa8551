"""The kernel of an op that makes a resource: a variable's, a queue's, an accumulator's.

Such an op runs in every step and hands the ops after it the resource it
finds in the task's resource manager (`minitf.runtime.core.resource_mgr`) —
the same one each time. Its kernel remembers what it found, and in which
manager, and looks again only once that manager has changed
(``ResourceMgr.changes`` counts every resource added or removed): a step's
resource op then calls nothing. It remembers the resource by a weak
reference, so that it keeps no resource alive.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any


def resource_kernel(
    container: str,
    name: str,
    creator: Callable[[], Any],
    check: Callable[[Any], None] | None = None,
) -> Callable[[Any], Any]:
    """The compute of a resource op: finds the resource, or makes it.

    The first time the kernel meets a resource it checks it: ``check``
    raises TF's error for a shared resource that another op made with other
    attributes (TF's ``MatchesNodeDef``).

    Args:
        container: The op's ``container`` attribute (empty: the default container).
        name: The resource's name.
        creator: Makes the resource if the manager has none of that name.
        check: Called once per resource found, before it is used (None: no check).
    """
    checked: set[int] = set()
    # (manager, its `changes` when looked in, the resource's weak reference):
    # one tuple, read once, so that a thread sees all three of one lookup.
    found: tuple = (None, 0, None)

    def compute(ctx):
        nonlocal found
        mgr, changes, kept = found
        if mgr is ctx.resource_mgr and changes == mgr.changes:
            resource = kept()
            if resource is not None:
                return resource
        mgr = ctx.resource_mgr
        changes = mgr.changes  # read first: a change made meanwhile makes the next run look again
        resource = mgr.lookup_or_create(container, name, creator)
        if check is not None and id(resource) not in checked:
            check(resource)
            checked.add(id(resource))
        found = (mgr, changes, weakref.ref(resource))
        return resource

    return compute
