"""The device-function stack: what ``with tf.device(...)`` pushes, applied to every new op.

Each entry is a device string or `DeviceSpec` (merged field by field into the
op's device), a device function ``op -> device`` (``replica_device_setter``
returns one), or None (which hides every outer entry). `Graph.create_op`
applies the stack innermost first, so an inner scope's choice is seen — and,
by default, kept — by the outer ones, as in TF (``Graph._apply_device_functions``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from minitf.framework import device as pydev


class _DeviceEntry:
    """One entry of the device-function stack (TF's ``_UserDeviceSpec``)."""

    def __init__(self, device_name_or_function):
        self.raw = device_name_or_function
        self.function = None
        self.spec = None
        self.is_null_merge = False
        if device_name_or_function is None:
            return
        if callable(device_name_or_function) and not isinstance(
            device_name_or_function, (str, pydev.DeviceSpec)
        ):
            self.function = device_name_or_function
            return
        self.spec = _as_device_spec(device_name_or_function)
        self.is_null_merge = self.spec.to_string() == ""
        self.function = self._merge
        # The merge of each device an op had before this entry (a block sees a few).
        self._merged: dict[str, str] = {}

    def describe(self) -> str:
        """How pictures name this entry: ``tf.device('/job:ps')`` or the device function."""
        if self.spec is not None:
            return f"tf.device({self.spec.to_string()!r})"
        owner = getattr(self.function, "__self__", None)
        if owner is not None and type(owner).__repr__ is not object.__repr__:
            return repr(owner)
        return "device function " + getattr(self.function, "__qualname__", repr(self.function))

    def _merge(self, op) -> str:
        # The op's current device (set by inner scopes) wins field by field; a
        # "*" index counts as unset because DeviceSpec parses it as None.
        current = op.device
        merged = self._merged.get(current)
        if merged is None:
            spec = self.spec.make_merged_spec(pydev.DeviceSpec.from_string(current))
            merged = self._merged[current] = spec.to_string()
        return merged


def _as_device_spec(device) -> pydev.DeviceSpec:
    if isinstance(device, pydev.DeviceSpec):
        return pydev.DeviceSpec.from_string(device.to_string())
    if isinstance(device, str):
        return pydev.DeviceSpec.from_string(device)
    raise TypeError(f"tf.device expects a string, a DeviceSpec, a function or None: {device!r}")


class DeviceFunctionStack:
    """The device-function stack of one graph, shared by all its threads (as in TF1)."""

    def __init__(self):
        self._entries: list[_DeviceEntry] = []

    @contextlib.contextmanager
    def push(self, device_name_or_function: str | pydev.DeviceSpec | Callable | None) -> Iterator:
        """Pushes one entry for a block.

        Args:
            device_name_or_function: A device string, `DeviceSpec`, device
                function or None.

        Raises:
            TypeError: if ``device_name_or_function`` is none of these.
            RuntimeError: if the blocks are exited out of order.
        """
        entry = _DeviceEntry(device_name_or_function)
        entries = self._entries
        entries.append(entry)
        try:
            yield
        finally:
            if not entries or entries[-1] is not entry:
                raise RuntimeError("Exiting device scope without proper scope nesting")
            entries.pop()

    @contextlib.contextmanager
    def cleared(self) -> Iterator:
        """Empties the stack for a block (``tf.colocate_with`` beats every device scope)."""
        saved, self._entries = self._entries, []
        try:
            yield
        finally:
            self._entries = saved

    def apply(self, op) -> None:
        """Sets ``op``'s device from the stack, innermost entry first.

        Each entry that changes the device is recorded as what set it
        (``op.device_assignments``).

        Args:
            op: The new `Operation`.
        """
        # A None entry hides everything outside it.
        for entry in reversed(self._entries):
            if entry.is_null_merge:
                continue
            if entry.function is None:
                break
            before = op.device
            device = entry.function(op)
            op._set_device(device, None if device == before else entry.describe())
