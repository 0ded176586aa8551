"""Tests for minitf.ops.resource_kernels: a resource op's kernel and what it remembers.

Pinned behaviour: the kernel finds (or makes) the resource named by its op in
the step's resource manager; it remembers it, but never past a change of that
manager (a resource deleted and made again, a reset container) nor across
managers; every resource it meets is checked once.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from minitf.framework import errors
from minitf.ops.resource_kernels import resource_kernel
from minitf.runtime.core.resource_mgr import ResourceMgr


class _Made:
    def __init__(self, serial: int):
        self.serial = serial


def _kernel(checked: list, made: list):
    def create():
        made.append(_Made(len(made)))
        return made[-1]

    return resource_kernel("", "q", create, checked.append)


def test_the_kernel_makes_the_resource_once_and_checks_it_once():
    checked, made = [], []
    compute = _kernel(checked, made)
    ctx = SimpleNamespace(resource_mgr=ResourceMgr())
    first = compute(ctx)
    assert compute(ctx) is first and compute(ctx) is first
    assert made == [first] and checked == [first]
    assert ctx.resource_mgr.lookup("", "q") is first


def test_the_kernel_finds_a_resource_made_again_after_a_change():
    checked, made = [], []
    compute = _kernel(checked, made)
    ctx = SimpleNamespace(resource_mgr=ResourceMgr())
    first = compute(ctx)
    ctx.resource_mgr.delete("", "q")
    second = compute(ctx)
    assert second is not first and second is ctx.resource_mgr.lookup("", "q")
    ctx.resource_mgr.cleanup("")  # what Session.reset does
    third = compute(ctx)
    assert [m.serial for m in made] == [0, 1, 2] and third is made[2]
    assert checked == made


def test_the_kernel_finds_another_managers_resource_in_its_manager():
    checked, made = [], []
    compute = _kernel(checked, made)
    one, two = (
        SimpleNamespace(resource_mgr=ResourceMgr()),
        SimpleNamespace(resource_mgr=ResourceMgr()),
    )
    shared = _Made(-1)
    two.resource_mgr.create("", "q", shared)
    assert compute(one) is made[0]
    assert compute(two) is shared
    assert compute(one) is made[0]
    assert checked == [made[0], shared]


def test_a_resource_that_fails_its_check_fails_every_run():
    def refuse(resource):
        raise errors.InvalidArgumentError(None, None, "Shared queue 'q' has capacity 2")

    compute = resource_kernel("", "q", lambda: _Made(0), refuse)
    ctx = SimpleNamespace(resource_mgr=ResourceMgr())
    for _ in range(2):
        with pytest.raises(errors.InvalidArgumentError, match="capacity 2"):
            compute(ctx)
